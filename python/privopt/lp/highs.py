"""The one HiGHS layer: the only privopt module that imports ``highspy``.

Everything that talks to HiGHS goes through here:

* the HiGHS types privopt uses (:data:`Highs`, :data:`ModelStatus`, :data:`BasisStatus`, ...)
  and :data:`INF`;
* options: :func:`configure` (method, limits, threads, presolve, MIP gap, silence),
  :func:`set_threads` (the process-wide scheduler), :func:`set_options` (validated pairs);
* :func:`run`, every privopt ``Highs.run()``: inside :func:`privopt.lp.interrupts.interruptible`
  a SIGINT / SIGTERM stops a long run at once (interrupt callbacks) and ``-v`` turns the log on;
* a solve with fallbacks, :func:`run_with_fallbacks` (presolve off, primal simplex,
  another scaling, IPM), and :func:`solve_checked`, which maps the model status to a
  :mod:`privopt.errors` exception;
* :class:`Model`, a handle on a live instance that adds rows and columns incrementally,
  saves and restores a basis (extended to new rows and columns) and can be re-solved cold;
* the safe dual bound, :func:`safe_dual_bound` (Neumaier & Shcherbina, 2004).

The Farkas-ray checks and the error mapping with certificates of
:func:`privopt.lp.solve.solve` build on these pieces.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import highspy as _hs
import highspy.highs as _hs_module
import numpy as np
import scipy.sparse as sp

from privopt._validation import check_bool, check_int, check_nonnegative, check_positive
from privopt.errors import (
    InfeasibleModel,
    InvalidInput,
    NumericalTrouble,
    SolverLimit,
    UnboundedModel,
)
from privopt.lp import interrupts

__all__ = [
    "INF",
    "Highs",
    "HighsLp",
    "ModelStatus",
    "BasisStatus",
    "MatrixFormat",
    "ObjSense",
    "HighsStatus",
    "VarType",
    "METHODS",
    "FALLBACK_OPTIONS",
    "LPSolution",
    "Model",
    "configure",
    "new_highs",
    "set_option",
    "set_options",
    "set_threads",
    "run",
    "run_with_fallbacks",
    "solve_checked",
    "safe_dual_bound",
    "SimplexGroups",
    "pass_arrays",
]

# highspy's constructor calls into HiGHS with logging on, so the first solver of a process
# prints HiGHS's banner on stdout (ERGO-Code/HiGHS#1702, #2749), which a library must not do.
# Highs below runs the same set-up with output_flag off first where highspy's layout is the
# known one (the core class, its callbacks); elsewhere it falls back to highspy's constructor.
_QUIET_CONSTRUCTION = all(hasattr(_hs_module, n) for n in ("_Highs", "HighsCallback", "cb"))


class Highs(_hs.Highs):
    """highspy's ``Highs``, created silent (logging is switched on by :func:`configure`'s
    ``verbose``); everything else is highspy's."""

    def __init__(self) -> None:
        if not _QUIET_CONSTRUCTION:  # pragma: no cover - another highspy layout
            super().__init__()
            return
        _hs_module._Highs.__init__(self)
        self.setOptionValue("output_flag", False)
        kinds = range(int(_hs_module.cb.HighsCallbackType.kCallbackMax) + 1)
        self.callbacks = [
            _hs_module.HighsCallback(_hs_module.cb.HighsCallbackType(t), self) for t in kinds
        ]
        self.enableCallbacks()


#: The HiGHS types privopt uses, re-exported so that no other module imports highspy.
HighsLp = _hs.HighsLp
HighsModel = _hs.HighsModel
HighsHessian = _hs.HighsHessian
HessianFormat = _hs.HessianFormat
ModelStatus = _hs.HighsModelStatus
BasisStatus = _hs.HighsBasisStatus
MatrixFormat = _hs.MatrixFormat
ObjSense = _hs.ObjSense
HighsStatus = _hs.HighsStatus
VarType = _hs.HighsVarType
INF = float(_hs.kHighsInf)

