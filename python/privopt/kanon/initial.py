"""Variance-ordered lexicographic sort and the Initial Feasible Solution (spec §2, §7.5–7.6)."""

from __future__ import annotations

import numpy as np

from privopt._validation import check_instance, check_permutation
from privopt.kanon.problem import KAnonProblem

__all__ = ["key_order", "variance_sort", "initial_ksets", "initial_solution"]


def key_order(problem: KAnonProblem) -> np.ndarray:
    """Attribute indices by ascending weighted variance ``Var(x_j)/w_j²`` (eq. 36), stable.

    The variance is the population one (ddof=0) of the raw column (codes for categoricals:
    §7.5 sorts before one-hot encoding).
    """
    var = problem.x.var(axis=0) / problem.weights**2
    return np.argsort(var, kind="stable")


def variance_sort(problem: KAnonProblem) -> np.ndarray:
    """Row order (n,): lexicographic with the smallest-variance attribute as primary key.

    Ties (identical rows) keep the original index order (§2 step 3, [CODE]).
    """
    check_instance("problem", problem, KAnonProblem)
    keys = key_order(problem)
    # np.lexsort uses the LAST key as primary, hence the reversal.
    return np.lexsort([problem.x[:, j] for j in keys[::-1]])


def initial_ksets(order: np.ndarray, k: int) -> list[np.ndarray]:
    """Cut ``order`` into ⌊n/k⌋ consecutive k-sets; the last absorbs the n mod k leftovers."""
    q = len(order) // k
    sets = [order[i * k : (i + 1) * k] for i in range(q - 1)]
    sets.append(order[(q - 1) * k :])
    return sets


def initial_solution(problem: KAnonProblem, order: np.ndarray | None = None) -> np.ndarray:
    """Class id per row (n,) of the Initial Feasible Solution (IFS)."""
    check_instance("problem", problem, KAnonProblem)
    order = (
        variance_sort(problem) if order is None else check_permutation("order", order, problem.n)
    )
    labels = np.empty(problem.n, dtype=np.int64)
    for c, rows in enumerate(initial_ksets(order, problem.k)):
        labels[rows] = c
    return labels
