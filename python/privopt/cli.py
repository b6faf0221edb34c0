"""The ``privopt`` command line.

Subcommands are registered in :data:`SUBCOMMANDS`: each entry is a ``"module:function"`` path of
a function ``register(subparsers)`` that adds one subparser and sets ``func`` on it, so that a
mechanism's CLI lives beside the mechanism and this file only lists it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

import privopt
from privopt.errors import PrivoptError

__all__ = ["main", "build_parser", "SUBCOMMANDS"]

#: "module:function" paths of subcommand registrars, in --help order.
SUBCOMMANDS: list[str] = [
    "privopt.cli:_register_demo",
    "privopt.mdp.cli:register",
    "privopt.geo.cli:register",
    "privopt.kanon.cli:register",
    "privopt.census.cli:register",
    "privopt.cluster.cli:register",
]


def _register_demo(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run every mechanism on embedded default data and write a report",
        description="Run every available mechanism on embedded default data (generated, "
        "never downloaded) and write report.md plus PNG plots into --out.",
    )
    p.add_argument("--out", default="demo", help="output directory (default: ./demo)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.set_defaults(func=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    from privopt.demo import run_demo

    run_demo(args.out, seed=args.seed)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="privopt",
        description="Optimal privacy mechanisms by mathematical optimization.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument(
        "--verbose",
        action="store_true",
        dest="version_verbose",
        help="with --version: also the C++ core build, the dependencies and the platform "
        "(what a bug report needs; same as privopt.show_versions())",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for path in SUBCOMMANDS:
        module, func = path.split(":")
        getattr(importlib.import_module(module), func)(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``privopt`` console script; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        print(f"privopt {privopt.__version__}")
        if args.version_verbose:
            privopt.show_versions()
        parser.exit()
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except PrivoptError as exc:
        # Clear one-line message for expected failures (bad input, infeasible model, budget).
        print(f"privopt {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
