"""The census tree DP by regions (issue 17 item 2): the region-forest kernel equals the node-by-node
T^dp kernel (the heap TableMerge with traces) value for value, the closed-form split of a parent
of leaves equals its heap trace, and the decomposition by top-level subtree on an Executor — threads
or a Dask LocalCluster with worker processes — equals the serial run bit for bit."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from census_helpers import random_counts, random_hierarchy
from privopt._core import census as kernels
from privopt.census import m_c_dp, m_h_dp, measure_counts, measure_cumulative
from privopt.census.forest import ForestRunner, run_forest_round, top_level_subtrees
from privopt.census.solvers import _tdp_structure, _window_bounds, tree_postprocess
from privopt.census.synthetic import synthetic_hierarchy
from privopt.errors import InvalidInput


def _instance(rng):
    h = random_hierarchy(rng, int(rng.integers(1, 5)), int(rng.integers(1, 6)))
    N = int(rng.integers(1, 4))
    data = random_counts(rng, h, N, int(rng.integers(0, 30)))
    amp = int(rng.choice([1, 3, 10, 100]))
    noisy = data.counts + rng.integers(-amp, amp + 1, size=data.counts.shape)
    return h, noisy, data.G


def _node_kernel(h, noisy, delta0, G):
    """The generic T^dp kernel (one node per region and size, heap merges and traces)."""
    R, N = noisy.shape
    ptr, idx = _tdp_structure(h, N)
    flat = noisy.T.ravel()
    lo, hi = _window_bounds(flat, delta0, G)
    weight = np.r_[np.ones(flat.size, dtype=np.int64), 0]
    status, _, _, values, widened = kernels.tree_dp(
        ptr, idx, np.r_[flat, 0], weight, np.r_[lo, G], np.r_[hi, G], flat.size, True
    )
    touch = ((flat <= lo) & (lo > 0)) | ((flat >= hi) & (hi < G))
    if status == 0:
        v = values[:-1]
        touch = ((v <= lo) & (lo > 0)) | ((v >= hi) & (hi < G))
        return status, v.reshape(N, R).T, touch.reshape(N, R).T, widened
    return status, None, None, widened


def test_region_kernel_equals_node_kernel():
    rng = np.random.default_rng(0)
    for _ in range(400):
        h, noisy, G = _instance(rng)
        d0 = int(rng.integers(1, 12))
        status, values, touch, widened = _node_kernel(h, noisy, d0, G)
        run = run_forest_round(h, noisy, None, d0, G, 1 << 27)
        assert run.status == status
        if status == 0:
            assert np.array_equal(run.values, values)
            assert np.array_equal(run.touch.astype(bool), touch)
            assert run.widened == widened


def test_leaf_split_equals_heap_trace_on_wide_parents():
    # A parent of 200 leaves with gaps between the leaves' slope ranges (tiny windows) and
    # ties: the closed-form split must pick the same children as the heap, in child order.
    rng = np.random.default_rng(1)
    h = random_hierarchy(rng, 2, 1)
    from privopt.census import Hierarchy

    h = Hierarchy.from_parents([-1] + [0] * 200)
    for _ in range(30):
        noisy = rng.integers(-5, 8, size=(201, 2))
        noisy[0] = rng.integers(0, 400, size=2)
        G = int(rng.integers(50, 400))
        d0 = int(rng.integers(1, 6))
        status, values, _, _ = _node_kernel(h, noisy, d0, G)
        run = run_forest_round(h, noisy, None, d0, G, 1 << 27)
        assert run.status == status
        if status == 0:
            assert np.array_equal(run.values, values)


@pytest.mark.parametrize("kind", ["uniform", "region", "node"])
def test_decomposed_equals_serial_on_threads(kind):
    rng = np.random.default_rng(2)
    with ThreadPoolExecutor(2) as ex:
        for _ in range(150):
            h, noisy, G = _instance(rng)
            delta = {
                "uniform": None,
                "region": rng.integers(1, 12, size=h.n_regions),
                "node": rng.integers(1, 12, size=noisy.shape),
            }[kind]
            a = run_forest_round(h, noisy, delta, 5, G, 1 << 27)
            b = run_forest_round(
                h, noisy, delta, 5, G, 1 << 27, executor=ex, n_tasks=int(rng.integers(1, 5))
            )
            assert a.status == b.status
            if a.status == 0:
                assert np.array_equal(a.values, b.values)
                assert np.array_equal(a.touch, b.touch)
                assert a.widened == b.widened


def test_a_slow_zeroing_thread_changes_nothing(monkeypatch):
    """The runner's arrays of values and flags are zeroed by a thread beside the bottom-up
    fan-out; every use waits for it. With the thread held back until the tasks are done, a
    write that did not wait would be zeroed over: the rounds still equal the serial ones."""
    import threading

    from privopt.census import forest

    started, zero = threading.Event(), forest._zero

    def late_zero(*arrays):
        started.wait(5.0)  # until the first task has run
        zero(*arrays)

    def up_task(*args):
        started.set()
        return forest_up(*args)

    forest_up = forest._up_task
    monkeypatch.setattr(forest, "_zero", late_zero)
    monkeypatch.setattr(forest, "_up_task", up_task)
    rng = np.random.default_rng(5)
    with ThreadPoolExecutor(2) as ex:
        for _ in range(20):
            h, noisy, G = _instance(rng)
            a = run_forest_round(h, noisy, None, 5, G, 1 << 27)
            b = run_forest_round(h, noisy, None, 5, G, 1 << 27, executor=ex, n_tasks=3)
            assert a.status == b.status
            if a.status == 0:
                assert np.array_equal(a.values, b.values)
                assert np.array_equal(a.touch, b.touch)


def test_top_level_subtrees_partition_the_regions():
    data = synthetic_hierarchy([3, 4, 2], 500, N=2, seed=0)
    h = data.hierarchy
    parts = top_level_subtrees(h)
    assert len(parts) == 3
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(1, h.n_regions))
    for part in parts:  # breadth-first within the subtree: parents before children
        pos = {int(r): i for i, r in enumerate(part)}
        assert all(pos[int(h.parent[r])] < pos[int(r)] for r in part[1:])


def test_mechanisms_take_an_executor_and_reject_other_objects():
    data = synthetic_hierarchy([4, 5], 2000, N=3, seed=1)
    m = measure_counts(data, 0.5, rng=0)
    c = measure_cumulative(data, 0.5, rng=0)
    with ThreadPoolExecutor(2) as ex:
        assert np.array_equal(
            m_h_dp(data, measurements=m).counts,
            m_h_dp(data, measurements=m, executor=ex).counts,
        )
        assert np.array_equal(
            m_c_dp(data, measurements=c).counts,
            m_c_dp(data, measurements=c, executor=ex).counts,
        )
    with pytest.raises(InvalidInput, match="executor"):
        m_h_dp(data, measurements=m, executor="threads")


@pytest.mark.parametrize("row", ["root", "cut", "leaf"])
def test_tasks_refuse_noisy_values_beyond_the_range(row):
    # On an executor the driver makes no pass over the counts: its session checks the rows
    # above the cut, each task its own rows; a value beyond 2^61 anywhere is refused by name.
    data = synthetic_hierarchy([3, 4, 5], 600, N=2, seed=0)
    h = data.hierarchy
    noisy = measure_counts(data, 1.0, rng=0).noisy.copy()
    noisy[{"root": 0, "cut": h.level_slice(2).start + 1, "leaf": h.n_regions - 1}[row], 1] = 2**62
    with ThreadPoolExecutor(2) as ex, pytest.raises(InvalidInput, match="noisy value"):
        tree_postprocess(h, noisy, data.G, scale=2.0, executor=ex, n_tasks=2)


@pytest.mark.dask
def test_local_cluster_with_worker_processes_equals_serial():
    import distributed  # in the test extra: a missing install must fail, not skip

    data = synthetic_hierarchy([6, 8, 10], 50_000, N=4, seed=3)
    m = measure_counts(data, 0.3, rng=1)
    h, G, lam = data.hierarchy, data.G, float(m.scale[0])
    # Noise 50λ off in a few cells forces per-node widening rounds through the executor too.
    noisy = m.noisy.copy()
    noisy[np.random.default_rng(0).integers(0, h.n_regions, 20), 1] += int(50 * lam)
    serial, info = tree_postprocess(h, noisy, G, scale=lam)
    assert info["rounds"] > 1
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote, rinfo = tree_postprocess(h, noisy, G, scale=lam, executor=client.get_executor())
    assert np.array_equal(serial, remote)
    assert rinfo == info


def _cut_levels(h):
    """The levels an executor's runner may cut at: those with a region that has children."""
    fanout = np.diff(h.child_ptr)
    return [lev for lev in range(1, h.n_levels) if fanout[h.level_slice(lev)].any()]


