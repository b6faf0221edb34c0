"""Certified lower bounds from any row multipliers: the safe dual bound (Neumaier &
Shcherbina, 2004) and the simplex groups it keeps as constraints.

These need no solver: they take the multipliers a solve returned (or any others) and the model's
arrays, and hold whatever the solver's tolerances did. Every engine of :mod:`privopt.lp` certifies
its bound here (docs/certification.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privopt._validation import real_array
from privopt.errors import InvalidInput
from privopt.lp._arrays import float_array, float_vector

__all__ = ["SimplexGroups", "safe_dual_bound"]


class SimplexGroups:
    """Columns grouped into simplices ``Σ_{j ∈ g} x_j = rhs_g, x ≥ 0`` (each column in at most
    one group), kept as constraints by :func:`safe_dual_bound`: over a simplex,
    ``min dᵀx = rhs_g · min_{j ∈ g} d_j``, which needs no column upper bound and is at least
    the bound from any multiplier of the group's row (whose dual infeasibilities would add up
    over every column of the group).

    Parameters
    ----------
    group : (n,) int, the group of each column, −1 for none.
    rhs : (n_groups,) right-hand sides ≥ 0.

    Examples
    --------
    >>> g = SimplexGroups([0, 0, 1, -1], [1.0, 2.0])
    >>> g.minimum(np.array([3.0, -1.0, 0.5, 7.0])).tolist()
    [-1.0, 0.5]
    >>> SimplexGroups.blocks(2, 3).minimum(np.arange(6.0)).tolist()   # rows of a 2 × 3 matrix
    [0.0, 3.0]
    """

    def __init__(self, group: Any, rhs: Any) -> None:
        self.group = real_array("group", group, np.int64)
        self.rhs = float_array("rhs", rhs)
        self.n_cols = self.group.size
        self._run: tuple[int, int] | None = None  # (offset, size) of consecutive equal groups
        if self.group.ndim != 1 or self.rhs.ndim != 1:
            raise InvalidInput("simplex groups: group and rhs must be 1-D")
        n_groups = self.rhs.size
        if self.group.size and (self.group.min() < -1 or self.group.max() >= n_groups):
            raise InvalidInput(f"simplex groups: group ids must lie in [-1, {n_groups})")
        _check_rhs(self.rhs)
        counts = np.bincount(self.group[self.group >= 0], minlength=n_groups)
        if (counts == 0).any():
            raise InvalidInput(f"simplex groups: group {int(np.argmin(counts))} has no column")
        # Members sorted by group, so that one reduceat takes every group's minimum.
        self._order = np.argsort(self.group, kind="stable")[self.n_cols - int(counts.sum()) :]
        self._starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)

    @classmethod
    def blocks(
        cls, n_groups: int, size: int, rhs: Any = 1.0, *, offset: int = 0, n_cols: int | None = None
    ) -> SimplexGroups:
        """``n_groups`` consecutive groups of ``size`` columns from column ``offset`` on, among
        ``n_cols`` (default: just them): the rows of a row-major (n, K) matrix whose rows are
        distributions. Held without per-column arrays."""
        if not (n_groups >= 0 and size >= 1 and offset >= 0):
            raise InvalidInput("simplex groups: n_groups >= 0, size >= 1 and offset >= 0")
        self = cls.__new__(cls)
        self.rhs = np.broadcast_to(np.asarray(rhs, dtype=np.float64), (n_groups,)).copy()
        _check_rhs(self.rhs)
        self.n_cols = offset + n_groups * size if n_cols is None else int(n_cols)
        if self.n_cols < offset + n_groups * size:
            raise InvalidInput("simplex groups: n_cols is smaller than the groups' columns")
        self._run = (int(offset), int(size))
        return self

    def shifted(self, offset: int, n_cols: int) -> SimplexGroups:
        """The same groups with their columns moved ``offset`` further, among ``n_cols``."""
        if self._run is not None:
            start, size = self._run
            return SimplexGroups.blocks(
                self.rhs.size, size, self.rhs, offset=start + offset, n_cols=n_cols
            )
        group = np.full(n_cols, -1, dtype=np.int64)
        group[offset : offset + self.n_cols] = self.group
        return SimplexGroups(group, self.rhs)

    def _span(self) -> slice:
        assert self._run is not None
        start, size = self._run
        return slice(start, start + self.rhs.size * size)

    def group_of(self, cols: np.ndarray) -> np.ndarray:
        """The group of each column in ``cols`` (−1 for none)."""
        cols = np.asarray(cols, dtype=np.int64)
        if self._run is None:
            return self.group[cols]
        start, size = self._run
        g = (cols - start) // size
        return np.where((cols >= start) & (g < self.rhs.size), g, -1)

    def minimum(self, d: np.ndarray) -> np.ndarray:
        """``min_{j ∈ g} d_j`` of every group, shape (n_groups,)."""
        if not self.rhs.size:
            return np.zeros(0)
        d = np.asarray(d, dtype=np.float64)
        if self._run is not None:
            return d[self._span()].reshape(self.rhs.size, -1).min(axis=1)
        return np.minimum.reduceat(d[self._order], self._starts)

    def non_members(self) -> np.ndarray:
        """Indices of the columns in no group."""
        if self._run is not None:
            span = self._span()
            return np.r_[0 : span.start, span.stop : self.n_cols].astype(np.int64)
        return np.flatnonzero(self.group < 0)

    def subtract(self, values: np.ndarray, duals: np.ndarray) -> None:
        """``values[j] -= duals[group of j]`` for every member j, in place."""
        if self._run is not None:
            values[self._span()].reshape(self.rhs.size, -1)[:] -= np.asarray(duals)[:, None]
            return
        member = self.group >= 0
        values[member] -= np.asarray(duals)[self.group[member]]

    def cheapest(self, cost: np.ndarray) -> np.ndarray:
        """The member of least ``cost`` of every group (the first one on ties)."""
        cost = np.asarray(cost, dtype=np.float64)
        if self._run is not None:
            start, size = self._run
            local = cost[self._span()].reshape(self.rhs.size, size).argmin(axis=1)
            return start + np.arange(self.rhs.size, dtype=np.int64) * size + local
        by_cost = self._order[np.lexsort((cost[self._order], self.group[self._order]))]
        return by_cost[self._starts]

    def members_have_lower_zero(self, lower: np.ndarray) -> bool:
        """Whether every member's lower bound in ``lower`` is 0 (the simplex needs x ≥ 0)."""
        lower = np.asarray(lower)
        if self._run is not None:
            return bool((lower[self._span()] == 0.0).all())
        return bool((lower[self.group >= 0] == 0.0).all())


