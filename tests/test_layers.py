"""The layering holds and its picture is true.

``lint-imports`` (CI) checks the contracts of ``[tool.importlinter]`` themselves; these tests check
what import-linter does not: that ``docs/architecture.md`` draws the same layers, and that
function-local imports stay the exception (optional or heavy dependencies only).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "privopt"
MAX_FUNCTION_LOCAL_IMPORTS = 20


def _tool():  # tools/ is not a package: load the page writer by path
    spec = importlib.util.spec_from_file_location(
        "architecture_layers", ROOT / "tools" / "architecture_layers.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_architecture_page_draws_the_contracts() -> None:
    tool = _tool()
    contracts = tool.layers_contracts()
    assert {c["id"] for c in contracts} == {"layers", "geo"}
    page = tool.PAGE.read_text()
    assert tool.render(page, contracts) == page, (
        "docs/architecture.md is out of date: run python tools/architecture_layers.py"
    )


def test_every_module_of_the_package_has_a_layer() -> None:
    """``exhaustive`` contracts already refuse an unplaced module; this names the page's gap too."""
    tool = _tool()
    placed = {
        f"{c['containers'][0]}.{m.strip()}"
        for c in tool.layers_contracts()
        for layer in c["layers"]
        for m in layer.split("|")
    }
    for container, folder in (("privopt", PACKAGE), ("privopt.geo", PACKAGE / "geo")):
        names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
        names |= {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}
        missing = sorted(f"{container}.{n}" for n in names if f"{container}.{n}" not in placed)
        assert missing == [], f"modules without a layer in [tool.importlinter]: {missing}"


def function_local_imports() -> list[str]:
    """``path:line: statement`` of every import inside a function body in the package."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        where = path.relative_to(PACKAGE.parent)
                        found.add(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return sorted(found)


def test_function_local_imports_are_few_and_optional() -> None:
    found = function_local_imports()
    assert len(found) <= MAX_FUNCTION_LOCAL_IMPORTS, "\n".join(
        [f"{len(found)} function-local imports (at most {MAX_FUNCTION_LOCAL_IMPORTS}):", *found]
    )


def test_no_function_imports_privopt_except_the_documented_ones() -> None:
    """privopt's own modules are imported at module top, where they show the dependency. The
    exceptions: the console script loads the command line after installing its signal handlers,
    DPM loads its Dask passes when it meets a Dask array, `privopt geo serve` loads the server."""
    allowed = {
        "privopt/_launch.py: from privopt.cli import main as run",
        "privopt/cluster/_dpm.py: import privopt.cluster._dask as passes",
        "privopt/geo/cli.py: from privopt.geo import http_processes, http_server",
    }
    own = {
        f"{line.split(':')[0]}: {line.split(': ', 1)[1]}"
        for line in function_local_imports()
        if "privopt" in line.split(": ", 1)[1]
    }
    assert own <= allowed, sorted(own - allowed)
