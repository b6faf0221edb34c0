"""Baselines of the DPM evaluation (spec 004 §12.2): non-private KMeans and DP-Lloyd.

DP-Lloyd is IBM diffprivlib's ``KMeans`` (Su et al. 2016). diffprivlib 0.6.6 does not import with
scikit-learn ≥ 1.9 here, so this is a re-implementation of its algorithm with noise from
:mod:`privopt.dp`:

- iterations = int(max(min(ε/ε_m, 7), 2)), ε_m = √(500 k³/n² · (d + ∛(4dρ²))³), ρ = 0.225
  (n is the true size, as diffprivlib uses it);
- per iteration ε/iters, split count : each dimension's sum = ∛(4dρ²) : 1 (``split="su"``;
  diffprivlib 0.6.6 itself runs the two shares swapped and so spends more than ε, which
  ``split="diffprivlib"`` reproduces for parity, see :func:`dp_lloyd`);
- count noise: two-sided geometric (discrete Laplace) folded at 0.5 onto [0.5, ∞), as
  ``GeometricFolded``; sum noise: the bounded Laplace mechanism on the domain [ñ·a, ñ·b] with
  sensitivity b − a, as ``LaplaceBoundedDomain`` (Holohan et al. 2020): the sum clipped to the
  domain, the scale recalibrated by diffprivlib's bisection (:func:`bounded_laplace_scale`),
  and Laplace draws rejected until one falls inside the domain;
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
from privopt._validation import check_epsilon, check_finite_array, check_int, check_real
from privopt.cluster._dpm import nearest_centre
from privopt.errors import InvalidInput

__all__ = [
    "kmeans_centres",
    "dp_lloyd",
    "dp_lloyd_iterations",
    "bounded_laplace_scale",
    "bounded_laplace",
]


def kmeans_centres(X: Any, n_clusters: int, *, random_state: Any = None) -> np.ndarray:
    """Non-private KMeans as in the evaluation: ``KMeans(k, n_init=1, max_iter=300)``, k-means++."""
    km = KMeans(n_clusters=n_clusters, n_init=1, max_iter=300, random_state=random_state).fit(X)
    return km.cluster_centers_


def dp_lloyd_iterations(epsilon: float, n_clusters: int, n: int, d: int, rho: float = 0.225) -> int:
    """diffprivlib's iteration count: int(max(min(ε/ε_m, 7), 2))."""
    eps_m = math.sqrt(500 * n_clusters**3 / n**2 * (d + np.cbrt(4 * d * rho**2)) ** 3)
    return int(max(min(epsilon / eps_m, 7), 2))


def bounded_laplace_scale(
    epsilon: float, sensitivity: float, lower: float, upper: float, delta: float = 0.0
) -> float:
    """Scale of the bounded Laplace mechanism on [lower, upper] (Holohan et al. 2020), found as
    diffprivlib's ``LaplaceBoundedDomain`` finds it: the fixed point of

        b = Δ / (ε − ln Δ_C(b) − ln(1 − δ)),
        Δ_C(b) = (2 − e^{−Δ/b} − e^{−(D−Δ)/b}) / (1 − e^{−D/b}),  D = upper − lower,

    by bisection from b = Δ/(ε − ln(1 − δ)). The result is ≥ Δ/ε (truncation costs privacy, which
    the larger scale pays back)."""
    diam, dq = upper - lower, sensitivity

    def delta_c(shape: float) -> float:
        if shape == 0:
            return 2.0
        return (2 - math.exp(-dq / shape) - math.exp(-(diam - dq) / shape)) / (
            1 - math.exp(-diam / shape)
        )

    def f(shape: float) -> float:
        return dq / (epsilon - math.log(delta_c(shape)) - math.log(1 - delta))

    left = dq / (epsilon - math.log(1 - delta))
    right = f(left)
    old = (right - left) * 2
    while old > right - left:
        old = right - left
        middle = (right + left) / 2
        fm = f(middle)
        if fm >= middle:
            left = middle
        if fm <= middle:
            right = middle
    return (right + left) / 2


