"""Clustering quality as the DPM paper's evaluation computes it (spec 004 §12.4).

Every metric first assigns each point to its nearest centre (Euclidean), using all points.
These are evaluation tools: they read the raw data and are not differentially private.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import silhouette_score

from privopt._validation import check_finite_array, check_int, check_real
from privopt.cluster._dpm import nearest_centre
from privopt.errors import InvalidInput

__all__ = [
    "assign",
    "inertia",
    "silhouette",
    "clustering_accuracy",
    "kmeans_distance",
    "normalised_kmeans_distance",
    "load_reference_centres",
]


def _points_centres(X: Any, centres: Any) -> tuple[np.ndarray, np.ndarray]:
    X = check_finite_array("X", X, ndim=2)
    centres = check_finite_array("centres", centres, ndim=2)
    if centres.shape[0] == 0:
        raise InvalidInput("centres must hold at least one centre")
    if centres.shape[1] != X.shape[1]:
        raise InvalidInput(f"centres have {centres.shape[1]} columns, X has {X.shape[1]}")
    return X, centres


def assign(X: Any, centres: Any) -> np.ndarray:
    """Index of the nearest centre of every row of X; (n,) int64."""
    X, centres = _points_centres(X, centres)
    return nearest_centre(X, centres)


def inertia(X: Any, centres: Any) -> float:
    """Σ_x min_c ‖x − c‖² (squared, as the paper's tables; Def. 10 prints it unsquared)."""
    X, centres = _points_centres(X, centres)
    labels = nearest_centre(X, centres)
    total = 0.0
    for lo in range(0, X.shape[0], 65536):
        diff = X[lo : lo + 65536] - centres[labels[lo : lo + 65536]]
        total += float(np.einsum("ij,ij->", diff, diff))
    return total


def silhouette(
    X: Any, centres: Any, *, sample_size: int | None = 10000, random_state: Any = None
) -> float:
    """Mean silhouette of the nearest-centre clustering, on a random subsample of ``sample_size``
    points as the reference evaluation does (None = all points). −1 if fewer than 2 clusters are
    used (the evaluation's convention)."""
    X, centres = _points_centres(X, centres)
    labels = nearest_centre(X, centres)
    if np.unique(labels).size < 2:
        return -1.0
    if sample_size is not None:
        sample_size = check_int("sample_size", sample_size, minimum=2)
        if sample_size >= X.shape[0]:
            sample_size = None
    sub = np.random.default_rng(random_state) if sample_size is not None else None
    if sub is not None:
        idx = sub.choice(X.shape[0], size=sample_size, replace=False)
        X, labels = X[idx], labels[idx]
        if np.unique(labels).size < 2:
            return -1.0
    return float(silhouette_score(X, labels))


def clustering_accuracy(labels_pred: Any, labels_true: Any) -> float:
    """Fraction of points whose cluster's majority true label equals their own (Def. 12)."""
    pred = np.asarray(labels_pred).ravel()
    true = np.asarray(labels_true).ravel()
    if pred.shape != true.shape or pred.size == 0:
        raise InvalidInput(
            f"labels_pred and labels_true must be non-empty and of equal length, got "
            f"{pred.shape} and {true.shape}"
        )
    _, p = np.unique(pred, return_inverse=True)
    _, t = np.unique(true, return_inverse=True)
    table = np.zeros((p.max() + 1, t.max() + 1), dtype=np.int64)
    np.add.at(table, (p, t), 1)
    return float(table.max(axis=1).sum() / pred.size)


def _min_distances(centres: np.ndarray, reference: np.ndarray) -> np.ndarray:
    diff = centres[:, None, :] - reference[None, :, :]
    return np.sqrt(np.einsum("ijk,ijk->ij", diff, diff)).min(axis=1)


def _reference_tables(references: list[Any], d: int) -> list[np.ndarray]:
    """Each reference centre set as a finite (k_i, d) float64 table."""
    return [
        check_finite_array(f"references[{i}]", r, shape=(None, d)) for i, r in enumerate(references)
    ]


def kmeans_distance(centres: Any, references: list[Any]) -> float:
    """KD = (1/ℓ) Σ_i Σ_{c ∈ C_priv} min_{c' ∈ C_i} ‖c − c'‖₂ (Def. 9, unnormalised)."""
    centres = check_finite_array("centres", centres, ndim=2)
    if not references:
        raise InvalidInput("references must hold at least one reference centre set")
    tables = _reference_tables(references, centres.shape[1])
    return float(np.mean([_min_distances(centres, r).sum() for r in tables]))


def normalised_kmeans_distance(
    centres: Any, references: list[Any], bounds: tuple[float, float]
) -> float:
    """The tables' "Norm. KMeans Dist." exactly as the evaluation code computes it (spec §12.4):

        nKD = (1/ℓ) Σ_i [ (1/|C_priv|) Σ_{c ∈ C_priv} min_{c' ∈ C_i} ‖c − c'‖₂ ] / ((b − a)·√d)

    i.e. the mean over private centres of the distance to the nearest reference centre, averaged
    over the ℓ reference clusterings and divided by the diagonal of the data domain [a, b]^d.
    Asymmetric: private centres far from every reference centre are penalised, missed clusters
    are not.

    Parameters
    ----------
    centres : (k, d) private centres.
    references : ℓ arrays of shape (k_i, d), the non-private KMeans centre sets.
    bounds : (a, b), the public data range of every coordinate.
    """
    centres = check_finite_array("centres", centres, ndim=2)
    if not references:
        raise InvalidInput("references must hold at least one reference centre set")
    try:
        lower, upper = bounds
    except (TypeError, ValueError):
        raise InvalidInput(f"bounds must be a pair (a, b), got {bounds!r}") from None
    a, b = check_real("bounds[0]", lower), check_real("bounds[1]", upper)
    if not b > a:
        raise InvalidInput(f"bounds must satisfy a < b, got {bounds!r}")
    d = centres.shape[1]
    per_run = [_min_distances(centres, r).mean() for r in _reference_tables(references, d)]
    return float(np.mean(per_run) / ((b - a) * math.sqrt(d)))


def load_reference_centres(path: str | Path) -> list[np.ndarray]:
    """The reference KMeans centre sets of one data set from a ``kmeans_reference_centres_*.npz``
    file (arrays ``run00`` … ``run19``), in run order."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"reference centre file not found: {path}")
    with np.load(path) as f:
        return [np.asarray(f[k], dtype=np.float64) for k in sorted(f.files)]
