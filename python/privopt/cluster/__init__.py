"""Differentially private clustering.

- :class:`DPM` — DP-Mondrian clustering by separation (Liebenow et al., CCS 2024): (ε, δ)-DP,
  does not take the number of clusters, scikit-learn interface, in-memory or Dask input.
- :mod:`privopt.cluster.metrics` — inertia, silhouette, clustering accuracy, normalised KMeans
  distance (as the paper's evaluation computes them).
"""

from __future__ import annotations

from privopt.cluster._budget import BudgetSchedule, budget_schedule
from privopt.cluster._dpm import DEFAULT_SIGMA_GRID, DPM

__all__ = ["DPM", "DEFAULT_SIGMA_GRID", "BudgetSchedule", "budget_schedule"]
