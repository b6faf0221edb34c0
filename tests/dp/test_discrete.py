"""Exact discrete samplers: histograms vs pmf, moments, kernel vs reference, fall-back path."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from dp_stats import P_THRESHOLD, P_THRESHOLD_SECURE
from dp_stats import pooled_chisquare as chisquare
from privopt.dp import (
    _kernels,
    _reference,
    as_random_source,
    discrete_gaussian_pmf,
    discrete_laplace_pmf,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from privopt.dp.discrete import (
    _run,
    discrete_gaussian_variance,
    discrete_laplace_rate,
    gaussian_laplace_scale,
)

N = 200_000


def _support(scale: float) -> np.ndarray:
    half = int(60 * scale) + 60
    return np.arange(-half, half + 1)


@pytest.mark.parametrize(
    ("epsilon", "sensitivity", "seed"),
    [(1.0, 1, 1), (0.1, 1, 2), (0.37, 2, 3), (4.0, 1, 4), (2.0, 0.3, 5)],
)
def test_discrete_laplace_histogram(epsilon, sensitivity, seed):
    x = sample_discrete_laplace(epsilon, N, sensitivity=sensitivity, rng=seed)
    support = _support(sensitivity / epsilon)
    p = chisquare(x, support, discrete_laplace_pmf(support, epsilon, sensitivity))
    assert p > P_THRESHOLD


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.0, 1), (0.25, 1), (3.0, 2)])
def test_discrete_laplace_moments(epsilon, sensitivity):
    x = sample_discrete_laplace(epsilon, N, sensitivity=sensitivity, rng=11)
    r = epsilon / sensitivity
    var = 2 * math.exp(-r) / (1 - math.exp(-r)) ** 2  # variance of the two-sided geometric
    se_mean = math.sqrt(var / N)
    assert abs(x.mean()) < 5 * se_mean
    # Var of the sample variance ≈ (μ4 - σ⁴)/N; μ4 ≤ 25σ⁴ for this family: 5σ·√(24/N) bound.
    assert abs(x.var() / var - 1) < 5 * math.sqrt(24 / N)


@pytest.mark.parametrize(("sigma", "seed"), [(0.5, 1), (1.7, 2), (6.0, 3), (25.0, 4)])
def test_discrete_gaussian_histogram(sigma, seed):
    x = sample_discrete_gaussian(sigma, N, rng=seed)
    support = _support(sigma)
    p = chisquare(x, support, discrete_gaussian_pmf(support, sigma))
    assert p > P_THRESHOLD


@pytest.mark.parametrize("sigma", [1.0, 3.0, 1000.0, 1e6])
def test_discrete_gaussian_moments(sigma):
    x = sample_discrete_gaussian(sigma, N, rng=7)
    support = _support(sigma) if sigma < 100 else None
    if support is not None:
        pmf = discrete_gaussian_pmf(support, sigma)
        var = float(np.sum(pmf * support.astype(float) ** 2))
    else:
        var = sigma**2  # N_ℤ(0, σ²) has variance σ² up to e^{-2π²σ²} (CKS Prop. 19)
    assert abs(x.mean()) < 5 * math.sqrt(var / N)
    assert abs(x.var() / var - 1) < 5 * math.sqrt(2 / N)


def test_secure_source_histograms():
    x = sample_discrete_laplace(0.5, N, rng="secure")
    support = _support(2.0)
    assert chisquare(x, support, discrete_laplace_pmf(support, 0.5)) > P_THRESHOLD_SECURE
    y = sample_discrete_gaussian(2.5, N, rng="secure")
    support = _support(2.5)
    assert chisquare(y, support, discrete_gaussian_pmf(support, 2.5)) > P_THRESHOLD_SECURE


def test_seed_reproducible_and_shapes():
    a = sample_discrete_laplace(1.0, (3, 4), rng=5)
    b = sample_discrete_laplace(1.0, (3, 4), rng=5)
    assert a.shape == (3, 4) and a.dtype == np.int64
    np.testing.assert_array_equal(a, b)
    assert isinstance(sample_discrete_laplace(1.0, rng=1), int)
    assert isinstance(sample_discrete_gaussian(1.0, rng=1), int)
    assert sample_discrete_gaussian(1.0, 0, rng=1).shape == (0,)
    gen = np.random.default_rng(3)
    c = sample_discrete_gaussian(2.0, 10, rng=gen)
    d = sample_discrete_gaussian(2.0, 10, rng=gen)  # the Generator advanced
    assert not np.array_equal(c, d)


def _words(seed: int, n: int) -> np.ndarray:
    return as_random_source(seed).random_words(n)


@pytest.mark.parametrize(
    ("s", "t"),
    [
        (1, 1),
        (1, 10),
        (7, 3),
        (3, 7),
        (5, 1),
        (1, 2**20),
        (6004799503160661, 2**55),
        (3602879701896397, 2**55),
        (230584300921369, 2**61),
        (1, 2**56),
        (461168601, 2**62),
    ],
)
def test_laplace_kernel_matches_reference(s, t):
    """Same words in, same samples out: the compiled kernel is the reference algorithm verbatim."""
    words = _words(s % 1000 + t % 1000, 4000)
    out = np.empty(400, dtype=np.int64)
    i, pos, status = _kernels.discrete_laplace_kernel(words, 0, s, t, out, 0)
    assert i > 0
    reader = _reference.BitReader(as_random_source(0), words, 0)
    ref = [_reference.ref_discrete_laplace(reader, s, t) for _ in range(i)]
    np.testing.assert_array_equal(out[:i], ref)
    assert status == 0 or (status == 1 and i < out.size)
    if status == 0:
        assert reader.pos == pos


@pytest.mark.parametrize("sigma", [0.7, 3.3, 1000.0, 123456.789])
@pytest.mark.parametrize("scale", ["power of two", "CKS"])
def test_gaussian_kernel_matches_reference(sigma, scale):
    n, d = discrete_gaussian_variance(sigma)
    t = gaussian_laplace_scale(n, d) if scale == "power of two" else math.isqrt(n // d) + 1
    dd = 2 * n * t * t * d
    words = _words(int(sigma * 10), 8000)
    out = np.empty(300, dtype=np.int64)
    i, _pos, _status = _kernels.discrete_gaussian_kernel(words, 0, n, d, t, out, 0)
    assert i > 0 and dd < 2**126
    reader = _reference.BitReader(as_random_source(0), words, 0)
    ref = [_reference.ref_discrete_gaussian(reader, n, d, t) for _ in range(i)]
    np.testing.assert_array_equal(out[:i], ref)


def test_buffer_refill_and_bigint_fallback_keep_the_stream():
    """Refills (status 1) and big-integer fall-backs (status 2) give exactly the samples of an
    uninterrupted arbitrary-precision run on the same bit stream."""
    sigma = 4.0
    n, d = discrete_gaussian_variance(sigma)
    t = math.isqrt(n // d) + 1
    dd = 2 * n * t * t * d

    # ylim = 3 forces the fall-back for every candidate with |y| > 3; tiny refills force
    # many buffer boundaries inside samples.
    def kernel(words, pos, n, d, t, out, start):
        return _kernels.discrete_gaussian_kernel(words, pos, n, d, t, out, start, ylim=3)

    assert dd < 2**126
    got = _run(
        kernel,
        (n, d, t),
        _reference.ref_discrete_gaussian,
        (n, d, t),
        500,
        as_random_source(9),
        bits_per_sample=1,
    )
    reader = _reference.BitReader(as_random_source(9))
    want = [_reference.ref_discrete_gaussian(reader, n, d, t) for _ in range(500)]
    np.testing.assert_array_equal(got, want)
    assert np.any(np.abs(got) > 3)


@pytest.mark.parametrize(("s", "t"), [(1, 1), (1, 3), (2, 7)])
def test_laplace_refill_and_fallback_keep_the_stream(s, t):
    """The same for the discrete Laplace: vmax = 0 sends every draw with v > 0 to the
    reference, and one-word refills cut samples in the middle."""

    def kernel(words, pos, s, t, out, start):
        return _kernels.discrete_laplace_kernel(words, pos, s, t, out, start, vmax=0)

    got = _run(kernel, (s, t), _reference.ref_discrete_laplace, (s, t), 500, as_random_source(4), 1)
    reader = _reference.BitReader(as_random_source(4))
    want = [_reference.ref_discrete_laplace(reader, s, t) for _ in range(500)]
    np.testing.assert_array_equal(got, want)
    assert np.any(np.abs(got) >= max(1, t // s))


def test_kernels_reject_bad_buffers_and_parameters():
    words = np.zeros(4, dtype=np.uint64)
    out = np.empty(3, dtype=np.int64)
    bad = [
        lambda: _kernels.discrete_laplace_kernel(words.astype(np.int64), 0, 1, 1, out, 0),
        lambda: _kernels.discrete_laplace_kernel(words, 0, 1, 1, out.astype(np.int32), 0),
        lambda: _kernels.discrete_laplace_kernel(words, 0, 1, 1, out[::2], 0),
        lambda: _kernels.discrete_laplace_kernel(words, 257, 1, 1, out, 0),
        lambda: _kernels.discrete_laplace_kernel(words, 0, 0, 1, out, 0),
        lambda: _kernels.discrete_laplace_kernel(words, 0, 1, 2**62 + 1, out, 0),
        lambda: _kernels.discrete_laplace_kernel(words, 0, 1, 2**57, out, 0),
        lambda: _kernels.discrete_laplace_kernel(words, 0, 1, 1, out, 4),
        lambda: _kernels.discrete_gaussian_kernel(words, 0, 2**62, 1, 1, out, 0),
        lambda: _kernels.discrete_gaussian_kernel(words, 0, 1, 2**40, 2**30, out, 0),
        lambda: _kernels.discrete_gaussian_kernel(words, 0, 2**61, 1, 2**40, out, 0),
    ]
    for call in bad:
        with pytest.raises((ValueError, TypeError)):
            call()
    ro = np.empty(3, dtype=np.int64)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        _kernels.discrete_laplace_kernel(words, 0, 1, 1, ro, 0)
    # All-zero words: the sampler never finishes a sample and asks for more words.
    assert _kernels.discrete_laplace_kernel(words, 0, 1, 1, out, 0)[2] in (0, 1)


def test_rational_parameters():
    assert discrete_laplace_rate(1.0, 1) == (1, 1)
    assert discrete_laplace_rate(0.5, 3) == (1, 6)
    s, t = discrete_laplace_rate(1e-10, 1)  # denominator 2**86 > 2**62: rounded down
    assert Fraction(s, t) <= Fraction(1e-10) and t <= 2**62
    assert float(Fraction(1e-10) - Fraction(s, t)) / 1e-10 < 1e-8
    n, d = discrete_gaussian_variance(3.7)
    assert Fraction(n, d) >= Fraction(3.7) ** 2
    assert Fraction(n, d) / Fraction(3.7) ** 2 - 1 < Fraction(1, 2**39)
    assert discrete_gaussian_variance(2.0) == (4 * 2**37, 2**37)


def test_gaussian_laplace_scale_is_the_nearest_power_of_two():
    """t is a power of two with t/σ in [2^-1/2, 2^1/2] (exact rational comparison of t² and σ²),
    and t = 1 below σ = 1."""
    rng = np.random.default_rng(0)
    for sigma in np.concatenate([[0.3, 1.0, 1.5, 2**20, 1e6], 10 ** rng.uniform(-1, 8, 300)]):
        n, d = discrete_gaussian_variance(float(sigma))
        t = gaussian_laplace_scale(n, d)
        assert t & (t - 1) == 0
        var = Fraction(n, d)
        if var < 1:
            assert t == 1
        else:
            assert var / 2 <= t * t <= 2 * var


def test_pmfs_sum_to_one():
    k = np.arange(-2000, 2001)
    assert abs(discrete_laplace_pmf(k, 0.3).sum() - 1) < 1e-12
    assert abs(discrete_gaussian_pmf(k, 0.4).sum() - 1) < 1e-12