METHODS = ("simplex", "ipm", "pdlp", "choose")


# HiGHS runs on one process-wide task scheduler, sized by the first run. Since HiGHS 1.16 a run
# whose "threads" option differs from that size fails ("Not Set" model status) until the
# scheduler is reset, so privopt remembers the size it asked for and resets on a change.
_SCHEDULER_LOCK = threading.Lock()
_scheduler_threads: int | None = None  # None: sized by HiGHS's default (or not yet started)


def set_threads(h: Any, threads: int | None) -> None:
    """Set HiGHS's ``threads`` option on ``h``, resizing the process-wide scheduler if needed.

    ``None`` leaves the option at HiGHS's default, which runs on whatever scheduler exists.
    A count different from the one last requested resets the scheduler; do not change the count
    while other threads of the process are inside a HiGHS run.
    """
    global _scheduler_threads  # noqa: PLW0603 - HiGHS's scheduler is process-wide too
    if threads is None:
        return
    threads = check_int("threads", threads, minimum=1)
    with _SCHEDULER_LOCK:
        if _scheduler_threads != threads:
            _hs.Highs.resetGlobalScheduler(True)
            _scheduler_threads = threads
    set_option(h, "threads", threads)


def set_option(h: Any, name: str, value: Any) -> None:
    """Set one HiGHS option; a value HiGHS rejects raises :class:`InvalidInput`."""
    if h.setOptionValue(name, value) == _hs.HighsStatus.kError:
        raise InvalidInput(f"HiGHS rejected option {name}={value!r}")


def configure(
    h: Any,
    *,
    method: str = "simplex",
    time_limit: float | None = None,
    iteration_limit: int | None = None,
    threads: int | None = None,
    presolve: bool = True,
    mip_rel_gap: float | None = None,
    verbose: bool = False,
) -> None:
    """Validate the :func:`solve` options and set them on a ``_hs.Highs``."""
    if method not in METHODS:
        raise InvalidInput(f"method must be one of {METHODS}, got {method!r}")
    set_option(h, "output_flag", check_bool("verbose", verbose))
    set_option(h, "solver", method)
    set_option(h, "presolve", "on" if check_bool("presolve", presolve) else "off")
    if time_limit is not None:
        set_option(h, "time_limit", check_positive("time_limit", time_limit, allow_inf=True))
    if iteration_limit is not None:
        it = check_int("iteration_limit", iteration_limit, minimum=0)
        for opt in ("simplex_iteration_limit", "ipm_iteration_limit", "pdlp_iteration_limit"):
            set_option(h, opt, it)
    set_threads(h, threads)
    if mip_rel_gap is not None:
        set_option(h, "mip_rel_gap", check_nonnegative("mip_rel_gap", mip_rel_gap))


