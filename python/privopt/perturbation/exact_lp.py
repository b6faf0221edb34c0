"""The exact LP of one mDP block (spec 000 §1.3): monolithic, or by lazy row and column
generation with a rigorous bound. Used by :func:`privopt.mdp.solve` and by the Benders
decomposition (a block whose records are all boundary records is solved here).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt._validation import check_instance
from privopt.certify import proven_relative_gap
from privopt.errors import InvalidInput, NumericalTrouble, SolverLimit
from privopt.graphs import shortest_paths
from privopt.lp import (
    LPSolution,
    Model,
    RowGenProblem,
    RowGenResult,
    RowGenSolver,
    SimplexGroups,
    safe_dual_bound,
)
from privopt.perturbation._separation import closed_edges, violated_rows
from privopt.perturbation.lift import lift_with_arcs
from privopt.perturbation.lp_rows import mdp_rows, unit_rows
from privopt.perturbation.matrix import repair
from privopt.perturbation.problem import EdgeList, MatrixBlock

__all__ = ["build_lp", "solve_block_lp", "solve_block_rowgen"]


def _run(model: Model, *, what: str) -> LPSolution:
    # Every mDP LP (and every restricted one of row generation) is feasible (the uniform Z)
    # and bounded (z in the simplex): "infeasible" or "unbounded" is a numerical failure,
    # retried with the fallbacks. HiGHS's presolve called a 2-record LP with coefficients
    # e^23 "Unbounded"; without presolve (the first fallback) it solves.
    return model.solve(what=what, feasible=True)


def build_lp(block: MatrixBlock) -> tuple[np.ndarray, sp.csr_array, np.ndarray, np.ndarray]:
    """Monolithic LP of a block (spec §1.3): returns (c, A, row_lower, row_upper) with
    |E|·K mDP rows (≤ 0) followed by n unit-measure rows (= 1), variables z row-major."""
    check_instance("block", block, MatrixBlock)
    n, k = block.n, block.k
    a = sp.vstack([mdp_rows(block.edges, block.epsilon, n, k), unit_rows(n, k)], format="csr")
    m = len(block.edges) * k
    lower = np.concatenate([np.full(m, -np.inf), np.ones(n)])
    upper = np.concatenate([np.zeros(m), np.ones(n)])
    return block.objective.ravel(), a, lower, upper


def solve_block_lp(
    block: MatrixBlock, *, lp_method: str, threads: int | None, time_limit: float | None
) -> tuple[np.ndarray, float, dict[str, Any]]:
    """One component as a single LP with every mDP row ("plain HiGHS"): (Z, safe dual bound,
    info)."""
    t0 = time.perf_counter()
    c, a, lo, up = build_lp(block)
    build = time.perf_counter() - t0
    model = Model.configured(method=lp_method, threads=threads, time_limit=time_limit, tol=1e-9)
    model.load(c, a, lo, up)
    sol = _run(model, what=f"mDP LP ({block.n} records)")
    z = sol.x.reshape(block.n, block.k)
    # Rigorous bound from HiGHS's duals (unit rows are the last n here).
    m = a.shape[0] - block.n
    lower = _safe_lower_bound(
        c,
        sp.vstack([a[m:], a[:m]], format="csr"),
        block.n,
        np.concatenate([sol.row_duals[m:], sol.row_duals[:m]]),
    )
    return (
        z,
        lower,
        {
            "records": block.n,
            "rows": int(a.shape[0]),
            "vars": int(a.shape[1]),
            "build_s": build,
            "solve_s": sol.solve_time,
            "iterations": sol.iterations,
            "relaxation_objective": sol.objective,
        },
    )


def _safe_lower_bound(c: np.ndarray, a: sp.csr_array, n_unit: int, row_dual: np.ndarray) -> float:
    """Rigorous lower bound on the *full* mDP LP of a block from any row multipliers.

    Rows ``0..n_unit-1`` of ``a`` are the unit-measure rows (= 1), the rest mDP rows (≤ 0);
    rows of the full LP that are not in ``a`` take multiplier 0. For every feasible Z,
    ``0 ≤ z ≤ 1`` (row sums are 1), so with λ the unit-row multipliers, μ = min(y, 0) the mDP
    ones (sign-corrected: μ·row ≥ 0) and r = c − Aᵀ(λ, μ),
    ``cᵀz = Σλ + Σ μ·row + rᵀz ≥ Σλ + Σ_j min(r_j, 0)``
    (the safe dual bound of Neumaier & Shcherbina, 2004). It does not trust the solver's
    optimality claim: wrong-sign duals and dual infeasibilities only loosen it.
    """

    m = a.shape[0] - n_unit
    # Dropping every mDP row leaves each record on its cheapest output: Σ_i min_k c_ik is a
    # bound too (the multipliers λ_i = min_k c_ik, μ = 0), and the better one where εd is so
    # large (e^23) that the solver's duals certify nothing.
    k = c.size // max(n_unit, 1)
    trivial = float(np.sum(c.reshape(n_unit, k).min(axis=1))) if n_unit else 0.0
    # Unit rows are equalities (= 1), mDP rows ≤ 0; every z lies in [0, 1].
    return max(trivial, _safe_dual_bound_full(c, a, n_unit, m, row_dual))


def _safe_dual_bound_full(
    c: np.ndarray, a: sp.csr_array, n_unit: int, m: int, row_dual: np.ndarray
) -> float:
    return safe_dual_bound(
        c,
        a,
        np.concatenate([np.ones(n_unit), np.full(m, -np.inf)]),
        np.concatenate([np.ones(n_unit), np.zeros(m)]),
        0.0,
        1.0,
        row_dual,
    )


class _Rows:
    """The mDP rows row generation works with: the block's shortest-path-closed edges
    (:func:`privopt.perturbation._separation.closed_edges`; the LP over them has the full LP's
    feasible
    set) with their row scales e^{−εd}. Row ``e·K + k`` is ``e^{−εd_e} z_ik − z_jk ≤ 0`` for
    edge e = (i, j) of this list."""

    def __init__(self, block: MatrixBlock) -> None:
        keep = closed_edges(block.edges, block.distances)
        e = block.edges
        self.edges = EdgeList(e.i[keep], e.j[keep], e.d[keep])
        self.scale = np.exp(-block.epsilon * self.edges.d)
        self.k = block.k
        self.epsilon = block.epsilon

    @property
    def count(self) -> int:
        """Rows of the closed LP (|E'|·K)."""
        return len(self.edges) * self.k

    def matrix(
        self, rows: np.ndarray, pos: np.ndarray | None, n_cols: int, *, scaled: bool = True
    ) -> sp.csr_array:
        """Rows ``rows`` as CSR over ``n_cols`` columns: the model's (``pos[i·K + k]`` the
        model index of z_ik) or, with ``pos=None``, all z_ik in flat order i·K + k; scaled
        (largest coefficient 1) or as in the paper (``z_ik − e^{εd} z_jk ≤ 0``)."""
        e, kk = np.divmod(rows, self.k)
        cols = np.empty(2 * rows.size, dtype=np.int64)
        cols[0::2] = self.edges.i[e] * self.k + kk
        cols[1::2] = self.edges.j[e] * self.k + kk
        if pos is not None:
            cols = pos[cols]
        vals = np.empty(2 * rows.size)
        vals[0::2] = self.scale[e] if scaled else 1.0
        vals[1::2] = -1.0 if scaled else -1.0 / self.scale[e]
        indptr = np.arange(0, 2 * rows.size + 1, 2, dtype=np.int64)
        return sp.csr_array((vals, cols, indptr), shape=(rows.size, n_cols))

    def variables(self, rows: np.ndarray) -> np.ndarray:
        """Flat indices i·K + k of the variables the rows ``rows`` mention."""
        e, kk = np.divmod(rows, self.k)
        return np.concatenate([self.edges.i[e] * self.k + kk, self.edges.j[e] * self.k + kk])

    def dag(self, block: MatrixBlock) -> np.ndarray:
        """Flat indices of the rows expected to bind: for each output k, the arcs of the
        shortest-path DAG of the mDP graph rooted at the record cheapest for k (an optimal
        column decays away from its output along such arcs, z_ik = e^{εd} z_jk)."""
        cost = block.cost if block.cost is not None else block.objective
        uniq, inv = np.unique(np.argmin(cost, axis=0), return_inverse=True)
        dist = shortest_paths(block.graph(), uniq)  # (n_roots, n), finite in a component
        e, k = self.edges, self.k
        di, dj = dist[inv][:, e.i], dist[inv][:, e.j]  # (K, |E'|)
        kk, ee = np.nonzero(np.abs(di + e.d[None, :] - dj) <= 1e-12 * np.maximum(1.0, dj))
        return np.sort(ee * k + kk)

    def cascade(self, z: np.ndarray, active: np.ndarray, tol: float) -> np.ndarray:
        """Rows that the violations of ``z`` will bring in over the next rounds, at once.

        Every column of a feasible Z satisfies ``z_i ≥ e^{−ε d_ji} z_j`` on each edge, hence
        ``z_i ≥ max_j e^{−ε D_ij} z_j`` (Property 3.2); the least such lift of each column
        (:func:`privopt.perturbation.lift.lift_with_arcs`) names, for every entry it raises by more
        than ``tol``, the arc its value came along: that arc's row ``z_pk ≤ e^{εd} z_ik`` is
        violated by the same amount where p is a source, and by the lifted one once the row
        before it binds. Adding the violated rows alone lets the LP answer one edge at a time
        (road N = 500, K = 100, ε = 2: 12 rounds and 61,685 rows; with the cascade 7 and
        36,500)."""
        lifted, _, arc = lift_with_arcs(z, self.edges, self.epsilon)
        ii, kk = np.nonzero((lifted - np.clip(z, 0.0, None) > tol) & (arc >= 0))
        rows = arc[ii, kk] * self.k + kk
        return np.unique(rows[~active[rows]])


class _Separation:
    """The separation oracle of one block's row generation on :mod:`privopt.lp.rowgen`: the
    closed-edge rows a point violates by more than ``tol`` (scaled), with the rows their
    repair cascades into (``cascade``), as rows over the block's N·K columns. It records the
    rows in the order the model receives them (after the engine's n unit-measure rows), which
    the unscaled polish and the next ε's warm start rely on."""

    def __init__(self, rows: _Rows, n: int, tol: float, cascade: bool) -> None:
        self.lp, self.n, self.k = rows, n, rows.k
        self.tol, self.cascade = tol, cascade
        self.active = np.zeros(rows.count, dtype=bool)
        self._order: list[np.ndarray] = []

    def record(self, ids: np.ndarray) -> None:
        """Rows entering the model (in this order)."""
        self.active[ids] = True
        self._order.append(ids)

    @property
    def model_rows(self) -> np.ndarray:
        """Flat ids of the mDP rows in the model, in model order."""
        return np.concatenate(self._order) if self._order else np.zeros(0, dtype=np.int64)

    def matrix(self, ids: np.ndarray) -> sp.csr_array:
        """Rows ``ids`` (scaled) over the block's columns z_ik (flat i·K + k)."""
        return self.lp.matrix(ids, None, self.n * self.k)

    def find(self, z: np.ndarray, cascade: bool) -> np.ndarray:
        """Violated rows of ``z`` (n, K) not yet in the model, with their cascade."""
        new = violated_rows(z, self.lp.edges, self.lp.scale, self.active, self.tol)
        if new.size and cascade:
            new = np.union1d(new, self.lp.cascade(z, self.active, self.tol))
        return new

    def __call__(self, x: np.ndarray, y: np.ndarray) -> tuple[sp.csr_array, float, float]:
        new = self.find(x.reshape(self.n, self.k), self.cascade)
        self.record(new)
        return self.matrix(new), -np.inf, 0.0


def solve_block_rowgen(
    block: MatrixBlock,
    *,
    lp_method: str,
    threads: int | None,
    time_limit: float | None,
    tol: float = 1e-10,
    initial_rows: str = "none",
    polish: bool | str = "auto",
    target_gap: float = 1e-5,
    cascade: bool = True,
    columns: str = "generate",
    warm: dict[str, Any] | None = None,
) -> tuple[np.ndarray, float, dict[str, Any]]:
    """Exact LP by lazy row and column generation with a rigorous bound (beyond the paper),
    on the shared engine :class:`privopt.lp.rowgen.RowGenSolver`.

    The model holds the unit-measure rows (the engine's simplex groups: one per record) and
    the mDP rows found so far, each divided by its largest coefficient e^{εd}
    (``z_ik e^{−εd} − z_jk ≤ 0``). Scaling matters for the *dual*: HiGHS's optimality test
    then sees a dual of the size that moves the objective; unscaled, rows with coefficients up
    to e^{εη} (e^20 at the paper's settings) keep duals of 1e-10 with the wrong sign that
    HiGHS accepts yet that are worth 1e-4 of the objective. Rows come from the
    shortest-path-closed edges only (:class:`_Rows`): the others are implied.

    1. Solve with the initial rows (``"none"``: only unit-measure rows, default; ``"dag"``:
       also the shortest-path-DAG rows), add every row violated by more than ``tol`` on its
       scaled form — the violation in units of the row's largest entry, the scale HiGHS's
       primal tolerance (1e-10) holds the model's rows to — with the rows their repair will
       cascade into (``cascade=True``, :class:`_Separation`), re-solve warm (dual simplex,
       Devex pricing), until none is violated. A row between records so far apart that
       e^{−εd} < ``tol`` is never violated by more than ``tol``: the entries it would hold up
       are below the LP's resolution, and the repair's lift supplies them at their exact
       decay.
    2. Bound: the engine's certified bound from the model's duals, valid for the full LP
       (rows not in the model take multiplier 0; every column, absent ones too, is covered;
       the unit-measure rows are kept as constraints: ``Σ_i min_k (c − Aᵀμ)_ik``), or
       Σ_i min_k c_ik where larger.
    3. Release: scaled rows and the unseparated tiny violations leave Z slightly infeasible,
       so it is repaired (:func:`privopt.perturbation.matrix.repair` on the closed edges, provably
       ε-mDP: the cheaper of mixing with a partner and lifting onto the cone first).
    4. Polish (``polish=True``, or ``"auto"`` when the certified gap — repaired loss vs the
       bound — exceeds ``target_gap``): the same rows unscaled are re-solved once from the
       final basis; rows it violates send the loop back to step 1; the better of the two
       repaired matrices is released.

    Columns (``columns="generate"``, default): the model also holds only the variables z_ik
    that its rows mention or that priced in (reduced cost ``p_i c_ik − u_i < 0``, u the
    unit-row duals); ``columns="all"`` passes every variable from the start.

    Returns (Z, rigorous lower bound, info); the released loss minus the bound is the
    certified gap (``PerturbationMatrix.relative_gap``).
    """
    if initial_rows not in ("dag", "none"):
        raise InvalidInput(f"initial_rows must be 'dag' or 'none', got {initial_rows!r}")
    if columns not in ("generate", "all"):
        raise InvalidInput(f"columns must be 'generate' or 'all', got {columns!r}")
    start = time.perf_counter()
    rows = _Rows(block)
    sep = _Separation(rows, block.n, tol, cascade)
    solver = _start(block, sep, initial_rows, columns, warm, lp_method, threads)
    build = time.perf_counter() - start
    deadline = None if time_limit is None else start + time_limit
    res = _rounds(solver, block, deadline, target_gap)
    z, alpha, loss = _release(block, sep, res)
    lower = res.lower_bound
    polishes: list[dict[str, Any]] = []
    if polish is True or (polish == "auto" and _gap(loss, lower) > target_gap):
        z, alpha, loss, res = _polished(
            solver, sep, block, res, (z, alpha, loss), polishes, deadline, threads, target_gap
        )
        lower = max(lower, res.lower_bound)
    info = {
        "records": block.n,
        "rows": int(res.n_rows),
        "full_rows": len(block.edges) * block.k + block.n,
        "closed_rows": rows.count + block.n,
        "vars": block.n * block.k,
        "model_vars": int(solver.columns.size),
        "build_s": build,
        "solve_s": time.perf_counter() - start - build,
        "iterations": int(sum(r["iterations"] for r in res.rounds + polishes)),
        "rounds": res.rounds,
        "polish": polishes,
        "relaxation_objective": res.objective,
        "lower_bound": lower,
        "repair_alpha": alpha,
        "certified_gap": _gap(loss, lower),
    }
    if warm is not None:
        # Hand the row set and basis on to the next ε (kept out of the saved history).
        warm.update(rows=sep.model_rows, basis=solver.basis())
    return z, lower, info


def _gap(loss: float, lower: float) -> float:
    """The proven relative gap of the certification rule (docs/certification.md)."""
    return proven_relative_gap(loss, lower)


def _start(
    block: MatrixBlock,
    sep: _Separation,
    initial_rows: str,
    columns: str,
    warm: dict[str, Any] | None,
    lp_method: str,
    threads: int | None,
) -> RowGenSolver:
    """The engine on the block's LP: the unit-measure rows as simplex groups, the initial
    mDP rows (after the previous ε's ones in their model order when warm, so that its final
    basis maps row by row) and columns."""
    n, k = block.n, block.k
    first = sep.lp.dag(block) if initial_rows == "dag" else np.zeros(0, dtype=np.int64)
    if columns == "all":
        cols = np.arange(n * k, dtype=np.int64)
    else:  # the unit rows alone put each record on its cheapest output
        cols = np.arange(n, dtype=np.int64) * k + np.argmin(block.objective, axis=1)
    basis = None
    if warm is not None and "rows" in warm:
        prev = np.asarray(warm["rows"], dtype=np.int64)
        first = np.concatenate([prev, np.setdiff1d(first, prev)])
        basis = warm.get("basis")
    sep.record(first)
    prob = RowGenProblem()
    prob.add_block(
        block.objective.ravel(),
        rows=sep.matrix(first) if first.size else None,
        row_lower=-np.inf,
        row_upper=0.0,
        separate=sep,
        initial_columns=cols,
        simplex_groups=SimplexGroups.blocks(n, k),  # row i of Z is a distribution
        name=f"mDP block ({n} records)",
    )
    # Dual simplex by default: rounds after the first re-solve from the previous basis.
    # Every restricted model is feasible (the unit rows alone) and bounded: "infeasible" or
    # "unbounded" is a numerical failure, retried with the fallbacks (HiGHS's presolve called
    # a 2-record LP with coefficients e^23 "Unbounded"; without presolve it solves).
    return RowGenSolver(
        prob,
        method="simplex" if lp_method == "choose" else lp_method,
        threads=threads,
        # HiGHS's smallest primal tolerance, on rows scaled to largest coefficient 1.
        highs_options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-9},
        feasible=True,
        basis=basis,
    )


