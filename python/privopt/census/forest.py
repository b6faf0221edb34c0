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
from privopt.census.hierarchy import Hierarchy
from privopt.errors import InvalidInput

__all__ = ["ForestRound", "check_executor", "run_forest_round", "top_level_subtrees"]


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
    check_executor(executor)
    subtrees = top_level_subtrees(h)
    if not subtrees:  # a single region: nothing to decompose
        return run_forest_round(h, noisy, delta, delta0, G, max_table)
    jobs = []
    for regions in subtrees:
        ptr, idx = _local_structure(h, regions)
        jobs.append(
            (ptr, idx, np.ascontiguousarray(noisy[regions]), _slice(delta, regions), delta0, G)
        )
    batches = _batches([r.size for r in subtrees], n_tasks or _default_tasks(executor))
    ups = _map(executor, _up_task, [[(*jobs[i], max_table) for i in b] for b in batches])
    tables: list[Any] = [None] * len(jobs)
    widened = 0
    for b, results in zip(batches, ups, strict=True):
        for i, (lo, n, slopes, w) in zip(b, results, strict=True):
            tables[i] = (lo, n, slopes)
            widened += int(w)
    root_delta = _root_delta(delta, delta0, noisy.shape[1])
    status, root_values, kid_values, root_touch, w = _kernels.census_root(
        noisy[0],
        root_delta,
        G,
        np.stack([t[0] for t in tables]),
        np.stack([t[1] for t in tables]),
        np.concatenate([t[2] for t in tables]),
        max_table,
    )
    widened += int(w)
    values = np.empty_like(noisy)
    touch = np.zeros(noisy.shape, dtype=np.uint8)
    if status != 0:
        return ForestRound(int(status), values, touch, widened)
    values[0], touch[0] = root_values, root_touch
    downs = _map(
        executor,
        _down_task,
        [[(*jobs[i], kid_values[i], max_table) for i in b] for b in batches],
    )
    for b, results in zip(batches, downs, strict=True):
        for i, (v, t, _) in zip(b, results, strict=True):
            values[subtrees[i]] = v
            touch[subtrees[i]] = t
    return ForestRound(0, values, touch, widened)


def check_executor(executor: Any) -> Any:
    """``executor`` if it is None or has ``submit`` (a concurrent.futures.Executor, a Dask
    client or its ``get_executor()``), else InvalidInput."""
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise InvalidInput(
            f"executor must be a concurrent.futures.Executor (or a Dask client), got "
            f"{type(executor).__name__}"
        )
    return executor


def _root_delta(delta: np.ndarray | None, delta0: int, N: int) -> np.ndarray:
    if delta is None:
        return np.full(N, delta0, dtype=np.int64)
    return np.broadcast_to(np.asarray(delta[0], dtype=np.int64), (N,)).copy()


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
