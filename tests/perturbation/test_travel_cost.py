"""The compiled travel-cost loss ``Σ_j w_j |a_ij − b_kj|`` (:func:`privopt.mdp.travel_cost_loss`,
shared by metric DP's Eq. 48 and LR-Geo's c̄ and β) against the numpy formula it replaced, on
random tables with extreme magnitudes and ties."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.mdp import travel_cost_loss


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    st.integers(0, 10_000),
    st.integers(0, 7),
    st.integers(0, 9),
    st.integers(1, 6),
    st.sampled_from([1e-9, 1.0, 1e6]),
)
def test_travel_cost_loss_matches_the_formula(seed, r, c, t, scale) -> None:
    rng = np.random.default_rng(seed)
    a = np.round(rng.random((r, t)) * 4) * scale  # ties: |a − b| = 0 on many terms
    b = np.round(rng.random((c, t)) * 4) * scale
    w = rng.dirichlet(np.ones(t))
    got = travel_cost_loss(a, b, w)
    ref = np.abs(a[:, None, :] - b[None, :, :]) @ w if r and c else np.zeros((r, c))
    assert got.shape == (r, c)
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13 * scale)
    assert np.all(got >= 0)
    if r and c:  # a pseudo-metric on the rows: zero against itself, symmetric
        np.testing.assert_allclose(np.diag(travel_cost_loss(a, a, w)), 0.0, atol=0)
        np.testing.assert_allclose(travel_cost_loss(b, a, w), got.T, rtol=1e-15, atol=0)


def test_cr_table_beta_and_true_costs_use_it() -> None:
    """The CR table's β and c̄ are this loss on its travel-cost tables (no second copy)."""
    from privopt.geo import CostReferenceTable, grid_geography

    geo = grid_geography(6, 6, 0.5, metric="haversine", road_factor=1.2)
    table = CostReferenceTable(geo, 5, cell_km=0.2, rng=3)
    rows, cols = np.array([0, 7, 20]), np.arange(table.n_points)[::3]
    np.testing.assert_array_equal(
        table.beta(rows, cols),
        travel_cost_loss(table.tc_points[rows], table.tc_points[cols], table.weights),
    )
    np.testing.assert_array_equal(
        table.true_costs([1, 2]),
        travel_cost_loss(table.tc_locations[[1, 2]], table.tc_locations, table.weights),
    )
