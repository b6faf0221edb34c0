"""The Dask data passes of DPM: a fit over a Dask array (the ``dask`` extra).

Imported only when :class:`~privopt.cluster.DPM` is given a Dask array, so that scikit-learn
users without Dask never import it; the passes compute what
:class:`~privopt.cluster._backend.InMemoryData` computes, chunk by chunk.
"""

from __future__ import annotations

from typing import Any

import dask
import numpy as np
from dask import delayed

from privopt import _core
from privopt.cluster._backend import SplitTree
from privopt.cluster._chunks import (
    add_parts,
    add_piece_gaps,
    chunk_codes,
    chunk_level_step,
    chunk_summary,
    chunk_sums,
    column_piece,
    prepare_column,
    sorted_column,
)
from privopt.cluster._interval import add_sorted_gaps

__all__ = ["DaskData"]

_cc = _core.cluster


#: Cell codes of a Dask fit are kept in (worker) memory up to this size; above it each level
#: recomputes them from the data chunk by chunk. Either way the counts are the same.
MAX_PERSISTED_CODES_BYTES = 4 << 30


class DaskData:
    """Passes over a Dask array: each pass is one map over row chunks plus a tree-sum reduction.

    Works with any Dask scheduler (threads, processes, ``distributed``) and with arrays larger
    than memory. Once β is known, the cell codes of the points (1/8 of the data at one byte a
    coordinate) are computed in one pass and persisted with each point's current tip (2 bytes),
    and each tree level is then one pass over them. The split width pulls one column at a time
    into a buffer of n floats; on a distributed cluster the workers clip and sort the columns,
    several at once, and add their gaps by ranges of rows: the driver only receives the sums.
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
        """A of Algorithm 2 line 7, (n − 1,): the gaps of each sorted column, added in column
        order (the order of :func:`~privopt.cluster._interval.dimension_averaged_gaps`, so the
        sums are the same bit for bit), divided by d."""
        acc = np.zeros(self.n - 1)
        if cluster_threads() is None:  # one process: the driver fetches and sorts each column
            col = np.empty(self.n)
            for k in range(self.d):
                fill_column(self.X, k, col)
                add_sorted_gaps(acc, prepare_column(col, self.a, self.b))
        else:
            acc = gaps_on_workers(self.X, self.a, self.b)
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
        # Pairwise tree reduction keeps the reduction depth logarithmic in the chunk count.
        while len(parts) > 1:
            parts = [delayed(add_parts)(parts[i : i + 2]) for i in range(0, len(parts), 2)]
        return parts[0]

    def level_counts(
        self, tree: SplitTree, slots: dict[int, int], beta: float, window: str
    ) -> tuple[np.ndarray, ...]:
        """As :meth:`InMemoryData.level_counts`. With persisted codes the new tips are
        persisted too; otherwise every pass walks from the root (same counts)."""
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
        args = (self.a, self.b, tree.kernel_arrays(slots), len(slots), scale)
        parts = [delayed(chunk_sums)(blk, *args) for blk in self.blocks()]
        # Batches bound the raw chunks in flight; each batch is tree-summed where it ran.
        sums, sizes = add_parts(batched_compute(parts, combine=self._tree_sum))
        return sums, sizes


#: Row chunks read at a time by the passes over the raw data, at least: the bound on raw chunks
#: in memory does not depend on how far the scheduler would read ahead (with one graph for all
#: chunks, a 5-chunk pass held about 4 of them at once). On a distributed cluster with more
#: worker threads a batch has one chunk per thread (:func:`chunks_in_flight`).
BATCH_CHUNKS = 4


def chunks_in_flight(least: int = BATCH_CHUNKS) -> int:
    """Row chunks a pass over the raw data reads at a time: ``least``, or the worker threads
    of the distributed cluster that computes (the current client) when it has more.

    A fixed batch would leave all workers but ``least`` idle in those passes, whatever the
    cluster's size; one chunk per worker thread keeps each worker's memory at one raw chunk.
    """
    threads = cluster_threads()
    return least if threads is None else max(least, threads)


def cluster_threads() -> int | None:
    """Worker threads of the distributed cluster that computes (the current client); None for
    the schedulers of one process (threads, processes, synchronous) or a cluster that did not
    say."""
    scheduler = dask.base.get_scheduler()
    nthreads = getattr(getattr(scheduler, "__self__", None), "nthreads", None)
    if not callable(nthreads):
        return None
    try:
        return sum(int(t) for t in nthreads().values())
    except (OSError, TimeoutError, TypeError, ValueError):
        return None


def delayed_call(func, *args) -> Any:
    return delayed(func)(*args)


def batched_compute(tasks: list[Any], combine=None) -> list[Any]:
    """Compute ``tasks`` :func:`chunks_in_flight` at a time; with ``combine``, each batch is
    first reduced to one task by ``combine(list) -> task``. Returns the results in order."""
    out: list[Any] = []
    size = chunks_in_flight()
    for first in range(0, len(tasks), size):
        batch = tasks[first : first + size]
        out += dask.compute(*(batch if combine is None else [combine(batch)]))
    return out


def batched_persist(tasks: list[Any]) -> list[Any]:
    """Persist ``tasks`` :func:`chunks_in_flight` at a time (in worker memory on a cluster)."""
    out: list[Any] = []
    size = chunks_in_flight()
    for first in range(0, len(tasks), size):
        out += dask.persist(*tasks[first : first + size])
    return out


def fill_column(X: Any, k: int, out: np.ndarray, batch: int = 8) -> None:
    """Copy column k of the Dask array X into ``out`` (n,), ``batch`` row chunks at a time (or
    one per worker thread of the cluster, when it has more), so that no second n-sized array
    is ever built."""
    batch = chunks_in_flight(batch)
    blocks = X[:, k].to_delayed().ravel()
    bounds = np.concatenate(([0], np.cumsum(X.chunks[0])))
    for first in range(0, len(blocks), batch):
        parts = dask.compute(*blocks[first : first + batch])
        for i, part in enumerate(parts, start=first):
            out[bounds[i] : bounds[i + 1]] = part


def gaps_on_workers(X: Any, a: float, b: float) -> np.ndarray:
    """Σ_k of the gaps of column k of the Dask array X (n, d), clipped to [a, b] and sorted,
    added in column order, (n − 1,) float64: computed on the distributed cluster, which sends
    the driver only these n − 1 sums (not the d sorted columns: 8 GB at 10⁸ × 10).

    Columns go in groups of one per worker thread. Each column of a group is clipped and
    sorted by a worker (:func:`~privopt.cluster._chunks.sorted_column`) and cut there into
    pieces, one per range of rows (two ranges per worker thread, each piece overlapping the
    next by one value); then each range's task adds its pieces' gaps to the range's sums in
    column order (:func:`~privopt.cluster._chunks.add_piece_gaps`). A group's columns sort
    while the group before adds its gaps, and are released once their sums are in, so the
    cluster holds at most two groups of columns plus the sums (one column's worth). Every
    element is the same difference and the same sum, in the same order, as in the driver's
    pass over whole columns: the result is equal bit for bit.
    """
    from distributed import wait

    n, d = (int(s) for s in X.shape)
    if n < 2:
        return np.zeros(max(n - 1, 0))
    threads = max(1, cluster_threads() or 1)
    edges = np.linspace(0, n - 1, min(n - 1, 2 * threads) + 1).round().astype(int)
    ranges = list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))
    sums: list[Any] = [None] * len(ranges)
    previous: list[Any] = []
    for first in range(0, d, threads):
        columns = [
            delayed(sorted_column)(list(X[:, k].to_delayed().ravel()), a, b)
            for k in range(first, min(d, first + threads))
        ]
        pieces = [
            [delayed(column_piece)(col, start, stop + 1) for start, stop in ranges]
            for col in columns
        ]
        sums = list(
            dask.persist(
                *(
                    delayed(add_piece_gaps)(sums[r], [p[r] for p in pieces])
                    for r in range(len(ranges))
                )
            )
        )
        # The next group's columns sort while this group's sums are added; the group before
        # is done (its columns released) first, so at most two groups are held.
        wait(previous)
        previous = sums
    wait(sums)
    out = np.empty(n - 1)
    batch = chunks_in_flight()
    for first in range(0, len(ranges), batch):
        parts = fetch_gap_sums(sums[first : first + batch])
        for (start, stop), part in zip(ranges[first : first + batch], parts, strict=True):
            out[start:stop] = part
    return out


def fetch_gap_sums(parts: list[Any]) -> tuple[np.ndarray, ...]:
    """The driver's copies of ranges of gap sums persisted on the cluster."""
    return dask.compute(*parts)
