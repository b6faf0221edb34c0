"""The exact k-anonymity MILP (paper eqs. 22–28 with the spec's resolutions, §1.3 and §7).

Two formulations of the same optimum, both solved with HiGHS through :mod:`privopt.lp`:

``"paper"``
    The big-M model: boxes ``L ≤ y ≤ x ≤ z ≤ U`` as variable bounds (§7.2), one binary ``v_il``
    per unordered pair (§7.4), four big-M rows per pair and attribute (22)–(25) with
    ``M^y = max(x_i, x_l) − L``, ``M^z = U − min(x_i, x_l)`` (29–32), and the cardinality rows
    ``Σ_l v_il ≥ k − 1`` (§7.3; ``==`` with ``equality_cardinality=True``). Categorical columns
    enter one-hot with weight ``w_j/|H|`` (§1.5). The IFS is passed as a MIP start.
``"set_partition"``
    Exact set partitioning over every group of size k..2k−1 (§1.3, "exactness"): much tighter,
    used for tiny sub-problems and as a test oracle.

Both return a partition; boxes are then tightened to the class min/max (never increases loss).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from privopt.errors import InfeasibleModel, InvalidInput, SolverLimit
from privopt.kanon.greedy import greedy_search
from privopt.kanon.initial import initial_solution
from privopt.kanon.loss import normalize_labels
from privopt.kanon.problem import KAnonProblem

__all__ = [
    "solve_exact",
    "solve_rows",
    "paper_model",
    "set_partition_model",
    "MilpModel",
    "labels_from_boxes",
]


@dataclass
class MilpModel:
    """A MILP in neutral triplet form: ``min c·x`` s.t. ``row_lo ≤ A x ≤ row_hi``, bounds."""

    c: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    integrality: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    row_lo: np.ndarray
    row_hi: np.ndarray

    @property
    def n_vars(self) -> int:
        return len(self.c)

    @property
    def n_rows(self) -> int:
        return len(self.row_lo)

    def to_lp(self):
        """The :class:`privopt.lp.LinearProgram` of this model."""
        from privopt.lp import LinearProgram

        lp = LinearProgram(
            self.n_vars,
            objective=self.c,
            lower=self.lower,
            upper=self.upper,
            integrality=self.integrality,
        )
        if self.n_rows:
            lp.add_rows(
                (self.rows, self.cols, self.vals),
                n_rows=self.n_rows,
                lower=self.row_lo,
                upper=self.row_hi,
            )
        return lp


def paper_model(
    x, lo, hi, coef, integer, k, *, equality_cardinality=False, integer_boxes=True, strengthen=True
):
    """Big-M model (22)–(28) for the rows of ``x`` (n, m') with global bounds ``lo, hi`` (m').

    Variable layout: ``y`` (n·m', row-major), ``z`` (n·m'), then ``v`` (one per pair i<l in
    ``np.triu_indices`` order). Returns the :class:`MilpModel` and the pair index arrays.
    """
    n, m = x.shape
    nm = n * m
    iu, lu = np.triu_indices(n, 1)
    p = len(iu)
    c = np.concatenate([-np.tile(coef, n), np.tile(coef, n), np.zeros(p)])
    lower = np.concatenate([np.broadcast_to(lo, (n, m)).ravel(), x.ravel(), np.zeros(p)])
    upper = np.concatenate([x.ravel(), np.broadcast_to(hi, (n, m)).ravel(), np.ones(p)])
    box_int = np.tile(integer, n) if integer_boxes else np.zeros(nm, dtype=bool)
    integrality = np.concatenate([box_int, box_int, np.ones(p, dtype=bool)])

    # one (pair, attribute) per big-M row block, vectorised
    pi = np.repeat(np.arange(p), m)
    jj = np.tile(np.arange(m), p)
    i, ell = iu[pi], lu[pi]
    my = np.maximum(x[i, jj], x[ell, jj]) - lo[jj]  # eq. 29
    mz = hi[jj] - np.minimum(x[i, jj], x[ell, jj])  # eq. 31
    q = len(pi)
    rows, cols, vals, rlo, rhi = [], [], [], [], []
    for b, (off, big) in enumerate([(0, my), (0, my), (nm, mz), (nm, mz)]):
        r = b * q + np.arange(q)
        sign = 1.0 if b % 2 == 0 else -1.0  # (22)/(24): +M v <= M ; (23)/(25): -M v >= -M
        rows += [r, r, r]
        cols += [off + i * m + jj, off + ell * m + jj, 2 * nm + pi]
        vals += [np.ones(q), -np.ones(q), sign * big]
        if sign > 0:
            rlo.append(np.full(q, -np.inf))
            rhi.append(big)
        else:
            rlo.append(-big)
            rhi.append(np.full(q, np.inf))
    r0 = 4 * q
    if strengthen:
        # Valid inequalities implied by (22)-(25) and the box bounds, without big-M: if
        # v_il = 1 then y_ij = y_lj <= x_lj and z_ij = z_lj >= x_lj, i.e.
        # y_ij + (x_ij - x_lj)^+ v_il <= x_ij and z_ij - (x_lj - x_ij)^+ v_il >= x_ij, for both
        # ends of every pair. They leave the optimum unchanged but make the LP bound useful.
        for a, b in ((i, ell), (ell, i)):
            d = x[a, jj] - x[b, jj]
            for off, coef_v, keep in ((0, d, d > 0), (nm, d, d < 0)):
                sel = np.flatnonzero(keep)
                s = len(sel)
                r = r0 + np.arange(s)
                rows += [r, r]
                cols += [off + a[sel] * m + jj[sel], 2 * nm + pi[sel]]
                vals += [np.ones(s), coef_v[sel]]
                # y rows: y + d v <= x (d > 0); z rows: z + d v >= x (d < 0)
                if off == 0:
                    rlo.append(np.full(s, -np.inf))
                    rhi.append(x[a[sel], jj[sel]])
                else:
                    rlo.append(x[a[sel], jj[sel]])
                    rhi.append(np.full(s, np.inf))
                r0 += s
    # cardinality (26): Σ_{l≠i} v_il >= k-1 (each pair appears in the rows of both ends)
    rows += [r0 + iu, r0 + lu]
    cols += [2 * nm + np.arange(p)] * 2
    vals += [np.ones(p)] * 2
    rlo.append(np.full(n, k - 1.0))
    rhi.append(np.full(n, k - 1.0 if equality_cardinality else np.inf))
    model = MilpModel(
        c=c,
        lower=lower,
        upper=upper,
        integrality=integrality,
        rows=np.concatenate(rows),
        cols=np.concatenate(cols),
        vals=np.concatenate(vals),
        row_lo=np.concatenate(rlo),
        row_hi=np.concatenate(rhi),
    )
    return model, (iu, lu)


def paper_start(x, labels, pairs) -> np.ndarray:
    """MIP start vector of :func:`paper_model` from a partition (tight boxes, v = same class)."""
    n, m = x.shape
    lab = normalize_labels(labels)
    c = int(lab.max()) + 1
    cmin = np.full((c, m), np.inf)
    cmax = np.full((c, m), -np.inf)
    np.minimum.at(cmin, lab, x)
    np.maximum.at(cmax, lab, x)
    iu, lu = pairs
    return np.concatenate(
        [cmin[lab].ravel(), cmax[lab].ravel(), (lab[iu] == lab[lu]).astype(np.float64)]
    )


def labels_from_boxes(sol: np.ndarray, n: int, m: int, decimals: int = 6) -> np.ndarray:
    """Classes = groups of identical (y, z) vectors, rounded (spec §1.3)."""
    y = sol[: n * m].reshape(n, m)
    z = sol[n * m : 2 * n * m].reshape(n, m)
    key = np.round(np.hstack([y, z]), decimals)
    _, inv = np.unique(key, axis=0, return_inverse=True)
    return normalize_labels(inv.ravel())


@dataclass
class SetPartitionColumns:
    """Group patterns of the aggregated set-partition model.

    ``types`` (G, 2k−1) lists each pattern's row types (−1 padded); ``type_rows[t]`` the rows of
    type t (identical rows) in ascending order.
    """

    types: np.ndarray
    type_rows: list

    def labels(self, counts: np.ndarray, n: int) -> np.ndarray:
        """Partition realizing pattern multiplicities ``counts`` (G,) with concrete rows."""
        labels = np.full(n, -1, dtype=np.int64)
        nxt = [0] * len(self.type_rows)
        c = 0
        for g in np.flatnonzero(np.round(counts) > 0):
            for _ in range(int(round(counts[g]))):
                for t in self.types[g][self.types[g] >= 0]:
                    labels[self.type_rows[t][nxt[t]]] = c
                    nxt[t] += 1
                c += 1
        return labels


class TooManyColumns(InvalidInput):
    """The set-partition model would exceed its column limit (too many distinct rows for k)."""


def _count_patterns(mult: np.ndarray, smin: int, smax: int) -> int:
    """Number of multisets of row types with sizes in [smin, smax] (polynomial product)."""
    poly = np.zeros(smax + 1, dtype=object)
    poly[0] = 1
    for m_t in mult:
        new = np.zeros_like(poly)
        for c in range(min(int(m_t), smax) + 1):
            new[c:] += poly[: smax + 1 - c]
        poly = new
    return int(sum(poly[smin : smax + 1]))


def _enumerate_patterns(
    mult: np.ndarray,
    smin: int,
    smax: int,
    xt=None,
    coef=None,
    max_cost: float | None = None,
    limit: int = 10**7,
    deadline: float | None = None,
) -> np.ndarray:
    """All type-count vectors (P, T) with 0 ≤ c_t ≤ mult_t and smin ≤ Σc ≤ smax.

    With ``max_cost``, only patterns whose group cost ``|G|·Σ_j coef_j·span_j`` can stay
    ≤ max_cost (spans and sizes only grow as types are added, so pruning is safe).
    """
    n_types = len(mult)
    # the partial patterns are a dense (P, T) int64 array: cap P·T (≈ 400 MB) as well as P
    limit = min(limit, max(50_000_000 // max(n_types, 1), 1))
    tail = np.concatenate([np.cumsum(mult[::-1])[::-1], [0]])  # rows left from type t on
    pats = np.zeros((1, n_types), dtype=np.int64)
    size = np.zeros(1, dtype=np.int64)
    if max_cost is not None:
        cmin = np.full((1, xt.shape[1]), np.inf)
        cmax = np.full((1, xt.shape[1]), -np.inf)
    for t in range(n_types):
        top = np.minimum(mult[t], smax - size)  # per pattern
        reps = top + 1
        pats = np.repeat(pats, reps, axis=0)
        size = np.repeat(size, reps)
        c = np.arange(len(pats)) - np.repeat(np.cumsum(reps) - reps, reps)
        pats[:, t] = c
        size = size + c
        ok = size + tail[t + 1] >= smin  # can still reach smin
        if max_cost is not None:
            cmin, cmax = np.repeat(cmin, reps, axis=0), np.repeat(cmax, reps, axis=0)
            used = c > 0
            cmin[used] = np.minimum(cmin[used], xt[t])
            cmax[used] = np.maximum(cmax[used], xt[t])
            span = np.where(np.isfinite(cmax), cmax - cmin, 0.0) @ coef
            ok &= np.maximum(size, smin) * span <= max_cost * (1 + 1e-12)
            cmin, cmax = cmin[ok], cmax[ok]
        pats, size = pats[ok], size[ok]
        if len(pats) > limit:
            raise TooManyColumns(f"more than {limit} partial patterns")
        if deadline is not None and time.perf_counter() > deadline:
            raise TooManyColumns("pattern enumeration ran past the time limit")
    return pats[size >= smin]


def set_partition_model(x, coef, k, *, max_columns=400_000, max_cost=None, deadline=None):
    """Exact set partitioning over all groups of size k..2k−1 (§1.3), aggregated by row type.

    Identical rows are interchangeable, so a group is only its multiset of row *types*: one
    integer variable per multiset counts how many groups use it, and each type's row requires
    as many as it has rows (a cutting-stock style aggregation; with all rows distinct it is the
    plain set partition). This removes the symmetry that duplicates (common in census data)
    create, with the same optimum.

    ``max_cost`` keeps only groups of cost ≤ max_cost (a *restricted*, no longer exact model).
    ``deadline`` (a ``time.perf_counter()`` value) stops the enumeration with TooManyColumns.

    Returns the :class:`MilpModel` and the :class:`SetPartitionColumns`.

    Raises
    ------
    TooManyColumns : more than ``max_columns`` patterns.
    """
    n = x.shape[0]
    smin, smax = k, min(2 * k - 1, n)
    xt, inv, mult = np.unique(x, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    if max_cost is None:
        count = _count_patterns(mult, smin, smax)
        if count > max_columns:
            raise TooManyColumns(
                f"set_partition formulation needs {count} columns for n={n}, "
                f"k={k} (limit {max_columns}); use formulation='paper'"
            )
        pats = _enumerate_patterns(mult, smin, smax, deadline=deadline)  # (G, T)
    else:
        pats = _enumerate_patterns(
            mult, smin, smax, xt, coef, max_cost, limit=4 * max_columns, deadline=deadline
        )
        if len(pats) > max_columns:
            raise TooManyColumns(f"restricted set partition still has {len(pats)} columns")
    present = pats > 0
    size = pats.sum(axis=1)
    span = np.zeros(len(pats))
    for j in range(x.shape[1]):
        col = xt[:, j]
        hi = np.where(present, col, -np.inf).max(axis=1)
        lo = np.where(present, col, np.inf).min(axis=1)
        span += coef[j] * (hi - lo)
    gi, ti = np.nonzero(pats)
    width = smax
    types = np.full((len(pats), width), -1, dtype=np.int64)
    flat_t = np.repeat(ti, pats[gi, ti])
    flat_g = np.repeat(gi, pats[gi, ti])
    pos = np.arange(len(flat_g)) - np.searchsorted(flat_g, flat_g)
    types[flat_g, pos] = flat_t
    model = MilpModel(
        c=size * span,
        lower=np.zeros(len(pats)),
        upper=(n // size).astype(np.float64),
        integrality=np.ones(len(pats), dtype=bool),
        rows=ti,
        cols=gi,
        vals=pats[gi, ti].astype(np.float64),
        row_lo=mult.astype(np.float64),
        row_hi=mult.astype(np.float64),
    )
    order = np.argsort(inv, kind="stable")
    first = np.searchsorted(inv[order], np.arange(len(mult)))
    type_rows = [order[first[t] : first[t] + mult[t]] for t in range(len(mult))]
    return model, SetPartitionColumns(types=types, type_rows=type_rows)


def _partition_objective(x, coef, labels) -> float:
    lab = normalize_labels(labels)
    c = int(lab.max()) + 1
    cmin = np.full((c, x.shape[1]), np.inf)
    cmax = np.full((c, x.shape[1]), -np.inf)
    np.minimum.at(cmin, lab, x)
    np.maximum.at(cmax, lab, x)
    return float((np.bincount(lab) * ((cmax - cmin) * coef).sum(axis=1)).sum())


def _solve_set_partition(x, coef, k, start_labels, time_limit, verbose, restrict=False):
    """Set partitioning with exact reduced-cost column filtering.

    LP relaxation → reduced costs rc ≥ 0; a column with ``rc > UB − LB`` is in no solution
    better than UB. Solve the MILP on the columns with ``rc ≤ δ`` (δ small first): its optimum
    UB' is feasible for the full problem, and if ``UB' − LB ≤ δ`` it is optimal; otherwise
    retry with ``δ = UB' − LB`` (then exact). Cuts HiGHS time on FARS-20 from ~15 s to < 1 s.
    """
    from privopt.lp import solve

    t_end = None if time_limit is None else time.perf_counter() + time_limit

    def remaining():  # the time limit covers the whole sub-problem, all HiGHS calls together
        return None if t_end is None else max(t_end - time.perf_counter(), 1e-3)

    def expired():  # start no new HiGHS call once the limit is spent (its setup alone costs)
        return t_end is not None and time.perf_counter() >= t_end

    n = x.shape[0]
    ub = math.inf
    best = None
    if start_labels is not None and np.bincount(normalize_labels(start_labels)).max() < 2 * k:
        ub, best = _partition_objective(x, coef, start_labels), normalize_labels(start_labels)
    restricted = False
    try:
        model, columns = set_partition_model(x, coef, k, deadline=t_end)
    except TooManyColumns:
        if best is None or not restrict:
            raise
        # Too many groups: keep those no costlier than the start's costliest class. Still
        # never worse than the start (its classes are columns), but no longer proven optimal.
        lab = best
        costs = [
            _partition_objective(x[lab == c], coef, np.zeros((lab == c).sum(), int))
            for c in range(int(lab.max()) + 1)
        ]
        model, columns = set_partition_model(x, coef, k, max_cost=max(costs), deadline=t_end)
        restricted = True
    info = {"n_vars": model.n_vars, "n_rows": model.n_rows, "restricted": restricted}
    if ub == 0.0:  # nothing can beat zero loss
        info.update(status="Optimal", objective=0.0, mip_gap=0.0, lp_bound=0.0)
        return best, info
    relax = MilpModel(**{**model.__dict__, "integrality": np.zeros(model.n_vars, dtype=bool)})
    if expired() and best is not None:
        info.update(status="time_limit", objective=ub, mip_gap=math.inf)
        return best, info
    try:
        lp_res = solve(relax.to_lp(), method="simplex", time_limit=remaining(), threads=1)
    except SolverLimit:
        info.update(status="time_limit", objective=ub, mip_gap=math.inf)
        return best, info
    lb = float(lp_res.objective)
    rc = np.asarray(lp_res.col_duals, dtype=float)
    tol = 1e-9 * max(1.0, abs(lb))
    info["lp_bound"] = lb
    if ub - lb <= tol:  # the start attains the LP bound: optimal without branching
        info.update(status="Optimal", objective=ub, mip_gap=0.0, columns_kept=0)
        return best, info
    xlp = np.asarray(lp_res.x, dtype=float)
    if np.all(np.abs(xlp - np.round(xlp)) <= 1e-9):  # integral LP vertex: optimal
        info.update(status="Optimal", objective=lb, mip_gap=0.0, columns_kept=0)
        return columns.labels(xlp, n), info
    delta = min(ub - lb, 0.05 * abs(lb) + tol) if math.isfinite(ub) else 0.05 * abs(lb) + tol
    while True:
        keep = np.flatnonzero(rc <= delta + tol)
        sub = MilpModel(
            c=model.c[keep],
            lower=model.lower[keep],
            upper=model.upper[keep],
            integrality=model.integrality[keep],
            **_restrict_columns(model, keep),
        )
        if expired() and best is not None:
            info["status"] = "time_limit"
            break
        try:
            # tight gap: the restricted optimum is the certificate of the δ test below
            res = solve(
                sub.to_lp(),
                time_limit=remaining(),
                verbose=verbose,
                presolve=False,
                threads=1,
                mip_rel_gap=1e-7,
            )
            cand = float(res.objective)
            if cand < ub:
                ub = cand
                full = np.zeros(model.n_vars)
                full[keep] = np.asarray(res.x)
                best = columns.labels(full, n)
        except SolverLimit as exc:
            info["status"] = "time_limit"
            inc = exc.best
            if (
                inc is not None
                and getattr(inc, "x", None) is not None
                and float(inc.objective) < ub
            ):
                full = np.zeros(model.n_vars)
                full[keep] = np.round(np.asarray(inc.x))
                cand_lab = columns.labels(full, n)
                if np.all(cand_lab >= 0):  # a complete incumbent partition
                    ub, best = float(inc.objective), cand_lab
            break
        except InfeasibleModel:
            pass  # too few columns kept: widen δ
        if ub - lb <= delta + tol:
            info["status"] = "Optimal"
            break
        # widen geometrically; ub - lb (finite once any solution is known) makes it exact
        delta = min(2 * delta + tol, ub - lb) if math.isfinite(ub) else 2 * delta + tol
    gap = 0.0 if info["status"] == "Optimal" else (ub - lb) / max(abs(ub), 1e-12)
    info.update(objective=ub, mip_gap=gap, columns_kept=len(keep))
    return best, info


def _restrict_columns(model: MilpModel, keep: np.ndarray) -> dict:
    new_index = np.full(model.n_vars, -1, dtype=np.int64)
    new_index[keep] = np.arange(len(keep))
    sel = new_index[model.cols] >= 0
    return {
        "rows": model.rows[sel],
        "cols": new_index[model.cols[sel]],
        "vals": model.vals[sel],
        "row_lo": model.row_lo,
        "row_hi": model.row_hi,
    }


def _solve_paper(
    x, lo, hi, coef, integer, k, start_labels, time_limit, equality_cardinality, verbose
):
    from privopt.lp import solve

    n, m = x.shape
    model, pairs = paper_model(
        x, lo, hi, coef, integer, k, equality_cardinality=equality_cardinality
    )
    start = (
        None
        if start_labels is None or equality_cardinality
        else paper_start(x, start_labels, pairs)
    )
    info = {"n_vars": model.n_vars, "n_rows": model.n_rows}
    try:
        res = solve(model.to_lp(), time_limit=time_limit, mip_start=start, verbose=verbose)
        info["status"] = res.status
    except SolverLimit as exc:
        res = exc.best
        info["status"] = "time_limit"
        if res is None or getattr(res, "x", None) is None:
            return None, info
    info.update(objective=float(res.objective), mip_gap=getattr(res, "mip_gap", None))
    return labels_from_boxes(np.asarray(res.x), n, m), info


def solve_rows(
    x,
    lo,
    hi,
    coef,
    integer,
    k,
    *,
    start_labels=None,
    formulation="auto",
    time_limit=None,
    equality_cardinality=False,
    verbose=False,
    fallback_time_limit=None,
):
    """Solve the MILP on the rows of ``x`` (n, m') with fixed global bounds; used by S&C too.

    Parameters
    ----------
    x : (n, m') MILP columns (numeric plus one-hot), see ``KAnonProblem.milp_columns``.
    lo, hi, coef, integer : (m',) global bounds, objective factors and integrality flags.
    k : anonymity parameter; ``n >= k`` required.
    start_labels : (n,) a feasible partition: MIP start, and the fall-back when the time limit
        leaves no incumbent (spec §7.9: the output stays valid).
    formulation : ``"set_partition"`` (exact and tight, aggregated by identical rows),
        ``"paper"`` (big-M, eqs. 22–28), or ``"auto"`` (default): set partition unless it
        needs more than 400,000 columns, then the paper model (give a ``time_limit``).
    time_limit : seconds for the sub-problem (all its HiGHS calls); on expiry the incumbent
        is used.
    equality_cardinality : ``Σ v = k−1`` instead of ``≥`` (paper model only, §7.3).
    fallback_time_limit : time limit of the paper model when ``"auto"`` falls back to it and
        ``time_limit`` is None.

    Returns
    -------
    labels : (n,) partition; info : dict with ``status`` ("Optimal", "time_limit", ...),
    ``objective``, ``mip_gap``, ``solve_time`` (s), ``n_vars``, ``n_rows``, ``fallback``.

    Raises
    ------
    InfeasibleModel : the model has no solution (only possible with ``equality_cardinality``).
    SolverLimit : time limit with neither incumbent nor ``start_labels``.
    """
    n = x.shape[0]
    if n < k:
        raise InvalidInput(f"sub-problem has {n} rows < k={k}")
    t0 = time.perf_counter()
    if formulation not in ("auto", "set_partition", "paper"):
        raise InvalidInput(
            f"formulation must be 'auto', 'set_partition' or 'paper', got {formulation!r}"
        )
    if equality_cardinality and formulation != "paper":
        raise InvalidInput("equality_cardinality applies to formulation='paper' only")
    used = formulation
    if formulation in ("auto", "set_partition"):
        try:
            labels, info = _solve_set_partition(
                x, coef, k, start_labels, time_limit, verbose, restrict=(formulation == "auto")
            )
            used = "set_partition"
            if info.get("restricted"):
                used = "set_partition_restricted"
                if info.get("status") == "Optimal":
                    info["status"] = "optimal_restricted"
        except TooManyColumns:
            if formulation == "set_partition":
                raise
            used = "paper"  # too many distinct rows for k: the big-M model scales in n²
            if time_limit is None:
                time_limit = fallback_time_limit
            if time_limit is not None:  # the limit covers the failed enumeration too
                time_limit = max(time_limit - (time.perf_counter() - t0), 1e-3)
    if used == "paper":
        labels, info = _solve_paper(
            x, lo, hi, coef, integer, k, start_labels, time_limit, equality_cardinality, verbose
        )
    info["formulation"] = used
    info["solve_time"] = time.perf_counter() - t0
    info["fallback"] = False
    if labels is not None and np.bincount(labels).min() < k:
        labels = None  # a numerically bad point: never return a non-k-anonymous partition
    if labels is None:
        if start_labels is None:
            raise SolverLimit(
                f"no solution within time_limit={time_limit} s and no fall-back",
                status=info.get("status"),
            )
        info["fallback"] = True
        labels = normalize_labels(start_labels)
    return labels, info


def solve_exact(
    problem: KAnonProblem,
    *,
    formulation: str = "auto",
    time_limit=None,
    equality_cardinality: bool = False,
    mip_start: bool = True,
    verbose=False,
):
    """Exact MILP on the whole table (practical for n ≲ 20–50); returns (labels, info)."""
    x, lo, hi, coef, integer = problem.milp_columns()
    start = None
    if mip_start:
        # the better of the two cheap feasible solutions (IFS is the paper's start, §1.3)
        cands = [initial_solution(problem), greedy_search(problem)]
        start = min(cands, key=lambda lab: _partition_objective(x, coef, lab))
    labels, info = solve_rows(
        x,
        lo,
        hi,
        coef,
        integer,
        problem.k,
        start_labels=start,
        formulation=formulation,
        time_limit=time_limit,
        equality_cardinality=equality_cardinality,
        verbose=verbose,
    )
    return labels, info