class SimplexGroups:
    """Columns grouped into simplices ``Σ_{j ∈ g} x_j = rhs_g, x ≥ 0`` (each column in at most
    one group), kept as constraints by :func:`safe_dual_bound`: over a simplex,
    ``min dᵀx = rhs_g · min_{j ∈ g} d_j``, which needs no column upper bound and is at least
    the bound from any multiplier of the group's row (whose dual infeasibilities would add up
    over every column of the group).

    Parameters
    ----------
    group : (n,) int, the group of each column, −1 for none.
    rhs : (n_groups,) right-hand sides ≥ 0.

    Examples
    --------
    >>> g = SimplexGroups([0, 0, 1, -1], [1.0, 2.0])
    >>> g.minimum(np.array([3.0, -1.0, 0.5, 7.0])).tolist()
    [-1.0, 0.5]
    >>> SimplexGroups.blocks(2, 3).minimum(np.arange(6.0)).tolist()   # rows of a 2 × 3 matrix
    [0.0, 3.0]
    """

    def __init__(self, group: Any, rhs: Any) -> None:
        self.group = np.asarray(group, dtype=np.int64)
        self.rhs = np.asarray(rhs, dtype=np.float64)
        self.n_cols = self.group.size
        self._run: tuple[int, int] | None = None  # (offset, size) of consecutive equal groups
        if self.group.ndim != 1 or self.rhs.ndim != 1:
            raise InvalidInput("simplex groups: group and rhs must be 1-D")
        n_groups = self.rhs.size
        if self.group.size and (self.group.min() < -1 or self.group.max() >= n_groups):
            raise InvalidInput(f"simplex groups: group ids must lie in [-1, {n_groups})")
        _check_rhs(self.rhs)
        counts = np.bincount(self.group[self.group >= 0], minlength=n_groups)
        if (counts == 0).any():
            raise InvalidInput(f"simplex groups: group {int(np.argmin(counts))} has no column")
        # Members sorted by group, so that one reduceat takes every group's minimum.
        self._order = np.argsort(self.group, kind="stable")[self.n_cols - int(counts.sum()) :]
        self._starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)

    @classmethod
    def blocks(
        cls, n_groups: int, size: int, rhs: Any = 1.0, *, offset: int = 0, n_cols: int | None = None
    ) -> SimplexGroups:
        """``n_groups`` consecutive groups of ``size`` columns from column ``offset`` on, among
        ``n_cols`` (default: just them): the rows of a row-major (n, K) matrix whose rows are
        distributions. Held without per-column arrays."""
        if not (n_groups >= 0 and size >= 1 and offset >= 0):
            raise InvalidInput("simplex groups: n_groups >= 0, size >= 1 and offset >= 0")
        self = cls.__new__(cls)
        self.rhs = np.broadcast_to(np.asarray(rhs, dtype=np.float64), (n_groups,)).copy()
        _check_rhs(self.rhs)
        self.n_cols = offset + n_groups * size if n_cols is None else int(n_cols)
        if self.n_cols < offset + n_groups * size:
            raise InvalidInput("simplex groups: n_cols is smaller than the groups' columns")
        self._run = (int(offset), int(size))
        return self

    def shifted(self, offset: int, n_cols: int) -> SimplexGroups:
        """The same groups with their columns moved ``offset`` further, among ``n_cols``."""
        if self._run is not None:
            start, size = self._run
            return SimplexGroups.blocks(
                self.rhs.size, size, self.rhs, offset=start + offset, n_cols=n_cols
            )
        group = np.full(n_cols, -1, dtype=np.int64)
        group[offset : offset + self.n_cols] = self.group
        return SimplexGroups(group, self.rhs)

    def _span(self) -> slice:
        assert self._run is not None
        start, size = self._run
        return slice(start, start + self.rhs.size * size)

    def group_of(self, cols: np.ndarray) -> np.ndarray:
        """The group of each column in ``cols`` (−1 for none)."""
        cols = np.asarray(cols, dtype=np.int64)
        if self._run is None:
            return self.group[cols]
        start, size = self._run
        g = (cols - start) // size
        return np.where((cols >= start) & (g < self.rhs.size), g, -1)

    def minimum(self, d: np.ndarray) -> np.ndarray:
        """``min_{j ∈ g} d_j`` of every group, shape (n_groups,)."""
        if not self.rhs.size:
            return np.zeros(0)
        d = np.asarray(d, dtype=np.float64)
        if self._run is not None:
            return d[self._span()].reshape(self.rhs.size, -1).min(axis=1)
        return np.minimum.reduceat(d[self._order], self._starts)

    def non_members(self) -> np.ndarray:
        """Indices of the columns in no group."""
        if self._run is not None:
            span = self._span()
            return np.r_[0 : span.start, span.stop : self.n_cols].astype(np.int64)
        return np.flatnonzero(self.group < 0)

    def subtract(self, values: np.ndarray, duals: np.ndarray) -> None:
        """``values[j] -= duals[group of j]`` for every member j, in place."""
        if self._run is not None:
            values[self._span()].reshape(self.rhs.size, -1)[:] -= np.asarray(duals)[:, None]
            return
        member = self.group >= 0
        values[member] -= np.asarray(duals)[self.group[member]]

    def cheapest(self, cost: np.ndarray) -> np.ndarray:
        """The member of least ``cost`` of every group (the first one on ties)."""
        cost = np.asarray(cost, dtype=np.float64)
        if self._run is not None:
            start, size = self._run
            local = cost[self._span()].reshape(self.rhs.size, size).argmin(axis=1)
            return start + np.arange(self.rhs.size, dtype=np.int64) * size + local
        by_cost = self._order[np.lexsort((cost[self._order], self.group[self._order]))]
        return by_cost[self._starts]

    def members_have_lower_zero(self, lower: np.ndarray) -> bool:
        """Whether every member's lower bound in ``lower`` is 0 (the simplex needs x ≥ 0)."""
        lower = np.asarray(lower)
        if self._run is not None:
            return bool((lower[self._span()] == 0.0).all())
        return bool((lower[self.group >= 0] == 0.0).all())


