"""Exact sampling from float64 weights (privopt.dp.sample_categorical) and the released
matrices that sample with it: a chi-square test against the exact pmf, and a test that every
random integer maps to the right index at each boundary of adversarially tiny weights (the
exact oracle: bucket k holds exactly W_k of the T equally likely integers)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from dp_stats import P_THRESHOLD, P_THRESHOLD_SECURE, pooled_chisquare
from privopt.dp import RandomSource, sample_categorical
from privopt.dp.categorical import _cumulative, _Table, exact_weights
from privopt.errors import InvalidInput
from privopt.perturbation import PerturbationMatrix

#: Rows whose weights span the float64 range: subnormals, 2⁻⁶⁰ beside 1, zeros between.
TINY_ROWS = [
    [5e-324, 0.3, 0.0, 0.7, 1e-300],
    [1.0, 2.0**-60, 0.0, 2.0**-1074],
    [2.0**-1074, 2.0**-1074, 2.0**-1073],
    [1.0 - 2.0**-53, 2.0**-53],
    [0.0, 0.0, 1e-320],
    [1.0, 2.0, 3.0],  # a total of fewer than 64 bits: every bit of V is drawn in one word
]


class Scripted(RandomSource):
    """A source that returns the given 64-bit words, in order (then fails loudly)."""

    def __init__(self, words: list[int]) -> None:
        self.words = list(words)

    def random_words(self, n: int) -> np.ndarray:
        assert len(self.words) >= n, "the sampler read more words than the script holds"
        out, self.words = self.words[:n], self.words[n:]
        return np.array(out, dtype=np.uint64)


def words_for(value: int, table: _Table) -> list[int]:
    """The words from which the sampler reads the integer ``value`` as V (its bit protocol)."""
    if table.bits <= 64:
        return [value << (64 - table.bits)]
    n_low = -(-table.shift // 64)
    low = (value & ((1 << table.shift) - 1)) << (64 * n_low - table.shift)
    mask = (1 << 64) - 1
    return [value >> table.shift] + [(low >> (64 * (n_low - 1 - i))) & mask for i in range(n_low)]


@pytest.mark.parametrize("row", TINY_ROWS, ids=range(len(TINY_ROWS)))
def test_exact_integers_are_the_floats_over_one_power_of_two(row):
    ints = exact_weights(np.array(row))
    units = {Fraction(x) / i for x, i in zip(row, ints, strict=True) if x > 0}
    assert len(units) == 1  # w_k = W_k · unit for every k, one unit for the row
    unit = units.pop()
    assert unit.numerator == 1 and unit.denominator & (unit.denominator - 1) == 0
    assert all(i == 0 for x, i in zip(row, ints, strict=True) if x == 0)


@pytest.mark.parametrize("row", TINY_ROWS, ids=range(len(TINY_ROWS)))
def test_every_boundary_integer_maps_to_its_own_index(row):
    """V = C_k and V = C_{k+1} − 1 both give index k for every k of positive weight; the
    sampler is monotone in V, so bucket k holds exactly W_k of the T values of V: probability
    W_k / T, the stored weight over the exact sum, however tiny."""
    w = np.array(row)
    cumulative = _cumulative(w)
    table = _Table.of(cumulative)
    for k in range(len(row)):
        if cumulative[k] == cumulative[k + 1]:
            continue  # weight 0: no value of V maps here
        for value in (cumulative[k], cumulative[k + 1] - 1):
            assert sample_categorical(w, rng=Scripted(words_for(value, table))) == k


@pytest.mark.parametrize("row", TINY_ROWS, ids=range(len(TINY_ROWS)))
def test_values_at_or_above_the_total_are_rejected_and_redrawn(row):
    w = np.array(row)
    cumulative = _cumulative(w)
    table = _Table.of(cumulative)
    total = cumulative[-1]  # T < 2^B: V = T exists and must be rejected
    first = min(k for k in range(len(row)) if row[k] > 0)
    last = max(k for k in range(len(row)) if row[k] > 0)
    script = words_for(total, table) + words_for(0, table)
    assert sample_categorical(w, rng=Scripted(script)) == first
    assert sample_categorical(w, rng=Scripted(words_for(total - 1, table))) == last


def test_a_subnormal_weight_beside_one_is_drawn_by_exactly_one_value():
    """Weights (2⁻¹⁰⁷⁴, 1): of the 2¹⁰⁷⁴ + 1 equally likely integers exactly one, V = 0, gives
    index 0; a 53-bit float uniform would give it probability 2⁻⁵³ instead of ~2⁻¹⁰⁷⁴."""
    w = np.array([2.0**-1074, 1.0])
    cumulative = _cumulative(w)
    assert cumulative == [0, 1, 2**1074 + 1]
    table = _Table.of(cumulative)
    assert sample_categorical(w, rng=Scripted(words_for(0, table))) == 0
    assert sample_categorical(w, rng=Scripted(words_for(1, table))) == 1
    # A top word of 0 alone does not decide: the lower 1011 bits are read too.
    assert sample_categorical(w, rng=Scripted([0] + [0] * 15 + [1 << 63])) == 1


def test_histogram_matches_the_exact_pmf():
    rng = np.random.default_rng(5)
    w = rng.random(12) * np.array([1, 1e-3, 1, 0, 1, 1, 2, 1, 1e-300, 1, 3, 1])
    pmf = w / w.sum()
    draws = sample_categorical(w, 200_000, rng=11)
    assert draws.dtype == np.int64 and draws.shape == (200_000,)
    assert not np.any(np.isin(draws, [3, 8]))  # weight 0, and 1e-300 (p ~ 1e-300)
    assert pooled_chisquare(draws, np.arange(12), pmf) > P_THRESHOLD
    secure = sample_categorical(w, (400, 500), rng="secure")
    assert secure.shape == (400, 500)
    assert pooled_chisquare(secure, np.arange(12), pmf) > P_THRESHOLD_SECURE


def test_matrix_rows_sample_their_own_distribution():
    rng = np.random.default_rng(2)
    z = rng.random((4, 6)) ** 3
    z[1, 2] = 0.0
    z /= z.sum(axis=1, keepdims=True)
    pm = PerturbationMatrix(z, 1.0, 1.0, 0.0)
    records = np.repeat(np.arange(4), 50_000)
    rng.shuffle(records)
    out = pm.sample_many(records, rng=4)
    for row in range(4):
        got = out[records == row]
        assert pooled_chisquare(got, np.arange(6), z[row]) > P_THRESHOLD
    assert not np.any(out[records == 1] == 2)


def test_matrix_entries_rounded_below_zero_have_probability_zero():
    z = np.array([[-1e-12, 0.5, 0.5 + 1e-12], [0.25, 0.25, 0.5]])
    pm = PerturbationMatrix(z, 1.0, 1.0, 0.0)
    w = np.maximum(z[0], 0.0)
    table = _Table.of(_cumulative(w))
    assert pm.sample(0, rng=Scripted(words_for(0, table))) == 1  # the least V: first positive
    draws = pm.sample_many(np.zeros(20_000, dtype=np.int64), rng=0)
    assert not np.any(draws == 0)


def test_a_seed_reproduces_and_the_default_reads_the_os():
    w = [0.2, 0.3, 0.5]
    np.testing.assert_array_equal(
        sample_categorical(w, 50, rng=3), sample_categorical(w, 50, rng=3)
    )
    assert isinstance(sample_categorical(w), int)
    assert sample_categorical(w, 0, rng=0).shape == (0,)


@pytest.mark.parametrize(
    ("weights", "size", "fragment"),
    [
        ([0.5, np.nan], None, "weights"),
        ([0.5, -0.1], None, "negative weight at index \\(1,\\)"),
        ([0.0, 0.0], None, "positive weight"),
        ([], None, "at least one weight"),
        ([[0.5, 0.5]], None, "weights"),
        (["a", "b"], None, "weights"),
        ([0.5, 0.5], -1, "size"),
    ],
)
def test_bad_weights_are_refused(weights, size, fragment):
    with pytest.raises(InvalidInput, match=fragment):
        sample_categorical(weights, size, rng=0)
