"""The C++ split-scoring kernel through its binding: spec 004 §11.1 oracles and brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt import _core, dp
from scipy.special import softmax
from scipy.stats import chisquare

cc = _core.cluster
ROOT = cc.Tree(np.array([-1]), np.array([0.0]), np.array([0]), np.array([0]), np.array([0]))


def counts(X, beta, window, a=0.0, b=10.0):
    size, rank, win, at_most = cc.level_counts(np.asarray(X, float), a, b, beta, window, ROOT, 1)
    return int(size[0]), rank[0], win[0], at_most[0]


def test_twelve_point_example_reference_mode(twelve_points):
    TWELVE = twelve_points
    size, rank, win, _ = counts(TWELVE[:, None], 1.0, "reference")
    assert size == 12
    assert rank[0].tolist() == [0, 3, 3, 7, 7, 7, 8, 8, 10, 10]
    cent = cc.centreness(rank[0].astype(float), 12.0, 0.3, 1 / 12)
    np.testing.assert_allclose(
        cent, [0, 0.58, 0.58, 0.86, 0.86, 0.86, 0.72, 0.72, 0.44, 0.44], atol=1e-12
    )
    np.testing.assert_allclose(
        1 - win[0] / 12,
        [0.916667, 0.833333, 0.916667, 0.75, 1, 1, 0.916667, 0.916667, 0.916667, 0.833333],
        atol=1e-6,
    )
    scores = cc.score_candidates(rank, win, 12.0, 0.3, 1 / 12, 5.0)
    np.testing.assert_allclose(
        scores,
        [4.583333, 4.746667, 5.163333, 4.61, 5.86, 5.86, 5.303333, 5.303333, 5.023333, 4.606667],
        atol=1e-6,
    )
    p = cc.em_probabilities(scores, 1.0)
    np.testing.assert_allclose(
        p,
        [0.0531, 0.0625, 0.0948, 0.0545, 0.1902, 0.1902, 0.1090, 0.1090, 0.0824, 0.0543],
        atol=6e-5,
    )
    # Same distribution as privopt.dp's exponential mechanism: ε/(2Δ) = 1 with ε = 2, Δ = 1.
    np.testing.assert_allclose(p, dp.exponential_mechanism_probabilities(scores, 2.0), rtol=1e-12)


def test_twelve_point_example_paper_window_differs_only_at_edge_point(twelve_points):
    TWELVE = twelve_points
    _, rank_p, win_p, _ = counts(TWELVE[:, None], 1.0, "paper")
    _, rank_r, win_r, _ = counts(TWELVE[:, None], 1.0, "reference")
    assert rank_p.tolist() == rank_r.tolist()
    diff = np.flatnonzero(win_p[0] != win_r[0])
    assert diff.tolist() == [5]  # candidate 5.5: 6.0 lies on the closed window's edge
    assert 1 - win_p[0, 5] / 12 == pytest.approx(0.916667, abs=1e-6)


@pytest.mark.parametrize(
    "n_tilde, table",
    [
        (
            12,
            dict(
                enumerate([0.0, 0.3, 0.44, 0.58, 0.72, 0.86, 1.0, 0.86, 0.72, 0.58, 0.44, 0.3, 0])
            ),
        ),
        (
            100,
            {
                0: 0,
                5: 0.18,
                8: 0.288,
                100 / 12: 0.3,
                9: 0.3112,
                10: 0.328,
                25: 0.58,
                50: 1.0,
                90: 0.328,
                100: 0,
            },
        ),
    ],
)
def test_centreness_tables(n_tilde, table):
    r = np.array(list(table), dtype=float)
    np.testing.assert_allclose(
        cc.centreness(r, n_tilde, 0.3, 1 / 12), list(table.values()), atol=1e-12
    )


@pytest.mark.parametrize("t, q", [(0.1, 0.1), (0.3, 0.0), (0.3, 0.6), (1.2, 0.1)])
def test_invalid_t_q_rejected(t, q):
    with pytest.raises(ValueError):
        cc.centreness(np.array([1.0]), 10.0, t, q)


def brute_force(X, beta, window, a, b):
    """Direct definitions: r = #{x < s}, window counts per mode, #{x ≤ s}; data clipped."""
    X = np.clip(X, a, b)
    w = int(np.floor((b - a) / beta))
    s = a + (np.arange(w) + 0.5) * beta
    col = X[:, :, None]
    rank = (col < s).sum(axis=0)
    at_most = (col <= s).sum(axis=0)
    if window == "paper":
        win = ((col >= s - beta / 2) & (col <= s + beta / 2)).sum(axis=0)
    elif window == "half_open":
        win = ((col >= s - beta / 2) & (col < s + beta / 2)).sum(axis=0)
    else:
        edges = a + np.arange(w + 1) * ((b - a) / w)
        edges[-1] = b
        win = ((col >= edges[:-1]) & (col < edges[1:])).sum(axis=0)
    return rank, win, at_most