def _pick(v: np.ndarray | float, idx: np.ndarray) -> np.ndarray | float:
    return v if np.ndim(v) == 0 else np.asarray(v)[idx]


def _check_rhs(rhs: np.ndarray) -> None:
    if not (np.isfinite(rhs).all() and (rhs >= 0).all()):
        raise InvalidInput("simplex groups: rhs must be finite and >= 0")


def safe_dual_bound(
    cost: np.ndarray,
    A: Any,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray | float,
    col_upper: np.ndarray | float,
    row_dual: np.ndarray,
    *,
    solver_col_dual: np.ndarray | None = None,
    offset: float = 0.0,
    simplices: SimplexGroups | None = None,
) -> float:
    """Rigorous lower bound on ``min cᵀx, row_lower ≤ A x ≤ row_upper, col bounds`` from any
    row multipliers (the safe dual bound of Neumaier & Shcherbina, 2004):
    ``Σ π_i B_i + Σ_j min over [l_j, u_j] of d_j x_j`` with ``B_i`` the row bound picked by
    the sign of ``π_i`` (π zeroed where that bound is infinite) and ``d = c − Aᵀπ`` recomputed
    for the π used. It does not trust the solver's optimality claim. Where ``d_j`` points to
    an infinite column bound the term would be −∞; there ``solver_col_dual`` (if given) is used
    instead, which is only as valid as the solver's duals (0 within tolerance at an optimum).

    ``simplices``: columns in simplex groups (rows ``Σ_{j∈g} x_j = rhs_g``, not in ``A``,
    ``x ≥ 0``) contribute ``rhs_g · min_{j∈g} d_j`` instead of their box terms.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> # min x0 + 2 x1 s.t. x0 + x1 = 1 (a simplex), x0 <= 0.25 (dual -1 at the optimum)
    >>> a = sp.csr_array([[1.0, 0.0]])
    >>> g = SimplexGroups([0, 0], [1.0])
    >>> safe_dual_bound(np.array([1.0, 2.0]), a, [-INF], [0.25], 0.0, INF, [-1.0], simplices=g)
    1.75
    """
    pi = np.asarray(row_dual, dtype=np.float64)
    row_b = np.where(pi > 0, row_lower, np.where(pi < 0, row_upper, 0.0))
    pi = np.where(np.isfinite(row_b), pi, 0.0)
    row_b = np.where(np.isfinite(row_b), row_b, 0.0)
    d = np.asarray(A.T @ pi, dtype=np.float64)
    np.subtract(np.asarray(cost, dtype=np.float64), d, out=d)
    bound = float(pi @ row_b) + float(offset)
    if simplices is not None:
        bound += float(simplices.rhs @ simplices.minimum(d))
        # the members' box terms are replaced: only the other columns remain
        rest = simplices.non_members()
        d = d[rest]
        col_lower, col_upper = _pick(col_lower, rest), _pick(col_upper, rest)
        if solver_col_dual is not None:
            solver_col_dual = np.asarray(solver_col_dual)[rest]
    col_b = np.where(d > 0, col_lower, np.where(d < 0, col_upper, 0.0))
    unsafe = ~np.isfinite(col_b)
    if np.any(unsafe):
        if solver_col_dual is None:
            return -math.inf
        d = np.where(unsafe, np.asarray(solver_col_dual, dtype=np.float64)[: d.size], d)
        col_b = np.where(d > 0, col_lower, np.where(d < 0, col_upper, 0.0))
        col_b = np.where(np.isfinite(col_b), col_b, 0.0)
    return bound + float(d @ col_b)


