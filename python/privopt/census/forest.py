"""One round of the census tree DP, run by regions: serially in C++, or decomposed by top-level
subtree on any :class:`concurrent.futures.Executor` (threads, processes, a Dask client's
``get_executor()``) with the same result, bit for bit.

The census T^dp is N copies of the region tree under a dummy root (spec 003 §2.2). Every
top-level region (a child of the root region, e.g. a state) is independent of the others until
the root: its tables are built bottom-up in a task, the root merges them with the dummy root's
domain {G} and splits the root values, and each subtree is then assigned top-down in a task.
Subtrees travel in batches (:class:`_Batch`), each sent to a worker once and kept there with the
C++ session that holds its tables and merge traces between the two passes and across widening
rounds; a round sends only what changed (the windows' doublings, the root values). The kernels
are the same functions in both modes (``privopt._core.census.census_dp`` is built from
``census_up`` / ``census_root`` / ``census_down``), so the decomposition changes where the work
runs, never its result.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from privopt._core import census as _kernels
from privopt._validation import check_executor
from privopt.census.hierarchy import Hierarchy
from privopt.census.squares import squared_distance, sum_of_squares

#: Batches built and sent to Dask workers at once (their sends overlap; each is held here until
#: it is sent).
_PLACING_THREADS = 4

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
    cost : Σ (values − noisy)² as an exact int when the tasks summed it per subtree (on an
        executor), else None.
    """

    status: int
    values: np.ndarray
    touch: np.ndarray
    widened: int
    cost: int | None = None


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


class _Batch:
    """Some top-level subtrees as one local forest: a placeholder root (local region 0) whose
    children are the subtrees' roots, then their regions in global breadth-first order (which
    keeps the forest breadth-first). It is shipped to a worker once; the worker keeps on it a
    :class:`~privopt._core.census.CensusSession` (bottom-up tables and merge traces of each
    subtree) between tasks and rounds, so a round ships only the windows' doublings and the root
    values, and the top-down pass does not redo the bottom-up one. The session is a cache: a
    copy of the batch that arrives without it (another process, a restarted worker) rebuilds it.

    Attributes
    ----------
    child_ptr, child_idx : (R_b + 1,), (R_b - 1,) int64 CSR of the local forest.
    noisy : (R_b, N) int64 noisy counts (row 0, the placeholder, is 0 and never read).
    delta : (R_b,) int64 half-width per region, or (R_b, N) per node.
    owner : (R_b,) int32, the position in the batch of each region's subtree (-1: placeholder).
    """

    def __init__(
        self, h: Hierarchy, subtrees: list[np.ndarray], noisy: np.ndarray, delta: np.ndarray
    ) -> None:
        k = len(subtrees)
        rows = np.concatenate(subtrees)
        order = np.argsort(rows, kind="stable")
        rows = rows[order]
        self.owner = np.empty(rows.size + 1, dtype=np.int32)
        self.owner[0] = -1
        owner = np.repeat(np.arange(k, dtype=np.int32), [r.size for r in subtrees])
        np.take(owner, order, out=self.owner[1:], mode="clip")
        self.child_ptr = np.zeros(rows.size + 2, dtype=np.int64)
        self.child_ptr[1] = k
        np.cumsum(np.diff(h.child_ptr)[rows], out=self.child_ptr[2:])
        self.child_ptr[2:] += k
        self.child_idx = np.arange(1, rows.size + 1, dtype=np.int64)
        # Gathered in place, unbuffered (the indices are valid): one copy, no temporaries.
        self.noisy = np.zeros((rows.size + 1, noisy.shape[1]), dtype=np.int64)
        np.take(noisy, rows, axis=0, out=self.noisy[1:], mode="clip")
        self.delta = np.zeros((rows.size + 1, *delta.shape[1:]), dtype=np.int64)
        np.take(delta, rows, axis=0, out=self.delta[1:], mode="clip")
        self._reset()

    def _reset(self) -> None:
        self._session: Any = None
        self._shift: np.ndarray | None = None
        self._shift_version: tuple = ()
        self._up_version: list[int] = []
        self._rows: list[np.ndarray] = []

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for key in ("_session", "_shift", "_shift_version", "_up_version", "_rows"):
            state.pop(key)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset()

    def session(self, doublings: _Doublings, G: int, max_table: int) -> Any:
        """The worker's session, its windows doubled as ``doublings`` says."""
        if self._session is None or self._shift is None:
            self._shift = np.zeros(self.noisy.shape, dtype=np.uint8)
            self._session = _kernels.CensusSession(
                self.child_ptr, self.child_idx, self.noisy, self.delta, self._shift, G, max_table
            )
            k = int(self.child_ptr[1])
            self._up_version = [-1] * k
            order = np.argsort(self.owner, kind="stable")  # the placeholder (-1) first
            bounds = np.searchsorted(self.owner[order], np.arange(k + 1))
            self._rows = [order[a:b] for a, b in itertools.pairwise(bounds)]
        if self._shift_version != doublings.versions:
            doublings.apply(self._shift)  # only dirty subtrees' entries change between rounds
            self._shift_version = doublings.versions
        return self._session

    def up(self, which: list[int], doublings: _Doublings) -> None:
        """Bottom-up of the subtrees ``which`` (positions in the batch) whose tables are not
        those of their current windows."""
        stale = [j for j in which if self._up_version[j] != doublings.versions[j]]
        if stale:
            self._session.up(stale)
            for j in stale:
                self._up_version[j] = doublings.versions[j]


