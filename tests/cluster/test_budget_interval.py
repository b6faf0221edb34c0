"""Budget schedule (spec 004 §0, §3, §11.1) and IntervalSizeEst (§5, §11.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from privopt import dp
from privopt.cluster import DPM, budget_schedule
from privopt.cluster._interval import (
    codebook,
    codebook_monte_carlo,
    dimension_averaged_gaps,
    dp_percentile,
    unit_gap_percentile,
)

DELTA_1E5 = 1 / (1e5 * math.sqrt(1e5))


def test_schedule_matches_spec_table():
    s = budget_schedule(1.0, DELTA_1E5, 7, (0.04, 0.18, 0.18, 0.6), (0.2, 0.8))
    np.testing.assert_allclose(
        s.epsilon_count,
        [0.004971, 0.007029, 0.009941, 0.014059, 0.019882, 0.028118, 0.039765, 0.056235],
        rtol=1e-3,
    )
    np.testing.assert_allclose(
        s.epsilon_split,
        [0.007229, 0.010223, 0.014458, 0.020447, 0.028916, 0.040894, 0.057832],
        rtol=1e-3,
    )
    assert s.epsilon_count.sum() == pytest.approx(0.18, abs=1e-15)
    assert s.epsilon_split.sum() == pytest.approx(0.18, abs=1e-15)
    assert s.delta_count == pytest.approx(7.9057e-10, rel=1e-4)
    assert s.delta_average == pytest.approx(2.5298e-8, rel=1e-4)
    np.testing.assert_allclose(
        s.lambdas, [4077.03, 2882.89, 2038.51, 1441.45, 1019.26, 720.72, 509.63, 360.36], rtol=1e-5
    )
    # Δf at the root for ñ = 1e5 with the defaults: (0.3·12 + 5)/(1e5 − λ_0).
    assert (0.3 * 12 + 5) / (1e5 - s.lambdas[0]) == pytest.approx(8.9655e-5, rel=1e-4)
    assert s.epsilon_total == pytest.approx(1.0, abs=1e-12)
    assert s.delta_total == pytest.approx(DELTA_1E5, rel=1e-12)


def test_laplace_shift_exceeded_with_probability_delta_cnt():
    # λ = −ln(2δ_cnt)/ε_cnt makes P[Lap(1/ε_cnt) > λ] = δ_cnt; a large δ_cnt is measurable.
    eps, delta_cnt = 0.5, 0.05
    lam = -math.log(2 * delta_cnt) / eps
    draws = dp.sample_laplace(1 / eps, 40000, rng=5)
    assert abs(np.mean(draws > lam) - delta_cnt) < 4 * math.sqrt(delta_cnt / 40000)


@pytest.mark.parametrize("m", [50, 2000])
def test_analytic_codebook_matches_monte_carlo(m):
    grid = np.array([0.5, 3.0, 29.5])
    mc = codebook_monte_carlo(m, grid, reps=400, rng=1)
    np.testing.assert_allclose(codebook(m, grid), mc, rtol=0.01)
    assert unit_gap_percentile(m) > 0


def test_gaps_and_dp_percentile():
    X = np.array([[0.0, 10.0], [1.0, 12.0], [3.0, 13.0], [200.0, 13.0]])
    np.testing.assert_allclose(dimension_averaged_gaps(X, -100, 100), [1.5, 1.5, 48.5])
    values = np.random.default_rng(0).uniform(0, 1, 5000)
    est = [dp_percentile(values, 65, 50.0, (0.0, 1.0), rng=s) for s in range(20)]
    assert abs(np.median(est) - np.percentile(values, 65)) < 0.01


@pytest.mark.parametrize("sigma0", [2.0, 5.0, 10.0])
@pytest.mark.parametrize("d", [1, 2, 10])
def test_split_width_is_half_sigma(sigma0, d):
    X = np.random.default_rng(int(sigma0 * 10 + d)).normal(0, sigma0, size=(20000, d))
    m = DPM(bounds=(-100, 100), epsilon=1000, delta=1e-6, max_depth=1, random_state=0).fit(X)
    assert abs(2 * m.split_width_ - sigma0) <= 0.5


def test_split_width_saturates_on_synth_10d(synth_10d):
    X, _ = synth_10d
    m = DPM(bounds=(-100, 100), epsilon=1, delta=DELTA_1E5, max_depth=1, random_state=1).fit(X)
    assert m.split_width_ == 14.75
    assert m.n_splits_ == 13
