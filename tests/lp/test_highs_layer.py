"""The HiGHS layer (privopt.lp.highs) and the projection QP (privopt.lp.qp)."""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import highspy
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.errors import InfeasibleModel, InvalidInput, UnboundedModel
from privopt.lp import highs, safe_dual_bound, solve_projection_qp
from scipy.optimize import linprog, minimize

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "privopt"


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _imports_highspy(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "highspy" for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "highspy":
            return True
    return False


def test_exactly_one_module_imports_highspy() -> None:
    users = sorted(str(p.relative_to(PACKAGE)) for p in _modules() if _imports_highspy(p))
    assert users == ["lp/highs.py"]


#: HiGHS's API is camelCase (addRows, getSolution, setOptionValue, passModel, ...); its few
#: lowercase names (run, solve, ...) are caught by the run-time test below.
_HIGHS_API = {n for n in dir(highspy.Highs) if not n.startswith("_") and n != n.lower()}


def _highs_calls(path: Path) -> list[str]:
    """``line: name`` of every HiGHS method, and of the Model's own handle ``_h``, that
    ``path`` reaches through an attribute."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{node.lineno}: {node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and (node.attr in _HIGHS_API or node.attr == "_h")
    ]


def test_only_the_backend_touches_a_highs_instance() -> None:
    found = {
        str(p.relative_to(PACKAGE)): calls
        for p in _modules()
        if p.name != "highs.py" and (calls := _highs_calls(p))
    }
    assert found == {}, f"HiGHS methods called outside privopt/lp/highs.py: {found}"


def _run_every_engine() -> None:
    """Small runs of every path that reaches HiGHS: LP, MILP, infeasible and unbounded LPs,
    row generation with simplex groups, Benders with feasibility cuts, the projection QP, and
    metric DP's exact LP (with its polish) and decomposition."""
    from privopt import lp as plp
    from privopt.lp.examples import capacity_expansion_lp
    from privopt.mdp import MDPProblem, rome_grid
    from privopt.mdp import solve as mdp_solve

    prog = plp.LinearProgram(3, objective=[1.0, 2.0, 0.5], upper=4.0)
    prog.add_rows(np.ones((1, 3)), lower=1.0)
    plp.solve(prog)
    plp.solve(
        prog.with_objective([-1.0, 1.0, 1.0]),
        fallbacks=True,
        highs_options={"primal_feasibility_tolerance": 1e-9},
    )
    mip = plp.LinearProgram(3, objective=[-1.0, -2.0, -0.5], upper=1.0, integrality=[1, 1, 1])
    mip.add_rows(np.ones((1, 3)), upper=2.0)
    plp.solve(mip, mip_start=[1.0, 0.0, 0.0], progress=True)
    bad = prog.copy()
    bad.add_rows(np.ones((1, 3)), upper=0.5)
    with pytest.raises(InfeasibleModel):
        plp.solve(bad)
    with pytest.raises(UnboundedModel):
        plp.solve(plp.LinearProgram(1, objective=[-1.0], upper=np.inf))
    group = plp.RowGenProblem()
    group.add_block([3.0, 1.0, 2.0, 0.5], simplex_groups=[0, 0, 1, 1], initial_columns=[0, 2])
    plp.solve_rowgen(group, progress=False)
    plp.solve_benders(capacity_expansion_lp(0, n_regions=2), rel_gap=1e-8, progress=False)
    solve_projection_qp(np.array([2.0, 0.0]), np.ones((1, 2)), [1.0], [1.0])
    mdp = MDPProblem(rome_grid(4, 5), epsilon=2.0, eta=2.0)
    mdp_solve(mdp, polish=True)
    mdp_solve(mdp, row_generation=False)
    mdp_solve(mdp, "benders", m=3, progress=False)


def test_highs_methods_are_called_from_the_backend_only(monkeypatch) -> None:
    """At run time: every method of every HiGHS instance privopt creates is called from
    privopt.lp.highs (or from highspy itself), whatever engine runs."""
    outside: set[tuple[str, str]] = set()

    def guarded(name: str, method):
        def call(self, *args, **kwargs):
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller != "privopt.lp.highs" and not caller.startswith("highspy"):
                outside.add((caller, name))
            return method(self, *args, **kwargs)

        return call

    for name in dir(highspy.Highs):
        method = getattr(highspy.Highs, name)
        if name.startswith("__") or not callable(method) or isinstance(method, type):
            continue
        if isinstance(inspect.getattr_static(highspy.Highs, name), staticmethod):
            continue
        monkeypatch.setattr(highs.Highs, name, guarded(name, method), raising=False)
    _run_every_engine()
    assert outside == set()
    highs.new_instance().getNumRow()  # the guard sees a call from here
    assert {name for _, name in outside} == {"getNumRow"}


def _lp_imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every import of privopt.lp or below in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("privopt.lp"):
            out.append((node.module or "", [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("privopt.lp")]
        elif isinstance(node, ast.ImportFrom) and node.module == "privopt":
            out += [("privopt", ["lp"]) for a in node.names if a.name == "lp"]
    return out


@pytest.mark.parametrize("mechanism", ["mdp", "geo", "kanon", "census", "cluster"])
def test_mechanisms_import_only_the_public_lp_interface(mechanism: str) -> None:
    import privopt.lp

    public = set(privopt.lp.__all__)
    wrong = {
        f"{p.relative_to(PACKAGE)}: from {module} import {', '.join(names)}"
        for p in sorted((PACKAGE / mechanism).rglob("*.py"))
        for module, names in _lp_imports(p)
        if module != "privopt.lp" or not set(names) <= public
    }
    assert wrong == set()


def test_each_public_lp_name_has_one_home() -> None:
    """privopt.lp lists the interface; every name in it is listed by exactly one of its
    modules (its home), nothing private is listed, and no module lists another's names."""
    import importlib

    import privopt.lp
    import privopt.lp.benders

    listed: dict[str, list[str]] = {}
    for p in sorted((PACKAGE / "lp").rglob("*.py")):
        rel = p.relative_to(PACKAGE).with_suffix("")
        name = "privopt." + ".".join(rel.parts).removesuffix(".__init__")
        if name in ("privopt.lp", "privopt.lp.benders"):
            continue
        for item in getattr(importlib.import_module(name), "__all__", ()):
            listed.setdefault(item, []).append(name)
    for package in (privopt.lp, privopt.lp.benders):
        assert not [n for n in package.__all__ if n.startswith("_")]
        for n in package.__all__:
            assert getattr(package, n) is not None
    assert {n: homes for n, homes in listed.items() if len(homes) > 1} == {}
    assert [n for n in privopt.lp.__all__ if n not in listed] == []
    assert set(privopt.lp.benders.__all__) <= set(privopt.lp.__all__)


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
