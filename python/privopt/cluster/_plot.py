"""2-D projection plot of a clustering (shared by the CLI report and the demo)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from privopt.report import close_figure, new_figure, save_figure

__all__ = ["projection_plot", "projection_figure"]


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
    its first two principal axes when d > 2 (a non-private picture for the data owner). Saved to
    ``path`` (PNG)."""
    fig = projection_figure(X, labels, centres, title, max_points=max_points, seed=seed)
    save_figure(fig, path, dpi=110)
    close_figure(fig)
    return path


def projection_figure(
    X: np.ndarray,
    labels: np.ndarray,
    centres: np.ndarray,
    title: str,
    *,
    max_points: int = 5000,
    seed: int = 0,
) -> Any:
    """The figure of :func:`projection_plot` (a matplotlib Figure, not saved)."""
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
    planar = X.shape[1] <= 2
    ax.set_xlabel("feature 1 (data units, centred)" if planar else "principal axis 1 (data units)")
    ax.set_ylabel("feature 2 (data units, centred)" if planar else "principal axis 2 (data units)")
    if planar:
        ax.set_aspect("equal", adjustable="datalim")  # both axes in the data's units
    # Below the axes, so that the legend never covers a point.
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.15), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
