"""IntervalSizeEst (Algorithm 2 of DPM; spec 004 §5): the split width β.

β = σ*/2 where σ* is the grid value whose *codebook* entry (the 65th percentile of the gaps between
sorted N(0, σ²) samples of size ⌊ñ⌋) is closest to a DP estimate of the 65th percentile of the
data's dimension-averaged gaps.

The reference code builds the codebook by Monte Carlo (59 σ values × 30 replicates × ⌊ñ⌋ sorted
normals), which dominates its running time. Here it is computed analytically: for m i.i.d.
samples with cdf F and density f, the expected number of spacings wider than g is exactly

    E #{k : X_(k+1) − X_(k) > g} = m ∫ f(x) (1 − F(x+g) + F(x))^(m−1) dx − 1,

(sum the order-statistics densities over k; spec §5), so the expected fraction of gaps above g
is known in closed form up to a 1-D integral, and the percentile is its root. Gaps scale with σ,
so one root for σ = 1 gives the whole table (spec §5: "simulate σ = 1 once and scale"). The
Monte Carlo construction of the reference code is kept as :func:`codebook_monte_carlo`, the test
oracle.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

from privopt import _core, dp
from privopt.cluster._chunks import prepare_column
from privopt.errors import InvalidInput

__all__ = [
    "unit_gap_percentile",
    "codebook",
    "codebook_monte_carlo",
    "dimension_averaged_gaps",
    "dp_percentile",
    "dp_percentile_in_place",
    "split_width",
]

# N(0,1) mass beyond ±12 is < 1e-32; 1201 nodes reproduce a 24001-node trapezoid to 1e-11
# (the integrand is smooth on the scale of σ), at 12 ms per root.
_X = np.linspace(-12.0, 12.0, 1201)
_PHI = np.exp(-0.5 * _X**2) / math.sqrt(2.0 * math.pi)


def _gap_tail_fraction(g: float, m: int) -> float:
    """Expected fraction of the m−1 gaps of m N(0,1) samples that exceed g."""
    # F(x+g) − F(x), taken on the tail side where it is small, to keep relative precision.
    df = np.where(_X < 0, ndtr(_X + g) - ndtr(_X), ndtr(-_X) - ndtr(-_X - g))
    integrand = _PHI * np.exp((m - 1) * np.log1p(-np.minimum(df, 1.0 - 1e-300)))
    integral = np.trapezoid(integrand, _X)
    return (m * integral - 1.0) / (m - 1)


@lru_cache(maxsize=64)
def unit_gap_percentile(m: int, percentile: float = 65.0) -> float:
    """Expected-gap percentile of m N(0, 1) samples: the g with P(gap ≤ g) = percentile/100.

    Parameters
    ----------
    m : sample size ≥ 2 (⌊ñ⌋ in Algorithm 2).
    percentile : in (0, 100).

    Returns
    -------
    float, in units of σ (multiply by σ for N(0, σ²)).
    """
    if m < 2:
        raise InvalidInput(f"the codebook needs at least 2 samples, got m={m}")
    target = 1.0 - percentile / 100.0
    hi = 1.0
    while _gap_tail_fraction(hi, m) > target:
        hi *= 2.0
    return float(
        brentq(lambda g: _gap_tail_fraction(g, m) - target, 0.0, hi, xtol=1e-15, rtol=1e-12)
    )


def codebook(m: int, sigma_grid: np.ndarray, percentile: float = 65.0) -> np.ndarray:
    """Codebook p(σ) = σ · unit_gap_percentile(m) for every σ of ``sigma_grid``; shape (S,)."""
    return np.asarray(sigma_grid, dtype=np.float64) * unit_gap_percentile(int(m), float(percentile))


def codebook_monte_carlo(
    m: int, sigma_grid: np.ndarray, percentile: float = 65.0, reps: int = 30, rng: Any = None
) -> np.ndarray:
    """The reference code's Monte Carlo codebook (spec §5, D1): per σ, the mean over ``reps``
    one-dimensional replicates of size m of the percentile of the sorted-sample gaps.

    Data-independent simulation (no privacy role); slow, kept as the oracle of :func:`codebook`.
    """
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    out = np.empty(len(sigma_grid))
    for i, sigma in enumerate(sigma_grid):
        x = np.sort(gen.normal(0.0, sigma, size=(m, reps)), axis=0)
        out[i] = np.percentile(np.diff(x, axis=0), percentile, axis=0).mean()
    return out


def add_sorted_gaps(acc: np.ndarray, col: np.ndarray) -> None:
    """acc[k] += col[k+1] − col[k] for a sorted (m,) column, in place, shape (m−1,).

    One C++ pass with no temporary; each element is the same difference then the same sum as
    ``acc += np.diff(col)``, so the result is identical bit for bit.
    """
    if acc.dtype != np.float64 or not acc.flags.c_contiguous:
        raise InvalidInput("acc must be a C-contiguous float64 array")
    _core.cluster.add_gaps(col, acc)


def dimension_averaged_gaps(X: np.ndarray, a: float, b: float) -> np.ndarray:
    """A = (1/d) Σ_i Dists(D^(i)) of Algorithm 2 line 7 on the data clipped to [a, b]; (n−1,)."""
    n, d = X.shape
    acc = np.zeros(n - 1)
    col = np.empty(n)
    for k in range(d):  # one column at a time keeps the peak memory at 2n floats
        col[:] = X[:, k]
        add_sorted_gaps(acc, prepare_column(col, a, b))
    acc /= d
    return acc


def dp_percentile(
    values: np.ndarray,
    percentile: float,
    epsilon: float,
    bounds: tuple[float, float],
    *,
    sensitivity: float = 2.0,
    rng: Any = None,
) -> float:
    """ε-DP percentile by the exponential mechanism over the gaps of the sorted values (Smith 2011,
    the construction of diffprivlib's ``percentile``; spec §5).

    Interval k between the k-th and (k+1)-th sorted value (bounds appended) has utility
    −|k − (percentile/100)·m| and base measure its width; a uniform point of the chosen interval
    is returned. Utility sensitivity ``sensitivity`` = 2 because one point moves at most two
    gaps of A (Lemma 1); this equals the reference's ε/2 with sensitivity 1.

    Parameters
    ----------
    values : (m,) values, clipped to ``bounds``.
    percentile : in [0, 100].
    epsilon : ε of this release.
    bounds : (lo, hi), lo < hi, public.
    rng : anything :func:`privopt.dp.as_random_source` accepts.
    """
    lo, hi = bounds
    z = np.concatenate(([lo], np.sort(np.clip(values, lo, hi)), [hi]))
    m = values.size
    width = np.diff(z)
    utility = -np.abs(np.arange(m + 1) - percentile / 100.0 * m)
    keep = np.flatnonzero(width > 0)  # zero-width intervals have probability 0
    # exp(ε·u/(2Δ))·width = exp(ε·(u + (2Δ/ε)·ln width)/(2Δ)).
    scores = utility[keep] + (2.0 * sensitivity / epsilon) * np.log(width[keep])
    k = keep[dp.exponential_mechanism(scores, epsilon, sensitivity=sensitivity, rng=rng)]
    u = dp.as_random_source(rng).uniform()
    return float(z[k] + u * width[k])


def dp_percentile_in_place(
    values: np.ndarray,
    percentile: float,
    epsilon: float,
    bounds: tuple[float, float],
    *,
    sensitivity: float = 2.0,
    rng: Any = None,
) -> float:
    """:func:`dp_percentile` with O(1) extra memory: ``values`` (float64, (m,)) is clipped and
    sorted in place, and the exponential mechanism runs in one C++ kernel that never stores the
    m + 1 interval weights (``privopt._core.cluster.percentile_interval``). Same distribution.
    """
    lo, hi = bounds
    prepare_column(values, lo, hi)
    source = dp.as_random_source(rng)
    m = values.size
    k = int(
        _core.cluster.percentile_interval(
            values, lo, hi, percentile / 100.0 * m, epsilon / (2.0 * sensitivity), source.uniform()
        )
    )
    left = lo if k == 0 else float(values[k - 1])
    right = hi if k == m else float(values[k])
    return float(left + source.uniform() * (right - left))


def split_width(
    gaps: np.ndarray,
    n_tilde: float,
    epsilon: float,
    bound_width: float,
    sigma_grid: np.ndarray,
    percentile: float,
    rng: Any,
) -> tuple[float, float]:
    """β = σ*/2 of Algorithm 2 and the DP percentile p̃; (β, p̃).

    ``gaps`` is A of line 7 (clipped and sorted in place), ``n_tilde`` the released root count
    (⌊ñ⌋ samples for the codebook).
    """
    p_tilde = dp_percentile_in_place(gaps, percentile, epsilon, (0.0, bound_width), rng=rng)
    table = codebook(math.floor(n_tilde), sigma_grid, percentile)
    sigma_star = float(sigma_grid[int(np.argmin(np.abs(table - p_tilde)))])
    return 0.5 * sigma_star, p_tilde
