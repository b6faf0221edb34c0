"""Shared statistics for the sampler tests: chi-square of a histogram against an exact pmf.

Threshold. Every test draws from a *fixed seed*, so its p-value is a fixed number and the
test is deterministic; the threshold only has to separate "right pmf" from "wrong pmf".
With 200,000 draws a wrong pmf is far out: measured on the discrete Laplace at ε = 1, a rate
off by 1% gives p ≈ 7e-6 and off by 3% gives p ≈ 6e-47 (discrete Gaussian, σ off by 1%:
p ≈ 7e-14), while under the correct pmf a p-value below 1e-4 has probability 1e-4 per seed:
rejecting at p < 1e-4 keeps that chance negligible when a seed or numpy's stream changes,
and still catches every error that matters for privacy (the kernels are moreover checked to
be bit-for-bit equal to the arbitrary-precision reference). Tests on the unseedable secure
source are genuinely random and use 1e-6 (a false alarm once in a million runs).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

P_THRESHOLD = 1e-4
P_THRESHOLD_SECURE = 1e-6
MIN_EXPECTED = 5.0


def pooled_chisquare(samples: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    """p-value of Pearson's chi-square of integer ``samples`` against ``pmf`` on ``support``.

    ``support`` must be sorted and hold (all but ≤ 1e-12 of) the mass; adjacent values are
    pooled, left to right, until each bin expects ≥ 5 draws (the usual validity rule of the
    chi-square approximation); a short remainder joins the last bin.
    """
    samples = np.asarray(samples).ravel()
    n = samples.size
    assert 1.0 - pmf.sum() < 1e-9, "support misses probability mass"
    assert samples.min() >= support[0] and samples.max() <= support[-1], (
        "a draw outside the support"
    )
    counts = np.bincount(np.searchsorted(support, samples), minlength=support.size)
    expected = pmf / pmf.sum() * n
    obs_bins, exp_bins = [], []
    acc_o = acc_e = 0.0
    for o, e in zip(counts, expected, strict=True):
        acc_o += o
        acc_e += e
        if acc_e >= MIN_EXPECTED:
            obs_bins.append(acc_o)
            exp_bins.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0 or acc_o > 0:
        obs_bins[-1] += acc_o
        exp_bins[-1] += acc_e
    assert len(obs_bins) >= 2, "need at least two bins"
    obs = np.array(obs_bins)
    exp = np.array(exp_bins)
    exp *= obs.sum() / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)
