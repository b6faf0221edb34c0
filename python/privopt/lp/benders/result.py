"""The outcome of a Benders run: the incumbent, certified bounds and the per-iteration history."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privopt import _optional
from privopt.report import axes_or_new

__all__ = ["BendersIteration", "BendersResult"]

_INF = math.inf


# =========================================================================== results


@dataclass
class BendersIteration:
    """One Benders iteration (all times in seconds of wall clock)."""

    iteration: int
    lb: float  # master optimum (-inf while some theta is still unbounded)
    ub: float  # best upper bound so far (inf before a fully feasible master point)
    iterate_ub: float  # c^T x + sum phi_k at this iteration's master point (inf if infeasible)
    gap: float  # (ub - lb) / max(1, |ub|)
    n_cuts: int
    n_optimality_cuts: int
    n_feasibility_cuts: int
    master_time: float
    sub_time: float  # wall time of the whole (possibly parallel) subproblem round
    sub_time_sum: float = 0.0  # sum of the individual subproblem solve times
    n_cold_starts: int = 0  # subproblem instances built in a worker during this iteration


@dataclass
class BendersResult:
    """Outcome of :func:`solve_benders`: the incumbent (best feasible point) and the bounds.

    Attributes
    ----------
    x_master : master variables of the incumbent, shape (n_master,).
    objective : objective of the incumbent (= upper_bound).
    lower_bound : certified lower bound on the optimum: the best safe dual bound of any
        master LP of the run (Neumaier–Shcherbina, independent of HiGHS's tolerances and of
        its optimality claim; the MIP dual bound for an integer master). ``-inf`` while some
        ``theta_k`` has no bound.
    upper_bound : objective of the incumbent.
    gap : proven relative gap ``(upper_bound − lower_bound) / max(gap_floor, |upper_bound|)``.
    solver_lower_bound : HiGHS's value of the last master LP. Not a certificate: a warm
        re-solve can report more than the master's optimum; it only decides when to try to
        certify.
    certified_lower_bound : the same as ``lower_bound`` (kept for callers of earlier versions).
    status : ``"optimal"`` (``lower_bound`` proves ``rel_gap`` or ``abs_gap``),
        ``"iteration_limit"``, ``"time_limit"`` or ``"gap_not_closed"`` (no violated cut left,
        or HiGHS's value closed the gap, yet the certified bound does not prove it even from a
        master re-solved from scratch: numerical tolerance reached).
    iterations : number of master solves.
    history : list of :class:`BendersIteration`.
    sub_solutions : subproblem solutions ``y_k`` of the incumbent (list of arrays).
    solve_time : total seconds.
    """

    x_master: np.ndarray
    objective: float
    lower_bound: float
    upper_bound: float
    gap: float
    status: str
    iterations: int
    history: list[BendersIteration]
    sub_solutions: list[np.ndarray] | None
    solve_time: float
    n_cuts: int = 0
    executor_mode: str = "serial"
    n_lazy_rows: int = 0
    solver_lower_bound: float = -math.inf
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def certified_lower_bound(self) -> float:
        """The certified lower bound (alias of ``lower_bound``, which is always certified here)."""
        return self.lower_bound

    @property
    def converged(self) -> bool:
        """True when the certified bound proves the requested gap (status ``"optimal"``)."""
        return self.status == "optimal"

    def history_arrays(self) -> dict[str, np.ndarray]:
        """The history as a dict of equal-length arrays (column name -> values)."""
        names = list(BendersIteration.__dataclass_fields__)
        return {n: np.array([getattr(r, n) for r in self.history]) for n in names}

    def plot_bounds(self, ax: Any = None) -> Any:
        """Plot LB and best UB per iteration (finite values only); returns the axes."""
        ax = axes_or_new(ax, figsize=(6, 3.5))
        h = self.history_arrays()
        it = h["iteration"]
        lb, ub = h["lb"], h["ub"]
        ok_lb, ok_ub = np.isfinite(lb), np.isfinite(ub)
        ax.plot(it[ok_lb], lb[ok_lb], "o-", ms=3, label="lower bound (master)")
        ax.plot(it[ok_ub], ub[ok_ub], "s-", ms=3, label="upper bound (best feasible)")
        ax.xaxis.set_major_locator(_optional.matplotlib().ticker.MaxNLocator(integer=True))
        ax.set_xlabel("iteration")
        ax.set_ylabel("objective")
        ax.set_title("Benders bounds")
        ax.legend()
        ax.grid(alpha=0.3)
        return ax
