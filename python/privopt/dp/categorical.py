"""Exact sampling from a finite distribution given by float64 weights.

A float64 is a dyadic rational ``M·2^E`` (integer mantissa M < 2⁵³), so a row of weights
``w_0 … w_{K-1}`` is exactly a row of integers ``W_k = M_k·2^(E_k − E_min)`` times one common
power of two ``2^E_min`` (:func:`exact_weights`). The sampler draws an integer V uniformly
from ``[0, T)``, ``T = Σ W_k`` (uniform random bits, rejection above T), and returns the k with
``C_k ≤ V < C_{k+1}``, ``C_k = W_0 + … + W_{k-1}``. Every step is integer arithmetic on random
bits, so index k comes out with probability exactly ``w_k / Σ_j w_j``: the stored weights
divided by their exact sum (a row of probabilities that sums to 1 only up to rounding is
normalised exactly, not by the rounded sum). No floating-point uniform, cumulative sum or
comparison is involved, whose rounding would give each index a probability off by up to ~2⁻⁵³
and an index of weight below 2⁻⁵³ the probability of one float step instead of its own.

Fast path. V has ``B = bit_length(T)`` bits. Only the top 64 bits of each ``C_k`` are kept
(``top_k = C_k >> (B − 64)``, one uint64 table per row) and V's top 64 bits are one random
word v. When v differs from every ``top_k`` its bucket is decided by the table alone
(``top_j < v < top_{j+1}`` implies ``C_j ≤ V < C_{j+1}`` whatever V's lower bits are);
otherwise (probability at most (K + 1)·2⁻⁶⁴ per draw) V's remaining ``B − 64`` bits are drawn
and compared with the exact integers. Drawing is thus vectorised over samples of a row; the
table costs one pass over the row in Python integers.

Bit protocol (fixed, so that a scripted :class:`~privopt.dp.RandomSource` can test it): each
trial takes one word; with ``B ≤ 64`` its top B bits are V; with ``B > 64`` it is V's top 64
bits and, only when needed, the next ``⌈(B − 64)/64⌉`` words (most significant first) give the
top ``B − 64`` bits of the rest.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from privopt._validation import check_finite_array, check_size
from privopt.dp.randomness import RandomSource, as_random_source
from privopt.errors import InvalidInput

__all__ = ["sample_categorical", "sample_rows", "exact_weights"]

#: Bits of the 53-bit significand of a float64 (the integer mantissa M of M·2^E).
_MANTISSA_BITS = 53


def exact_weights(weights: np.ndarray) -> list[int]:
    """The row ``weights`` (finite, ≥ 0, not all 0) as the least integers ``W_k`` with
    ``w_k = W_k · 2^e`` exactly for one exponent e (W's common factors of 2 removed).

    The caller has checked the row (helper of this module and its tests).
    """
    mantissa, exponent = np.frexp(weights)  # w = m·2^e, m in [0.5, 1) (0 for w = 0)
    ints = np.ldexp(mantissa, _MANTISSA_BITS).astype(np.int64)  # exact: m has ≤ 53 bits
    positive = ints > 0
    # Odd mantissas: w = (M >> t)·2^(e − 53 + t) with t the trailing zero bits of M.
    trailing = np.zeros(ints.shape, dtype=np.int64)
    trailing[positive] = np.log2(ints[positive] & -ints[positive]).astype(np.int64)
    ints >>= trailing
    exponent = exponent.astype(np.int64) + trailing
    shifts = exponent - int(exponent[positive].min())
    shifts[~positive] = 0
    return [m << s for m, s in zip(ints.tolist(), shifts.tolist(), strict=True)]


@dataclass(frozen=True)
class _Table:
    """One row's cumulative sums: ``top`` (K + 1,) uint64, the top bits of each C_k after
    dropping ``shift`` low bits; ``bits`` = bit length B of the total T."""

    top: np.ndarray
    shift: int
    bits: int

    @classmethod
    def of(cls, cumulative: list[int]) -> _Table:
        bits = cumulative[-1].bit_length()
        shift = max(bits - 64, 0)
        top = np.array([c >> shift for c in cumulative], dtype=np.uint64)
        return cls(top, shift, bits)


def _cumulative(weights: np.ndarray) -> list[int]:
    """[C_0 = 0, C_1, …, C_K = T] of a checked row, exact."""
    return [0, *itertools.accumulate(exact_weights(weights))]


def _draw_row(weights: np.ndarray, n: int, source: RandomSource) -> np.ndarray:
    """``n`` independent indices drawn from one checked row (see the module docstring)."""
    cumulative = _cumulative(weights)
    table = _Table.of(cumulative)
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    total_top = table.top[-1]
    while pending.size:
        words = source.random_words(pending.size)
        v = words if table.bits >= 64 else words >> np.uint64(64 - table.bits)
        j = np.searchsorted(table.top, v, side="right") - 1
        # With dropped low bits, v equal to a boundary's top bits leaves the bucket to V's
        # lower bits; without (shift 0), v is V itself and the table decides every draw.
        tie = table.top[j] == v if table.shift else np.zeros(v.shape, dtype=bool)
        decided = (v < total_top) & ~tie
        out[pending[decided]] = j[decided]
        redo = [pending[~decided & ~tie]]  # v above T's top bits: rejected
        for at, word in zip(pending[tie].tolist(), v[tie].tolist(), strict=True):
            k = _resolve_tie(int(word), cumulative, table, source)
            if k < 0:
                redo.append(np.array([at]))
            else:
                out[at] = k
        pending = np.concatenate(redo)
    return out


def _resolve_tie(top_word: int, cumulative: list[int], table: _Table, source: RandomSource) -> int:
    """The bucket of V whose top bits ``top_word`` tie with a boundary: draw V's other
    ``shift`` bits and compare exactly; -1 when V ≥ T (the trial is rejected)."""
    value = top_word
    if table.shift:
        n_words = -(-table.shift // 64)
        low = 0
        for word in source.random_words(n_words).tolist():
            low = (low << 64) | int(word)
        value = (top_word << table.shift) | (low >> (64 * n_words - table.shift))
    if value >= cumulative[-1]:
        return -1
    return bisect.bisect_right(cumulative, value) - 1


def _checked_weights(name: str, weights: Any, *, ndim: int) -> np.ndarray:
    w = check_finite_array(name, weights, ndim=ndim)
    if w.shape[-1] == 0:
        raise InvalidInput(f"{name} must hold at least one weight, got shape {w.shape}")
    if w.size and float(w.min()) < 0.0:
        position = np.unravel_index(int(np.argmin(w)), w.shape)
        raise InvalidInput(f"{name} has a negative weight at index {tuple(map(int, position))}")
    empty = ~np.any(w > 0, axis=-1)
    if np.any(empty):
        where = "" if ndim == 1 else f" (row {int(np.flatnonzero(empty)[0])})"
        raise InvalidInput(f"{name} must have a positive weight{where}: all are 0")
    return w


def sample_categorical(weights: Any, size: Any = None, *, rng: Any = None) -> Any:
    """Draw indices k with probability exactly ``weights[k] / Σ weights`` (exact sum).

    Parameters
    ----------
    weights : (K,) finite weights ≥ 0 with at least one > 0 (e.g. probabilities that sum to
        1 up to rounding; they are normalised by their exact sum).
    size : None for one index (int), an int n or a shape for that many independent draws.
    rng : None (default: the OS CSPRNG, for real releases), "secure", an int seed or a numpy
        Generator (reproducible, for testing only), or a :class:`RandomSource`.

    Returns
    -------
    int in [0, K), or an int64 array of shape ``size``.

    Raises
    ------
    InvalidInput
        Weights that are not a non-empty 1-D finite real array, a negative weight, all weights
        0, a bad ``size`` or ``rng``.

    Examples
    --------
    >>> sample_categorical([0.0, 1.0, 0.0], rng=0)
    1
    >>> sample_categorical([0.25, 0.75], size=4, rng=1).shape
    (4,)
    """
    w = _checked_weights("weights", weights, ndim=1)
    n, shape = check_size(size)
    source = as_random_source(rng)
    out = _draw_row(w, n, source)
    return int(out[0]) if shape is None else out.reshape(shape)


def sample_rows(matrix: np.ndarray, rows: np.ndarray, source: RandomSource) -> np.ndarray:
    """One index per entry of ``rows``: row ``rows[s]`` of ``matrix`` sampled exactly as
    :func:`sample_categorical` does (its entries over their exact sum); draws of one row share
    its table.

    Entries ≤ 0 have probability 0 (a stored probability may round to a tiny negative
    number). The caller has checked the matrix (finite, every row with a positive entry) and
    the row indices (helper of :meth:`privopt.perturbation.PerturbationMatrix.sample_many`).
    """
    out = np.empty(rows.size, dtype=np.int64)
    order = np.argsort(rows, kind="stable")
    distinct, starts, counts = np.unique(rows[order], return_index=True, return_counts=True)
    for row, start, count in zip(distinct.tolist(), starts.tolist(), counts.tolist(), strict=True):
        weights = np.maximum(matrix[row], 0.0)
        out[order[start : start + count]] = _draw_row(weights, count, source)
    return out
