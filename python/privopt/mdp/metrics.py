"""Distances between records: Euclidean, Haversine (km), precomputed, graph shortest paths."""

from __future__ import annotations

from typing import Any

import numpy as np

from privopt._validation import check_finite_array
from privopt.errors import InvalidInput

__all__ = ["EARTH_RADIUS_KM", "euclidean", "haversine_km", "pairwise", "METRICS"]

#: Mean Earth radius used by the paper's Haversine distance (spec §7-15).
EARTH_RADIUS_KM = 6371.0

METRICS = ("euclidean", "haversine", "precomputed", "graph")


def euclidean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distances between rows of ``a`` (n, d) and ``b`` (m, d) → (n, m)."""
    # Direct differences (not the |a|²+|b|²-2ab trick): exact zeros for equal points and no
    # cancellation, which matters for the neighbour test d <= η.
    out = np.empty((a.shape[0], b.shape[0]))
    step = max(1, 2_000_000 // max(1, b.shape[0] * a.shape[1]))
    for s in range(0, a.shape[0], step):
        diff = a[s : s + step, None, :] - b[None, :, :]
        out[s : s + step] = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    return out


def haversine_km(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Great-circle distances in km between (lat, lon) rows in degrees of ``a`` (n, 2) and ``b``
    (m, 2) → (n, m). Latitude first (the paper's code swaps them, spec §7-15)."""
    lat1, lon1 = np.radians(a[:, 0])[:, None], np.radians(a[:, 1])[:, None]
    lat2, lon2 = np.radians(b[:, 0])[None, :], np.radians(b[:, 1])[None, :]
    h = (
        np.sin((lat2 - lat1) / 2) ** 2
        + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))


def check_points(name: str, points: Any, metric: str) -> np.ndarray:
    """Validated float64 (n, d) coordinates; (lat, lon) in degrees within range for Haversine."""
    arr = check_finite_array(name, points)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise InvalidInput(f"{name} must be a non-empty (n, d) array, got shape {arr.shape}")
    if metric == "haversine":
        if arr.shape[1] != 2:
            raise InvalidInput(
                f"{name} must be (n, 2) (lat, lon) in degrees for the Haversine "
                f"metric, got shape {arr.shape}"
            )
        if np.any(np.abs(arr[:, 0]) > 90) or np.any(np.abs(arr[:, 1]) > 180):
            raise InvalidInput(
                f"{name}: latitudes must lie in [-90, 90] and longitudes in "
                "[-180, 180] (order is (lat, lon))"
            )
    return arr


def pairwise(a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
    """Distance table between the rows of ``a`` and ``b`` for a coordinate metric."""
    if metric == "euclidean":
        return euclidean(a, b)
    if metric == "haversine":
        return haversine_km(a, b)
    raise InvalidInput(
        f"metric {metric!r} has no coordinate formula; use one of 'euclidean', 'haversine'"
    )