def run(h: Any) -> Any:
    """``h.run()``, watched for signals inside :func:`privopt.lp.interrupts.interruptible`
    (models of at least :data:`~privopt.lp.interrupts.WATCH_MIN_SIZE` rows plus columns get
    the interrupt callbacks; a signal received during the run raises once HiGHS has returned).
    Returns HiGHS's run status."""
    if not interrupts.watching():
        return h.run()
    if interrupts.logging_on():
        h.setOptionValue("output_flag", True)
    if h.getNumRow() + h.getNumCol() >= interrupts.WATCH_MIN_SIZE:
        _watch(h)
    interrupts.enter_run()
    try:
        status = h.run()
    finally:
        interrupted = h.getModelStatus() == _hs.HighsModelStatus.kInterrupt
        interrupts.leave_run(interrupted)
    return status


def _stop_if_asked(event: Any) -> None:
    if interrupts.stop_requested():
        event.interrupt()


def _watch(h: Any) -> None:
    """Subscribe the interrupt callbacks on ``h`` (once per instance)."""
    if getattr(h, "_privopt_watched", False):
        return
    for callback in (h.cbSimplexInterrupt, h.cbIpmInterrupt, h.cbMipInterrupt):
        callback.subscribe(_stop_if_asked)
    h._privopt_watched = True


#: Option sets tried, in order, after a HiGHS run ends without a verdict ("Solve error",
#: "Not Set", "Unknown"). Each one solved such failing LPs in isolation (metric DP: presolve
#: aborting on coefficients up to e^20, dual simplex derailing from a warm basis, scaling).
FALLBACK_OPTIONS: tuple[tuple[tuple[str, Any], ...], ...] = (
    (("presolve", "off"),),
    (("presolve", "off"), ("simplex_strategy", 4)),
    (("simplex_scale_strategy", 4),),
    (("solver", "ipm"),),
)


def run_with_fallbacks(h: Any, accept: Any = None) -> tuple[Any, list[str]]:
    """``h.run()``; when the model status is not in ``accept`` (default: optimal, infeasible,
    unbounded, time or iteration limit), re-run from scratch with each of
    :data:`FALLBACK_OPTIONS` until one gives an accepted status (never after an interrupt).
    Options are restored to their previous values after each try.

    Returns (model status, names of the fallbacks tried).
    """
    ms = _hs.HighsModelStatus
    if accept is None:
        accept = (
            ms.kOptimal,
            ms.kInfeasible,
            ms.kUnbounded,
            ms.kUnboundedOrInfeasible,
            ms.kTimeLimit,
            ms.kIterationLimit,
        )
    run(h)
    status = h.getModelStatus()
    tried: list[str] = []
    for opts in FALLBACK_OPTIONS:
        if status in accept or status == ms.kInterrupt:  # a user's interrupt is final
            break
        saved = [(name, h.getOptionValue(name)[1]) for name, _ in opts]
        h.clearSolver()
        for name, value in opts:
            h.setOptionValue(name, value)
        run(h)
        status = h.getModelStatus()
        tried.append(", ".join(f"{name}={value}" for name, value in opts))
        for name, value in saved:
            h.setOptionValue(name, value)
    return status, tried


def set_options(h: Any, options: Any) -> None:
    """Set ``(name, value)`` pairs (or a dict) on ``h``; a rejected one raises InvalidInput."""
    items = options.items() if isinstance(options, dict) else options
    for name, value in items:
        if h.setOptionValue(name, value) == _hs.HighsStatus.kError:
            raise InvalidInput(f"highs_options: HiGHS rejected {name}={value!r}")


