"""Distances between records for metric DP (re-exported from :mod:`privopt.geometry`).

The coordinate formulas live in :mod:`privopt.geometry`, shared with LR-Geo; this module keeps
the metric-DP names (and :data:`METRICS`, the metrics :class:`~privopt.perturbation.MDPProblem`
accepts).
"""

from __future__ import annotations

from privopt.geometry import (
    EARTH_RADIUS_KM,
    check_points,
    euclidean,
    haversine_km,
    pairwise,
)

__all__ = ["EARTH_RADIUS_KM", "euclidean", "haversine_km", "pairwise", "check_points", "METRICS"]

#: The ``metric=`` values of :class:`~privopt.perturbation.MDPProblem`.
METRICS = ("euclidean", "haversine", "precomputed", "graph")
