"""Planar Laplace noise for geo-indistinguishability (Andrés et al., CCS 2013; spec 001 §13).

Guarantee: the released point ``x + noise`` with density ∝ ``exp(−ε |noise|)`` on the plane is
ε-geo-indistinguishable: for any two true points x, x' and any output, the densities differ by
at most ``exp(ε d(x, x'))`` (the triangle inequality on ``|out − x|``). Snapping the output to
a location set afterwards is post-processing and keeps it.

Sampling in polar form: θ uniform on [0, 2π); the radius has CDF ``C_ε(r) = 1 − (1 + εr)e^{−εr}``
(a Gamma(2, 1/ε) law, mean 2/ε), inverted with the Lambert W function on branch −1:
``r = −(W_{−1}((u − 1)/e) + 1) / ε``. Uniforms come from :func:`privopt.dp.as_random_source`:
the OS CSPRNG unless a seed or Generator is given (reproducible runs, for tests).

Examples
--------
>>> import numpy as np
>>> east, north = planar_laplace_noise(10.0, 20_000, rng=0)
>>> round(float(np.hypot(east, north).mean()), 2)   # E[r] = 2/ε = 0.2 km
0.2
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import lambertw

from privopt._validation import check_epsilon, check_int
from privopt.dp.randomness import as_random_source
from privopt.geometry import check_points, offset_latlon

__all__ = ["planar_laplace_noise", "planar_laplace_radius_cdf", "planar_laplace_latlon"]


def _source(rng: Any) -> Any:
    return as_random_source("secure" if rng is None else rng)


def planar_laplace_noise(
    epsilon: float, size: int, rng: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """``size`` planar Laplace offsets (east, north), each of shape (size,), in the unit of 1/ε
    (km for ε in 1/km).

    Parameters
    ----------
    epsilon : ε > 0.
    size : number of draws (>= 0).
    rng : None (OS CSPRNG), an int seed, a numpy Generator, "secure" or a RandomSource.
    """
    eps = check_epsilon(epsilon)
    n = check_int("size", size, minimum=0)

    src = _source(rng)
    theta = 2.0 * math.pi * np.asarray(src.uniform(n), dtype=np.float64)
    u = np.asarray(src.uniform(n), dtype=np.float64)
    w = lambertw((u - 1.0) / math.e, k=-1).real
    r = np.maximum(-(w + 1.0) / eps, 0.0)
    return r * np.cos(theta), r * np.sin(theta)


def planar_laplace_radius_cdf(r: Any, epsilon: float) -> np.ndarray:
    """``C_ε(r) = 1 − (1 + εr) e^{−εr}``, the CDF of the noise radius."""
    eps = check_epsilon(epsilon)
    x = eps * np.maximum(np.asarray(r, dtype=np.float64), 0.0)
    return 1.0 - (1.0 + x) * np.exp(-x)


def planar_laplace_latlon(latlon: Any, epsilon: float, rng: Any = None) -> np.ndarray:
    """Perturb ``(lat, lon)`` rows (degrees) by planar Laplace noise of ε per km.

    Offsets are turned into degrees with Δlat = north / 111.32 and Δlon = east / (111.32 cos φ)
    (spec §13; :func:`privopt.geometry.offset_latlon`).
    """
    pts = check_points("latlon", latlon, "haversine")
    east, north = planar_laplace_noise(epsilon, pts.shape[0], rng)
    return offset_latlon(pts, east, north)
