"""privopt.graphs against scipy.sparse.csgraph (independent implementation)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.errors import InvalidInput
from privopt.graphs import connected_components, graph_from_edges, shortest_paths
from scipy.sparse import csgraph


def _random_graph(rng: np.random.Generator, n: int, density: float) -> sp.csr_array:
    a = sp.random_array((n, n), density=density, rng=rng, format="csr")
    a.data = rng.uniform(0.1, 5.0, a.data.size)
    a.setdiag(0)
    a.eliminate_zeros()
    return sp.csr_array(a)


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_matches_scipy_dijkstra(seed: int, directed: bool) -> None:
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, 60, 0.05)
    ours = shortest_paths(g, directed=directed)
    ref = csgraph.dijkstra(g, directed=directed)
    np.testing.assert_allclose(ours, ref, rtol=1e-12)
    assert np.array_equal(np.isinf(ours), np.isinf(ref))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 25), st.floats(0.0, 0.5), st.integers(0, 10_000), st.floats(0.0, 8.0))
def test_cutoff_and_sources_property(n: int, density: float, seed: int, cutoff: float) -> None:
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, n, density)
    sources = rng.integers(0, n, size=3)
    ours = shortest_paths(g, sources, cutoff=cutoff)
    ref = csgraph.dijkstra(g, indices=sources)
    ref[ref > cutoff] = np.inf
    np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_scalar_source_and_explicit_zero_arcs() -> None:
    # Explicit zeros in a sparse matrix are arcs of length 0.
    g = sp.csr_array((np.array([0.0, 2.0]), np.array([1, 2]), np.array([0, 1, 2, 2])), shape=(3, 3))
    assert shortest_paths(g, 0).tolist() == [0.0, 0.0, 2.0]
    assert shortest_paths(g, 2).tolist() == [math.inf, math.inf, 0.0]


def test_dense_input_zeros_are_no_arc() -> None:
    d = np.array([[0, 1.0, 0], [0, 0, 1.0], [0, 0, 0]])
    np.testing.assert_array_equal(shortest_paths(d), csgraph.dijkstra(d))


@pytest.mark.parametrize(
    "bad, match",
    [
        (sp.csr_array(([-1.0], ([0], [1])), shape=(2, 2)), "invalid arc length"),
        (sp.csr_array(([np.nan], ([0], [1])), shape=(2, 2)), "invalid arc length"),
        (sp.csr_array(([np.inf], ([0], [1])), shape=(2, 2)), "invalid arc length"),
        (sp.csr_array((0, 0)), "empty"),
        (sp.csr_array((2, 3)), "square"),
        ([[0, 1], [1, 0]], "scipy.sparse"),
    ],
)
def test_bad_graphs(bad, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        shortest_paths(bad)


@pytest.mark.parametrize("sources", [5, -1, [0, 7], np.array([0.5]), [[0]]])
def test_bad_sources(sources) -> None:
    g = sp.csr_array(([1.0], ([0], [1])), shape=(3, 3))
    with pytest.raises(InvalidInput, match="sources"):
        shortest_paths(g, sources)


@pytest.mark.parametrize("cutoff", [-1.0, math.nan])
def test_bad_cutoff(cutoff: float) -> None:
    g = sp.csr_array(([1.0], ([0], [1])), shape=(3, 3))
    with pytest.raises(InvalidInput, match="cutoff"):
        shortest_paths(g, cutoff=cutoff)


@pytest.mark.parametrize("seed", range(3))
def test_components_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, 80, 0.01)
    n_ours, lab_ours = connected_components(g)
    n_ref, lab_ref = csgraph.connected_components(g, directed=False)
    assert n_ours == n_ref
    # Same partition (labels may be permuted): pairs agree on "same component".
    same_ours = lab_ours[:, None] == lab_ours[None, :]
    same_ref = lab_ref[:, None] == lab_ref[None, :]
    assert np.array_equal(same_ours, same_ref)
    # Labels are numbered in order of first occurrence.
    _, first = np.unique(lab_ours, return_index=True)
    assert np.all(np.diff(first) > 0)


def test_graph_from_edges_keeps_shortest_parallel_arc() -> None:
    g = graph_from_edges(3, [0, 0, 1], [1, 1, 2], [5.0, 2.0, 1.0])
    np.testing.assert_array_equal(shortest_paths(g, 0), [0.0, 2.0, 3.0])
    np.testing.assert_array_equal(shortest_paths(g, 2), [3.0, 1.0, 0.0])
    with pytest.raises(InvalidInput, match="endpoints"):
        graph_from_edges(2, [0], [2], [1.0])
    with pytest.raises(InvalidInput, match="length"):
        graph_from_edges(2, [0], [1], [-1.0])
