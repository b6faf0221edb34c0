"""Exact sums of squares of int64 arrays: the census releases' costs Σ (x − ñ)², as Python ints
(a square of a count near 2⁶¹ does not fit in int64)."""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["group_squared_distances", "squared_distance", "sum_of_squares"]


def sum_of_squares(d: np.ndarray) -> int:
    """Σ d² of an int64 array as an exact Python int (no int64 wrap-around).

    Each square is split as q·2³² + r so that both partial sums fit in int64; entries with
    |d| ≥ 2³¹ (whose square does not fit) are summed as Python ints.

    Example
    -------
    >>> sum_of_squares(np.array([3, -4, 2**40]))
    1208925819614629174706201
    """
    d = np.asarray(d, dtype=np.int64).ravel()
    if d.size < 1 << 31 and d.size and max(int(d.max()), -int(d.min())) < 1 << 16:
        return int(np.dot(d, d))  # every square < 2³², fewer than 2³¹ of them: no wrap-around
    big = np.abs(d) >= (1 << 31)
    small = d[~big]
    sq = small * small  # < 2^62
    total = int((sq >> 32).sum()) << 32
    total += int((sq & 0xFFFFFFFF).sum())
    return total + sum(int(v) * int(v) for v in d[big].tolist())


def squared_distance(a: np.ndarray, b: np.ndarray, rows: int = 1 << 16) -> int:
    """Σ (a − b)² over two integer arrays of the same shape, exact (Python int), in row blocks
    so that no full-size temporary is made. The differences are taken in int64 (two int32
    counts' difference can overflow int32)."""
    total = 0
    for i in range(0, a.shape[0], rows):
        total += sum_of_squares(np.subtract(a[i : i + rows], b[i : i + rows], dtype=np.int64))
    return total


def group_squared_distances(
    a: np.ndarray, b: np.ndarray, bounds: np.ndarray, rows: int = 1 << 16
) -> list[int]:
    """Σ (a − b)² over each group of rows bounds[t] .. bounds[t+1] − 1 of two integer (rows, N)
    arrays of the same shape, exact (Python ints); (k + 1,) bounds give k sums. In row blocks,
    so that no temporary is as large as the arrays; differences in int64, as
    :func:`squared_distance`.

    Example
    -------
    >>> a = np.array([[1, 2], [3, 0], [0, 4]])
    >>> group_squared_distances(a, np.zeros_like(a), np.array([0, 2, 2, 3]))
    [14, 0, 16]
    """
    bounds = np.asarray(bounds, dtype=np.int64)
    per_row = np.empty(a.shape[0], dtype=np.int64)
    # Row sums and their running total fit in int64 while every |a − b| < 2¹⁶ (squares below
    # 2³²) and there are fewer than 2³¹ of them; else each group is summed exactly apart.
    exact = a.size < 1 << 31
    for i in range(0, a.shape[0], rows):
        if not exact:
            break
        d = np.subtract(a[i : i + rows], b[i : i + rows], dtype=np.int64)
        exact = not d.size or max(int(d.max()), -int(d.min())) < 1 << 16
        np.einsum("ij,ij->i", d, d, out=per_row[i : i + rows])
    if exact:
        total = np.concatenate([[0], np.cumsum(per_row)])
        return (total[bounds[1:]] - total[bounds[:-1]]).tolist()
    return [squared_distance(a[x:y], b[x:y]) for x, y in itertools.pairwise(bounds)]
