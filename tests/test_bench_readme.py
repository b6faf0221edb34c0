"""The bench folder's layout: bench/README.md lists every benchmark script and suite module (a
script added without saying what it measures, or a listed one that is gone, fails here), and the
bench modules import one another without a circle, ``harness.py`` at the bottom and the scaling
report's entry point at the top."""

from __future__ import annotations

import ast
import re
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_every_bench_file_is_listed_and_every_listed_file_exists():
    readme = (BENCH / "README.md").read_text()
    files = {p.name for p in BENCH.glob("*.py")}
    listed = set(re.findall(r"`([a-z0-9_]+\.py)`", readme))
    assert files - listed == set(), f"bench/README.md does not list {sorted(files - listed)}"
    # Scripts folded into the suite or removed are named on the lines that say so.
    former = set().union(
        *(
            re.findall(r"`([a-z0-9_]+\.py)`", line)
            for line in readme.splitlines()
            if "former" in line
        )
    )
    gone = listed - files - former
    assert gone == set(), f"bench/README.md lists files that do not exist: {sorted(gone)}"


def bench_imports() -> dict[str, set[str]]:
    """Each bench module -> the bench modules it imports (anywhere in it)."""
    modules = {p.stem: p for p in BENCH.glob("*.py")}
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
        graph[name] = (found & modules.keys()) - {name}
    return graph


def circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (its modules in order, the first repeated), or None."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_circle_finds_a_circle_and_only_one():
    assert circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_bench_modules_import_no_circle():
    graph = bench_imports()
    assert circle(graph) is None, f"bench modules import in a circle: {' -> '.join(circle(graph))}"
    assert graph["harness"] == set(), "harness.py is the bottom layer: it imports no bench module"
    importers = sorted(name for name, deps in graph.items() if "scaling" in deps)
    assert importers == [], f"bench/scaling.py is the entry point, imported by none: {importers}"
