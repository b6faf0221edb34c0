"""Hypothesis property tests: the PGSR invariants (spec 003 §1.3) for any hierarchy, counts and
noise, and the optimality ordering of the post-processings on shared measurements."""

from __future__ import annotations

import numpy as np
from census_helpers import inject_noise
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.census import MECHANISMS, CensusCounts, Hierarchy, Measurements
from privopt.census.solvers import chain_order, level_cumulative


@st.composite
def instances(draw):
    depth = draw(st.integers(1, 3))
    parent, frontier = [-1], [0]
    for _ in range(depth - 1):
        nxt = []
        for p in frontier:
            for _ in range(draw(st.integers(1, 3))):
                parent.append(p)
                nxt.append(len(parent) - 1)
        frontier = nxt
    h = Hierarchy.from_parents(parent)
    N = draw(st.integers(1, 4))
    n_leaves = h.leaves.stop - h.leaves.start
    leaf = draw(st.lists(st.integers(0, 6), min_size=n_leaves * N, max_size=n_leaves * N))
    data = CensusCounts.from_leaf_counts(h, np.reshape(leaf, (n_leaves, N)))
    amp = draw(st.sampled_from([0, 2, 10, 500]))
    noise = np.array(
        draw(st.lists(st.integers(-amp, amp), min_size=h.n_regions * N, max_size=h.n_regions * N))
    ).reshape(h.n_regions, N)
    return data, noise


def _measure(data: CensusCounts, kind: str, noise: np.ndarray) -> Measurements:
    return inject_noise(data, kind, noise)


@settings(max_examples=40, deadline=None)
@given(instances())
def test_consistent_mechanisms_satisfy_pgsr_for_any_noise(inst):
    data, noise = inst
    for name, kind in (
        ("M_H^dp", "counts"),
        ("TopDown", "counts"),
        ("M_c^dp", "cumulative"),
        ("M_c^ch", "chain"),
    ):
        rel = MECHANISMS[name](data, measurements=_measure(data, kind, noise)).verify()
        assert rel.counts[0].sum() == data.G


@settings(max_examples=40, deadline=None)
@given(instances())
def test_tree_dp_is_the_closest_consistent_release(inst):
    # M_H^dp solves Model 1: no consistent, faithful, valid release — TopDown's, the truth — is
    # closer (L2) to the measurements.
    data, noise = inst
    m = _measure(data, "counts", noise)
    dp = MECHANISMS["M_H^dp"](data, measurements=m)
    td = MECHANISMS["TopDown"](data, measurements=m)

    def cost(c):
        return int(((c - m.noisy) ** 2).sum())

    assert dp.info["cost"] == cost(dp.counts) <= min(cost(td.counts), cost(data.counts))


@settings(max_examples=40, deadline=None)
@given(instances())
def test_chain_dp_beats_the_true_chain(inst):
    # The true level-wise cumulative chain is feasible for Model 3, so the optimum is no worse.
    data, noise = inst
    m = _measure(data, "chain", noise)
    ch = MECHANISMS["M_c^ch"](data, measurements=m)
    region, size, level, _ = chain_order(data.hierarchy, data.N)
    truth = level_cumulative(data.counts[region, size], level, data.hierarchy.n_levels)
    assert ch.info["cost"] <= int(((truth - m.noisy) ** 2).sum())
