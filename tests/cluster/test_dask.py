"""Dask input: one map-reduce per level gives the in-memory clustering (issue item 3)."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from privopt.cluster import DPM  # noqa: E402
from privopt.errors import InvalidInput  # noqa: E402


@pytest.mark.dask
def test_local_cluster_fit_equals_in_memory_fit(eight_blobs):
    X, _ = eight_blobs
    reference = DPM(bounds=(-100, 100), epsilon=10, delta=1e-6, random_state=4).fit(X)
    # In-process workers keep the test at a few seconds (worker processes take ~10 s to start on
    # a loaded 2-core machine); bench/dpm_scaling.py runs the same fit with worker processes.
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
def test_worker_processes_give_the_in_memory_fit(eight_blobs):
    # Worker processes: the per-chunk functions and the compiled kernel travel by pickle/import,
    # as on a real cluster.
    X = eight_blobs[0][:4000]
    reference = DPM(bounds=(-100, 100), epsilon=10, delta=1e-6, random_state=5).fit(X)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        lazy = da.from_array(X, chunks=(1000, 2))
        model = DPM(bounds=(-100, 100), epsilon=10, delta=1e-6, random_state=5).fit(lazy)
        labels = model.labels_.compute()
    np.testing.assert_array_equal(model.cluster_centers_, reference.cluster_centers_)
    np.testing.assert_array_equal(labels, reference.labels_)
    assert model.ledger_ == reference.ledger_
