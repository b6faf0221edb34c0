"""One round of the census tree DP, run by regions: serially in C++, or decomposed by top-level
subtree on any :class:`concurrent.futures.Executor` (threads, processes, a Dask client's
``get_executor()``) with the same result, bit for bit.

The census T^dp is N copies of the region tree under a dummy root (spec 003 §2.2). Every
top-level region (a child of the root region, e.g. a state) is independent of the others until
the root: its tables are built bottom-up in its own task, the root merges them with the dummy
root's domain {G} and splits the root values, and each subtree is then assigned top-down in its
own task (which rebuilds its bottom-up tables instead of shipping merge traces back and forth).
The kernels are the same functions in both modes (``privopt._core.census.census_dp`` is built
from ``census_up`` / ``census_root`` / ``census_down``), so the decomposition changes where the
work runs, never its result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from privopt._core import census as _kernels
from privopt._validation import check_executor
from privopt.census.hierarchy import Hierarchy
from privopt.errors import InvalidInput

__all__ = [
    "ForestRound",
    "ForestRunner",
    "run_forest_round",
    "top_level_subtrees",
]


@dataclass(frozen=True)
class ForestRound:
    """Outcome of one DP round.

    Attributes
    ----------
    status : 0 optimal, 1 infeasible (the windows cannot reach G at the dummy root).
    values : (R, N) int64 optimal values within the windows (undefined when infeasible).
    touch : (R, N) uint8, 1 where a value ends on a window edge other than 0 or G.
    widened : internal windows the kernel replaced by their children's range.
    """

    status: int
    values: np.ndarray
    touch: np.ndarray
    widened: int


def top_level_subtrees(h: Hierarchy) -> list[np.ndarray]:
    """For each child of the root region, its subtree's regions (global ids) in breadth-first
    order — the global order restricted to the subtree."""
    top = np.arange(h.n_regions)
    for lev in range(2, h.n_levels):
        sl = h.level_slice(lev)
        top[sl] = top[h.parent[sl]]
    kids = h.child_idx[h.child_ptr[0] : h.child_ptr[1]]
    if kids.size == 0:
        return []
    order = np.argsort(top[1:], kind="stable") + 1  # groups by top-level region, ascending
    starts = np.searchsorted(top[order], kids)
    ends = np.append(starts[1:], order.size)
    return [order[a:b] for a, b in zip(starts, ends, strict=True)]


def _local_structure(h: Hierarchy, regions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the subtree on ``regions`` (breadth-first, local ids)."""
    fanout = np.diff(h.child_ptr)[regions]
    ptr = np.concatenate([[0], np.cumsum(fanout)]).astype(np.int64)
    return ptr, np.arange(1, regions.size, dtype=np.int64)


def _slice(delta: np.ndarray | None, regions: np.ndarray) -> np.ndarray | None:
    return None if delta is None else np.ascontiguousarray(delta[regions])


def _up_task(batch: list[tuple]) -> list[tuple]:
    """Bottom-up of several subtrees: their root tables (lo, n, slopes) and widened counts."""
    return [_kernels.census_up(*job) for job in batch]


def _down_task(batch: list[tuple]) -> list[tuple]:
    """Top-down of several subtrees given their root values: (values, touch, n_touching)."""
    return [_kernels.census_down(*job) for job in batch]


def _batches(sizes: list[int], n_tasks: int) -> list[list[int]]:
    """Subtree indices grouped into at most ``n_tasks`` batches of similar total size (largest
    first onto the lightest batch), so that small subtrees do not pay one task each."""
    loads = [0] * n_tasks
    out: list[list[int]] = [[] for _ in range(n_tasks)]
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        b = int(np.argmin(loads))
        out[b].append(i)
        loads[b] += sizes[i]
    return [sorted(b) for b in out if b]