@dataclass(frozen=True)
class _Doublings:
    """The windows' doublings (shift) of one batch, compact: ``versions`` (per subtree of the
    batch, raised whenever its doublings change), and the local flat indices and values of the
    non-zero entries, or the dense (R_b, N) uint8 array when most entries are non-zero."""

    versions: tuple
    index: np.ndarray | None
    value: np.ndarray

    @classmethod
    def encode(cls, shift: np.ndarray | None, rows: np.ndarray, versions: tuple) -> _Doublings:
        if shift is None:
            return cls(versions, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8))
        local = shift[rows]
        index = np.flatnonzero(local)
        if 9 * index.size >= local.size:  # 9 bytes per sparse entry: dense is smaller
            return cls(versions, None, local)
        return cls(versions, index + shift.shape[1], local.reshape(-1)[index])

    def apply(self, out: np.ndarray) -> None:
        """Write the doublings into the local (R_b, N) array (the placeholder row stays 0)."""
        if self.index is None:
            out[1:] = self.value
            return
        out.fill(0)
        out.reshape(-1)[self.index] = self.value


def _up_task(
    batch: _Batch, which: list[int], doublings: _Doublings, G: int, max_table: int
) -> list[tuple]:
    """Bottom-up of the subtrees ``which`` of a batch: per subtree its root tables (lo, n,
    slopes) and widened count."""
    session = batch.session(doublings, G, max_table)
    batch.up(which, doublings)
    return [session.tables(j) for j in which]


def _down_task(
    batch: _Batch,
    which: list[int],
    doublings: _Doublings,
    G: int,
    max_table: int,
    root_values: np.ndarray,
) -> list[tuple]:
    """Top-down of the subtrees ``which`` of a batch given their root values ((len(which), N)):
    per subtree its values (rows in global order; int32 when G fits) and the flat indices of
    its nodes on a window edge, and its exact Σ (values − noisy)²."""
    session = batch.session(doublings, G, max_table)
    batch.up(which, doublings)  # a no-op unless the session was rebuilt
    values = session.values
    roots = np.asarray(which, dtype=np.int64) + 1
    values[roots] = root_values
    session.down(which)
    touch = session.touch
    compact = np.int32 if G < 2**31 else np.int64  # values lie in [0, G]
    return [_subtree_result(values, touch, batch.noisy, batch._rows[j], compact) for j in which]


