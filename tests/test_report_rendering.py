"""Reports and plots are written for the people who read them.

Every report's Markdown is parsed by a CommonMark parser with GitHub tables (markdown-it-py): each
table row has the header's number of cells and every value written into a table is still there
after parsing. Every report opens with what was released, under which guarantee and with what
status, and carries no raw Python reprs. Every figure has a title and labelled axes, maps have
equal aspect, and no legend covers a data point.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import privopt
import pytest
from markdown_it import MarkdownIt
from privopt.cli import main
from privopt.report import format_number, markdown_table, release_header, status_text

PARSER = MarkdownIt("commonmark").enable("table")

#: Text a reader should never meet in a report: Python reprs and internal references.
RAW_PATTERNS = [
    r"LedgerEntry\(",
    r"\{'\w+': (True|False)",
    r"\bspec \d{3}\b",
    r"§\s?\d",
    r"\bissue \d+\b",
    r"shared/specs",
]


def parsed_tables(markdown: str) -> list[list[list[str]]]:
    """Each table of ``markdown`` as rendered: a list of rows, each a list of cell texts."""
    tables: list[list[list[str]]] = []
    row: list[str] | None = None
    tokens = PARSER.parse(markdown)
    for i, tok in enumerate(tokens):
        if tok.type == "table_open":
            tables.append([])
        elif tok.type == "tr_open":
            row = []
        elif tok.type in ("th_open", "td_open"):
            inline = tokens[i + 1]
            assert row is not None
            row.append(inline.content if inline.type == "inline" else "")
        elif tok.type == "tr_close":
            assert row is not None
            tables[-1].append(row)
    return tables


def source_table_rows(markdown: str) -> list[str]:
    """The table rows of the Markdown source (lines that start and end with a bar)."""
    return [
        line
        for line in markdown.splitlines()
        if line.startswith("|") and line.rstrip().endswith("|") and not set(line) <= set("|-: ")
    ]


def check_report(path: Path) -> str:
    """The checks every report.md passes; returns its text."""
    text = path.read_text()
    assert text.startswith("# "), f"{path}: a report starts with its title"
    for key in ("**Released:**", "**Guarantee:**", "**Status:**"):
        assert key in text, f"{path}: the report does not state {key}"
    assert text.index("**Released:**") < text.find("|") or "|" not in text
    for pattern in RAW_PATTERNS:
        assert not re.search(pattern, text), f"{path}: {pattern!r} in the report"
    tables = parsed_tables(text)
    rows = [r for t in tables for r in t]
    assert len(rows) == len(source_table_rows(text)), f"{path}: a table row did not render"
    for table in tables:
        width = len(table[0])
        for row in table:
            assert len(row) == width, f"{path}: row {row} has {len(row)} cells, header {width}"
            assert all(cell.strip() for cell in row), f"{path}: empty cell in {row}"
    return text


# --------------------------------------------------------------------- the shared pieces


def test_a_bar_in_a_cell_keeps_the_row_and_its_value():
    table = markdown_table(["quantity", "value"], [["neighbour pairs |E|", 1234], ["a", 0.5]])
    assert parsed_tables(table) == [
        [["quantity", "value"], ["neighbour pairs |E|", "1234"], ["a", "0.5"]]
    ]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.000313014, "0.000313"),
        (25.031734, "25.03"),
        (12345, "12 345"),
        (np.int64(7), "7"),
        (np.float32(0.5), "0.5"),
        (float("nan"), "n/a"),
        (float("-inf"), "-∞"),
        (True, "True"),
        ("M_H^dp", "M_H^dp"),
    ],
)
def test_numbers_have_meaningful_digits(value, text):
    assert format_number(value) == text


def test_header_and_status_in_plain_words():
    head = release_header("a table", "k-anonymity with k = 3", status_text("optimal", 0.0))
    assert head.index("Released") < head.index("Guarantee") < head.index("Status")
    assert "certified optimal" in head
    assert "no bound was proven" in status_text("time_limit", float("inf"))
    assert "nothing was optimized" in status_text(None)


# --------------------------------------------------------------------- the reports


def test_mdp_report(tmp_path):
    points = tmp_path / "points.csv"
    np.savetxt(points, np.array([[x, y] for x in range(3) for y in range(3)]), delimiter=",")
    assert main(["mdp", str(points), "--epsilon", "1", "--out", str(tmp_path / "o")]) == 0
    text = check_report(tmp_path / "o" / "report.md")
    assert "neighbour pairs protected (|E|, ordered)" in text.replace("\\|", "|")


def test_census_report(tmp_path):
    rec = tmp_path / "rec.csv"
    rec.write_text("state,county,hh\nGA,g1,A\nGA,g1,A\nGA,g2,B\nNY,n1,C\nNY,n1,D\nNY,n1,D\n")
    argv = ["census", "--records", str(rec), "--levels", "state,county", "--group", "hh"]
    out = tmp_path / "o"
    assert main([*argv, "--epsilon", "1", "--seed", "3", "--out", str(out), "-q"]) == 0
    text = check_report(out / "report.md")
    assert "each region's counts add up to its parent's: yes" in text


def test_cluster_report_explains_a_single_cluster(tmp_path, capsys):
    rng = np.random.default_rng(0)
    blobs = np.concatenate([rng.normal(c, 0.05, size=(25, 2)) for c in (-0.5, 0.5)])
    data = tmp_path / "x.csv"
    np.savetxt(data, blobs, delimiter=",")
    out = tmp_path / "o"
    argv = ["cluster", str(data), "--bounds", "-1", "1", "--epsilon", "0.05", "--delta", "1e-4"]
    argv += ["--out", str(out)]
    assert main(argv) == 0
    text = check_report(out / "report.md")
    assert "1 cluster**" in text and "Why one cluster" in text and "larger epsilon" in text
    assert "note: 1 cluster" in capsys.readouterr().err


def test_kanon_and_geo_reports(tmp_path):
    from privopt.geo.report import demo_section as geo_section
    from privopt.kanon import datasets
    from privopt.kanon.report import write_report
    from privopt.report import Report

    res = privopt.kanon.anonymize(datasets.fars_20(), 3, method="greedy")
    check_report(write_report(res, tmp_path / "k"))
    report = Report("geo")
    report.add(geo_section(tmp_path, 0))
    text = check_report(report.write(tmp_path / "g"))
    assert "km" in text


# --------------------------------------------------------------------- the figures


def check_figure(ax, *, is_map: bool = False) -> None:
    """Title, labelled axes, equal aspect for a map, and no data point under the legend."""
    assert ax.get_title().strip(), "the figure has no title"
    assert ax.get_xlabel().strip() and ax.get_ylabel().strip(), "an axis has no label"
    if is_map:
        assert ax.get_aspect() == 1.0, "a map must have equal aspect"
    fig = ax.figure
    fig.canvas.draw()
    legend = ax.get_legend()
    if legend is None:
        return
    box = legend.get_window_extent()
    for collection in ax.collections:
        offsets = collection.get_offsets()
        if len(offsets) == 0 or collection.get_label() == "":
            continue
        display = ax.transData.transform(np.asarray(offsets, dtype=float))
        inside = (
            (display[:, 0] > box.x0)
            & (display[:, 0] < box.x1)
            & (display[:, 1] > box.y0)
            & (display[:, 1] < box.y1)
        )
        assert not inside.any(), f"the legend covers {int(inside.sum())} points"
    bars = [p for p in ax.patches if hasattr(p, "get_bbox")]  # a circle is no bar
    for patch in bars:
        top = ax.transData.transform(patch.get_bbox().get_points())[1]
        assert not (box.x0 < top[0] < box.x1 and box.y0 < top[1] < box.y1), "legend hides a bar"


def test_every_figure_has_title_labels_and_a_clear_legend(tmp_path):
    from privopt.census.report import l1_per_level_figure
    from privopt.cluster._plot import projection_figure
    from privopt.geo import GeoParams, grid_geography, run_lrgeo
    from privopt.geo.crtable import CostReferenceTable
    from privopt.kanon import datasets
    from privopt.mdp import MDPProblem, km_to_latlon, rome_grid, solve
    from privopt.report import close_figure

    try:
        res = privopt.kanon.anonymize(datasets.fars_20(), 3, method="greedy")
        check_figure(res.plot())

        prob = MDPProblem(km_to_latlon(rome_grid(4, 4)), epsilon=2.0, eta=2.0, metric="haversine")
        pm = solve(prob, "lp", progress=False)
        check_figure(pm.plot_row(prob, 5), is_map=True)

        geo = grid_geography(6, 6, 0.5, metric="haversine")
        params = GeoParams(epsilon=2.0, gamma=0.6, lr_radius=2.0, r_obf=1.5, r_exp=1.0)
        table = CostReferenceTable(geo, 5, cell_km=0.1, rng=0)
        lr = run_lrgeo(geo, params, [3, 20], table, rng=0)
        ax = lr.plot_user(0)
        check_figure(ax, is_map=True)
        circle = next(p for p in ax.patches if "obfuscation" in str(p.get_label()))
        # drawn in km on equal axes: a circle of radius r_obf, not an ellipse
        assert circle.get_radius() == pytest.approx(params.r_obf)

        rows = [
            {"mechanism": m, "epsilon": 1.0, "ok": True, "l1": np.array([3.0, 40.0])}
            for m in ("M_H^dp", "M_c^dp", "TopDown")
        ]
        check_figure(l1_per_level_figure(rows, ["state", "county"]).axes[0])

        rng = np.random.default_rng(0)
        x = rng.normal(size=(200, 2))
        fig = projection_figure(x, (x[:, 0] > 0).astype(int), np.zeros((2, 2)), "DPM")
        check_figure(fig.axes[0], is_map=True)
    finally:
        close_figure("all")