def _widening_rounds(rng, executor, n_instances, per_node=False, instance=None, any_level=False):
    """Random hierarchies, each through 4 rounds of a ForestRunner that widens random nodes
    between rounds; every round must equal a from-scratch serial solve of the same windows, the
    runner re-solving only the dirty subtrees (and those whose root values moved). With
    ``any_level`` the executor's runner cuts the hierarchy at a random level (not the one it
    would choose)."""
    from privopt.census.forest import ForestRunner
    from privopt.census.solvers import _half_widths

    for _ in range(n_instances):
        h, noisy, G = (instance or _instance)(rng)
        N = noisy.shape[1]
        levels = _cut_levels(h)
        level = int(rng.choice(levels)) if any_level and executor and levels else None
        if per_node:  # windows per node, no doublings (run_forest_round's per-node form)
            base = rng.integers(1, 6, size=noisy.shape).astype(np.int64)
            got = ForestRunner(h, noisy, base, None, G, 1 << 27, executor, 3, level).run(None)
            want = run_forest_round(h, noisy, base, 0, G, 1 << 27)
            assert got.status == want.status
            if got.status == 0:
                assert np.array_equal(got.values, want.values)
                assert np.array_equal(got.touch, want.touch)
            continue
        base = rng.integers(1, 6, size=h.n_regions).astype(np.int64)
        shift = np.zeros(noisy.shape, dtype=np.uint8)
        n_tasks = int(rng.integers(1, 4))
        runner = ForestRunner(h, noisy, base, shift, G, 1 << 27, executor, n_tasks, level)
        if level is not None:
            assert runner.split.level == level
        dirty = None
        for _ in range(4):
            got = runner.run(dirty)
            want = run_forest_round(h, noisy, _half_widths(base, shift, G), 0, G, 1 << 27)
            assert got.status == want.status
            if got.status == 0:
                assert np.array_equal(got.values, want.values)
                assert np.array_equal(got.touch, want.touch)
                assert got.widened == want.widened
                if got.cost is not None:  # summed per subtree by the tasks
                    assert got.cost == int(((want.values - noisy) ** 2).sum())
            picks = rng.integers(0, h.n_regions, size=int(rng.integers(1, 4)))
            shift[picks, rng.integers(0, N, size=picks.size)] += 1
            if rng.random() < 0.2:  # now and then every window at once (a dense update)
                shift += 1
                picks = np.arange(h.n_regions)
            dirty = set(runner.subtree_of[picks].tolist()) - {-1}
            if got.status != 0:
                dirty = None


