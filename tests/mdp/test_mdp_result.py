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
    _prob, pm = solved
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
    assert back.info["n_components"] == pm.info["n_components"]


def test_verify_detects_violation_and_check_raises(solved) -> None:
    prob, pm = solved
    bad = pm.matrix.copy()
    i, j = int(prob.edges.i[0]), int(prob.edges.j[0])
    k = int(np.argmax(bad[i]))
    bad[j, k] = 0.0
    bad[j] /= bad[j].sum()
    broken = PerturbationMatrix(bad, prob.epsilon, prob.eta, 0.0)
    v = broken.violations(prob)
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
    v = PerturbationMatrix(fixed, prob.epsilon, prob.eta, 0.0).violations(prob)
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
    from privopt.perturbation.lift import column_lift

    prob, pm = solved
    rng = np.random.default_rng(2)
    noisy = np.clip(pm.matrix + noise * rng.standard_normal(pm.matrix.shape), 0, None)
    uniform, _ = repair(noisy, prob.edges, prob.epsilon)
    fixed, alpha = repair(noisy, prob.edges, prob.epsilon, objective=prob.objective)
    v = PerturbationMatrix(fixed, prob.epsilon, prob.eta, 0.0).violations(prob)
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
    assert PerturbationMatrix(fixed, 1.0, 1.0, 0.0).violations(prob).ok(1e-12)
    # With the objective the lift partner and the lift-first candidate are tried as well:
    # both must keep the coincident records' rows equal.
    for zz in (z, np.array([[0.9, 0.1, 0.0], [0.5, 0.5, 0.0], [0.0, 0.2, 0.8]])):
        fixed, _ = repair(zz, prob.edges, prob.epsilon, objective=prob.objective)
        np.testing.assert_allclose(fixed[0], fixed[1], rtol=1e-12)
        assert PerturbationMatrix(fixed, 1.0, 1.0, 0.0).violations(prob).ok(1e-12)


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
    from privopt.perturbation.matrix import _mix
    from privopt.perturbation.problem import EdgeList

    prob = random_2d(40, seed=3, eps=8.0, eta=1.5, side=5.0)
    pm = solve(prob, columns="all", polish=True)
    cut = np.where(pm.matrix < 1e-10, 0.0, pm.matrix)
    fixed, _alpha = repair(cut, prob.edges, prob.epsilon, objective=prob.objective)
    assert PerturbationMatrix(fixed, prob.epsilon, prob.eta, 0.0).violations(prob).ok(1e-12)
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


# ------------------------------------------------------------------ row index, scans, shared repair


def test_row_indexed_block_verifies_and_samples_like_the_whole(solved, tmp_path) -> None:
    prob, pm = solved
    rows = np.array([12, 3, 7, 0])
    block = PerturbationMatrix(
        pm.matrix[rows], prob.epsilon, prob.eta, 0.0, output_index=pm.output_index, row_index=rows
    )
    # verify: exactly the constraints between the rows' records, renumbered.
    from privopt.perturbation.matrix import restrict_edges

    sub = restrict_edges(prob.edges, rows, prob.n_records)
    brute = [
        (a, b)
        for a in range(rows.size)
        for b in range(rows.size)
        if a != b and prob.distances[rows[a], rows[b]] <= prob.eta
    ]
    assert sorted(zip(sub.i.tolist(), sub.j.tolist(), strict=True)) == sorted(brute)
    v = block.violations(prob)
    assert v.ok(1e-9) and v.n_checked == len(brute) * prob.n_outputs
    assert block.loss(prob) == pytest.approx(float(np.sum(prob.objective[rows] * pm.matrix[rows])))
    # Sampling takes record ids of the whole problem; a record without a row is refused.
    draws = block.sample_many(np.full(5_000, 7), rng=0)
    assert np.all(pm.matrix[7, draws] > 0)
    with pytest.raises(InvalidInput, match="no row"):
        block.sample(5, rng=0)
    back = PerturbationMatrix.load(block.save(tmp_path / "block.npz"))
    np.testing.assert_array_equal(back.row_index, rows)
    # A violation between two of the rows is found, in local row numbers.
    a, b = int(prob.edges.i[0]), int(prob.edges.j[0])
    pair = np.array([a, b])
    bad = pm.matrix[pair].copy()
    k = int(np.argmax(bad[0]))
    bad[1, k] = 0.0
    bad[1] /= bad[1].sum()
    broken = PerturbationMatrix(bad, prob.epsilon, prob.eta, 0.0, row_index=pair)
    v = broken.violations(prob)
    assert v.max_relative_violation == pytest.approx(1.0)
    assert v.worst_edge == (0, 1, k) and v.n_violated >= 1


@pytest.mark.parametrize(
    "rows, match",
    [
        (np.array([0, 0, 1, 2]), "repeat"),
        (np.array([0, 1]), "shape"),
        (np.array([0.0, 1.0, 2.0, 3.0]), "indices"),
        (np.array([-1, 1, 2, 3]), "indices"),
    ],
)
def test_bad_row_index(solved, rows, match: str) -> None:
    _, pm = solved
    with pytest.raises(InvalidInput, match=match):
        PerturbationMatrix(pm.matrix[:4], 1.0, 1.0, 0.0, row_index=rows)


