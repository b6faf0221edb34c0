"""Post-processing DPs against the paper's oracles (spec 003 §8), brute force and a HiGHS MILP."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from census_helpers import random_hierarchy
from privopt._core import census as kernels
from privopt.census import chain_postprocess, tree_postprocess
from privopt.census.solvers import chain_order, chain_pava, level_cumulative, round_half_up
from scipy.optimize import LinearConstraint, milp


def test_o1_table_merge_binding():
    for method in ("heap", "sort"):
        lo, phi, v0, V0, _up, _down = kernels.table_merge(
            np.array([0, 0]),
            [np.array([9, 4, 1, 0, 1]), np.array([0, 1, 4, 9, 16])],
            -99,
            99,
            method,
        )
        assert lo == 0 and phi.tolist() == [9, 4, 1, 0, 1, 2, 5, 10, 17]
        assert v0.tolist() == [3, 0] and V0 == 3
    with pytest.raises(ValueError, match="not convex"):
        kernels.table_merge(np.array([0]), [np.array([0, 5, 6])], 0, 2)


def test_heap_equals_sort_random():
    rng = np.random.default_rng(0)
    for _ in range(50):
        k = int(rng.integers(1, 6))
        tables = [
            (
                int(rng.integers(-3, 4)),
                (np.arange(int(rng.integers(1, 9))) - int(rng.integers(0, 6))) ** 2,
            )
            for _ in range(k)
        ]
        los = np.array([t[0] for t in tables])
        costs = [t[1] for t in tables]
        a = kernels.table_merge(los, costs, -50, 50, "heap")
        b = kernels.table_merge(los, costs, -50, 50, "sort")
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(np.asarray(x), np.asarray(y))


def test_o3_running_example_tree(running_example):
    h = running_example.hierarchy
    noisy = np.array([[2, 0, 3, 1, 0], [3, 1, 1, -1, 0], [0, 2, 1, 1, -2]])  # US, GA, NY
    for window in ("exact", "auto", "paper", 2):
        counts, info = tree_postprocess(h, noisy, 6, scale=1.0, window=window)
        assert info["cost"] == 10 and info["certified"]
        assert counts.tolist() == [[2, 1, 2, 1, 0], [2, 0, 1, 0, 0], [0, 1, 1, 1, 0]]
    # Root tables τ_s^US on 0..6 (O3): cost with the size-s root fixed to v, others free.
    want = [[13, 5, 1, 1, 5, 11, 21], [5, 3, 5, 9, 17, 27, 41], [11, 5, 1, 1, 3, 9, 17]]
    for s, row in enumerate(want):
        for v, tau in enumerate(row):
            ptr = np.array([0, 2, 2, 2])
            idx = np.array([1, 2])
            out = kernels.tree_dp(
                ptr,
                idx,
                noisy[:, s],
                np.ones(3, dtype=np.int64),
                np.array([v, 0, 0]),
                np.array([v, 6, 6]),
                0,
                False,
            )
            assert out[2] == tau


def test_o4_running_example_chain(running_example):
    h = running_example.hierarchy
    ct = np.array([3, 3, 2, 1, 5, 4, 4, 7, 5, 6, 5, 8, 6, 7, 6])
    region, size, level, eq = chain_order(h, 5)
    assert h.names[region[:3]].tolist() == ["GA", "NY", "US"] and eq[:3].tolist() == [0, 1, 0]
    # True chain of the running example (spec 003 §3.4).
    truth = level_cumulative(running_example.counts[region, size], level, 2)
    assert truth[:9].tolist() == [2, 3, 3, 3, 4, 4, 5, 6, 6]
    for window in ("exact", "auto", "paper"):
        counts, info = chain_postprocess(h, ct, 6, 5, scale=np.array([1.0, 1.0]), window=window)
        assert info["cost"] == 12
        assert counts.tolist() == [[2, 2, 2, 0, 0], [2, 0, 0, 0, 0], [0, 2, 2, 0, 0]]


def _tree_brute(h, noisy, G):
    """Enumerate leaf values in [0, G]; keep faithful ones; return the min Model-1 cost."""
    _R, N = noisy.shape
    leaves = range(h.leaves.start, h.leaves.stop)
    best = np.inf
    n_leaf = len(leaves) * N
    grid = np.array(list(itertools.product(range(G + 1), repeat=n_leaf)))
    grid = grid[grid.sum(axis=1) == G]
    for row in grid:
        leaf = row.reshape(len(leaves), N)
        full = h.aggregate(leaf)
        best = min(best, float(((full - noisy) ** 2).sum()))
    return best


def _tree_milp(h, noisy, G):
    """Model 1 as a HiGHS MILP (scipy.optimize.milp): x integer in [0, G], epigraph t per cell
    with chord cuts t ≥ (p−a)² + (2(p−a)+1)(x−p), p = 0..G−1 (exact at integers, spec 003 §8 O6)."""
    R, N = noisy.shape
    n = R * N
    a = noisy.ravel().astype(float)
    A, lo, hi = [], [], []
    for p_ in range(R):
        kids = np.flatnonzero(h.parent == p_)
        if kids.size == 0:
            continue
        for s in range(N):
            row = np.zeros(2 * n)
            row[kids * N + s] = 1
            row[p_ * N + s] = -1
            A.append(row)
            lo.append(0)
            hi.append(0)
    row = np.zeros(2 * n)
    row[:N] = 1
    A.append(row)
    lo.append(G)
    hi.append(G)
    for i in range(n):
        for p in range(G):
            row = np.zeros(2 * n)
            slope = 2 * (p - a[i]) + 1
            row[n + i] = 1
            row[i] = -slope
            A.append(row)
            lo.append((p - a[i]) ** 2 - slope * p)
            hi.append(np.inf)
    c = np.concatenate([np.zeros(n), np.ones(n)])
    res = milp(
        c,
        constraints=LinearConstraint(np.array(A), lo, hi),
        integrality=np.concatenate([np.ones(n), np.zeros(n)]),
        bounds=(
            np.concatenate([np.zeros(n), np.full(n, -np.inf)]),
            np.concatenate([np.full(n, G), np.full(n, np.inf)]),
        ),
    )
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("seed", range(12))
def test_tree_dp_equals_brute_force_and_milp(seed):
    rng = np.random.default_rng(seed)
    h = random_hierarchy(rng, depth=int(rng.integers(2, 4)), max_fanout=2)
    n_leaves = h.leaves.stop - h.leaves.start
    N = 1 if n_leaves > 2 else 2
    G = int(rng.integers(1, 4))
    noisy = rng.integers(-3, 6, size=(h.n_regions, N))
    counts, info = tree_postprocess(h, noisy, G, scale=1.0, window="exact")
    cost = float(((counts - noisy) ** 2).sum())
    assert cost == info["cost"]
    assert cost == _tree_brute(h, noisy, G)
    assert abs(cost - _tree_milp(h, noisy, G)) < 1e-6
    _auto, info2 = tree_postprocess(h, noisy, G, scale=0.3, window="auto")
    assert info2["cost"] == info["cost"] and info2["certified"]


def _chain_brute(c, eq, G):
    n = c.size
    grid = np.array(list(itertools.product(range(G + 1), repeat=n)))
    grid = grid[grid[:, -1] == G]
    ok = np.all(np.where(eq == 1, grid[:, 1:] == grid[:, :-1], grid[:, 1:] >= grid[:, :-1]), axis=1)
    return int(((grid[ok] - c) ** 2).sum(axis=1).min())


def _chain_milp(c, eq, G):
    """Model 3 (spec 003 §3.4, C6-C10, with "≤" on every non-upward edge) as a HiGHS MILP with
    the same exact-at-integers epigraph chords as :func:`_tree_milp`."""
    n = c.size
    A, lo, hi = [], [], []
    for i in range(n - 1):  # C8/C9: ĉ_{i+1} − ĉ_i = 0 on upward edges, ≥ 0 otherwise
        row = np.zeros(2 * n)
        row[i + 1], row[i] = 1, -1
        A.append(row)
        lo.append(0)
        hi.append(0 if eq[i] else np.inf)
    for i in range(n):
        for p in range(G):
            row = np.zeros(2 * n)
            slope = 2 * (p - c[i]) + 1
            row[n + i] = 1
            row[i] = -slope
            A.append(row)
            lo.append((p - c[i]) ** 2 - slope * p)
            hi.append(np.inf)
    lb = np.concatenate([np.zeros(n), np.full(n, -np.inf)])
    ub = np.concatenate([np.full(n, G), np.full(n, np.inf)])
    lb[n - 1] = G  # C7
    res = milp(
        np.concatenate([np.zeros(n), np.ones(n)]),
        constraints=LinearConstraint(np.array(A), lo, hi),
        integrality=np.concatenate([np.ones(n), np.zeros(n)]),
        bounds=(lb, ub),
    )
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("seed", range(12))
def test_chain_dp_equals_brute_force_milp_and_pava(seed):
    rng = np.random.default_rng(100 + seed)
    h = random_hierarchy(rng, depth=2, max_fanout=2)
    N = 2
    G = int(rng.integers(1, 5))
    _, _, level, eq = chain_order(h, N)
    c = rng.integers(-2, G + 3, size=level.size)
    _counts, info = chain_postprocess(h, c, G, N, scale=np.ones(2), window="exact")
    assert info["cost"] == _chain_brute(c, eq, G)
    assert abs(info["cost"] - _chain_milp(c, eq, G)) < 1e-6
    _auto, info2 = chain_postprocess(h, c, G, N, scale=np.ones(2), window="auto")
    assert info2["cost"] == info["cost"]
    # Rounded weighted PAVA reaches the same cost (spec 003 §3.4 cross-check).
    pava = round_half_up(chain_pava(c, eq, G))
    assert int(((pava - c) ** 2).sum()) == info["cost"]


def test_auto_window_matches_exact_on_medium_instances():
    rng = np.random.default_rng(5)
    h = random_hierarchy(rng, depth=3, max_fanout=4)
    N, G = 4, 60
    n_leaves = h.leaves.stop - h.leaves.start
    leaf = rng.multinomial(G, np.full(n_leaves * N, 1 / (n_leaves * N))).reshape(n_leaves, N)
    truth = h.aggregate(leaf)
    noisy = truth + rng.integers(-6, 7, size=truth.shape)
    _a, ia = tree_postprocess(h, noisy, G, scale=2.0, window="exact")
    _b, ib = tree_postprocess(h, noisy, G, scale=2.0, window=3)
    assert ia["cost"] == ib["cost"] and ib["certified"]
    _, _, level, _eq = chain_order(h, N)
    from privopt.census.solvers import level_cumulative as lc

    region, size, _, _ = chain_order(h, N)
    c = lc(truth[region, size], level, 3) + rng.integers(-6, 7, size=level.size)
    _x, ix = chain_postprocess(h, c, G, N, scale=np.ones(3), window="exact")
    _y, iy = chain_postprocess(h, c, G, N, scale=np.ones(3), window="auto")
    assert ix["cost"] == iy["cost"]


@pytest.mark.parametrize("seed", range(3))
def test_dp_equals_milp_beyond_brute_force(seed):
    # Instances too large to enumerate (~40 cells, G = 12): the HiGHS MILP is the oracle.
    rng = np.random.default_rng(200 + seed)
    h = random_hierarchy(rng, depth=3, max_fanout=3)
    N, G = 3, 12
    noisy = rng.integers(-3, 9, size=(h.n_regions, N))
    _, info = tree_postprocess(h, noisy, G, scale=1.0, window="auto")
    assert abs(info["cost"] - _tree_milp(h, noisy, G)) < 1e-6
    _, _, level, eq = chain_order(h, N)
    c = np.sort(rng.integers(-2, G + 3, size=level.size)) + rng.integers(-3, 4, size=level.size)
    _, info = chain_postprocess(h, c, G, N, scale=np.ones(3), window="auto")
    assert abs(info["cost"] - _chain_milp(c, eq, G)) < 1e-6


def test_starting_windows_per_level_equal_those_of_each_region():
    # The starting half-widths computed once per level and gathered equal the rule applied to
    # each region's own scale (every window choice; one scale, or one per level).
    from privopt.census.solvers import _initial_delta, _initial_deltas

    rng = np.random.default_rng(5)
    for _ in range(30):
        h = random_hierarchy(rng, int(rng.integers(1, 5)), int(rng.integers(1, 6)))
        fanout = np.diff(h.child_ptr)
        G = int(rng.integers(1, 10**6))
        per_level = rng.choice([0.3, 1.0, 7.5, 400.0], size=h.n_levels)
        for window in ("auto", "paper", "exact", int(rng.integers(1, 50))):
            got = _initial_deltas(window, per_level, G, fanout, h.level)
            assert got.dtype == np.int64 and got.shape == (h.n_regions,)
            for r in range(h.n_regions):
                lam = float(per_level[h.level[r]])
                if window in ("paper", "exact"):
                    want = _initial_delta(window, lam, G, 1)
                elif fanout[r] == 0:  # a leaf's window is [0, G]
                    want = G
                else:
                    want = _initial_delta(window, lam, G, int(fanout[r]))
                assert got[r] == want, (window, r)
            one = _initial_deltas(window, per_level[0], G, fanout)
            assert np.array_equal(
                one, _initial_deltas(window, np.full(h.n_levels, per_level[0]), G, fanout, h.level)
            )
