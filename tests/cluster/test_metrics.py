"""Metrics (spec 004 §12.4) and the Synth-10d reproduction target (§11.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from privopt.cluster import DPM
from privopt.cluster import metrics as M
from privopt.errors import InvalidInput


def test_inertia_and_accuracy_by_hand():
    X = np.array([[0.0, 0.0], [2.0, 0.0], [10.0, 0.0], [11.0, 1.0]])
    centres = np.array([[1.0, 0.0], [10.0, 0.0]])
    assert M.assign(X, centres).tolist() == [0, 0, 1, 1]
    assert M.inertia(X, centres) == pytest.approx(1 + 1 + 0 + 2)
    assert M.clustering_accuracy([0, 0, 1, 1, 1], [5, 5, 7, 7, 5]) == pytest.approx(4 / 5)
    assert M.silhouette(X, centres[:1]) == -1.0
    assert M.silhouette(X, centres, sample_size=None) > 0.5


def test_normalised_kmeans_distance_formula():
    centres = np.array([[0.0, 0.0], [3.0, 4.0]])
    refs = [np.array([[0.0, 0.0]]), np.array([[0.0, 0.0], [3.0, 0.0]])]
    # run 0: mean(0, 5) = 2.5; run 1: mean(0, 4) = 2; average 2.25; diagonal (10 − 0)·√2.
    assert M.normalised_kmeans_distance(centres, refs, (0, 10)) == pytest.approx(
        2.25 / (10 * math.sqrt(2))
    )
    assert M.kmeans_distance(centres, refs) == pytest.approx((5 + 4) / 2)
    with pytest.raises(InvalidInput):
        M.normalised_kmeans_distance(centres, [np.zeros((2, 3))], (0, 10))
    with pytest.raises(InvalidInput):
        M.normalised_kmeans_distance(centres, [], (0, 10))


def test_synth_10d_reproduction_target(synth_10d, shared_data_dir):
    root = shared_data_dir
    X, y = synth_10d
    refs = M.load_reference_centres(root / "dpm" / "kmeans_reference_centres_synth_10d.npz")
    assert len(refs) == 20 and refs[0].shape == (64, 10)
    m = DPM(bounds=(-100, 100), epsilon=1.0, delta=1e5**-1.5, random_state=0).fit(X)
    assert 56 <= m.n_clusters_ <= 72
    assert M.clustering_accuracy(m.labels_, y) >= 0.95
    assert M.silhouette(X, m.cluster_centers_, sample_size=2000, random_state=0) >= 0.9
    assert M.normalised_kmeans_distance(m.cluster_centers_, refs, (-100, 100)) <= 0.03


# Shapes of the evaluation's reference KMeans centre sets (spec 004 §12.1): name -> (k values, d).
REFERENCE_SHAPES = {
    "synth_10d": ({64}, 10),
    "synth_big1": ({64}, 100),
    "mnist_embs": ({10}, 40),
    "fashion_embs": ({4, 5, 6, 8}, 40),
    "uci_gas_emissions": ({2}, 11),
    "uci_letters": (set(range(101, 129)), 16),
}


def test_shipped_reference_centres_load_and_match_the_generator(shared_data_dir):
    for name, (ks, d) in REFERENCE_SHAPES.items():
        refs = M.load_reference_centres(
            shared_data_dir / "dpm" / f"kmeans_reference_centres_{name}.npz"
        )
        assert len(refs) == 20
        assert all(r.shape[1] == d and r.shape[0] in ks for r in refs)
    # The Synth-10d references are KMeans optima of make_blobs(…, random_state=42): the true blob
    # centres are at normalised KMeans distance ≈ 0 from them (paper: KMeans row 0.00 ± 0.00).
    from sklearn.datasets import make_blobs

    _, _, true_centres = make_blobs(
        n_samples=1000,
        n_features=10,
        centers=64,
        center_box=(-100, 100),
        cluster_std=1,
        random_state=42,
        return_centers=True,
    )
    refs = M.load_reference_centres(
        shared_data_dir / "dpm" / "kmeans_reference_centres_synth_10d.npz"
    )
    assert M.normalised_kmeans_distance(true_centres, refs, (-100, 100)) < 1e-3
    with pytest.raises(InvalidInput, match="not found"):
        M.load_reference_centres(shared_data_dir / "dpm" / "missing.npz")
