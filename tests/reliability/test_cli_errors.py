"""Every subcommand × every bad file, output path or numeric option: one clear line, the right
exit code, no traceback, nothing on stdout, and every input and earlier output byte-identical
afterwards."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from privopt._arguments import Integer, Real, RealList
from privopt._atomic import MARKER, RunOutputs
from privopt._inputs import MAX_CELL_CHARS
from privopt.cli import EXIT_USAGE, build_parser, main


@dataclass(frozen=True)
class Command:
    """How to call one subcommand: its argv for an input file and an output path."""

    name: str
    argv: Callable[[str, str], list[str]]
    good_csv: str  # a valid input, for the cases whose problem is the output
    ragged_csv: str
    nan_csv: str
    out_is_file: bool = False
    takes_input: bool = True
    #: The input is a folder holding this file (plus ``extra_files``), not the file itself.
    folder_input: str | None = None
    extra_files: tuple[tuple[str, str], ...] = ()
    fragments: tuple[tuple[str, str], ...] = ()  # per-case overrides of the expected message
    #: The input without its header line when a header is required (None: it is optional).
    headerless_csv: str | None = None
    #: Input cases that are no mistake for this command (e.g. "1_000" as a census label).
    accepts: tuple[str, ...] = ()


COMMANDS = [
    Command(
        "mdp",
        lambda inp, out: ["mdp", inp, "--epsilon", "2", "--out", out],
        "x,y\n0,0\n1,0\n0,1\n",
        "x,y\n0,0\n1,0,2\n0,1\n",
        "x,y\n0,0\nnan,0\n0,1\n",
    ),
    Command(
        "kanon",
        lambda inp, out: ["kanon", inp, "--anonymity", "2", "--out", out],
        "age,zip\n30,1\n31,1\n40,2\n41,2\n",
        "age,zip\n30,1\n31\n40,2\n",
        "age,zip\n30,1\n,1\n40,2\n41,2\n",
        headerless_csv="30,1\n31,1\n40,2\n41,2\n",
    ),
    Command(
        "census",
        lambda inp, out: [
            "census",
            *("--records", inp, "--levels", "state,county", "--group", "hh"),
            *("--epsilon", "1", "--seed", "0", "--out", out),
        ],
        "state,county,hh\nGA,g1,A\nGA,g2,B\nNY,n1,C\n",
        "state,county,hh\nGA,g1,A\nGA,g2,B,x\nNY,n1,C\n",
        "state,county,hh\nGA,g1,A\nGA,g2,\nNY,n1,C\n",
        headerless_csv="1,11,1\n1,12,2\n2,21,3\n",
        accepts=("number with _",),  # region and group ids are labels: "06_001" is one
    ),
    Command(
        "cluster",
        lambda inp, out: [
            *("cluster", inp, "--bounds", "0", "10", "--epsilon", "1", "--delta", "0.01"),
            *("--seed", "0", "--out", out),
        ],
        "x,y\n1,1\n2,2\n8,8\n9,9\n",
        "x,y\n1,1\n2\n8,8\n",
        "x,y\n1,1\n2,inf\n8,8\n",
    ),
    Command(
        "geo",
        lambda inp, out: ["geo", "--rome", inp, "--epsilon", "10", "--users", "1", "--out", out],
        "osmid,grid_index,y,x\n1,10,41.90,12.50\n2,11,41.90,12.51\n",
        "osmid,grid_index,y,x\n1,10,41.90,12.50\n2,11,41.90\n",
        "osmid,grid_index,y,x\n1,10,41.90,12.50\n2,11,nan,12.51\n",
        folder_input="reget_rome_cell_node40x40.csv",
        extra_files=(
            ("reget_rome_cost_thrhold_2.csv", "u_index,u,v_index,v,length\n10,1,11,2,0.8\n"),
        ),
        fragments=(("missing file", "is missing"), ("wrong-dtype npy", "not a UTF-8 text")),
    ),
    Command(
        "demo",
        lambda inp, out: ["demo", "--out", out],
        "",
        "",
        "",
        takes_input=False,
    ),
]

# case -> a regular expression the error line must match.
#: A small census input of three levels (nation, state, county) that needs no file.
CENSUS_SYNTHETIC = ("--synthetic-us", "--scale", "1e-5")

INPUT_CASES = {
    "missing file": "no such file",
    "empty file": "is empty",
    "garbled CSV": "not a UTF-8 text",
    "ragged CSV": r"is ragged: line 3 has",
    "wrong-dtype npy": r"must be a numeric array, got dtype <U|is a NumPy file",
    "NaN values": r"line 3|empty on line\(s\) \[3\]|missing values .* at row 1",
    "no header": "the first line holds numbers, not column names; add a header line",
    "repeated column name": r"names two columns '\w+' \(columns 1 and 2\); column names must",
    "unnamed column": r"column 1 of the header \(line 1\) has no name",
    # the cell is data: the message names its line and column, not its text
    "number with _": r"line 2, column .*(uses|is a number written with) '_'",
    "cell too long": f"line 2 has a cell longer than {MAX_CELL_CHARS:,} characters",
    "named pipe": r"is a named pipe \(FIFO\), not a regular file",
    "link loop": "is a symbolic link that loops back on itself",
    "dangling link": r"is a symbolic link to '.*', which does not exist",
}
OUTPUT_CASES = {
    "unwritable --out": "is not a directory",
    "--out = input": "is, or contains, the input",
    "--out contains input": "is, or contains, the input",
    "existing --out": "pass --force to replace it",
    "foreign non-empty --out": "privopt did not write",
    "--out is a link loop": "is a symbolic link that loops back on itself",
    "file --out ending in /": "ends with '/', which names a directory; --out takes a file name",
    "empty --out": "--out is empty; give a path",
    "--out held by another run": r"is being written by another privopt run \(pid \d+\); wait",
}


def with_epsilon(argv: list[str]) -> list[str]:
    """The privacy options a command needs (they have no default) when ``argv`` lacks them."""
    # census takes --rho instead, mdp and geo --sweep-epsilon
    chosen = any(flag in argv for flag in ("--epsilon", "--rho", "--sweep-epsilon"))
    extra = [] if argv[0] in ("kanon", "demo") or chosen else ["--epsilon", "1"]
    if argv[0] == "cluster" and "--delta" not in argv:
        extra += ["--delta", "0.01"]
    return extra


def write_input(case: str, cmd: Command, folder: Path) -> Path:
    """Write the case's input; return the path to pass on the command line."""
    if cmd.folder_input is not None:
        data = folder / "data"
        data.mkdir()
        for name, text in cmd.extra_files:
            (data / name).write_text(text)
        write_input_file(case, cmd, data / cmd.folder_input)
        return data
    path = folder / ("points.npy" if case == "wrong-dtype npy" else "input.csv")
    write_input_file(case, cmd, path)
    return path


