"""Laplace and Gaussian noise for real-valued queries, free of floating-point leaks.

Textbook samplers (``x + np.random.laplace(0, b)``) leak: the set of floats the sum can take
depends on x, so some outputs are impossible for one input and possible for its neighbour
(Mironov, CCS 2012). Here every release is an *integer* computation on a grid gℤ with
g = 2^k a power of two chosen from the public parameters only (scale, sensitivity), never
from the data:

1. the input is rounded to the grid, i = rint(x/g) (x/g is exact: g is a power of two);
2. integer noise Z from the exact discrete Laplace / discrete Gaussian sampler is added;
3. the output is g·(i + Z), a deterministic function of the integer i + Z (post-processing).

Rounding moves a value by at most g/2, so two inputs at distance ≤ Δ have grid indices at
distance ≤ Δ_g = ⌊Δ/g⌋ + 1; the integer noise is calibrated to Δ_g, so the guarantee is the
discrete one: ε-DP for :func:`laplace_mechanism` and (ε, δ)-DP for :func:`gaussian_mechanism`
(verified with the discrete bound of CKS 2020 Theorem 7), for the real sensitivity Δ, exactly
and without floating-point caveats. The price is a sensitivity inflated by at most g, i.e. a
relative noise excess ≤ 2⁻²⁰ (Laplace) or ≤ 2⁻¹⁰ (Gaussian).

The stand-alone samplers :func:`sample_laplace` and :func:`sample_gaussian` return g·Z, the
discrete Laplace / Gaussian on the grid gℤ with g ≤ 2⁻²⁰·scale: its pmf is the continuous
density at the grid points, renormalised.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privopt._validation import (
    check_delta,
    check_epsilon,
    check_finite_array,
    check_positive,
    finite_result,
)
from privopt.dp.calibration import analytic_gaussian_sigma, discrete_gaussian_delta
from privopt.dp.discrete import sample_discrete_gaussian, sample_discrete_laplace
from privopt.errors import InvalidInput

__all__ = [
    "sample_laplace",
    "sample_gaussian",
    "laplace_mechanism",
    "gaussian_mechanism",
    "grid_step",
]

#: Grid resolution of the Laplace sampler/mechanism: g ≤ 2^-20 of the scale (and of Δ).
LAPLACE_GRID_BITS = 20
#: Grid resolution of the Gaussian mechanism; coarser so that the discrete δ bound of CKS
#: Theorem 7 (relative slack O(1/σ_int)) stays tight while σ_int = σ/g ≥ 2^10.
GAUSSIAN_GRID_BITS = 10


def grid_step(reference: float, bits: int) -> float:
    """The power of two g = 2^(⌊log₂ reference⌋ - bits), so reference/g ∈ [2^bits, 2^(bits+1))."""
    return math.ldexp(1.0, math.frexp(reference)[1] - 1 - bits)


def _to_grid(
    values: Any, g: float, epsilon: float, sensitivity: float
) -> tuple[np.ndarray, np.ndarray]:
    x = check_finite_array("values", values)
    scaled = x / g  # exact: g is a power of two (barring overflow, checked next)
    if x.size and not np.all(np.abs(scaled) < 2.0**62):
        # The grid follows the noise: g is about min(Δ, Δ/ε) / 2^20, so a large ε (or a small
        # Δ) makes it fine, and values it cannot count in 62 bits are too far from 0.
        raise InvalidInput(
            f"values too large for the noise grid g={g!r} that epsilon={epsilon!r} and "
            f"sensitivity={sensitivity!r} set: |values|/g must be < 2**62; use a smaller "
            "epsilon or express the values in a larger unit"
        )
    return x, np.rint(scaled).astype(np.int64)


@finite_result(cause="a noise scale near the float64 limit")
def sample_laplace(scale: float, size: Any = None, *, rng: Any = None) -> Any:
    """Laplace(0, b) noise on the grid gℤ, g = 2^(⌊log₂ b⌋-20): P(gk) ∝ exp(-|gk|/b).

    Parameters
    ----------
    scale : b > 0, in the query's units.
    size : None (one float), an int or a shape tuple.
    rng : None (default: the OS CSPRNG, for real releases) or a seed / Generator
        (reproducible, for testing only); see :func:`privopt.dp.as_random_source`.

    Returns
    -------
    float or float64 ndarray; every value is an exact multiple of g.

    Examples
    --------
    >>> x = sample_laplace(2.0, 4, rng=0)
    >>> bool(np.all(x / 2.0**-19 == np.round(x / 2.0**-19)))
    True
    """
    scale = check_positive("scale", scale)
    g = grid_step(scale, LAPLACE_GRID_BITS)
    # P(k) ∝ exp(-|k|·g/b): discrete Laplace with "epsilon" g and "sensitivity" b.
    z = sample_discrete_laplace(g, size, sensitivity=scale, rng=rng)
    return g * z if size is not None else g * float(z)


@finite_result(cause="a noise scale near the float64 limit")
def sample_gaussian(sigma: float, size: Any = None, *, rng: Any = None) -> Any:
    """Gaussian N(0, σ²) noise on the grid gℤ, g = 2^(⌊log₂ σ⌋-20): P(gk) ∝ exp(-(gk)²/(2σ²)).

    Parameters
    ----------
    sigma : σ > 0, in the query's units.
    size : None (one float), an int or a shape tuple.
    rng : None (default: the OS CSPRNG, for real releases) or a seed / Generator
        (reproducible, for testing only); see :func:`privopt.dp.as_random_source`.

    Returns
    -------
    float or float64 ndarray; every value is an exact multiple of g.
    """
    sigma = check_positive("sigma", sigma)
    g = grid_step(sigma, LAPLACE_GRID_BITS)
    z = sample_discrete_gaussian(sigma / g, size, rng=rng)
    return g * z if size is not None else g * float(z)


@finite_result(
    cause="values plus noise beyond float64 (values, or sensitivity / epsilon, near 1e308)"
)
def laplace_mechanism(
    values: Any, epsilon: float, *, sensitivity: float = 1.0, rng: Any = None
) -> np.ndarray:
    """ε-DP release of real values with ℓ1-sensitivity Δ: Laplace noise on a grid.

    Guarantee: ε-differential privacy for the neighbouring relation under which ``values``
    moves by at most Δ in ℓ1 norm (e.g. Δ = 1 for counts under add/remove-one). Exact, see the
    module docstring: the grid g = 2^(⌊log₂ min(Δ, Δ/ε)⌋-20) is public, the integer noise has
    rate ε/Δ_g with Δ_g = ⌊Δ/g⌋+1, so the noise scale is g·Δ_g/ε ≤ (Δ+g)/ε.
    For a vector, Δ is the ℓ1-sensitivity of the whole vector.

    Parameters
    ----------
    values : array of true values (any shape), finite.
    epsilon : ε > 0.
    sensitivity : Δ > 0, ℓ1-sensitivity in the values' units.
    rng : None (default: the OS CSPRNG, for real releases) or a seed / Generator
        (reproducible, for testing only); see :func:`privopt.dp.as_random_source`.

    Returns
    -------
    float64 ndarray of the same shape as ``values``.
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    g = grid_step(min(sensitivity, sensitivity / epsilon), LAPLACE_GRID_BITS)
    x, idx = _to_grid(values, g, epsilon, sensitivity)
    sens_grid = math.floor(sensitivity / g) + 1
    z = sample_discrete_laplace(epsilon, x.shape, sensitivity=sens_grid, rng=rng)
    return g * (idx + z).astype(np.float64)


