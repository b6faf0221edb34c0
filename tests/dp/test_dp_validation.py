"""Every public entry point rejects bad parameters with InvalidInput naming the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest
from privopt.dp import (
    GeneratorSource,
    SecureSource,
    analytic_gaussian_sigma,
    as_random_source,
    exponential_mechanism,
    exponential_mechanism_probabilities,
    gaussian_mechanism,
    laplace_mechanism,
    sample_discrete_gaussian,
    sample_discrete_laplace,
    sample_gaussian,
    sample_laplace,
)
from privopt.errors import InvalidInput

BAD_POSITIVE = [0.0, -1.0, math.nan, math.inf, -math.inf, "x", None, True]
BAD_DELTA = [-0.1, 1.0, 1.5, math.nan, math.inf]


@pytest.mark.parametrize("bad", BAD_POSITIVE)
def test_bad_epsilon(bad):
    for call in (
        lambda: sample_discrete_laplace(bad),
        lambda: laplace_mechanism([1.0], bad),
        lambda: gaussian_mechanism([1.0], bad, 1e-5),
        lambda: analytic_gaussian_sigma(bad, 1e-5),
        lambda: exponential_mechanism([1.0, 2.0], bad),
        lambda: exponential_mechanism_probabilities([1.0], bad),
    ):
        with pytest.raises(InvalidInput, match="epsilon"):
            call()


@pytest.mark.parametrize("bad", BAD_POSITIVE)
def test_bad_sensitivity_sigma_scale(bad):
    with pytest.raises(InvalidInput, match="sensitivity"):
        sample_discrete_laplace(1.0, sensitivity=bad)
    with pytest.raises(InvalidInput, match="sensitivity"):
        laplace_mechanism([1.0], 1.0, sensitivity=bad)
    with pytest.raises(InvalidInput, match="sensitivity"):
        gaussian_mechanism([1.0], 1.0, 1e-5, sensitivity=bad)
    with pytest.raises(InvalidInput, match="sensitivity"):
        exponential_mechanism([1.0], 1.0, sensitivity=bad)
    with pytest.raises(InvalidInput, match="sigma"):
        sample_discrete_gaussian(bad)
    with pytest.raises(InvalidInput, match="sigma"):
        sample_gaussian(bad)
    with pytest.raises(InvalidInput, match="scale"):
        sample_laplace(bad)


@pytest.mark.parametrize("bad", BAD_DELTA)
def test_bad_delta(bad):
    with pytest.raises(InvalidInput, match="delta"):
        gaussian_mechanism([1.0], 1.0, bad)
    with pytest.raises(InvalidInput, match="delta"):
        analytic_gaussian_sigma(1.0, bad)


def test_bad_values_scores_size_rng():
    with pytest.raises(InvalidInput, match="values"):
        laplace_mechanism([1.0, math.inf], 1.0)
    with pytest.raises(InvalidInput, match="values"):
        gaussian_mechanism(["a"], 1.0, 1e-5)
    with pytest.raises(InvalidInput, match="scores"):
        exponential_mechanism([], 1.0)
    with pytest.raises(InvalidInput, match="scores"):
        exponential_mechanism([1.0, math.nan], 1.0)
    with pytest.raises(InvalidInput, match="scores"):
        exponential_mechanism([[1.0]], 1.0)
    with pytest.raises(InvalidInput, match="size"):
        sample_discrete_laplace(1.0, -3)
    with pytest.raises(InvalidInput, match="size"):
        sample_discrete_gaussian(1.0, 2.5)
    with pytest.raises(InvalidInput, match="rng"):
        as_random_source("insecure")
    with pytest.raises(InvalidInput, match="rng"):
        as_random_source(1.5)
    with pytest.raises(InvalidInput, match="rng"):
        as_random_source(-1)


def test_as_random_source_kinds():
    src = as_random_source(3)
    assert isinstance(src, GeneratorSource) and not src.secure
    assert as_random_source(src) is src
    gen = np.random.default_rng(0)
    assert as_random_source(gen).generator is gen
    assert isinstance(as_random_source(None), SecureSource)  # no seed: the OS CSPRNG
    sec = as_random_source("secure")
    assert isinstance(sec, SecureSource) and sec.secure
    w = sec.random_words(1000)
    assert w.dtype == np.uint64 and w.shape == (1000,) and len(np.unique(w)) == 1000


def test_random_source_helpers_are_uniform():
    src = as_random_source(12)
    u = src.uniform(100_000)
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.005
    k = src.integers(6, 60_000)
    counts = np.bincount(k, minlength=6)
    assert counts.size == 6 and np.all(np.abs(counts - 10_000) < 500)
    bits = src.random_bits(64_000)
    assert set(np.unique(bits)) == {0, 1} and abs(bits.mean() - 0.5) < 0.01
    with pytest.raises(InvalidInput, match="high"):
        src.integers(0)
