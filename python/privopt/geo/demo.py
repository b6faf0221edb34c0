"""A small LR-Geo release for the registry (:func:`example`); the demo section of the report is
:func:`privopt.geo.report.demo_section`."""

from __future__ import annotations

from privopt.geo.crtable import TravelCosts
from privopt.geo.geography import grid_geography
from privopt.geo.params import GeoParams
from privopt.geo.result import LRGeoResult, run_lrgeo

__all__ = ["example"]


def example() -> LRGeoResult:
    """A small release: 2 users on a 5 × 5 grid of 1 km cells (Euclidean), exact travel costs
    to every location, ε = 1 /km, γ = 1 km, Γ = 2 km, r_exp = 1.5 km, r_obf = 2.5 km (spec 001
    §17 instance A); the clients' draws seeded, for testing (about 0.1 s)."""
    geo = grid_geography(5, 5)
    params = GeoParams(
        epsilon=1.0, gamma=1.0, lr_radius=2.0, r_exp=1.5, r_obf=2.5, lr_max_size=None
    )
    return run_lrgeo(geo, params, [6, 18], TravelCosts(geo), rng=0, progress=False)
