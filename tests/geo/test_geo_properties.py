"""Hypothesis properties of LR-Geo (issue 14): Thm 4.4, Prop 4.3/4.5, scaling, solver agreement,
the planar Laplace sampler, the CR-table bounds, JSON round trips and bad input."""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from privopt.errors import InvalidInput
from privopt.geo import (
    CostReferenceTable,
    GeoParams,
    TravelCosts,
    UserBlock,
    build_model,
    grid_geography,
    run_lrgeo,
    solve_clr,
)

SETTINGS = settings(
    max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _instance(seed: int, gamma: float, r_exp: float, eps: float):
    rng = np.random.default_rng(seed)
    geo = grid_geography(5, 5, metric="euclidean", road_factor=1.0 + rng.uniform(0, 0.5))
    params = GeoParams(
        epsilon=eps, gamma=gamma, lr_radius=2.0, r_exp=r_exp, r_obf=max(r_exp, 2.5), lr_max_size=8
    )
    users = rng.choice(25, 2, replace=False)
    return geo, params, users


@SETTINGS
@given(
    st.integers(0, 1000),
    st.sampled_from([1.0, 1.5, math.inf]),
    st.floats(0.5, 2.0),
    st.floats(0.3, 2.0),
)
def test_exponential_entries_are_half_eps_across_users(seed, gamma, r_exp, eps) -> None:
    """Thm 4.4: every pair of exponential entries, across or within users, satisfies ε/2
    Geo-Ind for any y and γ — also after the shared-weight repair."""
    geo, params, users = _instance(seed, gamma, r_exp, eps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_lrgeo(geo, params, users, TravelCosts(geo), method="lp", rng=seed)
    d = geo.distance_matrix()
    for a, za in zip(res.lr_sets, res.matrices, strict=True):
        for b, zb in zip(res.lr_sets, res.matrices, strict=True):
            ea, eb = d[a] > params.r_exp, d[b] > params.r_exp
            for p in range(a.size):
                for q in range(b.size):
                    both = ea[p] & eb[q]
                    bound = np.exp(eps * d[a[p], b[q]] / 2) * zb.matrix[q, both]
                    assert np.all(za.matrix[p, both] <= bound * (1 + 1e-9) + 1e-15)
    # Prop 4.3: the request circle around any v_a of N_m covers N_m and O_m (centred at v_m).
    radius = params.request_radius
    for lr, user in zip(res.lr_sets, res.users, strict=True):
        cover = np.flatnonzero(d[user] <= params.r_obf)
        for a in lr:
            assert np.all(d[a, np.union1d(lr, cover)] <= radius + 1e-12)


def test_planar_laplace_radius_law() -> None:
    from privopt.dp.planar import planar_laplace_noise, planar_laplace_radius_cdf
    from scipy.stats import kstest

    east, north = planar_laplace_noise(10.0, 20_000, rng=3)
    r = np.hypot(east, north)
    assert r.mean() == pytest.approx(0.2, rel=0.03)  # 2/ε
    assert kstest(r, lambda x: planar_laplace_radius_cdf(x, 10.0)).pvalue > 1e-3
    angle = np.arctan2(north, east)
    assert kstest((angle + np.pi) / (2 * np.pi), "uniform").pvalue > 1e-3


@settings(SETTINGS, max_examples=3)
@given(st.integers(0, 10_000), st.floats(2.0, 10.0))
def test_planar_laplace_with_snapping_has_the_exact_snapped_distribution(seed, eps) -> None:
    """The baseline's snapped reports (planar Laplace, then the nearest location) follow the
    exact snapped law: the density ε²/(2π) e^{−εr} integrated over each location's Voronoi cell,
    computed by quadrature (radius midpoints in probability of its Gamma(2, 1/ε) law × a
    uniform angle grid, mapped and snapped as the mechanism does), χ² test on 20,000 reports."""
    from privopt.geo.baselines import laplace
    from privopt.geometry import nearest, offset_latlon
    from scipy.stats import chisquare
    from scipy.stats import gamma as gamma_law

    rng = np.random.default_rng(seed)
    geo = grid_geography(5, 5, 0.2, metric="haversine")
    row = int(rng.integers(25))
    params = GeoParams(epsilon=eps, gamma=0.3, lr_radius=1.0, r_obf=1.0, r_exp=0.5)
    n = 20_000
    pm = laplace(geo, params, TravelCosts(geo), [row], n_samples=n, rng=seed)
    counts = np.rint(pm.matrix[0] * n)
    assert counts.sum() == n and pm.row_index.tolist() == [row]
    n_r, n_a = 600, 240  # within 1.2e-4 of a 4,000 × 1,440 grid; the χ² noise is ~3e-3
    radius = gamma_law.ppf((np.arange(n_r) + 0.5) / n_r, 2, scale=1.0 / eps)
    angle = 2 * np.pi * (np.arange(n_a) + 0.5) / n_a
    east, north = np.outer(radius, np.cos(angle)).ravel(), np.outer(radius, np.sin(angle)).ravel()
    points = offset_latlon(np.repeat(geo.points[[row]], east.size, axis=0), east, north)
    cell, _ = nearest(points, geo.points, "haversine")
    exact = np.bincount(cell, minlength=25) / cell.size
    big = exact * n >= 5  # χ² needs expected counts ≥ 5: the rest are pooled
    observed = np.append(counts[big], counts[~big].sum())
    expected = np.append(exact[big], exact[~big].sum()) * n
    keep = expected > 0
    assert (
        chisquare(observed[keep], expected[keep] * observed.sum() / expected[keep].sum()).pvalue
        > 1e-3
    )


def test_cr_estimates_bound_the_true_costs() -> None:
    """ĉ (road correction) ≥ c̄ ≥ c̃ for every pair (Lemmas B.1, B.2 with §8's caveat)."""
    geo = grid_geography(10, 10, 0.5, metric="haversine", road_factor=1.3)
    table = CostReferenceTable(geo, 8, cell_km=0.3, rng=2)
    rows = np.arange(0, 100, 7)
    cols = np.arange(100)
    beta = table.beta(table.snap[rows], table.snap[cols])
    t = table.snap_road_km[rows, None] + table.snap_road_km[None, cols]
    c = table.true_costs(rows, cols)
    assert np.all(beta + t >= c - 1e-9)
    assert np.all(np.maximum(beta - t, 0) <= c + 1e-9)
    assert table.n_points < table.fine_road.n_nodes
    # Anchored at the locations, every location is its own V̂ point: ĉ = c̃ = c̄ exactly.
    anchored = CostReferenceTable(geo, 8, cell_km=0.3, rng=2, anchor_locations=True)
    assert anchored.n_points == table.n_points and anchored.delta_max == 0.0
    np.testing.assert_array_equal(anchored.points_index[anchored.snap], geo.road_nodes)
    np.testing.assert_allclose(
        anchored.beta(anchored.snap[rows], anchored.snap[cols]),
        anchored.true_costs(rows, cols),
        rtol=1e-12,
        atol=1e-15,
    )


def test_anchored_cr_table_makes_the_approximation_ratio_one() -> None:
    """With exact estimates (anchored V̂) the relaxed bound (Thm 4.7) uses c̄ itself; at
    r_exp ≥ the LR sets' reach (no coupling) LR-Geo's cost equals it (ratio 1)."""
    geo = grid_geography(8, 8, 0.5, metric="haversine", road_factor=1.3)
    params = GeoParams(epsilon=3.0, gamma=0.6, lr_radius=2.0, r_obf=6.0, r_exp=6.0, lr_max_size=6)
    table = CostReferenceTable(geo, 6, cell_km=0.2, rng=1, anchor_locations=True)
    res = run_lrgeo(geo, params, [5, 40, 62], table, rng=1)
    for low, true in zip(res.lower_costs, res.true_costs, strict=True):
        np.testing.assert_allclose(low, true, rtol=1e-12, atol=1e-15)
    assert res.relaxed_bound() == pytest.approx(res.relaxed_bound(exact=True), rel=1e-12)
    assert res.cost() / res.relaxed_bound() == pytest.approx(1.0, abs=3e-6)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": 10.0, "lr_radius": -1.0}, "lr_radius"),
        ({"epsilon": 10.0, "r_exp": 5.0, "r_obf": 4.0}, "r_exp"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": 10.0, "gamma": float("nan")}, "gamma"),
        ({"epsilon": 10.0, "lr_max_size": 0}, "lr_max_size"),
    ],
)
def test_bad_parameters(kwargs, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        GeoParams(**kwargs)


def test_bad_runs() -> None:
    from privopt.geo import Geography
    from privopt.graphs import Graph

    geo = grid_geography(3, 3)
    params = GeoParams(epsilon=1.0, gamma=1.0, lr_radius=1.0, r_exp=1.0, r_obf=2.0)
    costs = TravelCosts(geo)
    with pytest.raises(InvalidInput, match="users"):
        run_lrgeo(geo, params, [9], costs)  # a user outside the map
    with pytest.raises(InvalidInput, match="users"):
        run_lrgeo(geo, params, np.zeros(0, dtype=int), costs)  # M = 0
    with pytest.raises(InvalidInput, match=r"K \(the number of locations.*\|V\| = 9\], got K = 10"):
        geo.sample(10)  # K > |V|
    with pytest.raises(InvalidInput, match="got K = 0"):
        geo.sample(0)
    with pytest.raises(InvalidInput, match="non-finite"):
        grid_geography(2, 2).__class__(
            road=Graph.from_edges(2, [0], [1], [1.0]),
            road_nodes=[0, 1],
            points=[[np.nan, 0.0], [0.0, 0.0]],
            metric="euclidean",
        )
    with pytest.raises(InvalidInput, match="disconnected"):
        Geography(
            road=Graph.from_edges(3, [0], [1], [1.0]),
            road_nodes=[0, 1, 2],
            points=[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]],
            metric="euclidean",
        )
    with pytest.raises(InvalidInput, match="outside the map"):
        grid_geography(3, 3, metric="haversine").locate([10.0, 10.0])


@pytest.mark.parametrize("failure", ["numerical", "limit", "limit with an infeasible result"])
def test_auto_falls_back_to_the_lp_when_benders_fails(monkeypatch, failure: str) -> None:
    """'auto' answers with the monolithic LP when Benders fails numerically or stops without a
    feasible point; 'benders' reports the failure."""
    import privopt.geo.solve as solve_mod
    from privopt.errors import NumericalTrouble, SolverLimit

    geo, params, users = _instance(3, 1.0, 0.8, 1.0)
    res = run_lrgeo(geo, params, users, TravelCosts(geo), method="lp", rng=0)
    model = build_model(
        [UserBlock(u.pair_distances, u.column_distances, u.cost) for u in res.uploads], params
    )
    error = NumericalTrouble("ray not confirmed") if failure == "numerical" else SolverLimit("it")
    if failure == "limit with an infeasible result":  # the engine attaches its result anyway
        error = SolverLimit("no feasible master point", best=SimpleNamespace(upper_bound=math.inf))

    def failing(*args, **kwargs):
        raise error

    monkeypatch.setattr(solve_mod, "_solve_benders", failing)
    sol = solve_clr(model, "auto")
    assert sol.method == "lp" and sol.status == "optimal" and "fallback" in sol.info
    assert sol.objective == pytest.approx(res.solution.objective, rel=2e-6)
    with pytest.raises(type(error)):
        solve_clr(model, "benders")


def test_ambiguity_counts_always_include_the_true_row() -> None:
    """§10 exact interval [ĉ − 2δ_max, ĉ]: the row the user really asked for always matches
    (ĉ = β + two road corrections, each ≤ δ_max), so every count is ≥ 1; the paper's symmetric
    interval [ĉ − δ_max, ĉ + δ_max] can miss it."""
    geo = grid_geography(8, 8, 0.5, metric="haversine", road_factor=1.3)
    params = GeoParams(epsilon=2.0, gamma=0.6, lr_radius=2.0, r_obf=1.5, r_exp=1.0, lr_max_size=6)
    table = CostReferenceTable(geo, 6, cell_km=0.3, rng=1)
    res = run_lrgeo(geo, params, [5, 40], table, rng=1)
    exact = res.ambiguity(table, columns_per_user=None)
    assert exact.size == sum(u.cost.size for u in res.uploads) and exact.min() >= 1
    paper = res.ambiguity(table, interval="paper", columns_per_user=None)
    assert paper.shape == exact.shape and paper.max() <= table.n_points


def test_within_user_gve_is_zero_and_across_is_reported_apart() -> None:
    geo, params, users = _instance(11, 1.0, 0.8, 1.5)
    res = run_lrgeo(geo, params, users, TravelCosts(geo), rng=0)
    v = res.violations()
    assert v.n_violated_within == 0 and v.max_gve_within == 0.0
    assert v.max_gve == max(v.max_gve_within, v.max_gve_across)
    assert (v.n_violated_across == 0) == (v.max_gve_across == 0.0)


def test_relaxed_bound_on_a_metric_matrix_map_equals_the_coordinate_one() -> None:
    """The relaxed bound (Thm 4.7) on a map known only by its metric matrix equals the one on
    the same map given by coordinates (MDPProblem with an output-distance table)."""
    from privopt.geo import Geography

    geo = grid_geography(5, 5, metric="euclidean", road_factor=1.2)
    matrix_map = Geography(
        road=geo.road,
        road_nodes=geo.road_nodes,
        metric="precomputed",
        distances=geo.distance_matrix(),
    )
    params = GeoParams(epsilon=1.0, gamma=1.0, lr_radius=2.0, r_exp=1.5, r_obf=2.5, lr_max_size=6)
    bounds = []
    for g in (geo, matrix_map):
        res = run_lrgeo(g, params, [6, 18], TravelCosts(g), rng=0)
        bounds.append((res.relaxed_bound(), res.relaxed_bound(exact=True), res.cost()))
    assert bounds[1] == pytest.approx(bounds[0], rel=1e-7)
    assert bounds[0][0] <= bounds[0][2] * (1 + 1e-9)


def test_output_distance_table_is_validated() -> None:
    from privopt.mdp import MDPProblem

    d = np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(InvalidInput, match="output_distances must have shape"):
        MDPProblem(d, epsilon=1.0, eta=1.0, metric="precomputed", output_distances=np.ones((3, 2)))
    with pytest.raises(InvalidInput, match="output_distances must be >= 0"):
        MDPProblem(d, epsilon=1.0, eta=1.0, metric="precomputed", output_distances=-np.ones((2, 3)))
    with pytest.raises(InvalidInput, match="not both"):
        MDPProblem(d, epsilon=1.0, eta=1.0, metric="precomputed", outputs=1, output_distances=d)
    prob = MDPProblem(d, epsilon=1.0, eta=1.0, metric="precomputed", output_distances=d[:, :1] + 2)
    assert prob.n_outputs == 1 and prob.output_index is None and prob.cost[0, 0] == 2.0


@SETTINGS
@given(st.integers(0, 10_000), st.floats(0.6, 2.0), st.floats(0.0, 1.0))
def test_lr_set_is_the_metric_ball_when_the_radius_is_within_gamma(seed, gamma, frac) -> None:
    """Γ ≤ γ_graph < diameter: the ball replaces the bounded Dijkstra exactly (D = d there);
    checked against the search on the explicitly built graph, on a jittered grid."""
    from privopt.geo import Geography, GeoIndGraph
    from privopt.graphs import Graph

    rng = np.random.default_rng(seed)
    base = grid_geography(7, 7, metric="euclidean")
    pts = base.points + rng.uniform(-0.3, 0.3, base.points.shape)
    geo = Geography(road=base.road, road_nodes=base.road_nodes, points=pts, metric="euclidean")
    g = GeoIndGraph(geo, gamma)
    assert g.graph is not None  # γ < diameter: a real graph
    radius = frac * gamma
    d = geo.distance_matrix()
    i, j = np.nonzero(np.triu(d <= gamma, k=1))
    explicit = Graph.from_edges(geo.n_locations, i, j, d[i, j])
    for m in rng.choice(geo.n_locations, 5, replace=False):
        ball = g.lr_set(int(m), radius)
        search = explicit.distances(int(m), cutoff=radius)
        assert ball.nodes[0] == m and set(ball.nodes) == set(search.nodes)
        order = np.argsort(search.nodes)
        np.testing.assert_allclose(ball.distances[np.argsort(ball.nodes)], search.distances[order])


def test_auto_uses_row_generation_when_geo_ind_rows_dominate() -> None:
    """At γ = ∞ every pair of LR rows is constrained: many Geo-Ind rows per free variable, so
    'auto' picks row generation; at γ = 1 km it keeps Benders. Same optimum either way."""
    from privopt.geo.solve import ROWGEN_ROW_RATIO

    geo = grid_geography(6, 6, metric="euclidean")
    for gamma, want in ((math.inf, "rowgen"), (1.0, "benders")):
        p = GeoParams(epsilon=1.0, gamma=gamma, lr_radius=3.0, r_exp=4.0, r_obf=4.5, lr_max_size=12)
        res = run_lrgeo(geo, p, [7, 28], TravelCosts(geo), method="lp", rng=0)
        model = build_model([u.block() for u in res.uploads], p)
        dense = model.info["geo_rows"] > ROWGEN_ROW_RATIO * model.info["free_variables"]
        assert dense == (want == "rowgen")
        auto = solve_clr(model, "auto")
        assert auto.method == want and auto.status == "optimal"
        assert auto.objective == pytest.approx(res.solution.objective, rel=2e-6)


def test_auto_bounds_the_benders_attempt_and_falls_back_when_it_stops_short(monkeypatch) -> None:
    """'auto' gives Benders at most AUTO_BENDERS_ITERATIONS and answers with the LP when
    Benders ends short of its gap; 'benders' keeps the caller's limit and reports it."""
    import privopt.geo.solve as solve_mod

    geo, params, users = _instance(3, 1.0, 0.8, 1.0)
    res = run_lrgeo(geo, params, users, TravelCosts(geo), method="lp", rng=0)
    model = build_model([u.block() for u in res.uploads], params)
    seen = []
    original = solve_mod._solve_benders

    def short(model, rel_gap, abs_gap, executor, time_limit, max_iterations, progress):
        seen.append(max_iterations)
        out = original(model, rel_gap, abs_gap, executor, time_limit, max_iterations, progress)
        out[3]["benders_status"] = "iteration_limit"  # as if it had stopped short
        return out

    monkeypatch.setattr(solve_mod, "_solve_benders", short)
    sol = solve_clr(model, "auto", max_iterations=1000)
    assert seen == [solve_mod.AUTO_BENDERS_ITERATIONS]
    assert sol.method == "lp" and "iteration_limit" in sol.info["fallback"]
    assert sol.objective == pytest.approx(res.solution.objective, rel=2e-6)
    bd = solve_clr(model, "benders", max_iterations=1000)  # certified on its own bound
    assert seen[-1] == 1000 and bd.method == "benders" and "fallback" not in bd.info


def test_tiny_geo_ind_coefficients_reach_highs() -> None:
    """Rows with ε·d near the cap carry coefficients e^{−εd} ~ 1e-11 after scaling; HiGHS must
    keep them (small_matrix_value), else the LP point violates them by up to 1 and the repair
    must mix: here the row z_00 ≤ e^{εd} g ỹ_0 across 2.2 km at ε = 10 km⁻¹ (εd = 22). The
    objective (~3e-10) is below what a relative gap can certify, so only the point is checked."""
    from privopt.geo.clr import UserBlock

    d = np.array([[0.0, 2.2], [2.2, 0.0]])
    block = UserBlock(d, d, np.array([[0.0, 1.0], [1.0, 0.0]]))
    params = GeoParams(epsilon=10.0, gamma=3.0, lr_radius=3.0, r_exp=1.0, r_obf=4.5)
    model = build_model([block], params)
    # (Benders is left out: its engine passes each subproblem to HiGHS before the options.)
    for method in ("lp", "rowgen"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # uncertifiable at this scale, see above
            sol = solve_clr(model, method)
        assert sol.info["repair_alpha"] < 1e-15, method  # the LP point needed no repair
        assert float(sol.y_tilde.min()) > 0  # both rows need y > 0 on the other's column
