"""LR-Geo: locally relevant geo-obfuscation on road networks.

Data flows one way: a public map (:class:`Geography`) and parameters (:class:`GeoParams`) →
each user's client (:class:`LRGeoClient`: LR set, CR request, cost estimates, upload) → the
server (:func:`answer_cr_request`, :func:`solve_uploads`: CLR-Geo by Benders or one LP) → one
:class:`~privopt.perturbation.PerturbationMatrix` per user (rows = its LR set). :func:`run_lrgeo`
runs
the whole exchange, every message as JSON (:mod:`privopt.geo.messages`).

Guarantee: each user's matrix satisfies (ε, γ)-Geo-Ind among its LR rows (verified to 1e-9);
its exponential entries are ε/2-Geo-Ind towards every other user's (Thm 4.4), whatever y is.

Examples
--------
>>> from privopt.geo import GeoParams, TravelCosts, grid_geography, run_lrgeo
>>> geo = grid_geography(5, 5)
>>> p = GeoParams(epsilon=1.0, gamma=1.0, lr_radius=2.0, r_exp=1.5, r_obf=2.5, lr_max_size=None)
>>> res = run_lrgeo(geo, p, [6, 18], TravelCosts(geo), rng=0)
>>> round(res.solution.objective, 6), res.solution.status     # a small test instance
(1.954146, 'optimal')
"""

from privopt.geo.client import GeoIndGraph, LRGeoClient
from privopt.geo.clr import ClrModel, UserBlock, build_model
from privopt.geo.crtable import CostReferenceTable, SnapTable, TravelCosts
from privopt.geo.geography import Geography, grid_geography, load_osm_pbf, load_rome_grid
from privopt.geo.params import GeoParams
from privopt.geo.result import LRGeoResult, run_lrgeo, user_problem
from privopt.geo.server import answer_cr_request, solve_uploads
from privopt.geo.solve import ClrSolution, solve_clr
from privopt.geo.tradeoff import sweep_epsilon

__all__ = [
    "GeoParams",
    "Geography",
    "grid_geography",
    "load_rome_grid",
    "load_osm_pbf",
    "GeoIndGraph",
    "LRGeoClient",
    "SnapTable",
    "CostReferenceTable",
    "TravelCosts",
    "UserBlock",
    "ClrModel",
    "build_model",
    "ClrSolution",
    "solve_clr",
    "answer_cr_request",
    "solve_uploads",
    "LRGeoResult",
    "run_lrgeo",
    "user_problem",
    "sweep_epsilon",
]
