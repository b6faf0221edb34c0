"""Dask input: one map-reduce per level gives the in-memory clustering (issue item 3)."""

from __future__ import annotations

import dask.array as da
import distributed  # in the test extra: a missing install must fail, not skip
import numpy as np
import pytest
from privopt.cluster import DPM
from privopt.errors import InvalidInput


@pytest.fixture(scope="module")
def worker_processes():
    """A LocalCluster of 2 worker processes shared by this module's tests. Each test connects
    its own client, so the tests without one keep the threaded scheduler."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        yield cluster


@pytest.mark.dask
def test_local_cluster_fit_equals_in_memory_fit(eight_blobs):
    X, _ = eight_blobs
    reference = DPM(bounds=(-100, 100), epsilon=10, delta=1e-6, random_state=4).fit(X)
    # In-process workers keep the test at a few seconds (worker processes take ~10 s to start on
    # a loaded 2-core machine); the out-of-core tests below run on worker processes.
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        lazy = da.from_array(X, chunks=(2500, 1))  # column chunks are merged by the fit
        model = DPM(bounds=(-100, 100), epsilon=10, delta=1e-6, random_state=4).fit(lazy)
        labels = model.labels_.compute()
    np.testing.assert_array_equal(model.cluster_centers_, reference.cluster_centers_)
    np.testing.assert_array_equal(labels, reference.labels_)
    assert model.split_width_ == reference.split_width_
    assert model.ledger_ == reference.ledger_


def test_dask_input_is_validated():
    bad = da.from_array(np.array([[0.0, np.nan], [1.0, 2.0], [3.0, 4.0]]), chunks=(2, 2))
    with pytest.raises(InvalidInput, match="non-finite"):
        DPM(bounds=(-10, 10), epsilon=1, delta=1e-6).fit(bad)


@pytest.mark.dask
def test_worker_processes_give_the_in_memory_fit(worker_processes, eight_blobs):
    # Worker processes: the per-chunk functions and the compiled kernel travel by pickle/import,
    # as on a real cluster.
    X = eight_blobs[0][:4000]
    reference = DPM(bounds=(-100, 100), epsilon=10, delta=1e-6, random_state=5).fit(X)
    with distributed.Client(worker_processes):
        lazy = da.from_array(X, chunks=(1000, 2))
        model = DPM(bounds=(-100, 100), epsilon=10, delta=1e-6, random_state=5).fit(lazy)
        labels = model.labels_.compute()
    np.testing.assert_array_equal(model.cluster_centers_, reference.cluster_centers_)
    np.testing.assert_array_equal(labels, reference.labels_)
    assert model.ledger_ == reference.ledger_


def synth(n: int, d: int, seed: int = 42) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-100, 100, size=(64, d))
    return centres[rng.integers(0, 64, n)] + rng.standard_normal((n, d))


def assert_same_fit(lazy_model, lazy_labels, model):
    np.testing.assert_array_equal(lazy_model.cluster_centers_, model.cluster_centers_)
    np.testing.assert_array_equal(lazy_model.cluster_sizes_, model.cluster_sizes_)
    np.testing.assert_array_equal(lazy_labels, model.labels_)
    assert lazy_model.split_width_ == model.split_width_
    assert lazy_model.tree_ == model.tree_
    assert lazy_model.ledger_ == model.ledger_


@pytest.mark.slow
def test_million_points_from_chunks_equal_the_in_memory_fit():
    # 10⁶ × 10 in 16 row chunks on the default (threaded) scheduler: persisted codes and tips.
    X = synth(1_000_000, 10)
    params = dict(bounds=(-100, 100), epsilon=1.0, delta=1e-9, random_state=11)
    model = DPM(**params).fit(X)
    lazy = DPM(**params).fit(da.from_array(X, chunks=(62_500, 10)))
    assert_same_fit(lazy, lazy.labels_.compute(), model)
    assert model.n_clusters_ >= 56


@pytest.mark.dask
@pytest.mark.parametrize("persisted", [True, False])
def test_chunked_npy_on_worker_processes_gives_the_in_memory_fit(
    worker_processes, tmp_path, monkeypatch, persisted
):
    # The out-of-core path as bench/dpm_scale.py runs it, on a LocalCluster of worker processes:
    # each worker reads its row chunks from a chunked .npy stack on disk; the codes are kept in
    # worker memory (persisted) or, as for data too large for that, recomputed at every level.
    from privopt.cluster import _dask

    if not persisted:
        monkeypatch.setattr(_dask, "MAX_PERSISTED_CODES_BYTES", 0)
    X = synth(250_000, 10, seed=7)
    params = dict(bounds=(-100, 100), epsilon=1.0, delta=1e-9, random_state=3)
    model = DPM(**params).fit(X)
    da.to_npy_stack(tmp_path, da.from_array(X, chunks=(31_250, 10)))
    with distributed.Client(worker_processes):
        lazy = DPM(**params).fit(da.from_npy_stack(tmp_path))
        assert_same_fit(lazy, lazy.labels_.compute(), model)
    assert model.n_clusters_ >= 32


def test_codes_recomputed_per_level_give_the_same_fit(monkeypatch):
    # Codes too large to keep: every level recomputes them from the data and walks from the root.
    from privopt.cluster import _dask

    monkeypatch.setattr(_dask, "MAX_PERSISTED_CODES_BYTES", 0)
    X = synth(40_000, 3, seed=3)
    params = dict(bounds=(-100, 100), epsilon=2.0, delta=1e-7, random_state=2)
    model = DPM(**params).fit(X)
    lazy = DPM(**params).fit(da.from_array(X, chunks=(7_000, 3)))
    assert_same_fit(lazy, lazy.labels_.compute(), model)


@pytest.mark.dask
def test_raw_passes_read_one_chunk_per_worker_thread(eight_blobs, monkeypatch):
    # More worker threads than BATCH_CHUNKS: every pass over the raw chunks keeps all of them
    # busy (a batch per round of the cluster), and the fit is still the in-memory one.
    import dask
    from privopt.cluster import _dask

    X = eight_blobs[0]
    reference = DPM(bounds=(-100, 100), epsilon=10, delta=1e-6, random_state=6).fit(X)
    assert _dask.chunks_in_flight() == _dask.BATCH_CHUNKS  # threaded scheduler: the fixed bound
    batches: list[int] = []
    compute = dask.compute
    monkeypatch.setattr(
        dask, "compute", lambda *a, **k: (batches.append(len(a)), compute(*a, **k))[1]
    )
    workers = _dask.BATCH_CHUNKS + 2
    with (
        distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        assert _dask.chunks_in_flight() == workers
        with dask.config.set(scheduler="synchronous"):  # a client that does not compute
            assert _dask.chunks_in_flight() == _dask.BATCH_CHUNKS
        lazy = da.from_array(X, chunks=(len(X) // (3 * workers), X.shape[1]))
        model = DPM(bounds=(-100, 100), epsilon=10, delta=1e-6, random_state=6).fit(lazy)
        labels = model.labels_.compute()
    assert batches[0] == workers  # the summary pass: one chunk per worker thread
    np.testing.assert_array_equal(model.cluster_centers_, reference.cluster_centers_)
    np.testing.assert_array_equal(labels, reference.labels_)


def columns_with_ties(n: int, d: int, seed: int) -> np.ndarray:
    """Points on a coarse grid (many equal values per column, signed zeros among them), some
    outside the bounds (−100, 100) so that clipping matters."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-12, 13, size=(n, d)) * 10.0
    X[rng.random((n, d)) < 0.05] = -0.0
    return X


