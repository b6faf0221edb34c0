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
from privopt.lp.rowgen import RowGenProblem, solve_rowgen


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
