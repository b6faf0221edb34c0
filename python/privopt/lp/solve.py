"""Solving a :class:`~privopt.lp.model.LinearProgram` with HiGHS and mapping outcomes to errors.

:func:`solve` returns an :class:`LPResult` (primal values, row duals, reduced costs) or raises:

* :class:`~privopt.errors.InfeasibleModel` — with ``farkas_ray`` for an LP: a row vector ``y``
  that *proves* infeasibility, checked by :func:`farkas_margin` before it is attached;
* :class:`~privopt.errors.UnboundedModel` — with ``primal_ray`` when HiGHS gives one;
* :class:`~privopt.errors.SolverLimit` — time/iteration/node limits, ``best`` = best feasible
  :class:`LPResult` or ``None``;
* :class:`~privopt.errors.NumericalTrouble` — solve/postsolve errors, unknown status.

Sign conventions (HiGHS, minimisation): a row dual is ≥ 0 when the row sits at its lower bound
and ≤ 0 at its upper bound; reduced costs ``d = c - A^T y`` follow the same rule for column
bounds. The Farkas ray uses the same orientation: ``y`` such that
``min_{r in [row_lower, row_upper]} y^T r  >  max_{x in [lower, upper]} (A^T y)^T x``,
which no ``x`` with ``A x = r`` can satisfy.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt._progress import AUTO_DELAY_S, gap_postfix, progress_bar
from privopt._validation import check_bool, numeric_array, real_array
from privopt.errors import (
    InfeasibleModel,
    InvalidInput,
    NumericalTrouble,
    SolverLimit,
    UnboundedModel,
)
from privopt.lp import highs
from privopt.lp.model import LinearProgram

__all__ = ["LPResult", "solve", "farkas_margin"]


@dataclass
class LPResult:
    """Outcome of :func:`solve`.

    Attributes
    ----------
    x : primal values, shape (n_vars,).
    objective : objective value c^T x + offset (in the model's sense).
    row_duals : row duals y, shape (n_rows,) (NaN for a MILP: no duals).
    col_duals : reduced costs c - A^T y, shape (n_vars,) (NaN for a MILP).
    row_activity : A x, shape (n_rows,).
    status : HiGHS model status text ("Optimal", "Time limit reached", ...).
    solve_time : wall-clock seconds of the HiGHS run(s).
    iterations : simplex + IPM + PDLP iterations, as HiGHS counts them.
    mip_gap : relative MIP gap (MILP; NaN for an LP).
    mip_dual_bound : MIP dual bound (MILP; NaN for an LP).
    """

    x: np.ndarray
    objective: float
    row_duals: np.ndarray
    col_duals: np.ndarray
    row_activity: np.ndarray
    status: str
    solve_time: float
    iterations: int
    mip_gap: float = math.nan
    mip_dual_bound: float = math.nan
    info: dict[str, Any] = field(default_factory=dict, repr=False)


# --------------------------------------------------------------------------- certificates


def farkas_margin(
    A: Any,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
    y: np.ndarray,
) -> float:
    """How strongly ``y`` certifies infeasibility of ``row_lower <= A x <= row_upper``,
    ``col_lower <= x <= col_upper``.

    Returns ``min_r y^T r - max_x (A^T y)^T x`` over the row and column boxes, for ``y`` scaled
    to ``max |y_i| = 1``; a value > 0 proves that no feasible ``x`` exists (``y^T A x`` would have
    to be both). Entries ``|y_i| <= 1e-12`` and ``|(A^T y)_j| <= 1e-9 * max|A|`` count as zero
    (floating-point dust on an infinite bound would otherwise give ±inf). ``-inf`` when ``y`` is
    not a certificate in this orientation.
    """
    A = sp.csc_array(A if sp.issparse(A) else real_array("A", A))
    numeric_array("A", A.data)
    m, n = A.shape
    y = real_array("y", y)
    if y.shape != (m,):
        raise InvalidInput(f"y must have shape ({m},), got {y.shape}")
    bounds = []
    for name, arr, size in (
        ("row_lower", row_lower, m),
        ("row_upper", row_upper, m),
        ("col_lower", col_lower, n),
        ("col_upper", col_upper, n),
    ):
        vec = real_array(name, arr)
        if vec.shape != (size,):
            raise InvalidInput(f"{name} must have shape ({size},), got {vec.shape}")
        bounds.append(vec)
    row_lower, row_upper, col_lower, col_upper = bounds
    scale = np.abs(y).max(initial=0.0)
    if not scale > 0 or not np.isfinite(scale):
        return -math.inf
    y = y / scale
    y = np.where(np.abs(y) <= 1e-12, 0.0, y)
    z = A.T @ y
    amax = np.abs(A.data).max(initial=1.0)
    z = np.where(np.abs(z) <= 1e-9 * amax, 0.0, z)
    with np.errstate(invalid="ignore"):
        row_min = np.where(y > 0, y * row_lower, np.where(y < 0, y * row_upper, 0.0))
        col_max = np.where(z > 0, z * col_upper, np.where(z < 0, z * col_lower, 0.0))
    return float(row_min.sum() - col_max.sum())


def _certificate_tolerance(A: Any, row_lower, row_upper, col_lower, col_upper) -> float:
    finite = [
        np.abs(v[np.isfinite(v)]).max(initial=0.0)
        for v in (row_lower, row_upper, col_lower, col_upper)
    ]
    return 1e-9 * (1.0 + max(finite))


def orient_farkas(
    A: Any, row_lower, row_upper, col_lower, col_upper, y: np.ndarray
) -> np.ndarray | None:
    """Return ``y`` or ``-y``, whichever is a verified certificate (see :func:`farkas_margin`),
    else ``None``."""
    tol = _certificate_tolerance(A, row_lower, row_upper, col_lower, col_upper)
    for cand in (np.asarray(y, dtype=np.float64), -np.asarray(y, dtype=np.float64)):
        if farkas_margin(A, row_lower, row_upper, col_lower, col_upper, cand) > tol:
            return cand
    return None


def phase1_farkas_ray(A: Any, row_lower, row_upper, col_lower, col_upper) -> np.ndarray | None:
    """A Farkas ray from the elastic (phase-1) LP ``min 1^T (s+ + s-)`` s.t.
    ``row_lower <= A x + s+ - s- <= row_upper``: its optimum is > 0 iff the system is infeasible
    and its row duals are then a certificate (spec 000 §3.2, the robust route). ``None`` when
    the system is feasible."""
    A = sp.csc_array(A)
    m, n = A.shape
    lp = LinearProgram(n, lower=col_lower, upper=col_upper)
    lp.add_variables(2 * m, objective=1.0)
    eye = sp.identity(m, format="csc")
    lp.add_rows(sp.hstack([A, eye, -eye], format="csc"), lower=row_lower, upper=row_upper)
    model = lp.to_model()
    model.configure(method="simplex", presolve=False)
    if model.run() != highs.ModelStatus.kOptimal:
        return None
    y = model.solution().row_duals
    return orient_farkas(A, row_lower, row_upper, col_lower, col_upper, y)


def dual_ray_of(
    model: highs.Model,
    A: Any,
    row_lower,
    row_upper,
    col_lower,
    col_upper,
    *,
    phase1: bool = True,
) -> np.ndarray | None:
    """The verified Farkas ray of an infeasible model just solved (HiGHS's dual ray), or from
    the phase-1 LP when HiGHS has no ray or it fails verification (``phase1=False``: no
    fallback, for callers that keep their own elastic model)."""
    ray = model.dual_ray()
    if ray is not None:
        oriented = orient_farkas(A, row_lower, row_upper, col_lower, col_upper, ray)
        if oriented is not None:
            return oriented
    return phase1_farkas_ray(A, row_lower, row_upper, col_lower, col_upper) if phase1 else None


# --------------------------------------------------------------------------- results


def _extract(sol: highs.LPSolution, lp: LinearProgram, elapsed: float) -> LPResult:
    x = sol.x
    if x.size != lp.n_vars:
        x = np.full(lp.n_vars, np.nan)
    act = sol.row_activity
    if act.size != lp.n_rows:
        act = np.full(lp.n_rows, np.nan)
    if sol.dual_valid and not lp.is_mip:
        yd, dd = sol.row_duals, sol.col_duals
    else:
        yd = np.full(lp.n_rows, np.nan)
        dd = np.full(lp.n_vars, np.nan)
    return LPResult(
        x=x,
        objective=sol.objective,
        row_duals=yd,
        col_duals=dd,
        row_activity=act,
        status=sol.status,
        solve_time=elapsed,
        iterations=sol.iterations,
        mip_gap=sol.mip_gap if lp.is_mip else math.nan,
        mip_dual_bound=sol.mip_dual_bound if lp.is_mip else math.nan,
        info={
            "primal_solution_status": sol.primal_solution_status,
            "dual_solution_status": sol.dual_solution_status,
            "mip_node_count": sol.mip_node_count,
        },
    )


def _rerun_plain_simplex(model: highs.Model) -> None:
    """Re-solve with presolve off and (dual) simplex: the only mode that yields rays."""
    model.set_option("presolve", "off")
    model.set_option("solver", "simplex")
    model.cold()
    model.run()


def _raise_infeasible(
    model: highs.Model, lp: LinearProgram, status: str, method: str, presolve: bool
) -> None:
    ray = None
    if not lp.is_mip:
        if presolve or method != "simplex":
            _rerun_plain_simplex(model)
        if model.status == highs.ModelStatus.kInfeasible:
            ray = dual_ray_of(
                model, lp.matrix(), lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper
            )
        else:
            ray = phase1_farkas_ray(
                lp.matrix(), lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper
            )
    raise InfeasibleModel(
        f"{'MILP' if lp.is_mip else 'LP'} with {lp.n_vars} variables and {lp.n_rows} rows is "
        f"infeasible{'' if ray is not None or lp.is_mip else ' (no certificate obtained)'}",
        status=status,
        farkas_ray=ray,
    )


def _raise_unbounded(model: highs.Model, lp: LinearProgram, status: str) -> None:
    raise UnboundedModel(
        f"the objective of the {lp.n_vars}-variable model is unbounded",
        status=status,
        primal_ray=model.primal_ray(),
    )


def _resolve_ambiguous(model: highs.Model, lp: LinearProgram) -> None:
    """HiGHS said "unbounded or infeasible": decide by a presolve-free simplex run, then if
    needed by a zero-objective feasibility solve."""
    S = highs.ModelStatus
    _rerun_plain_simplex(model)
    st = model.status
    if st == S.kInfeasible:
        _raise_infeasible(model, lp, model.status_text, "simplex", False)
    if st == S.kUnbounded:
        _raise_unbounded(model, lp, model.status_text)
    feas = lp.with_objective(np.zeros(lp.n_vars))
    feasibility = feas.to_model()
    feasibility.configure(method="simplex", presolve=False)
    if feasibility.run() == S.kOptimal:
        raise UnboundedModel(
            "the objective is unbounded (a feasible point exists and HiGHS "
            "reported unbounded-or-infeasible)",
            status=model.status_text,
        )
    _raise_infeasible(feasibility, feas, feasibility.status_text, "simplex", False)


def classify(
    model: highs.Model, lp: LinearProgram, elapsed: float, *, method: str, presolve: bool
) -> LPResult:
    """Turn the state of ``model`` after a run into an :class:`LPResult` or raise the matching
    :mod:`privopt.errors` exception."""
    S = highs.ModelStatus
    st = model.status
    text = model.status_text
    if st == S.kOptimal:
        return _extract(model.solution(elapsed), lp, elapsed)
    if st == S.kModelEmpty:
        # No columns: optimal iff every (empty) row admits activity 0.
        lo, up = lp.row_lower, lp.row_upper
        if np.any(lo > 0) or np.any(up < 0):
            raise InfeasibleModel("model without variables has a row excluding 0", status=text)
        return LPResult(
            np.zeros(0),
            lp.offset,
            np.zeros(lp.n_rows),
            np.zeros(0),
            np.zeros(lp.n_rows),
            text,
            elapsed,
            0,
        )
    if st == S.kInfeasible:
        _raise_infeasible(model, lp, text, method, presolve)
    if st == S.kUnbounded:
        _raise_unbounded(model, lp, text)
    if st == S.kUnboundedOrInfeasible:
        if lp.is_mip:
            raise InfeasibleModel(
                "MILP is infeasible or unbounded (HiGHS could not tell)", status=text
            )
        _resolve_ambiguous(model, lp)
    if st in (
        S.kTimeLimit,
        S.kIterationLimit,
        S.kSolutionLimit,
        S.kObjectiveBound,
        S.kObjectiveTarget,
        S.kInterrupt,
        S.kMemoryLimit,
        S.kHighsInterrupt,  # type: ignore[attr-defined]  # present, absent from the stubs
    ):
        sol = model.solution(elapsed)
        best = _extract(sol, lp, elapsed) if sol.primal_feasible else None
        raise SolverLimit(f"HiGHS stopped early: {text}", status=text, best=best)
    if st in (S.kModelError, S.kLoadError):
        raise InvalidInput(f"HiGHS rejected the model: {text}")
    raise NumericalTrouble(f"HiGHS could not solve the model reliably: {text}", status=text)


# --------------------------------------------------------------------------- entry point


def solve(
    lp: LinearProgram,
    *,
    method: str = "simplex",
    time_limit: float | None = None,
    iteration_limit: int | None = None,
    threads: int | None = None,
    presolve: bool = True,
    mip_rel_gap: float | None = None,
    mip_start: Any = None,
    verbose: bool = False,
    progress: Any = "auto",
    highs_options: Any = None,
    fallbacks: bool = False,
) -> LPResult:
    """Solve an LP or MILP with HiGHS.

    Parameters
    ----------
    lp : the model.
    method : ``"simplex"`` (dual simplex; the default because it gives exact bases, duals and
        rays), ``"ipm"`` (interior point + crossover), ``"pdlp"`` (first-order, for very large
        LPs; lower accuracy) or ``"choose"`` (HiGHS decides). For a MILP it picks the LP solver
        used inside branch and bound.
    time_limit : seconds of wall-clock time; ``None`` for no limit.
    iteration_limit : cap on simplex/IPM/PDLP iterations.
    threads : HiGHS threads (HiGHS sizes its scheduler at its first use in a process).
    presolve : run HiGHS presolve. On infeasibility the model is re-solved without presolve
        (and with simplex) to obtain a Farkas ray (HiGHS issue #1956: no ray after presolve).
    mip_rel_gap : relative MIP gap at which branch and bound stops (HiGHS default 1e-4).
    mip_start : a feasible (or partial) assignment, shape (n_vars,), handed to HiGHS as a
        starting incumbent.
    verbose : show the HiGHS log.
    progress : MILP only: a bar of branch-and-bound nodes with the bounds and gap on stderr
        (``True`` / ``False`` / ``"auto"``, see :mod:`privopt._progress`); an ``"auto"`` bar
        appears after :data:`privopt._progress.AUTO_DELAY_S` seconds, so short solves show none.
    highs_options : further HiGHS options (a dict or pairs), set before the model is passed
        (``small_matrix_value`` acts only then), e.g. tighter feasibility tolerances.
    fallbacks : retry a run that ends without a verdict ("Solve error", "Unknown") from
        scratch with :data:`privopt.lp.highs.FALLBACK_OPTIONS` (presolve off, primal simplex,
        another scaling, IPM) before giving up.

    Returns
    -------
    LPResult

    Raises
    ------
    InvalidInput, InfeasibleModel, UnboundedModel, SolverLimit, NumericalTrouble
    """
    fallbacks = check_bool("fallbacks", fallbacks)
    if not isinstance(lp, LinearProgram):
        raise InvalidInput(f"lp must be a LinearProgram, got {type(lp).__name__}")
    if mip_start is not None:
        start = np.asarray(mip_start, dtype=np.float64)
        if start.shape != (lp.n_vars,) or not np.isfinite(start).all():
            raise InvalidInput(
                f"mip_start must be a finite array of shape ({lp.n_vars},), got shape {start.shape}"
            )
    model = lp.to_model(verbose=verbose, options=highs_options or ())
    model.configure(
        method=method,
        time_limit=time_limit,
        iteration_limit=iteration_limit,
        threads=threads,
        presolve=presolve,
        mip_rel_gap=mip_rel_gap,
        verbose=verbose,
    )
    if mip_start is not None:
        model.set_start(start)
    t0 = time.perf_counter()
    with _node_bar(model, progress if lp.is_mip else False):
        if fallbacks:
            model.run_with_fallbacks()
        else:
            model.run()
    elapsed = time.perf_counter() - t0
    return classify(model, lp, elapsed, method=method, presolve=presolve)


@contextlib.contextmanager
def _node_bar(model: highs.Model, progress: Any) -> Iterator[None]:
    """While open, branch and bound advances a bar by its nodes and shows the dual and primal
    bounds; nothing is subscribed when the bar is off."""
    wait = AUTO_DELAY_S if progress in (None, "auto") else 0.0
    with progress_bar(progress, desc="MILP", unit="node", min_delay=wait) as bar:
        if bar.disable:
            yield
            return

        def show(nodes: int, dual_bound: float, primal_bound: float) -> None:
            if nodes > bar.n:
                bar.set_postfix_str(gap_postfix(dual_bound, primal_bound), refresh=False)
                bar.update(nodes - bar.n)

        with model.mip_progress(show):
            yield
