"""Demo section of DPM: generated blobs and scikit-learn's bundled digits (no downloads)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits, make_blobs

from privopt.cluster import DPM
from privopt.cluster._plot import projection_plot
from privopt.cluster.metrics import clustering_accuracy, silhouette
from privopt.cluster.release import ClusteringRelease
from privopt.report import Section, markdown_table

__all__ = ["demo_section", "example"]


def demo_section(out_dir: Path, seed: int) -> Section:
    """DPM on 8 separated 2-D blobs (ε = 1 and 10) and on digits (1797 × 64, ε = 10 and 100)."""
    out_dir = Path(out_dir)
    centres = np.array([(x, y) for x in (-60, -20, 20, 60) for y in (-40, 40)], dtype=float)
    blobs, y_blobs = make_blobs(16000, centers=centres, cluster_std=2.0, random_state=seed)
    digits, y_digits = load_digits(return_X_y=True)
    runs = [
        ("8 blobs (16000 × 2)", blobs, y_blobs, (-100, 100), 1.0),
        ("8 blobs (16000 × 2)", blobs, y_blobs, (-100, 100), 10.0),
        ("digits (1797 × 64)", digits, y_digits, (0, 16), 10.0),
        ("digits (1797 × 64)", digits, y_digits, (0, 16), 100.0),
    ]
    rows, figures = [], []
    for name, X, y, bounds, eps in runs:
        start = time.perf_counter()
        model = DPM(bounds=bounds, epsilon=eps, delta=1.0 / len(X) ** 1.5, random_state=seed).fit(X)
        elapsed = time.perf_counter() - start
        rows.append(
            [
                name,
                eps,
                model.n_clusters_,
                len(np.unique(y)),
                round(clustering_accuracy(model.labels_, y), 3),
                round(
                    silhouette(X, model.cluster_centers_, sample_size=2000, random_state=seed), 3
                ),
                round(elapsed, 3),
            ]
        )
        if eps in (10.0, 100.0) and (name.startswith("8") == (eps == 10.0)):
            fig = f"dpm_{name.split()[0]}_eps{eps:g}.png"
            projection_plot(
                X,
                model.labels_,
                model.cluster_centers_,
                out_dir / fig,
                f"DPM on {name}, ε={eps:g}: {model.n_clusters_} clusters",
                seed=seed,
            )
            figures.append(fig)
    body = (
        "DPM (Liebenow et al., CCS 2024) clusters under (ε, δ)-DP without being told the number "
        "of clusters; δ = 1/n^1.5. Accuracy: share of points whose cluster's majority class is "
        "their own; silhouette on 2000 sampled points. Digits are too few for ε = 10 (the "
        "paper's regime is n ≥ 10⁴); quality improves with ε.\n\n"
        + markdown_table(
            ["data", "ε", "clusters", "classes", "accuracy", "silhouette", "fit (s)"], rows
        )
    )
    return Section("DPM: private clustering without k", body, figures)


def example() -> ClusteringRelease:
    """A small release: DPM on 20,000 points of 4 separated 2-D blobs in [-100, 100]², ε = 1,
    δ = 1e-6, seeded (reproducible, for testing only; about 0.1 s)."""
    centres = np.array([(-50.0, -50.0), (-50.0, 50.0), (50.0, -50.0), (50.0, 50.0)])
    X, _ = make_blobs(20_000, centers=centres, cluster_std=4.0, random_state=0)
    model = DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    release: ClusteringRelease = model.release_
    return release
