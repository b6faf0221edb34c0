"""Noise calibration for the Gaussian mechanism.

- :func:`analytic_gaussian_sigma`: the smallest σ for which the (continuous) Gaussian mechanism
  is (ε, δ)-DP, by bisection on the exact condition of Balle & Wang (ICML 2018, Theorem 8):

      δ(σ) = Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ) ≤ δ,

  valid for every ε > 0 (unlike the classic bound) and never larger than the classic σ.
- :func:`classic_gaussian_sigma`: σ = Δ·√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1;
  proved for ε < 1 only), kept for comparison.
- :func:`zcdp_epsilon`: the ε of the (ε, δ)-DP guarantee that ρ-zCDP implies (Bun & Steinke
  2016, Proposition 1.3), used to report zCDP releases and by the accountant.
- :func:`discrete_gaussian_delta`: a rigorous upper bound on the δ of the *discrete*
  Gaussian mechanism (Canonne, Kamath & Steinke 2020, Theorem 7) at integer sensitivity, used
  by :func:`privopt.dp.gaussian_mechanism` to check its calibration after discretisation.
"""

from __future__ import annotations

import math

from scipy.special import log_ndtr, ndtr

from privopt._validation import (
    check_delta,
    check_epsilon,
    check_nonnegative,
    check_positive,
    finite_result,
)
from privopt.errors import InvalidInput

__all__ = [
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "gaussian_delta",
    "discrete_gaussian_delta",
    "zcdp_epsilon",
    "DEFAULT_CONVERSION_DELTA",
]

#: δ at which ρ-zCDP is reported as (ε, δ)-DP unless another is chosen (the order of magnitude
#: the U.S. Census Bureau used to report its 2020 zCDP releases).
DEFAULT_CONVERSION_DELTA = 1e-10


@finite_result(cause="sigma, epsilon or sensitivity beyond float64")
def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """δ(σ) of the continuous Gaussian mechanism (Balle & Wang 2018, Theorem 8).

    The second term is formed as exp(ε + log Φ(·)) so that large ε does not overflow, and
    both terms from σ/Δ so that a huge σ or Δ does not either.

    Raises
    ------
    InvalidInput
        σ, ε or Δ not finite and > 0.
    """
    sigma = check_positive("sigma", sigma)
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    first, second = _delta_terms(sigma / sensitivity, epsilon)
    return first - second


def _delta_terms(ratio: float, epsilon: float) -> tuple[float, float]:
    """The two terms Φ(a − b) and e^ε Φ(−a − b) of δ, with a = 1/(2r), b = εr, r = σ/Δ."""
    a = 0.5 / ratio
    b = epsilon * ratio
    return float(ndtr(a - b)), math.exp(min(epsilon + float(log_ndtr(-a - b)), 700.0))


def _delta_upper(ratio: float, epsilon: float) -> float:
    """An upper bound on δ at σ/Δ = ``ratio``: the difference of the two terms plus a bound
    on its rounding error. Where the terms cancel (tiny ε and δ: both ≫ δ) the plain
    difference is rounding noise and can even be negative; calibrating on the bound keeps σ
    on the safe side. The bound allows 8 ulps of relative error in Φ(a − b) and, for the
    second term, formed as exp(ε + log Φ), 8 ulps of the exponent's size as well."""
    first, second = _delta_terms(ratio, epsilon)
    log_second = math.log(second) if second > 0 else 0.0
    error = 2.0**-49 * (first + second * (2.0 + abs(log_second)))
    return first - second + error


