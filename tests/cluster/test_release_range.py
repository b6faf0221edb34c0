"""What DPM releases stays in range: centres inside the public box, every array finite, and bad
numeric ranges refused before any spend (issue 12, defects 6 and 8)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt import _core, dp
from privopt.cluster import DPM
from privopt.errors import InvalidInput, PrivacyBudgetExceeded

ROOT = _core.cluster.Tree(
    np.array([-1]), np.array([0.0]), np.array([0]), np.array([0]), np.array([0])
)


def corner_blobs(n: int = 2000, seed: int = 0) -> np.ndarray:
    """Four tight blobs, one of them on the corner (99, 99) of the box [-100, 100]^2, so that the
    noisy average of that leaf lands outside the box about half the time in each coordinate."""
    rng = np.random.default_rng(seed)
    centres = np.array([(99.0, 99.0), (-60.0, 40.0), (40.0, -60.0), (-50.0, -50.0)])
    return centres[rng.integers(0, 4, n)] + rng.normal(0, 0.5, size=(n, 2))


def test_centres_are_clipped_to_the_bounds():
    # Without the clip, the corner leaf's centre falls outside the box in a good share of these
    # fits (its true mean sits 1 from the edge, the noise on the average is ~2 wide): the
    # coordinates pinned exactly at the bound are those the clip moved.
    pinned = 0
    for seed in range(10):
        model = DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state=seed)
        centres = model.fit(corner_blobs(seed=seed)).cluster_centers_
        assert np.all(np.isfinite(centres))
        assert np.all((centres >= -100) & (centres <= 100))
        pinned += int(np.sum(centres == 100.0))
    assert pinned >= 3


def test_clipping_is_the_only_change_to_the_noisy_average():
    # The same fit at a huge ε has centres within the box and at the true leaf means: the clip
    # does not move in-range centres.
    X = corner_blobs(4000, seed=1)
    model = DPM(bounds=(-100, 100), epsilon=1e4, delta=1e-6, random_state=0).fit(X)
    for k, centre in enumerate(model.cluster_centers_):
        members = X[model.labels_ == k]
        np.testing.assert_allclose(centre, members.mean(axis=0), atol=0.05)


def test_scaled_sums_equal_the_sums_in_data_units_bit_for_bit():
    X = np.random.default_rng(2).normal(0, 40, size=(5000, 3))
    sums, sizes = _core.cluster.slot_sums(X, -100, 100, ROOT, 1)
    scaled, sizes2 = _core.cluster.slot_sums(X, -100, 100, ROOT, 1, 2.0**-7)
    np.testing.assert_array_equal(scaled * 2.0**7, sums)
    np.testing.assert_array_equal(sizes, sizes2)
    with pytest.raises(ValueError, match="scale"):
        _core.cluster.slot_sums(X, -100, 100, ROOT, 1, math.inf)


@settings(max_examples=8, deadline=None)
@given(st.sampled_from([-900, -300, -5, 0, 7, 300, 900]), st.integers(0, 1000))
def test_fit_is_equivariant_under_power_of_two_scaling(k, seed):
    """x → 2^k·x with the bounds and σ grid scaled alike gives the same clustering, centres
    scaled exactly: the release uses no absolute float scale, and 2^±900 neither overflows nor
    underflows."""
    X = corner_blobs(1500, seed=seed)
    s = 2.0**k
    grid = np.arange(0.5, 30.0, 0.5)
    ref = DPM(bounds=(-100, 100), epsilon=2.0, delta=1e-6, random_state=seed).fit(X)
    big = DPM(
        bounds=(-100 * s, 100 * s), epsilon=2.0, delta=1e-6, sigma_grid=grid * s, random_state=seed
    ).fit(X * s)
    assert big.split_width_ == ref.split_width_ * s
    np.testing.assert_array_equal(big.cluster_centers_, ref.cluster_centers_ * s)
    np.testing.assert_array_equal(big.labels_, ref.labels_)
    assert np.all(np.isfinite(big.cluster_centers_))


def test_bounds_near_the_float64_limit_give_finite_centres():
    # n · 1e300 overflows a plain float64 sum; the scaled sums do not.
    X = np.random.default_rng(3).uniform(-1, 1, size=(3000, 2)) * 1e300
    m = DPM(
        bounds=(-1e300, 1e300), epsilon=1.0, delta=1e-6, sigma_grid=[1e299], random_state=0
    ).fit(X)
    assert np.all(np.isfinite(m.cluster_centers_)) and np.all(np.isfinite(m.cluster_sizes_))
    assert np.all(np.abs(m.cluster_centers_) <= 1e300)


@pytest.mark.parametrize(
    "params, X, match",
    [
        ({"bounds": (-1e308, 1e308), "sigma_grid": [1e307]}, np.zeros((10, 2)), "bounds"),
        ({"bounds": (0, 1e-300), "sigma_grid": [1e-301]}, np.zeros((10, 2)), "bounds"),
        ({"bounds": (-1e306, 1e306), "sigma_grid": [1e305]}, np.zeros((10, 400)), "bounds"),
        ({"epsilon": 1e-300}, np.zeros((10, 2)), "epsilon"),
        ({"epsilon": 1e-200}, np.zeros((10, 2)), "epsilon"),
    ],
)
def test_out_of_range_numbers_rejected_before_any_spend(params, X, match):
    acct = dp.PrivacyAccountant()
    kw = dict(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state=0)
    kw.update(params)
    with pytest.raises(InvalidInput, match=match):
        DPM(**kw).fit(X, accountant=acct)
    assert acct.entries == []


def test_no_split_width_is_none_not_nan():
    # ñ_D < 2: no codebook, one leaf; the attribute says "none", it does not carry a NaN.
    X = np.zeros((3, 2))
    m = DPM(bounds=(-1, 1), epsilon=1e-3, delta=1e-6, random_state=0).fit(X)
    if m.noisy_count_ < 2:
        assert m.split_width_ is None and m.percentile_estimate_ is None
    assert np.all(np.isfinite(m.cluster_centers_))


def spend_counting_source(seed: int = 0):
    """A seeded source that counts the words drawn from it (0 = no noise was drawn)."""

    class Counting(dp.GeneratorSource):
        drawn = 0

        def random_words(self, n):
            Counting.drawn += int(n)
            return super().random_words(n)

    return Counting(np.random.default_rng(seed))


@pytest.mark.parametrize("short", ["epsilon", "delta"])
def test_budget_one_spend_short_charges_nothing_and_draws_no_noise(eight_blobs, short):
    # The budget covers every spend but the last (the averages) plus half of it: spending one by
    # one would leave 16 entries behind. The plan is refused up front instead.
    X, _ = eight_blobs
    model = DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6)
    sched = model.fit(X[:200]).schedule_
    eps, delta = 1.0, 1e-6
    if short == "epsilon":
        eps -= sched.epsilon_average / 2
    else:
        delta -= sched.delta_average / 2
    acct = dp.PrivacyAccountant(eps, delta)
    source = spend_counting_source()
    model.set_params(random_state=source)
    with pytest.raises(PrivacyBudgetExceeded):
        model.fit(X, accountant=acct)
    assert acct.entries == [] and source.drawn == 0
    # One spend's worth more and the same fit goes through, charging exactly its plan.
    acct = dp.PrivacyAccountant(1.0, 1e-6)
    model.fit(X, accountant=acct)
    assert len(acct.entries) == len(sched.plan()) == 17
    assert acct.epsilon_spent == pytest.approx(1.0, rel=1e-12)


def test_failure_mid_fit_rolls_the_ledger_back(eight_blobs, monkeypatch):
    X, _ = eight_blobs
    acct = dp.PrivacyAccountant(5.0, 1e-5)
    DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state=0).fit(X, accountant=acct)
    before = list(acct.entries)

    def broken(*args, **kwargs):
        raise MemoryError("simulated failure of the averaging pass")

    monkeypatch.setattr(DPM, "_average", broken)
    model = DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state=0)
    with pytest.raises(MemoryError):
        model.fit(X, accountant=acct)
    assert acct.entries == before  # the 16 spends made before the failure are gone
    assert not hasattr(model, "cluster_centers_")
