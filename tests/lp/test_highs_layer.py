"""The HiGHS layer (privopt.lp.highs) and the projection QP (privopt.lp.qp)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.errors import InfeasibleModel, InvalidInput
from privopt.lp import highs, safe_dual_bound, solve_projection_qp
from scipy.optimize import linprog, minimize

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "privopt"


def _random_lp(rng: np.random.Generator, m: int, n: int):
    a = sp.random_array((m, n), density=0.5, random_state=rng, format="csr")
    x0 = rng.uniform(0, 1, n)
    return rng.uniform(0.1, 1.0, n), a, a @ x0 - 1.0, a @ x0 + 1.0


@settings(max_examples=20, deadline=None, derandomize=True)
@given(st.integers(1, 8), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_model_handle_grows_warm_and_cold_like_linprog(m: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    c, a, lo, up = _random_lp(rng, m + 2, n)
    model = highs.Model.configured(method="simplex")
    model.load(c, a[:m], lo[:m], up[:m], 0.0, 1.0)
    first = model.solve()
    basis = model.basis()
    model.add_rows(lo[m:], up[m:], a[m:])  # incremental rows, warm re-solve
    warm = model.solve()
    ref = linprog(
        c, A_ub=sp.vstack([a, -a]), b_ub=np.concatenate([up, -lo]), bounds=(0, 1), method="highs"
    )
    assert warm.objective == pytest.approx(ref.fun, rel=1e-9, abs=1e-9)
    assert first.objective <= warm.objective + 1e-9
    model.cold()
    assert model.solve().objective == pytest.approx(ref.fun, rel=1e-9, abs=1e-9)
    # the basis of the smaller model extends to the larger one (new rows basic)
    assert model.set_basis(basis) and model.solve().objective == pytest.approx(ref.fun, abs=1e-9)
    # a new column with negative cost in no row goes to its upper bound 2
    model.add_cols([-1.0], 0.0, 2.0, sp.csc_array((model.n_rows, 1)))
    assert model.solve().objective == pytest.approx(ref.fun - 2.0, abs=1e-9)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(st.integers(2, 7), st.integers(0, 2**32 - 1))
def test_changed_row_bounds_resolve_warm_to_the_cold_optimum(n: int, seed: int) -> None:
    # What Benders does to a subproblem: only some row bounds change, the basis stays.
    rng = np.random.default_rng(seed)
    c, a, lo, up = _random_lp(rng, n + 1, n)
    model = highs.Model.configured(method="simplex", presolve=False)
    model.load(c, a, lo, up, 0.0, 1.0)
    first = model.solve()
    rows = np.arange(0, n + 1, 2)
    lo2, up2 = lo.copy(), up.copy()
    lo2[rows] -= 0.5
    up2[rows] += 0.25
    model.set_row_bounds(rows, lo2[rows], up2[rows])
    warm = model.solve()
    cold = highs.Model.configured(method="simplex", presolve=False)
    cold.load(c, a, lo2, up2, 0.0, 1.0)
    assert warm.objective == pytest.approx(cold.solve().objective, rel=1e-9, abs=1e-9)
    assert warm.objective <= first.objective + 1e-9  # wider rows: no worse
    # a solution is a snapshot: the later solve did not change the first one's values
    assert first.x.shape == (n,) and first.row_duals.shape == (n + 1,)
    assert first.iterations >= 0 and first.status == "Optimal"


def test_basis_moves_to_a_model_with_its_columns_elsewhere() -> None:
    # min x0 + 2 x1 + 3 x2, x0 + x1 + x2 = 1: x0 basic. The same LP with the columns reversed
    # starts from that basis mapped by position and needs no iteration.
    c, a = np.array([1.0, 2.0, 3.0]), sp.csr_array(np.ones((1, 3)))
    first = highs.Model.configured(method="simplex", presolve=False)
    first.load(c, a, [1.0], [1.0])
    assert first.solve().objective == pytest.approx(1.0)
    rev = highs.Model.configured(method="simplex", presolve=False)
    rev.load(c[::-1], a, [1.0], [1.0])
    assert rev.set_basis(first.basis(), columns=np.array([2, 1, 0]))
    sol = rev.solve()
    assert sol.objective == pytest.approx(1.0) and sol.iterations == 0
    assert not rev.set_basis(first.basis(), columns=np.array([0, 1]))  # does not fit


def test_rays_of_infeasible_and_unbounded_models() -> None:
    infeasible = highs.Model.configured(method="simplex", presolve=False)
    infeasible.load([1.0], sp.csr_array([[1.0]]), [2.0], [3.0], 0.0, 1.0)  # x >= 2, x <= 1
    assert infeasible.run() == highs.ModelStatus.kInfeasible
    ray = infeasible.dual_ray()
    assert ray is not None and ray.shape == (1,) and ray[0] != 0.0
    unbounded = highs.Model.configured(method="simplex", presolve=False)
    unbounded.load([-1.0], sp.csr_array([[1.0]]), [0.0], [np.inf], 0.0, np.inf)
    assert unbounded.run() == highs.ModelStatus.kUnbounded
    primal = unbounded.primal_ray()
    assert primal is not None and primal[0] > 0


def test_threads_in_highs_options_resize_the_scheduler() -> None:
    # A "threads" option unlike the scheduler's size made every run end "Not Set".
    model = highs.Model.configured(method="simplex", options={"threads": 1})
    model.load([1.0, 2.0], sp.csr_array([[1.0, 1.0]]), [1.0], [1.0])
    assert model.solve().objective == pytest.approx(1.0)


def test_solve_checked_maps_infeasible_and_options() -> None:
    h = highs.new_highs(method="simplex", presolve=False)
    highs.pass_arrays(h, np.ones(1), sp.csr_array([[1.0]]), [2.0], [3.0], 0.0, 1.0)
    with pytest.raises(InfeasibleModel):
        highs.solve_checked(h, what="tiny LP")
    with pytest.raises(InvalidInput, match="HiGHS rejected"):
        highs.set_options(h, {"no_such_option": 1})
    with pytest.raises(InvalidInput, match="method"):
        highs.new_highs(method="barrier")


def test_safe_dual_bound_is_valid_for_any_multipliers() -> None:
    rng = np.random.default_rng(4)
    c, a, lo, up = _random_lp(rng, 6, 5)
    ref = linprog(
        c, A_ub=sp.vstack([a, -a]), b_ub=np.concatenate([up, -lo]), bounds=(0, 1), method="highs"
    )
    for _ in range(50):
        pi = rng.normal(size=6)
        bound = safe_dual_bound(c, a, lo, up, np.zeros(5), np.ones(5), pi)
        assert bound <= ref.fun + 1e-12


@settings(max_examples=15, deadline=None, derandomize=True)
@given(st.integers(2, 7), st.integers(0, 2**32 - 1))
def test_projection_qp_matches_scipy(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    target = rng.normal(size=n) * 3
    a = np.vstack([np.ones(n), rng.uniform(0, 1, n)])
    lo, up = np.array([1.0, -np.inf]), np.array([1.0, 0.8])
    x = solve_projection_qp(target, a, lo, up)
    cons = [
        {"type": "eq", "fun": lambda v: a[0] @ v - 1.0},
        {"type": "ineq", "fun": lambda v: 0.8 - a[1] @ v},
    ]
    ref = minimize(
        lambda v: np.sum((v - target) ** 2),
        np.full(n, 1.0 / n),
        bounds=[(0, None)] * n,
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 500},
    )
    assert ref.success
    assert np.sum((x - target) ** 2) <= ref.fun + 1e-6
    assert a[0] @ x == pytest.approx(1.0, abs=1e-6) and a[1] @ x <= 0.8 + 1e-6


def test_infeasible_projection_qp_raises_infeasible_model() -> None:
    # x0 + x1 = -1 with x >= 0 has no point.
    with pytest.raises(InfeasibleModel):
        solve_projection_qp(np.zeros(2), np.array([[1.0, 1.0]]), [-1.0], [-1.0])
    with pytest.raises(InvalidInput):
        solve_projection_qp(np.zeros(3), np.array([[1.0, 1.0]]), [0.0], [1.0])


def _privopt_imports(path: Path) -> set[str]:
    """Modules of privopt that ``path`` imports anywhere (lazy imports included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("privopt."):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("privopt.")}
    return out


@pytest.mark.parametrize("package", ["lp", "mdp"])
def test_no_import_cycle_between_modules(package: str) -> None:
    # mdp/benders <-> mdp/solvers imported each other; module-to-module edges (package
    # __init__ files aside) must form no cycle.
    mods = {
        f"privopt.{package}.{p.stem}": p
        for p in (PACKAGE / package).glob("*.py")
        if p.stem != "__init__"
    }
    graph = {m: _privopt_imports(p) & mods.keys() for m, p in mods.items()}
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in graph[m]:
            assert state.get(n) != 1, f"import cycle: {' -> '.join([*path, m, n])}"
            if n not in state:
                visit(n, [*path, m])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [])
