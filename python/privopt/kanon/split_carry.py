"""Split & Carry (paper Algorithm 1; spec §3.3–3.4 and §7.7–7.9), serial or in parallel parts.

The variance-sorted rows are cut into the IFS k-sets; chunks of ``S`` k-sets are solved as MILPs
one after the other (the last chunk may hold fewer k-sets and the remainder rows). The whole
equivalence classes that contain one of the last k rows of a chunk are carried into the next
sub-problem; every other class is final. Each sub-problem starts from "carried classes
unchanged + new k-sets as classes", which is feasible, so a time limit can always fall back to
a valid answer, and by induction ``OPT ≤ S&C ≤ IFS`` (§8.5 property 5).

**Parallel parts.** The chain of carries makes one run sequential. For large tables the sorted
order is cut into parts along the *split tree* of the lexicographic sort: each cut is placed,
near an even share of the rows, where the highest-level key changes (a change of the primary
key if one is close, else of the secondary, …), where rows on both sides differ most and a
carry is worth least. Each part is an independent Split & Carry run, solved as a task on any
``concurrent.futures.Executor`` (threads, processes, a Dask client's executor). The carry
across a cut follows the method: the classes holding a part's last k rows — those S&C would
carry into the next sub-problem — are solved again together with the classes holding the next
part's first k rows, as one more sub-problem (a *seam*) that starts from their current classes,
so it never increases the loss; a seam is submitted as soon as the parts on both sides of its
cut are done (those left when the last part is done are solved in the calling process).
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Executor, wait
from typing import NamedTuple

import numba
import numpy as np

from privopt._progress import progress_bar
from privopt._validation import check_int, check_positive
from privopt.errors import InvalidInput
from privopt.kanon.initial import initial_ksets, key_order, sort_by_keys, split_large_classes
from privopt.kanon.milp import solve_rows
from privopt.kanon.problem import KAnonProblem

__all__ = ["chunk_sizes", "cumulative_work", "split_and_carry", "split_points", "warm_up"]

#: Smallest part, in rows per unit of k(2k−1) (so that the seams of a part never overlap).
MIN_PART_FACTOR = 8
#: Rows per part by default on an executor: 80 parts at 10⁶ rows, 10 per worker on 8 workers,
#: so that the last wave of tasks is short. A count of rows, not of workers: the table depends
#: on the number of parts only, so it is the same on any cluster.
ROWS_PER_PART = 12_500
#: Work of a row that differs from the one before, in units of a repeated row's: a part's time
#: grows about this much faster with its distinct rows than with its rows (docs/performance.md,
#: k-anonymity); cuts share this estimate evenly and the largest parts are submitted first.
DISTINCT_ROW_WORK = 200.0
#: Seams solved per executor task.
SEAMS_PER_TASK = 8


def _sub_problem(x, lo, hi, coef, k, start, sub_time_limit, formulation, verbose):
    """One sub-problem: ``(labels, stats)`` with classes of < 2k rows (cut in row order)."""
    labels, info = solve_rows(
        x,
        lo,
        hi,
        coef,
        None,
        k,
        start_labels=start,
        formulation=formulation,
        time_limit=sub_time_limit,
        verbose=verbose,
    )
    stats = {
        "size": len(x),
        "objective": info.get("objective", math.nan),
        "time": info.get("solve_time", 0.0),
        "status": info["status"],
        "fallback": bool(info.get("fallback")),
    }
    return split_large_classes(labels, k), stats


@numba.njit(cache=True, nogil=True)
def _carry_and_final(sub_lab, n_last):  # pragma: no cover - compiled
    """Split a sub-problem's classes (ids ≥ 0) into carried and final ones.

    Returns ``carried`` (n,) bool, true for the rows of a class holding one of the last
    ``n_last`` rows; ``renumbered`` (n,), the classes numbered 0.. by id order within the
    carried and within the final classes separately (``np.unique``'s inverse of each subset);
    and the number of final classes.
    """
    n = sub_lab.shape[0]
    top = 0
    for i in range(n):
        top = max(top, sub_lab[i])
    is_carried = np.zeros(top + 1, dtype=np.bool_)
    present = np.zeros(top + 1, dtype=np.bool_)
    for i in range(n - n_last, n):
        is_carried[sub_lab[i]] = True
    for i in range(n):
        present[sub_lab[i]] = True
    rank = np.empty(top + 1, dtype=np.int64)
    n_final = 0
    n_carried = 0
    for v in range(top + 1):
        if present[v] and is_carried[v]:
            rank[v] = n_carried
            n_carried += 1
        elif present[v]:
            rank[v] = n_final
            n_final += 1
    carried = np.empty(n, dtype=np.bool_)
    renumbered = np.empty(n, dtype=np.int64)
    for i in range(n):
        carried[i] = is_carried[sub_lab[i]]
        renumbered[i] = rank[sub_lab[i]]
    return carried, renumbered, n_final


def chunk_sizes(x: np.ndarray, k: int, S: int, chunking: str = "runs") -> list[int]:
    """k-sets per chunk (each 1..S) over the rows of ``x`` (n, m'), already in sorted order.

    ``"paper"``: S IFS k-sets per chunk, ⌈⌊n/k⌋/S⌉ chunks (§7.7; the last may hold fewer).

    ``"runs"``: a chunk ends one k-set early (or more) rather than end inside a run of
    identical rows that could form a class of its own (≥ k rows) while fewer than k of them
    are in the chunk. Those rows could not form a class in their sub-problem, whose optimum
    then puts them with rows of the run before, in a class that is carried but cannot be
    repaired: the other copies of that run are already final. On UCI Adult ×34 (10⁶ rows, each
    distinct row ≥ 33 times, so the optimum is 0) this was all of Split & Carry's loss: 3,200
    classes of two runs, at exactly the run starts 1 or 2 rows before a chunk end. A run of
    ≥ 2k rows can always end a chunk one k-set back, so it costs no loss. Chunks are still
    whole IFS k-sets: every sub-problem starts from "carried classes + new k-sets", so
    ``S&C ≤ IFS`` and Lemma 2's bound hold.

    Examples
    --------
    >>> x = np.array([[0], [0], [0], [0], [0], [1], [1], [1], [1], [1], [2], [2], [2]])
    >>> chunk_sizes(x, 2, 3, "paper")
    [3, 3]
    >>> chunk_sizes(x, 2, 3)  # k-sets end at 2, 4, 6: the run of 1s would leave one row at 6
    [2, 3, 1]
    """
    n = len(x)
    n_ksets = n // k
    if chunking == "paper":
        return [min(S, n_ksets - t) for t in range(0, n_ksets, S)]
    same_next = np.zeros(n, dtype=bool)  # row i+1 is identical to row i
    same_next[:-1] = (x[1:] == x[:-1]).all(axis=1)
    starts = np.flatnonzero(np.r_[True, ~same_next[:-1]])
    which = np.searchsorted(starts, np.arange(n), side="right") - 1
    run_start, run_end = starts[which], np.r_[starts[1:], n][which]
    sizes, t = [], 0
    while t < n_ksets:
        j = min(S, n_ksets - t)
        if t + j < n_ksets:  # not the last chunk (it ends at row n)
            for jj in range(j, 0, -1):
                end = (t + jj) * k
                r = end - 1
                if (
                    not same_next[r]
                    or end - max(run_start[r], t * k) >= k
                    or run_end[r] - run_start[r] < k
                ):
                    j = jj
                    break
        sizes.append(j)
        t += j
    return sizes


def _chunk_loop(
    x,
    lo,
    hi,
    coef,
    k,
    S,
    sub_time_limit,
    formulation,
    chunking,
    verbose=False,
    bar=None,
    sizes=None,
):
    """Split & Carry over the rows of ``x`` (n, m'), already in sorted order; ``sizes``: its
    :func:`chunk_sizes` when the caller has them.

    Returns labels (n,) and the list of per-sub-problem stats.
    """
    n = len(x)
    ksets = initial_ksets(np.arange(n), k)
    if sizes is None:
        sizes = chunk_sizes(x, k, S, chunking)
    bounds = np.cumsum([0, *sizes])
    chunks = [ksets[a:b] for a, b in itertools.pairwise(bounds)]
    labels = np.full(n, -1, dtype=np.int64)
    next_id = 0
    carry_rows = np.empty(0, dtype=np.int64)
    carry_lab = np.empty(0, dtype=np.int64)
    stats = []
    for t, chunk in enumerate(chunks):
        # the chunk's k-sets are consecutive rows (the last of the table may hold more than k)
        first, stop = int(chunk[0][0]), int(chunk[-1][-1]) + 1
        new_rows = np.arange(first, stop)
        rows = np.concatenate([carry_rows, new_rows])
        base = int(carry_lab.max()) + 1 if carry_lab.size else 0
        new_sets = np.minimum((new_rows - first) // k, len(chunk) - 1)
        start = np.concatenate([carry_lab, base + new_sets])
        sub_lab, st = _sub_problem(
            x[rows], lo, hi, coef, k, start, sub_time_limit, formulation, verbose
        )
        stats.append(st)
        # the classes of the last k rows are carried, nothing out of the last chunk
        n_last = 0 if t == len(chunks) - 1 else k
        carried, renumbered, n_final = _carry_and_final(sub_lab.astype(np.int64), n_last)
        labels[rows[~carried]] = next_id + renumbered[~carried]
        next_id += n_final
        carry_rows = rows[carried]
        carry_lab = renumbered[carried]
        if bar is not None:
            bar.update(1)
    return labels, stats


class _PartResult(NamedTuple):
    """One part's Split & Carry: class ids (rows,) numbered 0.. within the part, its
    sub-problems' stats, its wall time (s) where it ran, and the positions in the part
    (ascending) of the classes holding its first k rows (``head``) and its last k (``tail``):
    the part's side of the seams before and after it; ``linked``: the two share a class, so
    the seams on both sides of the part are solved as one."""

    labels: np.ndarray
    stats: list
    seconds: float
    head: np.ndarray
    tail: np.ndarray
    linked: bool


def _part_task(x, lo, hi, coef, k, S, sub_time_limit, formulation, chunking, sizes=None):
    """One part, as an executor task (module level, so that processes can pickle it)."""
    t0 = time.perf_counter()
    labels, stats = _chunk_loop(
        x, lo, hi, coef, k, S, sub_time_limit, formulation, chunking, sizes=sizes
    )
    return _part_result(labels, stats, k, t0)


def _part_result(labels: np.ndarray, stats: list, k: int, t0: float) -> _PartResult:
    head = np.flatnonzero(np.isin(labels, labels[:k]))
    tail = np.flatnonzero(np.isin(labels, labels[-k:]))
    linked = np.intersect1d(head, tail).size > 0
    return _PartResult(labels, stats, time.perf_counter() - t0, head, tail, linked)


def warm_up() -> None:
    """Load the compiled kernels and the solver in this process by solving a tiny table, so
    that a worker's first part is not slowed by them (``client.run(warm_up)`` on Dask)."""
    x = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 1.0], [4.0, 1.0], [8.0, 0.0], [9.0, 1.0]])
    coef = np.full(2, 0.1)
    _chunk_loop(x, x.min(axis=0), x.max(axis=0), coef, 2, 3, None, "auto", "runs")


