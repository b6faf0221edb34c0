"""Grid Laplace/Gaussian: histograms vs the exact grid pmf, grid membership, mechanism noise."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from dp_stats import P_THRESHOLD
from dp_stats import pooled_chisquare as chisquare
from privopt.dp import (
    analytic_gaussian_sigma,
    gaussian_mechanism,
    laplace_mechanism,
    sample_gaussian,
    sample_laplace,
)
from privopt.dp.continuous import LAPLACE_GRID_BITS, gaussian_grid_calibration, grid_step
from privopt.dp.discrete import discrete_laplace_rate
from scipy import stats

N = 200_000


def _grid_laplace_bin_masses(edges_k: np.ndarray, r: float) -> np.ndarray:
    """Exact mass of P(k) = tanh(r/2)e^{-r|k|} on integer intervals [edges[i], edges[i+1])."""

    q = math.exp(-r)

    def cdf(k: np.ndarray) -> np.ndarray:
        # P(Z ≥ j) = q^j/(1+q) for j ≥ 1 (geometric sum), so P(Z < k) = 1 - q^k/(1+q) for
        # k ≥ 0, and by symmetry P(Z < k) = P(Z ≥ 1-k) = q^(1-k)/(1+q) for k < 0.
        return np.where(
            k >= 0, 1.0 - np.exp(-r * np.abs(k)) / (1 + q), np.exp(-r * np.abs(k)) * q / (1 + q)
        )

    return np.diff(cdf(edges_k.astype(np.float64)))


@pytest.mark.parametrize(("scale", "seed"), [(1.0, 1), (0.3, 2), (17.5, 3)])
def test_sample_laplace_histogram(scale, seed):
    x = sample_laplace(scale, N, rng=seed)
    g = grid_step(scale, LAPLACE_GRID_BITS)
    k = x / g
    np.testing.assert_array_equal(k, np.round(k))  # every value lies on the grid
    s, t = discrete_laplace_rate(g, scale)
    r = s / t
    # Bins of width scale/4 in grid units over ±12 scales, plus two tail bins.
    width = round(scale / 4 / g)
    edges = np.concatenate([[-(2**60)], np.arange(-48, 49) * width, [2**60]])
    masses = _grid_laplace_bin_masses(edges, r)
    assert abs(masses.sum() - 1) < 1e-12
    idx = np.searchsorted(edges, k.astype(np.int64), side="right") - 1
    p = chisquare(idx, np.arange(masses.size), masses)
    assert p > P_THRESHOLD


def test_grid_laplace_bin_masses_match_brute_force():
    r = 0.37
    k = np.arange(-400, 401)
    pmf = np.tanh(r / 2) * np.exp(-r * np.abs(k))
    edges = np.array([-400, -7, -1, 0, 1, 5, 401])
    brute = [pmf[(k >= a) & (k < b)].sum() for a, b in itertools.pairwise(edges)]
    np.testing.assert_allclose(_grid_laplace_bin_masses(edges, r), brute, rtol=1e-12)


@pytest.mark.parametrize(("sigma", "seed"), [(1.0, 1), (0.05, 2), (300.0, 3)])
def test_sample_gaussian_histogram(sigma, seed):
    x = sample_gaussian(sigma, N, rng=seed)
    g = grid_step(sigma, LAPLACE_GRID_BITS)
    np.testing.assert_array_equal(x / g, np.round(x / g))
    # Bin masses from the continuous normal cdf: on the grid g ≤ 2^-20 σ the discrete
    # Gaussian's bin masses differ from these by O(g/σ) ≈ 1e-6 relative, far below the
    # chi-square's resolution at 200k draws (≈ 1e-2 relative per bin).
    edges = np.concatenate([[-np.inf], np.linspace(-5, 5, 41) * sigma, [np.inf]])
    masses = np.diff(stats.norm.cdf(edges, scale=sigma))
    idx = np.searchsorted(edges, x, side="right") - 1
    assert chisquare(idx, np.arange(masses.size), masses) > P_THRESHOLD
    assert abs(x.var() / sigma**2 - 1) < 5 * math.sqrt(2 / N)


def test_laplace_mechanism_noise_and_shape():
    values = np.full((400, 500), 3.25)
    eps, sens = 0.7, 2.0
    out = laplace_mechanism(values, eps, sensitivity=sens, rng=4)
    assert out.shape == values.shape and out.dtype == np.float64
    noise = (out - values).ravel()
    g = grid_step(min(sens, sens / eps), LAPLACE_GRID_BITS)
    b = g * (math.floor(sens / g) + 1) / eps  # scale used: ≤ (Δ+g)/ε
    assert sens / eps <= b <= sens / eps * (1 + 2.0**-19)
    assert abs(noise.mean()) < 5 * math.sqrt(2) * b / math.sqrt(noise.size)
    assert abs(noise.var() / (2 * b * b) - 1) < 0.02
    np.testing.assert_array_equal(out / g, np.round(out / g))


def test_laplace_mechanism_histogram():
    out = laplace_mechanism(np.zeros(N), 1.0, rng=8)
    edges = np.concatenate([[-np.inf], np.linspace(-8, 8, 65), [np.inf]])
    masses = np.diff(stats.laplace.cdf(edges))  # grid error ≤ 2^-20 relative, see above
    idx = np.searchsorted(edges, out, side="right") - 1
    assert chisquare(idx, np.arange(masses.size), masses) > P_THRESHOLD


def test_gaussian_mechanism_noise():
    eps, delta, sens = 1.0, 1e-5, 3.0
    out = gaussian_mechanism(np.full(N, -7.5), eps, delta, sensitivity=sens, rng=6)
    sigma_int, g = gaussian_grid_calibration(eps, delta, sens)
    sigma = analytic_gaussian_sigma(eps, delta, sens)
    # Discretisation costs at most ~0.2% more noise than the continuous optimum.
    assert sigma <= g * sigma_int <= sigma * 1.003
    noise = out + 7.5
    assert abs(noise.var() / (g * sigma_int) ** 2 - 1) < 5 * math.sqrt(2 / N)
    np.testing.assert_array_equal(out / g, np.round(out / g))


def test_mechanism_rejects_values_off_grid_range():
    with pytest.raises(Exception, match="values"):
        laplace_mechanism([1e300], 1.0)
    with pytest.raises(Exception, match="values"):
        laplace_mechanism([np.nan], 1.0)


def test_scalar_samplers_return_float():
    assert isinstance(sample_laplace(1.0, rng=0), float)
    assert isinstance(sample_gaussian(1.0, rng=0), float)
    assert laplace_mechanism(2.0, 1.0, rng=0).shape == ()
