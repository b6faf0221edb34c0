"""MDPProblem: metrics, neighbour pairs, components, data generators, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from mdp_instances import random_2d
from privopt.errors import InvalidInput
from privopt.mdp import MDPProblem, gaussian_3d, km_to_latlon, load_rome_nodes, rome_grid
from privopt.perturbation.metrics import haversine_km
from scipy.sparse import csgraph


def test_edges_match_brute_force(small_random: MDPProblem) -> None:
    p = small_random
    want = {
        (i, j)
        for i in range(p.n_records)
        for j in range(p.n_records)
        if i != j and math.dist(p.points[i], p.points[j]) <= p.eta
    }
    e = p.edges
    assert set(zip(e.i.tolist(), e.j.tolist(), strict=True)) == want
    np.testing.assert_allclose(
        e.d,
        [math.dist(p.points[i], p.points[j]) for i, j in zip(e.i, e.j, strict=True)],
        rtol=1e-14,
    )


def test_grid_sizes_spec_item_12() -> None:
    p = MDPProblem(rome_grid(), epsilon=10.0, eta=2.0)
    assert p.n_records == 500 and len(p.edges) == 5554
    deg = np.bincount(p.edges.i, minlength=500).reshape(20, 25)
    assert deg[5, 5] == 12  # interior: 8 within √2 plus 4 at distance exactly 2 (inclusive)


def test_haversine_lat_lon_order() -> None:
    # One degree of latitude is 6371·π/180 km; one degree of longitude at 60° is half that.
    one = 6371.0 * math.pi / 180
    a = np.array([[0.0, 0.0], [60.0, 10.0]])
    b = np.array([[1.0, 0.0], [60.0, 11.0]])
    d = haversine_km(a, b)
    assert d[0, 0] == pytest.approx(one, rel=1e-12)
    assert d[1, 1] == pytest.approx(one * 0.5, rel=2e-4)
    with pytest.raises(InvalidInput, match="lat"):
        MDPProblem(np.array([[95.0, 12.0]]), epsilon=1, eta=1, metric="haversine")


def test_grid_latlon_round_trip_distances() -> None:
    xy = rome_grid(3, 4)
    ll = km_to_latlon(xy)
    d_km = MDPProblem(ll, epsilon=1, eta=2, metric="haversine").distances
    d_xy = MDPProblem(xy, epsilon=1, eta=2).distances
    np.testing.assert_allclose(d_km, d_xy, atol=5e-3)


def test_graph_metric_and_precomputed_agree() -> None:
    rng = np.random.default_rng(1)
    road = sp.random_array((30, 30), density=0.15, rng=rng, format="csr")
    road.data = rng.uniform(0.2, 1.0, road.data.size)
    nodes = np.array([0, 3, 7, 11, 20])
    p = MDPProblem(nodes, epsilon=1.0, eta=1.5, metric="graph", graph=road)
    ref = csgraph.dijkstra(road, directed=False, indices=nodes)[:, nodes]
    np.testing.assert_allclose(p.distances, ref)
    ref_finite = np.where(np.isfinite(ref), ref, 1e9)
    q = MDPProblem(ref_finite, epsilon=1.0, eta=1.5, metric="precomputed")
    assert set(zip(p.edges.i, p.edges.j, strict=True)) == set(
        zip(q.edges.i, q.edges.j, strict=True)
    )


def test_components_and_graph_distances(small_random: MDPProblem) -> None:
    p = small_random
    g = p.mdp_graph()
    n_ref, _ = csgraph.connected_components(g, directed=False)
    assert p.components[0] == n_ref
    np.testing.assert_allclose(p.graph_distances(), csgraph.dijkstra(g), rtol=1e-12)


def test_outputs_variants() -> None:
    p = random_2d(20, eps=1.0, eta=1.5)
    q = MDPProblem(p.points, epsilon=1.0, eta=1.5, outputs=5, seed=0)
    assert q.n_outputs == 5 and np.all(np.diff(q.output_index) > 0)
    np.testing.assert_array_equal(q.cost, p.distances[:, q.output_index])
    r = MDPProblem(p.points, epsilon=1.0, eta=1.5, outputs=p.points[:3] + 0.1)
    assert r.output_index is None and r.cost.shape == (20, 3)


def test_generators_deterministic() -> None:
    np.testing.assert_array_equal(gaussian_3d(50, seed=4), gaussian_3d(50, seed=4))
    assert gaussian_3d(10).shape == (10, 3)
    assert rome_grid().shape == (500, 2)


def test_rome_loader(tmp_path) -> None:
    f = tmp_path / "nodes.csv"
    f.write_text(
        "osmid,y,x,street_count\n1,41.9,12.5,3\n2,41.8,12.4,3\n3,40.0,12.5,3\n4,41.8,12.4,2\n"
    )
    pts = load_rome_nodes(f, n=None)
    # Out-of-bbox node dropped, duplicate location merged; (lat, lon) order.
    np.testing.assert_array_equal(pts, [[41.8, 12.4], [41.9, 12.5]])
    with pytest.raises(InvalidInput, match="path"):
        load_rome_nodes(tmp_path / "missing.csv")
    with pytest.raises(InvalidInput, match="n must be"):
        load_rome_nodes(f, n=5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(epsilon=-1.0), "epsilon"),
        (dict(epsilon=float("nan")), "epsilon"),
        (dict(eta=0.0), "eta"),
        (dict(records=np.array([[0.0, np.nan]])), "non-finite"),
        (dict(outputs=np.array([], dtype=int)), "K = 0"),
        (dict(outputs=0), "outputs"),
        (dict(outputs=np.array([0, 9])), "outputs"),
        (dict(prior=np.ones(2)), "prior"),
        (dict(prior=np.array([0.5, 0.5])), "prior"),
        (dict(cost=np.ones((3, 2))), "cost"),
        (dict(cost=-np.ones((3, 3))), "cost"),
        (dict(metric="manhattan"), "metric"),
        (dict(records=np.zeros((0, 2))), "non-empty"),
    ],
)
def test_bad_input(kwargs, match) -> None:
    args = dict(records=np.array([[0.0, 0], [1, 0], [2, 0]]), epsilon=1.0, eta=1.0)
    args.update(kwargs)
    records = args.pop("records")
    with pytest.raises(InvalidInput, match=match):
        MDPProblem(records, **args)


def test_bad_precomputed() -> None:
    with pytest.raises(InvalidInput, match="symmetric"):
        MDPProblem(np.array([[0, 1.0], [2.0, 0]]), epsilon=1, eta=1, metric="precomputed")
    with pytest.raises(InvalidInput, match="square"):
        MDPProblem(np.zeros((2, 3)), epsilon=1, eta=1, metric="precomputed")
    with pytest.raises(InvalidInput, match="graph="):
        MDPProblem(np.array([0, 1]), epsilon=1, eta=1, metric="graph")


def test_travel_cost_loss_brute_force() -> None:
    from privopt.mdp import travel_cost_loss

    rng = np.random.default_rng(0)
    a, b, w = rng.uniform(0, 5, (6, 4)), rng.uniform(0, 5, (3, 4)), rng.dirichlet(np.ones(4))
    c = travel_cost_loss(a, b, w)
    ref = [
        [sum(w[t] * abs(a[i, t] - b[k, t]) for t in range(4)) for k in range(3)] for i in range(6)
    ]
    np.testing.assert_allclose(c, ref, rtol=1e-12)
    with pytest.raises(InvalidInput, match="output_to_dest"):
        travel_cost_loss(a, b[:, :2])
