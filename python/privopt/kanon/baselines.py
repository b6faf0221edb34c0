"""Baselines in the same API: multidimensional Mondrian and K-Member (spec §5.3).

Both return a partition; utility is measured by :mod:`privopt.kanon.loss` on the *tight* box of
each class (§7.16), which is kinder to Mondrian than its open, non-tight output ranges.
"""

from __future__ import annotations

import numba
import numpy as np

from privopt.kanon.box_cost import (
    add_to_class,
    box_cost,
    class_cost,
    clear_class,
    cost_with,
    start_class,
)
from privopt.kanon.problem import KAnonProblem

__all__ = ["mondrian", "k_member"]


def mondrian(problem: KAnonProblem) -> np.ndarray:
    """Multidimensional strict Mondrian (LeFevre et al. 2006) with UTD toolbox semantics.

    A partition is cut on the dimension with the widest range normalized by ``U_j − L_j`` (codes
    range / (|dom|−1) for categoricals, treated as ordered), trying dimensions by decreasing
    width (ties: first column) until a cut is allowable; the cut is at the median
    (left ``≤ median``, right ``> median``) and allowable when both sides keep ≥ k rows.

    Returns
    -------
    (n,) int64 class ids, one per leaf partition.
    """
    x, k = problem.x, problem.k
    ranges = problem.ranges
    labels = np.empty(problem.n, dtype=np.int64)
    stack = [np.arange(problem.n)]
    next_id = 0
    while stack:
        rows = stack.pop()
        sub = x[rows]
        width = (sub.max(axis=0) - sub.min(axis=0)) / ranges
        done = True
        if len(rows) >= 2 * k:
            for j in np.argsort(-width, kind="stable"):
                if width[j] <= 0:
                    break
                col = sub[:, j]
                med = np.partition(col, (len(col) - 1) // 2)[(len(col) - 1) // 2]
                left = col <= med
                n_left = int(left.sum())
                if n_left >= k and len(rows) - n_left >= k:
                    stack.append(rows[~left])
                    stack.append(rows[left])
                    done = False
                    break
        if done:
            labels[rows] = next_id
            next_id += 1
    return labels


@numba.njit(cache=True, nogil=True)
def _furthest(values, alive, r, dist_coef, is_cat):  # pragma: no cover - compiled
    """The alive record furthest from record r (Byun et al. 2007 seeding; first on ties)."""
    best_d = dist_coef[0] - dist_coef[0] - 1
    seed = -1
    for p in range(values.shape[0]):
        if not alive[p]:
            continue
        d = dist_coef[0] - dist_coef[0]
        for j in range(values.shape[1]):
            if is_cat[j]:
                if values[p, j] != values[r, j]:
                    d += dist_coef[j]
            else:
                diff = values[p, j] - values[r, j]
                d += dist_coef[j] * (diff if diff > 0 else -diff)
        if d > best_d:
            best_d, seed = d, p
    return seed


@numba.njit(cache=True, nogil=True)
def _cheapest(values, alive, mn, mx, distinct, cnt, coef, is_cat):  # pragma: no cover - compiled
    """The alive record of least ``g(C ∪ {x})`` (first on ties)."""
    cur = class_cost(mn, mx, distinct, coef, is_cat)
    best = cur
    best_p = -1
    for p in range(values.shape[0]):
        if not alive[p]:
            continue
        cost = cost_with(values, p, mn, mx, distinct, cnt, coef, is_cat)
        if best_p < 0 or cost < best:
            best, best_p = cost, p
            if cost <= cur:
                break  # inside the box: no candidate can be cheaper
    return best_p


@numba.njit(cache=True, nogil=True)
def _kmember_kernel(values, k, coef, dist_coef, is_cat, n_slots, first):  # pragma: no cover
    n, m = values.shape
    alive = np.ones(n, dtype=np.bool_)
    cls = np.full(n, -1, dtype=np.int64)
    mn = np.empty(m, dtype=values.dtype)
    mx = np.empty(m, dtype=values.dtype)
    distinct = np.zeros(m, dtype=np.int64)
    cnt = np.zeros(max(n_slots, 1), dtype=np.int64)
    members = np.empty(k, dtype=np.int64)
    remaining, r, c = n, first, 0
    while remaining >= k:
        seed = _furthest(values, alive, r, dist_coef, is_cat)
        r = seed
        alive[seed] = False
        cls[seed] = c
        members[0] = seed
        start_class(values, seed, is_cat, mn, mx, distinct, cnt)
        for step in range(1, k):
            p = _cheapest(values, alive, mn, mx, distinct, cnt, coef, is_cat)
            alive[p] = False
            cls[p] = c
            members[step] = p
            add_to_class(values, p, is_cat, mn, mx, distinct, cnt)
        clear_class(values, members, k, is_cat, cnt)
        remaining -= k
        c += 1
    return cls


def k_member(problem: KAnonProblem, seed: int = 0) -> np.ndarray:
    """Greedy k-member clustering (Byun et al., DASFAA 2007).

    Starting from a random record, each cluster is seeded by the remaining record furthest from
    the previous seed (distance ``Σ_j w_j |x_ij − x_lj|/(U_j−L_j)``, 0/1 for categoricals) and
    grown to k records by the one minimizing the cluster's information loss (weighted GCP, as
    Greedy Search). Each of the < k leftovers joins the cluster whose loss
    ``|C|·g(C)`` increases least (unlike Greedy Search's absolute criterion). Costs are exact
    integers where the data allow it (:mod:`privopt.kanon.box_cost`).

    Parameters
    ----------
    seed : seed of the random first record (numpy Generator).

    Returns
    -------
    (n,) int64 class ids.
    """
    rng = np.random.default_rng(seed)
    cost = box_cost(problem)
    den = np.where(problem.categorical, problem.cat_denominator, 1).astype(cost.coef.dtype)
    dist_coef = cost.coef * den  # categorical distance: w_j per differing value
    cls = _kmember_kernel(
        cost.values,
        problem.k,
        cost.coef,
        dist_coef,
        cost.is_cat,
        cost.n_slots,
        int(rng.integers(problem.n)),
    )
    q = int(cls.max()) + 1
    for r in np.flatnonzero(cls < 0):
        size = np.bincount(cls[cls >= 0], minlength=q)
        g_old = cost.row_costs(cls, q, -1)
        g_new = cost.row_costs(cls, q, int(r))
        cls[r] = int(np.argmin((size + 1) * g_new - size * g_old))
    return cls
