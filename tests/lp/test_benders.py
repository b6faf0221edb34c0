"""Benders decomposition against monolithic HiGHS, cut validity, executors, limits, bad input."""

from __future__ import annotations

import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from privopt.errors import InfeasibleModel, InvalidInput, SolverLimit, UnboundedModel
from privopt.lp import LinearProgram, highs, solve
from privopt.lp.benders import BendersProblem, Cut, solve_benders
from privopt.lp.benders.master import _Master
from privopt.lp.benders.subproblems import _SubSolver
from privopt.lp.examples import capacity_expansion_lp, random_block_lp

REL = 1e-7


def rel_err(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


def check_incumbent_feasible(problem: BendersProblem, res) -> None:
    """The incumbent (x, y_1..y_K) satisfies the monolithic LP and has the stated objective."""
    mono = problem.to_monolithic()
    z = np.concatenate([res.x_master, *res.sub_solutions])
    A = mono.matrix()
    act = A @ z
    tol = 1e-6
    assert np.all(act >= mono.row_lower - tol) and np.all(act <= mono.row_upper + tol)
    assert np.all(z >= mono.col_lower - tol) and np.all(z <= mono.col_upper + tol)
    assert mono.objective @ z + mono.offset == pytest.approx(res.objective, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(
    "seed,kw",
    [
        (0, dict(n_subproblems=3, n_master=10, sub_vars=30, sub_rows=20)),
        (1, dict(n_subproblems=5)),
        (2, dict(n_subproblems=4, theta_lower=False)),
        (3, dict(n_subproblems=8, n_master=40, sub_vars=120, sub_rows=60, density=0.05)),
        (4, dict(n_subproblems=10, n_master=60, sub_vars=300, sub_rows=150, density=0.02)),
    ],
)
def test_benders_equals_monolithic(seed, kw):
    problem = random_block_lp(seed, **kw)
    mono = solve(problem.to_monolithic())
    res = solve_benders(problem, rel_gap=1e-9, progress=False)
    assert res.status == "optimal"
    assert rel_err(res.objective, mono.objective) <= REL
    assert res.lower_bound <= res.upper_bound + 1e-7 * max(1, abs(res.upper_bound))
    # The certified (safe dual) bound is below the optimum and, on these well-scaled LPs,
    # within the gap of it.
    scale = max(1.0, abs(mono.objective))
    assert res.certified_lower_bound <= mono.objective + 1e-9 * scale
    assert res.certified_lower_bound >= mono.objective - 1e-6 * scale
    assert res.certified_lower_bound <= res.lower_bound
    check_incumbent_feasible(problem, res)
    lbs = np.array([h.lb for h in res.history if np.isfinite(h.lb)])
    assert np.all(np.diff(lbs) >= -1e-7 * max(1.0, abs(mono.objective)))  # LB never decreases
    ubs = res.history_arrays()["ub"]
    assert np.all(np.diff(ubs[np.isfinite(ubs)]) <= 0)  # best UB never increases


def test_few_thousand_variables():
    problem = random_block_lp(
        7, n_subproblems=12, n_master=80, sub_vars=250, sub_rows=120, density=0.02
    )
    mono_lp = problem.to_monolithic()
    assert mono_lp.n_vars > 3000
    res = solve_benders(problem, rel_gap=1e-9, progress=False)
    assert rel_err(res.objective, solve(mono_lp).objective) <= REL


def test_single_cut_equals_multi_cut():
    problem = random_block_lp(5, n_subproblems=4)
    multi = solve_benders(problem, rel_gap=1e-9, progress=False)
    single = solve_benders(problem, rel_gap=1e-9, progress=False, multi_cut=False)
    assert rel_err(single.objective, multi.objective) <= REL
    # one aggregated optimality cut per iteration at most
    assert max(h.n_optimality_cuts for h in single.history) <= 1


@pytest.mark.parametrize("seed", range(3))
def test_feasibility_cuts_when_first_master_point_is_infeasible(seed):
    problem = capacity_expansion_lp(seed)
    res = solve_benders(problem, rel_gap=1e-9, progress=False)
    first = res.history[0]
    # x = 0 buys no capacity: every region is infeasible at the first master point
    assert first.n_feasibility_cuts == problem.n_subproblems and np.isinf(first.iterate_ub)
    assert rel_err(res.objective, solve(problem.to_monolithic()).objective) <= REL
    check_incumbent_feasible(problem, res)


@pytest.mark.parametrize(
    "maker",
    [
        lambda: random_block_lp(11, n_subproblems=2),
        lambda: capacity_expansion_lp(4, n_regions=2),
    ],
)
def test_cuts_are_valid_and_tight(maker):
    """phi_k(x) >= alpha - beta^T x at random master points, with equality at the cut point;
    a feasibility cut is violated at its own point and satisfied wherever phi_k is finite."""
    problem = maker()
    rng = np.random.default_rng(0)
    lo, up = problem.master.col_lower, problem.master.col_upper
    for k in range(problem.n_subproblems):
        solver = _SubSolver(problem._subs[k])
        cols = problem._subs[k].t_cols
        points = [lo + rng.random(lo.size) * (up - lo) for _ in range(8)] + [lo, up]
        outcomes = [(p, solver.solve(p[cols], False)) for p in points]
        for p, out in outcomes:
            if out.kind == "optimal":
                assert out.rhs - out.beta @ p[cols] == pytest.approx(out.phi, rel=1e-9, abs=1e-8)
            else:
                assert out.kind == "infeasible"
                assert out.beta @ p[cols] < out.rhs  # the cut removes its own point
            for q, other in outcomes:
                if other.kind == "optimal" and out.kind == "optimal":
                    assert other.phi >= out.rhs - out.beta @ q[cols] - 1e-7
                if other.kind == "optimal" and out.kind == "infeasible":
                    assert out.beta @ q[cols] >= out.rhs - 1e-7


def test_initial_cuts_bound_theta():
    problem = random_block_lp(2, n_subproblems=3, theta_lower=False)
    # theta_k >= -1e4 is valid (|phi_k| is far smaller) and bounds every theta from the start
    cuts = [Cut(np.eye(problem.n_master + 3)[problem.n_master + k], lower=-1e4) for k in range(3)]
    res = solve_benders(problem, rel_gap=1e-9, progress=False, initial_cuts=cuts)
    assert np.isfinite(res.history[0].lb)
    assert rel_err(res.objective, solve(problem.to_monolithic()).objective) <= REL


def test_threads_and_processes_give_same_optimum():
    problem = random_block_lp(8, n_subproblems=6, n_master=15, sub_vars=40, sub_rows=25)
    ref = solve_benders(problem, rel_gap=1e-9, progress=False)
    with ThreadPoolExecutor(2) as ex:
        threads = solve_benders(problem, rel_gap=1e-9, progress=False, executor=ex)
    assert threads.executor_mode == "threads"
    assert rel_err(threads.objective, ref.objective) <= 1e-9
    with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as ex:
        procs = solve_benders(problem, rel_gap=1e-9, progress=False, executor=ex)
    assert procs.executor_mode == "files"
    assert rel_err(procs.objective, ref.objective) <= 1e-9
    # data shipped once: each subproblem is built at most once per worker process
    cold = sum(h.n_cold_starts for h in procs.history)
    assert procs.iterations > 2 and cold <= 2 * problem.n_subproblems


@pytest.mark.dask
def test_dask_local_cluster_same_optimum():
    import distributed  # in the test extra: a missing install must fail, not skip

    problem = capacity_expansion_lp(1, n_regions=4)
    ref = solve_benders(problem, rel_gap=1e-9, progress=False)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        res = solve_benders(problem, rel_gap=1e-9, progress=False, executor=client.get_executor())
    assert res.executor_mode == "dask"
    # Batches are pinned to their workers: every subproblem has one warm solver that sees
    # the serial run's points, so the iterates are bit for bit the serial ones.
    assert res.objective == ref.objective and res.lower_bound == ref.lower_bound
    assert [(h.lb, h.ub, h.iterate_ub) for h in res.history] == [
        (h.lb, h.ub, h.iterate_ub) for h in ref.history
    ]
    assert sum(h.n_cold_starts for h in res.history) == problem.n_subproblems


def test_one_task_per_worker_per_round():
    # Remote executors get one batch task per worker and round, not one task per subproblem,
    # and every subproblem lands in exactly one batch.
    from concurrent.futures import Executor, Future

    from privopt.lp.benders.subproblems import _balanced_batches

    class CountingExecutor(Executor):
        """Runs tasks inline; reports 3 workers like a process pool."""

        _max_workers = 3

        def __init__(self):
            self.submitted = 0

        def submit(self, fn, *args, **kwargs):
            self.submitted += 1
            f = Future()
            f.set_result(fn(*args, **kwargs))
            return f

    problem = random_block_lp(4, n_subproblems=7)
    ref = solve_benders(problem, rel_gap=1e-9, progress=False)
    ex = CountingExecutor()
    res = solve_benders(problem, rel_gap=1e-9, progress=False, executor=ex)
    assert res.executor_mode == "files" and ex.submitted == 3 * res.iterations
    assert res.objective == ref.objective and res.iterations == ref.iterations
    batches = _balanced_batches(problem._subs, 3)
    assert sorted(k for b in batches for k in b) == list(range(7)) and len(batches) == 3
    assert batches == _balanced_batches(problem._subs, 3)


def test_infeasible_problem_raises():
    problem = capacity_expansion_lp(0, n_regions=2)
    problem.master = LinearProgram(
        problem.n_master, objective=problem.master.objective, upper=0.1
    )  # far too little capacity for any demand
    with pytest.raises(InfeasibleModel):
        solve_benders(problem, progress=False)


def test_unbounded_master_raises():
    master = LinearProgram(1, objective=[1.0], lower=0, upper=1)
    sub = LinearProgram(1, objective=[1.0], lower=-np.inf)  # min y s.t. y <= -x: -inf
    sub.add_rows(np.array([[1.0]]), upper=[0.0])
    problem = BendersProblem(master)
    problem.add_subproblem(sub, np.array([[1.0]]))
    with pytest.raises(UnboundedModel):
        solve_benders(problem, progress=False)


def test_iteration_limit_returns_bounds_or_raises():
    problem = random_block_lp(1, n_subproblems=5)
    res = solve_benders(problem, rel_gap=0, max_iterations=3, progress=False)
    assert res.status == "iteration_limit" and res.iterations == 3
    assert res.lower_bound <= res.upper_bound
    with pytest.raises(SolverLimit) as err:
        solve_benders(problem, rel_gap=0, max_iterations=3, progress=False, raise_on_limit=True)
    assert err.value.best.iterations == 3
    with pytest.raises(SolverLimit):  # x = 0 is infeasible for every region: no incumbent yet
        solve_benders(capacity_expansion_lp(0), max_iterations=1, progress=False)


def test_progress_bar_and_plot(tmp_path, capsys):
    problem = random_block_lp(0, n_subproblems=2, n_master=5, sub_vars=10, sub_rows=8)
    solve_benders(problem, progress=None)  # a short run: the delayed bar never shows
    assert "Benders" not in capsys.readouterr().err
    res = solve_benders(problem, progress=True)
    assert "Benders" in capsys.readouterr().err
    ax = res.plot_bounds()
    ax.figure.savefig(tmp_path / "bounds.png")
    assert (tmp_path / "bounds.png").stat().st_size > 0
    arrays = res.history_arrays()
    assert set(arrays) >= {"lb", "ub", "n_cuts", "master_time", "sub_time"}
    assert arrays["lb"].size == res.iterations


@pytest.mark.parametrize(
    "bad",
    [
        lambda p: p.add_subproblem(LinearProgram(2), np.ones((3, 2))),  # rows mismatch
        lambda p: p.add_subproblem(LinearProgram(1), np.ones((0, 99))),  # too wide
        lambda p: p.add_subproblem(LinearProgram(1, sense="max"), sp.csr_array((0, 2))),
        lambda p: p.add_subproblem(LinearProgram(1, integrality=[True]), sp.csr_array((0, 2))),
        lambda p: p.add_subproblem(LinearProgram(1), sp.csr_array((0, 2)), theta_lower=np.nan),
        solve_benders,  # no subproblems
        lambda p: BendersProblem(LinearProgram(1, sense="max")),
        lambda p: solve_benders(random_block_lp(0, n_subproblems=1), rel_gap=-1),
        lambda p: solve_benders(random_block_lp(0, n_subproblems=1), executor="threads"),
        lambda p: solve_benders(random_block_lp(0, n_subproblems=1), max_iterations=0),
        lambda p: solve_benders(random_block_lp(0, n_subproblems=1), initial_cuts=[(np.ones(99),)]),
    ],
)
def test_bad_input(bad):
    with pytest.raises(InvalidInput):
        bad(BendersProblem(LinearProgram(2)))


class _CountingExecutor(ThreadPoolExecutor):
    submitted = 0

    def submit(self, *args, **kwargs):  # type: ignore[override]
        type(self).submitted += 1
        return super().submit(*args, **kwargs)


@pytest.mark.parametrize(
    "bad",
    [
        {"initial_cuts": [(np.ones(99), 0.0, np.inf)]},  # wider than the master
        {"lazy_rows": (np.ones((2, 99)), -np.inf, 0.0)},  # wider than x
        {"lazy_rows": (np.ones((2, 3)), 1.0, 0.0)},  # lower > upper
    ],
)
def test_bad_rows_are_refused_before_any_subproblem_is_sent(bad) -> None:
    """The core round goes out before the master is built (on a cluster the two overlap),
    but the caller's rows are checked first: a refusal sends out no work."""
    problem = random_block_lp(0, n_subproblems=2)
    core = np.zeros(problem.n_master)
    _CountingExecutor.submitted = 0
    with _CountingExecutor(2) as ex, pytest.raises(InvalidInput):
        solve_benders(problem, executor=ex, core_point=core, progress=False, **bad)
    assert _CountingExecutor.submitted == 0


def test_integer_master_equals_monolithic_milp():
    """Capacities bought in whole units (integer master): Benders matches the monolithic MILP."""
    base = capacity_expansion_lp(
        6, n_regions=3, n_facilities=6, facilities_per_region=3, customers_per_region=6
    )
    m = base.master
    problem = BendersProblem(
        LinearProgram(
            m.n_vars,
            objective=m.objective,
            upper=np.floor(m.col_upper),
            integrality=np.ones(m.n_vars, bool),
        )
    )
    for k in range(base.n_subproblems):
        sub, T = base.subproblem(k)
        problem.add_subproblem(sub, T, theta_lower=0.0)
    mono = solve(problem.to_monolithic(), mip_rel_gap=0)
    res = solve_benders(problem, rel_gap=1e-9, progress=False)
    assert rel_err(res.objective, mono.objective) <= REL
    assert np.allclose(res.x_master, np.round(res.x_master))


def test_time_limit_stops_the_run():
    problem = random_block_lp(3, n_subproblems=6)
    # The limit is over within the first iteration: either the master solve is cut short (no
    # feasible point yet: SolverLimit) or the run stops right after iteration 1.
    try:
        res = solve_benders(
            problem, rel_gap=0, time_limit=1e-9, progress=False, max_iterations=1000
        )
    except SolverLimit as err:
        assert err.status == "time_limit"
        res = err.best
    assert res.status == "time_limit" and res.iterations <= 1


@pytest.mark.parametrize("limit", [0.15, 0.6])
def test_time_limit_cuts_subproblem_rounds_short(limit):
    # One subproblem round here takes about 1 s (40 subproblems, cold): the run must end
    # within the limit plus one HiGHS call's reaction, not after the round (or a
    # certification re-solve), and claim nothing it did not prove.
    problem = random_block_lp(0, n_subproblems=40, sub_vars=400, sub_rows=200)
    t0 = time.perf_counter()
    try:
        res = solve_benders(
            problem, rel_gap=0, time_limit=limit, progress=False, max_iterations=1000
        )
    except SolverLimit as err:  # no complete round yet: no feasible point
        assert err.status == "time_limit"
        res = err.best
    elapsed = time.perf_counter() - t0
    assert elapsed <= limit + 0.35, elapsed
    assert res.status == "time_limit"
    assert res.lower_bound <= res.upper_bound
    assert res.solve_time <= elapsed


def _demand_problem() -> BendersProblem:
    """Buy capacity x ∈ [0, 10] at 1; unmet demand u at 3 with x + u ≥ 4: optimum x = 4."""
    master = LinearProgram(1, objective=[1.0], upper=10.0)
    sub = LinearProgram(1, objective=[3.0])
    sub.add_rows(np.array([[1.0]]), lower=[4.0])
    prob = BendersProblem(master)
    prob.add_subproblem(sub, np.array([[1.0]]), theta_lower=0.0)
    return prob


def test_lazy_rows_equal_rows_in_the_master():
    # A binding lazy row x <= 2 and a slack one x <= 100: only the first enters the master.
    P = sp.csr_array(np.array([[1.0], [1.0]]))
    res = solve_benders(_demand_problem(), lazy_rows=(P, -np.inf, [2.0, 100.0]), progress=False)
    assert res.objective == pytest.approx(2.0 + 3.0 * 2.0, rel=1e-9)
    assert res.x_master[0] == pytest.approx(2.0)
    assert res.n_lazy_rows == 1
    # Same as the row in the master from the start, on a random block LP.
    prob = random_block_lp(5, n_subproblems=4)
    rng = np.random.default_rng(0)
    cap = sp.csr_array(rng.uniform(0, 1, (3, prob.n_master)))
    ref = solve(prob.to_monolithic().copy())
    mono = prob.to_monolithic()
    mono.add_rows(cap, upper=0.5 * np.abs(cap @ ref.x[: prob.n_master]))  # binding rows
    want = solve(mono).objective
    upper = 0.5 * np.abs(cap @ ref.x[: prob.n_master])
    got = solve_benders(prob, lazy_rows=(cap, -np.inf, upper), rel_gap=1e-9, progress=False)
    assert rel_err(got.objective, want) <= REL
    # The same rows as a LinearProgram over the master variables: the same optimum.
    rows = LinearProgram(prob.n_master)
    rows.add_rows(cap, upper=upper)
    got_lp = solve_benders(prob, lazy_rows=rows, rel_gap=1e-9, progress=False)
    assert rel_err(got_lp.objective, want) <= REL
    assert got_lp.n_lazy_rows == got.n_lazy_rows


def test_abs_gap_gap_floor_and_highs_options():
    prob = random_block_lp(1, n_subproblems=5)
    exact = solve_benders(prob, rel_gap=1e-9, progress=False)
    loose = solve_benders(prob, rel_gap=0.0, abs_gap=1e9, progress=False)
    assert loose.status == "optimal" and loose.upper_bound - loose.lower_bound <= 1e9
    assert loose.iterations <= exact.iterations
    rel = solve_benders(
        prob,
        rel_gap=1e-6,
        gap_floor=1e-300,
        progress=False,
        highs_options={"primal_feasibility_tolerance": 1e-9},
    )
    assert rel.gap == pytest.approx((rel.upper_bound - rel.lower_bound) / abs(rel.upper_bound))
    assert rel_err(rel.objective, exact.objective) <= 1e-5
    for bad in (
        dict(abs_gap=-1.0),
        dict(gap_floor=0.0),
        dict(lazy_rows=(np.ones((1, 99)), 0, 1)),
        dict(lazy_rows=np.ones(3)),
        dict(lazy_rows=LinearProgram(99)),  # wider than the master
        dict(highs_options={"no_such_option": 1}),
    ):
        with pytest.raises(InvalidInput):
            solve_benders(prob, progress=False, **bad)


@pytest.mark.parametrize("seed", [3, 4])
def test_master_prices_with_devex_and_either_pricing_certifies_the_optimum(seed):
    """The master re-solves warm with Devex pricing by default; steepest edge, chosen through
    ``highs_options``, reaches the same certified optimum."""
    kw = dict(n_subproblems=8, n_master=40, sub_vars=120, sub_rows=60, density=0.05)
    problem = random_block_lp(seed, **kw)
    assert _Master(problem, True).model.option(highs.DUAL_PRICING) == 1
    mono = solve(problem.to_monolithic()).objective
    scale = max(1.0, abs(mono))
    for options in (None, {highs.DUAL_PRICING: 2}):
        res = solve_benders(problem, rel_gap=1e-9, progress=False, highs_options=options)
        assert res.status == "optimal"
        assert rel_err(res.objective, mono) <= REL
        assert mono - 1e-6 * scale <= res.certified_lower_bound <= mono + 1e-9 * scale


def test_elastic_feasibility_cut_is_valid_without_a_ray():
    # The phase-1 route used when HiGHS gives no verifiable ray: at x = 0 every region of the
    # capacity-expansion instance is infeasible; the elastic cut βᵀx ≥ γ cuts x = 0 off and
    # holds at the monolithic optimum and at full capacity (both feasible).
    problem = capacity_expansion_lp(2, n_regions=3)
    mono = solve(problem.to_monolithic())
    x_star = mono.x[: problem.n_master]
    x_cap = problem.master.col_upper
    for data in problem._subs:
        solver = _SubSolver(data)
        x0 = np.zeros(data.t_cols.size)
        shift = data.t_matrix @ x0
        value, _, sol = solver._elastic(solver.row_lower - shift, solver.row_upper - shift)
        assert value > 1e-6 and sol is not None
        gamma, beta = solver._elastic_cut(sol)
        assert beta @ x0 < gamma - 1e-9
        assert beta @ x_star[data.t_cols] >= gamma - 1e-8
        assert beta @ x_cap[data.t_cols] >= gamma - 1e-8


def test_clean_cut_keeps_cuts_valid():
    # Master cuts are made safe for HiGHS (no |coef| > 1e12, none ≤ 1e-9) by moving the
    # right-hand side over the column box: every box point satisfying the original cut
    # satisfies the cleaned one.
    from privopt.lp.benders.master import _Master

    master = LinearProgram(6, objective=np.ones(6), lower=0.0, upper=1.0)
    m = _Master(BendersProblem(master), True)
    rng = np.random.default_rng(3)
    cols = np.arange(6)
    for _trial in range(40):
        vals = rng.choice([-1, 1], 6) * 10.0 ** rng.uniform(-14, 16, 6)
        pts = rng.uniform(0, 1, (400, 6))
        pts[:100] = (pts[:100] < 0.5).astype(float)  # box vertices too
        rhs = float(np.quantile(pts @ vals, 0.3))
        for normalise in (False, True):
            c, v, r = m.clean_cut(cols, vals, rhs, normalise=normalise)
            a = np.abs(v)
            assert np.all(a <= 1e12) and np.all(a > 1e-9)
            scale = np.abs(vals).max() if normalise else 1.0
            ok = pts @ vals >= rhs
            lhs = pts[:, c] @ v
            assert np.all(
                lhs[ok] >= r - 1e-9 * max(1.0, abs(r)) - 1e-12 * np.abs(pts[ok] @ vals) / scale
            )


def test_rejected_master_rows_raise():
    # HiGHS refuses a whole addRows batch with a coefficient > 1e15; the engine must not
    # carry on without the cuts (it used to, and then returned the same master point forever).
    from privopt.errors import NumericalTrouble
    from privopt.lp.benders.master import _Master

    m = _Master(_demand_problem(), True)
    with pytest.raises(NumericalTrouble):
        m.add_cuts([(np.array([0]), np.array([1e16]), 1.0, np.inf)])


def test_cut_only_when_it_separates_beyond_tolerance():
    # x + u >= 4 with u in [0, 1]: feasible iff x >= 3. At x = 2 the subproblem is infeasible
    # and the feasibility cut (normalised) cuts x = 2 off by more than the tolerance; at
    # x = 3 - 1e-12 (infeasible by far less than the feasibility tolerance) it is solved as
    # feasible, with a valid optimality cut.
    sub = LinearProgram(1, objective=[3.0], upper=1.0)
    sub.add_rows(np.array([[1.0]]), lower=[4.0])
    master = LinearProgram(1, objective=[1.0], upper=10.0)
    prob = BendersProblem(master)
    prob.add_subproblem(sub, np.array([[1.0]]), theta_lower=0.0)
    data = replace(prob._subs[0], options=(("primal_feasibility_tolerance", 1e-9),))
    far = _SubSolver(data).solve(np.array([2.0]), True)
    assert far.kind == "infeasible"
    assert (far.rhs - far.beta @ [2.0]) / np.abs(far.beta).max() > 1e-9
    assert far.beta @ [3.0] >= far.rhs - 1e-12
    near = _SubSolver(data).solve(np.array([3.0 - 1e-12]), True)
    assert near.kind == "optimal"
    assert near.phi == pytest.approx(3.0, rel=1e-9)
    res = solve_benders(prob, rel_gap=1e-9, progress=False)
    assert res.objective == pytest.approx(4.0, rel=1e-9)  # x = 4, u = 0


def test_in_out_separation_equals_monolithic():
    # In-out separation around a feasible core point (full capacity) gives the same optimum.
    problem = capacity_expansion_lp(2, n_regions=3)
    mono = solve(problem.to_monolithic())
    core = problem.master.col_upper.copy()
    res = solve_benders(problem, rel_gap=1e-9, core_point=core, in_out=0.5, progress=False)
    assert res.status == "optimal"
    assert rel_err(res.objective, mono.objective) <= REL
    check_incumbent_feasible(problem, res)
    for bad in (dict(core_point=core[:-1]), dict(core_point=core, in_out=0.0)):
        with pytest.raises(InvalidInput):
            solve_benders(problem, progress=False, **bad)


def test_lost_task_retries_then_names_the_subproblem():
    # (Real worker deaths on a LocalCluster: tests/reliability/test_faults.py.)
    from concurrent.futures import Executor, Future

    class FailingExecutor(Executor):
        """Every task fails as if its worker had died."""

        def __init__(self):
            self.submitted = 0

        def submit(self, fn, *args, **kwargs):
            self.submitted += 1
            f = Future()
            f.set_exception(ConnectionError("worker lost"))
            return f

    from privopt.errors import SolverError

    problem = capacity_expansion_lp(0, n_regions=2)
    pool = FailingExecutor()
    with pytest.raises(
        SolverError, match=r"subproblem batch \[sub0, sub1\] failed after 2 retries"
    ):
        solve_benders(problem, executor=pool, retries=2, progress=False)
    assert pool.submitted >= 3  # the first task and two retries


def test_in_out_state_machine() -> None:
    # In-out separation (lp/benders/stabilisation.py): the separation point, the core moving
    # to feasible points, a round at x̄ itself when the cuts left it unseparated, and the
    # switch from classical Benders to in-out on a stall.
    from privopt.lp.benders.stabilisation import InOut

    core, x = np.zeros(2), np.array([2.0, 4.0])
    io = InOut(core, weight=0.5)
    sep = io.separation_point(x)
    assert sep.tolist() == [1.0, 2.0]
    assert io.after_round(sep, feasible=False, separated=True) is False
    assert io.core.tolist() == [0.0, 0.0] and io.lam == 0.5  # infeasible: core stays
    assert io.after_round(sep, feasible=True, separated=False) is True
    assert io.core.tolist() == [1.0, 2.0] and io.lam == 1.0  # next round at x̄ itself
    assert io.separation_point(x) is x
    assert io.after_round(x, feasible=True, separated=True) is False and io.lam == 0.5
    classical = InOut(core, weight=1.0, stall_weight=0.25)
    assert classical.separation_point(x) is x
    assert classical.after_round(x, feasible=True, separated=False) is True  # a stall
    assert classical.lam == 0.25 and classical.weight == 0.25
    assert InOut(None).after_round(x, feasible=True, separated=False) is False
    with pytest.raises(InvalidInput, match="in_out"):
        InOut(core, weight=0.0)
    with pytest.raises(InvalidInput, match="stall_in_out"):
        InOut(core, weight=1.0, stall_weight=1.0)


def test_highs_options_reach_every_model_before_its_matrix() -> None:
    """Options that act when HiGHS takes the matrix (``small_matrix_value``) reach the master,
    each subproblem and its elastic model: an entry of 1e-11 is kept with 1e-12 and dropped
    by HiGHS's default (1e-9)."""
    from dataclasses import replace

    from privopt.lp.benders.master import _Master
    from privopt.lp.benders.subproblems import _SubSolver

    tiny = 1e-11
    master = LinearProgram(2, upper=1.0)
    master.add_rows(sp.csr_array([[1.0, tiny]]), lower=0.0)
    sub = LinearProgram(2, objective=[1.0, 1.0])
    sub.add_rows(sp.csr_array([[1.0, tiny]]), lower=0.0)
    problem = BendersProblem(master)
    problem.add_subproblem(sub, np.array([[1.0, 0.0]]), theta_lower=0.0)
    keep_tiny = (("small_matrix_value", 1e-12),)
    for options, kept in (((), 1), (keep_tiny, 2)):
        assert _Master(problem, True, options).model.n_nonzeros == kept
        solver = _SubSolver(replace(problem._subs[0], options=options))
        assert solver.model.n_nonzeros == kept


def _value_at(problem: BendersProblem, x: np.ndarray) -> float:
    """The monolithic LP's optimum with the master variables fixed at ``x`` (an independent
    solve): the value a fully feasible point ``x`` can give as an incumbent."""
    mono = problem.to_monolithic().copy()
    mono.add_rows(sp.identity(x.size, format="csr"), lower=x, upper=x)
    return solve(mono).objective


@pytest.mark.parametrize("seed", range(3))
def test_core_round_starts_before_the_first_master_and_keeps_the_optimum(seed, monkeypatch):
    from concurrent.futures import Executor, Future

    events: list[str] = []

    class LoggingExecutor(Executor):
        """Runs tasks inline and logs when they are submitted."""

        _max_workers = 2

        def submit(self, fn, *args, **kwargs):
            events.append("round")
            f = Future()
            f.set_result(fn(*args, **kwargs))
            return f

    original = _Master.solve

    def logged_solve(self, *args, **kwargs):
        events.append("master")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(_Master, "solve", logged_solve)
    problem = capacity_expansion_lp(seed, n_regions=3 + seed)
    mono = solve(problem.to_monolithic())
    core = problem.master.col_upper.copy()
    kw = dict(rel_gap=1e-9, core_point=core, in_out=0.5, progress=False)
    on = solve_benders(problem, executor=LoggingExecutor(), **kw)
    # The core round's tasks (one per batch) go out before the first master solve.
    assert events[:3] == ["round", "round", "master"]
    off = solve_benders(problem, core_round=False, **kw)
    for res in (on, off):
        assert res.status == "optimal"
        assert rel_err(res.objective, mono.objective) <= REL
        check_incumbent_feasible(problem, res)
    # After the first iteration the incumbent is at least as good as the core point itself
    # (worth the monolithic LP with x fixed there), and every subproblem was solved twice.
    assert on.history[0].ub <= _value_at(problem, core) + 1e-9 * max(1.0, abs(on.history[0].ub))
    assert on.history[0].n_optimality_cuts >= problem.n_subproblems
    serial = solve_benders(problem, **kw)
    assert [(h.lb, h.ub) for h in serial.history] == [(h.lb, h.ub) for h in on.history]


def test_core_round_incumbent_survives_a_time_limit_in_the_first_round(monkeypatch):
    from privopt.lp.benders import driver

    def out_of_time(self, x, theta):
        raise driver._RoundTimeout("time limit reached during the subproblem round")

    monkeypatch.setattr(driver._Run, "separate", out_of_time)
    problem = capacity_expansion_lp(0, n_regions=3)
    core = problem.master.col_upper.copy()
    res = solve_benders(problem, core_point=core, progress=False)
    assert res.status == "time_limit" and res.iterations == 0
    assert np.array_equal(res.x_master, core)
    assert res.objective == pytest.approx(_value_at(problem, core), rel=1e-9)
    check_incumbent_feasible(problem, res)
    with pytest.raises(SolverLimit):  # without the core round there is no feasible point
        solve_benders(problem, core_point=core, core_round=False, progress=False)
