"""Data passes of DPM: the only code that touches the raw data.

A recursion level of DPM needs, for every active node, its size and the rank / window count of
every split candidate in every dimension; the averaging needs per-leaf coordinate sums. All of
these are sums over points, so one pass computes a whole level, and over a Dask array the pass is
one map-reduce over row chunks (spec §8: "levels parallelise trivially"). Points are routed down
the split tree from the root in every pass, so no per-point state is kept between levels.

The non-private values returned here (true counts and sums) are consumed inside
:meth:`privopt.cluster.DPM.fit`, which adds noise before anything leaves it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privopt import _core
from privopt.cluster._chunks import (
    add_parts,
    chunk_codes,
    chunk_level_step,
    chunk_summary,
    chunk_sums,
)
from privopt.cluster._interval import add_sorted_gaps, dimension_averaged_gaps, prepare_column

__all__ = ["SplitTree", "InMemoryData", "DaskData", "is_dask_array"]

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


#: Cell codes of a Dask fit are kept in (worker) memory up to this size; above it each level
#: recomputes them from the data chunk by chunk. Either way the counts are the same.
MAX_PERSISTED_CODES_BYTES = 4 << 30


class DaskData:
    """Passes over a Dask array: each pass is one map over row chunks plus a tree-sum reduction.

    Works with any Dask scheduler (threads, processes, ``distributed``) and with arrays larger
    than memory. Once β is known, the cell codes of the points (1/8 of the data at one byte a
    coordinate) are computed in one pass and persisted with each point's current tip (2 bytes),
    and each tree level is then one pass over them. The split width pulls one column at a time
    into a buffer of n floats.
    """

    def __init__(self, X: Any, a: float, b: float) -> None:
        X = X.astype(np.float64) if X.dtype != np.float64 else X
        self.X = X.rechunk({1: -1}) if X.numblocks[1] > 1 else X
        self.a, self.b = a, b
        self.n, self.d = (int(s) for s in self.X.shape)
        self._codes: tuple[tuple[float, str], Any] | None = None
        self._persisted = False
        self._nodes: list[Any] | None = None  # per-chunk tips; None: every point at the root

    def blocks(self) -> list[Any]:
        return list(self.X.to_delayed().ravel())

    def summary(self) -> tuple[bool, float, float]:
        """(every value finite, min, max) in one batched pass."""
        finite, lo, hi = True, np.inf, -np.inf
        for part in batched_compute([delayed_call(chunk_summary, b) for b in self.blocks()]):
            finite, lo, hi = finite and part[0], min(lo, part[1]), max(hi, part[2])
        return finite, lo, hi

    def gaps(self) -> np.ndarray:
        acc = np.zeros(self.n - 1)
        col = np.empty(self.n)
        for k in range(self.d):
            fill_column(self.X, k, col)
            add_sorted_gaps(acc, prepare_column(col, self.a, self.b))
        acc /= self.d
        return acc

    def codes(self, beta: float, window: str) -> Any:
        """The codes of each row chunk, as delayed values: persisted when small enough (in
        worker memory on a cluster), else lazy (recomputed from the raw chunk by each pass)."""
        if self._codes is None or self._codes[0] != (beta, window):
            probe = _cc.cell_codes(np.zeros((1, 1)), self.a, self.b, beta, window)
            args = (self.a, self.b, beta, window)
            codes = [delayed_call(chunk_codes, blk, *args) for blk in self.blocks()]
            self._persisted = self.n * self.d * probe.itemsize <= MAX_PERSISTED_CODES_BYTES
            if self._persisted:
                codes = batched_persist(codes)
            self._codes = ((beta, window), codes)
            self._nodes = None
        return self._codes[1]

    @staticmethod
    def _tree_sum(parts: list[Any]) -> Any:
        from dask import delayed

        # Pairwise tree reduction keeps the reduction depth logarithmic in the chunk count.
        while len(parts) > 1:
            parts = [delayed(add_parts)(parts[i : i + 2]) for i in range(0, len(parts), 2)]
        return parts[0]

    def level_counts(
        self, tree: SplitTree, slots: dict[int, int], beta: float, window: str
    ) -> tuple[np.ndarray, ...]:
        """As :meth:`InMemoryData.level_counts`. With persisted codes the new tips are
        persisted too; otherwise every pass walks from the root (same counts)."""
        import dask
        from dask import delayed

        codes = self.codes(beta, window)
        nodes = self._nodes if self._nodes is not None else [None] * len(codes)
        args = (self.a, self.b, beta, window, tree.kernel_arrays(slots), len(slots))
        steps = [
            delayed(chunk_level_step, nout=2)(c, node, *args)
            for c, node in zip(codes, nodes, strict=True)
        ]
        parts = [delayed(tuple)([cells]) for _, cells in steps]
        if self._persisted:  # codes and tips are in memory: one pass, the new tips kept
            *tips, total = dask.persist(*[tip for tip, _ in steps], self._tree_sum(parts))
            self._nodes = list(tips)
            ((cells,),) = dask.compute(total)
        else:  # codes are recomputed from the raw chunks: batches bound what is in flight
            (cells,) = add_parts(batched_compute(parts, combine=self._tree_sum))
        return _cc.counts_from_cells(cells, self.a, self.b, beta, window)

    def slot_sums(
        self, tree: SplitTree, slots: dict[int, int], scale: float = 1.0
    ) -> tuple[np.ndarray, np.ndarray]:
        from dask import delayed

        args = (self.a, self.b, tree.kernel_arrays(slots), len(slots), scale)
        parts = [delayed(chunk_sums)(blk, *args) for blk in self.blocks()]
        # Batches bound the raw chunks in flight; each batch is tree-summed where it ran.
        sums, sizes = add_parts(batched_compute(parts, combine=self._tree_sum))
        return sums, sizes


#: Row chunks read at a time by the passes over the raw data: the bound on raw chunks in memory
#: does not depend on how far the scheduler would read ahead (with one graph for all chunks, a
#: 5-chunk pass held about 4 of them at once).
BATCH_CHUNKS = 4


def delayed_call(func, *args) -> Any:
    from dask import delayed

    return delayed(func)(*args)


def batched_compute(tasks: list[Any], combine=None) -> list[Any]:
    """Compute ``tasks`` BATCH_CHUNKS at a time; with ``combine``, each batch is first reduced
    to one task by ``combine(list) -> task``. Returns the results in order."""
    import dask

    out: list[Any] = []
    for first in range(0, len(tasks), BATCH_CHUNKS):
        batch = tasks[first : first + BATCH_CHUNKS]
        out += dask.compute(*(batch if combine is None else [combine(batch)]))
    return out


def batched_persist(tasks: list[Any]) -> list[Any]:
    """Persist ``tasks`` BATCH_CHUNKS at a time (in worker memory on a cluster)."""
    import dask

    out: list[Any] = []
    for first in range(0, len(tasks), BATCH_CHUNKS):
        out += dask.persist(*tasks[first : first + BATCH_CHUNKS])
    return out


def widen_nodes(nodes: np.ndarray, n_nodes: int) -> np.ndarray:
    """``nodes`` as uint32 once a tree has more nodes than uint16 can name."""
    return nodes.astype(np.uint32) if n_nodes > 1 << 16 and nodes.dtype == np.uint16 else nodes


def fill_column(X: Any, k: int, out: np.ndarray, batch: int = 8) -> None:
    """Copy column k of the Dask array X into ``out`` (n,), ``batch`` row chunks at a time, so
    that no second n-sized array is ever built."""
    import dask

    blocks = X[:, k].to_delayed().ravel()
    bounds = np.concatenate(([0], np.cumsum(X.chunks[0])))
    for first in range(0, len(blocks), batch):
        parts = dask.compute(*blocks[first : first + batch])
        for i, part in enumerate(parts, start=first):
            out[bounds[i] : bounds[i + 1]] = part
