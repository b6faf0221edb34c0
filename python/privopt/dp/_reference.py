"""Pure-Python reference of the exact samplers (Canonne, Kamath & Steinke 2020, Algorithms 1-3).

Arbitrary-precision integers, one sample at a time. It reads bits in exactly the order of the
compiled kernels in :mod:`privopt.dp._kernels`, so that, fed the same words, both return the
same samples. It serves three purposes:

- the test oracle of the kernels (identical output on identical bits);
- the fall-back of the kernels for a sample whose intermediate integers leave 64/128 bits
  (the kernel stops before that sample and this code redoes it from the same bit position,
  so the stream of samples is exactly the one an unbounded-precision kernel would produce);
- the sampler for parameters too large for the kernels at all.
"""

from __future__ import annotations

import numpy as np

from privopt.dp.randomness import RandomSource

__all__ = [
    "BitReader",
    "ref_bernoulli",
    "ref_bernoulli_exp_small",
    "ref_bernoulli_exp",
    "laplace_block",
    "ref_discrete_laplace",
    "ref_discrete_gaussian",
]


class BitReader:
    """Reads bits LSB-first from a sequence of 64-bit words, drawing more words when needed.

    Parameters
    ----------
    source : where fresh words come from once ``words`` is used up.
    words : initial words (uint64 array), may be empty.
    pos : bit position in ``words`` where reading starts.
    """

    def __init__(self, source: RandomSource, words: np.ndarray | None = None, pos: int = 0):
        self.source = source
        w0 = pos // 64
        self._arr = np.empty(0, np.uint64) if words is None else words[w0:]
        self._extra: list[int] = []
        self.pos = pos - 64 * w0

    def _word(self, i: int) -> int:
        n = self._arr.size
        return int(self._arr[i]) if i < n else self._extra[i - n]

    def read(self, k: int) -> int:
        """The next ``k`` bits (1 ≤ k ≤ 64) as an int, first bit least significant."""
        while self.pos + k > 64 * (self._arr.size + len(self._extra)):
            self._extra.extend(int(w) for w in self.source.random_words(16))
        w, off = divmod(self.pos, 64)
        x = self._word(w) >> off
        if 64 - off < k:
            x |= self._word(w + 1) << (64 - off)
        self.pos += k
        return x & ((1 << k) - 1)

    def export(self) -> tuple[np.ndarray, int]:
        """The unread words (as uint64 array) and the bit position within them."""
        w0 = self.pos // 64
        extra = np.array(self._extra, dtype=np.uint64)
        words = np.concatenate([self._arr, extra])[w0:]
        return words, self.pos - 64 * w0


def ref_bernoulli(r: BitReader, num: int, den: int) -> bool:
    """Bernoulli(num/den), 0 ≤ num ≤ den: compare a lazily drawn uniform U with the binary
    expansion of num/den, bit by bit (2 bits expected); num = 0 and num = den need no bits."""
    if num == 0:
        return False
    if num == den:
        return True
    while True:
        num *= 2
        e = 0
        if num >= den:
            num -= den
            e = 1
        b = r.read(1)
        if b != e:
            return e == 1


def ref_bernoulli_exp_small(r: BitReader, num: int, den: int) -> bool:
    """Bernoulli(exp(-γ)) for γ = num/den ∈ [0, 1] (CKS Algorithm 1, first part)."""
    k = 1
    while ref_bernoulli(r, num, den) and ref_bernoulli(r, 1, k):
        k += 1
    return k % 2 == 1


def ref_bernoulli_exp(r: BitReader, num: int, den: int) -> bool:
    """Bernoulli(exp(-γ)) for any rational γ = num/den ≥ 0 (CKS Algorithm 1)."""
    while num >= den:
        if not ref_bernoulli_exp_small(r, 1, 1):
            return False
        num -= den
    return ref_bernoulli_exp_small(r, num, den)


def laplace_block(s: int, t: int) -> int:
    """The block m of the discrete Laplace: the largest power of two ≤ max(1, t/s)."""
    return 1 << ((t // s).bit_length() - 1) if s < t else 1


def ref_discrete_laplace(r: BitReader, s: int, t: int) -> int:
    """Discrete Laplace P(y) ∝ exp(-|y|·s/t) = q^|y|, q = e^{-s/t}.

    |y| = m·v + u with the block m = :func:`laplace_block`: u uniform on {0..m-1} (log2 m bits)
    kept with probability q^u, v the number of successes of Bernoulli(q^m) before the first
    failure, so P(|y|) ∝ q^u·(q^m)^v = q^|y|. A sign bit then rejects (negative, 0).
    """
    m = laplace_block(s, t)
    k = m.bit_length() - 1
    while True:
        u = r.read(k) if k else 0
        if not ref_bernoulli_exp_small(r, u * s, t):
            continue
        v = 0
        while ref_bernoulli_exp(r, m * s, t):
            v += 1
        y = m * v + u
        b = r.read(1)
        if b == 1 and y == 0:
            continue
        return -y if b == 1 else y


def ref_discrete_gaussian(r: BitReader, n: int, d: int, t: int) -> int:
    """Discrete Gaussian P(y) ∝ exp(-y²/(2σ²)), σ² = n/d (CKS Algorithm 3 with a discrete
    Laplace of scale t > 0; any t is exact, t ≈ σ keeps the acceptance high)."""
    while True:
        y = ref_discrete_laplace(r, 1, t)
        a = abs(y) * t * d - n
        # γ = (|y| - σ²/t)² / (2σ²) = a² / (2·n·t²·d)
        if ref_bernoulli_exp(r, a * a, 2 * n * t * t * d):
            return y