@pytest.mark.parametrize("kind", ["serial", "threads", "processes"])
def test_incremental_rounds_equal_a_fresh_solve(kind):
    # Threads share each batch (and its session) across rounds; worker processes receive a
    # copy per task without the session, so they rebuild it: both must give the serial result.
    from concurrent.futures import ProcessPoolExecutor

    rng = np.random.default_rng(11)
    if kind == "serial":
        _widening_rounds(rng, None, 60)
        return
    pool = ThreadPoolExecutor if kind == "threads" else ProcessPoolExecutor
    with pool(2) as ex:
        _widening_rounds(rng, ex, 60 if kind == "threads" else 15)
        _widening_rounds(rng, ex, 30 if kind == "threads" else 5, per_node=True)


def _uneven_instance(rng):
    """A hierarchy of 3 to 5 levels whose regions have 1 to 6 children (subtrees of very
    different sizes; a chain of single children now and then), noise large enough to widen."""
    chain = rng.random() < 0.25
    h = random_hierarchy(rng, int(rng.integers(3, 6)), 1 if chain else int(rng.integers(2, 7)))
    N = int(rng.integers(1, 4))
    data = random_counts(rng, h, N, int(rng.integers(0, 30)))
    amp = int(rng.choice([1, 3, 10, 100]))
    return h, data.counts + rng.integers(-amp, amp + 1, size=data.counts.shape), data.G