def edit_first_cell(csv_text: str, line: int, cell: str) -> str:
    """``csv_text`` with the first cell of line ``line`` (1-based) replaced by ``cell``."""
    lines = csv_text.splitlines()
    lines[line - 1] = ",".join([cell, *lines[line - 1].split(",")[1:]])
    return "\n".join(lines) + "\n"


def write_input_file(case: str, cmd: Command, path: Path) -> None:
    if case == "no header":
        path.write_text(cmd.headerless_csv or "")
    elif case == "repeated column name":
        second_name = cmd.good_csv.split(",")[1].split("\n")[0]
        path.write_text(edit_first_cell(cmd.good_csv, 1, second_name))
    elif case == "unnamed column":
        path.write_text(edit_first_cell(cmd.good_csv, 1, ""))
    elif case == "number with _":
        path.write_text(edit_first_cell(cmd.good_csv, 2, "1_000"))
    elif case == "cell too long":
        path.write_text(edit_first_cell(cmd.good_csv, 2, "1" * (MAX_CELL_CHARS + 1)))
    elif case == "named pipe":
        os.mkfifo(path)
    elif case == "link loop":
        path.symlink_to(path.with_name("loop-" + path.name))
        path.with_name("loop-" + path.name).symlink_to(path)
    elif case == "dangling link":
        path.symlink_to(path.with_name("moved-" + path.name))
    elif case == "empty file":
        path.write_bytes(b"")
    elif case == "garbled CSV":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\xfd garbage")
    elif case == "ragged CSV":
        path.write_text(cmd.ragged_csv)
    elif case == "wrong-dtype npy":
        with open(path, "wb") as f:  # np.save(path) would append ".npy" to another name
            np.save(f, np.array(["north", "south"]))
    elif case == "NaN values":
        path.write_text(cmd.nan_csv)
    elif case != "missing file":
        path.write_text(cmd.good_csv)


