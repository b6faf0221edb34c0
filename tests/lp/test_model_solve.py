"""privopt.lp model building and solve(): independent references (scipy linprog, dense
assembly, brute force) and certificate checks, not hard-coded numbers."""

from __future__ import annotations

import itertools
import types

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.errors import (
    InfeasibleModel,
    InvalidInput,
    SolverLimit,
    UnboundedModel,
)
from privopt.lp import LinearProgram, farkas_margin, solve
from scipy.optimize import linprog


def random_lp(seed: int, m: int = 30, n: int = 40, density: float = 0.3):
    """A feasible, bounded random LP with every row type (<=, >=, =, ranged) and boxed columns.

    Feasibility: the row bounds are built around the activity of a point x0 inside the box.
    """
    rng = np.random.default_rng(seed)
    A = sp.random(
        m, n, density=density, random_state=rng, format="csr", data_rvs=lambda k: rng.normal(size=k)
    )
    lo = rng.uniform(-2, 0, n)
    up = lo + rng.uniform(0.5, 3, n)
    up[rng.random(n) < 0.2] = np.inf  # some columns unbounded above
    x0 = lo + rng.uniform(0.1, 0.4, n)
    act = A @ x0
    kind = rng.integers(0, 4, m)
    rl = np.where(kind == 0, -np.inf, act - rng.uniform(0, 1, m))
    ru = np.where(kind == 1, np.inf, act + rng.uniform(0, 1, m))
    rl[kind == 2] = ru[kind == 2] = act[kind == 2]
    c = rng.normal(size=n)
    c[np.isinf(up)] = np.abs(c[np.isinf(up)])  # keep min c^T x bounded
    return A, rl, ru, lo, up, c


def linprog_reference(A, rl, ru, lo, up, c):
    A = sp.csr_array(A)
    eq = rl == ru
    ub_rows = ~eq & np.isfinite(ru)
    lb_rows = ~eq & np.isfinite(rl)
    A_ub = sp.vstack([A[ub_rows], -A[lb_rows]]).tocsr()
    b_ub = np.concatenate([ru[ub_rows], -rl[lb_rows]])
    res = linprog(
        c,
        A_ub=A_ub,
        b_ub=b_ub,
        A_eq=A[eq],
        b_eq=rl[eq],
        bounds=list(zip(lo, np.where(np.isinf(up), None, up), strict=True)),
        method="highs-ds",
    )
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("seed", range(6))
def test_random_lp_matches_linprog(seed):
    A, rl, ru, lo, up, c = random_lp(seed)
    lp = LinearProgram(A.shape[1], objective=c, lower=lo, upper=up)
    lp.add_rows(A, lower=rl, upper=ru)
    res = solve(lp)
    ref = linprog_reference(A, rl, ru, lo, up, c)
    assert res.objective == pytest.approx(ref, rel=1e-9, abs=1e-9)
    assert np.allclose(lp.matrix().toarray(), A.toarray())
    for method in ("ipm", "choose"):
        assert solve(lp, method=method).objective == pytest.approx(ref, rel=1e-7, abs=1e-7)


def test_pdlp_close_to_simplex():
    A, rl, ru, lo, up, c = random_lp(11, m=15, n=20)
    lp = LinearProgram(20, objective=c, lower=lo, upper=up)
    lp.add_rows(A, lower=rl, upper=ru)
    ref = solve(lp).objective
    # PDLP is a first-order method: relative accuracy ~1e-4 by default.
    assert solve(lp, method="pdlp").objective == pytest.approx(ref, rel=1e-3, abs=1e-3)