def test_any_cut_level_equals_serial_through_widening_rounds():
    # The executor's runner cut at any level with children (the root's children, or deeper: a
    # root step over many subtrees), on hierarchies with uneven subtrees, chains of single
    # children and fewer subtrees than tasks: each widening round equals the serial one.
    rng = np.random.default_rng(21)
    with ThreadPoolExecutor(2) as ex:
        _widening_rounds(rng, ex, 60, instance=_uneven_instance, any_level=True)
        _widening_rounds(rng, ex, 20, per_node=True, instance=_uneven_instance, any_level=True)


def test_the_cut_level_balances_the_tasks():
    from privopt.census.forest import split_level

    h = synthetic_hierarchy([3, 4, 50], 2000, N=1, seed=0).hierarchy
    assert split_level(h, 1) == 2  # 12 subtrees ≥ 4 per task; the 3 top-level ones are not
    assert split_level(h, 2) == 2
    assert split_level(h, 100) == 2  # no level has 400: the one with the most
    noisy = np.zeros((h.n_regions, 1), dtype=np.int64)
    with ThreadPoolExecutor(2) as ex:
        runner = ForestRunner(
            h, noisy, np.ones(h.n_regions, dtype=np.int64), None, 0, 1 << 27, ex, 3
        )
        sizes = [b - a for a, b in runner._batches]
        assert runner.split.level == 2 and sum(sizes) == 12 and max(sizes) - min(sizes) <= 1
        with pytest.raises(InvalidInput, match="level = 3"):
            ForestRunner(
                h, noisy, np.ones(h.n_regions, dtype=np.int64), None, 0, 1 << 27, ex, 3, level=3
            )


@pytest.mark.dask
def test_widening_rounds_on_a_local_cluster_equal_a_fresh_solve():
    # Batches stay on the workers between rounds (scattered once, their sessions kept): random
    # hierarchies and widenings, dense and sparse, give the serial rounds bit for bit.
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        _widening_rounds(np.random.default_rng(12), client.get_executor(), 25)
        _widening_rounds(np.random.default_rng(13), client, 10, per_node=True)
        _widening_rounds(np.random.default_rng(14), client, 10, None, _uneven_instance, True)


@pytest.mark.dask
def test_a_lost_worker_is_replaced_between_rounds():
    # The worker holding a batch dies between rounds: the batch is placed again and the next
    # round still equals the serial one.
    import distributed
    from privopt.census.forest import ForestRunner
    from privopt.census.solvers import _half_widths

    data = synthetic_hierarchy([4, 5, 6], 20_000, N=3, seed=4)
    h, G = data.hierarchy, data.G
    noisy = measure_counts(data, 0.5, rng=2).noisy
    base = np.full(h.n_regions, 40, dtype=np.int64)
    shift = np.zeros(noisy.shape, dtype=np.uint8)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        runner = ForestRunner(h, noisy, base, shift, G, 1 << 27, client.get_executor(), 4)
        runner.run(None)
        victim = next(iter(client.who_has(runner._resident).values()))[0]
        client.restart_workers([victim])
        assert any(f.status != "finished" for f in runner._resident)  # batches were lost
        shift[5, 1] += 1
        got = runner.run(None)
    want = run_forest_round(h, noisy, _half_widths(base, shift, G), 0, G, 1 << 27)
    assert got.status == want.status == 0
    assert np.array_equal(got.values, want.values)


