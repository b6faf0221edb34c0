"""Baselines in the same API: multidimensional Mondrian and K-Member (spec §5.3).

Both return a partition; utility is measured by :mod:`privopt.kanon.loss` on the *tight* box of
each class (§7.16), which is kinder to Mondrian than its open, non-tight output ranges.
"""

from __future__ import annotations

import numba
import numpy as np

from privopt.kanon.greedy import _cat_layout
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
def _kmember_kernel(x, k, coef, w, is_cat, den, cat_off, n_cat, first):  # pragma: no cover
    n, m = x.shape
    alive = np.ones(n, dtype=np.bool_)
    cls = np.full(n, -1, dtype=np.int64)
    mn = np.empty(m)
    mx = np.empty(m)
    distinct = np.zeros(m)
    cnt = np.zeros(max(n_cat, 1), dtype=np.int64)
    members = np.empty(k, dtype=np.int64)
    remaining = n
    r = first
    c = 0
    while remaining >= k:
        # seed: the record furthest from the previous seed (Byun et al. 2007)
        best_d = -1.0
        seed = -1
        for p in range(n):
            if not alive[p]:
                continue
            d = 0.0
            for j in range(m):
                if is_cat[j]:
                    d += w[j] * (0.0 if x[p, j] == x[r, j] else 1.0)
                else:
                    d += coef[j] * abs(x[p, j] - x[r, j])
            if d > best_d:
                best_d = d
                seed = p
        r = seed
        alive[seed] = False
        remaining -= 1
        cls[seed] = c
        members[0] = seed
        for j in range(m):
            mn[j] = x[seed, j]
            mx[j] = x[seed, j]
            if is_cat[j]:
                cnt[cat_off[j] + np.int64(x[seed, j])] += 1
                distinct[j] = 1.0
        for step in range(1, k):
            cur = 0.0
            for j in range(m):
                if is_cat[j]:
                    cur += w[j] * (distinct[j] - 1.0) / den[j]
                else:
                    cur += coef[j] * (mx[j] - mn[j])
            best = np.inf
            best_p = -1
            for p in range(n):
                if not alive[p]:
                    continue
                cost = 0.0
                for j in range(m):
                    if is_cat[j]:
                        dd = distinct[j] + (
                            1.0 if cnt[cat_off[j] + np.int64(x[p, j])] == 0 else 0.0
                        )
                        cost += w[j] * (dd - 1.0) / den[j]
                    else:
                        v = x[p, j]
                        hi = mx[j] if mx[j] > v else v
                        lo = mn[j] if mn[j] < v else v
                        cost += coef[j] * (hi - lo)
                if cost < best:
                    best = cost
                    best_p = p
                    if cost <= cur:
                        break  # inside the box: no candidate can be cheaper
            alive[best_p] = False
            remaining -= 1
            cls[best_p] = c
            members[step] = best_p
            for j in range(m):
                v = x[best_p, j]
                if is_cat[j]:
                    idx = cat_off[j] + np.int64(v)
                    if cnt[idx] == 0:
                        distinct[j] += 1.0
                    cnt[idx] += 1
                else:
                    if v > mx[j]:
                        mx[j] = v
                    if v < mn[j]:
                        mn[j] = v
        for s in range(k):
            for j in range(m):
                if is_cat[j]:
                    cnt[cat_off[j] + np.int64(x[members[s], j])] = 0
        for j in range(m):
            distinct[j] = 0.0
        c += 1
    return cls


def k_member(problem: KAnonProblem, seed: int = 0) -> np.ndarray:
    """Greedy k-member clustering (Byun et al., DASFAA 2007).

    Starting from a random record, each cluster is seeded by the remaining record furthest from
    the previous seed (distance ``Σ_j w_j |x_ij − x_lj|/(U_j−L_j)``, 0/1 for categoricals) and
    grown to k records by the one minimizing the cluster's information loss (weighted GCP, as
    Greedy Search). Each of the < k leftovers joins the cluster whose loss
    ``|C|·g(C)`` increases least (unlike Greedy Search's absolute criterion).

    Parameters
    ----------
    seed : seed of the random first record (numpy Generator).

    Returns
    -------
    (n,) int64 class ids.
    """
    rng = np.random.default_rng(seed)
    off, n_cat = _cat_layout(problem)
    coef = problem.weights / problem.ranges
    cls = _kmember_kernel(
        np.ascontiguousarray(problem.x),
        problem.k,
        coef,
        problem.weights,
        problem.categorical,
        problem.cat_denominator,
        off,
        n_cat,
        int(rng.integers(problem.n)),
    )
    x = problem.x
    for r in np.flatnonzero(cls < 0):
        done = cls >= 0
        lab, vals = cls[done], x[done]
        q = int(lab.max()) + 1
        size = np.bincount(lab, minlength=q).astype(np.float64)
        g_old = np.zeros(q)
        g_new = np.zeros(q)
        for j in range(problem.m):
            col = vals[:, j]
            if problem.categorical[j]:
                present = np.zeros((q, len(problem.labels[j])), dtype=bool)
                present[lab, col.astype(np.int64)] = True
                d_old = present.sum(axis=1)
                present[:, int(x[r, j])] = True
                d_new = present.sum(axis=1)
                g_old += problem.weights[j] * (d_old - 1.0) / problem.cat_denominator[j]
                g_new += problem.weights[j] * (d_new - 1.0) / problem.cat_denominator[j]
            else:
                cmin = np.full(q, np.inf)
                cmax = np.full(q, -np.inf)
                np.minimum.at(cmin, lab, col)
                np.maximum.at(cmax, lab, col)
                g_old += coef[j] * (cmax - cmin)
                g_new += coef[j] * (np.maximum(cmax, x[r, j]) - np.minimum(cmin, x[r, j]))
        cls[r] = int(np.argmin((size + 1) * g_new - size * g_old))
    return cls
