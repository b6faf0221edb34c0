"""Distances between locations: Haversine (km), Euclidean, metric matrices, nearest points.

Conventions (spec 001 §1): geographic points are ``(lat, lon)`` rows in degrees, **latitude
first**; distances are in km on a sphere of radius :data:`EARTH_RADIUS_KM`. Planar points are
``(x, y)`` rows in any unit. A *metric matrix* is a square, symmetric, non-negative distance table
with a zero diagonal (it may hold ``inf`` for "not connected").

Examples
--------
>>> import numpy as np
>>> rome, milan = np.array([[41.9028, 12.4964]]), np.array([[45.4642, 9.19]])
>>> round(float(haversine_km(rome, milan)[0, 0]), 1)
476.9
>>> euclidean(np.array([[0.0, 0.0]]), np.array([[3.0, 4.0]])).tolist()
[[5.0]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privopt._validation import check_bool, check_finite_array, real_array
from privopt.errors import InvalidInput

__all__ = [
    "EARTH_RADIUS_KM",
    "KM_PER_DEGREE_LAT",
    "COORDINATE_METRICS",
    "haversine_km",
    "haversine_pairs_km",
    "euclidean",
    "pairwise",
    "check_points",
    "check_metric_matrix",
    "triangle_violation",
    "nearest",
    "offset_latlon",
]

#: Mean Earth radius (km) of the papers' Haversine distance (spec 001 §1).
EARTH_RADIUS_KM = 6371.0
#: Kilometres per degree of latitude used to turn planar noise into degrees (spec 001 §13).
KM_PER_DEGREE_LAT = 111.32
#: Metrics with a coordinate formula.
COORDINATE_METRICS = ("euclidean", "haversine")

#: Target entries per chunk of a pairwise table (bounds temporary memory).
_CHUNK = 2_000_000


def _check_latlon(name: str, table: np.ndarray) -> np.ndarray:
    """``table`` (n, 2) as (lat, lon) in degrees: latitudes in [-90, 90], longitudes in
    [-180, 180]. A value outside is a swapped column or another unit, and the Haversine formula
    would turn it into a meaningless distance."""
    if np.any(np.abs(table[:, 0]) > 90) or np.any(np.abs(table[:, 1]) > 180):
        raise InvalidInput(
            f"{name}: latitudes must lie in [-90, 90] and longitudes in "
            "[-180, 180] (order is (lat, lon))"
        )
    return table


def _two_tables(a: Any, b: Any, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Validated float (n, d) and (m, d) coordinate tables (finite, real, same width); with
    ``width=2`` they are (lat, lon) tables in degrees."""
    a = check_finite_array("a", a, ndim=2)
    b = check_finite_array("b", b, shape=(None, a.shape[1]))
    if width is not None and a.shape[1] != width:
        raise InvalidInput(f"a and b must be (n, {width}) (lat, lon) tables, got {a.shape}")
    if width == 2:
        _check_latlon("a", a)
        _check_latlon("b", b)
    return a, b


def euclidean(a: np.ndarray, b: np.ndarray, *, check_input: bool = True) -> np.ndarray:
    """Euclidean distances between the rows of ``a`` (n, d) and ``b`` (m, d).

    ``check_input=False``: the caller passes finite float64 tables of the same width that it
    validated itself (a map's own points): they are not checked again.

    Returns
    -------
    ndarray of float64, shape (n, m)
    """
    if check_bool("check_input", check_input):
        a, b = _two_tables(a, b)
    # Direct differences (not the |a|²+|b|²-2ab trick): exact zeros for equal points and no
    # cancellation, which matters for neighbour tests d <= γ.
    out = np.empty((a.shape[0], b.shape[0]))
    step = max(1, _CHUNK // max(1, b.shape[0] * a.shape[1]))
    for s in range(0, a.shape[0], step):
        diff = a[s : s + step, None, :] - b[None, :, :]
        out[s : s + step] = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    return out


def _haversine(lat1: Any, lon1: Any, lat2: Any, lon2: Any) -> np.ndarray:
    h = (
        np.sin((lat2 - lat1) / 2) ** 2
        + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))


