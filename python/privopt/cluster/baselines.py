"""Baselines of the DPM evaluation (spec 004 §12.2): non-private KMeans and DP-Lloyd.

DP-Lloyd is IBM diffprivlib's ``KMeans`` (Su et al. 2016). diffprivlib 0.6.6 does not import with
scikit-learn ≥ 1.9 here, so this is a re-implementation of its algorithm with noise from
:mod:`privopt.dp`:

- iterations = int(max(min(ε/ε_m, 7), 2)), ε_m = √(500 k³/n² · (d + ∛(4dρ²))³), ρ = 0.225
  (n is the true size, as diffprivlib uses it);
- per iteration ε/iters, split count : each dimension's sum = ∛(4dρ²) : 1;
- count noise: two-sided geometric (discrete Laplace) folded at 0.5 onto [0.5, ∞), as
  ``GeometricFolded``; sum noise: Laplace with sensitivity b − a, then clipped to
  [ñ·a, ñ·b]. **Deviation:** diffprivlib's ``LaplaceBoundedDomain`` samples a truncated
  Laplace with a recalibrated (larger) scale; clipping a plain Laplace draw is post-processing
  of an ε-DP release, equally private, with a point mass at the bounds instead;
- initial centres uniform in the box shrunk by a proximity margin, accepted when at least
  2·margin apart, the margin halved after 100 failures (diffprivlib's heuristic); clusters that
  receive no point keep their centre.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.cluster import KMeans

from privopt import dp
from privopt._validation import check_epsilon, check_finite_array, check_int
from privopt.cluster._dpm import nearest_centre
from privopt.errors import InvalidInput

__all__ = ["kmeans_centres", "dp_lloyd", "dp_lloyd_iterations"]


def kmeans_centres(X: Any, n_clusters: int, *, random_state: Any = None) -> np.ndarray:
    """Non-private KMeans as in the evaluation: ``KMeans(k, n_init=1, max_iter=300)``, k-means++."""
    km = KMeans(n_clusters=n_clusters, n_init=1, max_iter=300, random_state=random_state).fit(X)
    return km.cluster_centers_


def dp_lloyd_iterations(epsilon: float, n_clusters: int, n: int, d: int, rho: float = 0.225) -> int:
    """diffprivlib's iteration count: int(max(min(ε/ε_m, 7), 2))."""
    eps_m = math.sqrt(500 * n_clusters**3 / n**2 * (d + np.cbrt(4 * d * rho**2)) ** 3)
    return int(max(min(epsilon / eps_m, 7), 2))


def _initial_centres(k: int, d: int, a: float, b: float, source) -> np.ndarray:
    margin = (b - a) / 2.0
    while margin > 0:
        centres = np.zeros((k, d))
        found, retry = 0, 0
        while retry < 100 and found < k:
            cand = source.uniform(d) * (b - a - 2 * margin) + a + margin
            if (
                found == 0
                or np.sqrt(((centres[:found] - cand) ** 2).sum(axis=1).min()) >= 2 * margin
            ):
                centres[found] = cand
                found += 1
                retry = 0
            else:
                retry += 1
        if found >= k:
            return centres
        margin /= 2.0
    return source.uniform((k, d)) * (b - a) + a


def dp_lloyd(
    X: Any,
    n_clusters: int,
    bounds: tuple[float, float],
    epsilon: float,
    *,
    rng: Any = None,
    accountant: dp.PrivacyAccountant | None = None,
) -> np.ndarray:
    """ε-DP Lloyd iterations (diffprivlib ``KMeans`` algorithm, see module docstring).

    Parameters
    ----------
    X : (n, d) points; coordinates are clipped to ``bounds``.
    n_clusters : k ≥ 1.
    bounds : (a, b), the public range of every coordinate.
    epsilon : total ε (pure ε-DP, add/remove-one neighbours).
    rng : anything :func:`privopt.dp.as_random_source` accepts.
    accountant : optional accountant recording one spend per iteration.

    Returns
    -------
    (k, d) centres.
    """
    X = check_finite_array("X", X, ndim=2)
    k = check_int("n_clusters", n_clusters, minimum=1)
    epsilon = check_epsilon(epsilon)
    a, b = (float(v) for v in bounds)
    if not a < b:
        raise InvalidInput(f"bounds must satisfy a < b, got {bounds!r}")
    X = np.clip(X, a, b)
    n, d = X.shape
    source = dp.as_random_source(rng)
    iters = dp_lloyd_iterations(epsilon, k, n, d)
    unit = epsilon / iters / (d + np.cbrt(4 * d * 0.225**2))
    eps_count, eps_dim = float(np.cbrt(4 * d * 0.225**2) * unit), float(unit)
    centres = _initial_centres(k, d, a, b, source)
    for it in range(iters):
        if accountant is not None:
            accountant.spend(
                epsilon / iters,
                label=f"DP-Lloyd iteration {it}",
                mechanism="geometric + Laplace",
                sensitivity=b - a,
            )
        labels = nearest_centre(X, centres)
        counts = np.bincount(labels, minlength=k)
        sums = np.zeros((k, d))
        np.add.at(sums, labels, X)
        for c in np.flatnonzero(counts):
            noisy = counts[c] + int(dp.sample_discrete_laplace(eps_count, rng=source))
            noisy = noisy if noisy >= 0.5 else 1 - noisy  # fold at 0.5 onto [0.5, ∞)
            noise = dp.sample_laplace((b - a) / eps_dim, d, rng=source)
            centres[c] = np.clip(sums[c] + noise, noisy * a, noisy * b) / noisy
    return centres