@finite_result(
    cause="values plus noise beyond float64 (values, or sensitivity / epsilon, near 1e308)"
)
def gaussian_mechanism(
    values: Any, epsilon: float, delta: float, *, sensitivity: float = 1.0, rng: Any = None
) -> np.ndarray:
    """(ε, δ)-DP release of real values with ℓ2-sensitivity Δ: Gaussian noise on a grid.

    Guarantee: (ε, δ)-differential privacy for the neighbouring relation under which ``values``
    moves by at most Δ in ℓ2 norm (for a vector, Δ is the ℓ2-sensitivity of the whole
    vector). σ is the analytic Gaussian σ (Balle & Wang 2018) for the grid-inflated sensitivity
    g·Δ_g, g = 2^(⌊log₂ min(Δ, σ)⌋-10); the discrete Gaussian's own δ (CKS 2020 Theorem 7,
    rigorous upper bound :func:`privopt.dp.calibration.discrete_gaussian_delta`) is then checked
    and σ raised in steps of 2⁻¹⁴ (relative) until it is ≤ δ. Also ρ-zCDP with ρ = Δ_g²/(2σ_int²).

    Parameters
    ----------
    values : array of true values (any shape), finite.
    epsilon : ε > 0.
    delta : δ ∈ (0, 1).
    sensitivity : Δ > 0, ℓ2-sensitivity in the values' units.
    rng : None (default: the OS CSPRNG, for real releases) or a seed / Generator
        (reproducible, for testing only); see :func:`privopt.dp.as_random_source`.

    Returns
    -------
    float64 ndarray of the same shape as ``values``.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    sensitivity = check_positive("sensitivity", sensitivity)
    sigma_int, g = gaussian_grid_calibration(epsilon, delta, sensitivity)
    x, idx = _to_grid(values, g, epsilon, sensitivity)
    z = sample_discrete_gaussian(sigma_int, x.shape, rng=rng)
    return g * (idx + z).astype(np.float64)


def gaussian_grid_calibration(
    epsilon: float, delta: float, sensitivity: float
) -> tuple[float, float]:
    """(σ_int, g) used by :func:`gaussian_mechanism`: grid step g and integer-grid σ."""
    sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    g = grid_step(min(sensitivity, sigma), GAUSSIAN_GRID_BITS)
    sens_grid = math.floor(sensitivity / g) + 1
    sigma_int = analytic_gaussian_sigma(epsilon, delta, sens_grid)
    for _ in range(100_000):
        if discrete_gaussian_delta(sigma_int, epsilon, sens_grid) <= delta:
            return sigma_int, g
        sigma_int *= 1.0 + 2.0**-14
    raise InvalidInput(  # pragma: no cover - the bound converges to the continuous δ
        f"could not calibrate the discrete Gaussian for epsilon={epsilon}, delta={delta}"
    )