@finite_result(cause="sensitivity / epsilon near the float64 limit")
def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ making the Gaussian mechanism (ε, δ)-DP (Balle & Wang 2018), by bisection.

    δ(σ) depends on σ/Δ only and decreases in it: the root s of δ(s·Δ) = δ is bracketed by
    doubling and bisected (in log s) until the bracket is 1e-12 relative, and σ = Δ·s is the
    upper end, checked against a rounding-safe upper bound on δ, so that δ(σ) ≤ δ holds for
    the σ returned (σ exceeds the exact root by ~1e-12 relative, by up to ~0.3 % where the
    two terms of δ cancel to rounding level, e.g. ε = 1e-300, δ = 1e-12).

    Parameters
    ----------
    epsilon : ε > 0.
    delta : δ ∈ (0, 1).
    sensitivity : ℓ2-sensitivity Δ > 0 of the query, in its units.

    Returns
    -------
    σ in the query's units.

    Raises
    ------
    InvalidInput
        ε, Δ not finite and > 0, δ not in (0, 1), or a σ that a float cannot hold (e.g.
        Δ = 1e308: σ would overflow).

    Examples
    --------
    >>> round(analytic_gaussian_sigma(1.0, 1e-5), 4)
    3.7306
    >>> round(analytic_gaussian_sigma(1.0, 1e-5, sensitivity=1e300) / 1e300, 4)
    3.7306
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    sensitivity = check_positive("sensitivity", sensitivity)
    if delta == 0.0:
        raise InvalidInput("delta must be > 0 for the Gaussian mechanism, got 0.0")
    s = _unit_sigma(epsilon, delta)
    sigma = sensitivity * s
    if not (math.isfinite(sigma) and sigma >= _TINY):
        raise InvalidInput(
            f"sigma = sensitivity * {s:.6g} is not representable as a float "
            f"(sensitivity={sensitivity!r}, epsilon={epsilon!r}, delta={delta!r})"
        )
    # Δ·s rounds: nudge σ up (by 2^-52, 2^-51, ...) until the bound holds at σ/Δ itself.
    step = 2.0**-52
    while _delta_upper(sigma / sensitivity, epsilon) > delta and step < 1e-9:
        sigma *= 1.0 + step
        step *= 2.0
    return sigma


#: Smallest normal float: σ/Δ below it loses precision.
_TINY = 2.2250738585072014e-308


def _unit_sigma(epsilon: float, delta: float) -> float:
    """The smallest s with δ(s; ε, Δ = 1) ≤ δ (by the upper bound): brackets by doubling and
    halving, then bisection in log s to 1e-12 relative. Every loop is bounded: the brackets
    stop at the float range (about 2100 octaves), the bisection at adjacent floats."""
    lo = hi = 1.0
    while _delta_upper(hi, epsilon) > delta:
        hi *= 2.0
        if math.isinf(hi):
            raise InvalidInput(
                f"sigma/sensitivity overflows a float for epsilon={epsilon!r}, delta={delta!r}"
            )
    while _delta_upper(lo, epsilon) <= delta:
        lo /= 2.0
        if lo < _TINY:  # δ(σ) → 1 as σ → 0, so only a huge ε gets here
            raise InvalidInput(
                f"sigma/sensitivity underflows a float for epsilon={epsilon!r}, delta={delta!r}"
            )
    while hi / lo - 1.0 > 1e-12:
        mid = lo * math.sqrt(hi / lo)
        if not lo < mid < hi:  # adjacent floats
            break
        if _delta_upper(mid, epsilon) > delta:
            lo = mid
        else:
            hi = mid
    return hi


@finite_result(cause="sensitivity / epsilon near the float64 limit")
def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Classic σ = Δ·√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1; needs ε < 1).

    Raises
    ------
    InvalidInput
        ε ≥ 1 (the bound is not proved there), or invalid ε, δ, Δ.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    sensitivity = check_positive("sensitivity", sensitivity)
    if delta == 0.0:
        raise InvalidInput("delta must be > 0 for the Gaussian mechanism, got 0.0")
    if epsilon >= 1.0:
        raise InvalidInput(f"epsilon must be < 1 for the classic Gaussian bound, got {epsilon!r}")
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


