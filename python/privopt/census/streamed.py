"""M_H^dp for hierarchies too large for one process: every top-level subtree is
generated, measured, solved and written in its own task on a :class:`concurrent.futures.Executor`
(or a Dask client), so no process ever holds the whole hierarchy.

A round has three steps, as in :mod:`privopt.census.forest`: each task builds its subtree (from a
seeded generator), draws its noise, keeps the noisy counts in a spill folder (int32 where they
fit) and returns its root tables; the driver merges them at the root under the dummy root's
domain {G} (G is public) and sends each subtree its root values; each task then assigns its
subtree top-down from the spilled measurements and writes its released counts. Nodes on a
window edge widen and their subtrees (and those whose root values moved) run again, until
certified, as in :func:`privopt.census.solvers.tree_postprocess`.

Privacy: the noise of a subtree is drawn in its task, discrete Laplace with ε/L per level and
Δ = 2 as in :func:`privopt.census.measure_counts`; the regions of a level partition the
individuals, so the subtrees' draws compose in parallel and the ledger records ε/L per level once.
"""

from __future__ import annotations

import time
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privopt._core import census as kernels
from privopt._progress import check_progress, progress_bar
from privopt._validation import check_epsilon, check_executor, check_int
from privopt.census.forest import fits_int32
from privopt.census.noise import charge_levels, draw_level_noise
from privopt.census.solvers import (
    DEFAULT_MAX_TABLE,
    _half_widths,
    _initial_deltas,
    squared_distance,
)
from privopt.census.synthetic import household_size_distribution
from privopt.errors import InfeasibleModel, InvalidInput

__all__ = ["RegularSyntheticSource", "StreamedRelease", "m_h_dp_streamed"]