def bounded_laplace(
    values: np.ndarray, scale: float, lower: float, upper: float, source
) -> np.ndarray:
    """Bounded Laplace draws: each value clipped to [lower, upper], plus Laplace(scale) noise
    conditioned (by rejection, as diffprivlib) on the result lying in [lower, upper]; float64 array
    of the shape of ``values``."""
    values = np.clip(np.asarray(values, dtype=np.float64), lower, upper)
    out = np.empty_like(values)
    pending = np.arange(values.size)
    batch = 1
    while pending.size:
        draws = values.ravel()[pending, None] + dp.sample_laplace(
            scale, (pending.size, batch), rng=source
        )
        ok = (draws >= lower) & (draws <= upper)
        hit = ok.any(axis=1)
        first = np.argmax(ok, axis=1)
        out.ravel()[pending[hit]] = draws[hit, first[hit]]
        pending = pending[~hit]
        batch = min(100_000, batch * 2)
    return out


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
    split: str = "su",
) -> np.ndarray:
    """ε-DP Lloyd iterations (diffprivlib ``KMeans`` algorithm, see module docstring).

    Parameters
    ----------
    X : (n, d) points; coordinates are clipped to ``bounds``.
    n_clusters : k ≥ 1.
    bounds : (a, b), the public range of every coordinate.
    epsilon : total ε (pure ε-DP, add/remove-one neighbours).
    rng : None (default) or ``"secure"`` for the operating system's CSPRNG; an int seed, a
        Generator or a :class:`privopt.dp.RandomSource` for reproducible runs (testing only).
    accountant : optional accountant recording one spend per iteration, all or nothing (the
        whole plan is checked first, and a failure takes every spend of the run back).
    split : ``"su"`` (default): per iteration, the count gets ∛(4dρ²) units of ε/iters and each
        dimension's sum 1 unit, out of d + ∛(4dρ²) units (Su et al. 2016, the split diffprivlib's
        docstring describes), so the total is ε. ``"diffprivlib"``: the split diffprivlib 0.6.6
        actually runs. ``_split_epsilon`` returns its two values in the opposite order of how
        ``_update_centers`` unpacks them, so the count gets 1 unit and each sum ∛(4dρ²) units.
        That spends ε·(1 + d·∛(4dρ²))/(d + ∛(4dρ²)) in total: 1.21 ε at d = 10 and 2.66 ε at
        d = 100. It is offered only to reproduce diffprivlib's (and the paper's) DP-Lloyd
        numbers, and the accountant records the true spend.

    Returns
    -------
    (k, d) centres.
    """
    X = check_finite_array("X", X, ndim=2)
    k = check_int("n_clusters", n_clusters, minimum=1)
    epsilon = check_epsilon(epsilon)
    try:
        lower, upper = bounds
    except (TypeError, ValueError):
        raise InvalidInput(f"bounds must be a pair (a, b), got {bounds!r}") from None
    a, b = check_real("bounds[0]", lower), check_real("bounds[1]", upper)
    if not a < b:
        raise InvalidInput(f"bounds must satisfy a < b, got {bounds!r}")
    X = np.clip(X, a, b)
    n, d = X.shape
    source = dp.as_random_source("secure" if rng is None else rng)
    iters = dp_lloyd_iterations(epsilon, k, n, d)
    if split not in ("su", "diffprivlib"):
        raise InvalidInput(f"split must be 'su' or 'diffprivlib', got {split!r}")
    ratio = float(np.cbrt(4 * d * 0.225**2))
    unit = epsilon / iters / (d + ratio)
    eps_count, eps_dim = (ratio * unit, unit) if split == "su" else (unit, ratio * unit)
    per_iteration = eps_count + d * eps_dim  # sequential over the count and the d sums
    spends = [
        dp.PlannedSpend(
            per_iteration,
            label=f"DP-Lloyd iteration {it}",
            mechanism="geometric + Laplace",
            sensitivity=b - a,
        )
        for it in range(iters)
    ]
    acct = accountant if accountant is not None else dp.PrivacyAccountant()
    with acct.transaction(spends):
        centres = _initial_centres(k, d, a, b, source)
        for spend in spends:
            acct.spend_all([spend])
            centres = _lloyd_step(X, centres, eps_count, eps_dim, a, b, source)
    return centres


def _lloyd_step(X, centres, eps_count, eps_dim, a, b, source) -> np.ndarray:
    """One noisy Lloyd iteration: noisy counts and bounded-Laplace sums per cluster."""
    k, d = centres.shape
    centres = centres.copy()
    labels = nearest_centre(X, centres)
    counts = np.bincount(labels, minlength=k)
    sums = np.zeros((k, d))
    np.add.at(sums, labels, X)
    for c in np.flatnonzero(counts):
        noisy = counts[c] + int(dp.sample_discrete_laplace(eps_count, rng=source))
        noisy = noisy if noisy >= 0.5 else 1 - noisy  # fold at 0.5 onto [0.5, ∞)
        scale = bounded_laplace_scale(eps_dim, b - a, noisy * a, noisy * b)
        centres[c] = bounded_laplace(sums[c], scale, noisy * a, noisy * b, source) / noisy
    return centres