def new_highs(
    *,
    method: str = "choose",
    threads: int | None = None,
    time_limit: float | None = None,
    presolve: bool = True,
    tol: float | None = None,
    verbose: bool = False,
) -> Any:
    """A fresh, silent (unless ``verbose``) ``Highs`` with :func:`configure`'s options and,
    when ``tol`` is given, that primal and dual feasibility tolerance."""
    h = Highs()
    configure(
        h,
        method=method,
        threads=threads,
        time_limit=time_limit,
        presolve=presolve,
        verbose=verbose,
    )
    if tol is not None:
        set_option(h, "primal_feasibility_tolerance", float(tol))
        set_option(h, "dual_feasibility_tolerance", float(tol))
    return h


def pass_arrays(
    h: Any,
    c: np.ndarray,
    a: Any,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray | float = 0.0,
    col_upper: np.ndarray | float = INF,
) -> None:
    """Load ``min cᵀx, row_lower ≤ A x ≤ row_upper, col bounds`` into ``h`` (A as CSC)."""
    a = sp.csc_array(a)
    m, n = a.shape
    status = h.passModel(
        n,
        m,
        int(a.nnz),
        int(_hs.MatrixFormat.kColwise),
        int(_hs.ObjSense.kMinimize),
        0.0,
        np.ascontiguousarray(c, dtype=np.float64),
        np.broadcast_to(np.asarray(col_lower, dtype=np.float64), (n,)).copy(),
        np.broadcast_to(np.asarray(col_upper, dtype=np.float64), (n,)).copy(),
        np.ascontiguousarray(row_lower, dtype=np.float64),
        np.ascontiguousarray(row_upper, dtype=np.float64),
        a.indptr.astype(np.int32),
        a.indices.astype(np.int32),
        a.data.astype(np.float64),
        np.zeros(n, dtype=np.int32),
    )
    if status == _hs.HighsStatus.kError:
        raise InvalidInput("HiGHS rejected the model in passModel")


@dataclass
class LPSolution:
    """An optimal LP solution read from HiGHS (see :func:`solve_checked`).

    Attributes
    ----------
    x : primal values, shape (n_cols,).
    objective : objective value.
    row_duals : row duals, shape (n_rows,) (HiGHS signs: ≥ 0 at a lower bound).
    status : HiGHS's model status text.
    solve_time : wall-clock seconds.
    iterations : simplex + IPM iterations.
    col_duals : reduced costs as HiGHS reports them, shape (n_cols,).
    """

    x: np.ndarray
    objective: float
    row_duals: np.ndarray
    status: str
    solve_time: float
    iterations: int
    col_duals: np.ndarray | None = None


def solve_checked(h: Any, *, what: str = "LP", accept: Any = None) -> LPSolution:
    """Run ``h`` with :func:`run_with_fallbacks` (statuses outside ``accept`` are retried) and
    return the optimal solution, or raise the :mod:`privopt.errors` exception matching the
    final status (``what`` names the model in the message)."""
    start = time.perf_counter()
    status, _ = run_with_fallbacks(h, accept=accept)
    elapsed = time.perf_counter() - start
    text = h.modelStatusToString(status)
    ms = _hs.HighsModelStatus
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
            np.asarray(sol.col_dual),
        )
    if status == ms.kInfeasible:
        raise InfeasibleModel(f"{what} is infeasible", status=text)
    if status in (ms.kUnbounded, ms.kUnboundedOrInfeasible):
        raise UnboundedModel(f"{what} is unbounded or infeasible", status=text)
    if status in (ms.kTimeLimit, ms.kIterationLimit, ms.kInterrupt):
        raise SolverLimit(f"{what}: solver stopped by a limit or interrupt ({text})", status=text)
    raise NumericalTrouble(f"{what}: HiGHS returned {text}", status=text)


