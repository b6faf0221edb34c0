"""Streamed M_H^dp (issue 17 item 2): a hierarchy generated, measured and solved per top-level
subtree on an Executor gives the release the in-memory tree DP gives on the same measurements —
same optimal cost, consistent, faithful, certified, widening rounds included — spends ε all or
nothing, and on a LocalCluster of worker processes writes the serial run's arrays bit for bit."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from privopt.census import Hierarchy
from privopt.census.solvers import tree_postprocess
from privopt.census.streamed import RegularSyntheticSource, m_h_dp_streamed
from privopt.dp import PrivacyAccountant
from privopt.errors import InvalidInput, PrivacyBudgetExceeded


class OutlierSource(RegularSyntheticSource):
    """Three cells per subtree pushed 1,000 households off their parents' sums, as outlier
    measurements would be: the solve needs widening rounds (defined at module level so that
    worker processes can unpickle it)."""

    def subtree(self, i, groups):
        ptr, idx, counts = super().subtree(i, groups)
        rng = np.random.default_rng([self.seed, 9, i])
        counts[rng.integers(1, len(counts), 3), 1] += 1000
        return ptr, idx, counts


def _assemble(source, out):
    """The whole hierarchy, measurements and release in global breadth-first order."""
    k, fan = source.fanouts[0], source.fanouts[1:]
    sizes = np.cumprod([1, *fan]).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    parent, noisy, released = [-1], [], []
    stored = [np.load(out / "measurements" / f"measured_{i}.npz") for i in range(k)]
    subs = [np.load(out / f"subtree_{i}.npy") for i in range(k)]
    first = {}  # (subtree, level) -> global index of its first region at that level
    nxt = 1
    for lev in range(len(sizes)):
        for i in range(k):
            first[i, lev] = nxt
            nxt += sizes[lev]
    for lev in range(len(sizes)):
        for i in range(k):
            a, b = starts[lev], starts[lev + 1]
            if lev == 0:
                parent.append(0)
            else:
                local_parent = np.arange(sizes[lev]) // fan[lev - 1]
                parent.extend((first[i, lev - 1] + local_parent).tolist())
            noisy.append(stored[i]["noisy"][a:b])
            released.append(subs[i][a:b])
    return Hierarchy.from_parents(parent), np.vstack(noisy), np.vstack(released)


@pytest.mark.parametrize("seed", [0, 1])
def test_streamed_equals_in_memory_on_the_same_measurements(tmp_path, seed):
    source = RegularSyntheticSource((3, 4, 5), n_groups=4000, N=3, seed=seed)
    with ThreadPoolExecutor(2) as ex:
        rel = m_h_dp_streamed(source, 0.5, ex, tmp_path)
    h, _, released = _assemble(source, tmp_path)
    root = np.load(tmp_path / "root.npy")
    G = rel.info["G"]
    full = np.vstack([root, released])
    assert np.array_equal(full[0], full[1 : 1 + 3].sum(axis=0))  # consistent at the root
    for lev in range(h.n_levels):
        assert int(full[h.level_slice(lev)].sum()) == G
    sums = np.zeros_like(full)
    np.add.at(sums, h.parent[1:], full[1:])
    internal = np.diff(h.child_ptr) > 0
    assert np.array_equal(sums[internal], full[internal])  # consistent everywhere
    assert (full >= 0).all() and rel.info["certified"]
    L = source.n_levels
    assert len(rel.ledger) == L and rel.l1_per_level.shape == (L,)
    assert sum(e.epsilon for e in rel.ledger) == pytest.approx(0.5)
    # Every task's seconds are recorded: one bottom-up task per subtree and round at least,
    # and the fan-outs and the driver's own time make up the total.
    t = rel.timings
    assert len(t["up_task_s"]) >= 3 and len(t["down_task_s"]) >= 3
    assert len(t["up_task_s"]) <= 3 * rel.info["rounds"]
    assert all(s >= 0 for s in t["up_task_s"] + t["down_task_s"])
    assert t["driver_s"] >= 0 and t["fan_out_s"] + t["driver_s"] == pytest.approx(t["total"])


@pytest.mark.parametrize("kind", [RegularSyntheticSource, OutlierSource])
def test_streamed_optimum_matches_in_memory(tmp_path, monkeypatch, kind):
    # Fix the root measurement to a known value so the in-memory DP sees identical inputs.
    from privopt.census import streamed

    source = kind((2, 3, 4), n_groups=900, N=2, seed=5)
    calls = []
    real = streamed.draw_level_noise

    def root_noise(shapes, eps, sens, rng):
        out = real(shapes, eps, sens, rng)
        if len(shapes) == 1 and shapes[0] == (source.N,):
            calls.append(out[0].copy())
        return out

    monkeypatch.setattr(streamed, "draw_level_noise", root_noise)
    with ThreadPoolExecutor(2) as ex:
        rel = m_h_dp_streamed(source, 0.3, ex, tmp_path)
    h, noisy_sub, released = _assemble(source, tmp_path)
    root = np.load(tmp_path / "root.npy")
    # The root's truth is the sum of the subtree roots' truths (spilled with the measurements).
    truth_root = sum(
        np.load(tmp_path / "measurements" / f"measured_{i}.npz")["truth"][0] for i in range(2)
    )
    noisy = np.vstack([truth_root + calls[0], noisy_sub])
    counts, info = tree_postprocess(h, noisy, rel.info["G"], scale=2 * 3 / 0.3)
    assert info["cost"] == rel.info["cost"]
    assert np.array_equal(counts, np.vstack([root, released]))
    assert rel.info["certified"] and (rel.info["rounds"] > 1) == (kind is OutlierSource)


def _arrays(folder):
    """Every array the streamed run wrote under ``folder``, by relative path and key."""
    out = {}
    for path in sorted(folder.rglob("*.np[yz]")):
        name = str(path.relative_to(folder))
        if path.suffix == ".npy":
            out[name] = np.load(path)
        else:
            with np.load(path) as stored:
                out.update({f"{name}:{key}": stored[key] for key in stored.files})
    return out


@pytest.mark.dask
def test_local_cluster_with_worker_processes_equals_the_serial_run(tmp_path):
    import distributed  # in the test extra: a missing install must fail, not skip

    # Outliers force widening rounds, so the re-runs of dirty subtrees go through the cluster.
    source = OutlierSource((4, 5, 6), n_groups=20_000, N=4, seed=2)
    serial_dir, cluster_dir = tmp_path / "serial", tmp_path / "cluster"
    serial_dir.mkdir()
    cluster_dir.mkdir()
    with ThreadPoolExecutor(1) as ex:
        serial = m_h_dp_streamed(source, 0.5, ex, serial_dir)
    assert serial.info["rounds"] > 1
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote = m_h_dp_streamed(source, 0.5, client.get_executor(), cluster_dir)
    assert remote.info == serial.info
    assert np.array_equal(remote.l1_per_level, serial.l1_per_level)
    assert remote.ledger == serial.ledger
    want, got = _arrays(serial_dir), _arrays(cluster_dir)
    assert (
        sorted(got) == sorted(want) and len(want) == 1 + 3 * source.fanouts[0]
    )  # root, subtrees, noisy + truth
    for name, array in want.items():
        assert got[name].dtype == array.dtype and np.array_equal(got[name], array), name


def test_streamed_refuses_bad_arguments_and_charges_all_or_nothing(tmp_path):
    source = RegularSyntheticSource((2, 2), n_groups=50, N=2)
    with pytest.raises(InvalidInput, match="executor"):
        m_h_dp_streamed(source, 1.0, None, tmp_path)
    with pytest.raises(InvalidInput, match="folder"), ThreadPoolExecutor(1) as ex:
        m_h_dp_streamed(source, 1.0, ex, tmp_path / "absent")
    acct = PrivacyAccountant(epsilon_budget=0.5)
    with ThreadPoolExecutor(1) as ex, pytest.raises(PrivacyBudgetExceeded):
        m_h_dp_streamed(source, 1.0, ex, tmp_path, accountant=acct)
    assert acct.entries == []
    with pytest.raises(InvalidInput, match="fanouts"):
        RegularSyntheticSource((), n_groups=5)


def test_spilled_measurements_are_int32_where_they_fit(tmp_path):
    # The spill holds int32 noisy counts and truth (half the disk of int64), the release reads
    # them back in place; a value beyond int32 keeps the array int64.
    from privopt.census.streamed import _narrowed

    source = RegularSyntheticSource((3, 4, 5), n_groups=4000, N=3, seed=4)
    with ThreadPoolExecutor(2) as ex:
        m_h_dp_streamed(source, 0.5, ex, tmp_path)
    for i in range(3):
        with np.load(tmp_path / "measurements" / f"measured_{i}.npz") as stored:
            assert stored["noisy"].dtype == np.int32 and stored["truth"].dtype == np.int32
        assert np.load(tmp_path / f"subtree_{i}.npy").dtype == np.int64  # the release: int64
    edge = np.array([[2**31 - 1, -(2**31)]])
    assert _narrowed(edge).dtype == np.int32 and np.array_equal(_narrowed(edge), edge)
    for beyond in (2**31, -(2**31) - 1):
        wide = np.array([[0, beyond]])
        assert _narrowed(wide).dtype == np.int64 and np.array_equal(_narrowed(wide), wide)