def unusual_output(case: str, cmd: Command, folder: Path) -> Path | str | None:
    """The output path of the cases about the path itself (None for the other cases)."""
    if case == "--out is a link loop":
        (folder / "loop-a").symlink_to("loop-b")
        (folder / "loop-b").symlink_to("loop-a")
        return folder / "loop-a"
    if case == "file --out ending in /":
        return f"{folder}/newdir/"  # a string: Path() would drop the slash
    if case == "empty --out":
        return ""
    if case == "--out held by another run":
        return folder / ("result.csv" if cmd.out_is_file else "result")
    return None


def output_path(case: str, cmd: Command, folder: Path, source: Path) -> Path | str:
    unusual = unusual_output(case, cmd, folder)
    if unusual is not None:
        return unusual
    if case == "unwritable --out":  # a regular file where a directory must be (fails as root too)
        (folder / "plain_file").write_text("x")
        return folder / "plain_file" / ("o.csv" if cmd.out_is_file else "out")
    if case == "--out = input":
        return source
    if case == "--out contains input":
        return folder
    if cmd.out_is_file:
        target = folder / "earlier.csv"
        target.write_text("an earlier result\n")
        return target
    target = folder / "earlier"
    target.mkdir()
    (target / "report.md").write_text("an earlier result\n")
    if case == "existing --out":
        (target / MARKER).write_text("written by privopt\n")
    return target


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``, hidden ones included: a file's hash, a link's target, or
    its kind (so a leftover lock file, staging folder or created parent shows)."""
    entries = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            entries[str(p.relative_to(folder))] = f"link to {os.readlink(p)}"
        elif p.is_file():
            entries[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            entries[str(p.relative_to(folder))] = "folder" if p.is_dir() else "other"
    return entries


def applies(cmd: Command, case: str) -> bool:
    """Whether ``case`` is a mistake for ``cmd`` (some inputs are fine for some commands)."""
    if case in cmd.accepts:
        return False
    if case in INPUT_CASES:
        return cmd.takes_input and (case != "no header" or cmd.headerless_csv is not None)
    if case in ("--out = input", "--out contains input"):
        return cmd.takes_input  # demo reads no input file
    if case == "foreign non-empty --out":
        return not cmd.out_is_file  # a file output has no directory to protect
    if case == "file --out ending in /":
        return cmd.out_is_file  # "out/" is a fine output directory
    return True


def table() -> list:
    rows = []
    for cmd in COMMANDS:
        overrides = dict(cmd.fragments)
        rows += [
            pytest.param(cmd, case, overrides.get(case, frag), id=f"{cmd.name}-{case}")
            for case, frag in {**INPUT_CASES, **OUTPUT_CASES}.items()
            if applies(cmd, case)
        ]
    return rows


@pytest.mark.parametrize(("cmd", "case", "fragment"), table())
def test_bad_invocation_is_one_clear_line(cmd, case, fragment, tmp_path, capsys):
    source = write_input(case if case in INPUT_CASES else "good", cmd, tmp_path)
    out = (
        output_path(case, cmd, tmp_path, source)
        if case in OUTPUT_CASES
        else tmp_path / ("result.csv" if cmd.out_is_file else "result")
    )
    with RunOutputs() as other_run:  # holds the output's lock, for that case
        if case == "--out held by another run":
            other_run.add(out, kind="file" if cmd.out_is_file else "dir")
        before = snapshot(tmp_path)
        code = main([*cmd.argv(str(source), str(out)), "--quiet"])
        after = snapshot(tmp_path)
    captured = capsys.readouterr()
    assert code == EXIT_USAGE, captured.err
    # A seeded run warns first that its draws are reproducible (a line of its own).
    lines = [line for line in captured.err.splitlines() if ": warning: --seed" not in line]
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"privopt {cmd.name}: error: ")
    assert "Traceback" not in captured.err
    assert re.search(fragment, lines[0]), lines[0]
    assert captured.out == ""  # no summary for a failed run
    assert after == before  # inputs and earlier outputs byte-identical, nothing left behind


def test_the_table_covers_every_subcommand():

    parser = build_parser()
    registered = set(parser._subparsers._group_actions[0].choices)
    assert registered == {c.name for c in COMMANDS}


# ------------------------------------------------------------------------- numeric options


def numeric_options() -> list:
    """(subcommand words, action) for every option of every subcommand that takes a number."""
    found = []

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])
            elif isinstance(action.type, (Real, Integer, RealList)):
                found.append((words, action))

    walk(build_parser(), [])
    return found


def bad_values(kind: Real | Integer | RealList) -> list[str]:
    """Values the option must refuse: never numbers, plus those outside its range (for a
    list: each such value beside a good one, an empty item, too many items)."""
    if isinstance(kind, RealList):
        good = "1" if kind.item.low is None else str(kind.item.low + 1)
        return [
            *(f"{good},{v}" for v in bad_values(kind.item) if v),
            ",",
            f"{good},,{good}",
            ",".join([good] * (kind.max_items + 1)),
        ]
    values = ["nan", "abc", "1_0", ""]
    if isinstance(kind, Real) and not kind.allow_inf:
        values.append("inf")
    if isinstance(kind, Real) and kind.low is not None:
        values.append(str(kind.low if kind.low_open else kind.low - 1))
    if isinstance(kind, Real) and kind.high is not None:
        values.append(str(kind.high * 2))
    if isinstance(kind, Integer):
        values.append("1.5")
        values += [str(b) for b in (kind.low and kind.low - 1, kind.high and kind.high + 1) if b]
    return values


def option_rows() -> list:
    return [
        pytest.param(words, action, value, id=f"{' '.join(words)} {action.dest}={value!r}")
        for words, action in numeric_options()
        for value in bad_values(action.type)
    ]


@pytest.mark.parametrize(("words", "action", "value"), option_rows())
def test_a_bad_number_for_any_option_is_one_line_naming_it(words, action, value, capsys):
    argv = [*words, action.option_strings[-1], *[value] * (action.nargs or 1)]
    assert main(argv) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [captured.err.strip()]  # one line, no usage block before it
    assert captured.err.startswith(f"privopt {' '.join(words)}: error: argument ")
    assert action.option_strings[-1] in captured.err


def test_every_numeric_option_is_read_by_the_shared_types():
    loose = [
        f"{' '.join(words)} {action.option_strings[-1]}"
        for words, action in _all_options()
        if action.type in (int, float)
    ]
    assert not loose, f"options read with plain int/float (NaN, inf, 1_000 slip through): {loose}"
    assert len(numeric_options()) >= 50  # mdp, kanon, census, cluster, geo, serve, client, demo


def _all_options() -> list:
    found = []

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])
            elif action.option_strings:
                found.append((words, action))

    walk(build_parser(), [])
    return found


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (
            ["geo", "--grid", "100000x100000"],
            "argument --grid: 100000x100000 is 10,000,000,000 locations, more than the "
            "1,000,000 a generated grid may have",
        ),
        (["geo", "--grid", "20x"], "must look like ROWSxCOLS with two integers >= 1"),
        (["geo", "--grid", "0x5"], "must look like ROWSxCOLS with two integers >= 1"),
        (
            ["geo", "--epsilon", "1e6"],
            "epsilon * r_exp / 2 = 2e+06 exceeds ln(largest float64) = 709.78",
        ),
        (["geo", "serve", "--epsilon", "1e6"], "epsilon * r_exp / 2 = 2e+06 exceeds"),
        (["geo", "--sweep-epsilon", "1,1e6"], "epsilon * r_exp / 2 = 2e+06 exceeds"),
        (
            ["geo", "--grid", "4x4", "--sweep-epsilon", "1", "--users", "17"],
            "--users must lie in [1, 16], got 17",
        ),
        (["kanon", "IN", "--anonymity", "2", "--weights", "1_0,2"], "--weights must be numbers"),
        (
            ["kanon", "IN", "--anonymity", "2", "--sub-time-limit", "2"],
            "--sub-time-limit applies to --method split-carry, not greedy",
        ),
        (
            ["kanon", "IN", "--anonymity", "2", "--qi", "age,zip", "--sensitive", "zip"],
            "columns ['zip'] are named both in quasi_identifiers and in sensitive",
        ),
        (
            ["kanon", "IN", "--anonymity", "2", "--sensitive", "age,zip"],
            "sensitive names every column: no quasi-identifier is left to generalise",
        ),
        (
            ["kanon", "IN", "--anonymity", "2", "--sensitive", "salary"],
            "sensitive names unknown columns ['salary']",
        ),
        (
            ["cluster", "IN", "--bounds-epsilon-share", "1"],
            "bounds_epsilon_share must lie in (0, 1), got 1.0",
        ),
        (["cluster", "IN", "--bounds-range", "5", "-5"], "bounds_range must be (lo, hi)"),
        (["cluster", "IN", "--bounds-file", "IN"], "--bounds-file must hold 2 rows"),
        (
            ["cluster", "IN", "--bounds", "0", "1", "--bounds-file", "IN"],
            "argument --bounds-file: not allowed with argument --bounds",
        ),
        (
            ["cluster", "IN", "--bounds", "0", "1", "--bounds-epsilon-share", "0.2"],
            "--bounds-epsilon-share applies only to estimated bounds, not with --bounds",
        ),
        (
            ["cluster", "IN", "--bounds-file", "IN", "--bounds-range", "0", "9"],
            "--bounds-range applies only to estimated bounds, not with --bounds-file",
        ),
        (
            ["cluster", "IN", "--bounds", "0", "9", "--workers", "2"],
            "--workers and --scheduler need a .npy INPUT (the workers read it in row chunks)",
        ),
        (["census", *CENSUS_SYNTHETIC, "--targets", "5,x,3"], "--targets: 'x' is not a number"),
        (["census", *CENSUS_SYNTHETIC, "--targets", "5,0,3"], "every target must be a number > 0"),
        (["census", *CENSUS_SYNTHETIC, "--targets", "5,nan,3"], "every target must be a number"),
        (["census", *CENSUS_SYNTHETIC, "--targets", "5,3"], "--targets needs one RMSE per level"),
        (["census", *CENSUS_SYNTHETIC, "--intervals", "1"], "confidence must lie in (0, 1)"),
        (
            ["census", *CENSUS_SYNTHETIC, "--intervals", "0.9", "--interval-runs", "5"],
            "runs must be >= 20",
        ),
    ],
    ids=[
        "grid too large",
        "grid half",
        "grid of 0",
        "geo huge epsilon",
        "serve huge epsilon",
        "geo sweep with a huge epsilon",
        "geo sweep with too many users",
        "weights with _",
        "sub-time-limit without split_carry",
        "kanon column both QI and sensitive",
        "kanon every column sensitive",
        "kanon unknown sensitive column",
        "cluster bounds share of 1",
        "cluster bounds range reversed",
        "cluster bounds file of the wrong shape",
        "cluster bounds and bounds file",
        "cluster bounds share with bounds",
        "cluster bounds range with a bounds file",
        "cluster --workers with a text INPUT",
        "census targets not numbers",
        "census target of 0",
        "census target nan",
        "census targets of the wrong length",
        "census confidence of 1",
        "census too few interval runs",
    ],
)
def test_values_checked_past_their_type_are_one_line_too(argv, fragment, tmp_path, capsys):
    (tmp_path / "in.csv").write_text("age,zip\n30,1\n31,1\n40,2\n41,2\n")
    argv = [str(tmp_path / "in.csv") if a == "IN" else a for a in argv]
    argv += with_epsilon(argv)
    if argv[0] != "geo" or "serve" not in argv:
        argv += ["--out", str(tmp_path / "o")]
    assert main([*argv, "-q"]) == EXIT_USAGE
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and fragment in lines[0], captured.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]  # nothing left behind


def test_mdp_epsilon_whose_ratios_overflow_is_refused_naming_it(tmp_path, capsys):
    """ε·d above ln(largest float64) for a neighbour pair: e^(ε·d) is no float, so the
    guarantee could not be checked; refused before any solve (mdp's ε·η here is 5e6)."""
    (tmp_path / "in.csv").write_text("x,y\n1,1\n2,2\n8,8\n9,9\n")
    argv = ["mdp", str(tmp_path / "in.csv"), "--epsilon", "1e6", "--eta", "5"]
    assert main([*argv, "--out", str(tmp_path / "o"), "-q"]) == EXIT_USAGE
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "epsilon" in lines[0] and "709.78" in lines[0], lines


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["mdp", "IN", "--epsilon", "100", "--eta", "5"], id="mdp"),
        pytest.param(
            ["census", "--synthetic-us", "--scale", "1e-5", "--epsilon", "1e6", "--seed", "0"],
            id="census",
        ),
        pytest.param(
            [
                *("cluster", "IN", "--bounds", "0", "10", "--epsilon", "1e6"),
                *("--delta", "0.01", "--seed", "0"),
            ],
            id="cluster",
        ),
    ],
)
def test_a_huge_epsilon_is_computed_not_an_internal_error(argv, tmp_path, capsys):
    (tmp_path / "in.csv").write_text("x,y\n1,1\n2,2\n8,8\n9,9\n")
    argv = [str(tmp_path / "in.csv") if a == "IN" else a for a in argv]
    assert main([*argv, "--out", str(tmp_path / "o"), "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["out"] == str(tmp_path / "o")


# ---------------------------------------------------------------------------- CSV headers


def test_a_quoted_header_names_the_columns(tmp_path, capsys):
    """'"lon","lat"' is a header: the columns are taken by name, as without the quotes."""
    rows = "12.50,41.90\n12.51,41.91\n12.52,41.90\n12.50,41.92\n"
    losses = []
    for header in ('"lon","lat"', "lon,lat"):
        src = tmp_path / f"p{len(losses)}.csv"
        src.write_text(f"{header}\n{rows}")
        argv = ["mdp", str(src), "--metric", "haversine", "--epsilon", "1", "--eta", "3"]
        assert main([*argv, "--out", str(tmp_path / f"o{len(losses)}"), "-q"]) == 0
        losses.append(json.loads(capsys.readouterr().out)["expected_loss"])
    assert losses[0] == losses[1]
    from privopt.mdp.cli import load_points

    assert load_points(tmp_path / "p0.csv")[0].tolist() == [41.90, 12.50]  # (lat, lon)


def test_labels_with_underscores_throughout_stay_labels(tmp_path):
    """Only a column of numbers where some carry "_" is refused; "06_001" codes are labels."""
    from privopt._inputs import read_csv_table

    src = tmp_path / "t.csv"
    src.write_text("age,county\n30,06_001\n31,06_001\n40,06_075\n41,06_075\n")
    frame = read_csv_table(src, "INPUT")
    assert frame["county"].tolist() == ["06_001", "06_001", "06_075", "06_075"]
    src.write_text("age,county\n30,1\n31,1_000\n40,2\n41,2\n")
    assert read_csv_table(src, "INPUT", refuse_separators=False)["county"].tolist()[1] == "1_000"


# ------------------------------------------------------- options a run would silently ignore

IGNORED_OPTIONS = {
    "kanon --S with greedy": (
        ["kanon", "TAB", "--anonymity", "2", "--S", "5"],
        "--sets-per-chunk is only used with",
    ),
    "kanon --S 3 (its default) with greedy": (
        ["kanon", "TAB", "--anonymity", "2", "--S", "3"],
        "--sets-per-chunk is only used with --method split-carry",
    ),
    "kanon --chunking with milp": (
        ["kanon", "TAB", "--anonymity", "2", "--method", "milp", "--chunking", "paper"],
        "--chunking is only used with --method split-carry",
    ),
    "kanon --time-limit with greedy": (
        ["kanon", "TAB", "--anonymity", "2", "--time-limit", "5"],
        "--time-limit is only used with --method milp or split-carry",
    ),
    "mdp --subsets with lp": (["mdp", "PTS", "--subsets", "3"], "--subsets is only used with"),
    "mdp --plain with benders": (
        ["mdp", "PTS", "--method", "benders", "--plain"],
        "--plain is only used with --method lp",
    ),
    "mdp --polish with --plain": (
        ["mdp", "PTS", "--plain", "--polish", "yes"],
        "--polish is only used with --method lp without --plain",
    ),
    "mdp --sample-seed without --outputs": (
        ["mdp", "PTS", "--sample-seed", "3"],
        "--sample-seed is only used with --outputs",
    ),
    "mdp --seed (former --sample-seed) without -k": (
        ["mdp", "PTS", "--seed", "3"],
        "--sample-seed is only used with --outputs",
    ),
    "mdp --time-limit with expmech": (
        ["mdp", "PTS", "--method", "expmech", "--time-limit", "3"],
        "--time-limit is only used with lp or benders",
    ),
    "mdp --workers with one LP": (
        ["mdp", "PTS", "--workers", "2"],
        "--workers is only used with --method benders or --sweep-epsilon",
    ),
    "mdp --scheduler with expmech": (
        ["mdp", "PTS", "--method", "expmech", "--scheduler", "tcp://127.0.0.1:1"],
        "--scheduler is only used with --method benders or --sweep-epsilon",
    ),
    "mdp --connect-timeout without --scheduler": (
        ["mdp", "PTS", "--method", "benders", "--connect-timeout", "1"],
        "--connect-timeout is only used with --scheduler",
    ),
    "kanon --workers with greedy": (
        ["kanon", "TAB", "--anonymity", "2", "--workers", "2"],
        "--workers is only used with --method split-carry",
    ),
    "cluster --chunk-rows without a cluster": (
        ["cluster", "PTS", "--bounds", "0", "1", "--chunk-rows", "1000"],
        "--chunk-rows is only used with --workers or --scheduler",
    ),
    "cluster --connect-timeout without --scheduler": (
        ["cluster", "PTS", "--bounds", "0", "1", "--workers", "2", "--connect-timeout", "1"],
        "--connect-timeout is only used with --scheduler",
    ),
    "geo --workers with one LP": (
        ["geo", "--grid", "4x4", "--epsilon", "2", "--method", "lp", "--workers", "2"],
        "--workers is only used with --method benders or auto, or --sweep-epsilon",
    ),
    "kanon --parts with greedy": (
        ["kanon", "TAB", "--anonymity", "2", "--parts", "2"],
        "--parts is only used with --method split-carry",
    ),
    "census --threads with m-h": (
        ["census", "--counts", "CNT", "--levels", "state", "--method", "m-h", "--threads", "2"],
        "--threads is only used with --method m-h-dp or m-c-dp",
    ),
    "mdp --baselines without a sweep": (
        ["mdp", "PTS", "--baselines", "expmech"],
        "--baselines is only used with --sweep-epsilon",
    ),
    "mdp --epsilon with a sweep": (
        ["mdp", "PTS", "--sweep-epsilon", "1,2", "--epsilon", "3"],
        "--epsilon is only used with one matrix (without --sweep-epsilon)",
    ),
    "mdp sweep with expmech": (
        ["mdp", "PTS", "--sweep-epsilon", "1,2", "--method", "expmech"],
        "--sweep-epsilon compares the optimal matrix with the baselines: use --method lp",
    ),
    "geo --epsilon with a sweep": (
        ["geo", "--grid", "4x4", "--sweep-epsilon", "1,2", "--epsilon", "3"],
        "--epsilon is only used with one run (without --sweep-epsilon)",
    ),
    "census two inputs": (
        ["census", "--records", "REC", "--synthetic-us", "--levels", "state", "--group", "hh"],
        "give one input, not --records and --synthetic-us",
    ),
    "census without an input": (
        ["census", "--epsilon", "1"],
        "give one input: --records, --counts, --synthetic-us or --streamed-synthetic",
    ),
    "census --group with --counts": (
        ["census", "--counts", "CNT", "--levels", "state", "--group", "hh"],
        "--group is only used with --records",
    ),
    "census --runs without --compare": (
        ["census", "--records", "REC", "--levels", "state", "--group", "hh", "--runs", "5"],
        "--runs is only used with --compare",
    ),
    "census --window with M_H": (
        [
            *("census", "--records", "REC", "--levels", "state", "--group", "hh"),
            *("--mechanism", "M_H", "--window", "3"),
        ],
        "--value-window is only used with --method m-h-dp",
    ),
    "census --scale with --records": (
        ["census", "--records", "REC", "--levels", "state", "--group", "hh", "--scale", "0.5"],
        "--scale is only used with --synthetic-us",
    ),
    "census --epsilon and --rho": (
        [
            *("census", "--records", "REC", "--levels", "state", "--group", "hh"),
            *("--epsilon", "1", "--rho", "0.5"),
        ],
        "give one of --epsilon (geometric noise) and --rho (Gaussian noise)",
    ),
    "census --rho with --compare": (
        [
            *("census", "--records", "REC", "--levels", "state", "--group", "hh"),
            *("--rho", "0.5", "--compare", "all"),
        ],
        "--compare runs geometric noise at --epsilon; leave out --rho",
    ),
    "census --interval-runs without --intervals": (
        [
            *("census", "--records", "REC", "--levels", "state", "--group", "hh"),
            *("--interval-runs", "50"),
        ],
        "--interval-runs is only used with --intervals",
    ),
    "census --intervals with a QP baseline": (
        [
            *("census", "--records", "REC", "--levels", "state", "--group", "hh"),
            *("--method", "M_H^r", "--intervals", "0.9"),
        ],
        "m-h-r rounds a QP and need not be consistent",
    ),
    "census --interval-runs with M_H": (
        [
            *("census", "--records", "REC", "--levels", "state", "--group", "hh"),
            *("--method", "M_H", "--intervals", "0.9", "--interval-runs", "50"),
        ],
        "--interval-runs: M_H's intervals are exact",
    ),
}


@pytest.mark.parametrize(
    ("argv", "fragment"), list(IGNORED_OPTIONS.values()), ids=list(IGNORED_OPTIONS)
)
def test_an_option_the_run_would_ignore_is_refused(argv, fragment, tmp_path, capsys):
    """Passing ``--S 5`` to the greedy method, or two inputs, asks for something the run would
    not do: one line naming the option, exit 2, nothing read or written."""
    files = {
        "TAB": ("t.csv", "age,zip\n30,1\n31,1\n40,2\n41,2\n"),
        "PTS": ("p.csv", "x,y\n0,0\n1,0\n0,1\n"),
        "REC": ("r.csv", "state,hh\nGA,a\nGA,a\nNY,b\n"),
        "CNT": ("c.csv", "state,size_1\nGA,2\nNY,1\n"),
    }
    for name, text in files.values():
        (tmp_path / name).write_text(text)
    argv = [str(tmp_path / files[a][0]) if a in files else a for a in argv]
    argv += with_epsilon(argv)
    out = tmp_path / "o"
    before = snapshot(tmp_path)
    assert main([*argv, "--out", str(out), "-q"]) == EXIT_USAGE
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ": warning: --seed" not in ln]
    assert len(lines) == 1 and lines[0].startswith(f"privopt {argv[0]}: error: "), captured.err
    assert fragment in lines[0], lines[0]
    assert captured.out == "" and snapshot(tmp_path) == before


def test_geo_serve_refuses_a_cluster_its_method_would_not_use(capsys):
    """lp and rowgen solve each batch as one LP in the server's process: --workers or
    --scheduler would start or reach a cluster for nothing."""
    argv = ["geo", "serve", "--grid", "4x4", "--epsilon", "2", "--method", "rowgen"]
    assert main([*argv, "--scheduler", "tcp://127.0.0.1:1", "--port", "0"]) == EXIT_USAGE
    assert capsys.readouterr().err.splitlines() == [
        "privopt geo serve: error: --scheduler is only used with --method benders or auto; "
        "here it would be ignored"
    ]


def test_an_unknown_baseline_is_refused_before_the_solve(capsys):
    assert main(["geo", "--grid", "4x4", "--baselines", "expmech,foo", "-q"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "privopt geo: error: argument --baselines: unknown baseline(s) ['foo']; use any of "
        "lp, lp-inf, constopt, expmech, laplace or none"
    ]


def test_a_mistyped_option_is_named_after_its_subcommand(capsys):
    assert main(["mdp", "p.csv", "--epsilon", "1", "--epslon", "1"]) == EXIT_USAGE
    assert capsys.readouterr().err == "privopt mdp: error: unrecognized arguments: --epslon 1\n"
    assert main(["geo", "client", "--server", "http://x", "--location", "1", "--bogus"]) == 2
    assert capsys.readouterr().err.startswith("privopt geo client: error: unrecognized")


def test_a_server_that_cannot_be_reached_is_named(tmp_path, capsys):
    """A client's error line carries its own subcommand and names the server it tried."""
    import socket

    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = ["geo", "client", "--server", f"http://127.0.0.1:{port}", "--grid", "4x4"]
    assert main([*argv, "--location", "1", "--timeout", "5", "-q"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"privopt geo client: error: cannot reach the server at http://127.0.0.1:{port} "
        "(/setup): Connection refused"
    ]


# -------------------------------------------------------- text that pandas would make missing


def test_a_missing_value_word_among_numbers_is_refused_by_line(tmp_path, capsys):
    """ "NA" or "nan" in a column of numbers would turn the column into categories: refused."""
    for word in ("NA", "nan", "null"):
        src = tmp_path / f"{word}.csv"
        src.write_text(f"age,zip\n30,1\n{word},1\n40,2\n41,2\n")
        argv = ["kanon", str(src), "--anonymity", "2", "--out", str(tmp_path / f"{word}-o"), "-q"]
        assert main(argv) == EXIT_USAGE
        err = capsys.readouterr().err
        assert f"line 3, column 'age': '{word}' spells a missing value" in err, err


def test_na_is_a_name_like_any_other(tmp_path, capsys):
    """A category or a region called "NA" (Namibia, North America) is read as written: not a
    missing value that would end a region path early or drop a category."""
    src = tmp_path / "t.csv"
    src.write_text("region,age\nNA,30\nEU,31\nNA,40\nEU,41\n")
    assert main(["kanon", str(src), "--anonymity", "2", "--out", str(tmp_path / "k"), "-q"]) == 0
    assert "NA" in (tmp_path / "k" / "anonymized.csv").read_text().split()[1]
    rec = tmp_path / "r.csv"
    rec.write_text("state,county,hh\nGA,a,1\nGA,NA,2\nGA,NA,3\nNY,b,4\n")
    argv = ["census", "--records", str(rec), "--levels", "state,county", "--group", "hh"]
    assert main([*argv, "--epsilon", "1", "--pad-leaves", "--out", str(tmp_path / "c"), "-q"]) == 0
    capsys.readouterr()
    assert "GA/NA,county" in (tmp_path / "c" / "released_counts.csv").read_text()