@pytest.mark.dask
@pytest.mark.parametrize(
    ("n", "d", "rows"),
    [(2, 1, 1), (3, 2, 2), (3, 5, 1), (5_000, 1, 700), (5_000, 4, 900), (5_000, 7, 5_000)],
)
def test_columns_sorted_on_workers_give_the_serial_gaps(worker_processes, monkeypatch, n, d, rows):
    # On a cluster each column is clipped and sorted by a worker, and the workers add the gaps
    # by ranges of rows, columns in groups (d above the cluster's 2 threads: several groups):
    # the same sums in the same order as the in-memory pass, so A is equal bit for bit.
    from privopt.cluster import _dask
    from privopt.cluster._interval import dimension_averaged_gaps

    X = columns_with_ties(n, d, seed=n + d)
    serial = dimension_averaged_gaps(X, -100.0, 100.0)
    lazy = da.from_array(X, chunks=(rows, d))
    monkeypatch.setattr(_dask, "fill_column", None)  # the driver never fetches a raw column
    with distributed.Client(worker_processes):
        gaps = _dask.DaskData(lazy, -100.0, 100.0).gaps()
    assert gaps.shape == (n - 1,)
    np.testing.assert_array_equal(gaps, serial)
    assert np.array_equal(np.signbit(gaps), np.signbit(serial))
    np.testing.assert_array_equal(lazy.compute(), X)  # the input chunks are left as they were


@pytest.mark.dask
@pytest.mark.parametrize("d", [1, 3])
def test_fit_with_worker_sorted_columns_is_the_serial_fit(worker_processes, monkeypatch, d):
    from privopt.cluster import _dask

    X = np.vstack([synth(3_000, d, seed=d), columns_with_ties(500, d, seed=d)])
    params = dict(bounds=(-100, 100), epsilon=2.0, delta=1e-7, random_state=8)
    model = DPM(**params).fit(X)
    fetched: list[int] = []
    fetch = _dask.fetch_gap_sums

    def counted(parts):
        out = fetch(parts)
        fetched.extend(x.size for x in out)
        return out

    monkeypatch.setattr(_dask, "fetch_gap_sums", counted)
    with distributed.Client(worker_processes):
        lazy = DPM(**params).fit(da.from_array(X, chunks=(600, d)))
        assert_same_fit(lazy, lazy.labels_.compute(), model)
    # the driver received the gap sums by ranges of rows, n − 1 values in all, no column
    assert sum(fetched) == len(X) - 1 and max(fetched) < len(X) // 2


@pytest.mark.dask
def test_nan_is_refused_before_any_column_is_sorted(worker_processes, monkeypatch):
    from privopt.cluster import _dask

    monkeypatch.setattr(_dask, "gaps_on_workers", None)
    bad = da.from_array(np.array([[0.0, 1.0], [np.nan, 2.0], [3.0, 4.0]]), chunks=(2, 2))
    with distributed.Client(worker_processes), pytest.raises(InvalidInput, match="non-finite"):
        DPM(bounds=(-10, 10), epsilon=1, delta=1e-6).fit(bad)