def test_rounds_send_only_what_changed(monkeypatch):
    # After the first round a task carries no counts: its batch is already where it runs, and a
    # widening round sends the non-zero doublings and the root values only; results come back
    # as int32 values (G < 2^31) and the touched nodes' indices.
    from privopt.census import forest
    from privopt.census.forest import ForestRunner

    data = synthetic_hierarchy([4, 6, 8], 20_000, N=5, seed=6)
    h, G = data.hierarchy, data.G
    noisy = measure_counts(data, 0.5, rng=3).noisy
    shift = np.zeros(noisy.shape, dtype=np.uint8)
    sent: list[list] = []
    returned: list = []
    real_map = forest._map

    def recording_map(executor, func, jobs):
        jobs = list(jobs)
        sent.append([job[1:] for job in jobs])  # job[0] is the batch
        out = list(real_map(executor, func, jobs))
        returned.append([result for _, result in out])
        return out

    monkeypatch.setattr(forest, "_map", recording_map)
    with ThreadPoolExecutor(2) as ex:
        runner = ForestRunner(h, noisy, np.full(h.n_regions, 30), shift, G, 1 << 27, ex, 3)
        batches = [runner._batch(b) for b in range(len(runner._batches))]
        runner.run(None)
        shift[[7, 9], [1, 2]] += 1
        runner.run(set(runner.subtree_of[[7, 9]].tolist()))
        assert [runner._batch(b) for b in range(len(batches))] == batches  # none rebuilt

    def array_bytes(x):
        if isinstance(x, np.ndarray):
            return x.nbytes
        if isinstance(x, (list, tuple)):
            return sum(array_bytes(y) for y in x)
        if hasattr(x, "index"):  # doublings
            return array_bytes([x.index, x.value])
        return 0

    per_round_bound = 2 * (noisy.shape[1] * 8 + 9 * 2) * runner.split.roots.size
    assert sum(array_bytes(jobs) for jobs in sent[2:]) <= per_round_bound
    for out in returned[1::2]:  # top-down fan-outs
        for per_batch in out:
            for _, _, values, touched, costs in per_batch:
                assert values.dtype == np.int32 and touched.dtype == np.int64
                assert all(isinstance(cost, int) for cost in costs)


def test_root_tables_travel_as_small_steps():
    # A batch's root tables go back to the driver as one- or two-byte slope steps with each
    # table's first slope apart; decoded, they are the session's slopes exactly. A step beyond
    # 16 bits (a given table with a large jump under a chain) sends the slopes as they are.
    from privopt.census.forest import _Tables, _up_task

    rng = np.random.default_rng(5)
    with ThreadPoolExecutor(2) as ex:
        for _ in range(30):
            h, noisy, G = _uneven_instance(rng)
            base = rng.integers(1, 40, size=h.n_regions).astype(np.int64)
            runner = ForestRunner(h, noisy, base, None, G, 1 << 27, ex, 2)
            if runner.executor is None:
                continue
            batch = runner._batch(0)
            which = list(range(int(batch.child_ptr[1])))
            runner._doublings_of(0, set(range(runner.split.roots.size)))
            packed = _up_task(batch, which, runner._doublings[0], G, 1 << 27)
            lo, n, slopes, widened = batch._session.packed_tables(which)
            assert packed.heads is not None and packed.steps.itemsize <= 2
            assert np.array_equal(packed.slopes(), slopes)
            assert np.array_equal(packed.lo, lo) and np.array_equal(packed.n, n)
            assert np.array_equal(packed.widened, widened)
    ptr, idx = np.array([0, 1, 2, 2]), np.array([1, 2])
    session = kernels.CensusSession(
        ptr, idx, np.zeros((3, 1), np.int64), np.full(3, 5), np.zeros((3, 1), np.uint8), 9
    )
    session.give([2], np.array([[0]]), np.array([[3]]), np.array([-(10**6), 10**6]))
    session.up([0])
    assert session.packed_steps([0])[4] is None
    one = np.array([[0]])
    with pytest.raises(ValueError, match="uint8 or uint16"):
        session.give_steps([2], one, np.array([[3]]), np.array([5]), np.array([0, 1]))
    with pytest.raises(ValueError, match="left over"):
        session.give_steps([2], one, np.array([[3]]), np.array([5]), np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="not a leaf"):
        session.give_steps([1], one, np.array([[3]]), np.array([5]), np.zeros(2, np.uint8))
    session.give_steps([2], one, np.array([[3]]), np.array([5]), np.array([0, 7], np.uint16))
    session.up([0])  # region 1 now merges the table with slopes 5, 12
    lo, n, slopes, _ = session.packed_tables([0])
    assert np.array_equal(_Tables(lo, n, np.zeros(1), slopes, None).slopes(), slopes)


