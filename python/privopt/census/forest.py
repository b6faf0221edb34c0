"""One round of the census tree DP, run by regions: serially in C++, or decomposed into
subtrees on any :class:`concurrent.futures.Executor` (threads, processes, a Dask client's
``get_executor()``) with the same result, bit for bit.

The census T^dp is N copies of the region tree under a dummy root (spec 003 §2.2). The subtree
of any region is independent of the rest of the tree until its root's parent merges its root
tables. On an executor the tree is cut at a level deep enough to give every worker several
subtrees (:func:`split_level`): each subtree's tables are built bottom-up in a task, the driver
solves the small upper part — the levels above the cut, where each subtree stands as a region
with given tables — together with the dummy root's domain {G}, which yields every subtree's
root values, and each subtree is then assigned top-down in a task. Subtrees travel in batches
of consecutive ones (:class:`_Batch`: a few slices of the (R, N) arrays), each sent to a
worker once and kept there with the C++ session that holds its tables and merge traces between
the two passes and across widening rounds; a round sends only what changed (the windows'
doublings, the root values) and gets back each batch's rows, which the driver copies into
place slice by slice. The kernels are the same functions in both modes (``census_up`` merges a
given region's tables exactly where it would merge the tables it built for that subtree), so
the decomposition changes where the work runs, never its result.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np

from privopt._core import census as _kernels
from privopt._validation import check_executor
from privopt.census.hierarchy import Hierarchy
from privopt.census.squares import group_squared_distances, squared_distance
from privopt.errors import InvalidInput

#: Batches built and sent to Dask workers at once (their sends overlap; each is held here until
#: it is sent).
_PLACING_THREADS = 4

#: Subtrees per batch the cut aims at (at least), so that consecutive subtrees grouped into
#: batches balance by size within one subtree.
_SUBTREES_PER_TASK = 4

__all__ = [
    "ForestRound",
    "ForestRunner",
    "run_forest_round",
    "split_level",
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


@dataclass(frozen=True)
class _Split:
    """The hierarchy cut at ``level``: the subtrees of its internal regions go to the tasks, the
    regions above them and the leaves at the level (the upper part, a prefix of the global
    order) stay with the driver. Consecutive subtrees' regions at each deeper level form one
    contiguous run of rows (breadth-first order), so a batch of consecutive subtrees is a few
    slices of the (R, N) arrays.

    Attributes
    ----------
    level : the level of the subtrees' roots (≥ 1).
    roots : (k,) int64 the subtrees' roots (global ids, ascending).
    n_upper : regions at the levels up to ``level`` (rows 0 .. n_upper − 1).
    bounds : per deeper level, (k + 1,) int64 rows: subtree t holds rows bounds[t] .. bounds[t+1].
    """

    level: int
    roots: np.ndarray
    n_upper: int
    bounds: list[np.ndarray]

    @classmethod
    def at(cls, h: Hierarchy, level: int) -> _Split:
        sl = h.level_slice(level)
        fanout = np.diff(h.child_ptr)
        roots = np.flatnonzero(fanout[sl] > 0).astype(np.int64) + sl.start
        rows = np.append(roots, roots[-1] + 1)
        bounds = []
        while True:  # the children of rows a .. b − 1 are rows child_ptr[a] + 1 .. child_ptr[b]
            rows = h.child_ptr[rows] + 1
            if rows[0] == rows[-1]:
                break
            bounds.append(rows)
        return cls(level, roots, sl.stop, bounds)

    def sizes(self) -> np.ndarray:
        """(k,) regions per subtree."""
        return 1 + sum((np.diff(b) for b in self.bounds), np.zeros(self.roots.size, np.int64))

    def subtree_of(self, n_regions: int) -> np.ndarray:
        """(R,) the subtree holding each region, −1 for the upper part (roots included in their
        subtree: a root's window enters its subtree's tables)."""
        out = np.full(n_regions, -1, dtype=np.int64)
        k = self.roots.size
        out[self.roots] = np.arange(k)
        for b in self.bounds:
            out[b[0] : b[-1]] = np.repeat(np.arange(k), np.diff(b))
        return out


def split_level(h: Hierarchy, n_tasks: int) -> int:
    """The level whose internal regions root the tasks' subtrees: the shallowest with at least
    ``_SUBTREES_PER_TASK`` · ``n_tasks`` of them (batches of several subtrees balance by size
    within one subtree), else the one with the most; 0 when no region below the root has
    children (nothing to distribute)."""
    fanout = np.diff(h.child_ptr)
    counts = [int(np.count_nonzero(fanout[h.level_slice(lev)])) for lev in range(1, h.n_levels)]
    if not counts or max(counts) == 0:
        return 0
    for lev, count in enumerate(counts, start=1):
        if count >= _SUBTREES_PER_TASK * n_tasks:
            return lev
    return 1 + int(np.argmax(counts))


def _gather(
    arr: np.ndarray, roots: np.ndarray, blocks: list[tuple[int, int]], narrow: bool = False
) -> np.ndarray:
    """A batch's rows of ``arr``: a zero placeholder row, the roots, then each block of rows;
    with ``narrow``, int32 when every one of those values fits (half the bytes to ship and to
    hold on the worker, which reads them in place), else ``arr``'s dtype."""
    n = 1 + roots.size + sum(b - a for a, b in blocks)
    dtype = arr.dtype
    if narrow and fits_int32(arr[roots], *(arr[a:b] for a, b in blocks)):
        dtype = np.dtype(np.int32)
    out = np.zeros((n, *arr.shape[1:]), dtype=dtype)
    out[1 : 1 + roots.size] = arr[roots]
    pos = 1 + roots.size
    for a, b in blocks:
        out[pos : pos + b - a] = arr[a:b]
        pos += b - a
    return out


