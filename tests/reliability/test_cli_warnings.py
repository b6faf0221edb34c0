"""Warnings raised during a command reach stderr as one line each, ``privopt <command>:
warning: ...``, without the file and source line Python's default display adds (for a command
that line is the console script's ``sys.exit(main())``); ``--debug`` keeps the default display.
The suite turns warnings into errors; these tests show them as a user's Python does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from privopt.certify import UncertifiedResultWarning
from privopt.cli import main
from privopt.mdp import cli as mdp_cli


@pytest.fixture
def points(tmp_path):
    path = tmp_path / "points.csv"
    np.savetxt(path, np.random.default_rng(0).uniform(0, 3, (12, 2)), delimiter=",")
    return path


def _warning_solve(real_solve, category):
    def solve(*args, **kwargs):
        warnings.warn("the proven gap 0.01 is above the requested 1e-4", category, stacklevel=2)
        return real_solve(*args, **kwargs)

    return solve


@pytest.mark.filterwarnings("default")
@pytest.mark.parametrize(
    ("category", "shown"),
    [(UncertifiedResultWarning, "warning:"), (RuntimeWarning, "warning (RuntimeWarning):")],
)
def test_warnings_are_one_line_each(points, tmp_path, capsys, monkeypatch, category, shown):
    monkeypatch.setattr(mdp_cli, "solve", _warning_solve(mdp_cli.solve, category))
    argv = ["mdp", str(points), "--epsilon", "2", "--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    lines = [line for line in err if "proven gap 0.01" in line]
    assert lines == [f"privopt mdp: {shown} the proven gap 0.01 is above the requested 1e-4"]
    assert not any("warnings.warn" in line or ".py:" in line for line in err)


def test_debug_keeps_the_default_display(points, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(mdp_cli, "solve", _warning_solve(mdp_cli.solve, UncertifiedResultWarning))
    argv = ["mdp", str(points), "--epsilon", "2", "--out", str(tmp_path / "o"), "--quiet"]
    with pytest.warns(UncertifiedResultWarning, match="proven gap 0.01"):
        assert main([*argv, "--debug"]) == 0
    assert "privopt mdp: warning" not in capsys.readouterr().err
