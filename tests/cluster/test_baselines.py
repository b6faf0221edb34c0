"""Baselines of the DPM evaluation (spec 004 §12.2): DP-Lloyd's bounded Laplace and iterations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from privopt import dp
from privopt.cluster.baselines import (
    bounded_laplace,
    bounded_laplace_scale,
    dp_lloyd,
    dp_lloyd_iterations,
)
from privopt.errors import InvalidInput
from scipy import stats


@pytest.mark.parametrize(
    "eps, sens, lower, upper",
    [(0.01, 200.0, -500.0, 500.0), (0.5, 200.0, -1.5e5, 1.5e5), (0.003, 200.0, -150.0, 150.0)],
)
def test_bounded_laplace_scale_is_the_fixed_point(eps, sens, lower, upper):
    b = bounded_laplace_scale(eps, sens, lower, upper)
    diam = upper - lower
    delta_c = (2 - math.exp(-sens / b) - math.exp(-(diam - sens) / b)) / (1 - math.exp(-diam / b))
    assert b == pytest.approx(sens / (eps - math.log(delta_c)), rel=1e-9)
    assert b >= sens / eps * (1 - 1e-12)  # truncation is paid for with a larger scale


def test_bounded_laplace_is_the_truncated_laplace():
    lower, upper, scale, value = -50.0, 80.0, 40.0, 60.0
    draws = bounded_laplace(np.full(4000, value), scale, lower, upper, dp.as_random_source(3))
    assert draws.min() >= lower and draws.max() <= upper
    base = stats.laplace(loc=value, scale=scale)
    lo, hi = base.cdf(lower), base.cdf(upper)
    p = stats.kstest(draws, lambda x: (base.cdf(x) - lo) / (hi - lo)).pvalue
    assert p > 1e-3
    # Values outside the domain are clipped to it first (diffprivlib's randomise).
    assert bounded_laplace(np.array([1e6]), 1.0, lower, upper, dp.as_random_source(0))[0] <= upper


def test_dp_lloyd_iterations_and_budget():
    # Synth-10d: k = 64, n = 1e5, d = 10 at ε = 1 gives diffprivlib's minimum of 2 iterations.
    assert dp_lloyd_iterations(1.0, 64, 100_000, 10) == 2
    assert dp_lloyd_iterations(1e6, 2, 100_000, 2) == 7
    X = np.random.default_rng(0).normal(0, 5, size=(3000, 3)) + np.repeat([[-40], [40]], 1500, 0)
    acct = dp.PrivacyAccountant(epsilon_budget=2.0)
    centres = dp_lloyd(X, 2, (-100, 100), 2.0, rng=1, accountant=acct)
    assert centres.shape == (2, 3) and np.all(np.abs(centres) <= 100)
    assert acct.epsilon_spent == pytest.approx(2.0)


def test_diffprivlib_split_spends_what_diffprivlib_spends():
    # diffprivlib 0.6.6 unpacks _split_epsilon's pair in swapped order: the count gets 1 unit and
    # each of the d sums ∛(4dρ²) units of ε/iters/(d + ∛(4dρ²)).
    X = np.random.default_rng(1).normal(0, 5, size=(2000, 4))
    c = np.cbrt(4 * 4 * 0.225**2)
    acct = dp.PrivacyAccountant()
    dp_lloyd(X, 3, (-100, 100), 1.0, rng=0, accountant=acct, split="diffprivlib")
    assert acct.epsilon_spent == pytest.approx((1 + 4 * c) / (4 + c))
    with pytest.raises(InvalidInput, match="split"):
        dp_lloyd(X, 3, (-100, 100), 1.0, split="other")
