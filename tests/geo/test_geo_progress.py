"""LR-Geo follows the project's progress rule (privopt._progress): ``progress="auto"`` by
default, ``True`` shows the solver's bar on stderr, ``False`` none, stdout stays clean."""

from __future__ import annotations

import inspect

import pytest
from privopt.geo import GeoParams, TravelCosts, grid_geography, run_lrgeo, solve_clr, solve_uploads


@pytest.mark.parametrize("fn", [solve_clr, run_lrgeo, solve_uploads])
def test_progress_defaults_to_auto(fn) -> None:
    assert inspect.signature(fn).parameters["progress"].default == "auto"


@pytest.mark.parametrize("method, label", [("benders", "Benders"), ("rowgen", "row generation")])
def test_progress_true_shows_the_solver_bar_and_false_none(capsys, method, label) -> None:
    geo = grid_geography(4, 4)
    p = GeoParams(epsilon=1.0, gamma=1.0, lr_radius=2.0, r_exp=1.0, r_obf=2.0, lr_max_size=6)
    run_lrgeo(geo, p, [0, 9], TravelCosts(geo), method=method, rng=0, progress=True)
    shown = capsys.readouterr()
    assert label in shown.err and shown.out == ""
    run_lrgeo(geo, p, [0, 9], TravelCosts(geo), method=method, rng=0, progress=False)
    hidden = capsys.readouterr()
    assert hidden.err == "" and hidden.out == ""
