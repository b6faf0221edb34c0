"""Subproblems: warm persistent models, feasibility and optimality cuts, and their fan-out over a
``concurrent.futures.Executor`` with retries.
"""

from __future__ import annotations

import math
import os
import pickle
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt.errors import SolverError
from privopt.lp import highs
from privopt.lp.benders.problem import _SubData
from privopt.lp.bounds import trusted_safe_dual_bound
from privopt.lp.model import LinearProgram
from privopt.lp.solve import dual_ray_of

# =========================================================================== subproblem side


@dataclass
class _Outcome:
    """What a worker sends back for one subproblem solve (small: beta is over coupled columns)."""

    kind: str  # "optimal" | "infeasible" | "unbounded" | "error"
    phi: float = math.nan  # subproblem optimum
    rhs: float = math.nan  # alpha (optimality cut) or gamma (feasibility cut)
    beta: np.ndarray | None = None  # T_k^T (dual or ray), over t_cols
    y: np.ndarray | None = None  # subproblem solution
    message: str = ""
    seconds: float = 0.0
    cold: bool = False  # True when this call built the worker's model


class _SubSolver:
    """One subproblem's persistent model; only row bounds change between calls."""

    def __init__(self, data: _SubData) -> None:
        self.data = data
        lp = data.lp
        self.lp = lp
        # Presolve off + dual simplex: warm starts across RHS changes, and rays on infeasibility.
        self._fresh_model()
        self.row_lower = lp.row_lower
        self.row_upper = lp.row_upper
        self.col_lower = lp.col_lower
        self.col_upper = lp.col_upper
        self.rows = np.arange(lp.n_rows, dtype=np.int32)
        # Only the rows that T_k touches change with x (often a minority of them); after a
        # solve on widened bounds every row is reset once.
        self.coupled = np.flatnonzero(np.diff(data.t_matrix.indptr) > 0).astype(np.int32)
        self._all_rows_stale = False
        self._W = None
        self._elastic_model: highs.Model | None = None  # built at the first need
        self.feas_tol = float(dict(data.options).get("primal_feasibility_tolerance", 1e-7))
        self.n_calls = 0
        self._time_limit = math.inf

    def W(self) -> sp.csc_array:
        if self._W is None:
            self._W = self.lp.matrix()
        return self._W

    def solve(
        self, x_coupled: np.ndarray, want_solution: bool, time_left: float | None = None
    ) -> _Outcome:
        """Solve at ``x_coupled``; with ``time_left`` (seconds) every HiGHS call of this solve
        is limited to it, and a solve cut short returns kind ``"time_limit"``."""
        self._set_time_limit(time_left)
        out = self._solve(x_coupled, want_solution)
        if time_left is not None and out.kind == "error" and out.seconds >= time_left:
            out = _Outcome("time_limit", message=out.message, seconds=out.seconds)
        out.cold = self.n_calls == 0
        self.n_calls += 1
        return out

    def _fresh_model(self) -> None:
        self.model = self.lp.to_model(options=self.data.options)
        self.model.configure(method="simplex", presolve=False)
        self.model.set_options(self.data.options)  # again, over configure's settings
        self.model.set_option("time_limit", getattr(self, "_time_limit", math.inf))

    def _set_time_limit(self, time_left: float | None) -> None:
        # The run's deadline reaches every HiGHS call (a round of many subproblems can run
        # far past the limit when only the master is limited).
        limit = math.inf if time_left is None else max(float(time_left), 1e-3)
        if limit == self._time_limit:
            return  # the models hold it already (they are built with it)
        self._time_limit = limit
        self.model.set_option("time_limit", limit)
        if self._elastic_model is not None:
            self._elastic_model.set_option("time_limit", limit)

    def _elastic(
        self, lo: np.ndarray, up: np.ndarray
    ) -> tuple[float, np.ndarray, highs.LPSolution | None]:
        """Solve the elastic (phase-1) LP ``min 1ᵀ(s⁺ + s⁻)``, ``lo ≤ W y + s⁺ − s⁻ ≤ up``, y in
        its box; returns (optimum, primal values, solution) or (nan, ..., None) on failure.

        The model is built once per subproblem and kept (only its row bounds change); a solve
        that ends without a verdict is retried from scratch with primal simplex and then with
        HiGHS's alternative scaling strategy (badly scaled rows)."""
        S = highs.ModelStatus
        m = self.lp.n_rows
        if self._elastic_model is None:
            W = sp.csc_array(self.W())
            n = W.shape[1]
            lp = LinearProgram(n, lower=self.col_lower, upper=self.col_upper)
            lp.add_variables(2 * m, objective=1.0)
            eye = sp.identity(m, format="csc")
            lp.add_rows(sp.hstack([W, eye, -eye], format="csc"), lower=lo, upper=up)
            self._elastic_model = lp.to_model(options=self.data.options)
            self._elastic_model.configure(method="simplex", presolve=False)
            self._elastic_model.set_options(self.data.options)
            self._elastic_model.set_option("time_limit", self._time_limit)
        model = self._elastic_model
        if self.coupled.size:
            rows = self.coupled
            model.set_row_bounds(rows, lo[rows], up[rows])
        for opts in ((), (("simplex_strategy", 4),), (("simplex_scale_strategy", 4),)):
            if opts:
                model.cold()
            for name, value in opts:
                model.set_option(name, value)
            status = model.run()
            for name, _ in opts:
                model.set_option(name, 1 if name == "simplex_strategy" else 2)
            if status == S.kOptimal:
                sol = model.solution()
                return sol.objective, sol.x, sol
        return math.nan, np.zeros(0), None

    def _elastic_cut(self, sol: highs.LPSolution) -> tuple[float, np.ndarray]:
        """Feasibility cut ``βᵀx ≥ γ`` from the elastic LP's duals (spec 000 §3.2, phase-1
        route): its value φ₁(x) is 0 at every feasible x and ≥ γ − βᵀx by weak duality (the
        cut is built from the nominal bounds, like an optimality cut), so it needs no ray
        verification; it is violated at x̄ by φ₁(x̄) > 0."""
        n = self.lp.n_vars
        pi = sol.row_duals
        # Dust on an infinite bound is zeroed (beta must use the same π as the constant).
        bound = np.where(pi > 0, self.row_lower, np.where(pi < 0, self.row_upper, 0.0))
        pi = np.where(np.isfinite(bound), pi, 0.0)
        dj = sol.col_duals[:n]
        # The elastic LP's y columns cost 0 (its objective is the slacks' sum); the slack
        # columns (≥ 0, reduced costs 1 ∓ π ≥ 0 at its optimum) are left out as before.
        return (
            self._dual_constant(pi, dj, cost=np.zeros(n)) - self.lp.offset,
            self.data.t_matrix.T @ pi,
        )

    def _dual_constant(
        self, pi: np.ndarray, dj_solver: np.ndarray, cost: np.ndarray | None = None
    ) -> float:
        """``Σ π_i B_i + Σ_j min over [l_j, u_j] of d_j y_j`` (+ offset) with the reduced
        costs recomputed as ``d = c − Wᵀπ`` for the π actually used: HiGHS's own ``col_dual``
        belongs to the unmodified duals, and after dust on infinite bounds is zeroed (or with
        wrong-sign duals of 1e-10 on rows with coefficients of 1e8 and more) it no longer
        matches them, and cuts built from it are invalid (master bounds above the LP
        optimum). Where the recomputed ``d_j`` has no finite bound on its side (a −∞ term), the
        solver's ``d_j`` is used for that column, as before (0 within its tolerance at an
        optimum; give variables their valid finite bounds to avoid this)."""
        c = self.lp.objective if cost is None else cost
        return trusted_safe_dual_bound(
            c,
            self.W(),
            self.row_lower,
            self.row_upper,
            self.col_lower,
            self.col_upper,
            pi,
            solver_col_dual=dj_solver,
            offset=self.lp.offset,
        )

    def _retry_from_scratch(self) -> Any:
        """Re-solve without the previous basis, with primal simplex this once (a dual-simplex
        warm start can derail on badly scaled rows); returns the new model status."""
        self.model.cold()
        self.model.set_option("simplex_strategy", 4)
        status = self.model.run()
        self.model.set_option("simplex_strategy", 1)
        return status

    def _ray_cut(self, ray: np.ndarray) -> tuple[float, np.ndarray]:
        """Feasibility cut ``βᵀx ≥ γ`` from a verified Farkas ray (orientation of
        :func:`~privopt.lp.solve.farkas_margin`), built from the nominal bounds."""
        ray = ray / np.abs(ray).max()
        ray = np.where(np.abs(ray) <= 1e-12, 0.0, ray)
        row_b = np.where(ray > 0, self.row_lower, np.where(ray < 0, self.row_upper, 0.0))
        z = self.W().T @ ray
        z = np.where(np.abs(z) <= 1e-9 * max(1.0, np.abs(self.W().data).max(initial=1.0)), 0.0, z)
        col_max = np.where(z > 0, self.col_upper, np.where(z < 0, self.col_lower, 0.0))
        with np.errstate(invalid="ignore"):
            box_max = float(np.where(z != 0, z * col_max, 0.0).sum())
        return float(ray @ row_b) - box_max, self.data.t_matrix.T @ ray

    def _solve(self, x_coupled: np.ndarray, want_solution: bool) -> _Outcome:
        t0 = time.perf_counter()
        S = highs.ModelStatus
        shift = (
            self.data.t_matrix @ x_coupled if self.data.t_cols.size else np.zeros(self.lp.n_rows)
        )
        lo, up = self.row_lower - shift, self.row_upper - shift
        rows = self.rows if self._all_rows_stale else self.coupled
        if rows.size:
            self.model.set_row_bounds(rows, lo[rows], up[rows])
        self._all_rows_stale = False
        st = self.model.run()
        if st not in (S.kOptimal, S.kInfeasible, S.kUnboundedOrInfeasible, S.kUnbounded):
            st = self._retry_from_scratch() if st != S.kTimeLimit else st
        out = None
        if st == S.kTimeLimit:
            out = _Outcome("time_limit", message="time limit reached")
        elif st not in (S.kOptimal, S.kUnbounded):
            out = self._not_optimal(st, x_coupled, lo, up)  # None: solved on widened bounds
        elif st == S.kUnbounded:
            out = _Outcome("unbounded")
        if out is None:
            out = self._optimal(want_solution)
        out.seconds = time.perf_counter() - t0
        return out

    def _optimal(self, want_solution: bool) -> _Outcome:
        """The optimality cut and value of the solve that just ended optimal."""
        sol = self.model.solution()
        pi = sol.row_duals
        bound = np.where(pi > 0, self.row_lower, np.where(pi < 0, self.row_upper, 0.0))
        pi = np.where(np.isfinite(bound), pi, 0.0)  # dual dust on an infinite bound
        alpha = self._dual_constant(pi, sol.col_duals)
        beta = self.data.t_matrix.T @ pi
        y = sol.x if want_solution else None
        return _Outcome("optimal", phi=sol.objective, rhs=alpha, beta=beta, y=y)

    def _not_optimal(
        self, st: Any, x_coupled: np.ndarray, lo: np.ndarray, up: np.ndarray
    ) -> _Outcome | None:
        """Infeasible, or no verdict. A feasibility cut comes from a verified Farkas ray or,
        without one, from the elastic phase-1 LP (spec 000 §3.2), which also decides when
        HiGHS gave no verdict. The cut is only returned if it separates x̄ by more than the
        feasibility tolerance once normalised to max |β| = 1 (what the master sees): on badly
        scaled rows HiGHS calls points infeasible whose violation is at tolerance level, and a
        cut the master already satisfies within its tolerance would return the same master
        point forever. Such a point is treated as feasible: the subproblem is solved with the row
        bounds widened by the elastic slacks (returns None then). The duals stay dual
        feasible and the cut is built from the *nominal* bounds, so it stays valid; phi and
        the released y_k are off by the slack (the caller verifies its final point)."""
        S = highs.ModelStatus
        cut = None
        if st in (S.kInfeasible, S.kUnboundedOrInfeasible):
            # HiGHS's own ray only: the phase-1 route is the persistent elastic model below
            # (the shared fallback would build a fresh one per call).
            ray = dual_ray_of(
                self.model, self.W(), lo, up, self.col_lower, self.col_upper, phase1=False
            )
            if ray is not None:
                cut = self._ray_cut(ray)
        v = esol = None
        if cut is None:
            value, v, esol = self._elastic(lo, up)
            if esol is None:
                return _error(
                    "no verdict: neither a verifiable Farkas ray nor an elastic phase-1 solution"
                )
            if value > self.feas_tol:
                cut = self._elastic_cut(esol)
        if cut is not None and self._separates(cut, x_coupled):
            return _Outcome("infeasible", rhs=cut[0], beta=cut[1])
        if esol is None:
            _, v, esol = self._elastic(lo, up)
            if esol is None:
                return _error("infeasible at tolerance level and the elastic phase-1 LP failed")
        assert v is not None  # set together with esol by the elastic solve
        st = self._solve_widened(lo, up, v)
        if st != S.kOptimal:
            return _error(
                "nearly feasible point: the subproblem with bounds widened by the elastic "
                "slacks failed: " + self.model.status_text
            )
        return None

    def _separates(self, cut: tuple[float, np.ndarray], x_coupled: np.ndarray) -> bool:
        """Whether ``βᵀx ≥ γ`` cuts ``x_coupled`` off by more than the feasibility tolerance
        once normalised to max |β| = 1."""
        gamma, beta = cut
        scale = max(float(np.abs(beta).max(initial=0.0)), 1e-300)
        return (gamma - float(beta @ x_coupled)) / scale > self.feas_tol

    def _solve_widened(self, lo: np.ndarray, up: np.ndarray, v: np.ndarray) -> Any:
        """Solve with row bounds widened by the elastic slacks ``v`` (W y = r − s⁺ + s⁻ with
        r in [lo, up]), plus 1e-9 (with 1e-12 HiGHS still called the widened LP infeasible);
        from the previous basis, then from scratch with primal simplex, then on a fresh
        instance. The next call resets every row bound (``_all_rows_stale``)."""
        S = highs.ModelStatus
        n, m = self.lp.n_vars, self.lp.n_rows
        s_lo = lo - v[n : n + m] - 1e-9
        s_up = up + v[n + m :] + 1e-9
        self._all_rows_stale = True
        self.model.set_row_bounds(self.rows, s_lo, s_up)
        st = self.model.run()
        if st != S.kOptimal:
            st = self._retry_from_scratch()
        if st != S.kOptimal:
            self._fresh_model()
            self.model.set_row_bounds(self.rows, s_lo, s_up)
            st = self.model.run()
        return st


