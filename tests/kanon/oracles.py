"""Independent oracles of the k-anonymity tests: eq. (34) recomputed from the definition, and
the exact optimum by dynamic programming over subsets (every partition into groups of >= k
rows, any size, no set-partition or 2k-1 argument used)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from privopt.kanon import KAnonProblem


def subset_costs(problem: KAnonProblem) -> np.ndarray:
    """Eq. (34) loss of every subset of rows as one class, indexed by bitmask (2^n,)."""
    n = problem.n
    costs = np.zeros(1 << n)
    for mask in range(1, 1 << n):
        rows = [i for i in range(n) if mask >> i & 1]
        sub = problem.x[rows]
        per_row = 0.0
        for j in range(problem.m):
            col = sub[:, j]
            if problem.categorical[j]:
                c = len(set(col.tolist()))
                per_row += problem.weights[j] * (c / len(problem.labels[j]) if c >= 2 else 0.0)
            else:
                per_row += problem.weights[j] * (col.max() - col.min()) / problem.ranges[j]
        costs[mask] = len(rows) * per_row
    return costs


def optimum_by_subset_dp(problem: KAnonProblem) -> float:
    """Least eq. (34) loss over all partitions into classes of >= k rows (n <= ~12)."""
    n, k = problem.n, problem.k
    costs = subset_costs(problem)
    best = np.full(1 << n, np.inf)
    best[0] = 0.0
    for mask in range(1, 1 << n):
        low = mask & -mask  # the class of the lowest remaining row
        rest = mask ^ low
        sub = rest
        while True:
            group = sub | low
            if bin(group).count("1") >= k:
                best[mask] = min(best[mask], costs[group] + best[mask ^ group])
            if sub == 0:
                break
            sub = (sub - 1) & rest
    return float(best[(1 << n) - 1])


def exact_class_cost(problem: KAnonProblem, rows) -> Fraction:
    """Eq. (34) loss of one class in exact rational arithmetic (integer data and weights)."""
    sub = problem.x[list(rows)]
    per_row = Fraction(0)
    for j in range(problem.m):
        col = [int(v) for v in sub[:, j]]
        w = Fraction(problem.weights[j]).limit_denominator(10**6)
        if problem.categorical[j]:
            c = len(set(col))
            per_row += w * Fraction(c, len(problem.labels[j])) if c >= 2 else 0
        else:
            span = Fraction(max(col) - min(col))
            per_row += w * span / Fraction(problem.ranges[j]).limit_denominator(10**9)
    return len(sub) * per_row


def partition_objective_by_scatter(x, coef, labels) -> float:
    """Eq. (34) of a partition with numpy's scatter reductions (the compiled version's
    predecessor): classes numbered by first appearance, numpy's sums."""
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    lab = rank[inv.ravel()]
    c = int(lab.max()) + 1
    cmin = np.full((c, x.shape[1]), np.inf)
    cmax = np.full((c, x.shape[1]), -np.inf)
    np.minimum.at(cmin, lab, x)
    np.maximum.at(cmax, lab, x)
    return float((np.bincount(lab) * ((cmax - cmin) * coef).sum(axis=1)).sum())


def carry_and_final_by_sets(sub_lab: np.ndarray, n_last: int):
    """Split & Carry's carried rows and renumbered classes with set operations (the compiled
    version's predecessor): (carried, final labels, carried labels)."""
    carried = np.zeros(len(sub_lab), dtype=bool)
    if n_last:
        carried = np.isin(sub_lab, sub_lab[len(sub_lab) - n_last :])
    final = np.unique(sub_lab[~carried], return_inverse=True)[1].ravel()
    carry = np.unique(sub_lab[carried], return_inverse=True)[1].ravel()
    return carried, final, carry


def seams_by_scanning(labels: np.ndarray, cuts: np.ndarray, k: int) -> list[np.ndarray]:
    """Rows of Split & Carry's seams from the whole table's labels (n,): at each cut, every row
    of a class holding one of the k rows before it or the k after it; seams that share a row
    merged into one (their cuts are then solved together)."""
    merged: list[np.ndarray] = []
    for c in cuts[1:-1]:
        rows = np.flatnonzero(np.isin(labels, labels[c - k : c + k]))
        if merged and np.intersect1d(merged[-1], rows).size:
            merged[-1] = np.union1d(merged[-1], rows)
        else:
            merged.append(rows)
    return merged
