"""Greedy Search (paper Algorithm 2; spec §4 and §7.10), inner loop compiled with Numba.

Semantics (spec §4.3): go down the variance-sorted list; the seed is the first remaining record;
the class grows k-1 times by the remaining record minimizing the per-record weighted GCP
``g(E ∪ {x}) = Σ_j w_j NCP_j(E ∪ {x})``, ties to the earliest in sorted order; stop after ⌊n/k⌋
classes; each of the n mod k leftovers goes, in sorted order, to the class minimizing the
*absolute* ``g(C ∪ {r})`` (Table 7 rules out the increase criterion), ties to the oldest class.

The compiled scan is exact (it returns what a full scan returns) but stops early in two cases:
a candidate inside the current box has the least possible cost (g is monotone under adding
records and float sums of larger non-negative terms are not smaller), and when the primary sort
key is numeric, its term is non-decreasing along the sorted list, so once a lower bound exceeds
the best cost no later record can win.
"""

from __future__ import annotations

import numba
import numpy as np

from privopt._validation import check_instance, check_permutation
from privopt.kanon.initial import key_order, variance_sort
from privopt.kanon.problem import KAnonProblem

__all__ = ["greedy_search", "greedy_search_reference"]


def _cat_layout(problem: KAnonProblem) -> tuple[np.ndarray, int]:
    sizes = problem.domain_sizes
    offsets = np.zeros(problem.m, dtype=np.int64)
    offsets[1:] = np.cumsum(sizes)[:-1]
    return offsets, int(sizes.sum())


@numba.njit(cache=True, nogil=True)
def _class_cost(mn, mx, distinct, coef, is_cat, den, w):  # pragma: no cover - compiled
    total = 0.0
    for j in range(mn.shape[0]):
        if is_cat[j]:
            total += w[j] * (distinct[j] - 1.0) / den[j]
        else:
            total += coef[j] * (mx[j] - mn[j])
    return total


@numba.njit(cache=True, nogil=True)
def _greedy_kernel(xs, k, coef, w, is_cat, den, cat_off, n_cat, primary):  # pragma: no cover
    """Class id per sorted position for the first ⌊n/k⌋ classes; leftovers get -1."""
    n, m = xs.shape
    end = n
    nxt = np.empty(n, dtype=np.int64)
    prv = np.empty(n, dtype=np.int64)
    for p in range(n):
        nxt[p] = p + 1
        prv[p] = p - 1
    head = 0
    cls = np.full(n, -1, dtype=np.int64)
    mn = np.empty(m)
    mx = np.empty(m)
    distinct = np.zeros(m)
    cnt = np.zeros(max(n_cat, 1), dtype=np.int64)
    codes = np.zeros((n, m), dtype=np.int64)
    for p in range(n):
        for j in range(m):
            if is_cat[j]:
                codes[p, j] = cat_off[j] + np.int64(xs[p, j])
    members = np.empty(k, dtype=np.int64)
    q = n // k
    for c in range(q):
        seed = head
        # unlink the seed
        head = nxt[seed]
        if head != end:
            prv[head] = -1
        cls[seed] = c
        members[0] = seed
        for j in range(m):
            mn[j] = xs[seed, j]
            mx[j] = xs[seed, j]
            if is_cat[j]:
                cnt[codes[seed, j]] += 1
                distinct[j] = 1.0
        for step in range(1, k):
            cur = _class_cost(mn, mx, distinct, coef, is_cat, den, w)
            rest = cur
            if primary >= 0:
                rest = cur - coef[primary] * (mx[primary] - mn[primary])
            best = np.inf
            best_p = -1
            p = head
            while p != end:
                cost = 0.0
                for j in range(m):
                    if is_cat[j]:
                        d = distinct[j] + (1.0 if cnt[codes[p, j]] == 0 else 0.0)
                        cost += w[j] * (d - 1.0) / den[j]
                    else:
                        v = xs[p, j]
                        hi = mx[j] if mx[j] > v else v
                        lo = mn[j] if mn[j] < v else v
                        cost += coef[j] * (hi - lo)
                if cost < best:
                    best = cost
                    best_p = p
                    if cost <= cur:
                        break
                elif primary >= 0:
                    v = xs[p, primary]
                    hi = mx[primary] if mx[primary] > v else v
                    bound = coef[primary] * (hi - mn[primary]) + rest
                    if bound > best + 1e-12 * (1.0 + best):
                        break
                p = nxt[p]
            # take best_p into the class and unlink it
            cls[best_p] = c
            members[step] = best_p
            a = prv[best_p]
            b = nxt[best_p]
            if a >= 0:
                nxt[a] = b
            else:
                head = b
            if b != end:
                prv[b] = a
            for j in range(m):
                v = xs[best_p, j]
                if is_cat[j]:
                    if cnt[codes[best_p, j]] == 0:
                        distinct[j] += 1.0
                    cnt[codes[best_p, j]] += 1
                else:
                    if v > mx[j]:
                        mx[j] = v
                    if v < mn[j]:
                        mn[j] = v
        # reset the category counts of this class
        for s in range(k):
            for j in range(m):
                if is_cat[j]:
                    cnt[codes[members[s], j]] = 0
        for j in range(m):
            distinct[j] = 0.0
    return cls