def _pick(v: np.ndarray | float, idx: np.ndarray) -> np.ndarray | float:
    return v if np.ndim(v) == 0 else np.asarray(v)[idx]


def _check_rhs(rhs: np.ndarray) -> None:
    if not (np.isfinite(rhs).all() and (rhs >= 0).all()):
        raise InvalidInput("simplex groups: rhs must be finite and >= 0")


def safe_dual_bound(
    cost: np.ndarray,
    A: Any,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray | float,
    col_upper: np.ndarray | float,
    row_dual: np.ndarray,
    *,
    solver_col_dual: np.ndarray | None = None,
    offset: float = 0.0,
    simplices: SimplexGroups | None = None,
) -> float:
    """Rigorous lower bound on ``min cᵀx, row_lower ≤ A x ≤ row_upper, col bounds`` from any
    row multipliers (the safe dual bound of Neumaier & Shcherbina, 2004):
    ``Σ π_i B_i + Σ_j min over [l_j, u_j] of d_j x_j`` with ``B_i`` the row bound picked by
    the sign of ``π_i`` (π zeroed where that bound is infinite) and ``d = c − Aᵀπ`` recomputed
    for the π used. It does not trust the solver's optimality claim. Where ``d_j`` points to
    an infinite column bound the term would be −∞; there ``solver_col_dual`` (if given) is used
    instead, which is only as valid as the solver's duals (0 within tolerance at an optimum).

    ``simplices``: columns in simplex groups (rows ``Σ_{j∈g} x_j = rhs_g``, not in ``A``,
    ``x ≥ 0``) contribute ``rhs_g · min_{j∈g} d_j`` instead of their box terms.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> # min x0 + 2 x1 s.t. x0 + x1 = 1 (a simplex), x0 <= 0.25 (dual -1 at the optimum)
    >>> a = sp.csr_array([[1.0, 0.0]])
    >>> g = SimplexGroups([0, 0], [1.0])
    >>> c, inf = np.array([1.0, 2.0]), np.inf
    >>> safe_dual_bound(c, a, [-inf], [0.25], 0.0, inf, [-1.0], simplices=g)
    1.75
    """
    cost, pi, row_lower, row_upper = _checked_arrays(
        A, cost, row_dual, row_lower, row_upper, col_lower, col_upper, simplices
    )
    return trusted_safe_dual_bound(
        cost,
        A,
        row_lower,
        row_upper,
        col_lower,
        col_upper,
        pi,
        solver_col_dual=solver_col_dual,
        offset=offset,
        simplices=simplices,
    )


