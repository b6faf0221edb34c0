"""The MILP progress bar of :func:`privopt.lp.solve` (branch-and-bound nodes and bounds from
HiGHS's MIP callback): shown only for a MILP and only when asked, never changing the answer."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
from privopt.lp import LinearProgram, solve
from scipy.optimize import Bounds, LinearConstraint, milp


def knapsack(seed: int, n: int = 30, m: int = 3) -> tuple[LinearProgram, float]:
    """A 0-1 multi-knapsack that needs branching (tens to hundreds of nodes without presolve),
    and its optimum from scipy's MILP solver."""
    rng = np.random.default_rng(seed)
    w = rng.integers(5, 60, (m, n)).astype(float)
    v = w.sum(0) + rng.integers(0, 20, n)
    cap = w.sum(1) / 2
    lp = LinearProgram(n, objective=-v, lower=0, upper=1, integrality=np.ones(n, bool))
    lp.add_rows(sp.csr_array(w), upper=cap)
    ref = milp(
        -v,
        constraints=LinearConstraint(w, -np.inf, cap),
        integrality=np.ones(n),
        bounds=Bounds(0, 1),
    )
    return lp, float(ref.fun)


def nodes_shown(err: str) -> list[int]:
    return [int(k) for k in re.findall(r"MILP: (\d+)node", err)]


@pytest.mark.parametrize("seed", [0, 2])
def test_bar_counts_nodes_and_leaves_the_optimum_unchanged(seed, capsys) -> None:
    lp, optimum = knapsack(seed)
    shown = solve(lp, presolve=False, mip_rel_gap=0, progress=True)
    err = capsys.readouterr()
    assert err.out == ""  # results only on stdout
    counts = nodes_shown(err.err)
    assert counts == sorted(counts) and max(counts) > 0  # nodes from the callback, forward
    assert "gap=" in err.err
    silent = solve(lp, presolve=False, mip_rel_gap=0, progress=False)
    assert capsys.readouterr().err == ""
    assert shown.objective == pytest.approx(optimum, abs=1e-6)
    assert silent.objective == pytest.approx(optimum, abs=1e-6)


def test_no_bar_for_an_lp_or_auto_off_a_terminal(capsys) -> None:
    lp, _ = knapsack(0)
    relaxed = LinearProgram(lp.n_vars, objective=lp.objective, lower=0, upper=1)
    relaxed.add_rows(lp.to_csr().to_scipy(), lower=lp.row_lower, upper=lp.row_upper)
    solve(relaxed, progress=True)
    solve(lp, presolve=False, progress="auto")  # stderr is not a terminal under pytest
    assert capsys.readouterr().err == ""