def test_block_assembly_equals_dense_reference():
    rng = np.random.default_rng(3)
    lp = LinearProgram(5, objective=rng.normal(size=5))
    s2 = lp.add_variables(4, objective=1.0, lower=-1, upper=2, name="second")
    dense_rows = []
    B1 = sp.random(3, 5, density=0.5, random_state=1, format="csr")  # narrower than n_vars
    lp.add_rows(B1, upper=1.0, name="b1")
    dense_rows.append(np.hstack([B1.toarray(), np.zeros((3, 4))]))
    B2 = rng.normal(size=(2, 4))  # dense block on the second column block
    lp.add_rows(B2, lower=-1.0, columns=s2)
    dense_rows.append(np.hstack([np.zeros((2, 5)), B2]))
    rows = np.array([0, 0, 1, 1, 1])
    cols = np.array([8, 0, 2, 2, 7])  # (1, 2) twice: summed
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    sl = lp.add_rows((rows, cols, vals), n_rows=2, lower=0, upper=9)
    ref = np.zeros((2, 9))
    np.add.at(ref, (rows, cols), vals)
    dense_rows.append(ref)
    colmap = np.array([6, 1, 3])
    B4 = sp.coo_array(rng.normal(size=(2, 3)))
    lp.add_rows(B4, columns=colmap, upper=5)
    ref4 = np.zeros((2, 9))
    ref4[:, colmap] = B4.toarray()
    dense_rows.append(ref4)
    full = np.vstack(dense_rows)
    assert lp.n_rows == 9 and lp.n_vars == 9 and sl == slice(5, 7)
    assert lp.row_blocks["b1"] == slice(0, 3) and lp.col_blocks["second"] == s2
    M = lp.matrix()
    assert np.array_equal(M.toarray(), full)
    assert M.has_sorted_indices  # merged CSC keeps row indices sorted within a column
    res = solve(lp)
    assert np.allclose(M @ res.x, res.row_activity, atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_duals_complementary_slackness_and_strong_duality(seed):
    A, rl, ru, lo, up, c = random_lp(100 + seed)
    lp = LinearProgram(A.shape[1], objective=c, lower=lo, upper=up, offset=2.5)
    lp.add_rows(A, lower=rl, upper=ru)
    res = solve(lp)
    y, d, x, act = res.row_duals, res.col_duals, res.x, res.row_activity
    tol = 1e-7
    assert np.allclose(d, c - A.T @ y, atol=1e-9)
    # sign conventions (minimisation): y_i > 0 only at a lower bound, y_i < 0 only at an upper.
    assert np.all((y <= tol) | (np.abs(act - rl) <= tol))
    assert np.all((y >= -tol) | (np.abs(act - ru) <= tol))
    assert np.all((d <= tol) | (np.abs(x - lo) <= tol))
    assert np.all((d >= -tol) | (np.abs(x - up) <= tol))
    # strong duality: the dual objective built from the active bounds equals the primal one.
    row_b = np.where(y > 0, rl, np.where(y < 0, ru, 0.0))
    col_b = np.where(d > 0, lo, np.where(d < 0, up, 0.0))
    dual_obj = y @ row_b + d @ col_b + 2.5
    assert dual_obj == pytest.approx(res.objective, rel=1e-9, abs=1e-9)
    assert res.objective == pytest.approx(c @ x + 2.5, rel=1e-12, abs=1e-12)


def test_maximisation():
    A, rl, ru, lo, up, c = random_lp(7)
    up = np.where(np.isinf(up), lo + 5, up)
    lp = LinearProgram(A.shape[1], objective=c, lower=lo, upper=up, sense="max")
    lp.add_rows(A, lower=rl, upper=ru)
    ref = -linprog_reference(A, rl, ru, lo, up, -c)
    assert solve(lp).objective == pytest.approx(ref, rel=1e-9, abs=1e-9)


def infeasible_lp(seed: int):
    """Random feasible rows plus one row that a combination of the box bounds contradicts."""
    A, rl, ru, lo, up, c = random_lp(seed, m=20, n=25)
    up = np.where(np.isinf(up), lo + 4, up)
    lp = LinearProgram(25, objective=c, lower=lo, upper=up)
    lp.add_rows(A, lower=rl, upper=ru)
    w = np.random.default_rng(seed).uniform(0.5, 1.5, 25)
    lp.add_rows(w[None, :], lower=w @ up + 1.0)  # w^T x >= w^T up + 1 is impossible
    return lp


@pytest.mark.parametrize("presolve", [True, False])
@pytest.mark.parametrize("method", ["simplex", "ipm"])
def test_infeasible_has_verified_farkas_ray(presolve, method):
    lp = infeasible_lp(5)
    with pytest.raises(InfeasibleModel) as err:
        solve(lp, presolve=presolve, method=method)
    y = err.value.farkas_ray
    assert y is not None and y.shape == (lp.n_rows,)
    margin = farkas_margin(lp.matrix(), lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper, y)
    assert margin > 1e-6


def test_infeasible_ray_on_equality_system():
    # x1 + x2 = 1, x1 - x2 = 3, x >= 0 is infeasible (x2 = -1); a certificate must exist.
    lp = LinearProgram(2)
    lp.add_rows(np.array([[1.0, 1.0], [1.0, -1.0]]), lower=[1, 3], upper=[1, 3])
    with pytest.raises(InfeasibleModel) as err:
        solve(lp)
    y = err.value.farkas_ray
    assert farkas_margin(lp.matrix(), lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper, y) > 0
    assert (
        farkas_margin(lp.matrix(), lp.row_lower, lp.row_upper, lp.col_lower, lp.col_upper, -y) < 0
    )


def test_unbounded():
    lp = LinearProgram(2, objective=[-1.0, 0.0])
    lp.add_rows(np.array([[1.0, -1.0]]), upper=1.0)
    with pytest.raises(UnboundedModel) as err:
        solve(lp, presolve=False)
    ray = err.value.primal_ray
    assert ray is not None and ray[0] > 0
    with pytest.raises(UnboundedModel):
        solve(lp)  # presolve on: HiGHS may say "unbounded or infeasible" first


def test_iteration_limit_gives_solver_limit():
    A, rl, ru, lo, up, c = random_lp(2, m=60, n=80)
    lp = LinearProgram(80, objective=c, lower=lo, upper=up)
    lp.add_rows(A, lower=rl, upper=ru)
    with pytest.raises(SolverLimit) as err:
        solve(lp, iteration_limit=1, presolve=False)
    assert "limit" in err.value.status.lower()


def knapsack(seed: int, n: int = 12):
    rng = np.random.default_rng(seed)
    w = rng.integers(3, 20, n).astype(float)
    v = rng.integers(1, 30, n).astype(float)
    return w, v, float(w.sum() // 2)


def test_time_limit_gives_solver_limit_with_best():
    # A large hard-ish knapsack with a tiny time limit cannot be proved optimal in time.
    rng = np.random.default_rng(0)
    n = 3000
    w = rng.integers(10_000, 20_000, n).astype(float)
    v = w + rng.integers(0, 50, n)
    lp = LinearProgram(n, objective=v, upper=1, integrality=np.ones(n, bool), sense="max")
    lp.add_rows(w[None, :], upper=w.sum() / 3)
    with pytest.raises(SolverLimit) as err:
        solve(lp, time_limit=1e-3)
    assert "time" in err.value.status.lower()
    best = err.value.best
    assert best is None or w @ best.x <= w.sum() / 3 + 1e-6


@pytest.mark.parametrize("seed", range(3))
def test_knapsack_milp_vs_brute_force(seed):
    w, v, cap = knapsack(seed)
    n = w.size
    lp = LinearProgram(n, objective=v, upper=1, integrality=np.ones(n, bool), sense="max")
    lp.add_rows(sp.csr_array(w[None, :]), upper=cap)
    res = solve(lp, mip_rel_gap=0)
    best = max(
        v @ np.array(bits)
        for bits in itertools.product((0, 1), repeat=n)
        if w @ np.array(bits) <= cap
    )
    assert res.objective == pytest.approx(best)
    assert np.allclose(res.x, np.round(res.x)) and w @ res.x <= cap + 1e-9
    assert np.isnan(res.row_duals).all() and res.mip_gap == pytest.approx(0, abs=1e-9)
    # a feasible start (the empty knapsack) is accepted and the optimum is unchanged
    assert solve(lp, mip_start=np.zeros(n), mip_rel_gap=0).objective == pytest.approx(best)


def test_infeasible_milp():
    lp = LinearProgram(2, upper=1, integrality=[True, True])
    lp.add_rows(np.array([[2.0, 2.0]]), lower=1, upper=1)  # 2(x1 + x2) = 1 has no integer point
    with pytest.raises(InfeasibleModel):
        solve(lp)


@pytest.mark.parametrize(
    "bad",
    [
        lambda: LinearProgram(-1),
        lambda: LinearProgram(2, objective=[1.0, np.nan]),
        lambda: LinearProgram(2, objective=[1.0]),
        lambda: LinearProgram(2, lower=[0, 2], upper=[1, 1]),
        lambda: LinearProgram(2, sense="maximize"),
        lambda: LinearProgram(2, integrality=[0.5, 1]),
        lambda: LinearProgram(2).add_rows(np.ones((1, 3))),
        lambda: LinearProgram(2).add_rows(np.array([[1.0, np.nan]])),
        lambda: LinearProgram(2).add_rows(sp.csr_array(np.array([[1.0, np.inf]]))),
        lambda: LinearProgram(2).add_rows(np.ones(2)),
        lambda: LinearProgram(2).add_rows(np.ones((2, 2)), lower=[0, 1, 2]),
        lambda: LinearProgram(2).add_rows(np.ones((1, 2)), lower=2, upper=1),
        lambda: LinearProgram(2).add_rows(np.ones((1, 2)), upper=np.nan),
        lambda: LinearProgram(2).add_rows(([0], [2], [1.0]), n_rows=1),
        lambda: LinearProgram(2).add_rows(([0], [1], [1.0])),
        lambda: LinearProgram(2).add_rows(([0, 1], [1], [1.0]), n_rows=2),
        lambda: LinearProgram(2).add_rows(np.ones((1, 2)), columns=[0, 0]),
        lambda: LinearProgram(2).add_rows(np.ones((1, 1)), columns=[5]),
        lambda: solve(LinearProgram(2), method="barrier"),
        lambda: solve(LinearProgram(2), time_limit=-1),
        lambda: solve(LinearProgram(2), mip_start=[0.0]),
        lambda: solve("not a model"),
    ],
)
def test_bad_input_raises_invalid_input(bad):
    with pytest.raises(InvalidInput):
        bad()


def test_numba_merge_equals_reference_and_scipy():
    """The compiled two-pass merge, the NumPy merge and scipy's vstack agree exactly."""
    from privopt.lp.model import merge_row_blocks, merge_row_blocks_reference

    rng = np.random.default_rng(42)
    lp = LinearProgram(0)
    col_blocks = [lp.add_variables(int(rng.integers(50, 400))) for _ in range(6)]
    dense_parts = []
    for i in range(12):
        m = int(rng.integers(0, 60))
        if i % 3 == 0:  # over all columns, given as a triple in random order
            k = int(rng.integers(0, 2000))
            rows, cols = rng.integers(0, max(m, 1), k), rng.integers(0, lp.n_vars, k)
            vals = rng.normal(size=k)
            if m == 0:
                rows, cols, vals = rows[:0], cols[:0], vals[:0]
            lp.add_rows((rows, cols, vals), n_rows=m)
            part = np.zeros((m, lp.n_vars))
            np.add.at(part, (rows, cols), vals)
        elif i % 3 == 1:  # on one column block
            cs = col_blocks[int(rng.integers(0, 6))]
            B = sp.random(m, cs.stop - cs.start, density=0.05, random_state=rng, format="csr")
            lp.add_rows(B, columns=cs)
            part = np.zeros((m, lp.n_vars))
            part[:, cs] = B.toarray()
        else:  # on a scattered, unsorted set of columns
            cmap = rng.choice(lp.n_vars, 300, replace=False)
            B = sp.random(m, 300, density=0.05, random_state=rng, format="coo")
            lp.add_rows(B, columns=cmap)
            part = np.zeros((m, lp.n_vars))
            part[:, cmap] = B.toarray()
        dense_parts.append(part)
    ref = merge_row_blocks_reference(lp._blocks, lp.n_rows, lp.n_vars)
    for threads in (1, 2, 3):
        fast = merge_row_blocks(lp._blocks, lp.n_rows, lp.n_vars, use_numba=True, threads=threads)
        for f in ("start", "index", "value"):
            assert np.array_equal(getattr(fast, f), getattr(ref, f))
    assert np.allclose(fast.to_scipy().toarray(), np.vstack(dense_parts), atol=1e-12)
    assert fast.to_scipy().has_sorted_indices
    # The row-wise concatenation handed to HiGHS holds the same matrix.
    csr = lp.to_csr()
    assert csr.start[-1] == csr.nnz == ref.nnz
    assert np.allclose(csr.to_scipy().toarray(), np.vstack(dense_parts), atol=1e-12)


def test_pass_to_rowwise_and_colwise_give_the_same_model():
    """pass_to without a CSC cache (row-wise) and with one (column-wise) load the same LP."""
    import highspy

    rng = np.random.default_rng(7)
    lp = LinearProgram(40, objective=rng.normal(size=40), lower=-1.0, upper=1.0)
    cmap = rng.choice(40, 25, replace=False)
    lp.add_rows(
        sp.random(30, 25, density=0.2, random_state=rng, format="csr"),
        columns=cmap,
        lower=-1.0,
        upper=1.0,
    )
    lp.add_rows(sp.random(10, 40, density=0.3, random_state=rng, format="csr"), upper=2.0)
    loaded = []
    for cached in (False, True):
        lp._csc_cache = None
        if cached:
            lp.to_csc()
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        lp.pass_to(h)
        a = h.getLp().a_matrix_
        loaded.append(
            sp.csc_array(
                (np.asarray(a.value_), np.asarray(a.index_), np.asarray(a.start_)),
                shape=(lp.n_rows, lp.n_vars),
            )
        )
        h.run()
        loaded.append(h.getInfo().objective_function_value)
    assert abs(loaded[1] - loaded[3]) <= 1e-9 * max(1.0, abs(loaded[1]))
    assert np.allclose(loaded[0].toarray(), lp.matrix().toarray())
    assert np.allclose(loaded[2].toarray(), lp.matrix().toarray())


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_property_assembly_matches_dense(data):
    """Any sequence of column and row blocks assembles to the dense stack of its blocks."""
    lp = LinearProgram(data.draw(st.integers(1, 6)))
    for _ in range(data.draw(st.integers(0, 3))):
        lp.add_variables(data.draw(st.integers(0, 5)))
    parts = []
    for _ in range(data.draw(st.integers(1, 5))):
        m = data.draw(st.integers(0, 4))
        w = data.draw(st.integers(0, lp.n_vars))
        vals = data.draw(
            st.lists(st.sampled_from([0.0, 1.0, -2.5, 3.0]), min_size=m * w, max_size=m * w)
        )
        block = np.array(vals, dtype=float).reshape(m, w)
        fmt = data.draw(st.sampled_from(["dense", "csr", "csc", "coo", "triple"]))
        if fmt == "dense":
            lp.add_rows(block)
        elif fmt == "triple":
            r, c = np.nonzero(block)
            lp.add_rows((r, c, block[r, c]), n_rows=m)
        else:
            lp.add_rows(sp.csr_array(block).asformat(fmt))
        parts.append(np.hstack([block, np.zeros((m, lp.n_vars - w))]))
    want = np.vstack(parts)
    assert lp.n_rows == want.shape[0]
    assert np.array_equal(lp.matrix().toarray(), want)


def test_highs_lp_export_solves_to_same_optimum():
    import highspy

    A, rl, ru, lo, up, c = random_lp(21)
    lp = LinearProgram(A.shape[1], objective=c, lower=lo, upper=up, offset=1.5)
    lp.add_rows(A, lower=rl, upper=ru)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp.to_highs_lp())
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(solve(lp).objective, rel=1e-9)


class _FakeModel:
    """Stands in for a privopt.lp.highs.Model after a run with a forced model status."""

    def __init__(self, status):
        self.status = status
        self.status_text = str(status)

    def solution(self, solve_time=0.0):
        return types.SimpleNamespace(primal_feasible=False)


@pytest.mark.parametrize(
    "name,error",
    [
        ("kSolveError", "NumericalTrouble"),
        ("kPostsolveError", "NumericalTrouble"),
        ("kUnknown", "NumericalTrouble"),
        ("kModelError", "InvalidInput"),
        ("kIterationLimit", "SolverLimit"),
        ("kInterrupt", "SolverLimit"),
    ],
)
def test_status_mapping(name, error):
    import highspy
    from privopt import errors
    from privopt.lp.solve import classify

    lp = LinearProgram(1)
    with pytest.raises(getattr(errors, error)) as err:
        classify(
            _FakeModel(getattr(highspy.HighsModelStatus, name)),
            lp,
            0.0,
            method="simplex",
            presolve=True,
        )
    if error == "SolverLimit":
        assert err.value.best is None  # no feasible point reported


def test_pickle_round_trip_drops_cached_matrix():
    import pickle

    A, rl, ru, lo, up, c = random_lp(9)
    lp = LinearProgram(A.shape[1], objective=c, lower=lo, upper=up)
    lp.add_rows(A, lower=rl, upper=ru)
    before = solve(lp).objective  # builds and caches the CSC arrays
    clone = pickle.loads(pickle.dumps(lp))
    assert clone._csc_cache is None
    assert solve(clone).objective == before


def test_changing_thread_count_between_solves():
    """HiGHS's scheduler is process-wide; solves asking for different thread counts in a row
    (and with none) all succeed (HiGHS 1.16 fails a run whose count differs, unless reset)."""
    lp = LinearProgram(2, objective=[1.0, 1.0], upper=10.0, integrality=[True, True])
    lp.add_rows(np.array([[2.0, 2.0]]), lower=3.0)
    for threads in (None, 1, 2, None, 1, 1):
        res = solve(lp, threads=threads)
        assert res.status == "Optimal" and res.objective == pytest.approx(2.0)
