"""Draw the layer diagrams of ``docs/architecture.md`` from the import-linter contracts.

    python tools/architecture_layers.py          # rewrite the diagrams in the page
    python tools/architecture_layers.py --check  # exit 1 when the page differs from the contracts

The contracts (``[tool.importlinter]`` in ``pyproject.toml``, checked by ``lint-imports`` in CI)
are the one statement of privopt's layers; the page shows each ``layers`` contract between the
markers ``<!-- layers:ID -->`` and ``<!-- /layers:ID -->``, top layer first, with one line saying
what each module is. ``tests/test_layers.py`` runs the check, so a contract that changes without
its picture (or a module without a line here) fails the tests.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"

# What each module of a layers contract is, in a few words, by dotted name (the diagrams show them).
ROLES: dict[str, str] = {
    # privopt
    "privopt.__main__": "`python -m privopt`",
    "privopt._launch": "the console script: signal handlers, then the command line",
    "privopt.cli": "the dispatcher: finds each subcommand by its dotted path",
    "privopt.demo": "`privopt demo`: one section per mechanism on embedded data",
    "privopt.registry": "the mechanisms' registry: entry point, release type, subcommand, example",
    "privopt.mdp": "metric DP at scale",
    "privopt.geo": "LR-Geo",
    "privopt.kanon": "optimisation-based k-anonymity",
    "privopt.census": "DP hierarchical counts",
    "privopt.cluster": "DPM clustering",
    "privopt.perturbation": "the shared matrix core: problem, exact LP, matrix, repair, lift",
    "privopt.dp": "noise samplers, randomness, the privacy accountant",
    "privopt.lp": "the solver interface (HiGHS behind privopt.lp.highs)",
    "privopt.graphs": "road graphs and the Dijkstra kernels",
    "privopt.release": "the Release contract: guarantee, save and load",
    "privopt.geometry": "distances between points",
    "privopt.certify": "the rule behind every 'optimal' claim",
    "privopt.report": "plain-text reports and figures",
    "privopt._cli_support": "what every subcommand shares: outputs, summaries, exit codes",
    "privopt._show_versions": "`privopt.show_versions()`",
    "privopt._arguments": "the command line's numeric option types",
    "privopt._progress": "progress bars on stderr",
    "privopt._inputs": "reading users' files",
    "privopt._atomic": "atomic, locked outputs",
    "privopt._json": "JSON-ready values",
    "privopt._callers": "warnings that point at the user's line",
    "privopt._validation": "argument checks shared by every public function",
    "privopt._optional": "the optional dependencies, one accessor each",
    "privopt.errors": "the exceptions and warnings",
    # privopt.geo
    "privopt.geo.http_processes": "the web service on several server processes",
    "privopt.geo.http_server": "the web service (Starlette)",
    "privopt.geo.http_client": "the client of the web service",
    "privopt.geo.http_limits": "limits on hostile HTTP clients",
    "privopt.geo.http_counters": "the service's counters, shared by its processes",
    "privopt.geo.baselines": "planar Laplace and the exponential mechanism",
    "privopt.geo.tradeoff": "loss and adversary error across ε (sweep_epsilon)",
    "privopt.geo.adversary": "the Bayes-optimal adversary per user, metric or road loss",
    "privopt.geo.result": "LRGeoResult, the release",
    "privopt.geo.client": "the user's side: LR set, cost estimates, upload",
    "privopt.geo.server": "the server's side: CR answers, batch solves",
    "privopt.geo.messages": "the protocol's JSON messages",
    "privopt.geo.solve": "solve_clr",
    "privopt.geo.crtable": "the cost reference table and its public snap grid",
    "privopt.geo.rowgen": "CLR-Geo by row generation",
    "privopt.geo.clr": "the CLR-Geo model: users' blocks, exact LP",
    "privopt.geo.geography": "the map: locations, roads, travel costs",
    "privopt.geo.metrics": "Geo-Ind checks and costs",
    "privopt.geo.params": "GeoParams",
    "privopt.geo.cli": "`privopt geo`, `privopt geo serve`, `privopt geo client`",
    "privopt.geo.report": "LR-Geo's report section and figures",
    "privopt.geo.demo": "LR-Geo's demo section",
    "privopt.geo.release": "releasing a user's matrix: repair and the certified bound",
}


def layers_contracts(pyproject: Path = ROOT / "pyproject.toml") -> list[dict]:
    """The ``layers`` contracts of ``[tool.importlinter]``, in the file's order."""
    config = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]
    return [c for c in config["contracts"] if c["type"] == "layers"]


def diagram(contract: dict) -> str:
    """One contract as a fenced block: a line per layer, top first, its modules and roles."""
    container = contract["containers"][0]
    lines = [f"{container}: {contract['name']}", ""]
    for depth, layer in enumerate(contract["layers"]):
        for i, module in enumerate(m.strip() for m in layer.split("|")):
            name = f"{container}.{module}"
            if name not in ROLES:
                raise KeyError(f"tools/architecture_layers.py: ROLES has no line for {name!r}")
            mark = f"{len(contract['layers']) - depth:>2} " if i == 0 else "   "
            lines.append(f"{mark}{name:<26} {ROLES[name]}")
    return "```\n" + "\n".join(lines) + "\n```"


def render(page: str, contracts: list[dict]) -> str:
    """``page`` with every contract's diagram between its markers (a missing marker is an error)."""
    for contract in contracts:
        begin, end = f"<!-- layers:{contract['id']} -->", f"<!-- /layers:{contract['id']} -->"
        pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
        if not pattern.search(page):
            raise KeyError(f"{PAGE.name} has no {begin} ... {end} block")
        block = f"{begin}\n{diagram(contract)}\n{end}"
        page = pattern.sub(lambda _, block=block: block, page)
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check, exit 1 if out of date")
    args = parser.parse_args(argv)
    old = PAGE.read_text()
    new = render(old, layers_contracts())
    if new == old:
        return 0
    if args.check:
        print(f"{PAGE}: the layer diagrams differ from [tool.importlinter]", file=sys.stderr)
        return 1
    PAGE.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
