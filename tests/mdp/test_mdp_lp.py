"""Monolithic LP and ExpMech: spec §8 oracles, brute-force constraint checks, scipy linprog."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from mdp_instances import line_problem, random_2d
from privopt.certify import UncertifiedResultWarning
from privopt.errors import InvalidInput, SolverLimit
from privopt.lp import rowgen
from privopt.mdp import MDPProblem, build_lp, exponential_mechanism, solve
from scipy.optimize import linprog


def brute_force_violation(
    z: np.ndarray,
    prob: MDPProblem,
    dist: np.ndarray | None = None,
) -> float:
    """max over pairs and k of z_ik − e^{ε D_ij} z_jk with explicit loops (reference)."""
    d = prob.distances if dist is None else dist
    worst = -math.inf
    for i in range(prob.n_records):
        for j in range(prob.n_records):
            if i == j or (dist is None and d[i, j] > prob.eta) or not math.isfinite(d[i, j]):
                continue
            for k in range(prob.n_outputs):
                worst = max(worst, z[i, k] - math.exp(prob.epsilon * d[i, j]) * z[j, k])
    return worst


def linprog_reference(prob: MDPProblem) -> float:
    """The LP of spec §1.3 built with plain loops and solved by scipy's HiGHS wrapper."""
    n, k = prob.n_records, prob.n_outputs
    rows, rhs = [], []
    for i in range(n):
        for j in range(n):
            if i != j and prob.distances[i, j] <= prob.eta:
                for kk in range(k):
                    row = np.zeros(n * k)
                    row[i * k + kk] = 1.0
                    row[j * k + kk] = -math.exp(prob.epsilon * prob.distances[i, j])
                    rows.append(row)
                    rhs.append(0.0)
    a_eq = np.kron(np.eye(n), np.ones((1, k)))
    res = linprog(
        prob.objective.ravel(),
        A_ub=np.array(rows) if rows else None,
        b_ub=np.array(rhs) if rows else None,
        A_eq=a_eq,
        b_eq=np.ones(n),
        bounds=(0, None),
        method="highs",
    )
    assert res.status == 0
    return float(res.fun)


@pytest.mark.parametrize(
    "eps, want", [(0.5, 0.3775406688), (1.0, 0.2689414214), (2.0, 0.1192029220)]
)
def test_randomized_response_closed_form(eps: float, want: float) -> None:
    pm = solve(line_problem(2, eps))
    assert pm.expected_loss == pytest.approx(want, abs=1e-9)
    e = math.exp(eps)
    np.testing.assert_allclose(
        pm.matrix, [[e / (1 + e), 1 / (1 + e)], [1 / (1 + e), e / (1 + e)]], atol=1e-9
    )


@pytest.mark.parametrize(
    "n, eps, want", [(9, 0.5, 1.312145614), (9, 1.0, 0.7013662913), (12, 0.7, 1.1000777717)]
)
def test_line_instances(n: int, eps: float, want: float) -> None:
    pm = solve(line_problem(n, eps))
    assert pm.expected_loss == pytest.approx(want, rel=1e-9)
    assert pm.lower_bound == pytest.approx(want, rel=1e-9)


def test_random_2d_instance_spec_item_5() -> None:
    prob = random_2d()
    pm = solve(prob)
    assert pm.expected_loss == pytest.approx(0.8243241414, rel=1e-9)
    assert pm.violations(prob).ok(1e-9)
    # Property 3.2: path constraints with graph distances hold for every connected pair.
    assert brute_force_violation(pm.matrix, prob, prob.graph_distances()) <= 1e-12


def test_epsilon_zero_rows_equal() -> None:
    prob = line_problem(9, 0.0)
    pm = solve(prob)
    assert pm.expected_loss == pytest.approx(20 / 9, rel=1e-9)
    np.testing.assert_allclose(pm.matrix, np.broadcast_to(pm.matrix[0], pm.matrix.shape), atol=1e-9)


