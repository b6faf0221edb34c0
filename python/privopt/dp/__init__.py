"""Differential-privacy primitives: exact noise samplers, the exponential mechanism, accounting.

Every sampler takes ``rng=``: ``None`` (the default) draws from the OS CSPRNG, as a real
release must; an int seed or a numpy Generator makes the noise reproducible, for testing only
(a known seed reveals the noise). The noise is drawn as uniform random bits turned into
integers by integer arithmetic only, so no floating-point artefact can leak the input
(Mironov 2012; Canonne, Kamath & Steinke 2020). Guarantees, one place:

==============================  ==============================================================
``sample_discrete_laplace``     P(k) ∝ exp(-ε|k|/Δ) on ℤ, exact (CKS Alg. 2). Added to an
                                integer query of ℓ1-sensitivity Δ: ε-DP (pure), for whatever
                                neighbouring relation Δ was computed under.
``sample_discrete_gaussian``    P(k) ∝ exp(-k²/(2σ²)) on ℤ, exact (CKS Alg. 3). Added to an
                                integer query of ℓ2-sensitivity Δ: (Δ²/(2σ²))-zCDP, and
                                (ε, δ)-DP with δ of CKS Thm 7.
``laplace_mechanism``           real values, ℓ1-sensitivity Δ: ε-DP, noise b = Δ/ε(1+2⁻²⁰) on a
                                public power-of-two grid (input rounded to the grid, sensitivity
                                inflated by the grid step; no floating-point leak).
``gaussian_mechanism``          real values, ℓ2-sensitivity Δ: (ε, δ)-DP, σ from the analytic
                                Gaussian (Balle & Wang 2018) on a grid, checked with the discrete
                                bound of CKS Thm 7.
``sample_laplace``,             noise only: Laplace / Gaussian restricted to the grid
``sample_gaussian``             g = 2^(⌊log₂ scale⌋-20); exact on that grid.
``exponential_mechanism``       P(i) ∝ exp(ε·uᵢ/(2Δu)) (or /Δu if ``monotonic``): ε-DP when
                                every score moves by ≤ Δu between neighbours; computed in log
                                space (stable for scores spanning 1e6), sampled exactly from
                                its float64 probabilities: ε-DP up to their relative rounding
                                (≲ 2⁻⁴²) and δ ≤ n·2⁻¹⁰⁷⁴ (see :mod:`privopt.dp.exponential`).
``sample_categorical``          index k with probability exactly wₖ / Σw for float64 weights
                                (each a dyadic rational), by integer arithmetic on random bits;
                                released perturbation matrices sample their rows with it.
``zcdp_epsilon``                ρ-zCDP as (ε, δ)-DP: ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke
                                2016, Prop. 1.3).
``PrivacyAccountant``           basic composition: sequential spends add, spends inside
                                ``parallel(...)`` (disjoint data) count their max; zCDP spends
                                (``rho=``) compose in ρ and are stated as (ε, δ); raises
                                ``PrivacyBudgetExceeded`` before recording an overspend;
                                all-or-nothing plans (``check_plan``, ``spend_all``) and
                                ``transaction()``, rolled back on error.
==============================  ==============================================================

Neighbouring relation: the primitives are agnostic; the *caller* states it by the sensitivity
it passes (and should record it in the accountant's ledger with ``mechanism=`` and
``sensitivity=``).

Example
-------
>>> from privopt.dp import PrivacyAccountant, sample_discrete_laplace
>>> acct = PrivacyAccountant(epsilon_budget=1.0)
>>> noisy = 42 + sample_discrete_laplace(0.5, rng=0)
>>> acct.spend(0.5, label="count", mechanism="discrete Laplace", sensitivity=1)
>>> acct.remaining()
(0.5, 0.0)
"""

from __future__ import annotations

from privopt.dp.accountant import LedgerEntry, PlannedSpend, PrivacyAccountant
from privopt.dp.calibration import (
    DEFAULT_CONVERSION_DELTA,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    discrete_gaussian_delta,
    gaussian_delta,
    zcdp_epsilon,
)
from privopt.dp.categorical import sample_categorical
from privopt.dp.continuous import (
    gaussian_mechanism,
    laplace_mechanism,
    sample_gaussian,
    sample_laplace,
)
from privopt.dp.discrete import (
    discrete_gaussian_pmf,
    discrete_laplace_pmf,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from privopt.dp.exponential import exponential_mechanism, exponential_mechanism_probabilities
from privopt.dp.randomness import (
    GeneratorSource,
    RandomSource,
    SecureSource,
    as_random_source,
    is_seeded,
)
from privopt.errors import PrivacyBudgetExceeded

__all__ = [
    "as_random_source",
    "is_seeded",
    "RandomSource",
    "GeneratorSource",
    "SecureSource",
    "sample_discrete_laplace",
    "sample_discrete_gaussian",
    "discrete_laplace_pmf",
    "discrete_gaussian_pmf",
    "sample_laplace",
    "sample_gaussian",
    "laplace_mechanism",
    "gaussian_mechanism",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "gaussian_delta",
    "discrete_gaussian_delta",
    "zcdp_epsilon",
    "DEFAULT_CONVERSION_DELTA",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "sample_categorical",
    "PrivacyAccountant",
    "PlannedSpend",
    "LedgerEntry",
    "PrivacyBudgetExceeded",
]
