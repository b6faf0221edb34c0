"""Hypothesis hunts for counterexamples to the paper's statements and the solvers' agreement
(issue 14, Tests: properties), on random small instances:

- Thm 4.4: exponential entries ``g_ik y_k`` are ε/2-Geo-Ind across users for *any* ỹ in its
  bounds, not only the solver's, and still after the release (lift + one shared mix);
- Prop. 4.5 at γ = ∞: the measured all-pairs violation ratio is at most formula (30);
- Γ ≥ diameter: CLR-Geo = M × ConstOPT; r_exp ≥ diameter: CLR-Geo = Σ relaxed LR problems;
- Benders (serial, threads, processes) = row generation = the monolithic LP, on instances where
  the coupling is active (y* > 0, asserted), and the rescaled ỹ is the paper's y.

Example counts are bounded (the whole geo suite stays ~1 min on 2 cores).
"""

from __future__ import annotations

import math
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from privopt.geo import (
    Geography,
    GeoParams,
    LRGeoClient,
    SnapTable,
    TravelCosts,
    UserBlock,
    build_model,
    grid_geography,
    run_lrgeo,
    solve_clr,
)
from privopt.geo.baselines import const_opt
from privopt.geo.release import release_matrices
from privopt.perturbation.matrix import verify_matrix

SETTINGS = settings(
    max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _jittered(seed: int, rows: int, cols: int, jitter: float = 0.25) -> Geography:
    """A rows × cols grid (1 km cells) with jittered points and grid roads 1–1.5× longer."""
    rng = np.random.default_rng(seed)
    base = grid_geography(rows, cols, metric="euclidean", road_factor=1.0 + rng.uniform(0, 0.5))
    pts = base.points + rng.uniform(-jitter, jitter, base.points.shape)
    return Geography(road=base.road, road_nodes=base.road_nodes, points=pts, metric="euclidean")


def _blocks(geo: Geography, params: GeoParams, users, seed: int) -> list[UserBlock]:
    """The users' uploads with the exact costs (ĉ = c̃ = c̄), built by the client."""
    k = geo.n_locations
    client = LRGeoClient(geo, params, SnapTable(np.arange(k), np.zeros(k), np.zeros(k)))
    costs = TravelCosts(geo)
    out = []
    for u in users:
        state = client.start(int(u), rng=seed)
        rows = state.lr_set
        out.append(
            UserBlock(
                geo.distance_rows(rows, rows), geo.distance_rows(rows), costs.true_costs(rows)
            )
        )
    return out


def _lr_sets(geo: Geography, params: GeoParams, users, seed: int) -> list[np.ndarray]:
    k = geo.n_locations
    client = LRGeoClient(geo, params, SnapTable(np.arange(k), np.zeros(k), np.zeros(k)))
    return [client.start(int(u), rng=seed).lr_set for u in users]


def _assert_half_eps_across(mats, sets, geo, eps, r_exp) -> None:
    """Every pair of exponential entries, of two users or of one: z_ik ≤ e^{ε d_ij / 2} z_jk."""
    d = geo.distance_matrix()
    for a, za in zip(sets, mats, strict=True):
        for b, zb in zip(sets, mats, strict=True):
            ea, eb = d[a] > r_exp, d[b] > r_exp  # (n_a, K), (n_b, K): exponential entries
            both = ea[:, None, :] & eb[None, :, :]
            rhs = np.exp(eps * d[np.ix_(a, b)] / 2)[:, :, None] * zb[None, :, :]
            assert np.all(~both | (za[:, None, :] <= rhs * (1 + 1e-9) + 1e-300))


@SETTINGS
@given(
    st.integers(0, 10_000),
    st.sampled_from([1.0, 1.5, math.inf]),
    st.floats(0.3, 2.0),
    st.floats(0.3, 3.0),
    st.integers(2, 4),
)
def test_thm44_holds_for_any_y_in_its_bounds_and_after_the_release(
    seed, gamma, r_exp, eps, n_users
) -> None:
    """Thm 4.4 for a random ỹ ∈ [0, ỹ_max] and random free entries (not the solver's point):
    the assembled exponential entries are ε/2-Geo-Ind across users. Made row-stochastic (ỹ
    scaled by one common factor, free entries filling each row), the release keeps that and
    makes each user's matrix (ε, γ)-Geo-Ind."""
    rng = np.random.default_rng(seed)
    geo = _jittered(seed, 5, 5)
    params = GeoParams(
        epsilon=eps,
        gamma=gamma,
        gamma_graph=math.inf,
        lr_radius=2.5,
        r_exp=r_exp,
        r_obf=r_exp + rng.uniform(0, 1.5),
        lr_max_size=int(rng.integers(3, 9)),
    )
    users = rng.choice(25, n_users, replace=False)
    sets = _lr_sets(geo, params, users, seed)
    model = build_model(_blocks(geo, params, users, seed), params)
    y = rng.uniform(0, 1, model.n_columns) * model.y_upper * (rng.random(model.n_columns) < 0.8)
    raw = [b.assemble(rng.uniform(0, 1, b.n_free), y) for b in model.blocks]
    _assert_half_eps_across(raw, sets, geo, eps, r_exp)  # any ỹ, any free entries
    # Row-stochastic points: one factor for every user keeps the shared ỹ shared.
    mass = max(float(np.where(b.free, 0.0, b.g * y).sum(axis=1).max()) for b in model.blocks)
    y = y / max(1.0, mass / rng.uniform(0.3, 1.0))
    raw = []
    for b in model.blocks:
        z = np.where(b.free, 0.0, b.g * y)
        fill = rng.dirichlet(np.ones(z.shape[1]), z.shape[0]) * b.free
        fill /= fill.sum(axis=1, keepdims=True)  # every row has its own cell free (d = 0)
        raw.append(z + fill * (1.0 - z.sum(axis=1, keepdims=True)))
    _assert_half_eps_across(raw, sets, geo, eps, r_exp)
    release = release_matrices(model, raw)
    released, alpha = release.matrices, release.alpha
    assert 0.0 <= alpha <= 1.0
    _assert_half_eps_across(released, sets, geo, eps, r_exp)
    for m, z in enumerate(released):
        np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-12)
        check = verify_matrix(z, model.user_edges(m), eps)
        assert check.ok(1e-9), check