def trusted_safe_dual_bound(
    cost: np.ndarray,
    A: Any,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray | float,
    col_upper: np.ndarray | float,
    pi: np.ndarray,
    *,
    solver_col_dual: np.ndarray | None = None,
    offset: float = 0.0,
    simplices: SimplexGroups | None = None,
) -> float:
    """:func:`safe_dual_bound` on arrays the engines built themselves (float64, shapes
    matching ``A``): no checks, for the calls of every round and every subproblem solve."""
    row_b = np.where(pi > 0, row_lower, np.where(pi < 0, row_upper, 0.0))
    pi = np.where(np.isfinite(row_b), pi, 0.0)
    row_b = np.where(np.isfinite(row_b), row_b, 0.0)
    d = np.asarray(A.T @ pi, dtype=np.float64)
    np.subtract(cost, d, out=d)
    bound = float(pi @ row_b) + float(offset)
    if simplices is not None:
        bound += float(simplices.rhs @ simplices.minimum(d))
        # the members' box terms are replaced: only the other columns remain
        rest = simplices.non_members()
        d = d[rest]
        col_lower, col_upper = _pick(col_lower, rest), _pick(col_upper, rest)
        if solver_col_dual is not None:
            solver_col_dual = np.asarray(solver_col_dual)[rest]
    col_b = np.where(d > 0, col_lower, np.where(d < 0, col_upper, 0.0))
    unsafe = ~np.isfinite(col_b)
    if np.any(unsafe):
        if solver_col_dual is None:
            return -math.inf
        d = np.where(unsafe, np.asarray(solver_col_dual, dtype=np.float64)[: d.size], d)
        col_b = np.where(d > 0, col_lower, np.where(d < 0, col_upper, 0.0))
        col_b = np.where(np.isfinite(col_b), col_b, 0.0)
    return bound + float(d @ col_b)


def _checked_arrays(
    A: Any,
    cost: Any,
    row_dual: Any,
    row_lower: Any,
    row_upper: Any,
    col_lower: Any,
    col_upper: Any,
    simplices: Any,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The arrays of :func:`safe_dual_bound` as float64, their shapes checked against ``A``
    (m, n): the bound reads them entry by entry, so a mismatch must not broadcast."""
    shape = getattr(A, "shape", None)
    if shape is None or len(shape) != 2:
        raise InvalidInput("A must be a 2-D matrix (scipy sparse or numpy)")
    m, n = shape
    for name, value in (("col_lower", col_lower), ("col_upper", col_upper)):
        if np.shape(value) not in ((), (n,)):
            raise InvalidInput(f"{name} must be a number or have shape ({n},)")
    if simplices is not None and not (
        isinstance(simplices, SimplexGroups) and simplices.n_cols == n
    ):
        raise InvalidInput(f"simplices must be SimplexGroups over the {n} columns of A")
    return (
        float_vector("cost", cost, n),
        float_vector("row_dual", row_dual, m),
        float_vector("row_lower", row_lower, m),
        float_vector("row_upper", row_upper, m),
    )