@finite_result(cause="sigma, epsilon or sensitivity beyond float64")
def discrete_gaussian_delta(sigma: float, epsilon: float, sensitivity: int = 1) -> float:
    """Upper bound on δ of the discrete Gaussian mechanism at integer sensitivity.

    CKS 2020 Theorem 7: adding Y ~ N_ℤ(0, σ²) to an integer query of sensitivity Δ is
    (ε, δ)-DP with δ = P[Y > c₁] - e^ε P[Y > c₂], c₁ = εσ²/Δ - Δ/2, c₂ = εσ²/Δ + Δ/2.
    With f(x) = exp(-x²/(2σ²)), m = ⌊c⌋+1, Z = Σ f(k) ∈ [√(2π)σ, √(2π)σ(1+η)]
    (Poisson summation, η = 3e^{-2π²σ²} for σ ≥ 1/2) and ∫ₘ^∞ f ≤ Σ_{k≥m} f(k) ≤ f(m) + ∫ₘ^∞ f:

        P[Y > c₁] ≤ Q(m₁/σ) + f(m₁)/(√(2π)σ),   P[Y > c₂] ≥ Q(m₂/σ)/(1+η),

    where Q is the standard normal upper tail. Where f is convex (x ≥ σ) the midpoint and
    trapezoid rules tighten these to P[Y > c₁] ≤ Q((m₁-½)/σ) and
    P[Y > c₂] ≥ (Q(m₂/σ) + f(m₂)/(2√(2π)σ))/(1+η), leaving an O(1/σ²) relative slack.
    """
    sigma = check_positive("sigma", sigma)
    epsilon = check_epsilon(epsilon)
    if sigma < 0.5:
        raise InvalidInput(f"sigma must be >= 0.5 for this bound, got {sigma!r}")
    if isinstance(sensitivity, bool) or int(sensitivity) != sensitivity or sensitivity < 1:
        raise InvalidInput(f"sensitivity must be a positive integer, got {sensitivity!r}")
    c1 = epsilon * sigma**2 / sensitivity - sensitivity / 2.0
    c2 = epsilon * sigma**2 / sensitivity + sensitivity / 2.0
    root2pi_sigma = math.sqrt(2 * math.pi) * sigma
    m2 = math.floor(c2) + 1
    eta = 3.0 * math.exp(-2.0 * math.pi**2 * sigma**2)
    # Lower bound of Σ_{k≥m₂} f(k)/(√(2π)σ): the integral, plus f(m₂)/2 where f is convex
    # (x ≥ σ), since the trapezoid rule then overestimates each ∫_k^{k+1} f.
    tail2 = float(ndtr(-m2 / sigma))
    if m2 >= sigma:
        tail2 += math.exp(-m2 * m2 / (2 * sigma**2)) / (2 * root2pi_sigma)
    lower2 = math.exp(epsilon + math.log(tail2) - math.log1p(eta)) if tail2 > 0 else 0.0
    if c1 < 0:
        upper1 = 1.0
    else:
        m1 = math.floor(c1) + 1
        if m1 - 0.5 >= sigma:
            # f convex on [m₁-½, ∞): f(k) ≤ ∫_{k-½}^{k+½} f (midpoint rule underestimates).
            upper1 = float(ndtr(-(m1 - 0.5) / sigma))
        else:
            upper1 = float(ndtr(-m1 / sigma)) + math.exp(-m1 * m1 / (2 * sigma**2)) / root2pi_sigma
    return max(0.0, min(1.0, upper1) - lower2)


@finite_result(cause="rho beyond float64")
def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε of the (ε, δ)-DP guarantee implied by ρ-zCDP: ε = ρ + 2√(ρ ln(1/δ)).

    Bun & Steinke, "Concentrated Differential Privacy: Simplifications, Extensions, and Lower
    Bounds" (TCC 2016), Proposition 1.3: a ρ-zCDP mechanism is (ρ + 2√(ρ ln(1/δ)), δ)-DP for
    every δ > 0.

    Parameters
    ----------
    rho : ρ ≥ 0 (0: no privacy loss, ε = 0).
    delta : δ in (0, 1), required: the statement holds for every δ, and the caller says which
        one it reports (:data:`DEFAULT_CONVERSION_DELTA` is the usual choice).

    Raises
    ------
    InvalidInput
        ρ negative or not finite, δ outside (0, 1).

    Examples
    --------
    >>> round(zcdp_epsilon(0.5, 1e-10), 4)
    7.2861
    """
    rho = check_nonnegative("rho", rho)
    delta = check_delta(delta)
    if delta == 0:
        raise InvalidInput("delta must be > 0: rho-zCDP implies no pure epsilon-DP bound")
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
