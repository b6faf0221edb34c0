"""Every subcommand × every bad file or output path: one clear line, the right exit code, no
traceback, nothing on stdout, and every input and earlier output byte-identical afterwards."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from privopt._atomic import MARKER
from privopt.cli import EXIT_USAGE, main


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


COMMANDS = [
    Command(
        "mdp",
        lambda inp, out: ["mdp", inp, "--out", out],
        "x,y\n0,0\n1,0\n0,1\n",
        "x,y\n0,0\n1,0,2\n0,1\n",
        "x,y\n0,0\nnan,0\n0,1\n",
    ),
    Command(
        "kanon",
        lambda inp, out: ["kanon", inp, "--k", "2", "--out", out],
        "age,zip\n30,1\n31,1\n40,2\n41,2\n",
        "age,zip\n30,1\n31\n40,2\n",
        "age,zip\n30,1\n,1\n40,2\n41,2\n",
        out_is_file=True,
    ),
    Command(
        "census",
        lambda inp, out: [
            "census",
            *("--records", inp, "--levels", "state,county", "--group", "hh"),
            *("--seed", "0", "--out", out),
        ],
        "state,county,hh\nGA,g1,A\nGA,g2,B\nNY,n1,C\n",
        "state,county,hh\nGA,g1,A\nGA,g2,B,x\nNY,n1,C\n",
        "state,county,hh\nGA,g1,A\nGA,g2,\nNY,n1,C\n",
    ),
    Command(
        "cluster",
        lambda inp, out: ["cluster", inp, "--bounds", "0", "10", "--seed", "0", "--out", out],
        "x,y\n1,1\n2,2\n8,8\n9,9\n",
        "x,y\n1,1\n2\n8,8\n",
        "x,y\n1,1\n2,inf\n8,8\n",
    ),
    Command(
        "geo",
        lambda inp, out: ["geo", "--rome", inp, "--users", "1", "--out", out],
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
INPUT_CASES = {
    "missing file": "no such file",
    "empty file": "is empty",
    "garbled CSV": "not a UTF-8 text",
    "ragged CSV": r"is ragged: line 3 has",
    "wrong-dtype npy": r"must be a numeric array, got dtype <U|is a NumPy file",
    "NaN values": r"line 3|empty on line\(s\) \[3\]|missing values .* at row 1",
}
OUTPUT_CASES = {
    "unwritable --out": "is not a directory",
    "--out = input": "is, or contains, the input",
    "--out contains input": "is, or contains, the input",
    "existing --out": "pass --force to replace it",
    "foreign non-empty --out": "privopt did not write",
}


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


def write_input_file(case: str, cmd: Command, path: Path) -> None:
    if case == "empty file":
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


def output_path(case: str, cmd: Command, folder: Path, source: Path) -> Path:
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
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def table() -> list:
    rows = []
    for cmd in COMMANDS:
        if cmd.takes_input:
            overrides = dict(cmd.fragments)
            rows += [
                pytest.param(cmd, case, overrides.get(case, frag), id=f"{cmd.name}-{case}")
                for case, frag in INPUT_CASES.items()
            ]
        for case, frag in OUTPUT_CASES.items():
            if case in ("--out = input", "--out contains input") and not cmd.takes_input:
                continue  # demo reads no input file
            if case == "foreign non-empty --out" and cmd.out_is_file:
                continue  # a file output has no directory to protect
            rows.append(pytest.param(cmd, case, frag, id=f"{cmd.name}-{case}"))
    return rows


@pytest.mark.parametrize(("cmd", "case", "fragment"), table())
def test_bad_invocation_is_one_clear_line(cmd, case, fragment, tmp_path, capsys):
    source = write_input(case if case in INPUT_CASES else "good", cmd, tmp_path)
    out = (
        output_path(case, cmd, tmp_path, source)
        if case in OUTPUT_CASES
        else tmp_path / ("result.csv" if cmd.out_is_file else "result")
    )
    before = snapshot(tmp_path)
    code = main([*cmd.argv(str(source), str(out)), "--quiet"])
    captured = capsys.readouterr()
    assert code == EXIT_USAGE, captured.err
    # A seeded run warns first that its draws are reproducible (a line of its own).
    lines = [line for line in captured.err.splitlines() if ": warning: --seed" not in line]
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"privopt {cmd.name}: error: ")
    assert "Traceback" not in captured.err
    assert re.search(fragment, lines[0]), lines[0]
    assert captured.out == ""  # no summary for a failed run
    assert snapshot(tmp_path) == before  # inputs and earlier outputs byte-identical


def test_the_table_covers_every_subcommand():
    from privopt.cli import build_parser

    parser = build_parser()
    registered = set(parser._subparsers._group_actions[0].choices)
    assert registered == {c.name for c in COMMANDS}
