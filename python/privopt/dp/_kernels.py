"""Numba kernels of the exact samplers: integer arithmetic on a buffer of random words.

The algorithms are those of Canonne, Kamath & Steinke (2020), Algorithms 1-3, written so that
every intermediate value is an integer: int64 for the discrete Laplace, and 128-bit unsigned
pairs (hi, lo) for the acceptance test of the discrete Gaussian. They read bits from
``words`` (uint64, least significant bit first) exactly as :class:`privopt.dp._reference.BitReader`
does, so kernel and reference produce identical samples from identical words.

A kernel fills ``out[start:]`` and returns ``(i, pos, status)``:

- status 0: all samples done; ``pos`` is the next unread bit;
- status 1: the words ran out while drawing sample ``i``; ``pos`` is the bit where sample ``i``
  began. The caller appends fresh words after the unread tail and calls again: sample ``i`` is
  redrawn from the *same* bits followed by new ones, so nothing is conditioned on the buffer
  boundary (discarding the partial sample instead would bias towards cheap samples);
- status 2: sample ``i`` needs integers beyond 64/128 bits; ``pos`` is where it began and the
  caller draws it with the arbitrary-precision reference from that bit position.
"""

from __future__ import annotations

import numba
import numpy as np

_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U32 = np.uint64(32)
_U63 = np.uint64(63)
_M32 = np.uint64(0xFFFFFFFF)

_jit = numba.njit(cache=False, nogil=True)
_inline = numba.njit(cache=False, nogil=True, inline="always")


@_inline
def _read_bits(words, st, k):
    """Next k bits (1 ≤ k ≤ 64) as uint64; sets st[1] = 1 when the buffer is exhausted."""
    pos = st[0]
    if pos + k > words.size * 64:
        st[1] = 1
        return _U0
    w = pos >> 6
    off = pos & 63
    x = words[w] >> np.uint64(off)
    avail = 64 - off
    if avail < k:
        x |= words[w + 1] << np.uint64(avail)
    if k < 64:
        x &= (_U1 << np.uint64(k)) - _U1
    st[0] = pos + k
    return x


@_inline
def _uniform_below(words, st, m, k):
    """Uniform int64 on {0..m-1}, k = bit_length(m-1) ≤ 62, by rejection."""
    if k == 0:
        return np.int64(0)
    while True:
        x = np.int64(_read_bits(words, st, k))
        if st[1] != 0:
            return np.int64(0)
        if x < m:
            return x


@_inline
def _bernoulli(words, st, num, den):
    """Bernoulli(num/den) for int64 0 ≤ num ≤ den < 2⁶²: lazy comparison of a uniform's bits
    with the binary expansion of num/den."""
    while True:
        num = num * 2
        e = 0
        if num >= den:
            num -= den
            e = 1
        b = np.int64(_read_bits(words, st, 1))
        if st[1] != 0:
            return False
        if b != e:
            return e == 1


@_jit
def _bernoulli_exp_small(words, st, num, den):
    """Bernoulli(exp(-num/den)) for 0 ≤ num ≤ den (CKS Algorithm 1)."""
    k = np.int64(1)
    while _bernoulli(words, st, num, den) and _bernoulli(words, st, np.int64(1), k):
        k += 1
    return k % 2 == 1 and st[1] == 0


@_inline
def _ge128(ahi, alo, bhi, blo):
    return ahi > bhi or (ahi == bhi and alo >= blo)


@_inline
def _sub128(ahi, alo, bhi, blo):
    lo = alo - blo
    borrow = _U1 if alo < blo else _U0
    return ahi - bhi - borrow, lo


@_inline
def _mul64(a, b):
    """Full 128-bit product of two uint64 as (hi, lo)."""
    a_lo = a & _M32
    a_hi = a >> _U32
    b_lo = b & _M32
    b_hi = b >> _U32
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    mid = (p0 >> _U32) + (p1 & _M32) + (p2 & _M32)
    lo = (p0 & _M32) | (mid << _U32)
    hi = p3 + (p1 >> _U32) + (p2 >> _U32) + (mid >> _U32)
    return hi, lo


@_jit
def _bernoulli128(words, st, nhi, nlo, dhi, dlo):
    """Bernoulli(N/D) for 128-bit 0 ≤ N < D < 2¹²⁷ (same bit usage as :func:`_bernoulli`)."""
    while True:
        nhi = (nhi << _U1) | (nlo >> _U63)
        nlo = nlo << _U1
        e = 0
        if _ge128(nhi, nlo, dhi, dlo):
            nhi, nlo = _sub128(nhi, nlo, dhi, dlo)
            e = 1
        b = np.int64(_read_bits(words, st, 1))
        if st[1] != 0:
            return False
        if b != e:
            return e == 1