def _error(message: str) -> _Outcome:
    return _Outcome("error", message=message)


# Per-process cache for executors whose workers live in other processes: token -> {k: solver}.
_WORKER_CACHE: OrderedDict[str, dict[int, _SubSolver]] = OrderedDict()

_WORKER_LOCK = threading.Lock()

_WORKER_CACHE_RUNS = 4  # keep the solvers of this many recent runs per worker process


def _cached_solver(token: str, k: int, source: Any) -> _SubSolver:
    with _WORKER_LOCK:
        run = _WORKER_CACHE.get(token)
        if run is None:
            run = _WORKER_CACHE[token] = {}
            while len(_WORKER_CACHE) > _WORKER_CACHE_RUNS:
                _WORKER_CACHE.popitem(last=False)
        else:
            _WORKER_CACHE.move_to_end(token)
        solver = run.get(k)
    if solver is None:
        if isinstance(source, str):
            with open(source, "rb") as fh:
                data = pickle.load(fh)
        else:
            data = source
        solver = _SubSolver(data)
        with _WORKER_LOCK:
            run[k] = solver
    return solver


def _remote_solve(
    token: str,
    k: int,
    source: Any,
    x_coupled: np.ndarray,
    want_solution: bool,
    time_left: float | None = None,
) -> _Outcome:
    """Module-level task: solve subproblem ``k`` of run ``token`` at ``x_coupled``.

    ``source`` is the subproblem data (Dask resolves a scattered future to it) or the path of a
    pickle file; either is used only the first time this process sees ``(token, k)``.
    ``time_left`` (seconds from submission) limits the solve.
    """
    return _cached_solver(token, k, source).solve(x_coupled, want_solution, time_left)