@numba.njit(cache=True, nogil=True)
def _key_change_levels(x, order, key_columns):  # pragma: no cover - compiled
    """For each row of ``x`` (n, m) in the sorted ``order`` (n,): the level (0 = primary) of
    the first of ``key_columns`` in which it differs from the row before, or the number of
    keys where the two rows are equal; 0 for the first row. Reads the rows in place, so the
    sorted keys are never copied."""
    n, n_keys = order.shape[0], key_columns.shape[0]
    levels = np.empty(n, dtype=np.int64)
    if n:
        levels[0] = 0
    for i in range(1, n):
        a, b = order[i - 1], order[i]
        level = n_keys
        for t in range(n_keys):
            if x[a, key_columns[t]] != x[b, key_columns[t]]:
                level = t
                break
        levels[i] = level
    return levels


def _levels_of_sorted(keys_sorted: np.ndarray) -> np.ndarray:
    """:func:`_key_change_levels` of rows already sorted, keys in key order."""
    keys_sorted = np.asarray(keys_sorted)
    n, m = keys_sorted.shape
    return _key_change_levels(keys_sorted, np.arange(n), np.arange(m))


def _work_of_levels(levels: np.ndarray, n_keys: int) -> np.ndarray:
    """:func:`cumulative_work` from the key-change levels (n,) of the sorted rows."""
    return np.cumsum(1.0 + DISTINCT_ROW_WORK * (levels < n_keys))


