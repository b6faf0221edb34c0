"""Exponential mechanism: probabilities vs 60-digit brute force, stability, sampling."""

from __future__ import annotations

from decimal import MAX_EMAX, MIN_EMIN, Decimal, localcontext

import numpy as np
import pytest
from dp_stats import P_THRESHOLD, P_THRESHOLD_SECURE
from dp_stats import pooled_chisquare as chisquare
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.dp import exponential_mechanism, exponential_mechanism_probabilities


def brute_force_probabilities(scores, epsilon, sensitivity, monotonic):
    """exp(ε·u/(cΔ)) / Σ exp(...) in 60-digit decimal arithmetic, no shifting tricks."""
    with localcontext() as ctx:
        ctx.prec = 60
        ctx.Emax, ctx.Emin = MAX_EMAX, MIN_EMIN  # exp(5e6) is fine for Decimal
        c = Decimal(1 if monotonic else 2) * Decimal(sensitivity)
        w = [(Decimal(epsilon) * Decimal(float(u)) / c).exp() for u in scores]
        total = sum(w)
        return np.array([float(x / total) for x in w])


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize(
    ("scores", "epsilon", "sensitivity"),
    [
        ([0.0, 1.0, 2.0, 3.0], 1.0, 1.0),
        ([5.0, -2.0, 5.0, 0.5, 7.25], 0.3, 2.0),
        ([1e6, 0.0, -1e6, 999_990.0, 999_999.5], 1e-3, 1.0),  # spans 2e6, weights e^{±500}
        ([1e6, -1e6, 0.0], 1.0, 1.0),  # exp(5e5): overflows naively
    ],
)
def test_probabilities_match_brute_force(scores, epsilon, sensitivity, monotonic):
    p = exponential_mechanism_probabilities(
        scores, epsilon, sensitivity=sensitivity, monotonic=monotonic
    )
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(
        p,
        brute_force_probabilities(scores, epsilon, sensitivity, monotonic),
        rtol=1e-12,
        atol=1e-300,
    )
    assert abs(p.sum() - 1) < 1e-12


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=8),
    st.floats(1e-3, 10.0),
    st.floats(0.1, 10.0),
)
def test_probabilities_property(scores, epsilon, sensitivity):
    p = exponential_mechanism_probabilities(scores, epsilon, sensitivity=sensitivity)
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    assert abs(p.sum() - 1) < 1e-12
    # The best score is always among the most likely candidates.
    assert p[int(np.argmax(scores))] == p.max()
    np.testing.assert_allclose(
        p, brute_force_probabilities(scores, epsilon, sensitivity, False), rtol=1e-9, atol=1e-300
    )


def test_sampling_histogram():
    scores = np.array([0.0, 1.0, 2.5, -1.0, 2.0, 0.5])
    p = exponential_mechanism_probabilities(scores, 1.2, sensitivity=0.5)
    idx = exponential_mechanism(scores, 1.2, sensitivity=0.5, rng=3, size=200_000)
    assert idx.dtype == np.int64
    assert chisquare(idx, np.arange(scores.size), p) > P_THRESHOLD
    idx = exponential_mechanism(scores, 1.2, sensitivity=0.5, rng="secure", size=200_000)
    assert chisquare(idx, np.arange(scores.size), p) > P_THRESHOLD_SECURE


def test_extreme_scores_select_best_and_return_int():
    i = exponential_mechanism([0.0, 1e6, -1e6], 1.0, rng=0)
    assert isinstance(i, int) and i == 1
    assert exponential_mechanism([3.0], 1.0, rng=0) == 0
    # Never selects a candidate with probability 0 (underflowed weight).
    idx = exponential_mechanism([0.0, -1e6, 0.0], 1.0, rng=1, size=10_000)
    assert not np.any(idx == 1)