def _left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (a ``time.perf_counter()`` value), None without one."""
    return None if deadline is None else deadline - time.perf_counter()


def _solve_by(
    solver: _SubSolver, x: np.ndarray, want_solution: bool, deadline: float | None
) -> _Outcome:
    """Solve with the time left until ``deadline``; none left: kind ``"time_limit"``."""
    left = _left(deadline)
    if left is not None and left <= 0:
        return _Outcome("time_limit", message="time limit reached before the solve")
    return solver.solve(x, want_solution, left)


def _remote_batch(
    token: str,
    ks: Sequence[int],
    sources: Sequence[Any],
    xs: Sequence[np.ndarray],
    want_solution: bool,
    time_left: float | None = None,
) -> list[_Outcome]:
    """Module-level task: solve subproblems ``ks`` of run ``token`` at ``xs``, in order, on
    this worker's cached solvers (one task per worker and round: the per-task overhead of
    the executor is paid once per batch). ``sources[i]`` is the data of ``ks[i]`` (see
    :func:`_remote_solve`); ``time_left`` (seconds from the task's start) limits the batch."""
    deadline = None if time_left is None else time.perf_counter() + time_left
    return [
        _solve_by(_cached_solver(token, k, src), x, want_solution, deadline)
        for k, src, x in zip(ks, sources, xs, strict=True)
    ]


def _balanced_batches(subs: Sequence[_SubData], n_batches: int) -> list[list[int]]:
    """Subproblem indices split into ``n_batches`` groups of about equal work (largest first
    onto the lightest group; work ~ nonzeros of ``W_k`` plus rows), each in increasing order.
    Deterministic, so a subproblem stays with one worker (and its warm solver) for the run."""
    work = [d.lp.matrix().nnz + d.lp.n_rows for d in subs]
    loads = [0] * n_batches
    groups: list[list[int]] = [[] for _ in range(n_batches)]
    for k in sorted(range(len(subs)), key=lambda k: (-work[k], k)):
        g = min(range(n_batches), key=lambda g: (loads[g], g))
        groups[g].append(k)
        loads[g] += work[k]
    return [sorted(g) for g in groups if g]


class _Dispatcher:
    """Solves all subproblems at given master points; data shipped at construction.

    Serial and threads: the solvers live here. Other executors: the subproblems are split
    into one batch per worker (:func:`_balanced_batches`) and each round submits one
    :func:`_remote_batch` task per batch; on Dask each batch's data is scattered once to its
    worker and its tasks are pinned there, so every subproblem keeps one warm solver and the
    iterates are those of the serial run."""

    def __init__(
        self,
        subs: Sequence[_SubData],
        executor: Executor | None,
        retries: int = 2,
        names: Sequence[str] | None = None,
    ) -> None:
        # Any: a concurrent.futures Executor or a Dask client (whose submit takes pure=)
        self.executor: Any = executor
        self.subs = list(subs)
        self.retries = retries
        self.names = list(names) if names is not None else [f"sub{k}" for k in range(len(subs))]
        self.token = uuid.uuid4().hex
        self.mode = "serial"
        self._local: list[_SubSolver] | None = None
        self._batches: list[list[int]] = []
        self._sources: list[Any] = []  # per batch: scattered future (Dask) or file paths
        self._workers: list[str | None] = []  # per batch: the Dask worker it is pinned to
        self._tmpdir: tempfile.TemporaryDirectory | None = None
        self._client = None
        if executor is None or isinstance(executor, ThreadPoolExecutor):
            self.mode = "serial" if executor is None else "threads"
            self._local = [_SubSolver(d) for d in subs]
        elif _dask_client(executor) is not None:
            self.mode = "dask"
            self._client = _dask_client(executor)
            workers = sorted(self._client.scheduler_info()["workers"]) or [None]
            self._batches = _balanced_batches(self.subs, len(workers))
            self._workers = workers[: len(self._batches)]
            self._sources = [self._scatter(b) for b in range(len(self._batches))]
        else:
            self.mode = "files"
            self._batches = _balanced_batches(self.subs, _max_workers(executor))
            self._tmpdir = tempfile.TemporaryDirectory(prefix="privopt-benders-")
            for batch in self._batches:
                self._sources.append([self._write(k) for k in batch])

    def _write(self, k: int) -> str:
        assert self._tmpdir is not None
        path = os.path.join(self._tmpdir.name, f"sub{k}.pkl")
        with open(path, "wb") as fh:
            pickle.dump(self.subs[k], fh, protocol=pickle.HIGHEST_PROTOCOL)
        return path

    def _scatter(self, b: int) -> Any:
        """Batch ``b``'s data, scattered once (to its worker when it has one)."""
        assert self._client is not None
        data = [self.subs[k] for k in self._batches[b]]
        where = self._workers[b]
        # Wrapped: a scattered list would become one future per element.
        return self._client.scatter(
            [data], hash=False, broadcast=False, workers=None if where is None else [where]
        )[0]

    def solve_all(
        self,
        xs: Sequence[np.ndarray],
        want_solution: bool,
        deadline: float | None = None,
        solved: Callable[[int], None] | None = None,
    ) -> list[_Outcome]:
        """The outcomes at ``xs`` (one point per subproblem, over its coupled columns). With a
        ``deadline`` (a ``time.perf_counter()`` value) each solve gets the time left and the
        ones that start after it are skipped: their outcome has kind ``"time_limit"``.
        ``solved(n)`` is called as results arrive, with the number of subproblems solved so far
        (a progress bar's text, within a round that can take minutes)."""
        return self.start(xs, want_solution, deadline).collect(solved)

    def start(
        self, xs: Sequence[np.ndarray], want_solution: bool, deadline: float | None = None
    ) -> _PendingRound:
        """A round at ``xs`` set going: on an executor its tasks run while the caller goes on
        (e.g. solves the master); serially nothing runs before :meth:`_PendingRound.collect`.
        Collect one round before starting the next: a subproblem's solver is not shared."""
        pending = _PendingRound(self, list(xs), want_solution, deadline)
        if self.mode == "threads":
            pending.futures = [
                self.executor.submit(_solve_by, s, x, want_solution, deadline)
                for s, x in zip(self._local or [], xs, strict=False)
            ]
        elif self.mode in ("dask", "files"):
            pending.time_left = _left(deadline)
            pending.batch_xs = [[xs[k] for k in batch] for batch in self._batches]
            pending.futures = [
                self._submit(b, bx, want_solution, pending.time_left)
                for b, bx in enumerate(pending.batch_xs)
            ]
        return pending

    def _submit(
        self, b: int, xs: list[np.ndarray], want_solution: bool, time_left: float | None
    ) -> Any:
        args = (_remote_batch, self.token, self._batches[b], self._sources[b], xs, want_solution)
        if self.mode == "dask":
            # Pure tasks: Dask re-runs them itself when their worker dies; pinned to the
            # worker holding the batch's data and solvers (another one if it is gone).
            where = self._workers[b]
            pin = {} if where is None else {"workers": [where], "allow_other_workers": True}
            return self.executor.submit(*args, time_left, pure=False, retries=self.retries, **pin)
        return self.executor.submit(*args, time_left)

    def _result(
        self,
        b: int,
        fut: Any,
        xs: list[np.ndarray],
        want_solution: bool,
        time_left: float | None,
    ) -> list[Any]:
        """The batch's outcomes; a task lost with its worker (or its scattered data) is
        resubmitted with the batch's data shipped anew, up to ``retries`` times."""
        for attempt in range(self.retries + 1):
            try:
                return fut.result()
            except Exception as exc:  # a lost worker, a cancelled future, ...
                names = ", ".join(self.names[k] for k in self._batches[b])
                if attempt == self.retries:
                    raise SolverError(
                        f"subproblem batch [{names}] failed after {self.retries} retries: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                try:
                    self._recover_source(b)
                    fut = self._submit(b, xs, want_solution, time_left)
                except Exception as sub_exc:  # noqa: BLE001 - e.g. a broken process pool
                    raise SolverError(
                        f"subproblem batch [{names}] failed and could not be resubmitted: "
                        f"{type(sub_exc).__name__}: {sub_exc}"
                    ) from exc
        raise AssertionError("unreachable")

    def _recover_source(self, b: int) -> None:
        """Batch ``b``'s data for a resubmission: scattered anew on Dask to any worker (the
        copy may have died with its worker), else the same files."""
        if self._client is not None:  # Dask
            self._workers[b] = None
            self._sources[b] = self._scatter(b)

    def close(self) -> None:
        if self._client is not None and self._sources:
            self._client.cancel(self._sources)
        if self._tmpdir is not None:
            self._tmpdir.cleanup()


@dataclass
class _PendingRound:
    """A round of subproblem solves set going by :meth:`_Dispatcher.start`."""

    dispatcher: _Dispatcher
    xs: list[np.ndarray]
    want_solution: bool
    deadline: float | None
    futures: list[Any] | None = None  # per subproblem (threads) or per batch (dask, files)
    batch_xs: list[list[np.ndarray]] | None = None
    time_left: float | None = None  # of the round, for remote tasks

    def collect(self, solved: Callable[[int], None] | None = None) -> list[_Outcome]:
        """The round's outcomes, one per subproblem (see :meth:`_Dispatcher.solve_all`)."""
        d, tell = self.dispatcher, solved if solved is not None else _ignore_count
        outcomes: list[Any] = [None] * len(d.subs)
        if d.mode == "serial":
            for k, (s, x) in enumerate(zip(d._local or [], self.xs, strict=False)):
                outcomes[k] = _solve_by(s, x, self.want_solution, self.deadline)
                tell(k + 1)
            return outcomes
        assert self.futures is not None
        if d.mode == "threads":
            for k, f in enumerate(self.futures):
                outcomes[k] = f.result()
                tell(k + 1)
            return outcomes
        assert self.batch_xs is not None
        count = 0
        for b, fut in enumerate(self.futures):
            results = d._result(b, fut, self.batch_xs[b], self.want_solution, self.time_left)
            for k, res in zip(d._batches[b], results, strict=True):
                outcomes[k] = res
            count += len(results)
            tell(count)
        return outcomes

    def cancel(self) -> None:
        """Give the round up (the run stops): tasks not started are dropped; running ones end
        within the round's deadline."""
        for f in self.futures or []:
            f.cancel()


def _ignore_count(_n: int) -> None:
    """The default ``solved`` callback of :meth:`_Dispatcher.solve_all`: nothing."""


def _max_workers(executor: Any) -> int:
    """The executor's worker count where it tells (process pools do), else 1."""
    n = getattr(executor, "_max_workers", None)
    return n if isinstance(n, int) and n > 0 else 1


def _dask_client(executor: Any) -> Any:
    if type(executor).__module__.startswith("distributed"):
        return getattr(executor, "_client", None)
    return None
