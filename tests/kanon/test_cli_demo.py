"""``privopt kanon`` CLI and the demo section."""

from __future__ import annotations

import time

import pandas as pd
import pytest
from privopt.cli import main
from privopt.kanon import datasets


def test_cli_writes_table_and_report(tmp_path, capsys):
    src = tmp_path / "in.csv"
    datasets.fars_20().assign(note="x").to_csv(src, index=False)
    out = tmp_path / "anon.csv"
    rc = main(
        [
            "kanon",
            str(src),
            "--k",
            "3",
            "--qi",
            "AGE,SEX,INJ_SEV,DRINKING",
            "--weights",
            "0.25,0.25,0.25,0.25",
            "--method",
            "split_carry",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    table = pd.read_csv(out)
    assert table.shape == (20, 5) and (table["note"] == "x").all()
    assert table.groupby(["AGE", "SEX", "INJ_SEV", "DRINKING"]).size().min() >= 3
    report = (tmp_path / "anon_report" / "report.md").read_text()
    assert "4.816532" in report and "kanon_class_sizes.png" in report
    assert (tmp_path / "anon_report" / "kanon_class_sizes.png").stat().st_size > 0
    assert "split_carry" in capsys.readouterr().out


def test_cli_report_dir_is_a_loadable_release(tmp_path, capsys):
    """``privopt kanon`` writes the release into --report-dir: privopt.load reads it back
    without the original data, it verifies, and stdout is its summary plus the paths."""
    import json

    import privopt
    from privopt.kanon import KAnonResult

    src = tmp_path / "in.csv"
    datasets.fars_20().assign(note="x").to_csv(src, index=False)
    out = tmp_path / "anon.csv"
    argv = ["kanon", str(src), "--k", "3", "--qi", "AGE,SEX,INJ_SEV,DRINKING", "--out", str(out)]
    assert main([*argv, "--method", "milp", "--report-dir", str(tmp_path / "rel"), "-q"]) == 0
    printed = json.loads(capsys.readouterr().out)
    loaded = privopt.load(printed["release"])
    assert isinstance(loaded, KAnonResult) and loaded.problem is None
    assert loaded.verify() is loaded and loaded.status == "optimal"
    assert {k: printed[k] for k in loaded.summary()} == loaded.summary()
    published = pd.read_csv(out)
    assert published.astype(str).equals(loaded.table.astype(str))  # the table that was published
    assert (loaded.table["note"] == "x").all() and loaded.k == 3


def test_cli_bad_input_is_a_clear_error(tmp_path, capsys):
    src = tmp_path / "in.csv"
    datasets.fars_20().to_csv(src, index=False)
    rc = main(["kanon", str(src), "--k", "50", "--out", str(tmp_path / "o.csv")])
    assert rc == 2
    assert "k must be <= number of rows" in capsys.readouterr().err


def test_demo_section_is_fast_and_matches_paper(tmp_path):
    from privopt.kanon.demo import demo_section

    start = time.perf_counter()
    sec = demo_section(tmp_path, 0)
    assert time.perf_counter() - start < 10
    assert "4.81653" in sec.body and "7.12702" in sec.body and "7.94355" in sec.body
    assert all((tmp_path / f).is_file() for f in sec.figures)


@pytest.mark.parametrize("argv", [["kanon", "--help"]])
def test_cli_help(argv, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    assert "--k" in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, expected, chunking",
    [
        ([], 10.0, "runs"),
        (["--sub-time-limit", "2.5", "--chunking", "paper"], 2.5, "paper"),
        (["--time-limit", "6"], "6 s over the sub-problems", "runs"),
    ],
)
def test_cli_split_carry_time_limit_default(tmp_path, monkeypatch, extra, expected, chunking):
    # without a limit the API default (10 s per sub-problem) applies, never "no limit";
    # --time-limit is the whole run's, as for the MILP, spread evenly over the sub-problems
    import privopt.kanon.split_carry as sc
    from privopt.kanon import api

    seen = {}
    real = sc.split_and_carry

    def spy(problem, **opts):
        labels, info = real(problem, **opts)
        seen.update(info)
        return labels, info

    monkeypatch.setattr(api, "split_and_carry", spy)  # where anonymize looks it up
    src = tmp_path / "in.csv"
    datasets.fars_20().to_csv(src, index=False)
    assert (
        main(
            [
                "kanon",
                str(src),
                "--k",
                "3",
                "--method",
                "split_carry",
                "--out",
                str(tmp_path / "o.csv"),
                *extra,
            ]
        )
        == 0
    )
    if isinstance(expected, str):
        expected = 6 / seen["n_subproblems"]
    assert seen["sub_time_limit"] == pytest.approx(expected) and seen["chunking"] == chunking
