"""Differentially private clustering.

- :class:`DPM` — DP-Mondrian clustering by separation (Liebenow et al., CCS 2024): (ε, δ)-DP,
  does not take the number of clusters, scikit-learn interface, in-memory or Dask input.
- :class:`ClusteringRelease` — what a fit publishes (``DPM.release_``): centres, noisy sizes,
  the split tree and the ledger; verifies, saves, loads and labels points on its own.
- :mod:`privopt.cluster.metrics` — inertia, silhouette, clustering accuracy, normalised KMeans
  distance (as the paper's evaluation computes them).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "DPM",
    "ClusteringRelease",
    "DEFAULT_SIGMA_GRID",
    "BudgetSchedule",
    "budget_schedule",
    "nearest_centre",
    "sklearn_expected_failed_checks",
]

_LAZY = {
    "DPM": "_dpm",
    "ClusteringRelease": "release",
    "DEFAULT_SIGMA_GRID": "_dpm",
    "nearest_centre": "_dpm",
    "sklearn_expected_failed_checks": "_dpm",
    "BudgetSchedule": "_budget",
    "budget_schedule": "_budget",
}


def __getattr__(name: str) -> Any:
    # Lazy: Dask workers import privopt.cluster._chunks without scikit-learn or privopt.dp.
    if name in _LAZY:
        return getattr(importlib.import_module(f"privopt.cluster.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'privopt.cluster' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