def cumulative_work(keys_sorted: np.ndarray) -> np.ndarray:
    """Estimated solve work of the sorted rows ``keys_sorted`` (n, m), cumulated (n,): each row
    counts 1, plus :data:`DISTINCT_ROW_WORK` when it differs from the row before. Repeated rows
    mostly form zero-loss classes, settled without a solve; the rows that differ are where the
    MILPs run."""
    return _work_of_levels(_levels_of_sorted(keys_sorted), np.shape(keys_sorted)[1])


def split_points(
    keys_sorted: np.ndarray, n_parts: int, min_rows: int, work: np.ndarray | None = None
) -> np.ndarray:
    """Cut positions (P+1,) of the sorted rows into ≤ ``n_parts`` parts along the split tree.

    ``keys_sorted`` (n, m) holds the sort keys in key order (primary first), rows sorted;
    ``work`` (n,) their :func:`cumulative_work` (computed when not given). Each cut lies within
    a quarter part of its even share of the work and, there, at the row where the
    highest-level key changes (nearest the even share among equals); parts have at least
    ``min_rows`` rows.

    Examples
    --------
    >>> keys = np.array([[0, 1], [0, 2], [0, 3], [1, 1], [1, 2], [1, 3]])
    >>> split_points(keys, 2, 2).tolist()  # the primary key changes at row 3
    [0, 3, 6]
    """
    levels = _levels_of_sorted(keys_sorted)
    return _split_at_levels(levels, np.shape(keys_sorted)[1], n_parts, min_rows, work)


