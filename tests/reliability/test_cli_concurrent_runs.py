"""Runs that meet on the same output: real processes started together, and a killed run.

Two runs with the same ``--out`` started at the same moment: exactly one publishes a complete,
consistent output; the other stops at once with exit 2 and one line naming the first run's
pid. A run killed by SIGKILL leaves its staging directory; the next run removes it.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from privopt._atomic import LOCK_SUFFIX, MARKER
from privopt.cli import main
from privopt.mdp import PerturbationMatrix
from privopt.report import format_number

from reliability.cli_runner import go, launch, wait_for


def mdp_case(folder: Path) -> tuple[list[str], Path, Callable[[dict, Path], None]]:
    src = folder / "points.csv"
    pts = np.random.default_rng(0).uniform(0, 3, (12, 2))
    src.write_text("x,y\n" + "\n".join(f"{a},{b}" for a, b in pts) + "\n")
    out = folder / "out"

    def check(summary: dict, out: Path) -> None:
        assert sorted(p.name for p in out.iterdir()) == [
            MARKER,
            "data.npz",
            "mdp_row.png",
            "perturbation_matrix.npz",
            "release.json",
            "report.md",
        ]
        pm = PerturbationMatrix.load(out / "perturbation_matrix.npz")
        assert pm.expected_loss == pytest.approx(summary["expected_loss"], rel=1e-12)
        assert pm.n_records == summary["records"] == 12

    return (
        [
            "mdp",
            "--epsilon",
            "1",
            str(src),
            "--epsilon",
            "1",
            "--eta",
            "1.5",
            "--out",
            str(out),
            "-q",
        ],
        out,
        check,
    )


def kanon_case(folder: Path) -> tuple[list[str], Path, Callable[[dict, Path], None]]:
    src = folder / "people.csv"
    src.write_text("age,zip\n30,1\n31,1\n40,2\n41,2\n35,1\n45,2\n")
    out = folder / "anonymized"

    def check(summary: dict, out: Path) -> None:
        rows = (out / "anonymized.csv").read_text().splitlines()
        assert rows[0] == "age,zip" and len(rows) == 7 == summary["rows"] + 1
        report = Path(summary["report"])
        assert report.parent == out
        # the same run's report (numbers as the reports print them)
        assert format_number(summary["objective"]) in report.read_text()

    return ["kanon", str(src), "--anonymity", "2", "--out", str(out), "-q"], out, check


def census_case(folder: Path) -> tuple[list[str], Path, Callable[[dict, Path], None]]:
    src = folder / "records.csv"
    src.write_text("state,county,hh\nGA,g1,A\nGA,g1,A\nGA,g2,B\nNY,n1,C\nNY,n1,D\n")
    out = folder / "out"

    def check(summary: dict, out: Path) -> None:
        assert sorted(p.name for p in out.iterdir()) == [
            MARKER,
            "census_counts_by_size.png",
            "data.npz",
            "release.json",
            "released_counts.csv",
            "report.md",
        ]
        assert summary["ok"] and Path(summary["counts"]).is_file()
        assert "Method **M_c^dp**" in (out / "report.md").read_text()

    argv = [
        "census",
        "--epsilon",
        "1",
        "--records",
        str(src),
        "--levels",
        "state,county",
        "--group",
        "hh",
    ]
    return [*argv, "--seed", "0", "--out", str(out), "-q"], out, check


CASES = {"mdp": mdp_case, "kanon": kanon_case, "census": census_case}


def visible(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("command", sorted(CASES))
def test_two_runs_started_together_one_publishes_the_other_is_refused(command, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    argv, out, check = CASES[command](work)
    before = visible(work)
    runs = [launch(tmp_path / "control", n, argv, "slow-publish", "0.5") for n in "ab"]
    go(tmp_path / "control", ["a", "b"])
    results = [run.communicate(timeout=300) for run in runs]
    codes = sorted(run.returncode for run in runs)
    assert codes == [0, 2], results
    won = 0 if runs[0].returncode == 0 else 1
    winner, loser = runs[won], runs[1 - won]
    (win_out, win_err), (lose_out, lose_err) = results[won], results[1 - won]
    assert lose_out == "" and "error" not in win_err
    # (a seeded census run warns first that its noise is reproducible: a line of its own)
    assert [line for line in lose_err.splitlines() if ": warning: --seed" not in line] == [
        f"privopt {command}: error: --out {str(out)!r} is being written by another privopt "
        f"run (pid {winner.pid}); wait for it to finish or choose another --out"
    ]
    assert loser.pid != winner.pid
    lines = win_out.splitlines()
    assert len(lines) == 1
    check(json.loads(lines[0]), out)
    report_dirs: list[str] = []  # kanon writes its table, report and release into one folder
    assert visible(work) == sorted([*before, out.name, *report_dirs])  # no lock, no staging


def test_with_force_the_earlier_output_is_replaced_once_and_whole(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    argv, out, check = mdp_case(work)
    assert main(argv) == 0
    (out / "stale.png").write_bytes(b"from the earlier run")
    runs = [
        launch(tmp_path / "control", n, [*argv, "--force"], "slow-publish", "0.5") for n in "ab"
    ]
    go(tmp_path / "control", ["a", "b"])
    results = [run.communicate(timeout=300) for run in runs]
    assert sorted(run.returncode for run in runs) == [0, 2], results
    summary = json.loads(next(o for o, _ in results if o))
    check(summary, out)  # complete, and not a mix: the old plot is gone
    assert visible(work) == ["out", "points.csv"]


def test_a_run_killed_while_writing_leaves_staging_that_the_next_run_removes(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    argv, out, _ = mdp_case(work)
    writing = tmp_path / "writing"
    run = launch(tmp_path / "control", "a", argv, "hang-in-report", str(writing))
    go(tmp_path / "control", ["a"])
    wait_for(writing)
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=60)
    left = [p.name for p in work.iterdir() if p.name.startswith(".")]
    staging = [n for n in left if n.startswith(f".out.tmp-{run.pid}-")]
    assert len(staging) == 1 and (work / staging[0] / "perturbation_matrix.npz").is_file()
    assert f".out{LOCK_SUFFIX}" in left  # the lock file stays; the kernel dropped the lock
    assert not out.exists()
    assert main(argv) == 0  # not blocked by the dead run's lock, and its staging is removed
    assert visible(work) == ["out", "points.csv"]