def _rounds(
    solver: RowGenSolver, block: MatrixBlock, deadline: float | None, rel_gap: float
) -> RowGenResult:
    """Rounds until nothing is added (the claim is made on the released matrix, by the
    caller: no warning here)."""
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        raise SolverLimit("mDP row generation: time limit reached", status="limit")
    try:
        return solver.run(
            rel_gap=rel_gap,
            time_limit=left,
            desc=f"mDP row generation ({block.n} records)",
            warn=False,
        )
    except SolverLimit as exc:
        if exc.best is not None:  # the last solved round, its bound certified: the caller
            return exc.best  # repairs it and the certificate states the gap left open
        raise SolverLimit(f"mDP row generation: {exc}", status="limit") from None


def _release(
    block: MatrixBlock, sep: _Separation, res: RowGenResult
) -> tuple[np.ndarray, float, float]:
    """The repaired matrix of a row-generation result with its mixing weight and loss."""
    z, alpha = _repaired(block, sep, res.x[0].reshape(block.n, block.k))
    return z, alpha, float(np.dot(block.objective.ravel(), z.ravel()))


def _repaired(block: MatrixBlock, sep: _Separation, z: np.ndarray) -> tuple[np.ndarray, float]:
    return repair(z, sep.lp.edges, sep.lp.epsilon, objective=block.objective, check_input=False)