def fits_int32(*parts: np.ndarray) -> bool:
    """Whether every part is an integer array whose values all lie in int32's range: counts that
    are then shipped, spilled and held as int32 (half the bytes; the kernels read them in place)."""
    info = np.iinfo(np.int32)
    return all(
        p.dtype.kind in "iu"
        and (p.size == 0 or (int(p.min()) >= info.min and int(p.max()) <= info.max))
        for p in parts
    )


class _Batch:
    """Consecutive subtrees of a :class:`_Split` as one local forest: a placeholder root (local
    region 0) whose children are the subtrees' roots, then the subtrees' regions level by level
    (each level one block of global rows, which keeps the forest breadth-first). It is shipped
    to a worker once; the worker keeps on it a :class:`~privopt._core.census.CensusSession`
    (bottom-up tables and merge traces of each subtree) between tasks and rounds, so a round
    ships only the windows' doublings and the root values, and the top-down pass does not redo
    the bottom-up one. The session is a cache: a copy of the batch that arrives without it
    (another process, a restarted worker) rebuilds it.

    Attributes
    ----------
    n_subtrees : the subtrees in the batch (the placeholder's children).
    fanout : (R_b - 1,) int32 children of each region after the placeholder; the local forest's
        CSR (:attr:`child_ptr`, :attr:`child_idx`) is built from it where the session is made.
    noisy : (R_b, N) noisy counts, int32 when they fit, else int64 (row 0, the placeholder, is
        0 and never read).
    delta : (R_b,) int64 half-width per region, or (R_b, N) per node.
    local : per level below the roots, (k + 1,) int64 local rows bounding each subtree's block.
    offset : per level below the roots, global row − local row.
    """

    def __init__(
        self, h: Hierarchy, split: _Split, first: int, stop: int, noisy: np.ndarray, delta: Any
    ) -> None:
        roots = split.roots[first:stop]
        k = roots.size
        blocks = [(int(b[first]), int(b[stop])) for b in split.bounds]
        # Each region's number of children, from its own slice of child_ptr (no pass over the
        # whole hierarchy per batch); the worker rebuilds the local CSR from them.
        ptr = h.child_ptr
        counts = np.concatenate(
            [ptr[roots + 1] - ptr[roots], *(np.diff(ptr[a : b + 1]) for a, b in blocks)]
        )
        self.n_subtrees = k
        self.fanout = counts.astype(np.int32) if fits_int32(counts) else counts
        self.noisy = _gather(noisy, roots, blocks, narrow=True)
        self.delta = _gather(delta, roots, blocks)
        self.local, self.offset = [], []
        pos = 1 + k
        for b, (a, _) in zip(split.bounds, blocks, strict=True):
            self.local.append(b[first : stop + 1] - a + pos)
            self.offset.append(a - pos)
            pos += int(b[stop]) - a
        self._reset()

    @property
    def child_ptr(self) -> np.ndarray:
        """(R_b + 1,) int64: region r's children are regions child_ptr[r] + 1 .. child_ptr[r+1]."""
        ptr = np.zeros(self.fanout.size + 2, dtype=np.int64)
        ptr[1] = self.n_subtrees
        np.cumsum(self.fanout, out=ptr[2:])
        ptr[2:] += self.n_subtrees
        return ptr

    @property
    def child_idx(self) -> np.ndarray:
        """(R_b − 1,) int64: regions 1 .. R_b − 1 (breadth-first, each after its parent)."""
        return np.arange(1, self.fanout.size + 1, dtype=np.int64)

    def _reset(self) -> None:
        self._session: Any = None
        self._shift: np.ndarray | None = None
        self._shift_version: tuple = ()
        self._up_version: list[int] = []

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for key in ("_session", "_shift", "_shift_version", "_up_version"):
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
            self._up_version = [-1] * self.n_subtrees
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
    non-zero entries, or the dense (R_b − 1, N) uint8 array when most entries are non-zero."""

    versions: tuple
    index: np.ndarray | None
    value: np.ndarray

    @classmethod
    def encode(cls, local: np.ndarray | None, versions: tuple) -> _Doublings:
        """From the batch's rows of the shift array (placeholder row first), or None (none)."""
        if local is None:
            return cls(versions, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8))
        index = np.flatnonzero(local)
        if 9 * index.size >= local.size:  # 9 bytes per sparse entry: dense is smaller
            return cls(versions, None, local[1:])
        return cls(versions, index, local.reshape(-1)[index])

    def apply(self, out: np.ndarray) -> None:
        """Write the doublings into the local (R_b, N) array (the placeholder row stays 0)."""
        if self.index is None:
            out[1:] = self.value
            return
        out.fill(0)
        out.reshape(-1)[self.index] = self.value


