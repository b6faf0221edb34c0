"""Benders decomposition of the mDP LP over a partition of the secret records (spec 000 §2–3).

Master (MP): boundary perturbation vectors y = z_𝒴 and one surrogate w_l per subset with
internal records; rows = mDP constraints among boundary records (edge classes (c), (d)), unit
measure of 𝒴, capped Property 3.2 path cuts, Benders cuts. Subproblem l:
``φ_l(y) = min{c_𝒳ₗᵀx : G_l x ≤ T_l y, E_l x = 1, x ≥ 0}`` (edges touching 𝒳_l, classes (a),
(b)). Cuts in the clean form of §3.2 (no double-counted boundary cost, §3.5-1):

* optimality: ``w_l ≥ λᵀ T_l y + μᵀ1`` with λ ≤ 0 the row duals of the mDP rows and μ those
  of the unit-measure rows (HiGHS: dual = ∂objective/∂rhs);
* feasibility (Sub_l infeasible at ȳ): duals (λ̃, μ̃) of the phase-1 LP
  ``min 1ᵀs + 1ᵀs⁺ + 1ᵀs⁻ : G x − s ≤ T ȳ, E x + s⁺ − s⁻ = 1`` give ``λ̃ᵀ T_l y + μ̃ᵀ1 ≤ 0``.

The master and every subproblem are persistent HiGHS models: cuts are appended with
``addRows`` and only subproblem right-hand sides change (``changeRowsBounds``), so each solve
is a warm-started dual simplex (spec §3.4 implementation notes).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any

import highspy
import numpy as np
import scipy.sparse as sp

from privopt._validation import check_int, check_nonnegative, check_positive
from privopt.errors import InvalidInput, NumericalTrouble, SolverLimit
from privopt.graphs import shortest_paths
from privopt.mdp._highs import new_highs, pass_lp
from privopt.mdp._lpbuild import mdp_rows
from privopt.mdp.partition import Partition, classify, partition
from privopt.mdp.problem import EdgeList, _Block

__all__ = ["solve_benders_block", "BendersModel", "INITIAL_CUTS"]

INITIAL_CUTS = ("all", "same_subset", "none")
_INF = highspy.kHighsInf
_MS = highspy.HighsModelStatus


def _unit_rows(n_rec: int, k: int, n_cols: int, first_col: int = 0) -> sp.csr_array:
    rows = np.repeat(np.arange(n_rec, dtype=np.int64), k)
    cols = first_col + np.arange(n_rec * k, dtype=np.int64)
    return sp.csr_array((np.ones(n_rec * k), (rows, cols)), shape=(n_rec, n_cols))


def _sub_edges(e: EdgeList, mask: np.ndarray) -> EdgeList:
    return EdgeList(e.i[mask], e.j[mask], e.d[mask])


@dataclass
class _Sub:
    """Persistent data of one subproblem Sub_l."""

    label: int
    records: np.ndarray        # internal records 𝒳_l (block-local indices)
    t: sp.csr_array            # T_l: (m_l, |𝒴|K) map of y to the mDP-row right-hand sides
    t_rows: np.ndarray         # rows of T_l with a nonzero (the only bounds that change)
    n_mdp: int                 # number of mDP rows m_l
    cost: np.ndarray           # c_𝒳ₗ (|𝒳_l|K,)
    highs: Any = None          # the subproblem model
    phase1: Any = None         # its phase-1 model (built lazily)
    g: sp.csr_array | None = None
    solves: int = 0
    time_s: float = 0.0


@dataclass
class BendersModel:
    """The decomposition of one block: partition, master layout, subproblems (for tests)."""

    block: _Block
    part: Partition
    y_records: np.ndarray      # boundary records 𝒴 in MP order
    y_pos: np.ndarray          # record → position in 𝒴 (−1 if internal)
    subs: list[_Sub]
    mp_cost: np.ndarray
    mp_rows: sp.csr_array
    mp_lower: np.ndarray
    mp_upper: np.ndarray
    w_lower: np.ndarray
    pool: sp.csr_array         # rows "pool @ (y, w) ≤ 0" added to the master when violated
    n_initial_cuts: int = 0
    sizes: dict[str, Any] = field(default_factory=dict)

    @property
    def n_y(self) -> int:
        return int(self.y_records.size) * self.block.k


def build_model(block: _Block, labels: np.ndarray, *, initial_cuts: str = "all",
                cut_cap: float = 20.0, max_initial_cut_rows: int = 2_000_000) -> BendersModel:
    """Master and subproblem data for ``block`` partitioned by ``labels`` (spec §2.4–3.1)."""
    if initial_cuts not in INITIAL_CUTS:
        raise InvalidInput(f"initial_cuts must be one of {INITIAL_CUTS}, got {initial_cuts!r}")
    part = classify(block, labels)
    k, e, eps = block.k, block.edges, block.epsilon
    y_rec = np.flatnonzero(part.boundary)
    y_pos = np.full(block.n, -1, dtype=np.int64)
    y_pos[y_rec] = np.arange(y_rec.size)
    n_y = y_rec.size * k
    subs_with_x = [l for l in range(part.n_subsets) if part.internal[l].size]
    n_cols = n_y + len(subs_with_x)
    y_col = np.where(y_pos >= 0, y_pos * k, -1)
    # Master rows: unit measure of 𝒴 up front; the mDP rows among boundary records (edge
    # classes (c), (d), spec §2.4) and the Property 3.2 path cuts form a *pool* that the
    # master adds lazily when ȳ violates them (exact: ȳ is only passed to the subproblems
    # once it satisfies every pool row).
    both = part.boundary[e.i] & part.boundary[e.j]
    blocks = [_unit_rows(y_rec.size, k, n_cols)]
    lower = [np.ones(y_rec.size)]
    upper = [np.ones(y_rec.size)]
    pool = [mdp_rows(_sub_edges(e, both), eps, block.n, k, col_of=y_col, n_cols=n_cols)]
    n_init = 0
    if initial_cuts != "none" and y_rec.size > 1 and eps > 0:
        ce = _initial_cut_edges(block, part, y_rec, initial_cuts, cut_cap / eps,
                                max_initial_cut_rows // max(k, 1))
        if len(ce):
            pool.append(mdp_rows(ce, eps, block.n, k, col_of=y_col, n_cols=n_cols))
            n_init = len(ce) * k
    pool_rows = sp.vstack(pool, format="csr")
    mp_rows = sp.vstack(blocks, format="csr")
    obj = block.objective
    w_lower = np.array([obj[part.internal[l]].min(axis=1).sum() for l in subs_with_x])
    mp_cost = np.concatenate([obj[y_rec].ravel(), np.ones(len(subs_with_x))])
    subs = [_build_sub(block, part, l, y_col, n_y) for l in subs_with_x]
    x = np.array([part.internal[l].size for l in range(part.n_subsets)])
    sizes = {**part.sizes(), "mp_vars": n_cols, "mp_pool_rows": int(pool_rows.shape[0]),
             "initial_cut_rows": n_init, "max_sub_vars": int(x.max()) * k}
    return BendersModel(block, part, y_rec, y_pos, subs, mp_cost, mp_rows,
                        np.concatenate(lower), np.concatenate(upper), w_lower, pool_rows,
                        n_init, sizes)


def _initial_cut_edges(block: _Block, part: Partition, y_rec: np.ndarray, mode: str,
                       cutoff: float, max_pairs: int) -> EdgeList:
    """Property 3.2 path constraints between non-adjacent boundary records with ε D ≤ τ
    (spec §3.1: capped, D from the full mDP graph via the C++ Dijkstra kernel)."""
    e = block.edges
    n = block.n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, e.i + 1, 1)
    np.cumsum(indptr, out=indptr)
    g = sp.csr_array((e.d, e.j, indptr), shape=(n, n))
    dist = shortest_paths(g, y_rec, cutoff=cutoff)[:, y_rec]
    a, b = np.nonzero(np.isfinite(dist))
    keep = a != b
    a, b = a[keep], b[keep]
    ia, ib = y_rec[a], y_rec[b]
    adjacent = block.distances[ia, ib] <= _eta_of(block)
    keep = ~adjacent
    if mode == "same_subset":
        keep &= part.labels[ia] == part.labels[ib]
    a, b, ia, ib = a[keep], b[keep], ia[keep], ib[keep]
    dd = dist[a, b]
    if dd.size > max_pairs:  # keep the tightest (shortest) paths
        sel = np.argsort(dd, kind="stable")[:max_pairs]
        ia, ib, dd = ia[sel], ib[sel], dd[sel]
    return EdgeList(ia, ib, dd)


def _eta_of(block: _Block) -> float:
    # η is not stored on the block; recover it from the longest edge (only used to skip pairs
    # that already are mDP edges, whose rows are in the master anyway).
    return float(block.edges.d.max()) if len(block.edges) else -1.0


def _build_sub(block: _Block, part: Partition, label: int, y_col: np.ndarray,
               n_y: int) -> _Sub:
    k, e = block.k, block.edges
    x_rec = part.internal[label]
    x_pos = np.full(block.n, -1, dtype=np.int64)
    x_pos[x_rec] = np.arange(x_rec.size)
    touch = (x_pos[e.i] >= 0) | (x_pos[e.j] >= 0)
    se = _sub_edges(e, touch)
    n_x = x_rec.size * k
    x_col = np.where(x_pos >= 0, x_pos * k, -1)
    g = mdp_rows(se, block.epsilon, block.n, k, col_of=x_col, n_cols=n_x)
    # T_l y is the negated y-part of the same rows (moved to the right-hand side).
    yc = np.where(x_pos >= 0, -1, y_col)
    t = -mdp_rows(se, block.epsilon, block.n, k, col_of=yc, n_cols=n_y)
    t = sp.csr_array(t)
    t.eliminate_zeros()
    t_rows = np.flatnonzero(np.diff(t.indptr) > 0).astype(np.int32)
    sub = _Sub(label, x_rec, t, t_rows, int(g.shape[0]), block.objective[x_rec].ravel(), g=g)
    return sub


# ----------------------------------------------------------------------------- solving
def _sub_highs(sub: _Sub, lp_method: str) -> Any:
    h = new_highs(method="simplex" if lp_method == "choose" else lp_method, presolve=False,
                  threads=1)
    a = sp.vstack([sub.g, _unit_rows(sub.records.size, sub.cost.size // max(sub.records.size, 1),
                                     sub.cost.size)], format="csr")
    lo = np.concatenate([np.full(sub.n_mdp, -_INF), np.ones(sub.records.size)])
    up = np.concatenate([np.zeros(sub.n_mdp), np.ones(sub.records.size)])
    pass_lp(h, sub.cost, a, lo, up)
    return h


def _phase1_highs(sub: _Sub) -> Any:
    nx, m, r = sub.cost.size, sub.n_mdp, sub.records.size
    k = nx // max(r, 1)
    h = new_highs(method="simplex", presolve=False, threads=1)
    g = sp.hstack([sub.g, -sp.identity(m, format="csr"), sp.csr_array((m, 2 * r))])
    u = _unit_rows(r, k, nx)
    eq = sp.hstack([u, sp.csr_array((r, m)), sp.identity(r, format="csr"),
                    -sp.identity(r, format="csr")])
    a = sp.vstack([g, eq], format="csr")
    cost = np.concatenate([np.zeros(nx), np.ones(m + 2 * r)])
    lo = np.concatenate([np.full(m, -_INF), np.ones(r)])
    up = np.concatenate([np.zeros(m), np.ones(r)])
    pass_lp(h, cost, a, lo, up)
    return h


def _solve_sub(sub: _Sub, rhs: np.ndarray, lp_method: str) -> dict[str, Any]:
    """Solve Sub_l at right-hand side ``rhs = T_l ȳ`` (only rows in t_rows are nonzero)."""
    start = time.perf_counter()
    if sub.highs is None:
        sub.highs = _sub_highs(sub, lp_method)
    h = sub.highs
    rows = sub.t_rows
    if rows.size:
        h.changeRowsBounds(rows.size, rows, np.full(rows.size, -_INF), rhs[rows])
    h.run()
    status = h.getModelStatus()
    if status == _MS.kOptimal:
        sol = h.getSolution()
        duals = np.asarray(sol.row_dual)
        out = {"feasible": True, "x": np.asarray(sol.col_value),
               "value": float(h.getInfo().objective_function_value),
               "lam": duals[:sub.n_mdp], "mu": duals[sub.n_mdp:]}
    elif status in (_MS.kInfeasible, _MS.kUnboundedOrInfeasible):
        if sub.phase1 is None:
            sub.phase1 = _phase1_highs(sub)
        p = sub.phase1
        if rows.size:
            p.changeRowsBounds(rows.size, rows, np.full(rows.size, -_INF), rhs[rows])
        p.run()
        if p.getModelStatus() != _MS.kOptimal:
            raise NumericalTrouble(f"phase-1 LP of subproblem {sub.label}: "
                                   f"{p.modelStatusToString(p.getModelStatus())}")
        duals = np.asarray(p.getSolution().row_dual)
        out = {"feasible": False, "value": float(p.getInfo().objective_function_value),
               "lam": duals[:sub.n_mdp], "mu": duals[sub.n_mdp:]}
    else:
        raise NumericalTrouble(f"subproblem {sub.label}: HiGHS returned "
                               f"{h.modelStatusToString(status)}")
    sub.solves += 1
    out["time_s"] = time.perf_counter() - start
    sub.time_s += out["time_s"]
    return out


def _cut_row(sub: _Sub, res: dict[str, Any], w_col: int | None
             ) -> tuple[np.ndarray, np.ndarray, float]:
    """Cut ``(λᵀT) y [− w] ≤ −μᵀ1`` as (cols, vals, upper); tiny coefficients are dropped
    in the valid direction (a negative one moves to the bound since 0 ≤ y ≤ 1)."""
    coef = sub.t.T @ res["lam"]
    cols = np.flatnonzero(coef)
    vals = coef[cols]
    upper = -float(np.sum(res["mu"]))
    scale = max(1.0, float(np.abs(vals).max()) if vals.size else 1.0)
    tiny = np.abs(vals) < 1e-11 * scale
    if np.any(tiny):
        upper -= float(np.sum(np.minimum(vals[tiny], 0.0)))
        cols, vals = cols[~tiny], vals[~tiny]
    if w_col is not None:
        cols = np.append(cols, w_col)
        vals = np.append(vals, -1.0)
    return cols.astype(np.int32), vals, upper


def solve_benders_block(block: _Block, *, m: int = 25, partitioner: str = "k-m-dv",
                        labels: np.ndarray | None = None, seed: int = 0, n_init: int = 1,
                        initial_cuts: str = "all", cut_cap: float = 20.0,
                        max_initial_cut_rows: int = 2_000_000, rel_gap: float = 1e-4,
                        abs_gap: float = 0.0, max_iterations: int = 5000,
                        time_limit: float | None = None, executor: Executor | None = None,
                        lp_method: str = "choose", threads: int | None = None,
                        progress: Any = None, scale_m: bool = True, n_total: int | None = None,
                        ) -> tuple[np.ndarray, float, dict[str, Any], list[dict[str, Any]]]:
    """Benders decomposition (spec §3.4) of one connected block.

    Parameters
    ----------
    m : number of subsets M (scaled to ``max(1, round(M·n/N))`` for a component of n of N
        records when ``scale_m`` and ``n_total`` are given, spec §7-9).
    partitioner : "k-m-dv" (default), "k-m-rec", "k-m-adj", "bsc"; or explicit ``labels``.
    initial_cuts : "all" (default), "same_subset" or "none" — Property 3.2 cuts, skipping
        pairs with ε D > ``cut_cap`` and keeping at most ``max_initial_cut_rows`` rows.
        ``cut_cap`` defaults to 20 (coefficients ≤ e^20 ≈ 4.9e8, the largest edge ratio at
        the paper's ε = 10, η = 2): with the spec's τ = 30 (e^30 ≈ 1e13) HiGHS 1.15 reports
        the master "Unbounded" (measured).
    rel_gap, abs_gap : stop when (UB* − LB) ≤ rel_gap·|UB*| or ≤ abs_gap (paper: abs 0.01).
    max_iterations, time_limit : limits; on a limit :class:`SolverLimit` is raised with
        ``best`` = (Z, LB, info, history) when an incumbent exists.
    executor : a ``concurrent.futures`` executor for the subproblems: None = serial;
        a ``ThreadPoolExecutor`` keeps persistent warm-started models (HiGHS releases the
        GIL); any other executor (processes, ``dask.distributed.Client.get_executor()``)
        receives the subproblem data and solves from scratch.

    Returns
    -------
    (Z (n, K) incumbent, lower bound, info dict, history list)
    """
    check_positive("rel_gap", rel_gap) if rel_gap else None
    check_nonnegative("abs_gap", abs_gap)
    max_iterations = check_int("max_iterations", max_iterations, minimum=1)
    start = time.perf_counter()
    if labels is None:
        mm = check_int("m", m, minimum=1)
        if scale_m and n_total:
            mm = max(1, round(mm * block.n / n_total))
        labels = partition(block, mm, partitioner, seed=seed, n_init=n_init)
    model = build_model(block, labels, initial_cuts=initial_cuts, cut_cap=cut_cap,
                        max_initial_cut_rows=max_initial_cut_rows)
    setup_s = time.perf_counter() - start
    k, n_y = block.k, model.n_y
    mp = new_highs(method="simplex" if lp_method == "choose" else lp_method,
                   threads=threads, presolve=False)
    n_w = len(model.subs)
    col_lo = np.concatenate([np.zeros(n_y), model.w_lower])
    pass_lp(mp, model.mp_cost, model.mp_rows, model.mp_lower, model.mp_upper, col_lo, _INF)
    from concurrent.futures import ThreadPoolExecutor

    stateful = executor is None or isinstance(executor, ThreadPoolExecutor)
    light = [] if stateful else [replace(sub, highs=None, phase1=None) for sub in model.subs]
    pool_active = np.zeros(model.pool.shape[0], dtype=bool)
    best_ub, best_z, lb = math.inf, None, -math.inf
    history: list[dict[str, Any]] = []
    n_cuts = 0
    converged = False
    for it in range(1, max_iterations + 1):
        t0 = time.perf_counter()
        sol, value = _solve_master(mp, model.pool, pool_active)
        lb = max(lb, value)
        ybar, wbar = sol[:n_y], sol[n_y:]
        t1 = time.perf_counter()
        rhs = [sub.t @ ybar for sub in model.subs]
        if executor is None:
            results = [_solve_sub(s, r, lp_method) for s, r in zip(model.subs, rhs)]
        elif stateful:
            results = list(executor.map(_solve_sub, model.subs, rhs,
                                        [lp_method] * len(model.subs)))
        else:
            # Process / Dask executors: ship the subproblem data (no live HiGHS objects);
            # each worker builds its model afresh (no warm start across iterations).
            results = list(executor.map(_solve_sub, light, rhs, [lp_method] * len(light)))
        t2 = time.perf_counter()
        all_feasible = all(r["feasible"] for r in results)
        cut_cols, cut_vals, cut_up, cut_ptr = [], [], [], [0]
        n_feas = n_opt = 0
        for t, (sub, res) in enumerate(zip(model.subs, results)):
            if not res["feasible"]:
                cols, vals, up = _cut_row(sub, res, None)
                n_feas += 1
            elif wbar[t] < res["value"] - 1e-9 * max(1.0, abs(res["value"])):
                cols, vals, up = _cut_row(sub, res, n_y + t)
                n_opt += 1
            else:
                continue
            cut_cols.append(cols)
            cut_vals.append(vals)
            cut_up.append(up)
            cut_ptr.append(cut_ptr[-1] + cols.size)
        ub = math.nan
        if all_feasible:
            ub = float(model.mp_cost[:n_y] @ ybar) + sum(r["value"] for r in results)
            if ub < best_ub:
                best_ub = ub
                best_z = _assemble(model, ybar, results)
        gap = best_ub - lb
        rec = {"iteration": it, "lb": lb, "ub": ub, "best_ub": best_ub,
               "master_time": t1 - t0, "sub_time": t2 - t1,
               "sub_time_max": max((r["time_s"] for r in results), default=0.0),
               "feasibility_cuts": n_feas, "optimality_cuts": n_opt,
               "master_rows": int(mp.getNumRow())}
        history.append(rec)
        if progress is not None:
            progress(rec)
        if math.isfinite(best_ub) and (gap <= rel_gap * abs(best_ub) or gap <= abs_gap):
            converged = True
            break
        if len(cut_up) == 0:
            # No cut and not converged can only be a tolerance artefact: the incumbent is
            # within solver tolerance of the master bound.
            converged = math.isfinite(best_ub)
            break
        n_cuts += len(cut_up)
        mp.addRows(len(cut_up), np.full(len(cut_up), -_INF), np.array(cut_up),
                   int(cut_ptr[-1]), np.array(cut_ptr[:-1], dtype=np.int32),
                   np.concatenate(cut_cols), np.concatenate(cut_vals))
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
    info = {"records": block.n, "iterations": len(history), "setup_s": setup_s,
            "time_s": time.perf_counter() - start,
            "master_time_s": sum(h["master_time"] for h in history),
            "sub_time_s": sum(h["sub_time"] for h in history),
            "sub_time_parallel_s": sum(h["sub_time_max"] for h in history),
            "cuts": n_cuts, "pool_rows_used": int(pool_active.sum()),
            "lower_bound": lb, "upper_bound": best_ub,
            "converged": converged, **model.sizes}
    if not converged:
        best = None if best_z is None else (best_z, lb, info, history)
        raise SolverLimit(f"Benders stopped after {len(history)} iterations with gap "
                          f"{best_ub - lb:.3g} (LB {lb:.10g}, UB {best_ub:.10g})",
                          status="limit", best=best)
    return best_z, lb, info, history


def _solve_master(mp: Any, pool: sp.csr_array, active: np.ndarray,
                  tol: float = 1e-10) -> tuple[np.ndarray, float]:
    """Solve the master, adding violated pool rows and re-solving (warm) until ȳ satisfies
    every pool row; returns (solution, objective)."""
    while True:
        mp.run()
        st = mp.getModelStatus()
        if st != _MS.kOptimal:
            # A warm start can derail on badly scaled cut rows; retry once from scratch.
            mp.clearSolver()
            mp.run()
            st = mp.getModelStatus()
        if st != _MS.kOptimal:
            raise NumericalTrouble(f"Benders master: HiGHS returned {mp.modelStatusToString(st)}")
        sol = np.asarray(mp.getSolution().col_value)
        if pool.shape[0] == 0:
            break
        new = np.flatnonzero((pool @ sol > tol) & ~active)
        if new.size == 0:
            break
        active[new] = True
        add = pool[new]
        mp.addRows(new.size, np.full(new.size, -_INF), np.zeros(new.size), add.nnz,
                   add.indptr[:-1].astype(np.int32), add.indices.astype(np.int32), add.data)
    return sol, float(mp.getInfo().objective_function_value)


def _assemble(model: BendersModel, ybar: np.ndarray, results: list[dict[str, Any]]
              ) -> np.ndarray:
    k = model.block.k
    z = np.zeros((model.block.n, k))
    z[model.y_records] = ybar.reshape(-1, k)
    for sub, res in zip(model.subs, results):
        z[sub.records] = res["x"].reshape(-1, k)
    return z