def run_forest_round(
    h: Hierarchy,
    noisy: np.ndarray,
    delta: np.ndarray | None,
    delta0: int,
    G: int,
    max_table: int,
    executor: Any = None,
    n_tasks: int | None = None,
) -> ForestRound:
    """One DP round over windows of half-width ``delta`` ((R,) per region, (R, N) per node, or
    None for ``delta0`` everywhere); serially, or on ``executor`` in ``n_tasks`` batches of
    top-level subtrees (default: 4 per worker of the executor, at most one per subtree)."""
    if executor is None:
        status, values, touch, widened, _ = _kernels.census_dp(
            h.child_ptr, h.child_idx, noisy, delta, delta0, G, max_table
        )
        return ForestRound(int(status), values, touch, int(widened))
    if not top_level_subtrees(h):
        return run_forest_round(h, noisy, delta, delta0, G, max_table)
    R, N = noisy.shape
    if delta is None:
        per_node = np.full((R, N), delta0, dtype=np.int64)
    elif np.ndim(delta) == 1:
        per_node = np.repeat(np.asarray(delta, dtype=np.int64)[:, None], N, axis=1)
    else:
        per_node = np.ascontiguousarray(delta, dtype=np.int64)
    runner = ForestRunner(h, noisy, per_node, None, G, max_table, executor, n_tasks)
    return runner.run(None)