def _split_at_levels(
    levels: np.ndarray, n_keys: int, n_parts: int, min_rows: int, work: np.ndarray | None
) -> np.ndarray:
    """:func:`split_points` from the key-change levels (n,) of the sorted rows."""
    n = len(levels)
    n_parts = max(1, min(n_parts, n // max(min_rows, 1)))
    if n_parts == 1:
        return np.array([0, n])
    if work is None:
        work = _work_of_levels(levels, n_keys)
    share = work[-1] / n_parts

    def position(w: float) -> int:  # the cut after the row where the cumulated work reaches w
        return min(int(np.searchsorted(work, w)) + 1, n)

    cuts = [0]
    for i in range(1, n_parts):
        target = position(i * share)
        lo = max(cuts[-1] + min_rows, position((i - 0.25) * share))
        hi = min(n - min_rows, position((i + 0.25) * share))
        if hi < lo:
            continue
        cand = np.arange(lo, hi + 1)
        score = levels[cand] * (hi - lo + 2) + np.abs(cand - target)
        cuts.append(int(cand[np.argmin(score)]))
    return np.array([*cuts, n])


def _ready_seams(parts: list[_PartResult | None]) -> list[tuple[int, int]]:
    """Seams whose parts are all done (``None``: not yet), as (first cut, last cut): cut j
    lies between parts j−1 and j; a seam spans several cuts across linked parts."""
    seams, j = [], 1
    while j < len(parts):
        before = parts[j - 1]
        if before is None or (j > 1 and before.linked):
            j += 1  # unknown yet, or inside the seam of an earlier cut
            continue
        last, part = j, parts[j]
        while part is not None and last < len(parts) - 1 and part.linked:
            last += 1
            part = parts[last]
        if part is not None:
            seams.append((j, last))
        j = last + 1
    return seams


def _seam_rows(parts: list, cuts: np.ndarray, seam: tuple[int, int]) -> tuple:
    """A seam's rows (sorted positions, ascending) and their start classes: the tail classes
    of the part before its first cut, every class at an end of the parts inside it, the head
    classes of the part after its last cut; class ids kept apart between parts."""
    first, last = seam
    pieces = [(first - 1, parts[first - 1].tail)]
    pieces += [(i, np.union1d(parts[i].head, parts[i].tail)) for i in range(first, last)]
    pieces.append((last, parts[last].head))
    rows, start, offset = [], [], 0
    for i, local in pieces:
        lab = parts[i].labels[local]
        rows.append(cuts[i] + local)
        start.append(offset + lab)
        offset += int(lab.max()) + 1
    return np.concatenate(rows), np.concatenate(start)


def _seam_batch(args: list[tuple]) -> list:
    """Seam sub-problems, one after the other (an executor task)."""
    return [_sub_problem(*a) for a in args]


def _solve_in_parts(
    sorted_columns,
    order,
    lo,
    hi,
    coef,
    k,
    S,
    sub_time_limit,
    formulation,
    cuts,
    executor,
    bar,
    chunking="runs",
    part_sizes=None,
    part_work=None,
):
    """Every part's Split & Carry, then the seams across the cuts (tasks on ``executor``, or
    here); labels (n,) of the rows in table order, the parts' stats, the seams' stats, the
    parts' times (s), the time (``time.perf_counter``) the last part was done, and the seconds
    spent submitting the parts.

    ``order`` (n,): the table's rows in sorted order; ``sorted_columns(positions)``: the MILP
    columns of the rows at those sorted positions,
    gathered for each task just before it is submitted, so that the first parts start while
    the driver prepares the next. ``part_sizes``: each part's :func:`chunk_sizes` when the
    caller has them (else each task computes its own). Tasks are submitted largest
    ``part_work`` (estimated work, default the rows) first, so that the last to start are the
    short ones and the workers finish together. On an executor the seams are submitted
    (:data:`SEAMS_PER_TASK` to a task) as soon as the parts on both sides are done, so that
    they run while the last parts do and the driver prepares them while it waits; those left
    when the last part is done are solved here. The partition does not depend on the order of
    completion.
    """
    bounds = list(itertools.pairwise(cuts))

    def part_task(i):  # the part's arguments
        a, b = bounds[i]
        sizes = () if part_sizes is None else (part_sizes[i],)
        args = (lo, hi, coef, k, S, sub_time_limit, formulation, chunking, *sizes)
        return (sorted_columns(slice(a, b)), *args)

    parts: list = [None] * len(bounds)
    seam_rows, seam_results = {}, {}
    # each part's labels put in row order as it arrives, while the driver waits for the others
    local_labels = np.empty(len(order), dtype=np.int64)
    part_of_row = np.empty(len(order), dtype=np.int64)

    def arrived(i, part):
        parts[i] = part
        rows = order[bounds[i][0] : bounds[i][1]]
        local_labels[rows] = part.labels
        part_of_row[rows] = i
        bar.update(1)

    def seam_task(seam):  # the seam's sub-problem arguments (its rows kept for the labels)
        rows, start = _seam_rows(parts, cuts, seam)
        seam_rows[seam] = rows
        return (sorted_columns(rows), lo, hi, coef, k, start, sub_time_limit, formulation, False)

    if executor is None:
        for i in range(len(bounds)):
            arrived(i, _part_task(*part_task(i)))
        parts_done, submit_seconds = time.perf_counter(), 0.0
        for seam in _ready_seams(parts):
            seam_results[seam] = _sub_problem(*seam_task(seam))
    else:
        work = [b - a for a, b in bounds] if part_work is None else part_work
        largest_first = sorted(range(len(bounds)), key=lambda i: -work[i])
        submit_start = time.perf_counter()
        pending = {executor.submit(_part_task, *part_task(i)): i for i in largest_first}
        submit_seconds = time.perf_counter() - submit_start
        waiting: list = []  # seams ready, not yet submitted
        submitted: set = set()
        batches = []
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                arrived(pending.pop(f), f.result())
            fresh = [s for s in _ready_seams(parts) if s not in submitted]
            submitted.update(fresh)
            waiting += fresh
            # a seam takes milliseconds: a few per task, not one round trip each
            while len(waiting) >= SEAMS_PER_TASK and pending:
                batch, waiting = waiting[:SEAMS_PER_TASK], waiting[SEAMS_PER_TASK:]
                future = executor.submit(_seam_batch, [seam_task(s) for s in batch])
                batches.append((batch, future))
        parts_done = time.perf_counter()
        # the seams left when the last part is done: solved here, where a round trip to a
        # worker would take longer than they do
        seam_results.update((s, _sub_problem(*seam_task(s))) for s in waiting)
        for batch, future in batches:
            seam_results.update(zip(batch, future.result(), strict=True))
    # classes numbered part after part, then seam after seam
    offsets = np.cumsum([0] + [int(part.labels.max()) + 1 for part in parts])
    labels = local_labels + offsets[part_of_row]
    offset, stats = int(offsets[-1]), [st for part in parts for st in part.stats]
    seam_stats = []
    for seam in sorted(seam_results):  # seams never share a row: any order, the same classes
        lab, st = seam_results[seam]
        labels[order[seam_rows[seam]]] = offset + lab
        offset += int(lab.max()) + 1
        seam_stats.append(st)
    return labels, stats, seam_stats, [p.seconds for p in parts], parts_done, submit_seconds


def split_and_carry(
    problem: KAnonProblem,
    *,
    S: int = 3,
    sub_time_limit: float | None = 10.0,
    time_limit: float | None = None,
    formulation: str = "auto",
    verbose: bool = False,
    progress="auto",
    executor: Executor | None = None,
    parts: int | None = None,
    chunking: str = "runs",
):
    """Split & Carry partition of ``problem``.

    Parameters
    ----------
    S : number of k-sets per chunk (paper: S ≥ 2; experiments use 3, 4, 5).
    sub_time_limit : seconds per sub-problem (early termination, §1.3; default 10, None for no
        limit); the incumbent, or the feasible start, is used when it expires.
    time_limit : total seconds, spread evenly as ``T / #sub-problems`` (the paper's rule);
        replaces ``sub_time_limit`` when given.
    formulation : MILP formulation of each sub-problem, see :func:`privopt.kanon.milp.solve_rows`.
        A sub-problem that is not proven optimal (time limit, capped column set) keeps its
        best partition, never worse than its start; ``uncertified_subproblems`` counts them.
    progress : ``True``, ``False`` or ``"auto"``: a bar on stderr over the sub-problems
        (serial) or the parts (parallel).
    executor : a :class:`concurrent.futures.Executor` (threads, processes, a Dask client's
        ``get_executor()``) that solves the parts as tasks; None runs them here.
    parts : number of parts along the split tree (default: 1 without an executor, else one per
        12,500 rows, at least 2, whatever the number of workers: the partition depends on the
        number of parts, never on where they run); each has at least 8·k(2k−1) rows.
    chunking : ``"runs"`` (default): a chunk ends a k-set or more early rather than end with
        fewer than k rows of a run of identical rows that goes on (see :func:`chunk_sizes`);
        ``"paper"``: always S k-sets, ⌈⌊n/k⌋/S⌉ sub-problems (§7.7, Table 8's counts).

    Returns
    -------
    labels : (n,) class id per row; info : dict with ``n_subproblems``, ``sub_sizes`` (list),
    ``size_counts`` (Table 8-style {size: count}), ``lemma2_bound`` = k(2k−1+S),
    ``time_limited`` and ``fallbacks`` (counts), ``sub_objectives`` (objective per
    sub-problem), ``sub_times`` (s per sub-problem), ``milp_time`` (s),
    ``restricted_subproblems``, ``uncertified_subproblems``, ``parts`` (cut positions in the
    sorted order), ``seams`` (sub-problems across cuts, included in the counts),
    ``part_times`` (s, each part's wall time where it ran) and ``stage_times`` (s of wall time
    here: ``"sort"`` = sort, cuts and chunk counts; ``"parts"`` = until the last part is done;
    ``"seams"`` = after it: the seams not yet done and the labels put back in row order;
    ``"submit"`` = handing the parts to the executor, within ``"parts"``; 0 without one).
    """
    S = check_int("S", S, minimum=1)
    if chunking not in ("runs", "paper"):
        raise InvalidInput(f"chunking must be 'runs' or 'paper', got {chunking!r}")
    k, n = problem.k, problem.n
    if parts is None:
        parts = 1 if executor is None else max(2, -(-n // ROWS_PER_PART))
    parts = check_int("parts", parts, minimum=1)
    t0 = time.perf_counter()
    key_columns = key_order(problem)
    order = sort_by_keys(problem.x, key_columns)  # variance_sort(problem)
    levels = _key_change_levels(problem.x, order, key_columns)
    work = _work_of_levels(levels, len(key_columns))
    min_rows = MIN_PART_FACTOR * k * (2 * k - 1)
    cuts = _split_at_levels(levels, len(key_columns), parts, min_rows, work)
    part_work = np.diff(np.r_[0.0, work[cuts[1:] - 1]]).tolist()
    _, lo, hi, coef, _ = problem.milp_columns(order[:0])

    def sorted_columns(positions):  # the MILP columns of the rows at these sorted positions
        return problem.milp_columns(order[positions])[0]

    serial = len(cuts) == 2
    part_sizes = None  # counted here only when needed: otherwise each task counts its own
    if serial:
        xs = sorted_columns(slice(None))
        serial_sizes = chunk_sizes(xs, k, S, chunking)
        part_sizes = [serial_sizes]
    elif time_limit is not None:
        part_sizes = [
            chunk_sizes(sorted_columns(slice(a, b)), k, S, chunking)
            for a, b in itertools.pairwise(cuts)
        ]
    if part_sizes is not None:
        n_subs = sum(map(len, part_sizes))
    if sub_time_limit is not None:
        sub_time_limit = check_positive("sub_time_limit", sub_time_limit)
    if time_limit is not None:
        sub_time_limit = check_positive("time_limit", time_limit) / (n_subs + len(cuts) - 2)
    t1 = time.perf_counter()
    with progress_bar(
        progress,
        total=n_subs if serial else len(cuts) - 1,
        desc="Split & Carry",
        unit="sub-problem" if serial else "part",
    ) as bar:
        if serial:
            lab, stats = _chunk_loop(
                xs,
                lo,
                hi,
                coef,
                k,
                S,
                sub_time_limit,
                formulation,
                chunking,
                verbose,
                bar,
                serial_sizes,
            )
            t2 = time.perf_counter()
            part_times, seam_stats, submit = [t2 - t1], [], 0.0
            labels = np.empty(n, dtype=np.int64)
            labels[order] = lab
        else:
            labels, stats, seam_stats, part_times, t2, submit = _solve_in_parts(
                sorted_columns,
                order,
                lo,
                hi,
                coef,
                k,
                S,
                sub_time_limit,
                formulation,
                cuts,
                executor,
                bar,
                chunking,
                part_sizes,
                part_work,
            )
    info = _summary(stats + seam_stats, k, S, sub_time_limit, formulation)
    stage_times = {
        "sort": t1 - t0,
        "submit": submit,
        "parts": t2 - t1,
        "seams": time.perf_counter() - t2,
    }
    info.update(
        parts=cuts.tolist(),
        seams=len(seam_stats),
        chunking=chunking,
        part_times=part_times,
        stage_times=stage_times,
    )
    return labels, info


def _summary(stats: list[dict], k: int, S: int, sub_time_limit, formulation) -> dict:
    sizes = [s["size"] for s in stats]
    return {
        "S": S,
        "n_subproblems": len(stats),
        "sub_sizes": sizes,
        "size_counts": dict(sorted(Counter(sizes).items())),
        "lemma2_bound": k * (2 * k - 1 + S),
        "time_limited": sum(s["status"] == "time_limit" for s in stats),
        "fallbacks": sum(s["fallback"] for s in stats),
        "sub_objectives": [s["objective"] for s in stats],
        "sub_times": [s["time"] for s in stats],
        "milp_time": float(sum(s["time"] for s in stats)),
        "sub_time_limit": sub_time_limit,
        "formulation": formulation,
        "restricted_subproblems": sum(s["status"] == "restricted" for s in stats),
        "uncertified_subproblems": sum(s["status"] != "optimal" for s in stats),
    }