@_jit
def _bernoulli_exp128(words, st, nhi, nlo, dhi, dlo):
    """Bernoulli(exp(-N/D)) for 128-bit N ≥ 0, 0 < D < 2¹²⁷ (CKS Algorithm 1)."""
    while _ge128(nhi, nlo, dhi, dlo):
        if not _bernoulli_exp_small(words, st, np.int64(1), np.int64(1)):
            return False
        nhi, nlo = _sub128(nhi, nlo, dhi, dlo)
    k = np.int64(1)
    while _bernoulli128(words, st, nhi, nlo, dhi, dlo) and _bernoulli(words, st, np.int64(1), k):
        k += 1
    return k % 2 == 1 and st[1] == 0


@_jit
def _bernoulli_exp(words, st, num, den):
    """Bernoulli(exp(-num/den)) for int64 num ≥ 0, 0 < den < 2⁶² (CKS Algorithm 1)."""
    one = np.int64(1)
    for _ in range(num // den):
        if not _bernoulli_exp_small(words, st, one, one):
            return False
    return _bernoulli_exp_small(words, st, num % den, den)


@_jit
def _discrete_laplace_one(words, st, s, t, kt):
    """One draw of P(y) ∝ exp(-|y|·s/t); kt = bit_length(t-1).

    Rate s/t < 1: CKS Algorithm 2 (a geometric of rate 1/t from a uniform on {0..t-1} and
    Bernoulli(e^-1) trials, divided by s), O(1) expected work at any scale.
    Rate s/t ≥ 1: the magnitude is directly the number of successes of Bernoulli(e^{-s/t})
    before the first failure (geometric with ratio e^{-s/t}); equally exact, and cheaper
    here because Algorithm 2 would mostly produce 0 and reject half of those.
    Both then draw a sign and reject (negative, 0), which leaves P(y) ∝ e^{-|y|s/t}.
    """
    direct = s >= t
    q_t = t // s
    r_t = t % s
    while True:
        if direct:
            y = np.int64(0)
            while _bernoulli_exp(words, st, s, t):
                y += 1
            if st[1] != 0:
                return np.int64(0)
        else:
            u = _uniform_below(words, st, t, kt)
            if st[1] != 0:
                return np.int64(0)
            if not _bernoulli_exp_small(words, st, u, t):
                if st[1] != 0:
                    return np.int64(0)
                continue
            v = np.int64(0)
            while _bernoulli_exp_small(words, st, np.int64(1), np.int64(1)):
                v += 1
            if st[1] != 0:
                return np.int64(0)
            if v > 1024:  # y may leave int64: let the reference redo this sample exactly
                st[1] = 2
                return np.int64(0)
            # y = floor((u + t·v)/s) without forming t·v (it may overflow int64).
            y = v * q_t + u // s
            rem = u % s
            for _ in range(v):
                rem += r_t
                if rem >= s:
                    rem -= s
                    y += 1
        b = np.int64(_read_bits(words, st, 1))
        if st[1] != 0:
            return np.int64(0)
        if b == 1 and y == 0:
            continue
        return -y if b == 1 else y


@_jit
def discrete_laplace_kernel(words, pos, s, t, kt, out, start):
    """Fill out[start:] with discrete Laplace draws (rate s/t); see the module docstring."""
    st = np.zeros(2, dtype=np.int64)
    st[0] = pos
    i = start
    while i < out.size:
        begin = st[0]
        y = _discrete_laplace_one(words, st, s, t, kt)
        if st[1] != 0:
            return i, begin, st[1]
        out[i] = y
        i += 1
    return i, st[0], 0


@_jit
def discrete_gaussian_kernel(words, pos, n, t, kt, td, ylim, dhi, dlo, out, start):
    """Fill out[start:] with discrete Gaussian draws, σ² = n/d, t = ⌊σ⌋+1 (CKS Algorithm 3).

    td = t·d, ylim = (2⁶³-1) // td (larger |y| would overflow: status 2), D = 2·n·t²·d given
    as the uint64 pair (dhi, dlo).
    """
    st = np.zeros(2, dtype=np.int64)
    st[0] = pos
    i = start
    one = np.int64(1)
    while i < out.size:
        begin = st[0]
        while True:
            y = _discrete_laplace_one(words, st, one, t, kt)
            if st[1] != 0:
                break
            ay = -y if y < 0 else y
            if ay > ylim:
                st[1] = 2
                break
            a = ay * td - n
            if a < 0:
                a = -a
            nhi, nlo = _mul64(np.uint64(a), np.uint64(a))
            if _bernoulli_exp128(words, st, nhi, nlo, dhi, dlo):
                break
            if st[1] != 0:
                break
        if st[1] != 0:
            return i, begin, st[1]
        out[i] = y
        i += 1
    return i, st[0], 0
