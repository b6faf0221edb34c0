"""Minimal HiGHS access used by the mDP LP solvers.

The monolithic LP and its lazy row generation talk to ``highspy`` directly: row generation
appends rows to a live instance (``addRows``) and re-solves from the previous basis, and the ε
path passes a basis on (``setBasis``). Benders goes through :mod:`privopt.lp.benders`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import highspy
import numpy as np
import scipy.sparse as sp

from privopt.errors import InfeasibleModel, NumericalTrouble, SolverLimit, UnboundedModel
from privopt.lp.solve import run_with_fallbacks, set_threads

__all__ = ["LPSolution", "new_highs", "pass_lp", "run"]

_INF = highspy.kHighsInf


@dataclass
class LPSolution:
    x: np.ndarray
    objective: float
    row_duals: np.ndarray
    status: str
    solve_time: float
    iterations: int


def new_highs(
    *,
    method: str = "choose",
    threads: int | None = None,
    time_limit: float | None = None,
    presolve: bool = True,
    tol: float = 1e-9,
) -> highspy.Highs:
    """A silent HiGHS instance with tight tolerances (spec §7-8: coefficients reach e^20)."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue(
        "solver", {"simplex": "simplex", "ipm": "ipm", "pdlp": "pdlp", "choose": "choose"}[method]
    )
    h.setOptionValue("primal_feasibility_tolerance", tol)
    h.setOptionValue("dual_feasibility_tolerance", tol)
    if not presolve:
        h.setOptionValue("presolve", "off")
    set_threads(h, threads)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    return h


def pass_lp(
    h: highspy.Highs,
    c: np.ndarray,
    a: sp.sparray,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray | float = 0.0,
    col_upper: np.ndarray | float = _INF,
) -> None:
    """Load ``min cᵀx, row_lower ≤ A x ≤ row_upper, col bounds`` from CSC arrays."""
    a = sp.csc_array(a)
    n, m = a.shape[1], a.shape[0]
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = m
    lp.col_cost_ = np.asarray(c, dtype=np.float64)
    lp.col_lower_ = np.broadcast_to(np.asarray(col_lower, dtype=np.float64), (n,)).copy()
    lp.col_upper_ = np.broadcast_to(np.asarray(col_upper, dtype=np.float64), (n,)).copy()
    lp.row_lower_ = np.asarray(row_lower, dtype=np.float64)
    lp.row_upper_ = np.asarray(row_upper, dtype=np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = a.indptr.astype(np.int32)
    lp.a_matrix_.index_ = a.indices.astype(np.int32)
    lp.a_matrix_.value_ = a.data.astype(np.float64)
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = m
    h.passModel(lp)


def run(h: highspy.Highs, *, what: str = "LP") -> LPSolution:
    """Solve; raise the privopt error matching a non-optimal status."""
    start = time.perf_counter()
    # HiGHS's presolved dual simplex can abort on these badly scaled LPs (coefficients up to
    # e^{εη}; grid N = 500, ε = 2: "Solve error"): retried with the shared fallbacks.
    # Every mDP LP (and every restricted one of row generation) is feasible (the uniform Z)
    # and bounded (z in the simplex): "infeasible" or "unbounded" is a numerical failure.
    # HiGHS's presolve called a 2-record LP with coefficients e^23 "Unbounded"; without
    # presolve (the first fallback) it solves.
    ms = highspy.HighsModelStatus
    status, _ = run_with_fallbacks(h, accept=(ms.kOptimal, ms.kTimeLimit, ms.kIterationLimit))
    elapsed = time.perf_counter() - start
    text = h.modelStatusToString(status)
    if status == ms.kOptimal:
        sol = h.getSolution()
        info = h.getInfo()
        return LPSolution(
            np.asarray(sol.col_value),
            float(info.objective_function_value),
            np.asarray(sol.row_dual),
            text,
            elapsed,
            int(info.simplex_iteration_count) + int(info.ipm_iteration_count),
        )
    if status == ms.kInfeasible:
        raise InfeasibleModel(f"{what} is infeasible", status=text)
    if status in (ms.kUnbounded, ms.kUnboundedOrInfeasible):
        raise UnboundedModel(f"{what} is unbounded or infeasible", status=text)
    if status in (ms.kTimeLimit, ms.kIterationLimit):
        raise SolverLimit(f"{what}: solver stopped by a limit ({text})", status=text)
    raise NumericalTrouble(f"{what}: HiGHS returned {text}", status=text)
