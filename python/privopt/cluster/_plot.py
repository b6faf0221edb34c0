"""2-D projection plot of a clustering (shared by the CLI report and the demo)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from privopt.report import close_figure, new_figure, save_figure

__all__ = ["projection_plot"]


def projection_plot(
    X: np.ndarray,
    labels: np.ndarray,
    centres: np.ndarray,
    path: Path,
    title: str,
    *,
    max_points: int = 5000,
    seed: int = 0,
) -> Path:
    """Scatter of X (a random subsample) coloured by label, centres as crosses; X is projected on
    its first two principal axes when d > 2 (a non-private picture for the data owner)."""
    X = np.asarray(X, dtype=float)
    mean = X.mean(axis=0)
    if X.shape[1] > 2:
        _, _, vt = np.linalg.svd(X[:: max(1, len(X) // 20000)] - mean, full_matrices=False)
        basis = vt[:2].T
    else:
        basis = np.eye(X.shape[1], 2)
    idx = np.random.default_rng(seed).permutation(len(X))[:max_points]
    P, C = (X[idx] - mean) @ basis, (centres - mean) @ basis
    fig, ax = new_figure(figsize=(5.5, 4.5))
    ax.scatter(P[:, 0], P[:, 1], c=labels[idx] % 20, cmap="tab20", s=6, alpha=0.6, linewidths=0)
    ax.scatter(C[:, 0], C[:, 1], c="black", marker="x", s=40, label="DPM centres")
    ax.set_title(title)
    ax.set_xlabel("axis 1" if X.shape[1] <= 2 else "principal axis 1")
    ax.set_ylabel("axis 2" if X.shape[1] <= 2 else "principal axis 2")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    close_figure(fig)
    return path
