"""Exact integer noise: discrete Laplace (two-sided geometric) and discrete Gaussian.

Both samplers follow Canonne, Kamath & Steinke, *The Discrete Gaussian for Differential
Privacy* (NeurIPS 2020), Algorithms 1-3: every step is a comparison of uniform random bits with
rational numbers, in integer arithmetic, so the output distribution is exactly the stated pmf
for the rational parameter used; no floating-point value ever touches a sample (the failure
mode of textbook samplers exposed by Mironov 2012).

The parameters arrive as floats; a float is a dyadic rational, and we use it exactly where the
integers fit the kernels. Otherwise the parameter is rounded in the conservative direction
(more noise, never less): the rate ε/Δ of the discrete Laplace down, σ² of the discrete
Gaussian up. :func:`discrete_laplace_rate` and :func:`discrete_gaussian_variance` return the
rational actually used.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from privopt._validation import (
    check_epsilon,
    check_finite_array,
    check_positive,
    check_size,
    finite_result,
)
from privopt.dp import _kernels
from privopt.dp._reference import (
    BitReader,
    laplace_block,
    ref_discrete_gaussian,
    ref_discrete_laplace,
)
from privopt.dp.randomness import RandomSource, as_random_source
from privopt.errors import InvalidInput

__all__ = [
    "sample_discrete_laplace",
    "sample_discrete_gaussian",
    "discrete_laplace_rate",
    "discrete_gaussian_variance",
    "discrete_laplace_pmf",
    "discrete_gaussian_pmf",
]

_LIMIT = 2**62
#: Largest scale t/s of the discrete Laplace (samples must fit int64 with a wide margin).
_MAX_SCALE = 2**56
#: Relative resolution of σ² in the discrete Gaussian: σ² is rounded up to a multiple of
#: 2^-j with j chosen so that σ²·2^j ≥ 2^40 (relative increase ≤ 2^-40).
_SIGMA2_BITS = 40
#: Largest refill of the word buffer (16 MiB).
_MAX_WORDS = 1 << 21


def discrete_laplace_rate(epsilon: float, sensitivity: float = 1) -> tuple[int, int]:
    """The rational rate s/t ≤ ε/Δ used by :func:`sample_discrete_laplace`.

    Exactly ε/Δ when numerator and denominator are below 2⁶²; otherwise the largest s/2^k
    (k ≤ 62) not above ε/Δ, so that the realised privacy loss never exceeds ε.

    Returns
    -------
    (s, t) : positive ints with P(y) ∝ exp(-|y|·s/t).

    Raises
    ------
    InvalidInput
        ε or Δ not finite and > 0, or a rate outside [2⁻⁵⁶, 2⁶²].
    """
    return _laplace_rate(check_epsilon(epsilon), check_positive("sensitivity", sensitivity))


@functools.lru_cache(maxsize=256)
def _laplace_rate(epsilon: float, sensitivity: float) -> tuple[int, int]:
    """:func:`discrete_laplace_rate` of validated floats, cached: exact rational arithmetic
    costs more than a small draw, and mechanisms repeat the same few rates."""
    rate = Fraction(epsilon) / Fraction(sensitivity)
    s, t = rate.numerator, rate.denominator
    if s >= _LIMIT or t >= _LIMIT:
        k = 62
        while k >= 0 and math.floor(rate * 2**k) >= _LIMIT:
            k -= 1
        if k < 0:
            raise InvalidInput(f"epsilon/sensitivity = {float(rate)!r} is too large (> 2**62)")
        s, t = math.floor(rate * 2**k), 2**k
        if s == 0:
            raise InvalidInput(f"epsilon/sensitivity = {float(rate)!r} is too small (< 2**-62)")
        g = math.gcd(s, t)
        s, t = s // g, t // g
    if t > _MAX_SCALE * s:
        raise InvalidInput(
            f"sensitivity/epsilon = {float(1 / rate)!r} exceeds 2**56: the "
            "noise would not fit 64-bit integers"
        )
    return s, t


def discrete_gaussian_variance(sigma: float) -> tuple[int, int]:
    """The rational σ'² = n/d ≥ σ² used by :func:`sample_discrete_gaussian`.

    σ² (exact square of the float σ) rounded up to a multiple of 1/d, d = 2^j, with j the
    smallest making n = ⌈σ²·d⌉ ≥ 2⁴⁰ (so σ'²/σ² - 1 < 2⁻⁴⁰; d = 1 when σ² ≥ 2⁴⁰).

    Returns
    -------
    (n, d) : positive ints, σ'² = n/d.

    Raises
    ------
    InvalidInput
        σ not finite and > 0.
    """
    var = Fraction(check_positive("sigma", sigma)) ** 2
    j = max(0, _SIGMA2_BITS - math.ceil(var).bit_length())
    d = 2**j
    n = math.ceil(var * d)
    return n, d


def _integer_points(k: Any) -> np.ndarray:
    """``k`` as a float array after checking every entry is a finite integer (pmfs live on ℤ)."""
    arr = check_finite_array("k", k)
    fractional = arr != np.round(arr)
    if np.any(fractional):
        where = tuple(np.argwhere(fractional)[0].tolist())
        raise InvalidInput(
            f"k must be integers (the pmf lives on the integers), got a fraction at index {where}"
        )
    return arr


@finite_result(cause="k, epsilon or sensitivity beyond float64")
def discrete_laplace_pmf(k: Any, epsilon: float, sensitivity: float = 1) -> np.ndarray:
    """Exact pmf P(k) = tanh(r/2)·exp(-r|k|), r = s/t ≈ ε/Δ (float64, shape of k).

    Raises
    ------
    InvalidInput
        A non-integer or non-finite ``k``; ε or Δ not finite and > 0.

    Examples
    --------
    >>> float(discrete_laplace_pmf(0, 1.0)) == math.tanh(0.5)
    True
    """
    s, t = discrete_laplace_rate(epsilon, sensitivity)
    r = s / t
    k = np.abs(_integer_points(k))
    return np.tanh(r / 2) * np.exp(-r * k)


@finite_result(cause="k or sigma beyond float64")
def discrete_gaussian_pmf(k: Any, sigma: float) -> np.ndarray:
    """pmf P(k) = exp(-k²/(2σ'²)) / Σ_j exp(-j²/(2σ'²)), normaliser summed to 1e-17 accuracy.

    Raises
    ------
    InvalidInput
        A non-integer or non-finite ``k``; σ not finite and > 0.
    """
    n, d = discrete_gaussian_variance(sigma)
    var = n / d
    half = math.ceil(math.sqrt(var) * 40) + 2
    j = np.arange(-half, half + 1, dtype=np.float64)
    z = float(np.sum(np.exp(-(j * j) / (2 * var))))
    k = _integer_points(k)
    return np.exp(-(k * k) / (2 * var)) / z


def _finish(out: np.ndarray, shape: tuple[int, ...] | None) -> Any:
    return int(out[0]) if shape is None else out.reshape(shape)


def _run(
    kernel: Callable,
    args: tuple,
    reference: Callable,
    ref_args: tuple,
    count: int,
    source: RandomSource,
    bits_per_sample: float,
) -> np.ndarray:
    """Drive a kernel over refilled word buffers (see :mod:`privopt.dp._kernels`)."""
    out = np.empty(count, dtype=np.int64)
    i = 0
    words = np.empty(0, dtype=np.uint64)
    pos = 0
    while i < count:
        need = int(min(_MAX_WORDS, (count - i) * bits_per_sample * 1.1 / 64 + 16))
        w0 = pos // 64
        words = np.concatenate([words[w0:], source.random_words(need)])
        pos -= 64 * w0
        i, pos, status = kernel(words, pos, *args, out, i)
        while status == 2:  # this sample needs big integers: redo it exactly in Python
            reader = BitReader(source, words, pos)
            out[i] = reference(reader, *ref_args)
            i += 1
            words, pos = reader.export()
            if i == count:
                break
            i, pos, status = kernel(words, pos, *args, out, i)
    return out


def _laplace_bits(s: int, t: int) -> float:
    """A generous estimate of the random bits one discrete Laplace draw reads (sizes refills)."""
    k = laplace_block(s, t).bit_length() - 1
    return 1.6 * k + 24 + 8 * max(0, s // t)


@finite_result(cause="epsilon or sensitivity beyond float64")
def sample_discrete_laplace(
    epsilon: float, size: Any = None, *, sensitivity: float = 1, rng: Any = None
) -> Any:
    """Discrete Laplace (two-sided geometric) noise, P(k) ∝ exp(-ε|k|/Δ), k ∈ ℤ.

    Adding it to an integer query of ℓ1-sensitivity Δ gives ε-differential privacy (pure DP,
    for any neighbouring relation under which the query moves by at most Δ). Exact: CKS 2020
    Algorithm 2 in integer arithmetic (see :func:`discrete_laplace_rate` for the rational rate).

    Parameters
    ----------
    epsilon : ε > 0, privacy loss per unit of ``sensitivity``.
    size : None (one int), an int or a shape tuple.
    sensitivity : Δ > 0, in the query's units (usually an integer count).
    rng : None (default: the OS CSPRNG, for real releases) or a seed / Generator
        (reproducible, for testing only); see :func:`privopt.dp.as_random_source`.

    Returns
    -------
    int or int64 ndarray of shape ``size``.

    Raises
    ------
    InvalidInput
        ε or Δ not finite and > 0, or a bad ``size``/``rng``.

    Examples
    --------
    >>> sample_discrete_laplace(1.0, 3, rng=0).dtype
    dtype('int64')
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    count, shape = check_size(size)
    source = as_random_source(rng)
    s, t = discrete_laplace_rate(epsilon, sensitivity)
    out = _run(
        _kernels.discrete_laplace_kernel,
        (s, t),
        ref_discrete_laplace,
        (s, t),
        count,
        source,
        bits_per_sample=_laplace_bits(s, t),
    )
    return _finish(out, shape)


def gaussian_laplace_scale(n: int, d: int) -> int:
    """Scale t of the discrete Laplace proposal of the discrete Gaussian, σ² = n/d.

    CKS Algorithm 3 is exact for any t > 0: the Laplace pmf e^{-|y|/t} times the acceptance
    e^{-(|y| - σ²/t)²/2σ²} is e^{-y²/2σ²} times a constant. CKS take t = ⌊σ⌋+1; we take the
    power of two nearest to σ on a log scale (t/σ within [2^-½, 2^½], about as many proposals),
    whose uniform part is plain random bits and whose Bernoulli(u/t) compares 64 bits at once.

    Examples
    --------
    >>> [gaussian_laplace_scale(round(s * s * 2**20), 2**20) for s in (0.5, 3.0, 600.0, 1e4)]
    [1, 4, 512, 8192]
    """
    r = math.isqrt(n // d)  # ⌊σ⌋
    if r == 0:
        return 1
    lo = 1 << (r.bit_length() - 1)  # lo ≤ σ < 2·lo
    return lo if n <= 2 * lo * lo * d else 2 * lo  # σ ≤ √2·lo: lo is nearer


@finite_result(cause="sigma beyond float64")
def sample_discrete_gaussian(sigma: float, size: Any = None, *, rng: Any = None) -> Any:
    """Discrete Gaussian noise, P(k) ∝ exp(-k²/(2σ²)), k ∈ ℤ (CKS 2020, Algorithm 3, with the
    Laplace scale of :func:`gaussian_laplace_scale`).

    Adding it to an integer query of ℓ2-sensitivity Δ gives ρ-zCDP with ρ = Δ²/(2σ²), and
    (ε, δ)-DP with δ from CKS Theorem 7 (see :mod:`privopt.dp.calibration`). σ² is used as
    the rational of :func:`discrete_gaussian_variance` (≥ σ², relative excess < 2⁻⁴⁰).

    Parameters
    ----------
    sigma : σ > 0, standard deviation parameter in the query's units.
    size : None (one int), an int or a shape tuple.
    rng : None (default: the OS CSPRNG, for real releases) or a seed / Generator
        (reproducible, for testing only); see :func:`privopt.dp.as_random_source`.

    Returns
    -------
    int or int64 ndarray of shape ``size``.

    Examples
    --------
    >>> int(sample_discrete_gaussian(2.0, 5, rng=0).shape[0])
    5
    """
    sigma = check_positive("sigma", sigma)
    count, shape = check_size(size)
    source = as_random_source(rng)
    n, d = discrete_gaussian_variance(sigma)
    t = gaussian_laplace_scale(n, d)
    dd = 2 * n * t * t * d
    if n >= _LIMIT or t * d >= _LIMIT or dd >= 2**126:
        # Beyond the 128-bit kernel (σ ≳ 1e9): exact but slow pure-Python path.
        reader = BitReader(source)
        out = np.array(
            [ref_discrete_gaussian(reader, n, d, t) for _ in range(count)], dtype=np.int64
        )
        return _finish(out, shape)
    out = _run(
        _kernels.discrete_gaussian_kernel,
        (n, d, t),
        ref_discrete_gaussian,
        (n, d, t),
        count,
        source,
        bits_per_sample=_laplace_bits(1, t) + 16,
    )
    return _finish(out, shape)
