"""Gaussian calibration: analytic σ vs the exact condition, classic bound, discrete δ bound."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from privopt.dp import (
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    discrete_gaussian_delta,
    gaussian_delta,
)
from scipy.special import logsumexp


@pytest.mark.parametrize(
    ("epsilon", "delta", "sens"),
    [(1.0, 1e-5, 1.0), (0.1, 1e-6, 2.0), (0.5, 1e-3, 1.0), (8.0, 1e-10, 1.0), (50.0, 1e-5, 0.1)],
)
def test_analytic_sigma_is_the_smallest_feasible(epsilon, delta, sens):
    sigma = analytic_gaussian_sigma(epsilon, delta, sens)
    assert gaussian_delta(sigma, epsilon, sens) <= delta
    assert gaussian_delta(sigma * (1 - 1e-9), epsilon, sens) > delta * (1 - 1e-6)
    # Scale equivariance: σ(Δ) = Δ·σ(1).
    assert sigma == pytest.approx(sens * analytic_gaussian_sigma(epsilon, delta), rel=1e-10)


def test_analytic_beats_classic_and_matches_published_value():
    for eps in (0.1, 0.5, 0.9):
        assert analytic_gaussian_sigma(eps, 1e-5) < classic_gaussian_sigma(eps, 1e-5)
    # Classic formula for ε = 0.5, δ = 1e-5: √(2 ln 125000)/0.5.
    assert classic_gaussian_sigma(0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5)
    # Balle & Wang's reference implementation gives σ ≈ 3.7306 at ε = 1, δ = 1e-5, Δ = 1.
    assert analytic_gaussian_sigma(1.0, 1e-5) == pytest.approx(3.7306, abs=1e-4)


@pytest.mark.parametrize("sens", [1e-300, 1e-100, 1e100, 1e300, 1e307])
def test_analytic_sigma_scales_to_extreme_sensitivities(sens):
    # σ/Δ is solved for, then scaled: doubling σ itself overflowed near Δ = 1e300.
    sigma = analytic_gaussian_sigma(1.0, 1e-5, sens)
    assert sigma == pytest.approx(sens * analytic_gaussian_sigma(1.0, 1e-5), rel=1e-12)
    assert gaussian_delta(sigma, 1.0, sens) <= 1e-5


@pytest.mark.parametrize(
    ("epsilon", "delta", "sens"),
    [(1.0, 1e-5, 1.7e308), (1.0, 1e-5, 1e-310), (1e-300, 1e-300, 1e10), (1e300, 0.5, 1e-200)],
)
def test_analytic_sigma_refuses_unrepresentable_sigma(epsilon, delta, sens):
    from privopt.errors import InvalidInput

    with pytest.raises(InvalidInput, match=r"not representable|overflows|underflows"):
        analytic_gaussian_sigma(epsilon, delta, sens)


_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628")


def _normal_cdf_exact(x: Decimal) -> Decimal:
    """Φ(x) to ~70 digits: the erf series for |x| < 3, the erfc continued fraction beyond."""
    z = abs(x) / Decimal(2).sqrt()
    if z < 3:
        term, total, n = z, z, 0
        while abs(term) > Decimal(10) ** -80:
            n += 1
            term *= -z * z / n
            total += term / (2 * n + 1)
        erfc = 1 - 2 / _PI.sqrt() * total
    else:
        frac = Decimal(0)
        for k in range(4000, 0, -1):  # erfc(z) = e^{-z²}/√π / (z + (1/2)/(z + 1/(z + ...)))
            frac = (Decimal(k) / 2) / (z + frac)
        erfc = (-z * z).exp() / _PI.sqrt() / (z + frac)
    tail = erfc / 2  # Φ(−|x|)
    return 1 - tail if x > 0 else tail


@pytest.mark.parametrize(("epsilon", "delta"), [(1e-10, 1e-300), (1e-300, 1e-12), (1e-6, 1e-200)])
def test_analytic_sigma_is_safe_where_the_terms_of_delta_cancel(epsilon, delta):
    # At tiny ε and δ the two terms of δ(σ) agree to rounding level: their float difference
    # is noise (even negative). σ must still satisfy the exact condition, checked here in
    # 80-digit decimal arithmetic.
    with localcontext() as ctx:
        ctx.prec = 80
        sigma, eps = Decimal(analytic_gaussian_sigma(epsilon, delta)), Decimal(epsilon)
        a, b = 1 / (2 * sigma), eps * sigma
        exact = _normal_cdf_exact(a - b) - eps.exp() * _normal_cdf_exact(-a - b)
        assert 0 < exact <= Decimal(delta)
        # ... and is not far above the exact root: 1 % less σ breaks the condition.
        sigma *= Decimal("0.99")
        a, b = 1 / (2 * sigma), eps * sigma
        assert _normal_cdf_exact(a - b) - eps.exp() * _normal_cdf_exact(-a - b) > Decimal(delta)


def _exact_discrete_delta(sigma, epsilon, sens):
    half = int(80 * sigma) + sens + 10
    k = np.arange(-half, half + 1)
    lf = -(k.astype(float) ** 2) / (2 * sigma * sigma)
    lz = logsumexp(lf)
    c1 = epsilon * sigma**2 / sens - sens / 2
    c2 = epsilon * sigma**2 / sens + sens / 2
    return math.exp(logsumexp(lf[k > c1]) - lz) - math.exp(epsilon + logsumexp(lf[k > c2]) - lz)


@pytest.mark.parametrize(
    ("sigma", "epsilon", "sens"),
    [
        (3.73, 1.0, 1),
        (1.0, 0.5, 1),
        (40.0, 0.2, 5),
        (373.0, 1.0, 100),
        (1200.0, 2.0, 1025),
        (0.6, 3.0, 2),
    ],
)
def test_discrete_delta_bound_is_an_upper_bound_and_tight(sigma, epsilon, sens):
    exact = _exact_discrete_delta(sigma, epsilon, sens)
    bound = discrete_gaussian_delta(sigma, epsilon, sens)
    assert bound >= exact * (1 - 1e-9)
    if sigma >= 100:
        assert bound <= exact * 1.01 + 1e-15


def test_classic_rejects_large_epsilon_and_zero_delta():
    from privopt.errors import InvalidInput

    with pytest.raises(InvalidInput, match="epsilon"):
        classic_gaussian_sigma(1.5, 1e-5)
    with pytest.raises(InvalidInput, match="delta"):
        analytic_gaussian_sigma(1.0, 0.0)
    with pytest.raises(InvalidInput, match="sensitivity"):
        discrete_gaussian_delta(3.0, 1.0, 1.5)