class ForestRunner:
    """DP rounds on one problem, re-solving only what a widening changed.

    Node (r, s) has the window of half-width ``delta[r] << shift[r, s]`` (capped at G) around
    its clipped noisy value; ``shift`` (R, N) uint8 is owned by the caller, who raises entries
    between rounds and names the top-level subtrees they fall in (``dirty``). A round rebuilds the
    bottom-up tables of the dirty subtrees only, redoes the root, and re-assigns top-down only the
    subtrees that are dirty or whose root values moved; the others keep their values and flags,
    which are what a full re-run would give. Serially the subtrees' merge traces stay in a C++
    session; on an executor each task is stateless (the top-down task rebuilds its subtree's
    tables) and the root tables of clean subtrees are reused.
    """

    def __init__(
        self,
        h: Hierarchy,
        noisy: np.ndarray,
        delta: np.ndarray,
        shift: np.ndarray | None,
        G: int,
        max_table: int,
        executor: Any = None,
        n_tasks: int | None = None,
    ) -> None:
        self.h, self.noisy, self.G, self.max_table = h, noisy, G, max_table
        self.delta = delta  # (R,) per region, or (R, N) per node (executor path only)
        self.shift = shift
        self.executor = check_executor(executor, accept_dask_client=True)
        self.subtrees = top_level_subtrees(h)
        self.subtree_of = np.full(h.n_regions, -1, dtype=np.int64)
        for i, regions in enumerate(self.subtrees):
            self.subtree_of[regions] = i
        self._kid_values: np.ndarray | None = None
        if not self.subtrees:  # a single region: nothing to distribute
            self.executor = None
        if self.executor is None:
            if delta.ndim != 1:
                raise InvalidInput("a serial ForestRunner takes one half-width per region")
            if shift is None:
                shift = np.zeros(noisy.shape, dtype=np.uint8)
            self._session = _kernels.CensusSession(
                h.child_ptr, h.child_idx, noisy, delta, shift, G, max_table
            )
        else:
            self._values = np.zeros_like(noisy)
            self._touch = np.zeros(noisy.shape, dtype=np.uint8)
            self._tables: list = [None] * len(self.subtrees)
            self._widened = [0] * len(self.subtrees)
            self._batches = _batches(
                [r.size for r in self.subtrees], n_tasks or _default_tasks(executor)
            )

    def run(self, dirty: set[int] | None) -> ForestRound:
        """One round; ``dirty`` = indices of the top-level subtrees whose windows changed since
        the last round (None: all, as in the first round)."""
        k = len(self.subtrees)
        dirty_list = list(range(k)) if dirty is None else sorted(dirty)
        if self.executor is None:
            return self._run_session(dirty_list)
        return self._run_executor(dirty_list)

    def _moved(self, kid_values: np.ndarray, dirty: list[int]) -> list[int]:
        """Dirty subtrees and those whose root values differ from the previous round."""
        if self._kid_values is None:
            return list(range(len(self.subtrees)))
        moved = np.flatnonzero(np.any(kid_values != self._kid_values, axis=1)).tolist()
        return sorted(set(moved) | set(dirty))

    def _run_session(self, dirty: list[int]) -> ForestRound:
        session = self._session
        session.up(dirty)
        status = session.root()
        values = session.values
        if status != 0:
            self._kid_values = None  # the next round re-assigns everything
            return ForestRound(int(status), values, session.touch, session.widened)
        roots = np.asarray(session.top, dtype=np.int64)
        kid_values = values[roots].copy()
        session.down(self._moved(kid_values, dirty))
        self._kid_values = kid_values
        return ForestRound(0, values, session.touch, session.widened)

    def _job(self, i: int) -> tuple:
        regions = self.subtrees[i]
        ptr, idx = _local_structure(self.h, regions)
        shift = None if self.shift is None else np.ascontiguousarray(self.shift[regions])
        return (
            ptr,
            idx,
            np.ascontiguousarray(self.noisy[regions]),
            np.ascontiguousarray(self.delta[regions]),
            0,
            self.G,
            self.max_table,
            shift,
        )

    def _down_job(self, i: int, root_values: np.ndarray) -> tuple:
        ptr, idx, noisy, delta, delta0, G, max_table, shift = self._job(i)
        return (ptr, idx, noisy, delta, delta0, G, root_values, max_table, shift)

    def _run_executor(self, dirty: list[int]) -> ForestRound:
        wanted = set(dirty)
        by_batch = [b2 for b2 in ([i for i in b if i in wanted] for b in self._batches) if b2]
        ups = _map(self.executor, _up_task, [[self._job(i) for i in b] for b in by_batch])
        for b, results in zip(by_batch, ups, strict=True):
            for i, (lo, n, slopes, w) in zip(b, results, strict=True):
                self._tables[i] = (lo, n, slopes)
                self._widened[i] = int(w)
        N = self.noisy.shape[1]
        root_delta = self._root_delta(N)
        status, root_values, kid_values, root_touch, w = _kernels.census_root(
            self.noisy[0],
            root_delta,
            self.G,
            np.stack([t[0] for t in self._tables]),
            np.stack([t[1] for t in self._tables]),
            np.concatenate([t[2] for t in self._tables]),
            self.max_table,
        )
        widened = sum(self._widened) + int(w)
        if status != 0:
            self._kid_values = None
            return ForestRound(int(status), self._values, self._touch, widened)
        self._values[0], self._touch[0] = root_values, root_touch
        todo = set(self._moved(kid_values, dirty))
        by_batch = [b2 for b2 in ([i for i in b if i in todo] for b in self._batches) if b2]
        downs = _map(
            self.executor,
            _down_task,
            [[self._down_job(i, kid_values[i]) for i in b] for b in by_batch],
        )
        for b, results in zip(by_batch, downs, strict=True):
            for i, (v, t, _) in zip(b, results, strict=True):
                self._values[self.subtrees[i]] = v
                self._touch[self.subtrees[i]] = t
        self._kid_values = kid_values
        return ForestRound(0, self._values, self._touch, widened)

    def _root_delta(self, N: int) -> np.ndarray:
        """Region 0's effective half-width per size (its shift applied, capped at G)."""
        base = np.broadcast_to(np.asarray(self.delta[0], dtype=np.int64), (N,))
        if self.shift is None:
            return base.copy()
        out = np.empty(N, dtype=np.int64)
        for s in range(N):
            k, d = int(self.shift[0, s]), int(base[s])
            out[s] = max(d, self.G) if k >= 62 or d > (self.G >> k) else d << k
        return out


def _default_tasks(executor: Any) -> int:
    workers = getattr(executor, "_max_workers", None)
    if workers is None:  # a Dask client's executor: its cluster's worker count
        client = getattr(executor, "_client", None)
        try:
            workers = len(client.scheduler_info()["workers"]) if client is not None else None
        except Exception:  # noqa: BLE001 - any client error: fall back to a fixed count
            workers = None
    return 4 * int(workers or 2)


def _map(executor: Any, func: Any, payloads: list) -> list:
    """Submit every payload, then gather in order (results are independent of the order)."""
    futures = [executor.submit(func, p) for p in payloads]
    return [f.result() for f in futures]