@dataclass(frozen=True)
class RegularSyntheticSource:
    """A regular synthetic hierarchy generated one top-level subtree at a time.

    The root has ``fanouts[0]`` children, each region of level ℓ has ``fanouts[ℓ]`` children.
    ``n_groups`` households are spread over the top-level regions (log-normal shares), then over
    each subtree's leaves (log-normal shares), each leaf's sizes 1..N drawn from the national
    distribution. Everything is a pure function of ``seed``, so a subtree can be rebuilt
    anywhere without the others.
    """

    fanouts: tuple[int, ...]
    n_groups: int
    N: int = 20
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.fanouts:
            raise InvalidInput("fanouts must name at least one level below the root")
        for f in self.fanouts:
            check_int("fanouts[i]", f, minimum=1)
        check_int("n_groups", self.n_groups, minimum=0)
        check_int("N", self.N, minimum=1)
        check_int("seed", self.seed, minimum=0)  # every subtree's generator is seeded from it

    @property
    def n_levels(self) -> int:
        """Number of levels, the root included."""
        return len(self.fanouts) + 1

    @property
    def n_leaves(self) -> int:
        """Number of leaves: the product of the fan-outs."""
        return int(np.prod(self.fanouts, dtype=np.int64))

    def top_groups(self) -> np.ndarray:
        """Households per top-level region, (fanouts[0],) int64; their sum is G."""
        rng = np.random.default_rng([self.seed, 0])
        share = rng.lognormal(0.0, 1.0, size=self.fanouts[0])
        return rng.multinomial(self.n_groups, share / share.sum()).astype(np.int64)

    def subtree(self, i: int, groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(child_ptr, child_idx, counts (R_i, N)) of top-level region i, breadth-first."""
        rng = np.random.default_rng([self.seed, 1, i])
        fan = self.fanouts[1:]
        sizes = _level_sizes(self.fanouts)
        ptr, idx = _structure(self)
        share = rng.lognormal(0.0, 1.0, size=sizes[-1])
        per_leaf = rng.multinomial(groups, share / share.sum())
        leaf = rng.multinomial(per_leaf, household_size_distribution(self.N)).astype(np.int64)
        levels = [leaf]
        for f in reversed(fan):  # regular: each parent sums f consecutive children
            levels.append(levels[-1].reshape(-1, f, self.N).sum(axis=1))
        return ptr, idx, np.concatenate(levels[::-1], axis=0)


@dataclass
class StreamedRelease:
    """Outcome of :func:`m_h_dp_streamed` (the counts stay in ``out_dir``, one file per subtree).

    Attributes
    ----------
    out_dir : folder with ``root.npy`` (N,) and ``subtree_<i>.npy`` (R_i, N) released counts.
    info : ``cost`` (exact Σ (x − ñ)² over all regions), ``certified``, ``status``,
        ``relative_gap``, ``rounds``, ``G``, ``regions``, ``seeded`` (always True: the noise
        is drawn from the synthetic source's seed, so that any number of workers give the same
        release; a benchmark, not a private release).
    l1_per_level : (L,) L1 error against the generated truth (evaluation only).
    ledger : the privacy-ledger entries (ε/L per level).
    timings : seconds: ``total``; ``fan_out_s`` waiting for the tasks and ``driver_s`` the
        rest (the root's measurement and solve, the loop's bookkeeping); ``up_task_s`` and
        ``down_task_s``, each task's own seconds on its worker (bottom-up and top-down passes,
        every round).
    fanouts : the source's fan-outs (what :meth:`check` reads the files by).
    """

    out_dir: Path
    info: dict
    l1_per_level: np.ndarray
    ledger: list
    timings: dict
    fanouts: tuple[int, ...] = ()

    def check(self) -> dict[str, bool]:
        """The four properties of the released counts, read back from ``out_dir`` one subtree
        at a time (as :meth:`privopt.census.CensusRelease.check`): integral, non-negative,
        consistent (every parent's row is the sum of its children's, the root's the sum of the
        subtrees' roots) and faithful (every level sums to G)."""
        if not self.fanouts:
            raise InvalidInput("this release does not record its fan-outs: nothing to check")
        fan = self.fanouts[1:]
        sizes = _level_sizes(self.fanouts)
        starts = np.concatenate([[0], np.cumsum(sizes)])
        root = np.load(self.out_dir / "root.npy")
        integral = root.dtype.kind in "iu"
        nonnegative = bool(np.all(root >= 0))
        consistent = True
        # Python ints: exact above 2^53
        level_sums = [int(root.sum(dtype=object))] + [0] * len(sizes)
        tops = np.zeros_like(root, dtype=object)
        for i in range(self.fanouts[0]):
            counts = np.load(self.out_dir / f"subtree_{i}.npy")
            integral &= counts.dtype.kind in "iu"
            nonnegative &= bool(np.all(counts >= 0))
            tops += counts[0].astype(object)
            for lev in range(len(sizes)):
                rows = counts[starts[lev] : starts[lev + 1]]
                level_sums[lev + 1] += int(rows.sum(dtype=object))
                if lev + 1 < len(sizes):
                    kids = counts[starts[lev + 1] : starts[lev + 2]]
                    sums = kids.reshape(-1, fan[lev], kids.shape[1]).sum(axis=1, dtype=object)
                    consistent &= bool(np.array_equal(sums, rows))
        consistent &= bool(np.array_equal(tops, root.astype(object)))
        G = self.info["G"]
        return {
            "integral": bool(integral),
            "nonnegative": nonnegative,
            "consistent": consistent,
            "faithful": all(total == G for total in level_sums),
        }


@dataclass
class _Widening:
    """Doublings of one subtree's windows: ``base`` for every node, plus per-node extras."""

    base: int = 0
    extra: dict[int, int] | None = None  # flat local node r·N + s -> doublings

    def array(self, shape: tuple[int, int]) -> np.ndarray:
        shift = np.full(shape, min(self.base, 63), dtype=np.uint8)
        if self.extra:
            keys = np.fromiter(self.extra, dtype=np.int64, count=len(self.extra))
            vals = np.fromiter(self.extra.values(), dtype=np.int64, count=len(self.extra))
            flat = shift.reshape(-1)
            flat[keys] = np.minimum(self.base + vals, 63)
        return shift

    def add(self, nodes: np.ndarray) -> None:
        extra = self.extra if self.extra is not None else {}
        for node in nodes.tolist():
            extra[node] = extra.get(node, 0) + 1
        self.extra = extra


def _subtree_job(args: tuple) -> tuple:
    """(ptr, idx, noisy, truth, delta, shift) of one subtree: generated and measured on first use
    (both spilled), then read back."""
    source, i, groups, epsilon, spill, G, widening = args
    path = Path(spill) / f"measured_{i}.npz"
    ptr, idx = _structure(source)
    if path.exists():
        with np.load(path) as stored:
            noisy, truth = stored["noisy"], stored["truth"]
    else:
        truth = source.subtree(i, groups)[2]
        noisy = _measure_subtree(source, i, truth, epsilon)
        # Spilled and read back as int32 when they fit (half the disk and the reading; the
        # kernels read int32 counts in place): 10⁸ leaves of 20 sizes are 32 GB as int64.
        noisy, truth = _narrowed(noisy), _narrowed(truth)
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez(tmp, noisy=noisy, truth=truth)
        tmp.replace(path)
    lam = 2 * source.n_levels / epsilon
    delta = _initial_deltas("auto", lam, G, np.diff(ptr))
    return ptr, idx, noisy, truth, delta, widening.array(noisy.shape)


def _level_sizes(fanouts: tuple[int, ...]) -> np.ndarray:
    """(L − 1,) int64 regions per level of one top-level subtree (its root first): every
    subtree of a regular hierarchy has this shape."""
    return np.cumprod([1, *fanouts[1:]]).astype(np.int64)


def _narrowed(counts: np.ndarray) -> np.ndarray:
    """``counts`` as int32 when every value fits, else as they are."""
    return counts.astype(np.int32) if fits_int32(counts) else counts


def _structure(source: RegularSyntheticSource) -> tuple[np.ndarray, np.ndarray]:
    """CSR of one top-level subtree (all have the same shape)."""
    fan = source.fanouts[1:]
    sizes = _level_sizes(source.fanouts)
    fanout = np.concatenate(
        [np.full(sizes[lev], fan[lev], dtype=np.int64) for lev in range(len(fan))]
        + [np.zeros(sizes[-1], dtype=np.int64)]
    )
    ptr = np.concatenate([[0], np.cumsum(fanout)]).astype(np.int64)
    return ptr, np.arange(1, ptr[-1] + 1, dtype=np.int64)


def _measure_subtree(
    source: RegularSyntheticSource, i: int, truth: np.ndarray, epsilon: float
) -> np.ndarray:
    """Discrete Laplace noise, Δ = 2, ε/L per level (the subtree holds levels 1..L-1)."""
    L = source.n_levels
    sizes = _level_sizes(source.fanouts)
    rng = np.random.default_rng([source.seed, 2, i])
    # draw_level_noise splits its ε over the levels it is given: L-1 of them at ε/L each.
    noise = draw_level_noise(
        [(int(k), source.N) for k in sizes], epsilon * (L - 1) / L, np.full(L - 1, 2.0), rng
    )
    return truth + np.concatenate(noise, axis=0)


def _up_task(args: tuple) -> tuple:
    """Bottom-up pass of one subtree: its root tables, root truth and the task's seconds."""
    t0 = time.perf_counter()
    G, max_table = args[5], args[7]
    ptr, idx, noisy, truth, delta, shift = _subtree_job(args[:7])
    lo, n, slopes, w = kernels.census_up(ptr, idx, noisy, delta, 0, G, max_table, shift)
    return lo, n, slopes, int(w), truth[0].astype(np.int64), time.perf_counter() - t0


def _down_task(args: tuple) -> tuple:
    """Top-down pass of one subtree, written to ``subtree_<i>.npy``: the touched nodes, the L1
    error per level, the exact cost and the task's seconds."""
    t0 = time.perf_counter()
    source, i, G, max_table, root_values, out_dir = (
        args[0],
        args[1],
        args[5],
        args[7],
        args[8],
        args[9],
    )
    ptr, idx, noisy, truth, delta, shift = _subtree_job(args[:7])
    values, touch, _ = kernels.census_down(
        ptr, idx, noisy, delta, 0, G, root_values, max_table, shift
    )
    out = Path(out_dir) / f"subtree_{i}.npy"
    tmp = out.with_name(out.name + ".tmp.npy")
    np.save(tmp, values)
    tmp.replace(out)
    sizes = _level_sizes(source.fanouts)
    level = np.repeat(np.arange(sizes.size), sizes)
    l1 = np.bincount(level, weights=np.abs(values - truth).sum(axis=1), minlength=sizes.size)
    touched = np.flatnonzero(touch.ravel())
    cost = squared_distance(values, noisy)
    return _with_ancestors(ptr, touched, source.N), l1, cost, time.perf_counter() - t0


def _with_ancestors(ptr: np.ndarray, nodes: np.ndarray, N: int) -> np.ndarray:
    """Flat nodes r·N + s and their ancestors in the subtree (unique)."""
    parent = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))  # parent of region k is [k - 1]
    regions, sizes = nodes // N, nodes % N
    out = [nodes]
    while regions.size:
        keep = regions > 0
        regions, sizes = parent[regions[keep] - 1], sizes[keep]
        out.append(regions * N + sizes)
    return np.unique(np.concatenate(out))


