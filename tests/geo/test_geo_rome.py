"""LR-Geo on the real Rome grid (shared data): loader, CR table, a small certified run."""

from __future__ import annotations

import numpy as np
import pytest
from privopt.geo import CostReferenceTable, GeoParams, load_rome_grid, run_lrgeo, user_problem


@pytest.fixture(scope="module")
def rome(shared_data):
    return load_rome_grid(shared_data("rome"))


def test_rome_grid_loads(rome) -> None:
    assert rome.n_locations == 1331
    assert rome.road.n_arcs == 2 * 4764  # each road edge usable both ways
    lengths = rome.road.csr.data
    assert lengths.min() > 0.12 and lengths.max() < 1.09
    assert rome.road.components()[0] == 1


def test_rome_lr_geo_is_verified_and_certified(rome) -> None:
    geo = rome.sample(200, seed=0)
    # Artifact defaults: ε = 10, γ = 0.5 for the constraints, 50 km for the LR-search graph
    # (at γ_graph = 0.5 a 200-cell sample is too sparse: most LR sets are v_m alone), L = 20.
    params = GeoParams(epsilon=10.0, gamma_graph=50.0)
    table = CostReferenceTable(geo, 20, cell_km=0.1, rng=0)
    res = run_lrgeo(geo, params, [3, 150], table, rng=0)
    assert res.solution.status == "optimal"
    assert all(
        pm.n_records == 20 and u in pm.row_index and np.all(np.diff(pm.row_index) > 0)
        for pm, u in zip(res.matrices, [3, 150], strict=True)
    )
    prob = user_problem(geo, params, table.true_costs(np.arange(geo.n_locations)))
    for pm in res.matrices:
        assert pm.violations(prob).ok(1e-9)
    # Thm 4.6/4.7 sandwich with estimated costs: relaxed bound (c̃) ≤ cost ≤ CLR objective (ĉ).
    assert res.relaxed_bound() <= res.cost() <= res.solution.objective / 2 + 1e-12
