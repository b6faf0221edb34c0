"""DPM on Synth-10d with the bounds given and with the bounds estimated privately.

make_blobs(100,000 × 10, 64 unit blobs in [-100, 100]^10), ε = 1, δ = 1/n^1.5; prints the mean
clustering accuracy and inertia over the seeds for each (docs/cluster.md, "Bounds").

    python bench/dpm_bounds.py [--seeds 8]
"""

from __future__ import annotations

import argparse

import numpy as np
from privopt.cluster import DPM
from privopt.cluster import metrics as M
from sklearn.datasets import make_blobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    args = parser.parse_args()
    X, y = make_blobs(
        n_samples=100_000,
        n_features=10,
        centers=64,
        center_box=(-100, 100),
        cluster_std=1,
        random_state=42,
    )
    delta = 1 / len(X) ** 1.5
    for name, bounds in (("given (-100, 100)", (-100, 100)), ("estimated", None)):
        accuracy, inertia = [], []
        for seed in range(args.seeds):
            model = DPM(bounds=bounds, epsilon=1.0, delta=delta, random_state=seed).fit(X)
            accuracy.append(M.clustering_accuracy(M.assign(X, model.cluster_centers_), y))
            inertia.append(M.inertia(X, model.cluster_centers_))
        print(
            f"{name:20s} accuracy {np.mean(accuracy):.4f}  inertia {np.mean(inertia) / 1e6:.1f}e6"
        )


if __name__ == "__main__":
    main()
