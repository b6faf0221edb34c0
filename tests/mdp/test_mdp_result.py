"""PerturbationMatrix: sampling, verification, exact repair, persistence, plots."""

from __future__ import annotations

import numpy as np
import pytest
from mdp_instances import random_2d
from privopt.errors import InvalidInput, PrivacyViolation
from privopt.mdp import MDPProblem, PerturbationMatrix, repair, solve
from privopt.mdp.datasets import km_to_latlon, rome_grid


@pytest.fixture(scope="module")
def solved():
    prob = random_2d(20, seed=6, eps=0.9, eta=1.5, side=4.0)
    return prob, solve(prob)


def test_sample_frequencies_match_row(solved) -> None:
    prob, pm = solved
    draws = pm.sample_many(np.full(40_000, 7), rng=np.random.default_rng(0))
    freq = np.bincount(draws, minlength=pm.n_outputs) / draws.size
    # 5-sigma binomial band around the exact probabilities.
    sd = np.sqrt(pm.matrix[7] * (1 - pm.matrix[7]) / draws.size)
    assert np.all(np.abs(freq - pm.matrix[7]) <= 5 * sd + 1e-12)
    assert np.all(freq[pm.matrix[7] == 0] == 0)
    one = pm.sample(3, rng=1)
    assert 0 <= one < pm.n_outputs
    # Every privopt.dp random source works, the secure one included; seeds reproduce.
    assert pm.matrix[3, pm.sample(3, rng="secure")] > 0
    assert np.array_equal(
        pm.sample_many(np.arange(20), rng=5), pm.sample_many(np.arange(20), rng=5)
    )
    secure = pm.sample_many(np.full(20_000, 7), rng="secure")
    freq = np.bincount(secure, minlength=pm.n_outputs) / secure.size
    assert np.all(
        np.abs(freq - pm.matrix[7])
        <= 5 * np.sqrt(pm.matrix[7] * (1 - pm.matrix[7]) / secure.size) + 1e-12
    )
    with pytest.raises(InvalidInput, match="record"):
        pm.sample(99)
    with pytest.raises(InvalidInput, match="records"):
        pm.sample_many(np.array([0.5]))


def test_save_load_round_trip(solved, tmp_path) -> None:
    _, pm = solved
    path = pm.save(tmp_path / "z.npz")
    back = PerturbationMatrix.load(path)
    np.testing.assert_array_equal(back.matrix, pm.matrix)
    np.testing.assert_array_equal(back.output_index, pm.output_index)
    assert back.expected_loss == pm.expected_loss and back.method == "lp"
    assert back.summary["n_components"] == pm.summary["n_components"]


def test_verify_detects_violation_and_check_raises(solved) -> None:
    prob, pm = solved
    bad = pm.matrix.copy()
    i, j = int(prob.edges.i[0]), int(prob.edges.j[0])
    k = int(np.argmax(bad[i]))
    bad[j, k] = 0.0
    bad[j] /= bad[j].sum()
    broken = PerturbationMatrix(bad, prob.epsilon, prob.eta, 0.0)
    v = broken.verify(prob)
    assert v.max_relative_violation == pytest.approx(1.0)
    assert v.worst_edge is not None
    with pytest.raises(PrivacyViolation):
        broken.check(prob)
    pm.check(prob)


@pytest.mark.parametrize("noise", [1e-9, 1e-6, 1e-3])
def test_repair_restores_mdp_exactly(solved, noise: float) -> None:
    prob, pm = solved
    rng = np.random.default_rng(1)
    noisy = pm.matrix + noise * rng.standard_normal(pm.matrix.shape)
    fixed, alpha = repair(noisy, prob.edges, prob.epsilon)
    v = PerturbationMatrix(fixed, prob.epsilon, prob.eta, 0.0).verify(prob)
    assert v.max_relative_violation <= 1e-12
    assert v.max_row_sum_error <= 1e-12 and v.min_entry >= 0
    assert 0 < alpha < 1
    # The utility cost is bounded by α·(loss(uniform) − loss(clipped)).
    uniform_loss = float(np.sum(prob.objective)) / prob.n_outputs
    cost = float(np.sum(prob.objective * fixed)) - float(np.sum(prob.objective * noisy))
    assert cost <= alpha * uniform_loss + 10 * noise