def test_no_edges_gives_cheapest_output() -> None:
    prob = MDPProblem(
        np.random.default_rng(1).uniform(0, 6, (12, 2)), epsilon=1.0, eta=1e-3, outputs=4, seed=2
    )
    assert len(prob.edges) == 0
    pm = solve(prob)
    want = float(np.sum(prob.prior * prob.cost.min(axis=1)))
    assert pm.expected_loss == pytest.approx(want, rel=1e-12)
    assert pm.info["n_isolated"] == 12


def test_one_record_is_trivial() -> None:
    prob = MDPProblem(np.array([[1.0, 2.0]]), epsilon=1.0, eta=1.0)
    pm = solve(prob)
    np.testing.assert_array_equal(pm.matrix, [[1.0]])
    assert pm.expected_loss == 0.0


@pytest.mark.parametrize("seed", range(3))
def test_lp_matches_linprog_and_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    prob = MDPProblem(
        rng.uniform(0, 4, (10, 2)),
        epsilon=rng.uniform(0.3, 2.0),
        eta=1.5,
        outputs=6,
        seed=seed,
        prior=rng.dirichlet(np.ones(10)),
    )
    pm = solve(prob)
    assert pm.expected_loss == pytest.approx(linprog_reference(prob), rel=1e-7, abs=1e-10)
    assert brute_force_violation(pm.matrix, prob) <= 1e-12
    v = pm.violations(prob)
    assert v.ok(1e-9) and v.min_entry >= 0


def test_component_split_property_3_1() -> None:
    # Two far-apart clusters: LP over the union = sum of per-cluster LPs (same prior weights).
    rng = np.random.default_rng(5)
    a, b = rng.uniform(0, 3, (7, 2)), rng.uniform(0, 3, (6, 2)) + 100.0
    both = MDPProblem(np.vstack([a, b]), epsilon=1.0, eta=1.6)
    pm = solve(both)
    assert both.components[0] >= 2
    total = 0.0
    for part in (a, b):
        sub = MDPProblem(
            part,
            epsilon=1.0,
            eta=1.6,
            outputs=np.vstack([a, b]),
            prior=np.full(len(part), 1 / len(part)),
        )
        total += solve(sub).expected_loss * len(part) / 13
    assert pm.expected_loss == pytest.approx(total, rel=1e-8)


def test_build_lp_sizes() -> None:
    prob = random_2d(15, seed=2)
    block = prob.subproblem(np.arange(15))
    c, a, lo, up = build_lp(block)
    assert a.shape == (len(prob.edges) * 15 + 15, 15 * 15)
    assert a.nnz == 2 * len(prob.edges) * 15 + 15 * 15
    assert c.shape == (225,) and np.all(lo[-15:] == 1) and np.all(up[:-15] == 0)


def test_expmech_properties() -> None:
    prob = random_2d(25, seed=4, eps=0.7)
    em = exponential_mechanism(prob)
    np.testing.assert_allclose(em.matrix.sum(axis=1), 1.0, rtol=1e-12)
    # ε-mDP for *all* pairs w.r.t. d (spec §8 item 11).
    all_pairs = prob.distances.copy()
    assert brute_force_violation(em.matrix, prob, all_pairs) <= 1e-15
    assert em.expected_loss >= solve(prob).expected_loss - 1e-12
    # Eq. 47 closed form on one row.
    w = np.exp(-0.35 * prob.distances[3])
    np.testing.assert_allclose(em.matrix[3], w / w.sum(), rtol=1e-12)
    same = solve(prob, method="expmech")
    np.testing.assert_array_equal(same.matrix, em.matrix)


