"""privopt.lp.rowgen: row and column generation equals the plain LP (with shared columns)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.certify import UncertifiedResultWarning
from privopt.errors import InvalidInput, SolverLimit
from privopt.lp import LinearProgram, solve
from privopt.lp.rowgen import RowGenProblem, RowGenSolver, solve_rowgen


def _block_instance(rng: np.random.Generator, n_blocks: int, n_shared: int):
    """Blocks of covering rows ``A_b x_b + B_b y ≥ 1`` (feasible, bounded: x, y in [0, 1]
    with costs ≥ 0 except y, whose cost may be negative, as CLR-Geo's shared weights)."""
    blocks = []
    for _ in range(n_blocks):
        n_b = int(rng.integers(2, 9))
        m_b = int(rng.integers(1, 12))
        a = sp.random_array((m_b, n_b + n_shared), density=0.5, random_state=rng).tocsr()
        a = sp.csr_array(
            a
            + sp.csr_array(
                (np.ones(m_b), (np.arange(m_b), rng.integers(0, n_b, m_b))), shape=a.shape
            )
        )
        blocks.append((rng.uniform(0.1, 2.0, n_b), a))
    y_cost = rng.uniform(-0.5, 1.0, n_shared)
    return blocks, y_cost


def _plain(blocks, y_cost) -> float:
    n_s = y_cost.size
    lp = LinearProgram(n_s, objective=y_cost, upper=1.0)
    for cost, a in blocks:
        cols = lp.add_variables(cost.size, objective=cost, upper=1.0)
        colmap = np.concatenate([np.arange(cols.start, cols.stop), np.arange(n_s)])
        lp.add_rows(a, lower=1.0, columns=colmap)
    return solve(lp).objective


def _lazy(a: sp.csr_array):
    def separate(x: np.ndarray, y: np.ndarray):
        bad = np.flatnonzero(a @ np.concatenate([x, y]) < 1.0 - 1e-9)
        return a[bad], np.ones(bad.size), np.full(bad.size, np.inf)

    return separate


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(1, 4), st.integers(0, 3), st.booleans(), st.integers(0, 2**32 - 1))
def test_rowgen_equals_plain_lp_with_shared_columns(
    n_blocks: int, n_shared: int, few_columns: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    blocks, y_cost = _block_instance(rng, n_blocks, n_shared)
    want = _plain(blocks, y_cost)
    prob = RowGenProblem(n_shared, shared_cost=y_cost, shared_upper=1.0)
    for cost, a in blocks:
        first = a[:1]  # one row in the model from the start, the rest lazy
        prob.add_block(
            cost,
            upper=1.0,
            rows=first,
            row_lower=1.0,
            separate=_lazy(a),
            initial_columns=[] if few_columns else None,
        )
    res = solve_rowgen(prob, rel_gap=1e-7, progress=False)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(want, rel=1e-7, abs=1e-9)
    assert res.lower_bound <= want + 1e-9 * max(1.0, abs(want))
    assert res.relative_gap <= 1e-7
    # the returned point meets every row of the full LP and its bounds
    y = res.y
    for (_, a), x in zip(blocks, res.x, strict=True):
        assert np.all(a @ np.concatenate([x, y]) >= 1.0 - 1e-7)
        assert np.all((x >= -1e-9) & (x <= 1 + 1e-9))
    assert res.objective == pytest.approx(
        float(y_cost @ y + sum(c @ x for (c, _), x in zip(blocks, res.x, strict=True))),
        rel=1e-12,
        abs=1e-12,
    )


def test_custom_pricing_oracle_is_used_and_certifies() -> None:
    # min 0.5 y + x0 + x1, x0 + y >= 1, x1 + y >= 1, the x columns priced in by the oracle;
    # y >= 0 has no upper bound, yet its reduced cost is >= 0, so the bound stays rigorous.
    rows = sp.csr_array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    calls = []

    def price(reduced: np.ndarray) -> np.ndarray:
        calls.append(reduced.copy())
        return np.flatnonzero(reduced < 0)

    prob = RowGenProblem(1, shared_cost=[0.5], shared_upper=np.inf)
    prob.add_block(
        [1.0, 1.0], upper=np.inf, rows=rows, row_lower=1.0, price=price, initial_columns=[]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncertifiedResultWarning)
        res = solve_rowgen(prob, progress=False)
    assert calls and res.status == "optimal" and res.objective == pytest.approx(0.5)


def test_limits_and_bad_input() -> None:
    rows = sp.csr_array([[1.0, 1.0]])
    prob = RowGenProblem()
    state = {"k": 0}

    def never_done(x: np.ndarray, y: np.ndarray):
        state["k"] += 1  # a new (redundant) row every round
        return rows, [0.0], [np.inf]

    prob.add_block([1.0, 1.0], separate=never_done)
    with pytest.raises(SolverLimit) as err:
        solve_rowgen(prob, max_rounds=3, progress=False)
    assert err.value.best.lower_bound <= 0.0 + 1e-12
    with pytest.raises(InvalidInput):
        prob.add_block([1.0], rows=sp.csr_array([[1.0, 1.0]]))
    with pytest.raises(InvalidInput):
        RowGenProblem(-1)
    with pytest.raises(InvalidInput):
        prob.add_block([1.0], lower=2.0, upper=1.0)


@pytest.mark.parametrize("seed", range(3))
def test_simplex_group_bound_is_valid_and_tight(seed: int) -> None:
    """The safe dual bound with simplex groups kept as constraints, Σ_g min_{j∈g} (c − Aᵀμ)_j,
    never exceeds the LP optimum (random multipliers of any sign and size, some rows left
    out) and equals it at the optimal duals (scipy's HiGHS), on a metric-DP LP."""
    from privopt.lp import SimplexGroups, safe_dual_bound
    from privopt.mdp import MDPProblem
    from scipy.optimize import linprog

    rng = np.random.default_rng(seed)
    prob = MDPProblem(
        rng.uniform(0, 3, (12, 2)), epsilon=rng.uniform(0.5, 3), eta=1.2, outputs=5, seed=seed
    )
    e, n, k = prob.edges, prob.n_records, prob.n_outputs
    scale = np.exp(-prob.epsilon * e.d)
    rows = np.arange(len(e) * k)
    a = np.zeros((rows.size, n * k))
    ee, kk = np.divmod(rows, k)
    a[rows, e.i[ee] * k + kk] = scale[ee]
    a[rows, e.j[ee] * k + kk] = -1.0
    c = prob.objective.ravel()
    opt = linprog(
        c,
        A_ub=a,
        b_ub=np.zeros(rows.size),
        A_eq=np.kron(np.eye(n), np.ones((1, k))),
        b_eq=np.ones(n),
        method="highs",
    )
    assert opt.status == 0
    groups = SimplexGroups.blocks(n, k)

    def bound(mu: np.ndarray, keep: np.ndarray) -> float:
        m = int(keep.sum())
        return safe_dual_bound(
            c, sp.csr_array(a[keep]), np.full(m, -np.inf), np.zeros(m), 0.0, np.inf,
            mu[keep], simplices=groups,
        )  # fmt: skip

    everything = np.ones(rows.size, dtype=bool)
    for _ in range(50):
        mu = rng.normal(0, 1, rows.size) * rng.choice([1e-6, 1e-2, 1.0])
        assert bound(mu, everything) <= opt.fun + 1e-12
        assert bound(mu, rng.random(rows.size) < 0.5) <= opt.fun + 1e-12
    assert bound(opt.ineqlin.marginals, everything) == pytest.approx(opt.fun, rel=1e-7, abs=1e-12)


def _simplex_instance(rng: np.random.Generator):
    """Distributions over K outputs for n records (Σ_k x_ik = 1) under random lazy rows
    ``x_ik ≤ r x_jk + s`` (feasible: the uniform point meets them when r ≥ 1, s ≥ 0)."""
    n, k = int(rng.integers(2, 7)), int(rng.integers(2, 6))
    m = int(rng.integers(1, 25))
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    col = rng.integers(0, k, m)
    r, slack = rng.uniform(1.0, 3.0, m), rng.uniform(0.0, 0.1, m)
    a = sp.csr_array(
        (
            np.column_stack([np.ones(m), -r]).ravel(),
            np.column_stack([i * k + col, j * k + col]).ravel(),
            np.arange(0, 2 * m + 1, 2),
        ),
        shape=(m, n * k),
    )
    a.sum_duplicates()
    return n, k, rng.uniform(0.0, 2.0, n * k), a, slack


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_simplex_groups_equal_the_plain_lp(seed: int, few_columns: bool) -> None:
    """Rows given as simplex groups, absent columns priced against the group duals, lazy
    rows: the same optimum as the plain LP, certified by the simplex-group bound."""
    rng = np.random.default_rng(seed)
    n, k, cost, a, slack = _simplex_instance(rng)
    lp = LinearProgram(n * k, objective=cost)
    lp.add_rows(sp.csr_array(np.kron(np.eye(n), np.ones((1, k)))), lower=1.0, upper=1.0)
    lp.add_rows(a, upper=slack)
    want = solve(lp).objective

    def separate(x: np.ndarray, y: np.ndarray):
        bad = np.flatnonzero(a @ x > slack + 1e-9)
        return a[bad], np.full(bad.size, -np.inf), slack[bad]

    prob = RowGenProblem()
    prob.add_block(
        cost,
        separate=separate,
        initial_columns=[] if few_columns else None,
        simplex_groups=np.repeat(np.arange(n), k),
    )
    res = solve_rowgen(prob, rel_gap=1e-7, progress=False)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(want, rel=1e-7, abs=1e-9)
    assert res.lower_bound <= want + 1e-9 * max(1.0, abs(want))
    x = res.x[0]
    assert np.allclose(x.reshape(n, k).sum(axis=1), 1.0, atol=1e-9)
    assert np.all(a @ x <= slack + 1e-7) and np.all(x >= -1e-9)


def test_session_adds_rows_and_restarts_from_a_basis() -> None:
    """A client adds rows itself and runs again; a related model (same rows, new
    coefficients) started from the first one's basis reaches the cold optimum."""
    rng = np.random.default_rng(7)
    n, k, cost, a, slack = _simplex_instance(rng)
    groups = np.repeat(np.arange(n), k)

    def problem(scale: float) -> RowGenProblem:
        prob = RowGenProblem()
        prob.add_block(cost * scale, simplex_groups=groups)
        return prob

    first = RowGenSolver(problem(1.0))
    res0 = first.run(progress=False)
    first.add_rows(0, a, -np.inf, slack)  # every row, found by the client
    res1 = first.run(progress=False)
    assert res1.objective >= res0.objective - 1e-12
    assert np.all(a @ res1.x[0] <= slack + 1e-7)
    assert len(res1.rounds) == len(res0.rounds) + 1
    warm_prob = problem(1.5)
    warm_prob.blocks[0].initial_columns = np.arange(n * k)
    warm_prob._add_rows(0, a, -np.inf, slack)
    warm = RowGenSolver(warm_prob, basis=first.basis()).run(progress=False)
    cold_prob = problem(1.5)
    cold_prob._add_rows(0, a, -np.inf, slack)
    cold = RowGenSolver(cold_prob).run(progress=False)
    assert warm.objective == pytest.approx(cold.objective, rel=1e-9, abs=1e-12)
    assert warm.rounds[0]["iterations"] <= cold.rounds[0]["iterations"]
    assert warm.status == cold.status == "optimal"


def test_simplex_groups_of_several_blocks_and_block_form() -> None:
    """Two blocks with simplex groups (one as per-column ids, one as consecutive blocks)
    solve as two independent LPs: the optimum is the sum."""
    from privopt.lp import SimplexGroups

    rng = np.random.default_rng(3)
    parts = [_simplex_instance(rng) for _ in range(2)]
    want, prob = 0.0, RowGenProblem()
    for b, (n, k, cost, a, slack) in enumerate(parts):
        lp = LinearProgram(n * k, objective=cost)
        lp.add_rows(sp.csr_array(np.kron(np.eye(n), np.ones((1, k)))), lower=1.0, upper=1.0)
        lp.add_rows(a, upper=slack)
        want += solve(lp).objective

        def separate(x: np.ndarray, y: np.ndarray, a=a, slack=slack):
            bad = np.flatnonzero(a @ x > slack + 1e-9)
            return a[bad], np.full(bad.size, -np.inf), slack[bad]

        groups = np.repeat(np.arange(n), k) if b == 0 else SimplexGroups.blocks(n, k)
        prob.add_block(cost, separate=separate, initial_columns=[], simplex_groups=groups)
    res = solve_rowgen(prob, rel_gap=1e-7, progress=False)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(want, rel=1e-7, abs=1e-9)
    with pytest.raises(InvalidInput, match="lower bound 0"):
        RowGenProblem().add_block([1.0, 2.0], lower=0.5, simplex_groups=[0, 0])
    with pytest.raises(InvalidInput, match="has no column"):
        RowGenProblem().add_block([1.0, 2.0], simplex_groups=[0, 2])