def haversine_km(a: np.ndarray, b: np.ndarray, *, check_input: bool = True) -> np.ndarray:
    """Great-circle distances in km between the ``(lat, lon)`` rows (degrees) of ``a`` (n, 2)
    and ``b`` (m, 2).

    Latitude comes first (the LR-Geo artifact swaps them, spec 001 §16 C). With
    ``check_input=False`` the caller vouches for two (lat, lon) tables in range, as
    :func:`check_points` returns them.

    Returns
    -------
    ndarray of float64, shape (n, m)
    """
    if check_bool("check_input", check_input):
        a, b = _two_tables(a, b, width=2)
    ra, rb = np.radians(a), np.radians(b)
    out = np.empty((ra.shape[0], rb.shape[0]))
    step = max(1, _CHUNK // max(1, rb.shape[0]))
    for s in range(0, ra.shape[0], step):
        blk = ra[s : s + step]
        out[s : s + step] = _haversine(
            blk[:, 0, None], blk[:, 1, None], rb[None, :, 0], rb[None, :, 1]
        )
    return out


def haversine_pairs_km(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distances in km between matching rows: ``a[i]`` to ``b[i]`` (both (n, 2) lat/lon)."""
    a, b = _two_tables(a, b, width=2)
    if a.shape != b.shape:
        raise InvalidInput(f"a and b must have the same shape, got {a.shape} and {b.shape}")
    ra, rb = np.radians(a), np.radians(b)
    return _haversine(ra[:, 0], ra[:, 1], rb[:, 0], rb[:, 1])


def pairwise(a: np.ndarray, b: np.ndarray, metric: str, *, check_input: bool = True) -> np.ndarray:
    """Distance table (n, m) between the rows of ``a`` and ``b`` for a coordinate metric.

    ``check_input=False`` trusts the tables (validated by the caller with
    :func:`check_points`): a map computing distances between its own points does not check
    them on every call.
    """
    if metric == "euclidean":
        return euclidean(a, b, check_input=check_input)
    if metric == "haversine":
        return haversine_km(a, b, check_input=check_input)
    raise InvalidInput(
        f"metric {metric!r} has no coordinate formula; use one of {COORDINATE_METRICS}"
    )


def check_points(name: str, points: Any, metric: str) -> np.ndarray:
    """Validated float64 coordinates of shape (n, d), n >= 1.

    For ``metric="haversine"`` the rows must be ``(lat, lon)`` in degrees within range.

    Raises
    ------
    InvalidInput
        NaN/inf coordinates, an empty or wrongly shaped array, out-of-range lat/lon.
    """
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
        _check_latlon(name, arr)
    return arr


def check_metric_matrix(name: str, value: Any, *, allow_inf: bool = False) -> np.ndarray:
    """A validated metric matrix: square (n, n), n >= 1, symmetric to 1e-12 relative,
    non-negative, zero diagonal, no NaN (``inf`` only when ``allow_inf``).

    The triangle inequality is not checked here (O(n³)); see :func:`triangle_violation`.

    Returns
    -------
    ndarray of float64, shape (n, n), exactly symmetric (the smaller of ``d_ij``, ``d_ji``).
    """
    d = real_array(name, value)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] == 0:
        raise InvalidInput(f"{name} must be a square (n, n) array with n >= 1, got {d.shape}")
    allow_inf = check_bool("allow_inf", allow_inf)
    if np.isnan(d).any() or (not allow_inf and np.isinf(d).any()):
        raise InvalidInput(f"{name} contains NaN{'' if allow_inf else ' or inf'}")
    if np.any(d < 0) or np.any(np.diag(d) != 0):
        raise InvalidInput(f"{name} must be >= 0 with a zero diagonal")
    finite = np.isfinite(d)
    if not np.array_equal(finite, finite.T) or not np.allclose(
        d[finite], d.T[finite], rtol=1e-12, atol=0
    ):
        raise InvalidInput(f"{name} must be symmetric")
    return np.minimum(d, d.T)


def triangle_violation(d: np.ndarray) -> float:
    """Largest ``d_ij − (d_ik + d_kj)`` over all triples (≤ 0 for a metric); O(n³) time,
    O(n²) memory."""
    d = check_finite_array("d", d, ndim=2)
    if d.shape[0] != d.shape[1]:
        raise InvalidInput(f"d must be a square (n, n) matrix, got {d.shape}")
    worst = -math.inf
    for k in range(d.shape[0]):
        worst = max(worst, float(np.max(d - (d[:, k, None] + d[None, k, :]))))
    return worst


def nearest(
    points: np.ndarray, candidates: np.ndarray, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """Index of the nearest candidate of each point (ties: the smaller index) and its distance.

    Parameters
    ----------
    points : (n, d) coordinates.
    candidates : (m, d) coordinates, m >= 1.
    metric : "euclidean" or "haversine".

    Returns
    -------
    (index int64 (n,), distance float64 (n,))
    """
    points = check_finite_array("points", points, ndim=2)
    candidates = check_finite_array("candidates", candidates, shape=(None, points.shape[1]))
    if candidates.shape[0] == 0:
        raise InvalidInput("nearest needs at least one candidate point")
    idx = np.empty(points.shape[0], dtype=np.int64)
    dist = np.empty(points.shape[0])
    step = max(1, _CHUNK // candidates.shape[0])
    for s in range(0, points.shape[0], step):
        table = pairwise(points[s : s + step], candidates, metric)
        idx[s : s + step] = np.argmin(table, axis=1)
        dist[s : s + step] = table[np.arange(table.shape[0]), idx[s : s + step]]
    return idx, dist


def offset_latlon(latlon: np.ndarray, east_km: Any, north_km: Any) -> np.ndarray:
    """Move ``(lat, lon)`` rows by planar offsets in km (local equirectangular approximation,
    spec 001 §13: Δlat = north / 111.32, Δlon = east / (111.32 cos φ)).

    Returns
    -------
    ndarray of float64, shape (n, 2), longitudes wrapped to [-180, 180), latitudes clipped to
    [-90, 90].

    Raises
    ------
    InvalidInput
        NaN/inf, coordinates out of range, or an east offset at a pole, where east has no
        direction (cos φ = 0).
    """
    latlon = _check_latlon("latlon", check_finite_array("latlon", latlon, shape=(None, 2)))
    rows = latlon.shape[:1]
    offsets = {}
    for name, value in (("north_km", north_km), ("east_km", east_km)):
        arr = check_finite_array(name, value)
        if arr.ndim > 1 or arr.size not in (1, rows[0]):
            raise InvalidInput(
                f"{name} must be one number or one per row ({rows[0]}), got {arr.shape}"
            )
        offsets[name] = np.broadcast_to(arr, rows)
    north_km, east_km = offsets["north_km"], offsets["east_km"]
    if np.any((np.abs(latlon[:, 0]) == 90.0) & (east_km != 0)):
        raise InvalidInput("east_km: a row at a pole (latitude ±90) cannot move east or west")
    lat = latlon[:, 0] + np.asarray(north_km) / KM_PER_DEGREE_LAT
    lon = latlon[:, 1] + np.asarray(east_km) / (
        KM_PER_DEGREE_LAT * np.cos(np.radians(latlon[:, 0]))
    )
    lon = (lon + 180.0) % 360.0 - 180.0
    return np.column_stack([np.clip(lat, -90.0, 90.0), lon])