def test_a_session_reads_int32_counts_as_their_int64_values():
    # The kernel reads C-contiguous int32 counts in place; every round's values, window-edge
    # flags, widenings and root tables equal those of the same counts as int64, including the
    # extremes of int32 (clipped to [0, G] for the windows, exact in the squared terms).
    rng = np.random.default_rng(8)
    for trial in range(60):
        h, noisy, G = _uneven_instance(rng)
        if trial % 5 == 0:
            noisy[rng.integers(0, h.n_regions), 0] = rng.choice([2**31 - 1, -(2**31)])
        delta = rng.integers(1, 40, size=h.n_regions).astype(np.int64)
        shift = rng.integers(0, 3, size=noisy.shape).astype(np.uint8)
        sessions = [
            kernels.CensusSession(h.child_ptr, h.child_idx, counts, delta, shift, G, 1 << 27)
            for counts in (noisy.astype(np.int64), noisy.astype(np.int32))
        ]
        statuses = []
        for s in sessions:
            every = list(range(len(s.top)))
            s.up(every)
            statuses.append(s.root())
            if statuses[-1] == 0:
                s.down(every)
        wide, narrow = sessions
        assert statuses[0] == statuses[1]
        assert wide.widened == narrow.widened
        if statuses[0] != 0:
            continue
        assert np.array_equal(wide.values, narrow.values)
        assert np.array_equal(wide.touch, narrow.touch)
        assert wide.widened == narrow.widened
        for i in range(len(wide.top)):
            for a, b in zip(wide.tables(i), narrow.tables(i), strict=True):
                assert np.array_equal(a, b)


def test_batches_ship_int32_counts_where_they_fit():
    # A batch whose counts fit in int32 ships them as int32 (half the bytes placed on a worker);
    # one holding a value beyond int32 keeps int64; the release equals the serial one bit for
    # bit through its widening rounds.
    data = synthetic_hierarchy([4, 6, 8], 20_000, N=3, seed=2)
    h, G = data.hierarchy, data.G
    noisy = measure_counts(data, 0.5, rng=1).noisy.copy()
    noisy[h.n_regions - 1, 2] = 2**31  # one past int32's largest value, in the last batch
    noisy[h.level_slice(3).start, 0] = 2**31 - 1  # int32's largest, in the first batch
    noisy[h.level_slice(3).start + 1, 1] = -(2**31)  # int32's smallest
    with ThreadPoolExecutor(2) as ex:
        runner = ForestRunner(h, noisy, np.full(h.n_regions, 25), None, G, 1 << 27, ex, 4)
        batches = [runner._batch(b) for b in range(len(runner._batches))]
        assert [b.noisy.dtype for b in batches[:-1]] == [np.dtype(np.int32)] * (len(batches) - 1)
        assert batches[-1].noisy.dtype == np.dtype(np.int64)
        serial, info = tree_postprocess(h, noisy, G, scale=2.0)
        parallel, pinfo = tree_postprocess(h, noisy, G, scale=2.0, executor=ex, n_tasks=4)
    assert np.array_equal(parallel, serial)
    assert pinfo["cost"] == info["cost"] and pinfo["rounds"] == info["rounds"]