@dataclass(frozen=True)
class _Tables:
    """Root tables of some subtrees as they travel back to the driver: lo and n (m, N) int64,
    each subtree's widened count, and the tables' slopes. A table's slopes never decrease, and
    its steps between neighbours are small: the slopes travel as those steps in one or two
    bytes, with the first slope of each table apart (``heads``), eight times fewer bytes than
    int64 slopes; or as they are (``heads`` None) when a step does not fit.
    """

    lo: np.ndarray
    n: np.ndarray
    widened: np.ndarray
    steps: np.ndarray
    heads: np.ndarray | None

    def slopes(self) -> np.ndarray:
        """The concatenated int64 slopes, as :meth:`CensusSession.packed_tables` gave them."""
        if self.heads is None:
            return self.steps
        first, lengths = _table_starts(self.n)
        run = np.cumsum(self.steps, dtype=np.int64)  # within a table: slope − its head
        run += np.repeat(self.heads - run[first], lengths)
        return run


def _table_starts(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each table with slopes starts in the concatenated slopes, and its slope count."""
    lengths = n.ravel() - 1
    starts = np.cumsum(lengths) - lengths
    keep = lengths > 0
    return starts[keep], lengths[keep]


def _up_task(
    batch: _Batch, which: list[int], doublings: _Doublings, G: int, max_table: int
) -> _Tables:
    """Bottom-up of the subtrees ``which`` of a batch: their root tables, packed."""
    session = batch.session(doublings, G, max_table)
    batch.up(which, doublings)
    lo, n, widened, heads, steps = session.packed_steps(which)
    if steps is None:  # a step beyond 16 bits: the slopes as they are
        lo, n, slopes, widened = session.packed_tables(which)
        return _Tables(lo, n, widened, slopes, None)
    return _Tables(lo, n, widened, steps, heads)


def _down_task(
    batch: _Batch,
    which: list[int],
    doublings: _Doublings,
    G: int,
    max_table: int,
    root_values: np.ndarray,
) -> list[tuple]:
    """Top-down of the subtrees ``which`` (ascending) of a batch given their root values
    ((len(which), N)). Per run of consecutive subtrees (first, stop): their rows below the roots
    level by level (int32 when G fits), the global flat indices (row · N + size) of those nodes
    on a window edge, and each subtree's exact Σ (values − noisy)² over those rows."""
    session = batch.session(doublings, G, max_table)
    batch.up(which, doublings)  # a no-op unless the session was rebuilt
    session.use_buffers(*_lent_buffers(batch.noisy.shape))
    values = session.values
    values[np.asarray(which, dtype=np.int64) + 1] = root_values
    session.down(which)
    compact = np.int32 if G < 2**31 else np.int64  # values lie in [0, G]
    return [
        _run_result(batch, values, session.touch, first, stop, compact)
        for first, stop in _runs(which)
    ]


#: Per thread, weak references to the flat buffers last lent to a top-down task.
_lent = threading.local()


def _lent_buffers(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """(R_b, N) int64 values and uint8 touch arrays for one batch's top-down pass: views of the
    buffers this thread lent last when they are large enough, else new ones.

    A worker runs its batches' top-down tasks one after another, and a process's first writes
    into memory new to it cost several times a rewrite; lending every batch the same memory
    leaves that cost to the first batch, and a worker holds one batch's values instead of all of
    them. Only weak references are kept here: the sessions the buffers were lent to hold them,
    so they are freed with the batches, at the end of a run. A task copies its rows out before
    it returns, and a thread runs one task at a time, so no two tasks share them.
    """
    size = shape[0] * shape[1]
    out = []
    for name, dtype in (("values", np.int64), ("touch", np.uint8)):
        ref = getattr(_lent, name, None)
        flat = ref() if ref is not None else None
        if flat is None or flat.size < size:
            flat = np.empty(size, dtype=dtype)
            setattr(_lent, name, weakref.ref(flat))
        out.append(flat[:size].reshape(shape))
    return out[0], out[1]


def _runs(which: list[int]) -> list[tuple[int, int]]:
    """Ascending positions as (first, stop) runs of consecutive ones."""
    out: list[tuple[int, int]] = []
    for j in which:
        if out and out[-1][1] == j:
            out[-1] = (out[-1][0], j + 1)
        else:
            out.append((j, j + 1))
    return out


def _run_result(
    batch: _Batch,
    values: np.ndarray,
    touch: np.ndarray,
    first: int,
    stop: int,
    dtype: Any,
) -> tuple[int, int, np.ndarray, np.ndarray, list[int]]:
    """Subtrees first .. stop − 1 of a batch: their rows below the roots (level by level, as
    ``dtype``), the global flat indices of their nodes on a window edge, their costs."""
    N = values.shape[1]
    n_rows = sum(int(local[stop]) - int(local[first]) for local in batch.local)
    out = np.empty((n_rows, N), dtype=dtype)
    touched = [np.zeros(0, dtype=np.int64)]
    costs = np.zeros(stop - first, dtype=object)
    pos = 0
    for local, offset in zip(batch.local, batch.offset, strict=True):
        a, b = int(local[first]), int(local[stop])
        out[pos : pos + b - a] = values[a:b]
        pos += b - a
        touched.append(np.flatnonzero(touch[a:b]) + (a + offset) * N)
        group = local[first : stop + 1] - a
        costs += np.array(group_squared_distances(values[a:b], batch.noisy[a:b], group), object)
    return first, stop, out, np.concatenate(touched), [int(c) for c in costs]


def _contiguous_batches(sizes: np.ndarray, n_tasks: int) -> list[tuple[int, int]]:
    """Consecutive subtrees grouped into at most ``n_tasks`` runs of similar total size (each
    run within one subtree of an equal share), as (first, stop)."""
    k = sizes.size
    n = min(n_tasks, k)
    total = np.cumsum(sizes)
    cuts = np.searchsorted(total, np.arange(1, n) * (total[-1] / n), side="left") + 1
    edges = np.unique(np.concatenate([[0], np.minimum(cuts, k), [k]]))
    return [(int(a), int(b)) for a, b in itertools.pairwise(edges)]


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
    subtrees (default: 4 per worker of the executor), cut at :func:`split_level`."""
    if executor is None:
        status, values, touch, widened, _ = _kernels.census_dp(
            h.child_ptr, h.child_idx, noisy, delta, delta0, G, max_table
        )
        return ForestRound(int(status), values, touch, int(widened))
    if split_level(h, 1) == 0:  # no region below the root has children: nothing to split
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
    between rounds and names the subtrees they fall in (``dirty``, through :attr:`subtree_of`).
    A round rebuilds the bottom-up tables of the dirty subtrees only, redoes the part above
    them, and re-assigns top-down only the subtrees that are dirty or whose root values moved;
    the others keep their values and flags, which are what a full re-run would give. Serially
    the subtrees are the top-level ones and their merge traces stay in a C++ session. On an
    executor the hierarchy is cut at :func:`split_level` (enough subtrees to balance the
    tasks; ``level`` chooses another): each batch of consecutive subtrees keeps its own
    session on the worker that holds it (:class:`_Batch`), and the driver keeps a session of
    the small upper part whose leaves at the cut stand for the subtrees (their root tables,
    from the tasks).

    Attributes
    ----------
    subtree_of : (R,) int64 the subtree (as ``dirty`` names it) holding each region, −1 for a
        region that every round re-solves anyway.
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
        level: int | None = None,
    ) -> None:
        self.h, self.noisy, self.G, self.max_table = h, noisy, G, max_table
        self.delta = delta  # (R,) per region, or (R, N) per node
        self.shift = shift
        self.executor = check_executor(executor, accept_dask_client=True)
        self._kid_values: np.ndarray | None = None
        n_tasks = n_tasks or (_default_tasks(executor) if self.executor is not None else 1)
        if self.executor is None:
            level = 0
        elif level is None or split_level(h, 0) == 0:
            level = split_level(h, n_tasks)
        elif not 1 <= level < h.n_levels or not np.any(np.diff(h.child_ptr)[h.level_slice(level)]):
            raise InvalidInput(f"level = {level} has no region with children to cut at")
        if level == 0:  # serial, or nothing below the root to distribute
            self.executor = None
            self._serial_session()
            return
        self.split = _Split.at(h, level)
        self.subtree_of = self.split.subtree_of(h.n_regions)
        k = self.split.roots.size
        # Every region's values and window flags, here. The first write into fresh memory
        # costs far more than later ones (a batch's returned rows, 20 MB at 10⁶ leaves: 45-85
        # ms into fresh pages, 2.5 ms into touched ones), and the rows come back inside the
        # top-down fan-out: threads zero the pages while the batches are placed and the
        # tasks run bottom-up (at 10⁷ leaves 1.8 GB; the driver has cores to spare there).
        self._arrays = (np.empty(noisy.shape, np.int64), np.empty(noisy.shape, np.uint8))
        self._zeroing: list[threading.Thread] | None = [
            threading.Thread(target=_zero, args=part, name="privopt-census-zero", daemon=True)
            for part in zip(
                *(np.array_split(a, _ZEROING_THREADS) for a in self._arrays), strict=True
            )
        ]
        for thread in self._zeroing:
            thread.start()
        self._widened = np.zeros(k, dtype=np.int64)
        self._batches = _contiguous_batches(self.split.sizes(), n_tasks)
        self._cost = np.zeros(k, dtype=object)  # Σ (values − noisy)² below each subtree's root
        self._version = np.zeros(k, dtype=np.int64)
        self._doublings: list[_Doublings | None] = [None] * len(self._batches)
        self._client = _dask_client(self.executor)
        if self._client is self.executor:  # a client: its executor's futures are standard ones
            self.executor = self._client.get_executor()
        self._direct = True  # until a direct scatter fails
        self._resident: list[Any] = [None] * len(self._batches)  # batches or their futures
        U = self.split.n_upper
        upper_ptr = np.minimum(h.child_ptr[: U + 1], U - 1)  # the cut's regions lose children
        upper_shift = shift[:U] if shift is not None else np.zeros((U, noisy.shape[1]), np.uint8)
        self._upper = _kernels.CensusSession(
            upper_ptr, np.arange(1, U, dtype=np.int64), noisy[:U], delta[:U], upper_shift, G,
            max_table,
        )  # fmt: skip
        self._upper_children = list(range(len(self._upper.top)))
        top = self.split.roots.copy()  # each subtree's top-level region (a child of region 0)
        for _ in range(level - 1):
            top = h.parent[top]
        self._top_of = top - 1  # the children of region 0 are regions 1, 2, ...

    @property
    def _values(self) -> np.ndarray:
        """(R, N) int64 every region's values (zeroed before first use)."""
        return self._zeroed()[0]

    @property
    def _touch(self) -> np.ndarray:
        """(R, N) uint8 window-edge flags (zeroed before first use)."""
        return self._zeroed()[1]

    def _zeroed(self) -> tuple[np.ndarray, np.ndarray]:
        if self._zeroing is not None:  # every access waits until the threads are done
            for thread in self._zeroing:
                thread.join()
            self._zeroing = None
        return self._arrays

    def _serial_session(self) -> None:
        """The whole hierarchy in one C++ session here (no executor, or nothing to cut)."""
        h, noisy = self.h, self.noisy
        self.subtree_of = np.full(h.n_regions, -1, dtype=np.int64)
        for i, regions in enumerate(top_level_subtrees(h)):
            self.subtree_of[regions] = i
        shift = self.shift if self.shift is not None else np.zeros(noisy.shape, dtype=np.uint8)
        self._session = _kernels.CensusSession(
            h.child_ptr, h.child_idx, noisy, self.delta, shift, self.G, self.max_table
        )

    def run(self, dirty: set[int] | None) -> ForestRound:
        """One round; ``dirty`` = the subtrees (values of :attr:`subtree_of`) whose windows
        changed since the last round (None: all, as in the first round)."""
        if self.executor is None:
            k = len(self._session.top)
            return self._run_session(list(range(k)) if dirty is None else sorted(dirty))
        k = self.split.roots.size
        return self._run_executor(list(range(k)) if dirty is None else sorted(dirty))

    def _moved(self, kid_values: np.ndarray, dirty: list[int]) -> list[int]:
        """Dirty subtrees and those whose root values differ from the previous round."""
        if self._kid_values is None:
            return list(range(kid_values.shape[0]))
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
        first, stop = self._batches[b]
        batch = _Batch(self.h, self.split, first, stop, self.noisy, self.delta)
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
        first, stop = self._batches[b]
        if held is None or any(i in dirty for i in range(first, stop)):
            versions = tuple(self._version[first:stop].tolist())
            local = None
            if self.shift is not None:
                blocks = [(int(x[first]), int(x[stop])) for x in self.split.bounds]
                local = _gather(self.shift, self.split.roots[first:stop], blocks)
            held = _Doublings.encode(local, versions)
            self._doublings[b] = held
        return held

    def _tasks(
        self,
        func: Any,
        wanted: set[int],
        apply: Callable[[int, Any], None],
        root_values: Any = None,
    ) -> None:
        """Run ``func`` on every batch with a wanted subtree, calling ``apply(first subtree of
        the batch, result)`` here as each result arrives (its copy into place overlaps the
        tasks still running). ``apply`` must be safe to repeat: a fan-out that loses a worker
        runs again."""
        jobs: list[tuple[int, list]] = []
        firsts = []
        for b, (first, stop) in enumerate(self._batches):
            which = [i - first for i in range(first, stop) if i in wanted]
            if not which:
                continue
            tail = [which, self._doublings[b], self.G, self.max_table]
            if root_values is not None:
                tail.append(root_values[np.asarray(which) + first])
            jobs.append((b, tail))
            firsts.append(first)
        try:
            for j, result in _map(self.executor, func, self._placed(jobs)):
                apply(firsts[j], result)
        except Exception:
            # A worker lost with a batch on it: place the batch again (once), as the executor
            # retries a task whose worker was lost.
            if self._client is None or all(self._batch_held(b) for b, _ in jobs):
                raise
            for j, result in _map(self.executor, func, self._placed(jobs)):
                apply(firsts[j], result)

    def _run_executor(self, dirty: list[int]) -> ForestRound:
        wanted = set(dirty)
        self._version[dirty] += 1
        for b in range(len(self._batches)):
            self._doublings_of(b, wanted)
        roots = self.split.roots
        upper = self._upper

        # A top-level region's tables are merged here as soon as all its subtrees' tables are
        # in, while the tasks of the others still run; the rest after the fan-out.
        waiting = np.bincount(self._top_of[dirty], minlength=len(self._upper.top))
        merged = np.zeros(waiting.size, dtype=bool)

        def take_tables(first: int, tables: _Tables) -> None:
            which = [i for i in range(first, self._batch_stop(first)) if i in wanted]
            if tables.heads is None:
                upper.give(roots[which].tolist(), tables.lo, tables.n, tables.steps)
            else:  # decoded in C++ as they are taken
                upper.give_steps(
                    roots[which].tolist(), tables.lo, tables.n, tables.heads, tables.steps
                )
            self._widened[which] = tables.widened
            tops = self._top_of[which]
            np.subtract.at(waiting, tops, 1)
            ready = [int(c) for c in np.unique(tops) if waiting[c] == 0 and not merged[c]]
            upper.up(ready)
            merged[ready] = True

        self._tasks(_up_task, wanted, take_tables)
        upper.up(np.flatnonzero(~merged).tolist())
        status = upper.root()
        widened = int(self._widened.sum()) + upper.widened
        if status != 0:
            self._kid_values = None
            return ForestRound(int(status), self._values, self._touch, widened)
        upper.down(self._upper_children)
        U = self.split.n_upper
        self._values[:U], self._touch[:U] = upper.values, upper.touch
        kid_values = upper.values[roots]
        todo = set(self._moved(kid_values, dirty))

        def take_rows(first: int, runs: list[tuple]) -> None:
            for a, b, values, touched, costs in runs:
                self._write(first + a, first + b, values, touched)
                self._cost[first + a : first + b] = costs

        self._tasks(_down_task, todo, take_rows, kid_values)
        self._kid_values = kid_values
        cost = squared_distance(upper.values, self.noisy[:U]) + int(self._cost.sum())
        return ForestRound(0, self._values, self._touch, widened, cost)

    def _batch_stop(self, first: int) -> int:
        return next(stop for a, stop in self._batches if a == first)

    def _write(self, first: int, stop: int, values: np.ndarray, touched: np.ndarray) -> None:
        """Subtrees first .. stop − 1's rows below their roots, level by level: values and
        window-edge flags (slice copies: each level's rows are contiguous)."""
        pos = 0
        for bounds in self.split.bounds:
            a, b = int(bounds[first]), int(bounds[stop])
            self._values[a:b] = values[pos : pos + b - a]
            self._touch[a:b] = 0
            pos += b - a
        self._touch.reshape(-1)[touched] = 1


#: Threads that zero the driver's arrays of values and flags (see :class:`ForestRunner`).
_ZEROING_THREADS = 4


def _zero(*arrays: np.ndarray) -> None:
    """Fill ``arrays`` with zeros (NumPy releases the GIL while it fills)."""
    for a in arrays:
        a.fill(0)


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


def _map(executor: Any, func: Any, jobs: Iterable[list]) -> Iterator[tuple[int, Any]]:
    """Submit every job (a list of arguments), then yield (position of the job, result) as
    each task finishes."""
    futures = {executor.submit(func, *args): j for j, args in enumerate(jobs)}
    for future in as_completed(futures):
        yield futures[future], future.result()
