"""The least lift of free entries (:func:`privopt.perturbation.lift.lift_free_entries`) and the
``free=`` option of :func:`privopt.perturbation.matrix.repair_shared` that applies it before the
shared
mix: the least lift (against the Dijkstra of :func:`column_lift`), fixed entries and row sums
kept, cross-matrix ratios among fixed entries kept, and a smaller mixing weight."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from privopt.geo.clr import geo_ind_edges
from privopt.perturbation.lift import column_lift, lift_free_entries
from privopt.perturbation.matrix import repair_shared, scan_violations

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


@SETTINGS
@given(st.integers(0, 10_000), st.integers(2, 7), st.integers(2, 9), st.floats(0.5, 8.0))
def test_repair_shared_with_free_lifts_first_and_keeps_cross_ratios(seed, n, k, eps) -> None:
    """Two matrices whose fixed entries are ``g_ik y_k`` with one y (ε/2 ratios across them,
    as LR-Geo's exponential entries) and violating free entries: with ``free=`` every
    constraint holds, fixed entries only move by the shared mix, and cross ratios among fixed
    entries are kept."""
    rng = np.random.default_rng(seed)
    pts = rng.uniform(0, 3, (2 * n, 2))
    cols = rng.uniform(0, 3, (k, 2))
    y = rng.uniform(0.0, 0.3, k)
    mats, frees, edges, rows = [], [], [], []
    for part in (np.arange(n), np.arange(n, 2 * n)):
        dk = np.linalg.norm(pts[part, None] - cols[None], axis=2)
        free = dk <= 1.0
        free[np.arange(n), np.argmin(dk, axis=1)] = True  # every row has a free entry
        z = np.where(free, 0.0, np.exp(-eps * dk / 2) * y)
        z = z / max(1.0, z.sum(axis=1).max())  # fixed mass ≤ 1 per row, one common factor
        fill = rng.dirichlet(np.ones(k), n) * free
        fill /= fill.sum(axis=1, keepdims=True)
        z = z + fill * (1 - z.sum(axis=1, keepdims=True))
        d = np.linalg.norm(pts[part, None] - pts[None, part], axis=2)
        mats.append(z), frees.append(free), edges.append(geo_ind_edges(d, 1.5)), rows.append(part)
    fixed, alpha = repair_shared(mats, edges, eps, free=frees)
    assert 0.0 <= alpha <= 1.0
    for z, raw, f, e in zip(fixed, mats, frees, edges, strict=True):
        assert scan_violations(z, e, eps).max_relative <= 1e-12
        np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-12)
        # fixed entries: (1 − α) z + α/K (the uniform partner), whatever the lift did
        np.testing.assert_allclose(z[~f], ((1 - alpha) * raw + alpha / k)[~f], rtol=1e-12)
    d_all = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    for p in rows[0]:
        for q in rows[1]:
            both = ~frees[0][p] & ~frees[1][q - n]
            bound = np.exp(eps * d_all[p, q] / 2) * fixed[1][q - n, both]
            assert np.all(fixed[0][p, both] <= bound * (1 + 1e-12) + 1e-300)


def test_repair_shared_refuses_free_masks_that_do_not_match() -> None:
    import pytest
    from privopt.errors import InvalidInput

    z = np.array([[0.5, 0.5], [0.5, 0.5]])
    e = geo_ind_edges(np.array([[0.0, 1.0], [1.0, 0.0]]), 2.0)
    with pytest.raises(InvalidInput, match="free must match"):
        repair_shared([z], [e], 1.0, free=[np.ones((2, 3), bool)])
    with pytest.raises(InvalidInput, match="free must match"):
        repair_shared([z], [e], 1.0, free=[])
