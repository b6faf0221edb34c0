"""A run that may end without a proof says so on stderr before it starts.

``privopt mdp`` with ``--time-limit`` (or on an LP large enough to take minutes) prints one
``note:`` line before the solve begins; a small exact run prints none, and stdout stays the
JSON summary alone.
"""

from __future__ import annotations

import json

import numpy as np
from privopt.cli import main
from privopt.mdp import cli as mdp_cli


def _points(tmp_path, n: int):
    path = tmp_path / "pts.csv"
    np.savetxt(path, np.random.default_rng(0).uniform(0, 3, (n, 2)), delimiter=",")
    return path


def test_mdp_time_limit_is_announced_before_the_solve(tmp_path, capsys) -> None:
    argv = ["mdp", str(_points(tmp_path, 8)), "--epsilon", "1", "--time-limit", "30", "-q"]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 0
    captured = capsys.readouterr()
    assert "note: this run stops after 30 s" in captured.err
    assert json.loads(captured.out)["status"] == "optimal"


def test_a_small_exact_mdp_run_needs_no_note(tmp_path, capsys) -> None:
    argv = ["mdp", str(_points(tmp_path, 8)), "--epsilon", "1", "-q", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    assert "note:" not in capsys.readouterr().err


def test_a_large_mdp_lp_is_announced(tmp_path, capsys, monkeypatch) -> None:
    # the threshold is lowered so that the check stays a second long
    monkeypatch.setattr(mdp_cli, "QUICK_LP_CELLS", 10)
    argv = ["mdp", str(_points(tmp_path, 6)), "--epsilon", "1", "-q", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    assert "6 records x 6 outputs is a large LP" in capsys.readouterr().err
