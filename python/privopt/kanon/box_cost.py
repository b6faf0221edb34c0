"""The cost of a growing equivalence class: one Numba loop for Greedy Search and K-Member.

Both grow a class record by record and pick the candidate minimizing the per-record weighted GCP
``g(E ∪ {x}) = Σ_j w_j NCP_j(E ∪ {x})`` (spec §4.3), from the class's running min/max per
numeric column and its category counts.

**Exact mode.** Candidates that tie in exact arithmetic must be ordered by the spec's tie rule
(earliest in sorted order, oldest class), not by rounding noise. When every numeric column and
its bounds are integers and the weights are rationals with small denominators (census tables),
costs are computed as integer numerators over the common denominator
``D = lcm(U_j − L_j, den_j)``: the numerator of column j is ``W_j · (D / r_j) · span_j`` with
``W`` the weights scaled to coprime integers, so every comparison is exact. Otherwise (or when
``D · ΣW`` would not fit in 62 bits) costs are float64 and exact ties may be broken by rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numba
import numpy as np

from privopt.kanon.problem import KAnonProblem

__all__ = ["BoxCost", "box_cost", "exact_weights"]

#: Largest common denominator times weight sum for which integer costs cannot overflow int64.
_EXACT_LIMIT = 2**62


@dataclass(frozen=True)
class BoxCost:
    """What the class-growing kernels need, in exact (int64) or float64 arithmetic.

    Attributes
    ----------
    values : (n, m) int64 or float64
        Numeric columns: the values; categorical columns: the category's global slot
        ``offset_j + code`` into one count array.
    coef : (m,) same dtype
        Cost per unit of span (numeric) or per extra distinct category (categorical).
    is_cat : (m,) bool
    offsets, sizes : (m,) int64
        Slot range of each categorical column (0 for numeric ones).
    exact : bool
        Costs are exact integer numerators (one common, omitted, positive denominator).
    """

    values: np.ndarray
    coef: np.ndarray
    is_cat: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray
    exact: bool

    @property
    def n_slots(self) -> int:
        """Total number of slots over all groups."""
        return int(self.sizes.sum())

    def row_costs(self, labels: np.ndarray, q: int, row: int) -> np.ndarray:
        """(q,) cost of ``g(C ∪ {row})`` for classes 0..q−1 (rows with ``labels < 0`` are in
        none), vectorised; ``row`` may be −1 for the classes' own costs."""
        done = labels >= 0
        lab, vals = labels[done], self.values[done]
        total = np.zeros(q, dtype=self.coef.dtype)
        for j in range(len(self.coef)):
            col = vals[:, j]
            if self.is_cat[j]:
                present = np.zeros((q, int(self.sizes[j])), dtype=bool)
                present[lab, col.astype(np.int64) - self.offsets[j]] = True
                if row >= 0:
                    present[:, int(self.values[row, j]) - self.offsets[j]] = True
                total += self.coef[j] * (present.sum(axis=1) - 1)
            else:
                cmin = np.full(q, col.max(initial=0), dtype=col.dtype)
                cmax = np.full(q, col.min(initial=0), dtype=col.dtype)
                np.minimum.at(cmin, lab, col)
                np.maximum.at(cmax, lab, col)
                if row >= 0:
                    cmin = np.minimum(cmin, self.values[row, j])
                    cmax = np.maximum(cmax, self.values[row, j])
                total += self.coef[j] * (cmax - cmin)
        return total