def test_the_subtree_kernels_read_int32_counts_as_their_int64_values():
    # census_dp, census_up and census_down take int32 counts in place (the streamed release's
    # spill) with the results of the same counts as int64.
    rng = np.random.default_rng(12)
    for _ in range(40):
        h, noisy, G = _uneven_instance(rng)
        delta = rng.integers(1, 30, size=h.n_regions).astype(np.int64)
        wide, narrow = noisy.astype(np.int64), noisy.astype(np.int32)
        a = kernels.census_dp(h.child_ptr, h.child_idx, wide, delta, 0, G, 1 << 27)
        b = kernels.census_dp(h.child_ptr, h.child_idx, narrow, delta, 0, G, 1 << 27)
        assert a[0] == b[0] and a[3:] == b[3:]
        if a[0] == 0:
            assert np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])
        up_a = kernels.census_up(h.child_ptr, h.child_idx, wide, delta, 0, G, 1 << 27)
        up_b = kernels.census_up(h.child_ptr, h.child_idx, narrow, delta, 0, G, 1 << 27)
        assert all(np.array_equal(x, y) for x, y in zip(up_a, up_b, strict=True))
        if a[0] == 0:
            root = a[1][0]
            down_a = kernels.census_down(h.child_ptr, h.child_idx, wide, delta, 0, G, root)
            down_b = kernels.census_down(h.child_ptr, h.child_idx, narrow, delta, 0, G, root)
            assert all(np.array_equal(x, y) for x, y in zip(down_a, down_b, strict=True))


def test_a_session_writes_into_lent_buffers_as_into_its_own():
    # Buffers full of another batch's leftovers: a session's values and window-edge flags over
    # every subtree it ran down equal those of a session with buffers of its own; buffers of
    # the wrong shape, read-only or strided are refused.
    rng = np.random.default_rng(31)
    for _ in range(40):
        h, noisy, G = _uneven_instance(rng)
        delta = rng.integers(1, 40, size=h.n_regions).astype(np.int64)
        shift = np.zeros(noisy.shape, dtype=np.uint8)
        own, lent = (
            kernels.CensusSession(h.child_ptr, h.child_idx, noisy, delta, shift, G, 1 << 27)
            for _ in range(2)
        )
        values = rng.integers(-(2**62), 2**62, size=noisy.shape)
        touch = rng.integers(0, 256, size=noisy.shape).astype(np.uint8)
        lent.use_buffers(values, touch)
        every = list(range(len(own.top)))
        statuses = []
        for s in (own, lent):
            s.up(every)
            statuses.append(s.root())
            if statuses[-1] == 0:
                s.down(every)
        assert statuses[0] == statuses[1]
        if statuses[0] == 0:
            assert lent.values is not None and np.shares_memory(lent.values, values)
            assert np.array_equal(lent.values, own.values)
            assert np.array_equal(lent.touch, own.touch)
    session = kernels.CensusSession(h.child_ptr, h.child_idx, noisy, delta, shift, G, 1 << 27)
    R, N = noisy.shape
    wide = np.zeros((R, 2 * N), dtype=np.int64)
    read_only = np.zeros((R, N), dtype=np.uint8)
    read_only.flags.writeable = False
    for bad in (
        (np.zeros((R + 1, N), np.int64), np.zeros((R + 1, N), np.uint8)),
        (np.zeros((R, N), np.int64), read_only),
        (wide[:, ::2], np.zeros((R, N), np.uint8)),
    ):
        with pytest.raises(ValueError, match="writable C-contiguous"):
            session.use_buffers(*bad)


def test_top_down_tasks_share_one_thread_buffers_until_their_batches_go():
    # A thread's top-down tasks write into the same memory (only the first pays for memory new
    # to the process); a larger batch gets new buffers; nothing holds them once the sessions
    # they were lent to are gone. One thread through widening rounds equals the serial run.
    import gc

    from privopt.census import forest

    values, touch = forest._lent_buffers((50, 3))
    again = forest._lent_buffers((40, 3))
    assert again[0].shape == (40, 3) and np.shares_memory(values, again[0])
    assert np.shares_memory(touch, again[1])
    larger = forest._lent_buffers((60, 3))
    assert not np.shares_memory(values, larger[0])
    assert touch.dtype == np.uint8 and values.dtype == np.int64
    del values, touch, again, larger
    gc.collect()
    assert forest._lent.values() is None and forest._lent.touch() is None
    with ThreadPoolExecutor(1) as ex:
        _widening_rounds(np.random.default_rng(32), ex, 40, instance=_uneven_instance)
