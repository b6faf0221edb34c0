"""The Benders loop (spec 000 §3.4): solve the master, separate at its point, add cuts, stop on the
certified gap.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any, cast

import numpy as np

from privopt._validation import check_int, check_positive
from privopt.errors import (
    InvalidInput,
    NumericalTrouble,
    SolverLimit,
    UnboundedModel,
)
from privopt.lp.benders.master import _LazyRows, _Master, _MasterTimeout, _prepare_initial_cuts
from privopt.lp.benders.problem import _INF, BendersProblem, _SubData
from privopt.lp.benders.result import BendersIteration, BendersResult
from privopt.lp.benders.subproblems import _Dispatcher, _Outcome, _set_options
from privopt.lp.solve import (
    configure,
)


def solve_benders(
    problem: BendersProblem,
    *,
    rel_gap: float = 1e-4,
    max_iterations: int = 500,
    time_limit: float | None = None,
    executor: Executor | None = None,
    progress: bool | str | None = None,
    initial_cuts: Sequence[Any] | None = None,
    multi_cut: bool = True,
    cut_tolerance: float = 1e-9,
    keep_solutions: bool = True,
    raise_on_limit: bool = False,
    abs_gap: float = 0.0,
    gap_floor: float = 1.0,
    lazy_rows: Any = None,
    lazy_tolerance: float = 1e-10,
    highs_options: dict[str, Any] | None = None,
    core_point: np.ndarray | None = None,
    in_out: float = 0.5,
    stall_in_out: float | None = None,
    retries: int = 2,
) -> BendersResult:
    """Solve a :class:`BendersProblem` by Benders decomposition.

    Parameters
    ----------
    problem : master + subproblems.
    rel_gap : stop when ``(UB - LB) / max(gap_floor, |UB|) <= rel_gap`` (spec 000 §3.3).
    max_iterations : maximal number of master solves.
    time_limit : seconds of wall clock: the master solve gets the time left, and the run stops
        after the iteration in which it is exceeded (subproblem rounds are not interrupted).
    executor : a :class:`concurrent.futures.Executor` for the subproblems (serial if None);
        see the module docstring for how data is shipped per executor kind.
    progress : ``True`` shows a tqdm bar on stderr with the bounds and gap, ``False`` none,
        ``"auto"`` or ``None`` (default) one on a terminal once the run has lasted 2 s, or
        as an enclosing :func:`privopt._progress.progress_scope` says (the CLI's).
    initial_cuts : master rows added before the first iteration: :class:`Cut` objects or
        ``(coef, lower, upper)`` tuples over ``(x, theta)``. A cut with a nonzero on ``theta_k``
        counts as bounding it.
    multi_cut : one ``theta`` and one optimality cut per subproblem (default); ``False``
        aggregates them into a single ``theta`` and cut per iteration.
    cut_tolerance : an optimality cut is added when ``theta_k < phi_k - tol * max(1, |phi_k|)``.
    keep_solutions : return the subproblem solutions of the incumbent.
    raise_on_limit : raise :class:`~privopt.errors.SolverLimit` (``best`` = the result) when a
        limit stops the run before the gap is reached, instead of returning the result.
    abs_gap : also stop when ``UB - LB <= abs_gap`` (e.g. the paper's ξ = 0.01, absolute).
    gap_floor : the relative gap is ``(UB - LB) / max(gap_floor, |UB|)``; the default 1 makes
        it absolute for objectives below 1, a tiny floor (e.g. 1e-300) makes it truly relative
        (objectives of order 1e-4, as metric-DP losses at large ε).
    lazy_rows : ``(P, lower, upper)`` with ``P`` of shape (m, <= n_master): valid master rows
        added only once a master point violates them by more than ``lazy_tolerance`` (the
        master is re-solved, warm, until none is violated). For large families of valid
        inequalities that are mostly slack at the optimum (metric DP: boundary mDP rows and
        Property 3.2 path cuts). Exact: subproblems only ever see points satisfying all rows.
    lazy_tolerance : absolute violation above which a lazy row is added.
    highs_options : extra HiGHS options for the master and every subproblem, e.g.
        ``{"primal_feasibility_tolerance": 1e-9}`` when coefficients span many decades.
    core_point : a master point at which every subproblem is feasible (and that satisfies the
        master rows), e.g. a known feasible solution. Enables the in-out separation
        (Ben-Ameur & Neto 2007; Fischetti, Ljubić & Sinnl 2017): subproblems are solved at
        ``x_sep = in_out·x̄ + (1 − in_out)·core`` instead of the master point x̄. A
        feasibility cut at x_sep also cuts x̄ off (the feasible set is convex and contains the
        core); a fully feasible x_sep is an upper bound and becomes the new core. When the
        cuts at x_sep do not cut x̄ off, the next round separates at x̄ itself.
    in_out : the weight of the master point in x_sep, in (0, 1].
    retries : a subproblem task lost with its worker (Dask: ``retries=`` of the task, then
        resubmission with the data itself; other executors: resubmission) is retried this
        many times, then :class:`~privopt.errors.SolverError` names the subproblem. Tasks are
        pure (the same point gives the same cut), so a retry changes nothing in the result.
    stall_in_out : with a ``core_point`` and ``in_out=1``: the in-out weight switched to when
        the classical iteration stalls, i.e. no cut separates x̄ once made safe for HiGHS
        (duals of degenerate subproblems reach 1e12 on metric-DP rows at ε·η ≥ 15; capped,
        their cut no longer binds and the same point came back 5,000 times). None: stop.

    Returns
    -------
    BendersResult

    Raises
    ------
    InvalidInput, InfeasibleModel (the whole problem is infeasible), UnboundedModel,
    NumericalTrouble, SolverLimit (no feasible point within the limits, or ``raise_on_limit``).
    """
    if not isinstance(problem, BendersProblem):
        raise InvalidInput(f"problem must be a BendersProblem, got {type(problem).__name__}")
    if problem.n_subproblems == 0:
        raise InvalidInput("problem has no subproblems")
    rel_gap = float(rel_gap)
    if not (rel_gap >= 0 and math.isfinite(rel_gap)):
        raise InvalidInput(f"rel_gap must be a finite number >= 0, got {rel_gap!r}")
    abs_gap = float(abs_gap)
    if not (abs_gap >= 0 and math.isfinite(abs_gap)):
        raise InvalidInput(f"abs_gap must be a finite number >= 0, got {abs_gap!r}")
    gap_floor = float(gap_floor)
    if not (gap_floor > 0 and math.isfinite(gap_floor)):
        raise InvalidInput(f"gap_floor must be a finite number > 0, got {gap_floor!r}")
    max_iterations = check_int("max_iterations", max_iterations, minimum=1)
    retries = check_int("retries", retries, minimum=0)
    if time_limit is not None:
        time_limit = check_positive("time_limit", time_limit, allow_inf=True)
    if executor is not None and not isinstance(executor, Executor):
        raise InvalidInput(
            f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}"
        )

    options = tuple((highs_options or {}).items())
    t_start = time.perf_counter()
    master = _Master(problem, multi_cut)
    _set_options(master.h, options)
    if master.is_mip:
        # An integer master's LB is its MIP dual bound: solve it to well inside rel_gap.
        configure(master.h, method="simplex", mip_rel_gap=min(1e-4, 0.1 * rel_gap))
    if initial_cuts:
        rows = _prepare_initial_cuts(initial_cuts, master)
        master.add_cuts(rows)
        touched = np.unique(np.concatenate([r[0] for r in rows])) - master.n_x
        master.activate(touched[touched >= 0])
    lazy = None if lazy_rows is None else _LazyRows(lazy_rows, master.n_x)
    subs = problem._subs if not options else [replace(d, options=options) for d in problem._subs]
    core = None
    lam = 1.0
    if core_point is not None:
        core = np.asarray(core_point, dtype=np.float64).ravel()
        if core.size != problem.n_master or not np.isfinite(core).all():
            raise InvalidInput(f"core_point must be {problem.n_master} finite numbers")
        in_out = float(in_out)
        if not (0.0 < in_out <= 1.0):
            raise InvalidInput(f"in_out must be in (0, 1], got {in_out!r}")
        if stall_in_out is not None and not (0.0 < float(stall_in_out) < 1.0):
            raise InvalidInput(f"stall_in_out must be in (0, 1), got {stall_in_out!r}")
        lam = in_out
    dispatcher = _Dispatcher(subs, executor, retries, problem.names)
    bar = _progress_bar(progress, max_iterations)
    history: list[BendersIteration] = []
    best_ub, lb, safe_lb = _INF, -_INF, -_INF
    incumbent_x: np.ndarray | None = None
    incumbent_y: list[np.ndarray] | None = None
    status, n_cuts_total = "iteration_limit", 0
    cold_retried = False
    try:
        for it in range(1, max_iterations + 1):
            t0 = time.perf_counter()
            time_left = None if time_limit is None else time_limit - (t0 - t_start)
            try:
                if time_left is not None and time_left <= 0:
                    raise _MasterTimeout("time limit reached")
                x, theta, master_obj = master.solve(time_left)
                while lazy is not None:
                    rows = lazy.violated(x, lazy_tolerance)
                    if not rows:
                        break
                    master.add_cuts(rows)
                    time_left = (
                        None if time_limit is None else time_limit - (time.perf_counter() - t_start)
                    )
                    if time_left is not None and time_left <= 0:
                        # HiGHS checks its limit only every so many iterations: a master
                        # re-solve of a few pivots ignores a 1 ms limit, and the lazy-row
                        # loop ran on for minutes past time_limit (grid N = 500).
                        raise _MasterTimeout("time limit reached while adding lazy rows")
                    x, theta, master_obj = master.solve(time_left)
            except _MasterTimeout:
                status = "time_limit"
                break
            master_time = time.perf_counter() - t0
            lb_valid = bool(master.active.all())
            if lb_valid:
                # HiGHS's value of this master: it only decides when certification is tried
                # (a warm re-solve can report a value above the master's optimum).
                lb = master_obj
                safe_lb = max(safe_lb, master.last_safe_bound)
            t1 = time.perf_counter()
            x_master_point = x
            if core is not None and lam < 1.0:
                x = lam * x_master_point + (1.0 - lam) * core
            results = dispatcher.solve_all([x[d.t_cols] for d in subs], keep_solutions)
            sub_time = time.perf_counter() - t1
            cuts, n_opt, n_feas, iterate_ub, newly = _make_cuts(
                results,
                subs,
                master,
                theta,
                cut_tolerance,
                multi_cut,
                problem.names,
                x_master_point,
            )
            retry_at_master = False
            if core is not None:
                if math.isfinite(iterate_ub) and lam < 1.0:
                    core = x.copy()  # feasible: move the core towards the master points
                if not cuts and in_out == 1.0 and stall_in_out is not None:
                    # Classical Benders stalled (no cut separates x̄ once made safe for
                    # HiGHS): stabilise around the core from now on.
                    in_out, retry_at_master = stall_in_out, True
                # separate at x̄ itself next when these cuts leave x̄ untouched
                retry_at_master = retry_at_master or (not cuts and lam < 1.0)
                lam = 1.0 if (not cuts and lam < 1.0) else in_out
            master.add_cuts(cuts)
            master.activate(newly)
            n_cuts_total += len(cuts)
            cold_retried = cold_retried and not cuts  # one cold re-solve per stall
            if math.isfinite(iterate_ub):
                iterate_ub += float(master.cost_x @ x) + master.offset
                if iterate_ub < best_ub:
                    best_ub = iterate_ub
                    incumbent_x = x.copy()
                    incumbent_y = (
                        [cast(np.ndarray, r.y) for r in results] if keep_solutions else None
                    )
            gap = _gap(lb, best_ub, gap_floor)
            history.append(
                BendersIteration(
                    it,
                    lb if lb_valid else -_INF,
                    best_ub,
                    iterate_ub,
                    gap,
                    len(cuts),
                    n_opt,
                    n_feas,
                    master_time,
                    sub_time,
                    float(sum(r.seconds for r in results)),
                    int(sum(r.cold for r in results)),
                )
            )
            if bar is not None:
                # refresh=False: an explicit refresh would show the bar before tqdm's delay
                bar.set_postfix(
                    lb=f"{lb:.6g}", ub=f"{best_ub:.6g}", gap=f"{gap:.2e}", refresh=False
                )
                bar.update(1)
            closing = gap <= rel_gap or best_ub - lb <= abs_gap
            stalled = not cuts and not retry_at_master
            if (closing or stalled) and lb_valid:
                # The stop rule is the certification rule: only the safe bound may close it.
                if not _proven(safe_lb, best_ub, rel_gap, abs_gap, gap_floor):
                    safe_lb = max(safe_lb, master.certify(_certify_limit(time_limit)))
                if _proven(safe_lb, best_ub, rel_gap, abs_gap, gap_floor):
                    status = "optimal"
                    break
                if not (master.solved_cold or cold_retried):
                    # HiGHS's warm value is not backed by the bound: its basis may have gone
                    # stale under the new cuts (metric DP: 0.0665 warm, 0.0449 cold on the same
                    # master). Re-solve from scratch and go on from the true master point.
                    master.discard_basis()
                    cold_retried = True
                    continue
                status = "gap_not_closed"
                break
            if stalled:
                status = "gap_not_closed"
                break
            if time_limit is not None and time.perf_counter() - t_start >= time_limit:
                status = "time_limit"
                break
    finally:
        dispatcher.close()
        if bar is not None:
            bar.close()
    if status != "optimal" and master.active.all():
        # The rigorous bound once more from the final master with better multipliers (rows
        # scaled to coefficient ≤ 1): grid N = 500 masters carry cut coefficients up to 1e12.
        safe_lb = max(safe_lb, master.certify(_certify_limit(time_limit)))
    result = BendersResult(
        x_master=incumbent_x if incumbent_x is not None else np.full(problem.n_master, np.nan),
        objective=best_ub,
        lower_bound=safe_lb,
        upper_bound=best_ub,
        gap=max(0.0, _gap(safe_lb, best_ub, gap_floor)),
        status=status,
        iterations=len(history),
        history=history,
        sub_solutions=incumbent_y,
        solve_time=time.perf_counter() - t_start,
        n_cuts=n_cuts_total,
        executor_mode=dispatcher.mode,
        n_lazy_rows=0 if lazy is None else int(lazy.active.sum()),
        solver_lower_bound=lb,
    )
    if incumbent_x is None:
        raise SolverLimit(
            f"Benders stopped ({status}) after {len(history)} iterations without "
            f"a feasible master point",
            status=status,
            best=result,
        )
    if raise_on_limit and status != "optimal":
        raise SolverLimit(
            f"Benders stopped ({status}) with gap {result.gap:.3g}", status=status, best=result
        )
    return result


def _certify_limit(time_limit: float | None) -> float | None:
    # Bounded when the run is: 10 % of time_limit, at least 1 s (road N = 500, BSC: an
    # unbounded certification re-solve overran a 60 s run by more than 30 s).
    return None if time_limit is None else max(1.0, 0.1 * time_limit)


def _proven(bound: float, ub: float, rel_gap: float, abs_gap: float, floor: float) -> bool:
    """The certification rule: the safe ``bound`` proves ``ub`` to ``rel_gap`` or ``abs_gap``."""
    if not (math.isfinite(bound) and math.isfinite(ub)):
        return False
    return ub - bound <= abs_gap or _gap(bound, ub, floor) <= rel_gap


def _gap(lb: float, ub: float, floor: float = 1.0) -> float:
    if not (math.isfinite(lb) and math.isfinite(ub)):
        return _INF
    return (ub - lb) / max(floor, abs(ub))


def _make_cuts(
    results: list[_Outcome],
    subs: Sequence[_SubData],
    master: _Master,
    theta: np.ndarray,
    tol: float,
    multi_cut: bool,
    names: list[str],
    x_master: np.ndarray,
):
    """Cut rows (cols, vals, lower, upper) from the subproblem outcomes; also the sum of the
    phi_k (inf if some subproblem is infeasible) and the theta indices that become bounded."""
    cuts: list[tuple] = []
    n_opt = n_feas = 0
    phi_sum = 0.0
    all_feasible = True
    agg_alpha, agg_cols, agg_vals, agg_at_x = 0.0, [], [], 0.0
    theta0 = master.theta_cols.start
    newly: list[int] = []
    for k, (res, d) in enumerate(zip(results, subs, strict=False)):
        kind = res.kind
        if kind == "optimal":
            phi, alpha, beta = res.phi, res.rhs, res.beta
            assert beta is not None  # an optimal outcome carries its cut
            phi_sum += phi
            if multi_cut:
                # the cut's value at the master point (= phi when solved there; in-out
                # separation solves at another point)
                at_x = alpha - float(beta @ x_master[d.t_cols])
                if (not master.active[k]) or theta[k] < at_x - tol * max(1.0, abs(at_x)):
                    cols, vals, alpha = master.clean_cut(d.t_cols, beta, alpha, normalise=False)
                    safe_at_x = alpha - float(vals @ x_master[cols])
                    # A cut that cleaning made slack at x̄ would return the same point.
                    if master.active[k] and theta[k] >= safe_at_x - tol * max(1.0, abs(at_x)):
                        continue
                    cuts.append((np.append(cols, theta0 + k), np.append(vals, 1.0), alpha, _INF))
                    n_opt += 1
                    newly.append(k)
            else:
                agg_alpha += alpha
                agg_at_x -= float(beta @ x_master[d.t_cols])
                agg_cols.append(d.t_cols)
                agg_vals.append(beta)
        elif kind == "infeasible":
            all_feasible = False
            assert res.beta is not None  # an infeasible outcome carries its ray
            cuts.append((*master.clean_cut(d.t_cols, res.beta, res.rhs, normalise=True), _INF))
            n_feas += 1
        elif kind == "unbounded":
            raise UnboundedModel(
                f"subproblem {names[k]} is unbounded at a master point: the "
                f"whole problem is unbounded (or theta_lower is wrong)"
            )
        else:
            raise NumericalTrouble(
                f"subproblem {names[k]} failed: {res.message}", status=res.message
            )
    if not multi_cut and all_feasible:
        at_x = agg_alpha + agg_at_x
        if (not master.active[0]) or theta[0] < at_x - tol * max(1.0, abs(at_x)):
            cols = np.concatenate(agg_cols) if agg_cols else np.zeros(0, np.int64)
            vals = np.concatenate(agg_vals) if agg_vals else np.zeros(0)
            ucols, inv = np.unique(cols, return_inverse=True)
            uvals = np.bincount(inv, weights=vals, minlength=ucols.size)
            ucols, uvals, agg_alpha = master.clean_cut(ucols, uvals, agg_alpha, normalise=False)
            cuts.append((np.append(ucols, theta0), np.append(uvals, 1.0), agg_alpha, _INF))
            n_opt += 1
            newly.append(0)
    iterate = phi_sum if all_feasible else _INF
    return cuts, n_opt, n_feas, iterate, np.array(newly, dtype=np.int64)


def _progress_bar(progress: bool | str | None, total: int) -> Any:
    from privopt._progress import progress_bar

    return progress_bar(progress, total=total, desc="Benders", unit="it")
