"""LR-Geo: locally relevant geo-obfuscation on road networks (spec 001, issue 14)."""

from privopt.geo.clr import ClrModel, UserBlock, build_model
from privopt.geo.geography import Geography, grid_geography, load_osm_pbf, load_rome_grid
from privopt.geo.params import GeoParams

__all__ = [
    "GeoParams",
    "Geography",
    "grid_geography",
    "load_rome_grid",
    "load_osm_pbf",
    "UserBlock",
    "ClrModel",
    "build_model",
]