def exact_weights(weights: np.ndarray, max_denominator: int = 10**6) -> np.ndarray | None:
    """Weights as coprime integers with the same ratios, when each is a rational with a
    denominator ≤ ``max_denominator`` (as its float value reads); else None.

    Examples
    --------
    >>> exact_weights(np.array([0.25, 0.5, 0.25])).tolist()
    [1, 2, 1]
    >>> exact_weights(np.array([1.0, np.pi])) is None
    True
    """
    fracs = [Fraction(float(w)).limit_denominator(max_denominator) for w in weights]
    if any(float(f) != float(w) for f, w in zip(fracs, weights, strict=True)):
        return None
    den = math.lcm(*(f.denominator for f in fracs))
    ints = [int(f * den) for f in fracs]
    g = math.gcd(*ints)
    return np.array([v // g for v in ints], dtype=np.int64)


def _integral(v) -> bool:
    return bool(np.all(np.abs(v) < 2**53) and np.all(v == np.round(v)))


def _exact_coefficients(problem: KAnonProblem, denominators: np.ndarray) -> np.ndarray | None:
    """Integer ``W_j · D / den_j`` (D = lcm of the denominators), or None when not exact."""
    w = exact_weights(problem.weights)
    numeric = ~problem.categorical
    if w is None or not _integral(problem.x[:, numeric]) or not _integral(denominators):
        return None
    if not (_integral(problem.lower[numeric]) and _integral(problem.upper[numeric])):
        return None
    den = [int(d) for d in denominators]
    common = math.lcm(*den)
    if common * int(w.sum()) >= _EXACT_LIMIT:
        return None
    return np.array([int(wj) * (common // d) for wj, d in zip(w, den, strict=True)], np.int64)


def box_cost(problem: KAnonProblem, order: np.ndarray | None = None, *, exact=True) -> BoxCost:
    """The :class:`BoxCost` of ``problem``, rows in ``order`` (default: as given).

    ``exact=False`` forces float64 costs.
    """
    sizes = problem.domain_sizes.astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    den = np.where(problem.categorical, problem.cat_denominator, problem.ranges)
    x = problem.x if order is None else problem.x[order]
    slots = np.where(problem.categorical, x + offsets, x)
    coef = _exact_coefficients(problem, den) if exact else None
    if coef is not None:
        values = np.ascontiguousarray(slots, dtype=np.int64)
    else:
        values = np.ascontiguousarray(slots, dtype=np.float64)
        coef = problem.weights / den
    return BoxCost(values, coef, problem.categorical.copy(), offsets, sizes, coef.dtype.kind == "i")


# --------------------------------------------------------------------------- Numba kernels
# State of the class being grown: mn, mx (m,) running min/max (values dtype), distinct (m,)
# int64 distinct categories per column, cnt (n_slots,) int64 members per category slot.


@numba.njit(cache=True, nogil=True)
def start_class(values, row, is_cat, mn, mx, distinct, cnt):  # pragma: no cover - compiled
    """Make the class the single record ``row``."""
    for j in range(values.shape[1]):
        v = values[row, j]
        mn[j] = v
        mx[j] = v
        distinct[j] = 0
        if is_cat[j]:
            cnt[np.int64(v)] += 1
            distinct[j] = 1


@numba.njit(cache=True, nogil=True)
def add_to_class(values, row, is_cat, mn, mx, distinct, cnt):  # pragma: no cover - compiled
    for j in range(values.shape[1]):
        v = values[row, j]
        if is_cat[j]:
            s = np.int64(v)
            if cnt[s] == 0:
                distinct[j] += 1
            cnt[s] += 1
        else:
            if v > mx[j]:
                mx[j] = v
            if v < mn[j]:
                mn[j] = v


@numba.njit(cache=True, nogil=True)
def clear_class(values, members, n_members, is_cat, cnt):  # pragma: no cover - compiled
    """Reset the category counts of a class's members."""
    for s in range(n_members):
        for j in range(values.shape[1]):
            if is_cat[j]:
                cnt[np.int64(values[members[s], j])] = 0


@numba.njit(cache=True, nogil=True)
def class_cost(mn, mx, distinct, coef, is_cat):  # pragma: no cover - compiled
    total = coef[0] - coef[0]
    for j in range(mn.shape[0]):
        if is_cat[j]:
            total += coef[j] * (distinct[j] - 1)
        else:
            total += coef[j] * (mx[j] - mn[j])
    return total


@numba.njit(cache=True, nogil=True)
def cost_with(values, row, mn, mx, distinct, cnt, coef, is_cat):  # pragma: no cover - compiled
    """``g`` of the class with ``row`` added (the class is not changed)."""
    total = coef[0] - coef[0]
    for j in range(values.shape[1]):
        v = values[row, j]
        if is_cat[j]:
            extra = 1 if cnt[np.int64(v)] == 0 else 0
            total += coef[j] * (distinct[j] + extra - 1)
        else:
            hi = mx[j] if mx[j] > v else v
            lo = mn[j] if mn[j] < v else v
            total += coef[j] * (hi - lo)
    return total


@numba.njit(cache=True, nogil=True)
def exceeds(bound, best, exact):  # pragma: no cover - compiled
    """``bound > best``: exactly for integer costs, with a rounding margin for floats."""
    if exact:
        return bound > best
    return bound > best + 1e-12 * (1.0 + abs(best))
