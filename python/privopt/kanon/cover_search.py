"""Exhaustive search for the least reduced-cost exact cover: the k-anonymity MILP's proof step.

With row duals ``π`` of the set-partition master, every partition ``x`` (column multiplicities)
satisfies the identity ``cost(x) = π·mult + Σ_g d_g x_g`` with ``d_g = cost_g − Σ_t a_tg π_t``.
So the optimum is ``π·mult + min Σ_g d_g x_g`` over exact covers ``Σ_g a_tg x_g = mult_t``. A
depth-first search over covers (always covering the lowest uncovered row type next, columns in
non-decreasing order so that no cover is visited twice) with the bound
``Σ_t rem_t · min_{g∋t} d_g/|g|`` on what is left finds that minimum exactly. Restricted to the
columns with ``d_g`` below the incumbent's budget, it proves (or improves) the incumbent without
relying on any solver's optimality claim.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

__all__ = ["CoverSearch", "least_cost_cover"]


@numba.njit(cache=True, nogil=True)
def _type_shares(ptr, types, counts, d, size, n_types):
    """``h_t = min_{g∋t} d_g/|g|``: a lower bound on what each row of type t adds to Σ d."""
    h = np.full(n_types, np.inf)
    for g in range(len(d)):
        for q in range(ptr[g], ptr[g + 1]):
            v = d[g] / size[g]
            if v < h[types[q]]:
                h[types[q]] = v
    return h


@numba.njit(cache=True, nogil=True)
def _fits(ptr, types, counts, rem, g):
    for q in range(ptr[g], ptr[g + 1]):  # noqa: SIM110 - Numba compiles no generators
        if counts[q] > rem[types[q]]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _apply(ptr, types, counts, rem, h, g, sign):
    """Take column g out of (sign=-1) or back into (sign=+1) the remaining multiplicities;
    returns the change of the remaining-share bound."""
    change = 0.0
    for q in range(ptr[g], ptr[g + 1]):
        rem[types[q]] += sign * counts[q]
        change += sign * counts[q] * h[types[q]]
    return change


# One jitted branch-and-bound: helpers would be calls in its innermost loop.
@numba.njit(cache=True, nogil=True)
def _search(  # noqa: C901
    ptr, types, counts, d, size, mult, by_ptr, by_col, budget, node_limit
):  # pragma: no cover
    n_types = len(mult)
    rem = mult.copy()
    h = _type_shares(ptr, types, counts, d, size, n_types)
    rest = 0.0
    for t in range(n_types):
        if rem[t] > 0:
            if not np.isfinite(h[t]):
                return budget, np.empty(0, np.int64), True, 0  # a type no column covers
            rest += rem[t] * h[t]
    best = budget
    depth_max = int(mult.sum()) + 1
    best_cols = np.empty(0, np.int64)
    at_type = np.empty(depth_max, np.int64)
    at_pos = np.empty(depth_max, np.int64)
    used = np.full(depth_max, -1, np.int64)
    acc = np.zeros(depth_max + 1)
    t0 = 0
    while t0 < n_types and rem[t0] == 0:
        t0 += 1
    if t0 == n_types:
        return 0.0, best_cols, True, 0
    at_type[0], at_pos[0] = t0, by_ptr[t0]
    depth, nodes = 0, 0
    while depth >= 0:
        t = at_type[depth]
        if used[depth] >= 0:  # back out the column tried last at this depth
            rest += _apply(ptr, types, counts, rem, h, used[depth], 1)
            used[depth] = -1
        pos, chosen = at_pos[depth], -1
        while pos < by_ptr[t + 1] and chosen < 0:
            g = by_col[pos]
            pos += 1
            if not _fits(ptr, types, counts, rem, g):
                continue
            covered = 0.0
            for q in range(ptr[g], ptr[g + 1]):
                covered += counts[q] * h[types[q]]
            if acc[depth] + d[g] + rest - covered < best:
                chosen = g
        at_pos[depth] = pos
        if chosen < 0:
            depth -= 1
            continue
        nodes += 1
        if nodes > node_limit:
            return best, best_cols, False, nodes
        rest += _apply(ptr, types, counts, rem, h, chosen, -1)
        used[depth] = chosen
        acc[depth + 1] = acc[depth] + d[chosen]
        nt = t
        while nt < n_types and rem[nt] == 0:
            nt += 1
        if nt == n_types:  # a complete cover below the budget
            best = acc[depth + 1]
            best_cols = used[: depth + 1].copy()
            continue
        depth += 1
        at_type[depth] = nt
        # covering the same type again: only columns from this one on (no permuted repeats)
        at_pos[depth] = pos - 1 if nt == t else by_ptr[nt]
    return best, best_cols, True, nodes


@dataclass(frozen=True)
class CoverSearch:
    """Outcome of :func:`least_cost_cover`.

    Attributes
    ----------
    value : float
        ``min Σ d_g x_g`` over exact covers when it is below the budget, else the budget.
    columns : (c,) int64
        Columns of the best cover found below the budget (a column repeats for multiplicity
        > 1); empty when none beats the budget.
    complete : bool
        The search finished, so ``value`` is proven (no node limit hit).
    nodes : int
    """

    value: float
    columns: np.ndarray
    complete: bool
    nodes: int


def least_cost_cover(
    counts: sp.csc_array,
    reduced_costs: np.ndarray,
    mult: np.ndarray,
    budget: float,
    *,
    node_limit: int = 10**12,
) -> CoverSearch:
    """Least ``Σ d_g x_g`` over integer ``x ≥ 0`` with ``counts @ x = mult``, searched below
    ``budget``.

    Parameters
    ----------
    counts : (T, G) sparse, ``a_tg`` = rows of type t in column g.
    reduced_costs : (G,) ``d_g``.
    mult : (T,) rows of each type.
    budget : only covers with ``Σ d_g x_g < budget`` are searched for.
    node_limit : stop after this many search nodes (``complete`` is then False).

    Returns
    -------
    CoverSearch

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> a = sp.csc_array(np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1]]))
    >>> res = least_cost_cover(a, np.array([0.5, 0.0, 0.2]), np.array([1, 1, 1]), 1.0)
    >>> res.value, res.columns.size, res.complete  # no exact cover (each column covers 2 of 3)
    (1.0, 0, True)
    """
    a = sp.csc_array(counts)
    a.sort_indices()
    d = np.asarray(reduced_costs, dtype=np.float64)
    size = np.asarray(a.sum(axis=0), dtype=np.float64).ravel()
    csr = sp.csr_array(a)
    by_ptr = csr.indptr.astype(np.int64)
    by_col = csr.indices.astype(np.int64)
    for t in range(a.shape[0]):  # cheapest columns first within each type
        seg = by_col[by_ptr[t] : by_ptr[t + 1]]
        by_col[by_ptr[t] : by_ptr[t + 1]] = seg[np.argsort(d[seg], kind="stable")]
    value, cols, complete, nodes = _search(
        a.indptr.astype(np.int64),
        a.indices.astype(np.int64),
        a.data.astype(np.int64),
        d,
        size,
        np.asarray(mult, dtype=np.int64),
        by_ptr,
        by_col,
        float(budget),
        int(node_limit),
    )
    return CoverSearch(float(value), cols, bool(complete), int(nodes))
