"""The exact LP of one mDP block (spec 000 §1.3): monolithic, or by lazy row and column
generation with a rigorous bound. Used by :func:`privopt.mdp.solve` and by the Benders
decomposition (a block whose records are all boundary records is solved here).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt._progress import progress_bar
from privopt._validation import check_instance
from privopt.certify import proven_relative_gap
from privopt.errors import InvalidInput, NumericalTrouble, SolverLimit
from privopt.lp import highs
from privopt.lp.highs import new_highs, solve_checked
from privopt.lp.highs import pass_arrays as pass_lp
from privopt.mdp._lpbuild import mdp_rows, unit_rows
from privopt.mdp.problem import EdgeList, _Block
from privopt.mdp.result import repair

__all__ = ["build_lp"]


# Every mDP LP (and every restricted one of row generation) is feasible (the uniform Z) and
# bounded (z in the simplex): "infeasible" or "unbounded" is a numerical failure, retried
# with the fallbacks. HiGHS's presolve called a 2-record LP with coefficients e^23 "Unbounded";
# without presolve (the first fallback) it solves.
_DECIDED = (
    highs.ModelStatus.kOptimal,
    highs.ModelStatus.kTimeLimit,
    highs.ModelStatus.kIterationLimit,
)


def _run(h: Any, *, what: str) -> highs.LPSolution:
    return solve_checked(h, what=what, accept=_DECIDED)


def build_lp(block: _Block) -> tuple[np.ndarray, sp.csr_array, np.ndarray, np.ndarray]:
    """Monolithic LP of a block (spec §1.3): returns (c, A, row_lower, row_upper) with
    |E|·K mDP rows (≤ 0) followed by n unit-measure rows (= 1), variables z row-major."""
    check_instance("block", block, _Block)
    n, k = block.n, block.k
    a = sp.vstack([mdp_rows(block.edges, block.epsilon, n, k), unit_rows(n, k)], format="csr")
    m = len(block.edges) * k
    lower = np.concatenate([np.full(m, -np.inf), np.ones(n)])
    upper = np.concatenate([np.zeros(m), np.ones(n)])
    return block.objective.ravel(), a, lower, upper


def _solve_block_lp(
    block: _Block, *, lp_method: str, threads: int | None, time_limit: float | None
) -> tuple[np.ndarray, float, dict[str, Any]]:
    t0 = time.perf_counter()
    c, a, lo, up = build_lp(block)
    build = time.perf_counter() - t0
    h = new_highs(method=lp_method, threads=threads, time_limit=time_limit, tol=1e-9)
    pass_lp(h, c, a, lo, up)
    sol = _run(h, what=f"mDP LP ({block.n} records)")
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
    from privopt.lp.solve import safe_dual_bound

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
    (:func:`privopt.mdp._separation.closed_edges`; the LP over them has the full LP's feasible
    set) with their row scales e^{−εd}. Row ``e·K + k`` is ``e^{−εd_e} z_ik − z_jk ≤ 0`` for
    edge e = (i, j) of this list."""

    def __init__(self, block: _Block) -> None:
        from privopt.mdp._separation import closed_edges

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
        self, rows: np.ndarray, pos: np.ndarray, n_cols: int, *, scaled: bool = True
    ) -> sp.csr_array:
        """Rows ``rows`` as CSR over the ``n_cols`` model columns (``pos[i·K + k]``: model
        index of z_ik), scaled (largest coefficient 1) or as in the paper
        (``z_ik − e^{εd} z_jk ≤ 0``)."""
        e, kk = np.divmod(rows, self.k)
        cols = np.empty(2 * rows.size, dtype=np.int64)
        cols[0::2] = pos[self.edges.i[e] * self.k + kk]
        cols[1::2] = pos[self.edges.j[e] * self.k + kk]
        vals = np.empty(2 * rows.size)
        vals[0::2] = self.scale[e] if scaled else 1.0
        vals[1::2] = -1.0 if scaled else -1.0 / self.scale[e]
        indptr = np.arange(0, 2 * rows.size + 1, 2, dtype=np.int64)
        return sp.csr_array((vals, cols, indptr), shape=(rows.size, n_cols))

    def variables(self, rows: np.ndarray) -> np.ndarray:
        """Flat indices i·K + k of the variables the rows ``rows`` mention."""
        e, kk = np.divmod(rows, self.k)
        return np.concatenate([self.edges.i[e] * self.k + kk, self.edges.j[e] * self.k + kk])

    def dag(self, block: _Block) -> np.ndarray:
        """Flat indices of the rows expected to bind: for each output k, the arcs of the
        shortest-path DAG of the mDP graph rooted at the record cheapest for k (an optimal
        column decays away from its output along such arcs, z_ik = e^{εd} z_jk)."""
        from privopt.graphs import shortest_paths

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
        (:func:`privopt.mdp.lift.lift_with_arcs`) names, for every entry it raises by more
        than ``tol``, the arc its value came along: that arc's row ``z_pk ≤ e^{εd} z_ik`` is
        violated by the same amount where p is a source, and by the lifted one once the row
        before it binds. Adding the violated rows alone lets the LP answer one edge at a time
        (road N = 500, K = 100, ε = 2: 12 rounds and 61,685 rows; with the cascade 7 and
        36,500)."""
        from privopt.mdp.lift import lift_with_arcs

        lifted, _, arc = lift_with_arcs(z, self.edges, self.epsilon)
        ii, kk = np.nonzero((lifted - np.clip(z, 0.0, None) > tol) & (arc >= 0))
        rows = arc[ii, kk] * self.k + kk
        return np.unique(rows[~active[rows]])


class _RowGeneration:
    """The live model of one block's row and column generation (see
    :func:`_solve_block_rowgen`): the HiGHS handle, its mDP rows (flat indices into
    :class:`_Rows`, in model order after the n unit-measure rows) and its columns (flat
    indices i·K + k in model order, ``pos`` the inverse map, −1 for absent ones)."""

    def __init__(
        self,
        block: _Block,
        rows: _Rows,
        first_rows: np.ndarray,
        first_cols: np.ndarray,
        *,
        lp_method: str,
        threads: int | None,
        time_limit: float | None,
    ) -> None:
        self.block, self.lp = block, rows
        self.n, self.k = block.n, block.k
        self.c = block.objective.ravel()
        self.active = np.zeros(rows.count, dtype=bool)
        self.active[first_rows] = True
        self.rows = first_rows
        self.cols = np.concatenate(
            [first_cols, np.setdiff1d(rows.variables(first_rows), first_cols)]
        )
        self.pos = np.full(self.n * self.k, -1, dtype=np.int64)
        self.pos[self.cols] = np.arange(self.cols.size)
        # Dual simplex by default: rounds after the first re-solve from the previous basis.
        # When HiGHS's presolve aborts on these badly scaled LPs, _run retries without it.
        simplex = "simplex" if lp_method == "choose" else lp_method
        self.h = new_highs(method=simplex, threads=threads, time_limit=time_limit, tol=1e-9)
        # HiGHS's smallest primal tolerance, on rows scaled to largest coefficient 1.
        self.h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        unit = sp.csr_array(
            (np.ones(self.cols.size), self.cols // self.k, np.arange(self.cols.size + 1)),
            shape=(self.cols.size, self.n),
        ).T
        pass_lp(
            self.h,
            self.c[self.cols],
            sp.vstack([unit, rows.matrix(first_rows, self.pos, self.cols.size)]),
            np.concatenate([np.ones(self.n), np.full(first_rows.size, -np.inf)]),
            np.concatenate([np.ones(self.n), np.zeros(first_rows.size)]),
        )

    def set_basis(self, basis: Any) -> None:
        """Start from ``basis`` of a smaller model with the same leading rows and columns (the
        previous ε's): new rows enter basic, new columns nonbasic at 0 (still a basis)."""
        n_rows, n_cols = len(basis.row_status), len(basis.col_status)
        if n_rows > self.h.getNumRow() or n_cols > self.h.getNumCol():
            return
        basis.row_status = list(basis.row_status) + [highs.BasisStatus.kBasic] * (
            self.h.getNumRow() - n_rows
        )
        basis.col_status = list(basis.col_status) + [highs.BasisStatus.kLower] * (
            self.h.getNumCol() - n_cols
        )
        self.h.setBasis(basis)

    def add_cols(self, flat: np.ndarray) -> None:
        flat = np.unique(flat[self.pos[flat] < 0])
        if not flat.size:
            return
        self.pos[flat] = self.cols.size + np.arange(flat.size)
        self.cols = np.concatenate([self.cols, flat])
        # Each new z_ik enters its record's unit row (model row i) only; mDP rows follow.
        self.h.addCols(
            flat.size,
            self.c[flat],
            np.zeros(flat.size),
            np.full(flat.size, highs.INF),
            flat.size,
            np.arange(flat.size, dtype=np.int32),
            (flat // self.k).astype(np.int32),
            np.ones(flat.size),
        )

    def add_rows(self, new: np.ndarray) -> None:
        # Devex pricing on the warm re-solves: HiGHS otherwise recomputes dual steepest-edge
        # weights for every row after addRows (road N = 500, ε = 2: 6–8 s per round that adds
        # under 300 rows, 0.1–0.6 s with Devex; the whole solve 51.8 s -> 21.8 s).
        self.h.setOptionValue("simplex_dual_edge_weight_strategy", 1)
        self.add_cols(self.lp.variables(new))
        self.active[new] = True
        self.rows = np.concatenate([self.rows, new])
        a = self.lp.matrix(new, self.pos, self.cols.size)
        self.h.addRows(
            new.size,
            np.full(new.size, -highs.INF),
            np.zeros(new.size),
            a.nnz,
            a.indptr[:-1].astype(np.int32),
            a.indices.astype(np.int32),
            a.data,
        )

    def priced_cols(self, row_duals: np.ndarray) -> np.ndarray:
        """Absent z_ik are in no model row but their unit row: reduced cost c_ik − u_i."""
        if self.cols.size == self.c.size:
            return np.zeros(0, dtype=np.int64)
        reduced = self.block.objective - row_duals[: self.n, None]
        neg = np.flatnonzero(reduced.ravel() < 0.0)
        return neg[self.pos[neg] < 0]

    def point(self, x: np.ndarray) -> np.ndarray:
        """Model solution ``x`` as the (n, K) matrix; variables not in the model are 0."""
        z = np.zeros(self.c.size)
        z[self.cols] = x
        return z.reshape(self.n, self.k)

    def separate(self, z: np.ndarray, tol: float, cascade: bool) -> np.ndarray:
        """Rows of the closed LP violated by more than ``tol`` (scaled) and not in the model,
        with the rows their repair cascades into."""
        from privopt.mdp._separation import violated_rows

        new = violated_rows(z, self.lp.edges, self.lp.scale, self.active, tol)
        if new.size and cascade:
            new = np.union1d(new, self.lp.cascade(z, self.active, tol))
        return new

    def bound(self, row_duals: np.ndarray) -> float:
        """Rigorous lower bound on the full LP from the mDP-row duals (unit rows kept as
        constraints, :func:`privopt.mdp._separation.simplex_bound`); at least Σ_i min_k c_ik,
        the bound without any mDP row (the better one where the duals certify nothing)."""
        from privopt.mdp._separation import simplex_bound

        obj = self.block.objective
        trivial = float(obj.min(axis=1).sum())
        m = row_duals.size - self.n  # rows added after the last solve take multiplier 0
        rows = self.rows[:m]
        got = simplex_bound(obj, rows, self.lp.edges, self.lp.scale, row_duals[self.n :])
        return max(trivial, got)

    def polish(self, time_limit: float | None, threads: int | None) -> highs.LPSolution:
        """The same rows unscaled, re-solved from the final basis: its primal meets each row
        to 1e-9 absolute (fewer repairs), at the cost of a dual simplex pass."""
        hp = new_highs(method="simplex", threads=threads, time_limit=time_limit, tol=1e-9)
        unit = sp.csr_array(
            (np.ones(self.cols.size), self.cols // self.k, np.arange(self.cols.size + 1)),
            shape=(self.cols.size, self.n),
        ).T
        pass_lp(
            hp,
            self.c[self.cols],
            sp.vstack([unit, self.lp.matrix(self.rows, self.pos, self.cols.size, scaled=False)]),
            np.concatenate([np.ones(self.n), np.full(self.rows.size, -np.inf)]),
            np.concatenate([np.ones(self.n), np.zeros(self.rows.size)]),
        )
        hp.setOptionValue("simplex_dual_edge_weight_strategy", 1)  # see add_rows
        hp.setBasis(self.h.getBasis())
        return _run(hp, what=f"mDP LP ({self.n} records, polish)")


def _solve_block_rowgen(
    block: _Block,
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
    """Exact LP by lazy row and column generation with a rigorous bound (beyond the paper).

    The model holds the unit-measure rows and the mDP rows found so far, each divided by its
    largest coefficient e^{εd} (``z_ik e^{−εd} − z_jk ≤ 0``). Scaling matters for the *dual*:
    HiGHS's optimality test then sees a dual of the size that moves the objective; unscaled,
    rows with coefficients up to e^{εη} (e^20 at the paper's settings) keep duals of 1e-10 with
    the wrong sign that HiGHS accepts yet that are worth 1e-4 of the objective. Rows come from
    the shortest-path-closed edges only (:class:`_Rows`): the others are implied.

    1. Solve with the initial rows (``"none"``: only unit-measure rows, default; ``"dag"``:
       also the shortest-path-DAG rows), add every row violated by more than ``tol`` on its
       scaled form — the violation in units of the row's largest entry, the scale HiGHS's
       primal tolerance (1e-10) holds the model's rows to — with the rows their repair will
       cascade into (``cascade=True``), re-solve warm (dual simplex, Devex pricing), until
       none is violated. A row between records so far apart that e^{−εd} < ``tol`` is never
       violated by more than ``tol``: the entries it would hold up are below the LP's
       resolution, and the repair's lift supplies them at their exact decay.
    2. Bound: :meth:`_RowGeneration.bound` from the model's duals, valid for the full LP
       (rows not in the model take multiplier 0; every column, absent ones too, is covered).
    3. Release: scaled rows and the unseparated tiny violations leave Z slightly infeasible,
       so it is repaired (:func:`privopt.mdp.result.repair` on the closed edges, provably
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
    gen = _start(block, rows, initial_rows, columns, warm, lp_method, threads, time_limit)
    build = time.perf_counter() - start
    deadline = None if time_limit is None else start + time_limit
    rounds: list[dict[str, Any]] = []
    polishes: list[dict[str, Any]] = []
    sol = _round(gen, rounds, tol, cascade, deadline)
    z, lower, alpha, loss = _release(gen, sol)
    if polish is True or (polish == "auto" and _gap(loss, lower) > target_gap):
        z, alpha, loss, sol = _polished(
            gen, sol, (z, alpha, loss), polishes, rounds, tol, cascade, deadline, threads
        )
        lower = max(lower, gen.bound(sol.row_duals))
    info = {
        "records": block.n,
        "rows": int(gen.h.getNumRow()),
        "full_rows": len(block.edges) * block.k + block.n,
        "closed_rows": rows.count + block.n,
        "vars": block.n * block.k,
        "model_vars": int(gen.cols.size),
        "build_s": build,
        "solve_s": time.perf_counter() - start - build,
        "iterations": int(sum(r["iterations"] for r in rounds + polishes)),
        "rounds": rounds,
        "polish": polishes,
        "relaxation_objective": sol.objective,
        "lower_bound": lower,
        "repair_alpha": alpha,
        "certified_gap": _gap(loss, lower),
    }
    if warm is not None:
        # Hand the row set and basis on to the next ε (kept out of the saved history).
        warm.update(rows=gen.rows, cols=gen.cols, basis=gen.h.getBasis())
    return z, lower, info


def _gap(loss: float, lower: float) -> float:
    """The proven relative gap of the certification rule (docs/certification.md)."""
    return proven_relative_gap(loss, lower)


def _start(
    block: _Block,
    rows: _Rows,
    initial_rows: str,
    columns: str,
    warm: dict[str, Any] | None,
    lp_method: str,
    threads: int | None,
    time_limit: float | None,
) -> _RowGeneration:
    """The first model: unit rows, the initial mDP rows and columns (after the previous ε's
    ones in their model order when warm, so that its final basis maps row by row)."""
    n, k = block.n, block.k
    first = rows.dag(block) if initial_rows == "dag" else np.zeros(0, dtype=np.int64)
    if columns == "all":
        cols = np.arange(n * k, dtype=np.int64)
    else:  # the unit rows alone put each record on its cheapest output
        cols = np.arange(n, dtype=np.int64) * k + np.argmin(block.objective, axis=1)
    if warm is not None and "rows" in warm:
        prev = np.asarray(warm["rows"], dtype=np.int64)
        first = np.concatenate([prev, np.setdiff1d(first, prev)])
        prev = np.asarray(warm["cols"], dtype=np.int64)
        cols = np.concatenate([prev, np.setdiff1d(cols, prev)])
    gen = _RowGeneration(
        block, rows, first, cols, lp_method=lp_method, threads=threads, time_limit=time_limit
    )
    if warm is not None and warm.get("basis") is not None:
        gen.set_basis(warm["basis"])
    return gen


def _round(
    gen: _RowGeneration,
    rounds: list[dict[str, Any]],
    tol: float,
    cascade: bool,
    deadline: float | None,
) -> highs.LPSolution:
    """Solve, separate and price until nothing is added; returns the last solution."""
    with progress_bar(desc=f"mDP row generation ({gen.n} records)", unit="round") as bar:
        while True:
            _time_left(gen.h, deadline)
            sol = _run(gen.h, what=f"mDP LP ({gen.n} records, row generation)")
            z = gen.point(sol.x)
            new = gen.separate(z, tol, cascade)
            priced = gen.priced_cols(sol.row_duals)
            rounds.append(
                {
                    "rows": int(gen.h.getNumRow()),
                    "cols": int(gen.h.getNumCol()),
                    "objective": sol.objective,
                    "iterations": sol.iterations,
                    "solve_s": sol.solve_time,
                    "added": int(new.size),
                    "priced": int(priced.size),
                }
            )
            bar.set_postfix_str(
                f"rows {rounds[-1]['rows']:,}, +{new.size:,} rows, +{priced.size:,} columns",
                refresh=False,
            )
            bar.update(1)
            if not (new.size or priced.size):
                return sol
            gen.add_cols(priced)
            gen.add_rows(new)


def _time_left(h: Any, deadline: float | None) -> None:
    if deadline is None:
        return
    left = deadline - time.perf_counter()
    if left <= 0:
        raise SolverLimit("mDP row generation: time limit reached", status="limit")
    h.setOptionValue("time_limit", float(left))


def _release(gen: _RowGeneration, sol: highs.LPSolution) -> tuple[np.ndarray, float, float, float]:
    """The repaired matrix of ``sol`` with its bound, mixing weight and loss."""
    lower = gen.bound(sol.row_duals)
    z, alpha = repair(gen.point(sol.x), gen.lp.edges, gen.lp.epsilon, objective=gen.block.objective)
    return z, lower, alpha, float(np.dot(gen.c, z.ravel()))


def _polished(
    gen: _RowGeneration,
    sol: highs.LPSolution,
    best: tuple[np.ndarray, float, float],
    polishes: list[dict[str, Any]],
    rounds: list[dict[str, Any]],
    tol: float,
    cascade: bool,
    deadline: float | None,
    threads: int | None,
) -> tuple[np.ndarray, float, float, highs.LPSolution]:
    """One polish (step 4): the unscaled re-solve, back to the rounds when it leaves the
    model's rows; the cheaper repaired matrix of the two is kept."""
    t0 = time.perf_counter()
    left = None if deadline is None else deadline - t0
    if left is not None and left <= 0:
        raise SolverLimit("mDP row generation: time limit reached", status="limit")
    try:
        solp = gen.polish(left, threads)
    except NumericalTrouble as exc:  # keep the repaired scaled solution
        polishes.append({"failed": str(exc), "solve_s": time.perf_counter() - t0, "iterations": 0})
        return (*best, sol)
    zp = gen.point(solp.x)
    new = gen.separate(zp, tol, cascade=False)
    priced = gen.priced_cols(solp.row_duals)
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
        gen.add_cols(priced)
        gen.add_rows(new)
        sol = _round(gen, rounds, tol, cascade, deadline)
        z, _, alpha, loss = _release(gen, sol)
        return (z, alpha, loss, sol) if loss < best[2] else (*best, sol)
    zp, alpha_p = repair(zp, gen.lp.edges, gen.lp.epsilon, objective=gen.block.objective)
    loss_p = float(np.dot(gen.c, zp.ravel()))
    return (zp, alpha_p, loss_p, sol) if loss_p < best[2] else (*best, sol)