def _checked_streamed_arguments(
    epsilon: float, executor: Any, out_dir: str | Path
) -> tuple[float, Path, Path]:
    """(ε, output folder, its ``measurements`` spill folder, created) after validation."""
    eps = check_epsilon(epsilon)
    if executor is None:
        raise InvalidInput("m_h_dp_streamed needs an executor")
    check_executor(executor, accept_dask_client=True)
    out = Path(out_dir)
    if not out.is_dir():
        raise InvalidInput(f"out_dir {str(out)!r} is not a folder")
    spill = out / "measurements"
    spill.mkdir(exist_ok=True)
    return eps, out, spill


def m_h_dp_streamed(
    source: RegularSyntheticSource,
    epsilon: float,
    executor: Any,
    out_dir: str | Path,
    *,
    accountant: Any = None,
    max_table: int = DEFAULT_MAX_TABLE,
    progress: bool | str = "auto",
) -> StreamedRelease:
    """M_H^dp (as :func:`privopt.census.m_h_dp`) over a hierarchy generated and solved per
    top-level subtree.

    Parameters
    ----------
    source : the generator of the data (one top-level subtree at a time).
    epsilon : total ε (> 0), ε/L per level.
    executor : a :class:`concurrent.futures.Executor` or a Dask client's ``get_executor()``;
        its workers must see ``out_dir`` (a local folder for a LocalCluster).
    out_dir : existing folder for the released counts and the spilled measurements.
    accountant : optional privopt.dp.PrivacyAccountant charged ε (all or nothing).
    max_table : the most values of one node's window.
    progress : bars on stderr counting the subtrees done in each fan-out (True, False or
        "auto": when stderr is a terminal).

    Returns
    -------
    StreamedRelease (certified exact, as :func:`privopt.census.m_h_dp`); its ``check()`` reads
    the released counts back subtree by subtree.
    """
    eps, out, spill = _checked_streamed_arguments(epsilon, executor, out_dir)
    check_progress(progress)
    L, N = source.n_levels, source.N
    t0 = time.perf_counter()
    with charge_levels(
        accountant,
        eps,
        np.full(L, 2.0),
        label="census counts (streamed)",
        mechanism="discrete Laplace on group-size counts (Δ=2)",
        # The noise of every subtree is drawn from the source's seed (the same release on any
        # number of workers): a benchmark of synthetic data, reproducible, not a private release.
        seeded=True,
    ) as ledger:
        groups = source.top_groups()
        G, k = int(groups.sum()), groups.size
        widening = [_Widening() for _ in range(k)]
        root_base = int(_initial_deltas("auto", 2 * L / eps, G, np.array([k]))[0])
        root_shift = np.zeros(N, dtype=np.int64)
        tables: list[Any] = [None] * k
        results: dict[int, tuple] = {}
        kid_values: np.ndarray | None = None
        noisy_root = truth_root = None
        dirty, rounds = set(range(k)), 0
        clock: dict[str, Any] = {"fan_out_s": 0.0, "up_task_s": [], "down_task_s": []}

        def job(i: int) -> tuple:
            return (source, i, int(groups[i]), eps, str(spill), G, widening[i], max_table)

        while True:
            rounds += 1
            ups = _submit(executor, _up_task, [job(i) for i in sorted(dirty)], clock, progress)
            for i, up in zip(sorted(dirty), ups, strict=True):
                tables[i] = up
            if noisy_root is None:  # region 0's own measurement (level 0) in the driver
                truth_root = np.sum([t[4] for t in tables], axis=0)
                rng = np.random.default_rng([source.seed, 3])
                noisy_root = truth_root + draw_level_noise([(N,)], eps / L, np.array([2.0]), rng)[0]
            root_delta = _half_widths(
                np.array([root_base]), root_shift[None, :].astype(np.uint8), G
            )[0]
            status, root_values, values, root_touch, _ = kernels.census_root(
                noisy_root,
                root_delta,
                G,
                np.stack([t[0] for t in tables]),
                np.stack([t[1] for t in tables]),
                np.concatenate([t[2] for t in tables]),
                max_table,
            )
            if status != 0:  # widen everything
                if np.all(root_delta >= G):
                    raise InfeasibleModel(f"no consistent release exists; check G = {G}")
                root_shift += 1
                for w in widening:
                    w.base += 1
                dirty, kid_values = set(range(k)), None
                continue
            moved = (
                set(range(k))
                if kid_values is None
                else set(np.flatnonzero(np.any(values != kid_values, axis=1)).tolist())
            )
            todo = sorted(moved | dirty)
            downs = _submit(
                executor,
                _down_task,
                [(*job(i), values[i], str(out)) for i in todo],
                clock,
                progress,
            )
            results.update(zip(todo, downs, strict=True))
            kid_values = values
            dirty = {i for i in todo if results[i][0].size}
            sizes_hit = {int(s) for i in dirty for s in (results[i][0] % N).tolist()}
            sizes_hit |= set(np.flatnonzero(root_touch).tolist())
            if not sizes_hit:
                break
            for i in dirty:
                widening[i].add(results[i][0])
            root_shift[sorted(sizes_hit)] += 1  # region 0 is an ancestor of every touched node
        np.save(out / "root.npy", root_values)
    cost = squared_distance(root_values[None, :], noisy_root[None, :]) + sum(
        r[2] for r in results.values()
    )
    l1 = np.zeros(L)
    l1[0] = float(np.abs(root_values - truth_root).sum())
    for r in results.values():
        l1[1:] += r[1]
    regions_per_subtree = int(_level_sizes(source.fanouts).sum())
    info = {
        "cost": cost,
        "lower_bound": cost,
        "relative_gap": 0.0,
        "status": "optimal",
        "certified": True,
        "rounds": rounds,
        "G": G,
        "regions": 1 + k * regions_per_subtree,
        "seeded": True,  # the noise comes from the source's seed (see charge_levels above)
    }
    total = time.perf_counter() - t0
    timings = {"total": total, "driver_s": total - clock["fan_out_s"], **clock}
    return StreamedRelease(out, info, l1, list(ledger), timings, tuple(source.fanouts))


def _submit(
    executor: Any, func: Any, payloads: list, clock: dict[str, Any], progress: Any = "auto"
) -> list:
    """The tasks' results, in order; ``clock`` gathers the fan-out's wall seconds
    (``fan_out_s``) and each task's own seconds (``up_task_s`` / ``down_task_s``, the last
    element of its result). A bar on stderr counts the subtrees done as they finish, wherever
    they run."""
    t0 = time.perf_counter()
    futures = [executor.submit(func, p) for p in payloads]
    what = "bottom-up" if func is _up_task else "top-down"
    with progress_bar(
        progress, total=len(futures), desc=f"census streamed, {what}", unit="subtree"
    ) as bar:
        for _ in as_completed(futures):
            bar.update(1)
    results = [f.result() for f in futures]
    clock["fan_out_s"] += time.perf_counter() - t0
    key = "up_task_s" if func is _up_task else "down_task_s"
    clock[key].extend(float(r[-1]) for r in results)
    return results