@pytest.mark.parametrize("seed", range(4))
def test_row_generation_equals_full_lp(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pts = rng.uniform(0, 5, (30, 2))
    outputs = [None, 7, rng.uniform(0, 5, (6, 2)), np.array([0, 3, 9])][seed]
    prob = MDPProblem(
        pts,
        epsilon=rng.uniform(0.3, 3.0),
        eta=1.4,
        outputs=outputs,
        seed=seed,
        prior=rng.dirichlet(np.ones(30)),
    )
    lazy = solve(prob)
    full = solve(prob, row_generation=False)
    assert lazy.expected_loss == pytest.approx(full.expected_loss, rel=1e-7)
    assert lazy.lower_bound <= full.expected_loss * (1 + 1e-9)
    assert lazy.violations(prob).ok(1e-9)
    for part in lazy.info["components"]:
        assert part["rows"] <= part["full_rows"]


def test_epsilon_path_warm_start_equals_cold_solves() -> None:
    from privopt.mdp import solve_epsilon_path

    prob = MDPProblem(
        np.random.default_rng(12).uniform(0, 5, (30, 2)), epsilon=1.0, eta=1.5, outputs=12, seed=0
    )
    eps = [0.8, 0.9, 1.0, 1.2]
    warm = solve_epsilon_path(prob, eps)
    cold = solve_epsilon_path(prob, eps, warm_start=False)
    for e, w, c in zip(eps, warm, cold, strict=True):
        single = MDPProblem(
            np.random.default_rng(12).uniform(0, 5, (30, 2)), epsilon=e, eta=1.5, outputs=12, seed=0
        )
        assert w.epsilon == e
        assert w.expected_loss == pytest.approx(c.expected_loss, rel=1e-8)
        assert w.expected_loss == pytest.approx(solve(single).expected_loss, rel=1e-8)
        assert w.violations(single).ok(1e-9)
    # Later ε start from the previous basis: fewer simplex iterations than from scratch.
    assert sum(w.info["iterations"] for w in warm[1:]) < sum(c.info["iterations"] for c in cold[1:])
    with pytest.raises(InvalidInput, match="epsilons"):
        solve_epsilon_path(prob, [1.0, -1.0])


def _component_block(prob: MDPProblem):
    _n_comp, labels = prob.components
    big = int(np.argmax(np.bincount(labels)))
    return prob.subproblem(np.flatnonzero(labels == big))


@pytest.mark.parametrize("seed", range(3))
def test_safe_lower_bound_is_valid_for_any_multipliers(seed: int) -> None:
    """The safe dual bound is a lower bound for every choice of multipliers (weak duality
    over z ∈ [0, 1]), and tight at the solver's duals; checked against scipy's HiGHS."""
    from privopt.perturbation.exact_lp import _safe_lower_bound
    from privopt.perturbation.lp_rows import mdp_rows, unit_rows

    rng = np.random.default_rng(seed)
    prob = MDPProblem(
        rng.uniform(0, 3, (12, 2)), epsilon=rng.uniform(0.5, 3), eta=1.2, outputs=5, seed=seed
    )
    block = _component_block(prob)
    n, k = block.n, block.k
    a = sp_vstack_csr([unit_rows(n, k), mdp_rows(block.edges, block.epsilon, n, k)])
    c = block.objective.ravel()
    m = a.shape[0] - n
    opt = linprog(
        c,
        A_ub=a[n:].toarray(),
        b_ub=np.zeros(m),
        A_eq=a[:n].toarray(),
        b_eq=np.ones(n),
        bounds=(0, None),
        method="highs",
    )
    assert opt.status == 0
    for _ in range(50):
        y = rng.normal(0, 1, a.shape[0]) * rng.choice([1e-6, 1e-2, 1.0])
        assert _safe_lower_bound(c, a, n, y) <= opt.fun + 1e-12
    # At the optimal duals (scipy's sign convention: marginals of A_ub are <= 0) it is tight.
    y = np.concatenate([opt.eqlin.marginals, opt.ineqlin.marginals])
    assert _safe_lower_bound(c, a, n, y) == pytest.approx(opt.fun, rel=1e-7, abs=1e-12)


def sp_vstack_csr(parts):
    import scipy.sparse as sp

    return sp.csr_array(sp.vstack(parts, format="csr"))


@pytest.mark.parametrize("initial_rows", ["none", "dag"])
@pytest.mark.parametrize("polish", [True, False])
def test_row_generation_variants_certify_at_paper_coefficients(
    initial_rows: str, polish: bool
) -> None:
    """ε·η = 20 as in the paper (ratios up to e^20): every variant releases a verified matrix
    whose loss is within its rigorous bound's gap of the plain LP, and the gap is small."""
    pts = np.random.default_rng(5).uniform(0, 6, (60, 2))
    prob = MDPProblem(pts, epsilon=10.0, eta=2.0, outputs=15, seed=1)
    full = solve(prob, row_generation=False)
    pm = solve(prob, initial_rows=initial_rows, polish=polish)
    assert pm.violations(prob).ok(1e-9)
    assert pm.lower_bound <= full.expected_loss * (1 + 1e-12)
    assert pm.lower_bound <= pm.expected_loss * (1 + 1e-12)
    assert pm.relative_gap <= 1e-6
    assert pm.expected_loss == pytest.approx(full.expected_loss, rel=1e-6)
    for part in pm.info["components"]:
        assert part["lower_bound"] <= part["relaxation_objective"] * (1 + 1e-9) + 1e-15
        # polish=True re-solves unscaled once per component; False never does.
        assert (len(part["polish"]) >= 1) == polish


def test_row_generation_rejects_unknown_initial_rows() -> None:
    prob = MDPProblem(np.array([[0.0], [0.5], [1.0]]), epsilon=1.0, eta=1.0)
    with pytest.raises(InvalidInput, match="initial_rows"):
        solve(prob, initial_rows="all")


@pytest.mark.parametrize("case", range(5))
def test_column_generation_equals_all_columns(case: int) -> None:
    """Row generation with generated columns (default) reaches the same optimum as with all
    N·K columns and as plain HiGHS; its bound covers the columns it never held."""
    rng = np.random.default_rng(40 + case)
    n = 36
    pts = rng.uniform(0, 5, (n, 2))
    eps = [10.0, 0.7, 2.0, 4.0, 1.5][case]
    outputs = [None, None, 9, rng.uniform(0, 5, (7, 2)), None][case]
    prob = MDPProblem(
        pts, epsilon=eps, eta=1.5, outputs=outputs, seed=case, prior=rng.dirichlet(np.ones(n))
    )
    if case == 4:  # an arbitrary cost table: cheap outputs far away, so columns price in
        prob = MDPProblem(
            pts,
            epsilon=eps,
            eta=1.5,
            cost=rng.uniform(0, 3, (n, n)),
            prior=rng.dirichlet(np.ones(n)),
        )
    gen = solve(prob)
    every = solve(prob, columns="all")
    full = solve(prob, row_generation=False)
    for pm in (gen, every):
        assert pm.violations(prob).ok(1e-9)
        assert pm.lower_bound <= full.expected_loss * (1 + 1e-9) + 1e-15
        assert pm.expected_loss == pytest.approx(full.expected_loss, rel=1e-7, abs=1e-12)
    parts = gen.info["components"]
    assert all(p["model_vars"] <= p["vars"] for p in parts)
    assert all(p["model_vars"] == p["vars"] for p in every.info["components"])
    if case == 0:  # K = N, ε·η = 15: entries far below the row tolerance never enter
        assert sum(p["model_vars"] for p in parts) < sum(p["vars"] for p in parts)
    if case == 4:  # pricing, not only rows, brought columns in
        assert sum(r["priced"] for p in parts for r in p["rounds"]) > 0


def test_row_generation_rejects_unknown_columns() -> None:
    prob = MDPProblem(np.array([[0.0], [0.5], [1.0]]), epsilon=1.0, eta=1.0)
    with pytest.raises(InvalidInput, match="columns"):
        solve(prob, columns="some")


def test_presolve_false_unbounded_verdict_is_retried() -> None:
    # Two records at d = 1.69, ε = 13.71 (coefficients e^23): HiGHS's presolve called this
    # feasible, bounded LP "Unbounded". Every mDP LP is feasible and bounded, so such a
    # verdict is retried without presolve; the loss matches the row-generation solve.
    pts = np.random.default_rng(18).uniform(0, 6, (4, 2))
    prob = MDPProblem(pts, epsilon=13.7143, eta=1.75, seed=18)
    with warnings.catch_warnings():
        # LP* = 6.8e-11 against the bound 0: no relative gap is provable (honestly uncertified)
        warnings.simplefilter("ignore", UncertifiedResultWarning)
        plain = solve(prob, row_generation=False)
        rowgen = solve(prob)
    assert plain.expected_loss == pytest.approx(rowgen.expected_loss, rel=1e-9)
    assert plain.lower_bound <= rowgen.expected_loss and rowgen.lower_bound <= plain.expected_loss
    assert plain.violations(prob).ok(1e-9)


def test_a_time_limit_in_row_generation_releases_the_last_round_repaired(monkeypatch) -> None:
    """The limit hits in the round after pricing added columns: the last solved round (with
    fewer columns than the model now has) is repaired, verified and released, its bound
    still certified, instead of an error."""
    prob = random_2d(30, seed=3, eps=0.8, eta=1.5, side=5.0)
    exact = solve(prob, "lp")
    calls = {"n": 0}
    real = rowgen.RowGenSolver._time_left

    def stop_in_round_two(self, start, time_limit):
        calls["n"] += 1
        if calls["n"] >= 2:
            raise SolverLimit("time limit reached", status="limit")
        return real(self, start, time_limit)

    monkeypatch.setattr(rowgen.RowGenSolver, "_time_left", stop_in_round_two)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an uncertified result warns; its status is checked
        pm = solve(prob, "lp", time_limit=600, polish=False)
    assert calls["n"] >= 2
    assert pm.violations(prob).ok(1e-9)
    assert pm.lower_bound <= exact.expected_loss * (1 + 1e-9)
    assert pm.expected_loss >= exact.lower_bound * (1 - 1e-9)
    assert pm.status in ("optimal", "gap_not_closed")


@pytest.mark.parametrize("seed", range(40))
def test_mdp_rows_equal_the_rows_written_one_by_one(seed: int) -> None:
    """The mDP rows, built as CSR in one pass, equal a reference that writes each row
    ``z_ik − e^{εd} z_jk ≤ 0`` entry by entry: same pattern (columns sorted in each row),
    same values, with and without a column map that drops records (boundary-only rows, rows
    with one term or none)."""
    from privopt.perturbation.lp_rows import mdp_rows
    from privopt.perturbation.problem import EdgeList

    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(2, 30)), int(rng.integers(1, 6))
    i = rng.integers(0, n, int(rng.integers(0, 60)))
    j = (i + rng.integers(1, n, i.size)) % n  # i ≠ j
    edges = EdgeList(i, j, rng.uniform(0, 3, i.size))
    eps = float(rng.uniform(0, 4))
    col_of, n_cols = None, n * k
    if seed % 2:
        kept = rng.random(n) < 0.6
        col_of = np.full(n, -1, dtype=np.int64)
        col_of[kept] = rng.permutation(int(kept.sum())) * k
        n_cols = int(kept.sum()) * k
    got = mdp_rows(edges, eps, n, k, col_of=col_of, n_cols=n_cols)
    col = (lambda r: r * k) if col_of is None else (lambda r: col_of[r])
    ratio = np.exp(eps * edges.d)  # NumPy's exp, as the kernel's (math.exp can differ by an ulp)
    want = np.zeros((i.size * k, n_cols))
    for e in range(i.size):
        for kk in range(k):
            if col(i[e]) >= 0:
                want[e * k + kk, col(i[e]) + kk] = 1.0
            if col(j[e]) >= 0:
                want[e * k + kk, col(j[e]) + kk] = -ratio[e]
    assert got.shape == want.shape
    assert got.has_sorted_indices
    np.testing.assert_array_equal(got.toarray(), want)
    assert got.nnz == np.count_nonzero(want)