class Model:
    """A handle on a live HiGHS instance that grows: rows and columns are appended, the basis
    is kept between solves (warm starts), saved, restored onto a larger model, or dropped
    (:meth:`cold`).

    Parameters
    ----------
    h : a ``Highs`` holding the initial model (e.g. from :func:`new_highs` + :func:`pass_arrays`).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> m = Model(new_highs(method="simplex"))
    >>> pass_arrays(m.h, np.array([1.0, 2.0]), sp.csr_array([[1.0, 1.0]]), [1.0], [1.0])
    >>> round(m.solve().objective, 9)
    1.0
    >>> m.add_rows([1.0], [INF], sp.csr_array([[0.0, 1.0]]))   # x1 >= 1
    >>> round(m.solve().objective, 9)
    2.0
    """

    def __init__(self, h: Any) -> None:
        self.h = h

    @property
    def n_rows(self) -> int:
        """Number of rows in the model now."""
        return int(self.h.getNumRow())

    @property
    def n_cols(self) -> int:
        """Number of columns in the model now."""
        return int(self.h.getNumCol())

    def add_rows(self, lower: Any, upper: Any, a: Any, columns: np.ndarray | None = None) -> None:
        """Append rows ``lower ≤ a x ≤ upper``; ``a`` is CSR over the model's columns, or over
        ``columns`` (model index of each of its columns) when given."""
        a = sp.csr_array(a)
        idx = a.indices if columns is None else np.asarray(columns)[a.indices]
        lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (a.shape[0],)).copy()
        up = np.broadcast_to(np.asarray(upper, dtype=np.float64), (a.shape[0],)).copy()
        n0 = self.n_rows
        self.h.addRows(
            a.shape[0],
            lo,
            up,
            a.nnz,
            a.indptr[:-1].astype(np.int32),
            idx.astype(np.int32),
            a.data.astype(np.float64),
        )
        if self.n_rows != n0 + a.shape[0]:
            raise NumericalTrouble(
                f"HiGHS rejected {a.shape[0]} rows (largest |coefficient| "
                f"{np.abs(a.data).max(initial=0):.3g})"
            )

    def add_cols(self, cost: Any, lower: Any, upper: Any, a: Any) -> None:
        """Append columns with their entries in the existing rows, ``a`` CSC (n_rows × new)."""
        a = sp.csc_array(a)
        n = a.shape[1]
        self.h.addCols(
            n,
            np.asarray(cost, dtype=np.float64),
            np.broadcast_to(np.asarray(lower, dtype=np.float64), (n,)).copy(),
            np.broadcast_to(np.asarray(upper, dtype=np.float64), (n,)).copy(),
            a.nnz,
            a.indptr[:-1].astype(np.int32),
            a.indices.astype(np.int32),
            a.data.astype(np.float64),
        )

    def set_option(self, name: str, value: Any) -> None:
        """Set one HiGHS option by name; InvalidInput when HiGHS rejects it."""
        set_option(self.h, name, value)

    def basis(self) -> Any:
        """The current basis (to hand to :meth:`set_basis`, here or on a larger model)."""
        return self.h.getBasis()

    def set_basis(self, basis: Any) -> bool:
        """Start the next solve from ``basis``, taken on this model or on one with fewer rows
        and columns: new rows enter basic, new columns nonbasic at their lower bound (still a
        basis). Returns False (and changes nothing) when ``basis`` is larger than the model."""
        n_rows, n_cols = len(basis.row_status), len(basis.col_status)
        if n_rows > self.n_rows or n_cols > self.n_cols:
            return False
        basis.row_status = list(basis.row_status) + [_hs.HighsBasisStatus.kBasic] * (
            self.n_rows - n_rows
        )
        basis.col_status = list(basis.col_status) + [_hs.HighsBasisStatus.kLower] * (
            self.n_cols - n_cols
        )
        self.h.setBasis(basis)
        return True

    def cold(self) -> None:
        """Drop the basis and factorisation: the next solve starts from scratch."""
        self.h.clearSolver()

    def solve(self, *, what: str = "LP", accept: Any = None) -> LPSolution:
        """:func:`solve_checked` on this model."""
        return solve_checked(self.h, what=what, accept=accept)