@settings(max_examples=60, deadline=None)
# Values on window edges and candidates (ties), inside and outside the bounds (clipping).
@given(
    st.lists(
        st.sampled_from([-3.0, -2.0, -1.5, 0.0, 0.25, 0.5, 1.0, 1.75, 2.0, 3.0, 7.0, -7.0])
        | st.floats(-8, 8, allow_nan=False),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from([0.25, 0.5, 0.75, 1.0, 1.3, 2.5]),
    st.sampled_from(["paper", "half_open", "reference"]),
)
def test_level_counts_match_brute_force_and_sorted_oracle(values, beta, window):
    flat = np.array(values, dtype=float).ravel()
    X = np.stack([flat, -flat[::-1]], axis=1)
    size, rank, win, at_most = cc.level_counts(X, -5.0, 5.0, beta, window, ROOT, 1)
    r, w, m = brute_force(X, beta, window, -5.0, 5.0)
    assert size[0] == len(X)
    np.testing.assert_array_equal(rank[0], r)
    np.testing.assert_array_equal(win[0], w)
    np.testing.assert_array_equal(at_most[0], m)
    sr, sw, _sm = cc.node_counts_sorted(X, -5.0, 5.0, beta, window)
    np.testing.assert_array_equal(rank[0], sr)
    np.testing.assert_array_equal(win[0], sw)


def test_level_counts_per_node_and_threads_add_up():
    rng = np.random.default_rng(3)
    X = rng.normal(0, 30, size=(50000, 3))
    # Root split on dim 1 at 0; left tip is slot 1, right tip is slot 0.
    tree = cc.Tree(
        np.array([1, -1, -1]),
        np.array([0.0, 0, 0]),
        np.array([1, 0, 0]),
        np.array([2, 0, 0]),
        np.array([-1, 1, 0]),
    )
    size, rank, win, at_most = cc.level_counts(X, -100, 100, 4.0, "paper", tree, 2, 1)
    assert size.tolist() == [int((X[:, 1] > 0).sum()), int((X[:, 1] <= 0).sum())]
    for slot, mask in ((0, X[:, 1] > 0), (1, X[:, 1] <= 0)):
        r, w, _m = brute_force(X[mask], 4.0, "paper", -100, 100)
        np.testing.assert_array_equal(rank[slot], r)
        np.testing.assert_array_equal(win[slot], w)
    threaded = cc.level_counts(X, -100, 100, 4.0, "paper", tree, 2, 2)
    for one, two in zip((size, rank, win, at_most), threaded, strict=True):
        np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(cc.route_points(X, tree), np.where(X[:, 1] <= 0, 1, 0))
    sums, sizes = cc.slot_sums(X, -100, 100, tree, 2)
    np.testing.assert_allclose(sums[1], np.clip(X[X[:, 1] <= 0], -100, 100).sum(axis=0))
    assert sizes.sum() == len(X)


def test_em_choice_matches_softmax_chi_square(twelve_points):
    TWELVE = twelve_points
    scores = cc.score_candidates(
        *counts(TWELVE[:, None], 1.0, "reference")[1:3], 12.0, 0.3, 1 / 12, 5.0
    )
    u = np.random.default_rng(11).random(100000)
    picks = np.array([cc.em_choice(scores, 1.0, float(v)) for v in u])
    observed = np.bincount(picks, minlength=10)
    expected = softmax(scores) * len(u)
    assert chisquare(observed, expected).pvalue > 1e-3


def test_em_is_stable_in_log_space_and_rejects_bad_draws():
    scores = np.array([0.0, 1e6, -1e6, 5e5])
    assert cc.em_choice(scores, 1.0, 0.999999) == 1
    with pytest.raises(ValueError):
        cc.em_choice(scores, 1.0, 1.0)
    with pytest.raises(ValueError):
        cc.em_probabilities(np.array([np.nan]), 1.0)


def test_split_decoding_and_num_splits():
    assert cc.num_splits(-100, 100, 14.75) == 13
    assert divmod(27, 13) == (2, 1)  # d* = 2, s* = a + 1.5β: dimension-major (spec §10.2)
    with pytest.raises(ValueError):
        cc.num_splits(1, 1, 1)
    with pytest.raises(ValueError):
        cc.level_counts(np.zeros((3, 2)), 0, 1, 0.1, "bogus", ROOT, 1)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10**6),
    st.floats(30.0, 400.0),
    st.sampled_from([0.5, 1.0, 2.0]),
    st.sampled_from(["paper", "half_open", "reference"]),
)
def test_split_selection_is_epsilon_dp_on_neighbours(seed, n_tilde, beta, window):
    """Adding one point moves every score by at most Δf = (t/q + α)/ñ (Lemmas 3–5; the λ-shift
    only enlarges Δf), so the selection probabilities of D and D ∪ {x} differ by at most e^ε."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(0, 3, size=(int(rng.integers(20, 300)), 2)) * 2) / 2  # ties on edges
    x = np.round(rng.uniform(-12, 12, size=(1, 2)) * 2) / 2
    Xp = np.vstack([X, x])
    eps, sens = 0.7, (0.3 / (1 / 12) + 5.0) / n_tilde
    logp = []
    for data in (X, Xp):
        _, rank, win, _ = cc.level_counts(data, -10.0, 10.0, beta, window, ROOT, 1)
        scores = cc.score_candidates(rank[0], win[0], n_tilde, 0.3, 1 / 12, 5.0)
        logp.append((scores, np.log(cc.em_probabilities(scores, eps / (2 * sens)))))
    assert np.max(np.abs(logp[0][0] - logp[1][0])) <= sens * (1 + 1e-12)
    assert np.max(np.abs(logp[0][1] - logp[1][1])) <= eps * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 10**6),
    st.integers(1, 5),
    st.integers(1, 12),
    st.sampled_from([1e-200, 1.0, 1e200]),
    st.booleans(),
)
def test_pruned_nearest_centre_equals_the_full_search(seed, d, k, scale, on_grid):
    """Whatever tip centre a row starts from (a random tree, random slots), the pruned search
    returns the full search's answer, ties to the first index included: integer grids make
    exact ties and duplicated centres common."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    X = rng.normal(0, 3, size=(n, d))
    C = rng.normal(0, 3, size=(k, d))
    if on_grid:
        X, C = np.round(X), np.round(C)
    C[rng.integers(0, k)] = C[rng.integers(0, k)]  # a duplicate centre
    X, C = X * scale, C * scale
    # A random tree of depth ≤ 3 whose tips start from random centres.
    feature, threshold, left, right = [-1], [0.0], [0], [0]
    for node in range(7):
        if node < len(feature) and rng.random() < 0.6:
            first = len(feature)
            feature[node], threshold[node] = (
                int(rng.integers(0, d)),
                float(rng.normal(0, 3) * scale),
            )
            left[node], right[node] = first, first + 1
            feature += [-1, -1]
            threshold += [0.0, 0.0]
            left += [0, 0]
            right += [0, 0]
    slot = [int(rng.integers(0, k)) if f < 0 else -1 for f in feature]
    tree = cc.Tree(
        np.array(feature), np.array(threshold), np.array(left), np.array(right), np.array(slot)
    )
    full = cc.nearest_centres(X, C, 1)
    np.testing.assert_array_equal(cc.nearest_centres_from(X, C, tree, 1), full)
    np.testing.assert_array_equal(cc.nearest_centres_from(X, C, tree, 3), full)