def test_row_index_beyond_the_problem_is_refused(solved) -> None:
    prob, pm = solved
    block = PerturbationMatrix(pm.matrix[:2], 1.0, 1.0, 0.0, row_index=np.array([0, 99]))
    with pytest.raises(InvalidInput, match="row_index"):
        block.violations(prob)


def test_scan_counts_match_brute_force() -> None:
    from privopt.perturbation.matrix import scan_violations, verify_matrix

    prob = random_2d(12, seed=4, eps=1.5, eta=2.0, side=4.0)
    rng = np.random.default_rng(0)
    z = rng.dirichlet(np.ones(prob.n_outputs), size=prob.n_records)
    e = prob.edges
    viol = [
        z[i, k] - np.exp(prob.epsilon * d) * z[j, k]
        for i, j, d in zip(e.i, e.j, e.d, strict=True)
        for k in range(prob.n_outputs)
    ]
    viol = np.array(viol)
    scan = scan_violations(z, e, prob.epsilon, count_tol=1e-3, collect=True)
    assert scan.n_checked == viol.size
    assert scan.n_violated == int(np.sum(viol > 1e-3))
    np.testing.assert_allclose(np.sort(scan.values), np.sort(viol[viol > 1e-3]))
    assert scan.max_absolute == pytest.approx(max(0.0, viol.max()))
    v = verify_matrix(z, e, prob.epsilon)
    assert v.n_violated == int(np.sum(viol > 1e-9))
    assert v.violation_ratio == pytest.approx(v.n_violated / viol.size)
    # Rows j from another matrix: the cross-matrix check.
    other = rng.dirichlet(np.ones(prob.n_outputs), size=prob.n_records)
    cross = scan_violations(z, e, prob.epsilon, right=other)
    want = sum(
        z[i, k] - np.exp(prob.epsilon * d) * other[j, k] > 1e-9
        for i, j, d in zip(e.i, e.j, e.d, strict=True)
        for k in range(prob.n_outputs)
    )
    assert cross.n_violated == want


def test_repair_shared_uses_one_weight_and_keeps_cross_ratios() -> None:
    """Two users' matrices share exponential columns g·y (ratio ≤ e^{εd/2} across users):
    one α for both keeps that, and equals repair() of the stacked block-diagonal matrix."""
    from privopt.perturbation.matrix import repair_shared, scan_violations
    from privopt.perturbation.problem import EdgeList

    rng = np.random.default_rng(3)
    pts = rng.uniform(0, 3, (10, 2))
    eps, k = 1.2, 10
    d = np.linalg.norm(pts[:, None] - pts[None], axis=2)
    users = [np.array([0, 1, 2, 3, 4, 5]), np.array([4, 5, 6, 7, 8, 9])]
    y = rng.uniform(0.05, 0.2, k)
    mats, edges = [], []
    for rows in users:
        g = np.exp(-eps * d[rows] / 2)
        z = g * y
        z[:, :2] = rng.uniform(0, 1, (rows.size, 2))  # free entries, violating
        z /= z.sum(axis=1, keepdims=True)
        mats.append(z)
        dd = d[np.ix_(rows, rows)]
        i, j = np.nonzero((dd <= 1.5) & ~np.eye(rows.size, dtype=bool))
        edges.append(EdgeList(i, j, dd[i, j]))
    fixed, alpha = repair_shared(mats, edges, eps)
    assert 0 < alpha <= 1
    for z, e in zip(fixed, edges, strict=True):
        assert scan_violations(z, e, eps).max_relative <= 1e-12
        np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-12)
    # Cross-user exponential entries (columns 2..) still within e^{εd} of each other.
    a, b = fixed
    for p, i in enumerate(users[0]):
        for q, j in enumerate(users[1]):
            assert np.all(a[p, 2:] <= np.exp(eps * d[i, j]) * b[q, 2:] * (1 + 1e-12))
    # Stacked block-diagonal repair gives the same matrices.
    off = users[0].size
    stacked = EdgeList(
        np.concatenate([edges[0].i, edges[1].i + off]),
        np.concatenate([edges[0].j, edges[1].j + off]),
        np.concatenate([edges[0].d, edges[1].d]),
    )
    whole, alpha_whole = repair(np.vstack(mats), stacked, eps)
    assert alpha_whole == pytest.approx(alpha)
    np.testing.assert_allclose(whole, np.vstack(fixed), rtol=1e-12)
    with pytest.raises(InvalidInput):
        repair_shared(mats, edges[:1], eps)


def test_unseeded_sampling_draws_from_the_os_csprng(solved, monkeypatch) -> None:
    from privopt.dp.randomness import GeneratorSource, SecureSource

    _, pm = solved
    calls = {"secure": 0, "generator": 0}
    secure_words, generator_words = SecureSource.random_words, GeneratorSource.random_words

    def spy_secure(self, n):
        calls["secure"] += 1
        return secure_words(self, n)

    def spy_generator(self, n):
        calls["generator"] += 1
        return generator_words(self, n)

    monkeypatch.setattr(SecureSource, "random_words", spy_secure)
    monkeypatch.setattr(GeneratorSource, "random_words", spy_generator)
    pm.sample(3)
    pm.sample_many(np.arange(5))
    assert calls["secure"] >= 2 and calls["generator"] == 0
    pm.sample(3, rng=1)  # a seed means reproducible draws from a numpy Generator
    assert calls["generator"] >= 1
