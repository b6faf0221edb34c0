"""The Bayes-optimal adversary (privopt.perturbation.adversary, PerturbationMatrix.
inference_error): against a brute-force adversary on small instances, against the closed forms
(identity matrix: error 0; uniform matrix: the prior-weighted distance to the best single
guess), and its invariants on random matrices."""

from __future__ import annotations

import numpy as np
import pytest
from adversary_oracle import brute_force_adversary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from privopt.errors import InvalidInput
from privopt.graphs import graph_from_edges
from privopt.mdp import solve
from privopt.perturbation import (
    MDPProblem,
    PerturbationMatrix,
    bayes_inference_error,
    exponential_mechanism,
)

SETTINGS = settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def random_case(seed: int, n: int, k: int, g: int, sparse: bool):
    rng = np.random.default_rng(seed)
    z = rng.exponential(1.0, (n, k))
    if sparse:  # exact zeros, whole reports of probability 0, a few tiny entries
        z *= rng.random((n, k)) < 0.4
        z[:, rng.integers(0, k)] = 0.0
        z[np.arange(n), rng.integers(0, k, n)] += 1.0
        z[rng.random((n, k)) < 0.05] += 1e-300
    z /= z.sum(axis=1, keepdims=True)
    prior = rng.dirichlet(np.ones(n))
    if n > 1:
        prior[rng.integers(0, n)] = 0.0  # a place the adversary rules out
        prior /= prior.sum()
    d = rng.uniform(0, 5, (n, g)) * (rng.random((n, g)) < 0.9)
    same = rng.random((n, k)) < 0.2
    return z, prior, d, same


@SETTINGS
@given(
    st.integers(0, 10_000),
    st.integers(1, 7),
    st.integers(1, 8),
    st.integers(1, 6),
    st.booleans(),
)
def test_fast_adversary_is_the_brute_force_one(seed, n, k, g, sparse):
    z, prior, d, same = random_case(seed, n, k, g, sparse)
    fast = bayes_inference_error(z, prior, d, same_place=same)
    error, true_report, best = brute_force_adversary(z, prior, d, same)
    assert fast.expected_error == pytest.approx(error, rel=1e-12, abs=1e-15)
    assert fast.true_report_probability == pytest.approx(true_report, rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(fast.report_probability, prior @ z, rtol=1e-12, atol=1e-300)
    # Each report's guess achieves the brute force's least posterior loss.
    for report, guess in enumerate(fast.guesses):
        pr = fast.report_probability[report]
        if pr == 0:
            assert guess == -1
            continue
        achieved = float(prior * z[:, report] @ d[:, guess]) / pr
        assert achieved == pytest.approx(best[report], rel=1e-10, abs=1e-14)


@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 7), st.integers(1, 8), st.integers(1, 6))
def test_the_report_never_hurts_the_adversary(seed, n, k, g):
    """0 ≤ E ≤ min_g Σ_i p_i d(i, g): seeing the report, the adversary does at least as well as
    its best guess without it (the report's information can only help)."""
    z, prior, d, _ = random_case(seed, n, k, g, sparse=True)
    error = bayes_inference_error(z, prior, d).expected_error
    assert 0.0 <= error <= float(np.min(prior @ d)) * (1 + 1e-12) + 1e-15


@pytest.mark.parametrize("seed", range(5))
def test_identity_matrix_gives_zero_error(seed):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(0, 4, (7, 2))
    d = np.hypot(*(pts[:, None, :] - pts[None, :, :]).transpose(2, 0, 1))
    prior = rng.dirichlet(np.ones(7))
    seen = bayes_inference_error(np.eye(7), prior, d, same_place=np.eye(7, dtype=bool))
    assert seen.expected_error == 0.0
    assert seen.true_report_probability == pytest.approx(1.0)
    np.testing.assert_array_equal(seen.guesses, np.arange(7))


@pytest.mark.parametrize("seed", range(5))
def test_uniform_matrix_gives_the_best_single_guess(seed):
    """Every report has the same posterior, the prior: the adversary's best is the place with
    the least prior-weighted distance, whatever it sees."""
    rng = np.random.default_rng(seed)
    n, k, g = 6, 4, 9
    d = rng.uniform(0, 10, (n, g))
    prior = rng.dirichlet(np.ones(n))
    z = np.full((n, k), 1.0 / k)
    seen = bayes_inference_error(z, prior, d)
    assert seen.expected_error == pytest.approx(float(np.min(prior @ d)), rel=1e-12)
    assert set(seen.guesses.tolist()) == {int(np.argmin(prior @ d))}


