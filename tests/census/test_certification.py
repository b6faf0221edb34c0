"""Certification of the census DPs (issue "certified means certified"): every DP mechanism equals
exhaustive enumeration on small G; every certified release has no improving unit move, checked
by solver-independent oracles; noisy values 50λ from their expectation; ``info`` fields match a
recomputation from the returned arrays; ε = 1e-4 with G = 10⁹ and costs beyond int64."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from census_helpers import inject, inject_noise, random_counts, random_hierarchy
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import (
    chain_brute_force,
    chain_improving_move,
    chain_of,
    exact_cost,
    m_c_dp_target,
    tree_brute_force,
    tree_improving_move,
)
from privopt.census import (
    CensusCounts,
    Hierarchy,
    chain_postprocess,
    m_c_ch,
    m_c_dp,
    m_h_dp,
    measure_counts,
    release,
    tree_postprocess,
)
from privopt.census.solvers import chain_order, sum_of_squares
from privopt.census.synthetic import synthetic_hierarchy
from privopt.errors import InvalidInput, SolverLimit

KIND = {"M_H^dp": "counts", "M_c^dp": "cumulative", "M_c^ch": "chain"}
MECH = {"M_H^dp": m_h_dp, "M_c^dp": m_c_dp, "M_c^ch": m_c_ch}


def _tree_target(name: str, meas, G: int) -> np.ndarray:
    """What the tree DP of ``name`` fits: the noisy counts, or M_c^dp's n̄."""
    return meas.noisy if name == "M_H^dp" else m_c_dp_target(meas.noisy, G)


def check_release(name: str, data: CensusCounts, meas, rel, *, brute: bool) -> None:
    """The release is valid, its info matches a recomputation, it admits no improving unit move
    and (``brute``) it equals exhaustive enumeration."""
    rel.verify()
    h, G, info = data.hierarchy, data.G, rel.info
    assert info["certified"] and info["status"] == "optimal"
    assert info["relative_gap"] == 0.0 and info["lower_bound"] == info["cost"]
    assert isinstance(info["cost"], int) and info["rounds"] >= 1
    if name == "M_c^ch":
        _, _, _, eq = chain_order(h, data.N)
        x = chain_of(h, rel.counts)
        assert info["cost"] == exact_cost(x, meas.noisy)
        assert chain_improving_move(meas.noisy, eq, x, G) is None
        if brute:
            assert info["cost"] == chain_brute_force(meas.noisy, eq, G)
        again = chain_postprocess(h, meas.noisy, G, data.N, scale=meas.scale, window=info["delta"])[
            1
        ]
    else:
        target = _tree_target(name, meas, G)
        assert info["cost"] == exact_cost(rel.counts, target)
        assert tree_improving_move(h, target, rel.counts) is None
        if brute:
            assert info["cost"] == tree_brute_force(h, target, G)
        again = tree_postprocess(h, target, G, scale=1.0, window=info["delta"])[1]
    # info["delta"] is the half-width the final round used: starting there certifies at once
    # with the same optimum.
    assert again["cost"] == info["cost"] and again["rounds"] == 1