def _subtree_result(
    values: np.ndarray,
    touch: np.ndarray,
    noisy: np.ndarray,
    rows: np.ndarray,
    dtype: Any,
    block: int = 1 << 16,
) -> tuple[np.ndarray, np.ndarray, int]:
    """One subtree's values (its ``rows`` of the session's, as ``dtype``), the flat indices
    (row · N + size) of its nodes on a window edge, and its exact Σ (values − noisy)²; in row
    blocks, so that no temporary is as large as the subtree."""
    N = values.shape[1]
    out = np.empty((rows.size, N), dtype=dtype)
    touched, cost = [], 0
    for a in range(0, rows.size, block):
        part = values[rows[a : a + block]]
        cost += sum_of_squares(part - noisy[rows[a : a + block]])
        out[a : a + block] = part
        touched.append(np.flatnonzero(touch[rows[a : a + block]]) + a * N)
    return out, np.concatenate(touched), cost


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
    if delta is None:  # one half-width per region, not a (R, N) array of copies
        delta = np.full(noisy.shape[0], delta0, dtype=np.int64)
    runner = ForestRunner(
        h, noisy, np.asarray(delta, dtype=np.int64), None, G, max_table, executor, n_tasks
    )
    return runner.run(None)


class ForestRunner:
    """DP rounds on one problem, re-solving only what a widening changed.

    Node (r, s) has the window of half-width ``delta[r] << shift[r, s]`` (capped at G) around
    its clipped noisy value; ``shift`` (R, N) uint8 is owned by the caller, who raises entries
    between rounds and names the top-level subtrees they fall in (``dirty``). A round rebuilds the
    bottom-up tables of the dirty subtrees only, redoes the root, and re-assigns top-down only the
    subtrees that are dirty or whose root values moved; the others keep their values and flags,
    which are what a full re-run would give. Serially the subtrees' merge traces stay in a C++
    session; on an executor each batch of subtrees keeps its own session on the worker that
    holds it (:class:`_Batch`), and the root tables of clean subtrees are reused.
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
        self.delta = delta  # (R,) per region, or (R, N) per node
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
            if shift is None:
                shift = np.zeros(noisy.shape, dtype=np.uint8)
            self._session = _kernels.CensusSession(
                h.child_ptr, h.child_idx, noisy, delta, shift, G, max_table
            )
        else:
            self._values = np.zeros(noisy.shape, dtype=np.int64)
            self._touch = np.zeros(noisy.shape, dtype=np.uint8)
            self._tables: list = [None] * len(self.subtrees)
            self._widened = [0] * len(self.subtrees)
            self._batches = _batches(
                [r.size for r in self.subtrees], n_tasks or _default_tasks(executor)
            )
            self._cost = [0] * len(self.subtrees)  # Σ (values − noisy)² per subtree
            self._version = np.zeros(len(self.subtrees), dtype=np.int64)
            self._doublings: list[_Doublings | None] = [None] * len(self._batches)
            self._client = _dask_client(self.executor)
            self._direct = True  # until a direct scatter fails
            self._resident: list[Any] = [None] * len(self._batches)  # batches or their futures

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

    def _batch_held(self, b: int) -> bool:
        held = self._resident[b]
        return held is not None and (self._client is None or held.status == "finished")

    def _batch(self, b: int) -> Any:
        """Batch ``b`` where its tasks read it: built once, and on a Dask cluster scattered to
        one worker once (again only if that worker was lost)."""
        if self._batch_held(b):
            return self._resident[b]
        subtrees = [self.subtrees[i] for i in self._batches[b]]
        batch = _Batch(self.h, subtrees, self.noisy, self.delta)
        if self._client is not None:
            batch = self._place(batch)
        self._resident[b] = batch
        return batch

    def _placed(self, jobs: list[tuple[int, list]]) -> Iterator[list]:
        """Each job's arguments with its batch (or the batch's future) first, in order, as soon
        as that batch is placed: a batch's task starts while the next ones are sent, and on Dask
        a few batches are built and sent at once (the sends overlap; at most that many batches
        are held here at a time)."""
        if self._client is None or all(self._batch_held(b) for b, _ in jobs):
            for b, tail in jobs:
                yield [self._batch(b), *tail]
            return
        with ThreadPoolExecutor(_PLACING_THREADS) as pool:
            held = pool.map(self._batch, [b for b, _ in jobs])
            for (_, tail), batch in zip(jobs, held, strict=True):
                yield [batch, *tail]

    def _place(self, batch: _Batch) -> Any:
        """Scatter ``batch`` to a worker: straight from this process (one hop, several times
        faster), or through the scheduler when the workers cannot be reached from here."""
        if self._direct:
            try:
                return self._client.scatter(batch, hash=False, direct=True)
            except (OSError, TimeoutError):
                self._direct = False
        return self._client.scatter(batch, hash=False)

    def _doublings_of(self, b: int, dirty: set[int]) -> _Doublings:
        """Batch ``b``'s doublings, encoded again only when one of its subtrees is dirty."""
        held = self._doublings[b]
        if held is None or any(i in dirty for i in self._batches[b]):
            rows = np.concatenate([self.subtrees[i] for i in self._batches[b]])
            versions = tuple(int(self._version[i]) for i in self._batches[b])
            held = _Doublings.encode(self.shift, np.sort(rows), versions)
            self._doublings[b] = held
        return held

    def _tasks(self, func: Any, wanted: set[int], root_values: Any = None) -> list[tuple]:
        """Run ``func`` on every batch with a wanted subtree; (subtree, result) pairs."""
        jobs: list[tuple[int, list]] = []
        names = []
        for b, members in enumerate(self._batches):
            which = [j for j, i in enumerate(members) if i in wanted]
            if not which:
                continue
            tail = [which, self._doublings[b], self.G, self.max_table]
            if root_values is not None:
                tail.append(root_values[[members[j] for j in which]])
            jobs.append((b, tail))
            names.append([members[j] for j in which])
        try:
            results = _map(self.executor, func, self._placed(jobs))
        except Exception:
            # A worker lost with a batch on it: place the batch again (once), as the executor
            # retries a task whose worker was lost.
            if self._client is None or all(self._batch_held(b) for b, _ in jobs):
                raise
            results = _map(self.executor, func, self._placed(jobs))
        pairs = (zip(n, r, strict=True) for n, r in zip(names, results, strict=True))
        return [pair for batch in pairs for pair in batch]

    def _run_executor(self, dirty: list[int]) -> ForestRound:
        wanted = set(dirty)
        self._version[dirty] += 1
        for b in range(len(self._batches)):
            self._doublings_of(b, wanted)
        for i, (lo, n, slopes, w) in self._tasks(_up_task, wanted):
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
        for i, (values, touched, cost) in self._tasks(_down_task, todo, kid_values):
            self._cost[i] = cost
            rows = self.subtrees[i]
            self._values[rows] = values
            self._touch[rows] = 0
            self._touch[rows[touched // N], touched % N] = 1
        self._kid_values = kid_values
        cost = squared_distance(root_values[None, :], self.noisy[:1]) + sum(self._cost)
        return ForestRound(0, self._values, self._touch, widened, cost)

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


def _dask_client(executor: Any) -> Any:
    """The Dask client behind ``executor`` (a client or its ``get_executor()``), else None."""
    for candidate in (executor, getattr(executor, "_client", None)):
        if callable(getattr(candidate, "scatter", None)):
            return candidate
    return None


def _default_tasks(executor: Any) -> int:
    workers = getattr(executor, "_max_workers", None)
    if workers is None:  # a Dask client's executor: its cluster's worker count
        client = getattr(executor, "_client", None)
        try:
            workers = len(client.scheduler_info()["workers"]) if client is not None else None
        except Exception:  # noqa: BLE001 - any client error: fall back to a fixed count
            workers = None
    return 4 * int(workers or 2)


def _map(executor: Any, func: Any, jobs: Iterable[list]) -> list:
    """Submit every job (a list of arguments), then gather in order (results are independent
    of the order)."""
    futures = [executor.submit(func, *args) for args in jobs]
    return [f.result() for f in futures]