def test_matrix_method_uses_records_and_output_points_as_guesses():
    """With coordinate outputs the guess set is every record and every output point; the
    method agrees with the brute force on those tables."""
    rng = np.random.default_rng(1)
    records = rng.uniform(0, 3, (6, 2))
    outputs = rng.uniform(0, 3, (4, 2))
    prob = MDPProblem(records, epsilon=1.5, eta=1.0, outputs=outputs)
    pm = solve(prob)
    d = np.hstack([prob.distances, prob.output_distances])
    error, true_report, _ = brute_force_adversary(
        pm.matrix, prob.prior, d, prob.output_distances == 0
    )
    seen = pm.inference_error(prob)
    assert seen.expected_error == pytest.approx(error, rel=1e-12)
    assert seen.true_report_probability == true_report == 0.0  # no output is at a record
    assert seen.loss == "metric" and seen.guesses.max() < 10


def test_matrix_method_with_rows_of_a_subset_and_a_prior():
    """A matrix whose rows are some records (row_index, in any order) is evaluated on those
    rows only, its prior being over them."""
    prob = MDPProblem(np.arange(8.0)[:, None], epsilon=0.7, eta=1.0)
    full = exponential_mechanism(prob).matrix
    rows = np.array([5, 1, 6])
    pm = PerturbationMatrix(full[rows], 0.7, 1.0, 0.0, row_index=rows)
    prior = np.array([0.5, 0.3, 0.2])
    seen = pm.inference_error(prob, prior)
    error, true_report, _ = brute_force_adversary(
        full[rows], prior, prob.distances[rows], prob.output_distances[rows] == 0
    )
    assert seen.expected_error == pytest.approx(error, rel=1e-12)
    assert seen.true_report_probability == pytest.approx(true_report, rel=1e-12)
    uniform = pm.inference_error(prob)
    assert uniform.expected_error == pytest.approx(
        brute_force_adversary(full[rows], np.full(3, 1 / 3), prob.distances[rows])[0], rel=1e-12
    )


def test_road_aware_adversary_takes_travel_distances():
    """The road-aware adversary of a coordinate problem (distances=road table) equals the
    metric adversary of the same matrix on the road-metric problem."""
    # a path of 5 nodes with long detours: road distance > straight line
    graph = graph_from_edges(5, [0, 1, 2, 3], [1, 2, 3, 4], [1.5, 2.0, 1.2, 3.0])
    road_prob = MDPProblem(np.arange(5), epsilon=0.8, eta=2.0, metric="graph", graph=graph)
    plane = MDPProblem(np.array([[0.0], [1.0], [2.0], [3.0], [4.0]]), epsilon=0.8, eta=2.0)
    pm = exponential_mechanism(plane)
    on_roads = pm.inference_error(plane, distances=road_prob.distances)
    assert on_roads.loss == "given"
    assert on_roads.expected_error == pytest.approx(
        pm.inference_error(road_prob).expected_error, rel=1e-12
    )
    assert on_roads.expected_error > pm.inference_error(plane).expected_error


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda pm, p: pm.inference_error(p, [0.5, 0.5]), "prior must have shape"),
        (lambda pm, p: pm.inference_error(p, np.full(4, 0.3)), "prior must sum to 1"),
        (lambda pm, p: pm.inference_error(p, [-0.5, 0.5, 0.5, 0.5]), "prior has a negative"),
        (lambda pm, p: pm.inference_error(p, distances=np.ones((3, 2))), "distances must have"),
        (lambda pm, p: pm.inference_error(p, distances=-np.ones((4, 2))), "must be >= 0"),
        (
            lambda pm, p: pm.inference_error(p, distances=np.full((4, 2), np.inf)),
            "disconnected graph",
        ),
        (lambda pm, p: pm.inference_error(p, distances="x"), "distances"),
        (lambda pm, p: pm.inference_error("problem"), "problem"),
        (
            lambda pm, p: pm.inference_error(MDPProblem(np.arange(5.0)[:, None], epsilon=1, eta=1)),
            "does not match the problem",
        ),
    ],
)
def test_bad_arguments_name_the_problem(call, fragment):
    prob = MDPProblem(np.arange(4.0)[:, None], epsilon=1.0, eta=1.0)
    pm = exponential_mechanism(prob)
    with pytest.raises(InvalidInput, match=fragment):
        call(pm, prob)


def test_disconnected_road_graph_is_refused_by_name():
    graph = graph_from_edges(4, [0, 2], [1, 3], [1.0, 1.0])
    prob = MDPProblem(
        np.arange(4), epsilon=1.0, eta=2.0, metric="graph", graph=graph, cost=np.ones((4, 4))
    )
    pm = PerturbationMatrix(np.full((4, 4), 0.25), 1.0, 2.0, 1.0)
    with pytest.raises(InvalidInput, match="disconnected graph"):
        pm.inference_error(prob)
