"""Data passes of DPM: the only code that touches the raw data.

A recursion level of DPM needs, for every active node, its size and the rank / window count of
every split candidate in every dimension; the averaging needs per-leaf coordinate sums. All of
these are sums over points, so one pass computes a whole level, and over a Dask array the pass is
one map-reduce over row chunks (spec §8: "levels parallelise trivially"; ``_dask.py``). Points are
routed down the split tree from the root in every pass, so no per-point state is kept between
levels.

The non-private values returned here (true counts and sums) are consumed inside
:meth:`privopt.cluster.DPM.fit`, which adds noise before anything leaves it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privopt import _core
from privopt.cluster._interval import dimension_averaged_gaps

__all__ = ["SplitTree", "InMemoryData", "is_dask_array", "widen_nodes"]

_cc = _core.cluster


@dataclass
class SplitTree:
    """The splits chosen so far: node 0 is the root; feature −1 marks a tip (no split)."""

    feature: list[int] = field(default_factory=lambda: [-1])
    threshold: list[float] = field(default_factory=lambda: [0.0])
    left: list[int] = field(default_factory=lambda: [0])
    right: list[int] = field(default_factory=lambda: [0])

    def split(self, node: int, feature: int, threshold: float) -> tuple[int, int]:
        """Split tip ``node``: x[feature] ≤ threshold goes left. Returns the two new node ids."""
        first = len(self.feature)
        self.feature[node], self.threshold[node] = int(feature), float(threshold)
        self.left[node], self.right[node] = first, first + 1
        for _ in range(2):
            self.feature.append(-1)
            self.threshold.append(0.0)
            self.left.append(0)
            self.right.append(0)
        return first, first + 1

    def tips(self) -> list[int]:
        """The nodes without a split."""
        return [node for node, f in enumerate(self.feature) if f < 0]

    def kernel_arrays(self, slots: dict[int, int]) -> tuple[np.ndarray, ...]:
        """(feature, threshold, left, right, slot) where tip ``node`` gets slot ``slots[node]``
        (others −1): the arguments of the C++ view."""
        slot = np.full(len(self.feature), -1, dtype=np.int64)
        for node, s in slots.items():
            slot[node] = s
        return (
            np.asarray(self.feature, dtype=np.int64),
            np.asarray(self.threshold, dtype=np.float64),
            np.asarray(self.left, dtype=np.int64),
            np.asarray(self.right, dtype=np.int64),
            slot,
        )

    def kernel_tree(self, slots: dict[int, int]) -> Any:
        """The C++ view where tip ``node`` gets slot ``slots[node]`` (others −1)."""
        return _cc.Tree(*self.kernel_arrays(slots))


def _threads(n_jobs: int | None) -> int:
    if n_jobs is None:
        return 1
    return max(1, os.cpu_count() or 1) if n_jobs < 0 else max(1, n_jobs)


def is_dask_array(X: Any) -> bool:
    return type(X).__module__.startswith("dask.") and hasattr(X, "chunks")


class InMemoryData:
    """Passes over an in-memory (n, d) float64 array.

    Once β is known the grid is fixed, so the cell of every coordinate is computed once
    (:func:`_core.cluster.cell_codes`, one to four bytes each) and every level pass reads those
    codes instead of the doubles.
    """

    def __init__(self, X: np.ndarray, a: float, b: float, n_jobs: int | None) -> None:
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.a, self.b = a, b
        self.n, self.d = self.X.shape
        self.n_threads = _threads(n_jobs)
        self._codes: tuple[tuple[float, str], np.ndarray] | None = None
        self._nodes = np.zeros(0, dtype=np.uint16)

    def gaps(self) -> np.ndarray:
        return dimension_averaged_gaps(self.X, self.a, self.b)

    def codes(self, beta: float, window: str) -> np.ndarray:
        if self._codes is None or self._codes[0] != (beta, window):
            codes = _cc.cell_codes(self.X, self.a, self.b, beta, window, self.n_threads)
            self._codes = ((beta, window), codes)
            self._nodes = np.zeros(self.n, dtype=np.uint16)  # every point at the root
        return self._codes[1]

    def level_counts(
        self, tree: SplitTree, slots: dict[int, int], beta: float, window: str
    ) -> tuple[np.ndarray, ...]:
        """Counts of the active slots. Successive calls pass growing versions of one tree: each
        point walks on from the tip it reached in the previous call."""
        codes = self.codes(beta, window)
        self._nodes = widen_nodes(self._nodes, len(tree.feature))
        cells = _cc.level_cells_nodes(
            codes,
            self._nodes,
            self.a,
            self.b,
            beta,
            window,
            tree.kernel_tree(slots),
            len(slots),
            self.n_threads,
        )
        return _cc.counts_from_cells(cells, self.a, self.b, beta, window)

    def slot_sums(
        self, tree: SplitTree, slots: dict[int, int], scale: float = 1.0
    ) -> tuple[np.ndarray, np.ndarray]:
        return _cc.slot_sums(self.X, self.a, self.b, tree.kernel_tree(slots), len(slots), scale)


def widen_nodes(nodes: np.ndarray, n_nodes: int) -> np.ndarray:
    """``nodes`` as uint32 once a tree has more nodes than uint16 can name."""
    return nodes.astype(np.uint32) if n_nodes > 1 << 16 and nodes.dtype == np.uint16 else nodes
