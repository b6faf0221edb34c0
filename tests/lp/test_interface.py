"""privopt.lp is the solver interface: one HiGHS backend, public names only, engines that speak LP.

Read from the package's source (every module) and checked at run time (every HiGHS call of
small runs of every engine), so that a new module or a new engine is held to the same rules.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from pathlib import Path

import highspy
import numpy as np
import privopt.lp
import privopt.lp.benders
import pytest
from privopt.errors import InfeasibleModel, UnboundedModel
from privopt.lp import highs, solve_projection_qp

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


#: Engine modules: they describe LP (blocks, rows, cuts), not one mechanism.
ENGINES = ["lp/rowgen.py", "lp/highs.py", "lp/solve.py", "lp/bounds.py", "lp/model.py"] + [
    str(p.relative_to(PACKAGE)) for p in sorted((PACKAGE / "lp" / "benders").glob("*.py"))
]
#: Words of metric DP that an engine has no use for (an example may name a client in prose:
#: "a perturbation matrix's unit-measure rows").
MECHANISM_WORDS = re.compile(r"ε|η|\bmDP\b|metric[- ]DP|\brecords\b")


@pytest.mark.parametrize("module", ENGINES)
def test_engines_speak_lp_not_metric_dp(module: str) -> None:
    lines = (PACKAGE / module).read_text(encoding="utf-8").splitlines()
    found = [
        f"{i}: {line.strip()}" for i, line in enumerate(lines, 1) if MECHANISM_WORDS.search(line)
    ]
    assert found == []
