"""The release of CLR-Geo matrices (issue 14, item 3): the free-entry lift is the least lift
(against privopt.mdp.lift's Dijkstra), keeps row sums and exponential entries, and lets
LR-Geo-F and ConstOPT certify ≤ 1e-6 where the ε/2 ExpMech mix alone proved only ~2e-6."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from privopt.geo import CostReferenceTable, GeoParams, load_rome_grid, run_lrgeo, user_problem
from privopt.geo import baselines as bl
from privopt.geo.clr import geo_ind_edges
from privopt.geo.release import lift_free_entries
from privopt.mdp.lift import column_lift

SETTINGS = settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _random_user(seed: int, n: int, k: int, gamma: float):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(0, 3, (n, 2))
    d = np.hypot(*(pts[:, None, :] - pts[None, :, :]).transpose(2, 0, 1))
    # adversarial: most mass on one entry per row, many exact zeros, a few tiny values
    z = rng.exponential(1.0, (n, k)) * (rng.random((n, k)) < 0.3)
    z[np.arange(n), rng.integers(0, k, n)] += 50.0
    z[rng.random((n, k)) < 0.05] = 1e-12
    z /= z.sum(axis=1, keepdims=True)
    return z, geo_ind_edges(d, gamma)


@SETTINGS
@given(
    st.integers(0, 10_000),
    st.integers(2, 9),
    st.integers(1, 12),
    st.sampled_from([0.8, 1.5, np.inf]),
    st.floats(0.5, 12.0),
)
def test_lift_is_the_least_lift_and_keeps_what_it_must(seed, n, k, gamma, eps) -> None:
    z, edges = _random_user(seed, n, k, gamma)
    rng = np.random.default_rng(seed + 1)
    # Every entry free: before the row scaling, the lift equals the least lift of mdp.lift.
    free = np.ones((n, k), dtype=bool)
    w = lift_free_entries(z, free, edges, eps, keep_row_sums=False)
    ref, _ = column_lift(z, edges, eps)
    np.testing.assert_allclose(w, ref, rtol=1e-12, atol=0)
    # A random free mask: fixed entries never move, row sums are kept, and every violation
    # whose target is free is gone up to the row's rescaling.
    free = rng.random((n, k)) < 0.6
    w = lift_free_entries(z, free, edges, eps)
    np.testing.assert_array_equal(w[~free], z[~free])
    np.testing.assert_allclose(w.sum(axis=1), z.sum(axis=1), rtol=1e-12)
    assert np.all(w >= 0)
    raw = lift_free_entries(z, free, edges, eps, keep_row_sums=False)
    lhs = raw[edges.i] * np.exp(-eps * edges.d)[:, None]
    target_free = free[edges.j]
    assert np.all(lhs[target_free] <= raw[edges.j][target_free] * (1 + 1e-12))


def test_a_feasible_matrix_is_left_alone() -> None:
    """ExpMech (``∝ exp(−ε d_ik / 2)``) is ε-Geo-Ind for every pair: nothing to lift."""
    rng = np.random.default_rng(3)
    rows, cols = rng.uniform(0, 3, (7, 2)), rng.uniform(0, 3, (9, 2))
    d = np.hypot(*(rows[:, None, :] - rows[None, :, :]).transpose(2, 0, 1))
    dk = np.hypot(*(rows[:, None, :] - cols[None, :, :]).transpose(2, 0, 1))
    z = np.exp(-1.5 * dk / 2)
    z /= z.sum(axis=1, keepdims=True)
    w = lift_free_entries(z, np.ones_like(z, dtype=bool), geo_ind_edges(d, np.inf), 1.5)
    np.testing.assert_array_equal(w, z)


@pytest.fixture(scope="module")
def rome(shared_data):
    return load_rome_grid(shared_data("rome"))


@pytest.mark.parametrize("k,seed", [(300, 0), (400, 0)])
def test_lr_geo_f_and_constopt_certify_1e6_on_rome(rome, k, seed) -> None:
    """Rome K = 300/400, seed 0: the ExpMech mix alone proved 1.9e-6 / 3.4e-6 (gap_not_closed)
    for LR-Geo-F; the lift brings the released objective within 1e-6 of the LP's safe bound,
    every matrix verifies to 1e-9, and exponential entries stay ε/2-Geo-Ind across users."""
    geo = rome.sample(k, seed=seed)
    params = GeoParams(gamma_graph=50.0, lr_radius=20.0)
    table = CostReferenceTable(geo, 20, cell_km=0.1, seed=seed)
    users = np.random.default_rng(seed).choice(k, 4, replace=False)
    p = bl.lr_geo_f_params(params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an uncertified result would warn
        res = run_lrgeo(geo, p, users, table, rng=seed)
        c = bl.const_opt(geo, params, table)
    s = res.solution
    assert s.status == "optimal" and s.relative_gap <= 1e-6
    assert s.lower_bound <= s.objective
    assert c.relative_gap <= 1e-6
    prob = user_problem(geo, p, table.true_costs(np.arange(k)))
    for pm in res.matrices:
        assert pm.verify(prob).ok(1e-9)
    d = geo.distance_matrix()
    for a, za in zip(res.lr_sets, res.matrices, strict=True):
        for b, zb in zip(res.lr_sets, res.matrices, strict=True):
            ea, eb = d[a] > p.r_exp, d[b] > p.r_exp
            ratio = np.exp(p.epsilon * d[np.ix_(a, b)] / 2)  # (n_a, n_b)
            both = ea[:, None, :] & eb[None, :, :]
            lhs = za.matrix[:, None, :]
            rhs = ratio[:, :, None] * zb.matrix[None, :, :]
            assert np.all(~both | (lhs <= rhs * (1 + 1e-9) + 1e-15))
