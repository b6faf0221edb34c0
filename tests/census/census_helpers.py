"""Random small hierarchies for the census tests."""

from __future__ import annotations

import numpy as np
from privopt.census import CensusCounts, Hierarchy, Measurements, cumulate
from privopt.census.noise import DataFingerprint
from privopt.census.solvers import chain_order, level_cumulative


def random_hierarchy(rng: np.random.Generator, depth: int, max_fanout: int) -> Hierarchy:
    parent = [-1]
    frontier = [0]
    for _ in range(depth - 1):
        nxt = []
        for p in frontier:
            for _ in range(int(rng.integers(1, max_fanout + 1))):
                parent.append(p)
                nxt.append(len(parent) - 1)
        frontier = nxt
    return Hierarchy.from_parents(parent)


def random_counts(rng: np.random.Generator, h: Hierarchy, N: int, high: int) -> CensusCounts:
    n_leaves = h.leaves.stop - h.leaves.start
    return CensusCounts.from_leaf_counts(h, rng.integers(0, high + 1, size=(n_leaves, N)))


def inject(data: CensusCounts, kind: str, noisy: np.ndarray, epsilon: float = 1.0) -> Measurements:
    """Measurements of ``kind`` with the given noisy values, bound to ``data`` (as the
    ``measure_*`` functions bind theirs), for post-processing tests with chosen noise; the
    scale is the mechanism's λ at ``epsilon`` (Δ = 2 for counts, 1 for cumulative, |R_ℓ| for
    the chain)."""
    h = data.hierarchy
    L = h.n_levels
    sens = {"counts": np.full(L, 2.0), "cumulative": np.ones(L)}.get(
        kind, h.level_sizes.astype(np.float64)
    )
    m = Measurements(
        kind,
        np.asarray(noisy, dtype=np.int64),
        epsilon,
        sens * L / epsilon,
        sens,
        source=DataFingerprint.of(data),
    )
    m.info["chain_noise_scale"] = "strict"
    return m


def inject_noise(
    data: CensusCounts, kind: str, noise: np.ndarray, epsilon: float = 1.0
) -> Measurements:
    """Measurements of ``kind`` = the true values of ``data`` plus ``noise`` ((R, N), indexed by
    region and size also for the chain)."""
    L = data.hierarchy.n_levels
    if kind == "cumulative":
        return inject(data, kind, cumulate(data.counts) + noise, epsilon)
    if kind == "chain":
        region, size, level, _ = chain_order(data.hierarchy, data.N)
        truth = level_cumulative(data.counts[region, size], level, L)
        return inject(data, kind, truth + noise[region, size], epsilon)
    return inject(data, kind, data.counts + noise, epsilon)