@pytest.mark.parametrize("noise", [1e-9, 1e-6, 1e-3])
def test_repair_with_the_lift_partner(solved, noise: float) -> None:
    """With the objective given, repair may mix with Z's own lift instead of the uniform
    mechanism: still exactly ε-mDP, and never costlier than the uniform partner."""
    from privopt.mdp.lift import column_lift

    prob, pm = solved
    rng = np.random.default_rng(2)
    noisy = np.clip(pm.matrix + noise * rng.standard_normal(pm.matrix.shape), 0, None)
    uniform, _ = repair(noisy, prob.edges, prob.epsilon)
    fixed, alpha = repair(noisy, prob.edges, prob.epsilon, objective=prob.objective)
    v = PerturbationMatrix(fixed, prob.epsilon, prob.eta, 0.0).verify(prob)
    assert v.max_relative_violation <= 1e-12
    assert v.max_row_sum_error <= 1e-12 and v.min_entry >= 0
    assert 0 < alpha <= 1
    assert np.sum(prob.objective * fixed) <= np.sum(prob.objective * uniform) + 1e-15
    # The lift itself: w >= z and w_i >= e^{-rate d} w_j on every edge (brute force).
    w, parent = column_lift(noisy, prob.edges, 0.5)
    assert np.all(w >= noisy * (1 - 1e-12))
    e = prob.edges
    assert np.all(w[e.i] >= np.exp(-0.5 * e.d)[:, None] * w[e.j] * (1 - 1e-12))
    for i in range(prob.n_records):
        for k in range(prob.n_outputs):
            p = parent[i, k]
            if p != i and p >= 0:  # the value came along the arc p -> i
                d = prob.distances[p, i]
                assert w[i, k] == pytest.approx(np.exp(-0.5 * d) * w[p, k], rel=1e-9)


def test_repair_of_coincident_records() -> None:
    pts = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    prob = MDPProblem(pts, epsilon=1.0, eta=1.0)
    z = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.3, 0.3, 0.4]])
    fixed, _ = repair(z, prob.edges, prob.epsilon)
    np.testing.assert_allclose(fixed[0], fixed[1])
    assert PerturbationMatrix(fixed, 1.0, 1.0, 0.0).verify(prob).ok(1e-12)
    # With the objective the lift partner and the lift-first candidate are tried as well:
    # both must keep the coincident records' rows equal.
    for zz in (z, np.array([[0.9, 0.1, 0.0], [0.5, 0.5, 0.0], [0.0, 0.2, 0.8]])):
        fixed, _ = repair(zz, prob.edges, prob.epsilon, objective=prob.objective)
        np.testing.assert_allclose(fixed[0], fixed[1], rtol=1e-12)
        assert PerturbationMatrix(fixed, 1.0, 1.0, 0.0).verify(prob).ok(1e-12)


def test_plots(solved, tmp_path) -> None:
    prob, pm = solved
    ax = pm.plot_row(prob, 3)
    ax.figure.savefig(tmp_path / "row.png")
    geo = MDPProblem(km_to_latlon(rome_grid(4, 5)), epsilon=2.0, eta=2.0, metric="haversine")
    gm = solve(geo)
    gm.plot_row(geo, 0).figure.savefig(tmp_path / "geo.png")
    assert (tmp_path / "row.png").stat().st_size > 0
    pm.plot_bounds().figure.savefig(tmp_path / "bounds.png")
    import matplotlib.pyplot as plt

    plt.close("all")


def test_repair_lifts_entries_left_out_far_from_the_output() -> None:
    """Row generation leaves entries below its row tolerance at 0 far from each output;
    repair then lifts every column onto the cone (exact decay) before mixing, which costs
    far less than mixing alone, and the result is exactly ε-mDP."""
    from privopt.mdp.problem import EdgeList
    from privopt.mdp.result import _mix

    prob = random_2d(40, seed=3, eps=8.0, eta=1.5, side=5.0)
    pm = solve(prob, columns="all", polish=True)
    cut = np.where(pm.matrix < 1e-10, 0.0, pm.matrix)
    fixed, alpha = repair(cut, prob.edges, prob.epsilon, objective=prob.objective)
    assert PerturbationMatrix(fixed, prob.epsilon, prob.eta, 0.0).verify(prob).ok(1e-12)
    assert np.abs(fixed.sum(axis=1) - 1).max() <= 1e-12
    keep = np.exp(prob.epsilon * prob.edges.d) > 1.0
    sub = EdgeList(prob.edges.i[keep], prob.edges.j[keep], prob.edges.d[keep])
    mixed, _ = _mix(
        cut / cut.sum(axis=1, keepdims=True), prob.edges, sub, prob.epsilon, 1e-12, prob.objective
    )
    loss = float(np.sum(prob.objective * fixed))
    assert loss <= float(np.sum(prob.objective * mixed))
    # Within 1e-8 relative of the optimum the entries were cut from (whose own solver
    # tolerances are of that order).
    assert loss == pytest.approx(pm.expected_loss, rel=1e-8)
