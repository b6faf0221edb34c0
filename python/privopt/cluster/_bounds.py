"""Per-feature bounds of DPM: checking given ones and estimating them privately.

DPM's guarantee holds for data clipped to a box, and the box sets the noise: the averages'
ℓ2-sensitivity is the largest distance of a box point from the box's centre, and the split grid
spans the box. A box given by the user must be public knowledge (fixed before seeing the data).
Without one, :func:`dp_feature_bounds` estimates a box privately: for every feature, a low and a
high DP percentile by the exponential mechanism over the sorted values (Smith 2011, the method of
diffprivlib's ``quantile``; :func:`privopt.cluster._interval.dp_percentile_in_place`), within a
public search range.

The exponential mechanism weights each interval between sorted values by its width. Over a wide
search range (the default is ±10⁶) the empty space outside the data would then hold most of the
weight at a small ε; the percentiles are therefore drawn on the scale asinh(x) (linear near 0,
logarithmic beyond ±1 data unit), a fixed public bijection, so the empty space weighs only its
logarithmic width. Percentiles are invariant under a monotone map, so the estimate is the
percentile of x itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from privopt._validation import check_finite_array, check_real
from privopt.cluster._interval import dp_percentile_in_place
from privopt.errors import InvalidInput

__all__ = [
    "BOUNDS_PERCENTILE",
    "DEFAULT_BOUNDS_RANGE",
    "MIN_BOUNDS_WIDTH",
    "checked_bounds",
    "checked_search_range",
    "dp_feature_bounds",
]

#: The public search range of the bounds estimate (data units) when none is given.
DEFAULT_BOUNDS_RANGE = (-1e6, 1e6)

#: Each feature's estimate starts from its BOUNDS_PERCENTILE-th and (100 − BOUNDS_PERCENTILE)-th
#: DP percentiles: central enough that the exponential mechanism, at the small ε of each of the
#: 2d percentiles, lands near them rather than in the empty space around the data.
BOUNDS_PERCENTILE = 5.0

#: ... then widens the interval between them by BOUNDS_MARGIN of its width on each side, to
#: hold the tails (post-processing of the two percentiles).
BOUNDS_MARGIN = 0.25

#: Narrowest bounds accepted: the split grid's bucket index scales by 1/(b − a).
MIN_BOUNDS_WIDTH = 1e-290

#: An estimated interval narrower than this fraction of max(1, |centre|) (a constant feature, or
#: a tiny ε) is widened to it, so that every feature keeps lower < upper in float64.
_MIN_RELATIVE_WIDTH = 1e-6


def checked_bounds(bounds: Any, d: int | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """Given bounds as per-feature (lower, upper) arrays and whether one pair was given.

    Parameters
    ----------
    bounds : (a, b), the range of every coordinate, or (lower, upper), two (d,) arrays, the
        range of each feature (data units).
    d : the number of features, when known; one pair is then repeated d times.

    Returns
    -------
    (lower, upper, scalar) : two (d,) float64 arrays (length 1 for one pair and d None), and
    True when one pair was given for every feature.

    Raises
    ------
    InvalidInput
        Not a pair, non-finite, lower ≥ upper, a width beyond float64's range, or per-feature
        arrays of another length than d.
    """
    try:
        lower, upper = bounds
    except (TypeError, ValueError):
        raise InvalidInput(
            f"bounds must be a pair (a, b) or two per-feature arrays (lower, upper), got {bounds!r}"
        ) from None
    scalar = np.ndim(lower) == 0 and np.ndim(upper) == 0
    if scalar:
        lo = np.array([check_real("bounds[0]", lower, allow_inf=True)])
        hi = np.array([check_real("bounds[1]", upper, allow_inf=True)])
    else:
        lo = check_finite_array("bounds[0] (lower)", lower, ndim=1)
        hi = check_finite_array("bounds[1] (upper)", upper, shape=lo.shape)
        if lo.size == 0:
            raise InvalidInput("bounds must hold at least one feature's range, got empty arrays")
        if d is not None and lo.size != d:
            raise InvalidInput(
                f"bounds hold the ranges of {lo.size} features, but X has {d} columns"
            )
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
        bad = int(np.flatnonzero(~(np.isfinite(lo) & np.isfinite(hi) & (lo < hi)))[0])
        where = "" if scalar else f" (feature {bad}: [{lo[bad]!r}, {hi[bad]!r}])"
        raise InvalidInput(f"bounds must be finite with lower < upper, got {bounds!r}{where}")
    with np.errstate(over="ignore"):
        width = hi - lo
    if not (np.all(width >= MIN_BOUNDS_WIDTH) and np.all(np.isfinite(width))):
        raise InvalidInput(
            f"bounds {bounds!r} span a width outside the float64 range the split grid needs "
            f"([{MIN_BOUNDS_WIDTH:g}, 1.8e308)): rescale the data"
        )
    if scalar and d is not None:
        lo, hi = np.full(d, lo[0]), np.full(d, hi[0])
    return lo, hi, scalar


def checked_search_range(search_range: Any) -> tuple[float, float]:
    """The public search range (lo, hi) of the bounds estimate: finite, lo < hi, and narrow
    enough that hi − lo is finite."""
    try:
        low, high = search_range
    except (TypeError, ValueError):
        raise InvalidInput(f"bounds_range must be a pair (lo, hi), got {search_range!r}") from None
    lo = check_real("bounds_range[0]", low)
    hi = check_real("bounds_range[1]", high)
    if not (lo < hi and math.isfinite(hi - lo) and hi - lo >= MIN_BOUNDS_WIDTH):
        raise InvalidInput(
            f"bounds_range must be (lo, hi) with lo < hi and a finite width, got {search_range!r}"
        )
    return lo, hi


def dp_feature_bounds(
    columns: Iterable[np.ndarray],
    d: int,
    epsilon: float,
    search_range: tuple[float, float],
    rng: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """ε-DP per-feature bounds: the low and high DP percentiles of every feature.

    Each of the 2d percentiles is ε/(2d)-DP (exponential mechanism, utility −|k − p·m| with
    sensitivity 1 under add/remove-one-point: one point moves every rank by at most 1 and the
    target p·m by at most p ≤ 1, and max(p, 1 − p) ≤ 1), so the whole estimate is ε-DP by
    basic composition.

    Parameters
    ----------
    columns : the d columns of the data, (n,) float64 each; each is clipped, transformed and
        sorted in place (pass copies).
    d : the number of columns.
    epsilon : ε of the whole estimate, > 0.
    search_range : public (lo, hi), data units; every estimate lies inside it.
    rng : a :class:`privopt.dp.RandomSource` (every draw comes from it).

    Returns
    -------
    (lower, upper) : two (d,) float64 arrays with lower < upper, within ``search_range``.
    """
    lo, hi = search_range
    t_range = (math.asinh(lo), math.asinh(hi))
    eps_each = epsilon / (2 * d)
    lower, upper = np.empty(d), np.empty(d)
    for k, col in enumerate(columns):
        np.clip(col, lo, hi, out=col)
        np.arcsinh(col, out=col)
        # dp_percentile_in_place sorts col once; the second call finds it sorted.
        pair = [
            dp_percentile_in_place(col, pct, eps_each, t_range, sensitivity=1.0, rng=rng)
            for pct in (BOUNDS_PERCENTILE, 100.0 - BOUNDS_PERCENTILE)
        ]
        low_k, high_k = sorted(math.sinh(t) for t in pair)
        margin = BOUNDS_MARGIN * (high_k - low_k)
        low_k, high_k = low_k - margin, high_k + margin
        lower[k], upper[k] = _widened(low_k, high_k, lo, hi)
    return lower, upper


def _widened(low: float, high: float, lo: float, hi: float) -> tuple[float, float]:
    """(low, high) widened about its centre to at least the minimum width, within [lo, hi]."""
    low, high = max(low, lo), min(high, hi)
    centre = 0.5 * low + 0.5 * high
    half = min(0.5 * _MIN_RELATIVE_WIDTH * max(1.0, abs(centre)), 0.5 * (hi - lo))
    if high - low < 2 * half:
        low, high = centre - half, centre + half
        if low < lo:
            low, high = lo, lo + 2 * half
        elif high > hi:
            low, high = hi - 2 * half, hi
    return low, high


class FeatureBox:
    """The box the data is clipped to, per feature, and the frame the data passes work in.

    With one pair (a, b) for every feature the passes read the data as it is, on the box
    [a, b]. With per-feature bounds they read each feature shifted by the centre of its range,
    clipped to it, on the common box [−W/2, W/2] (W the widest range): a shift keeps distances
    and gaps, and centring makes the averages' ℓ2-sensitivity √Σ((upper − lower)/2)², the
    radius of the box.

    Attributes
    ----------
    lower, upper : (d,) the range of each feature, data units.
    shift : (d,) subtracted from each feature before the passes (zeros for one pair).
    a, b : the common box of the passes, shifted units.
    per_feature : False when one pair was given for every feature.
    """

    def __init__(self, lower: np.ndarray, upper: np.ndarray, per_feature: bool) -> None:
        self.lower = np.asarray(lower, dtype=np.float64)
        self.upper = np.asarray(upper, dtype=np.float64)
        self.per_feature = per_feature
        if per_feature:
            self.shift = 0.5 * self.lower + 0.5 * self.upper
            half = 0.5 * float(np.max(self.upper - self.lower))
            self.a, self.b = -half, half
        else:
            self.shift = np.zeros_like(self.lower)
            self.a, self.b = float(self.lower[0]), float(self.upper[0])

    @property
    def d(self) -> int:
        return int(self.lower.size)

    @property
    def shifted_lower(self) -> np.ndarray:
        return np.maximum(self.lower - self.shift, self.a)

    @property
    def shifted_upper(self) -> np.ndarray:
        return np.minimum(self.upper - self.shift, self.b)

    def reach(self) -> np.ndarray:
        """(d,) the largest |coordinate| of the passes' frame, per feature."""
        return np.maximum(np.abs(self.shifted_lower), np.abs(self.shifted_upper))

    def valid_candidates(self, n_splits: int, beta: float) -> np.ndarray | None:
        """(d · n_splits,) True where the cut a + (j + ½)β of a feature lies in its range
        (dimension-major, as the candidates are scored); None when every cut does."""
        if not self.per_feature:
            return None
        cuts = self.a + (np.arange(n_splits) + 0.5) * beta
        inside = (cuts >= self.shifted_lower[:, None]) & (cuts <= self.shifted_upper[:, None])
        return inside.ravel()

    def thresholds_in_data_units(self, feature: np.ndarray, threshold: np.ndarray) -> np.ndarray:
        """The cuts of a tree in data units, each within its feature's range (tips unchanged)."""
        out = np.array(threshold, dtype=np.float64, copy=True)
        inner = feature >= 0
        f = feature[inner]
        out[inner] = np.clip(out[inner] + self.shift[f], self.lower[f], self.upper[f])
        return out