def _assign_leftovers(problem: KAnonProblem, xs: np.ndarray, cls: np.ndarray) -> None:
    """Sequentially attach each leftover (cls == -1, in sorted order) to argmin g(C ∪ {r})."""
    left = np.flatnonzero(cls < 0)
    if left.size == 0:
        return
    q = int(cls.max()) + 1
    coef = problem.weights / problem.ranges
    for r in left:
        done = cls >= 0
        lab = cls[done]
        vals = xs[done]
        g = np.zeros(q)
        for j in range(problem.m):
            col = vals[:, j]
            if problem.categorical[j]:
                h = len(problem.labels[j])
                present = np.zeros((q, h), dtype=bool)
                present[lab, col.astype(np.int64)] = True
                present[:, int(xs[r, j])] = True
                g += problem.weights[j] * (present.sum(axis=1) - 1.0) / problem.cat_denominator[j]
            else:
                cmin = np.full(q, np.inf)
                cmax = np.full(q, -np.inf)
                np.minimum.at(cmin, lab, col)
                np.maximum.at(cmax, lab, col)
                g += coef[j] * (np.maximum(cmax, xs[r, j]) - np.minimum(cmin, xs[r, j]))
        cls[r] = int(np.argmin(g))  # first minimum = oldest class (§4.3)


def greedy_search(problem: KAnonProblem, order: np.ndarray | None = None) -> np.ndarray:
    """Greedy Search partition: class id per row (n,), classes numbered by creation.

    Parameters
    ----------
    problem : the validated problem (n rows, m QIs, k).
    order : optional row order (n,); default :func:`variance_sort`.

    Returns
    -------
    (n,) int64 class ids; every class has between k and k + (n mod k) rows.
    """
    check_instance("problem", problem, KAnonProblem)
    order = (
        variance_sort(problem) if order is None else check_permutation("order", order, problem.n)
    )
    xs = np.ascontiguousarray(problem.x[order])
    off, n_cat = _cat_layout(problem)
    primary = int(key_order(problem)[0])
    if problem.categorical[primary]:
        primary = -1  # the monotone lower bound only holds for a numeric primary key
    cls = _greedy_kernel(
        xs,
        problem.k,
        problem.weights / problem.ranges,
        problem.weights,
        problem.categorical,
        problem.cat_denominator,
        off,
        n_cat,
        primary,
    )
    _assign_leftovers(problem, xs, cls)
    labels = np.empty(problem.n, dtype=np.int64)
    labels[order] = cls
    return labels


def greedy_search_reference(problem: KAnonProblem) -> np.ndarray:
    """Slow full-scan Greedy Search in plain numpy: the test oracle of :func:`greedy_search`."""
    order = list(variance_sort(problem))
    x, k = problem.x, problem.k
    coef = problem.weights / problem.ranges

    def g(rows):
        sub = x[rows]
        total = 0.0
        for j in range(problem.m):
            if problem.categorical[j]:
                total += (
                    problem.weights[j]
                    * (len(np.unique(sub[:, j])) - 1)
                    / problem.cat_denominator[j]
                )
            else:
                total += coef[j] * (sub[:, j].max() - sub[:, j].min())
        return total

    classes: list[list[int]] = []
    remaining = order
    for _ in range(problem.n // k):
        eq = [remaining.pop(0)]
        for _ in range(k - 1):
            costs = [g(eq + [r]) for r in remaining]
            eq.append(remaining.pop(int(np.argmin(costs))))
        classes.append(eq)
    for r in remaining:
        costs = [g(c + [r]) for c in classes]
        classes[int(np.argmin(costs))].append(r)
    labels = np.empty(problem.n, dtype=np.int64)
    for c, rows in enumerate(classes):
        labels[rows] = c
    return labels
