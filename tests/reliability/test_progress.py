"""Progress bars: on stderr only, True / False / "auto", the CLI's scope and --quiet."""

from __future__ import annotations

import inspect
import io
import re

import numpy as np
import pytest
from privopt._progress import check_progress, progress_bar, progress_scope
from privopt.cli import main
from privopt.errors import InvalidInput


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_bar(progress, capsys, steps=3):
    for _ in progress_bar(progress, range(steps), desc="levels", unit="level"):
        pass
    return capsys.readouterr()


@pytest.mark.parametrize("bad", ["yes", 1, 0.5, "AUTO"])
def test_bad_progress_values_are_refused(bad):
    with pytest.raises(InvalidInput, match="progress must be True, False or 'auto'"):
        check_progress(bad)


def test_explicit_true_and_false(capsys):
    shown = run_bar(True, capsys)
    assert "levels" in shown.err and "3/3" in shown.err and shown.out == ""
    hidden = run_bar(False, capsys)
    assert hidden.err == "" and hidden.out == ""


def test_auto_follows_the_scope_then_the_terminal(capsys, monkeypatch):
    assert run_bar("auto", capsys).err == ""  # captured stderr is not a terminal
    with progress_scope(True):
        assert "levels" in run_bar("auto", capsys).err
        assert run_bar(False, capsys).err == ""  # an explicit choice wins over the scope
    tty = FakeTTY()
    monkeypatch.setattr("sys.stderr", tty)
    with progress_scope(False):  # --quiet silences even a terminal
        for _ in progress_bar("auto", range(2), desc="quiet"):
            pass
    assert "quiet" not in tty.getvalue()
    bar = progress_bar("auto", total=2, desc="tty")
    assert not bar.disable and bar.delay == pytest.approx(2.0)  # short calls stay silent
    bar.close()


def test_mdp_benders_default_agrees_with_its_docstring():
    from privopt.mdp.benders import solve_benders_block

    default = inspect.signature(solve_benders_block).parameters["progress"].default
    assert default == "auto"
    assert '"auto" (default' in inspect.getdoc(solve_benders_block)


@pytest.mark.parametrize(
    ("quiet", "shown"),
    [
        (["--progress", "on"], True),
        (["--quiet"], False),
        ([], False),
        (["--progress", "off"], False),
    ],
)
def test_cli_shows_benders_progress_unless_quiet(tmp_path, capsys, quiet, shown):
    pts = tmp_path / "p.csv"
    xy = np.random.default_rng(2).uniform(0, 4, (16, 2))
    pts.write_text("\n".join(f"{a},{b}" for a, b in xy) + "\n")
    argv = [
        "mdp",
        "--epsilon",
        "1",
        str(pts),
        "--method",
        "benders",
        "--subsets",
        "3",
        "--eta",
        "1.5",
    ]
    assert main([*argv, "--out", str(tmp_path / "o"), *quiet]) == 0
    captured = capsys.readouterr()
    assert ("Benders" in captured.err) == shown
    assert captured.out.count("\n") == 1  # the JSON summary only


def test_kanon_greedy_bar_and_slices_give_the_same_partition(capsys):
    import pandas as pd
    from privopt.kanon import build_problem, greedy_search

    rng = np.random.default_rng(5)
    df = pd.DataFrame(rng.integers(0, 40, size=(1003, 3)), columns=["a", "b", "c"])
    p = build_problem(df, 3)
    whole = greedy_search(p, progress=False)  # one compiled call
    assert capsys.readouterr().err == ""
    sliced = greedy_search(p, progress=True)  # 334 classes in slices of 4
    err = capsys.readouterr().err
    assert "Greedy" in err and "334/334" in err
    assert np.array_equal(whole, sliced)
    with pytest.raises(InvalidInput, match="progress must be True, False or 'auto'"):
        greedy_search(p, progress="yes")


@pytest.mark.parametrize(
    ("quiet", "shown"),
    [
        (["--progress", "on"], True),
        (["--quiet"], False),
        ([], False),
        (["--progress", "off"], False),
    ],
)
def test_cli_shows_kanon_greedy_progress_unless_quiet(tmp_path, capsys, quiet, shown):
    table = tmp_path / "t.csv"
    xy = np.random.default_rng(3).integers(0, 30, (40, 2))
    table.write_text("a,b\n" + "\n".join(f"{a},{b}" for a, b in xy) + "\n")
    argv = ["kanon", str(table), "--anonymity", "3", "--out", str(tmp_path / "o"), *quiet]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert ("Greedy" in captured.err) == shown
    assert captured.out.count("\n") == 1  # the JSON summary only


def test_cli_progress_auto_follows_the_terminal(monkeypatch):
    """``--progress auto`` (the default) shows bars on a terminal only, so a log file gets no
    carriage-return debris; ``--quiet`` and ``--progress on`` contradict each other."""
    import argparse

    from privopt.cli import _progress_wanted

    def args(**kw):
        return argparse.Namespace(**{"quiet": False, "progress": "auto", **kw})

    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert _progress_wanted(args()) is True
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    assert _progress_wanted(args()) is False
    assert _progress_wanted(args(progress="on")) is True
    with pytest.raises(InvalidInput, match="--quiet and --progress on"):
        _progress_wanted(args(quiet=True, progress="on"))


def test_row_generation_bar_moves_within_a_round(capsys, monkeypatch):
    """A round's LP can take minutes: the bar shows its simplex iterations while it solves,
    and the solve is the same with the bar on or off."""
    from privopt import _progress
    from privopt.mdp import MDPProblem, solve

    monkeypatch.setattr(_progress, "TEXT_REFRESH_S", 0.0)
    points = np.random.default_rng(3).uniform(0, 4, (40, 2))
    prob = MDPProblem(points, epsilon=2.0, eta=1.0)
    quiet = solve(prob, "lp", progress=False)
    assert capsys.readouterr().err == ""
    shown = solve(prob, "lp", progress=True)
    err = capsys.readouterr().err
    assert "LP iterations" in err
    assert shown.expected_loss == quiet.expected_loss
    np.testing.assert_array_equal(shown.matrix, quiet.matrix)


def test_benders_bar_moves_within_a_round(capsys, monkeypatch):
    """A Benders round solves every subproblem (a cold first round can take minutes): the bar
    counts them while they solve, the core round's too; while the master solves (the first
    one, with its lazy rows, can take longer than a round) it shows the master's LP
    iterations; and the run is the same with the bar on or off."""
    from privopt import _progress
    from privopt.mdp import MDPProblem, solve

    monkeypatch.setattr(_progress, "TEXT_REFRESH_S", 0.0)
    points = np.random.default_rng(4).uniform(0, 4, (30, 2))
    prob = MDPProblem(points, epsilon=2.0, eta=1.0)
    quiet = solve(prob, "benders", m=3, progress=False)
    assert capsys.readouterr().err == ""
    shown = solve(prob, "benders", m=3, progress=True)
    err = capsys.readouterr().err
    assert "round 1: subproblems 1/3" in err and "core round: subproblems 1/3" in err
    assert re.search(r"round 1: master, [\d,]+ rows: [\d,]+ LP iterations", err)
    np.testing.assert_array_equal(shown.matrix, quiet.matrix)
