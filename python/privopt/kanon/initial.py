"""Variance-ordered lexicographic sort and the Initial Feasible Solution (spec §2, §7.5–7.6)."""

from __future__ import annotations

from fractions import Fraction

import numba
import numpy as np

from privopt._validation import check_instance, check_permutation
from privopt.kanon.box_cost import exact_weights
from privopt.kanon.problem import KAnonProblem

__all__ = [
    "key_order",
    "variance_sort",
    "sort_by_keys",
    "initial_ksets",
    "initial_solution",
    "split_large_classes",
]


def _weighted_variances(problem: KAnonProblem) -> list:
    """``Var(x_j)/w_j²`` per column (eq. 36): exact Fractions for integer data and rational
    weights (``n²·Var = n·Σx² − (Σx)²`` in Python integers), else float64."""
    x = problem.x
    w = exact_weights(problem.weights)
    integral, lo, hi = _integral_range(x)
    magnitude = np.maximum(np.abs(lo), np.abs(hi))  # (m,) largest |x_j|
    if w is None or not integral or not np.all(magnitude < 2**53):
        # log2 of Var/w², from the column scaled by a power of two (exact), so that values
        # near the float64 limit cannot overflow the squares
        exponent = np.frexp(np.abs(x).max(axis=0))[1]
        with np.errstate(divide="ignore"):
            log_var = np.log2(np.ldexp(x, -exponent).var(axis=0))
        return list(log_var + 2 * exponent - 2 * np.log2(problem.weights))
    n = len(x)
    sums, sums_of_squares = _integer_moments(x)  # wrap around where unused, below
    out = []
    for j in range(problem.m):
        if float(magnitude[j]) ** 2 * n < 2**62:  # int64 sums cannot overflow
            s1, s2 = int(sums[j]), int(sums_of_squares[j])
        else:  # Python ints
            col = x[:, j].astype(np.int64)
            obj = col.astype(object)
            s1, s2 = int(obj.sum()), int((obj * obj).sum())
        out.append(Fraction(n * s2 - s1 * s1, int(w[j]) ** 2))
    return out


def key_order(problem: KAnonProblem) -> np.ndarray:
    """Attribute indices by ascending weighted variance ``Var(x_j)/w_j²`` (eq. 36).

    The variance is the population one (ddof=0) of the raw column (codes for categoricals:
    §7.5 sorts before one-hot encoding), compared exactly where the data are integers. Equal
    variances are ordered by the columns' contents (their bytes), not their positions, so the
    result does not depend on the order in which the table lists its columns.
    """
    var = _weighted_variances(problem)
    if len(set(var)) == problem.m:  # no ties: the contents are not needed
        return np.array(sorted(range(problem.m), key=var.__getitem__), dtype=np.int64)
    content = [np.ascontiguousarray(problem.x[:, j]).tobytes() for j in range(problem.m)]
    return np.array(sorted(range(problem.m), key=lambda j: (var[j], content[j])), dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def _integer_moments(x):  # pragma: no cover - compiled
    """Σ x_j and Σ x_j² per column of the integral table ``x`` (n, m), in int64 (exact where
    n·max|x_j|² < 2⁶²; the caller checks), in one pass over the rows."""
    n, m = x.shape
    sums = np.zeros(m, dtype=np.int64)
    squares = np.zeros(m, dtype=np.int64)
    for i in range(n):
        for j in range(m):
            v = np.int64(x[i, j])
            sums[j] += v
            squares[j] += v * v
    return sums, squares


def variance_sort(problem: KAnonProblem) -> np.ndarray:
    """Row order (n,): lexicographic with the smallest-variance attribute as primary key.

    Ties (identical rows) keep the original index order ([CODE]).
    """
    check_instance("problem", problem, KAnonProblem)
    return sort_by_keys(problem.x, key_order(problem))


def sort_by_keys(x: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Stable lexicographic row order (n,) of ``x`` (n, m) with ``keys`` (column indices,
    primary first): :func:`variance_sort` for callers that already hold the key order."""
    packed = _packed_key(x, keys)
    if packed is None:  # np.lexsort uses the LAST key as primary, hence the reversal
        return np.lexsort([x[:, j] for j in keys[::-1]])
    n = len(x)
    index_bits = max(int(n - 1).bit_length(), 1)
    if int(packed.max(initial=0)).bit_length() + index_bits > 62:
        return np.argsort(packed, kind="stable")
    # key and row index in one int64: the keys are distinct, so any sort is stable, and
    # numpy's unstable integer sort is several times faster than its stable argsort
    combined = (packed << index_bits) | np.arange(n, dtype=np.int64)
    combined.sort()
    return combined & ((1 << index_bits) - 1)


def _packed_key(x: np.ndarray, keys: np.ndarray) -> np.ndarray | None:
    """The lexicographic order of integral columns as one int64 (mixed radix), when it fits."""
    integral, lo, hi = _integral_range(x)
    if not integral:
        return None
    radix = hi - lo + 1
    if float(np.log2(radix).sum()) >= 62:
        return None
    return _mixed_radix(x, np.asarray(keys, dtype=np.int64), lo, radix.astype(np.int64))


@numba.njit(cache=True, nogil=True)
def _integral_range(x):  # pragma: no cover - compiled
    """Whether every value of ``x`` (n, m) is integral, and the columns' minima and maxima
    (one pass over the table instead of a rounding, a comparison and two reductions)."""
    n, m = x.shape
    lo = np.full(m, np.inf)
    hi = np.full(m, -np.inf)
    integral = True
    for i in range(n):
        for j in range(m):
            v = x[i, j]
            if v != np.floor(v):  # also NaN
                integral = False
            lo[j] = min(lo[j], v)
            hi[j] = max(hi[j], v)
    return integral, lo, hi


@numba.njit(cache=True, nogil=True)
def _mixed_radix(x, keys, lo, radix):  # pragma: no cover - compiled
    """Each row's key digits ``x[i, key] − lo[key]`` as one int64, most significant first."""
    n = x.shape[0]
    packed = np.zeros(n, dtype=np.int64)
    for i in range(n):
        v = np.int64(0)
        for j in keys:
            v = v * radix[j] + np.int64(x[i, j] - lo[j])
        packed[i] = v
    return packed


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


def split_large_classes(labels: np.ndarray, k: int) -> np.ndarray:
    """Cut every class of ≥ 2k rows into consecutive pieces of k rows (the last piece takes the
    remainder), in row order.

    A piece's tight box lies inside its class's box, so the loss does not grow (spec §3.4), and
    every class then has k..2k−1 rows: the set-partition model's group sizes, and Lemma 2's
    sub-problem bound k(2k−1+S) for Split & Carry.

    Examples
    --------
    >>> split_large_classes(np.array([0, 0, 1, 0, 0, 0, 1, 0, 1, 2, 2]), 2).tolist()
    [0, 0, 1, 3, 3, 4, 1, 4, 1, 2, 2]
    """
    labels = np.asarray(labels)
    sizes = np.bincount(labels)
    if sizes.max() < 2 * k:
        return labels
    out = labels.copy()
    nxt = int(labels.max()) + 1
    for c in np.flatnonzero(sizes >= 2 * k):
        members = np.flatnonzero(labels == c)  # ascending = row order
        n_pieces = len(members) // k
        piece = np.minimum(np.arange(len(members)) // k, n_pieces - 1)
        out[members[piece > 0]] = nxt + piece[piece > 0] - 1
        nxt += n_pieces - 1
    return out