@st.composite
def small_instances(draw):
    """A random hierarchy with at most 6 leaf cells, G ≤ 5 groups, ε and noise: small values,
    or 50λ away from the true value in either direction."""
    depth = draw(st.integers(1, 3))
    parent, frontier = [-1], [0]
    for _ in range(depth - 1):
        nxt = []
        for p in frontier:
            for _ in range(draw(st.integers(1, 2))):
                parent.append(p)
                nxt.append(len(parent) - 1)
        frontier = nxt
    h = Hierarchy.from_parents(parent)
    n_leaves = h.leaves.stop - h.leaves.start
    N = draw(st.integers(1, max(1, 6 // n_leaves)))
    G = draw(st.integers(0, 5))
    cells = draw(st.lists(st.integers(0, n_leaves * N - 1), min_size=G, max_size=G))
    leaf = np.bincount(np.asarray(cells, dtype=np.int64), minlength=n_leaves * N)
    data = CensusCounts.from_leaf_counts(h, leaf.reshape(n_leaves, N))
    eps = draw(st.sampled_from([0.5, 1.0, 4.0]))
    lam = 2 * h.n_levels / eps
    far = round(50 * lam)
    noise = draw(
        st.lists(
            st.sampled_from([-far, far]) | st.integers(-3, 3),
            min_size=h.n_regions * N,
            max_size=h.n_regions * N,
        )
    )
    return data, eps, np.reshape(noise, (h.n_regions, N))


@settings(max_examples=60, deadline=None)
@given(small_instances(), st.sampled_from(sorted(KIND)))
def test_dp_mechanisms_equal_brute_force_and_have_no_improving_move(inst, name):
    data, eps, noise = inst
    meas = inject_noise(data, KIND[name], noise, eps)
    rel = MECH[name](data, measurements=meas)
    check_release(name, data, meas, rel, brute=True)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", sorted(KIND))
def test_medium_releases_far_noise_certified_without_improving_move(name, seed):
    # Beyond enumeration: G in the thousands, a third of the cells 50λ off (the case where the
    # old 8/12-round doubling ended uncertified or "infeasible").
    rng = np.random.default_rng(300 + seed)
    h = random_hierarchy(rng, depth=3, max_fanout=3)
    data = random_counts(rng, h, N=3, high=int(rng.integers(100, 600)))
    eps = float(rng.choice([0.3, 1.0]))
    lam = 2 * h.n_levels / eps
    noise = rng.integers(-3, 4, size=data.counts.shape)
    far = rng.random(data.counts.shape) < 0.33
    noise[far] = np.round(50 * lam) * rng.choice([-1, 1], size=int(far.sum()))
    meas = inject_noise(data, KIND[name], noise, eps)
    rel = MECH[name](data, measurements=meas)
    check_release(name, data, meas, rel, brute=False)


@pytest.mark.parametrize("name", sorted(KIND))
def test_epsilon_1e4_and_G_1e9(name):
    # ε = 1e-4: λ ≈ 4·10⁴ (counts) to 1.2·10⁵ (chain) at G = 10⁹, sampled noise.
    data = synthetic_hierarchy([2, 2], 10**9, N=2, seed=3)
    rel = release(data, 1e-4, name, rng=5)
    check_release(name, data, rel.measurements, rel, brute=False)


@pytest.mark.parametrize("name", sorted(KIND))
def test_costs_beyond_int64_are_exact(name):
    # Measurements ±3-4·10⁹ off: the optimal cost of M_H^dp and M_c^ch is ~10²⁰ > 2⁶³. The old
    # int64 cost wrapped negative (M_c^ch at ε = 0.001); it is now an exact Python int.
    data = synthetic_hierarchy([3, 2], 1000, N=2, seed=1)
    rng = np.random.default_rng(9)
    noise = rng.choice([-1, 1], size=data.counts.shape) * rng.integers(
        3 * 10**9, 4 * 10**9, size=data.counts.shape
    )
    meas = inject_noise(data, KIND[name], noise, 1e-4)
    rel = MECH[name](data, measurements=meas)
    if name != "M_c^dp":  # M_c^dp's tree fits n̄, already clipped to [0, G]
        assert rel.info["cost"] > 2**63
    check_release(name, data, meas, rel, brute=False)


def test_sum_of_squares_is_exact():
    rng = np.random.default_rng(0)
    for scale in (10, 2**31, 2**40, 2**61):
        d = rng.integers(-scale, scale, size=1000, dtype=np.int64)
        assert sum_of_squares(d) == sum(int(v) ** 2 for v in d)


def test_squared_distances_of_int32_counts_do_not_wrap():
    """Counts travel as int32 where they fit; two int32 counts at opposite ends differ by
    almost 2³², which int32 arithmetic would wrap: the costs take the differences in int64."""
    from privopt.census.squares import group_squared_distances, squared_distance

    rng = np.random.default_rng(3)
    lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    a = rng.choice([lo, hi, 0, 7], size=(50, 4)).astype(np.int32)
    b = rng.choice([lo, hi, -3, 0], size=(50, 4)).astype(np.int32)
    want = [int(x) - int(y) for x, y in zip(a.ravel().tolist(), b.ravel().tolist(), strict=True)]
    assert squared_distance(a, b, rows=7) == sum(d * d for d in want)
    bounds = np.array([0, 10, 10, 33, 50])
    per_row = [sum(d * d for d in want[4 * r : 4 * r + 4]) for r in range(50)]
    assert group_squared_distances(a, b, bounds, rows=7) == [
        sum(per_row[x:y]) for x, y in itertools.pairwise(bounds.tolist())
    ]


def test_values_beyond_2_61_are_refused():
    h = Hierarchy.from_nested({"US": ["GA", "NY"]})
    with pytest.raises(InvalidInput, match="2\\^61"):
        tree_postprocess(h, np.array([[2**62], [0], [0]]), 3, scale=1.0)
    with pytest.raises(InvalidInput, match="G"):
        tree_postprocess(h, np.zeros((3, 1), dtype=np.int64), 2**62, scale=1.0)
    with pytest.raises(InvalidInput, match="integer"):
        tree_postprocess(h, np.array([[0.5], [0], [0]]), 3, scale=1.0)


def test_window_budget_raises_instead_of_an_uncertified_result():
    data = synthetic_hierarchy([3], 10**6, N=2, seed=0)
    m = measure_counts(data, 1.0, rng=0)
    with pytest.raises(SolverLimit, match="max_cells"):
        tree_postprocess(data.hierarchy, m.noisy, data.G, scale=1.0, window="exact", max_cells=1000)
    with pytest.raises(SolverLimit, match="max_table"):
        tree_postprocess(data.hierarchy, m.noisy, data.G, scale=1.0, window="exact", max_table=1000)
    region, _, _, _ = chain_order(data.hierarchy, data.N)
    with pytest.raises(SolverLimit, match="max_cells"):
        chain_postprocess(
            data.hierarchy,
            np.zeros(region.size, dtype=np.int64),
            data.G,
            data.N,
            scale=np.ones(2),
            window="exact",
            max_cells=1000,
        )


def test_measurements_bound_to_their_data(running_example):
    m = measure_counts(running_example, 1.0, rng=0)
    h = running_example.hierarchy
    same_shape = Hierarchy.from_nested({"US": ["GA", "VA"]}, level_names=["nation", "state"])
    other = CensusCounts.from_leaf_counts(same_shape, running_example.counts[h.leaves])
    with pytest.raises(InvalidInput, match="different hierarchy"):
        m_h_dp(other, measurements=m)
    more = CensusCounts.from_leaf_counts(h, running_example.counts[h.leaves] + 1)
    with pytest.raises(InvalidInput, match="G = 6"):
        m_h_dp(more, measurements=m)
    wider = CensusCounts.from_leaf_counts(
        h, np.hstack([running_example.counts[h.leaves], np.zeros((2, 1), dtype=np.int64)])
    )
    with pytest.raises(InvalidInput, match="N = 5"):
        m_h_dp(wider, measurements=m)
    unbound = inject(running_example, "counts", running_example.counts)
    unbound.source = None
    with pytest.raises(InvalidInput, match="source"):
        m_h_dp(running_example, measurements=unbound)
    # The same data (rebuilt) is accepted.
    again = CensusCounts.from_leaf_counts(
        Hierarchy.from_nested({"US": ["GA", "NY"]}, level_names=["nation", "state"]),
        running_example.counts[h.leaves],
    )
    assert m_h_dp(again, measurements=m).verify()