def _polish_model(
    solver: RowGenSolver, sep: _Separation, block: MatrixBlock, threads: int | None
) -> Model:
    """The model's rows unscaled over its columns, in its row order, with its final basis:
    the re-solve meets each row to 1e-9 absolute (fewer repairs)."""
    cols = solver.columns
    n, k = block.n, block.k
    pos = np.full(n * k, -1, dtype=np.int64)
    pos[cols] = np.arange(cols.size)
    unit = sp.csr_array(
        (np.ones(cols.size), cols // k, np.arange(cols.size + 1)), shape=(cols.size, n)
    ).T
    ids = sep.model_rows
    model = Model.configured(method="simplex", threads=threads, tol=1e-9)
    model.load(
        block.objective.ravel()[cols],
        sp.vstack([unit, sep.lp.matrix(ids, pos, cols.size, scaled=False)]),
        np.concatenate([np.ones(n), np.full(ids.size, -np.inf)]),
        np.concatenate([np.ones(n), np.zeros(ids.size)]),
    )
    model.use_devex()  # as the engine's rounds
    model.set_basis(solver.basis().highs_basis)
    return model


def _polished(
    solver: RowGenSolver,
    sep: _Separation,
    block: MatrixBlock,
    res: RowGenResult,
    best: tuple[np.ndarray, float, float],
    polishes: list[dict[str, Any]],
    deadline: float | None,
    threads: int | None,
    target_gap: float,
) -> tuple[np.ndarray, float, float, RowGenResult]:
    """One polish (step 4): the unscaled re-solve, back to the rounds when it leaves the
    model's rows; the cheaper repaired matrix of the two is kept."""
    t0 = time.perf_counter()
    left = None if deadline is None else deadline - t0
    if left is not None and left <= 0:  # no time to polish: keep the repaired solution
        polishes.append({"failed": "time limit reached", "solve_s": 0.0, "iterations": 0})
        return (*best, res)
    try:
        polish_model = _polish_model(solver, sep, block, threads)
        if left is not None:
            polish_model.set_option("time_limit", float(left))
        solp = _run(polish_model, what=f"mDP LP ({block.n} records, polish)")
    except (NumericalTrouble, SolverLimit) as exc:  # keep the repaired scaled solution
        polishes.append({"failed": str(exc), "solve_s": time.perf_counter() - t0, "iterations": 0})
        return (*best, res)
    flat = np.zeros(block.n * block.k)
    flat[solver.columns] = solp.x
    zp = flat.reshape(block.n, block.k)
    new = sep.find(zp, cascade=False)
    # absent z_ik are in no model row but their unit row: reduced cost c_ik − u_i
    reduced = block.objective - solp.row_duals[: block.n, None]
    priced = np.flatnonzero(reduced.ravel() < 0.0)
    priced = priced[~np.isin(priced, solver.columns)]
    polishes.append(
        {
            "objective": solp.objective,
            "iterations": solp.iterations,
            "added": int(new.size),
            "solve_s": time.perf_counter() - t0,
        }
    )
    if new.size or priced.size:
        # The polished point leaves the model's rows: back to the rounds (one polish only).
        solver.add_columns(0, priced)
        sep.record(new)
        solver.add_rows(0, sep.matrix(new), -np.inf, 0.0)
        res = _rounds(solver, block, deadline, target_gap)
        z, alpha, loss = _release(block, sep, res)
        return (z, alpha, loss, res) if loss < best[2] else (*best, res)
    zp, alpha_p = _repaired(block, sep, zp)
    loss_p = float(np.dot(block.objective.ravel(), zp.ravel()))
    return (zp, alpha_p, loss_p, res) if loss_p < best[2] else (*best, res)
