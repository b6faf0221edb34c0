"""The lean passes behind large fits (issue 17 item 3): cell codes, per-point tips, in-place gaps
and the streaming DP percentile, each against the straightforward computation it replaces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt import _core, dp
from privopt.cluster._backend import InMemoryData, SplitTree
from privopt.cluster._chunks import chunk_label_lines
from privopt.cluster._interval import dimension_averaged_gaps, dp_percentile_in_place

cc = _core.cluster


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 10**6),
    st.sampled_from([0.5, 1.0, 2.5]),
    st.sampled_from(["paper", "half_open", "reference"]),
)
def test_codes_and_tips_count_what_values_count(seed, beta, window):
    """Counting cell codes with tips carried from level to level gives the counts of a fresh
    pass over the values, at every level of a growing tree (ties on thresholds included)."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 4))
    X = np.round(rng.normal(0, 4, size=(int(rng.integers(2, 600)), d)) * 2) / 2  # on the grid
    X[rng.random(X.shape) < 0.05] = 50.0  # clipped
    data = InMemoryData(X, -10.0, 10.0, None)
    tree = SplitTree()
    w = cc.num_splits(-10.0, 10.0, beta)
    active = [0]
    for _ in range(4):
        slots = {node: s for s, node in enumerate(active)}
        got = data.level_counts(tree, slots, beta, window)
        want = cc.level_counts(X, -10.0, 10.0, beta, window, tree.kernel_tree(slots), len(slots))
        for g, v in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, v)
        nxt = []
        for node in active:
            if rng.random() < 0.7:
                j = int(rng.integers(0, w))
                nxt += tree.split(node, int(rng.integers(0, d)), -10.0 + (j + 0.5) * beta)
        active = nxt or [0]
        if not nxt:
            break


def test_code_routing_refuses_a_threshold_off_the_grid():
    X = np.zeros((4, 1))
    codes = cc.cell_codes(X, 0.0, 10.0, 1.0, "paper")
    assert codes.dtype == np.uint8
    tree = SplitTree()
    tree.split(0, 0, 3.3)  # not a candidate a + (j + 1/2)β
    with pytest.raises(ValueError, match="threshold"):
        cc.level_cells_codes(codes, 0.0, 10.0, 1.0, "paper", tree.kernel_tree({1: 0, 2: 1}), 2)
    wide = cc.cell_codes(X, 0.0, 1000.0, 1.0, "paper")
    assert wide.dtype == np.uint16  # 4001 cells


def test_gaps_in_place_equal_the_numpy_formula_bit_for_bit():
    rng = np.random.default_rng(5)
    X = rng.normal(0, 30, size=(3001, 4))
    want = np.zeros(3000)
    for k in range(4):
        want += np.diff(np.sort(np.clip(X[:, k], -50, 50)))
    np.testing.assert_array_equal(dimension_averaged_gaps(X, -50, 50), want / 4)


@pytest.mark.parametrize("m", [0, 1, 7, 40])
def test_streaming_percentile_has_the_exponential_mechanism_probabilities(m):
    """The kernel's choice as a function of its uniform u is an inverse CDF: the share of a fine
    u grid sent to each interval is the exponential mechanism's probability of that interval."""
    rng = np.random.default_rng(m)
    values = np.sort(np.round(rng.uniform(0, 1, m), 1))  # ties: zero-width intervals
    lo, hi, pct, eps, sens = 0.0, 1.0, 65.0, 3.0, 2.0
    z = np.concatenate(([lo], values, [hi]))
    width = np.diff(z)
    keep = np.flatnonzero(width > 0)
    scores = -np.abs(keep - pct / 100 * m) + (2 * sens / eps) * np.log(width[keep])
    want = np.zeros(m + 1)
    want[keep] = dp.exponential_mechanism_probabilities(scores, eps, sensitivity=sens)
    grid = (np.arange(50_000) + 0.5) / 50_000
    picks = [
        cc.percentile_interval(values, lo, hi, pct / 100 * m, eps / (2 * sens), float(u))
        for u in grid
    ]
    got = np.bincount(picks, minlength=m + 1) / len(grid)
    np.testing.assert_allclose(got, want, atol=5e-5)  # two grid steps per interval


def test_streaming_percentile_estimates_the_percentile():
    values = np.random.default_rng(0).uniform(0, 1, 5000)
    est = [dp_percentile_in_place(values.copy(), 65, 50.0, (0.0, 1.0), rng=s) for s in range(20)]
    assert abs(np.median(est) - np.percentile(values, 65)) < 0.01


@pytest.mark.parametrize("labels", [np.array([0, 63, 7, 12]), np.arange(0), np.array([10**12])])
def test_chunk_label_lines_are_what_savetxt_writes(labels, tmp_path):
    # The CLI writes a Dask fit's labels.csv from these worker-formatted lines; the in-memory
    # fit writes it with numpy.savetxt: the two files must be the same bytes.
    path = tmp_path / "labels.csv"
    np.savetxt(path, labels, fmt="%d")
    assert chunk_label_lines(labels) == path.read_bytes()