@SETTINGS
@given(st.integers(0, 10_000), st.floats(0.5, 2.0), st.floats(0.5, 2.5), st.integers(2, 4))
def test_prop45_bound_holds_at_gamma_inf(seed, eps, r_exp, n_users) -> None:
    """Prop. 4.5 (30) with γ = ∞ (LR-Geo-F, where its proof holds): the fraction of violated
    constraints over all ordered pairs of LR rows, within and across users, every column, is
    at most the formula's."""
    rng = np.random.default_rng(seed)
    geo = _jittered(seed, 5, 5)
    params = GeoParams(
        epsilon=eps,
        gamma=math.inf,
        lr_radius=rng.uniform(1.0, 3.0),
        r_exp=r_exp,
        r_obf=r_exp + 0.5,
        lr_max_size=int(rng.integers(3, 8)),
    )
    users = rng.choice(25, n_users, replace=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a status short of "optimal" does not matter here
        res = run_lrgeo(geo, params, users, TravelCosts(geo), rng=seed)
    v = res.violations(all_pairs=True)
    assert v.n_violated_within == 0  # γ = ∞: every within-user pair is a Geo-Ind row
    assert v.gv_ratio <= res.prop45_bound() + 1e-12


@SETTINGS
@given(
    st.integers(0, 10_000),
    st.floats(0.5, 2.0),
    st.sampled_from([1.0, 1.5, math.inf]),
    st.floats(0.5, 2.0),
    st.integers(2, 3),
)
def test_lr_radius_beyond_the_diameter_gives_m_times_constopt(
    seed, eps, gamma, r_exp, n_users
) -> None:
    """Γ ≥ diameter and no size cap: every user's LR set is V, so the M blocks are ConstOPT's
    block (rows permuted) sharing one ỹ, and CLR-Geo = M × ConstOPT."""
    rng = np.random.default_rng(seed)
    geo = _jittered(seed, 3, 4)
    params = GeoParams(
        epsilon=eps,
        gamma=gamma,
        gamma_graph=math.inf,
        lr_radius=float(geo.distance_matrix().max()) + 0.1,
        r_exp=r_exp,
        r_obf=r_exp + rng.uniform(0, 1.0),
        lr_max_size=None,
    )
    costs = TravelCosts(geo)
    users = rng.choice(12, n_users, replace=False)
    res = run_lrgeo(geo, params, users, costs, method="lp", rng=seed)
    assert all(len(lr) == 12 for lr in res.lr_sets)
    one = const_opt(geo, params, costs)
    assert res.solution.status == "optimal" and one.relative_gap <= 1e-6
    assert res.solution.objective == pytest.approx(n_users * one.expected_loss, rel=3e-6)


@SETTINGS
@given(
    st.integers(0, 10_000),
    st.floats(0.5, 2.0),
    st.sampled_from([1.0, 1.5, math.inf]),
    st.integers(1, 3),
    st.integers(3, 8),
)
def test_r_exp_beyond_the_diameter_gives_the_sum_of_relaxed_problems(
    seed, eps, gamma, n_users, cap
) -> None:
    """r_exp ≥ diameter: no entry is exponential, nothing couples the users, and each block is
    the relaxed LR problem (31)–(32) with the exact costs: CLR-Geo = Σ_m relaxed_m."""
    rng = np.random.default_rng(seed)
    geo = _jittered(seed, 4, 4)
    diameter = float(geo.distance_matrix().max())
    params = GeoParams(
        epsilon=eps,
        gamma=gamma,
        gamma_graph=math.inf,
        lr_radius=rng.uniform(1.0, 3.0),
        r_exp=diameter,
        r_obf=diameter + 1.0,
        lr_max_size=cap,
    )
    users = rng.choice(16, n_users, replace=False)
    res = run_lrgeo(geo, params, users, TravelCosts(geo), method="lp", rng=seed)
    assert res.solution.status == "optimal"
    assert float(np.max(res.solution.y_tilde, initial=0.0)) == 0.0
    total = n_users * res.relaxed_bound()  # the mean over users of rigorous lower bounds
    assert total <= res.solution.objective * (1 + 1e-9)
    assert res.solution.objective == pytest.approx(total, rel=3e-6)


def _coupled_model(seed: int, eps: float, gamma: float, n_users: int):
    """A 5×5 instance whose coupling is active: r_exp < 1 km on a 1-km grid leaves each row
    only its own cell free, so a row with a Geo-Ind neighbour needs y > 0 (y = 0 would force
    z_ii ≤ e^{εd} g y_i = 0 against Σ_k z_ik = 1)."""
    rng = np.random.default_rng(seed)
    geo = _jittered(seed, 5, 5, jitter=0.05)
    params = GeoParams(
        epsilon=eps,
        gamma=gamma,
        gamma_graph=math.inf,
        lr_radius=2.0,
        r_exp=rng.uniform(0.3, 0.85),
        r_obf=rng.uniform(1.0, 2.5),
        lr_max_size=int(rng.integers(4, 9)),
    )
    users = rng.choice(25, n_users, replace=False)
    return build_model(_blocks(geo, params, users, seed), params)


def _assert_agree(reference, *others) -> None:
    assert reference.status == "optimal"
    assert float(reference.y_tilde.max()) > 0  # the coupling is active: y* > 0
    for s in others:
        assert s.status == "optimal" and float(s.y_tilde.max()) > 0
        assert s.objective == pytest.approx(reference.objective, rel=3e-6)
        assert s.lower_bound <= reference.objective * (1 + 1e-9)
        assert reference.lower_bound <= s.objective * (1 + 1e-9)


@SETTINGS
@given(
    st.integers(0, 10_000),
    st.floats(0.5, 2.0),
    st.sampled_from([1.1, 1.5, math.inf]),
    st.integers(2, 4),
)
def test_benders_rowgen_and_lp_agree_with_y_positive(seed, eps, gamma, n_users) -> None:
    """Benders (serial and on threads) = row generation = the monolithic LP, y* > 0; the
    rescaled ỹ reproduces the paper's y."""
    model = _coupled_model(seed, eps, gamma, n_users)
    lp = solve_clr(model, "lp")
    serial = solve_clr(model, "benders")
    with ThreadPoolExecutor(2) as pool:
        threads = solve_clr(model, "benders", executor=pool)
    rowgen = solve_clr(model, "rowgen")
    assert rowgen.info["rows"] <= rowgen.info["rows_full"]
    _assert_agree(lp, serial, threads, rowgen)
    np.testing.assert_allclose(threads.objective, serial.objective, rtol=1e-12)
    # ỹ scaling (§7.3): y = ỹ e^{ε r_exp / 2} gives the paper's unscaled entries g_ik y_k.
    p, up, block = model.params, model.uploads[0], model.blocks[0]
    g = np.exp(-p.epsilon * np.minimum(up.column_distances, p.r_obf) / 2)
    y = lp.y_tilde * model.y_scale()
    raw = block.assemble(np.zeros(block.n_free), lp.y_tilde)
    np.testing.assert_allclose(raw[~block.free], (g * y)[~block.free], rtol=1e-9)


@pytest.fixture(scope="module")
def process_pool():
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        yield pool


@settings(SETTINGS, max_examples=3)
@given(st.integers(0, 10_000), st.floats(0.5, 2.0), st.integers(2, 3))
def test_benders_on_a_process_pool_agrees_with_the_lp(process_pool, seed, eps, n_users) -> None:
    """Benders with its subproblems in other processes (pickled blocks) = the LP, y* > 0."""
    model = _coupled_model(seed, eps, 1.1, n_users)
    lp = solve_clr(model, "lp")
    procs = solve_clr(model, "benders", executor=process_pool)
    assert procs.info["executor"] != "serial"
    _assert_agree(lp, procs)
