"""DPM benchmarks: private clustering without a given number of clusters against DP-Lloyd
(the paper's private baseline, given k = 64) on the paper's Synth data sets, and DPM at 10⁷
points.

The paper's reference DPM (the authors' code, spec 004 §13.1) takes ~17–20 s on Synth-10d and
44–117 s on Synth-100d on 2 cores; it needs another interpreter (``bench/dpm_table2.py
--reference-python``), so its figure is recorded, not run. ``python bench/dpm_table2.py``
prints the paper's Table 2 with quality figures.
"""

from __future__ import annotations

import numpy as np
import pytest
from dpm_scale import make_data
from privopt.cluster import DPM
from privopt.cluster import metrics as M
from privopt.cluster.baselines import dp_lloyd
from sklearn.datasets import make_blobs

REFERENCE = {10: "authors' DPM ~17–20 s (spec 004 §13.1)", 100: "authors' DPM 44–117 s"}
SETTINGS = {
    "test_dpm_synth": {
        "small": [{"id": "synth10d-100k", "d": 10}],
        "paper": [{"id": "synth10d-100k", "d": 10}, {"id": "synth100d-100k", "d": 100}],
    },
    "test_dpm_scale": {
        "small": [{"id": "1e6x10", "n": 10**6}],
        "paper": [{"id": "1e7x10", "n": 10**7}],
    },
}


@pytest.fixture(scope="module")
def warm():
    """The first noise draw compiles privopt.dp's samplers (Numba): outside every timing."""
    X = np.random.default_rng(0).normal(0, 5, size=(2000, 2))
    DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    dp_lloyd(X, 2, (-100, 100), 1.0, rng=0)


def _dpm(n: int) -> DPM:
    return DPM(bounds=(-100, 100), epsilon=1.0, delta=1 / n**1.5, random_state=0)


def test_dpm_synth(against, setting, benchmark, warm):
    """Table 2's Synth rows: make_blobs(100,000 × d, 64 unit blobs in [-100, 100]^d),
    ε = 1, δ = 1/n^1.5."""
    X, y = make_blobs(
        n_samples=100_000,
        n_features=setting["d"],
        centers=64,
        center_box=(-100, 100),
        cluster_std=1,
        random_state=42,
    )
    model, lloyd = against(
        lambda: _dpm(len(X)).fit(X),
        lambda: dp_lloyd(X, 64, (-100, 100), 1.0, rng=0),
        baseline_name="DP-Lloyd (privopt.cluster.baselines, k = 64), same points",
        paper=REFERENCE[setting["d"]],
        rounds=5,
        setting=setting,
    )
    accuracy = M.clustering_accuracy(M.assign(X, model.cluster_centers_), y)
    lloyd_accuracy = M.clustering_accuracy(M.assign(X, lloyd), y)
    # Table 2: DPM 0.99-1.00 accuracy, DP-Lloyd 0.63-0.66
    assert accuracy >= 0.9 > lloyd_accuracy
    benchmark.extra_info.update(
        clusters=int(model.n_clusters_), accuracy=accuracy, baseline_accuracy=lloyd_accuracy
    )


def test_dpm_scale(against, setting, benchmark, warm):
    """DPM on n × 10 points of the Synth recipe (bench/dpm_scale.py), in memory, against
    DP-Lloyd on the same points; issue 17 measured 14 s at 10⁷ × 10 (goal ≤ 10 s)."""
    X, _ = make_data(setting["n"], 10)
    big = setting["n"] >= 10**7
    model, _ = against(
        lambda: _dpm(len(X)).fit(X),
        lambda: dp_lloyd(X, 64, (-100, 100), 1.0, rng=0),
        baseline_name="DP-Lloyd (privopt.cluster.baselines, k = 64), same points",
        paper="issue 17: 10⁷ × 10 in 14 s before, goal ≤ 10 s" if big else None,
        rounds=2 if big else 3,
        warmup=not big,
        setting=setting,
    )
    assert 48 <= model.n_clusters_ <= 64  # 64 blobs; the paper's runs find 60-64
    benchmark.extra_info.update(clusters=int(model.n_clusters_))
