"""privopt.graphs.Graph (prepared CSR graph) against scipy.sparse.csgraph."""

from __future__ import annotations

import math
import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.errors import InvalidInput
from privopt.graphs import Graph, shortest_paths
from scipy.sparse import csgraph


def _random_graph(rng: np.random.Generator, n: int, density: float) -> sp.csr_array:
    a = sp.random_array((n, n), density=density, rng=rng, format="csr")
    a.data = rng.uniform(0.1, 5.0, a.data.size)
    a.setdiag(0)
    a.eliminate_zeros()
    return sp.csr_array(a)


def _check_settled(nodes, dist, ref, cutoff, max_nodes) -> None:
    """Settled nodes = a prefix of the nodes in order of distance, within cutoff and limit."""
    assert nodes.dtype == np.int64 and dist.dtype == np.float64
    assert np.unique(nodes).size == nodes.size
    np.testing.assert_allclose(dist, ref[nodes], rtol=1e-12)
    assert np.all(np.diff(dist) >= 0)
    assert np.all(dist <= cutoff)
    within = np.flatnonzero(np.isfinite(ref) & (ref <= cutoff))
    if max_nodes is None or within.size <= max_nodes:
        assert set(nodes.tolist()) == set(within.tolist())
    else:
        assert nodes.size == max_nodes
        # Everything left out is at least as far as the last settled node.
        rest = np.setdiff1d(within, nodes)
        if nodes.size:
            assert np.all(ref[rest] >= dist[-1] * (1 - 1e-12))


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 30),
    st.floats(0.0, 0.4),
    st.integers(0, 10_000),
    st.floats(0.0, 10.0) | st.just(math.inf),
    st.none() | st.integers(0, 35),
    st.booleans(),
)
def test_distances_are_a_bounded_prefix(n, density, seed, cutoff, max_nodes, directed) -> None:
    rng = np.random.default_rng(seed)
    a = _random_graph(rng, n, density)
    g = Graph(a, directed=directed)
    source = int(rng.integers(n))
    ref = csgraph.dijkstra(a, directed=directed, indices=source)
    nodes, dist = g.distances(source, cutoff=cutoff, max_nodes=max_nodes)
    if max_nodes != 0:
        assert nodes[0] == source and dist[0] == 0.0
    _check_settled(nodes, dist, ref, cutoff, max_nodes)


def test_ties_settle_smaller_id_first() -> None:
    # A star: every leaf at distance 1 from the centre.
    g = Graph.from_edges(6, [0] * 5, [5, 3, 1, 4, 2], [1.0] * 5)
    assert g.distances(0).nodes.tolist() == [0, 1, 2, 3, 4, 5]
    assert g.distances(0, max_nodes=3).nodes.tolist() == [0, 1, 2]
    assert g.distances(0, max_nodes=0).nodes.size == 0


@pytest.mark.parametrize("directed", [True, False])
def test_many_matches_scipy_on_any_thread_count(directed: bool) -> None:
    rng = np.random.default_rng(3)
    a = _random_graph(rng, 120, 0.03)
    g = Graph(a, directed=directed)
    sources = rng.integers(0, 120, size=17)
    ref = csgraph.dijkstra(a, directed=directed, indices=sources)
    for threads in (1, 2, 5, None):
        np.testing.assert_allclose(g.many(sources, threads=threads), ref, rtol=1e-12)
    cut = g.many(sources, cutoff=3.0, threads=3)
    np.testing.assert_allclose(cut, np.where(ref <= 3.0, ref, np.inf), rtol=1e-12)
    assert g.many(np.zeros(0, dtype=np.int64)).shape == (0, 120)


def test_ball_is_the_graph_ball() -> None:
    # Path 0 - 1 - 2 - 3 with unit lengths: the ball of radius 1 around 1 is {0, 1, 2}.
    g = Graph.from_edges(4, [0, 1, 2], [1, 2, 3], [1.0, 1.0, 1.0])
    nodes, dist = g.ball(1, 1.0)
    assert sorted(nodes.tolist()) == [0, 1, 2]
    assert dist.tolist() == [0.0, 1.0, 1.0]


def test_undirected_matches_shortest_paths_wrapper() -> None:
    rng = np.random.default_rng(11)
    a = _random_graph(rng, 50, 0.05)
    g = Graph(a)
    np.testing.assert_array_equal(g.many(), shortest_paths(a, directed=False))
    assert g.n_arcs == 2 * a.nnz
    assert g.csr.shape == (50, 50)


def test_pickle_round_trip_and_threads_share_one_graph() -> None:
    rng = np.random.default_rng(5)
    a = _random_graph(rng, 200, 0.02)
    g = Graph(a)
    h = pickle.loads(pickle.dumps(g))
    assert repr(h) == repr(g)
    np.testing.assert_array_equal(h.many([0, 7]), g.many([0, 7]))
    # Concurrent searches on one Graph (the shared workspace is used by one at a time).
    want = [g.distances(s, cutoff=4.0) for s in range(200)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda s: g.distances(s, cutoff=4.0), range(200)))
    for (n1, d1), (n2, d2) in zip(want, got, strict=True):
        np.testing.assert_array_equal(n1, n2)
        np.testing.assert_array_equal(d1, d2)


def test_kernel_seconds_is_positive() -> None:
    g = Graph.from_edges(3, [0, 1], [1, 2], [1.0, 1.0])
    assert 0.0 < g.kernel_seconds([0, 1], reps=10) < 1.0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda g: g.distances(3), "source"),
        (lambda g: g.distances(-1), "source"),
        (lambda g: g.distances(0.5), "source"),
        (lambda g: g.distances(0, cutoff=-1.0), "cutoff"),
        (lambda g: g.distances(0, cutoff=math.nan), "cutoff"),
        (lambda g: g.distances(0, cutoff="x"), "cutoff"),
        (lambda g: g.distances(0, max_nodes=-1), "max_nodes"),
        (lambda g: g.ball(0, -2.0), "radius"),
        (lambda g: g.many([0, 3]), "sources"),
        (lambda g: g.many([[0]]), "sources"),
        (lambda g: g.many([0.0]), "sources"),
        (lambda g: g.many([0], threads=0), "threads"),
        (lambda g: g.kernel_seconds([0], reps=0), "reps"),
    ],
)
def test_bad_calls(call, match: str) -> None:
    g = Graph.from_edges(3, [0, 1], [1, 2], [1.0, 1.0])
    with pytest.raises(InvalidInput, match=match):
        call(g)


@pytest.mark.parametrize(
    "bad, match",
    [
        (sp.csr_array(([-1.0], ([0], [1])), shape=(2, 2)), "invalid arc length"),
        (sp.csr_array(([np.inf], ([0], [1])), shape=(2, 2)), "invalid arc length"),
        (sp.csr_array((2, 3)), "square"),
        ("not a graph", "scipy.sparse"),
    ],
)
def test_bad_graphs(bad, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        Graph(bad)
