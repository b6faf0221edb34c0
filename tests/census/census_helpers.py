"""Random small hierarchies for the census tests."""

from __future__ import annotations

import numpy as np
from privopt.census import CensusCounts, Hierarchy


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
