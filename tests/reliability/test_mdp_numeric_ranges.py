"""mDP problems at the edges of float64 and on disconnected graphs: exact or a clear error."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.errors import InvalidInput, NumericalTrouble
from privopt.graphs import graph_from_edges
from privopt.mdp import MDPProblem, solve
from scipy.optimize import linprog


def math_dist_table(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # math.dist scales internally, so it neither overflows nor underflows: an independent oracle.
    return np.array([[math.dist(p, q) for q in b] for p in a])


@settings(max_examples=60, deadline=None)
@given(
    exponent=st.integers(-300, 300),
    seed=st.integers(0, 2**32 - 1),
    dim=st.integers(1, 3),
)
def test_euclidean_distances_exact_at_any_scale(exponent, seed, dim):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(-1.0, 1.0, (5, dim)) * 10.0**exponent
    # A unit cost keeps the LP objective in range whatever the distances, and ε = 10^-exponent
    # keeps ε·d, the exponent of the constraints' ratio e^{εd}, near 1.
    prob = MDPProblem(pts, epsilon=10.0**-exponent, eta=math.inf, cost=np.ones((5, 5)))
    np.testing.assert_allclose(prob.distances, math_dist_table(pts, pts), rtol=1e-14, atol=0)
    assert np.all(prob.distances[~np.eye(5, dtype=bool)] > 0)  # distinct records stay distinct


def test_ordinary_coordinates_give_the_same_bits_as_before():
    from privopt.perturbation.metrics import pairwise

    pts = np.random.default_rng(1).uniform(0, 1000, (30, 2))
    assert np.array_equal(
        MDPProblem(pts, epsilon=1, eta=1).distances, pairwise(pts, pts, "euclidean")
    )


def test_tiny_coordinates_are_not_collapsed():
    # Squared differences of 1e-300 underflow to 0: without scaling, every record coincided
    # with every other and the loss came out as 0.
    pts = np.random.default_rng(0).uniform(0, 1, (6, 2))
    prob = MDPProblem(pts * 1e-300, epsilon=1e300, eta=0.5e-300)
    ref = MDPProblem(pts, epsilon=1.0, eta=0.5)
    np.testing.assert_allclose(prob.distances * 1e300, ref.distances, rtol=1e-12)
    assert len(prob.edges) == len(ref.edges)


@pytest.mark.parametrize(
    ("records", "kwargs", "fragment"),
    [
        (np.array([[1.5e308, 0.0], [-1.5e308, 0.0]]), {}, "distances overflow float64"),
        (np.array([[0.0], [1e300]]), {}, "treats as infinite"),
        (np.array([[0.0], [1.0]]), {"cost": [[0.0, 1e21], [1e21, 0.0]]}, "treats as infinite"),
        (np.array([[0.0], [1.0]]) + 0j, {}, "records must be real"),
        (np.array([[0.0], [1.0]]), {"prior": np.array([0.5, 0.5]) + 0j}, "prior must be real"),
        (np.array([[0.0], [1.0]]), {"cost": np.eye(2) + 0j}, "cost must be real"),
        (np.array([[0.0], [1.0]]), {"outputs": np.array([[0.5]]) + 1j}, "outputs must be real"),
        (np.array([[0.0], [1.0]]), {"epsilon": 1 + 0j}, "epsilon must be a real number"),
    ],
)
def test_out_of_range_and_complex_problems_are_refused(records, kwargs, fragment):
    kw = {"epsilon": 1.0, "eta": 1.0, **kwargs}
    with pytest.raises(InvalidInput, match=fragment):
        MDPProblem(records, **kw)


def two_islands():
    # Road graph with two components: nodes 0-1-2 and 3-4-5.
    return graph_from_edges(6, [0, 1, 3, 4], [1, 2, 4, 5], [1.0, 1.0, 1.0, 1.0])


def test_disconnected_graph_metric_names_its_components():
    with pytest.raises(InvalidInput, match=r"disconnected \(2 components\)") as info:
        MDPProblem(
            np.array([0, 2, 3, 5]), epsilon=1.0, eta=1.5, metric="graph", graph=two_islands()
        )
    assert "records [0, 1] (2)" in str(info.value) and "records [2, 3] (2)" in str(info.value)


def linprog_loss(prob: MDPProblem) -> float:
    """The mDP LP solved by scipy's HiGHS interface, built here from the definition."""
    n, k = prob.n_records, prob.n_outputs
    edges = prob.edges
    rows = []
    for i, j, d in zip(edges.i, edges.j, edges.d, strict=True):
        for o in range(k):  # z_io - exp(ε d_ij) z_jo <= 0
            row = np.zeros(n * k)
            row[i * k + o], row[j * k + o] = 1.0, -math.exp(prob.epsilon * d)
            rows.append(row)
    a_eq = np.kron(np.eye(n), np.ones(k))
    res = linprog(
        prob.objective.ravel(),
        A_ub=np.array(rows) if rows else None,
        b_ub=np.zeros(len(rows)) if rows else None,
        A_eq=a_eq,
        b_eq=np.ones(n),
        bounds=(0, None),
    )
    assert res.status == 0
    return float(res.fun)


def test_disconnected_graph_with_a_finite_cost_solves_the_components_apart():
    nodes = np.array([0, 2, 3, 5])
    cost = np.abs(np.subtract.outer(nodes, nodes)).astype(float)
    prob = MDPProblem(nodes, epsilon=1.0, eta=2.5, metric="graph", graph=two_islands(), cost=cost)
    assert prob.components[0] == 2
    res = solve(prob)
    assert math.isfinite(res.expected_loss)
    assert res.expected_loss == pytest.approx(linprog_loss(prob), rel=1e-7, abs=1e-9)


def test_travel_cost_overflow_is_an_error_not_inf():
    from privopt.mdp import travel_cost_loss

    with pytest.raises(NumericalTrouble, match="travel_cost_loss is not finite"):
        travel_cost_loss([[1.5e308]], [[-1.5e308]])
    np.testing.assert_allclose(travel_cost_loss([[1.0, 3.0]], [[2.0, 1.0]]), [[1.5]])
