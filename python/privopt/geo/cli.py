"""``privopt geo``: LR-Geo for M users on the Rome grid or a generated grid.

Writes one ``user<m>.npz`` per user (a :class:`~privopt.mdp.PerturbationMatrix` with its LR
rows), ``report.md`` and ``result.json`` into ``--out``; stdout carries the JSON summary only,
progress goes to stderr. Every parameter of :class:`~privopt.geo.GeoParams` is a flag.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["register"]


def _float(text: str) -> float:
    return math.inf if text.lower() in ("inf", "infinity") else float(text)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "geo",
        help="LR-Geo: locally relevant geo-obfuscation for many users (client/server)",
        description="Run LR-Geo (spec 001) for M users: LR sets, CR table, cost estimates, "
        "CLR-Geo (Benders or one LP), per-user matrices verified against Geo-Ind. Map: the "
        "Rome 40x40 grid (--rome DIR) or a generated grid (default).",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--rome", help="directory with the LR-Geo Rome grid CSV files")
    src.add_argument("--grid", default="20x20", help="generated ROWSxCOLS grid (default 20x20)")
    p.add_argument("--cell-km", type=float, default=0.5, help="generated grid cell size (km)")
    p.add_argument("-K", "--locations", type=int, help="sample K locations (default: all)")
    p.add_argument("-M", "--users", type=int, default=4, help="number of users M")
    p.add_argument("--epsilon", type=float, default=10.0, help="ε in 1/km")
    p.add_argument("--gamma", type=_float, default=0.5, help="Geo-Ind threshold γ (km, or inf)")
    p.add_argument("--gamma-graph", type=_float, help="LR-search graph threshold (default γ)")
    p.add_argument("--lr-radius", type=_float, default=20.0, help="Γ (km)")
    p.add_argument("--r-obf", type=float, default=4.5, help="obfuscation radius (km)")
    p.add_argument("--r-exp", type=float, default=4.0, help="exponential radius (km)")
    p.add_argument("--lr-max-size", type=int, default=20, help="L; 0 for the paper-literal N_m")
    p.add_argument("--eps-d-cap", type=float, default=25.0, help="drop pairs with ε·d above")
    p.add_argument("--cr-cell-km", type=float, default=0.1, help="CR-table cell size s (km)")
    p.add_argument("--targets", type=int, default=20, help="number of random targets")
    p.add_argument("--haversine-correction", action="store_true", help="paper-literal B.1")
    p.add_argument("--method", default="auto", choices=["auto", "benders", "lp"])
    p.add_argument("--gap", type=float, default=1e-6, help="requested relative gap")
    p.add_argument(
        "--baselines",
        default="expmech",
        help="comma list of: lp, lp-inf, constopt, expmech, laplace, none",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of every draw (reproducible, for testing)"
    )
    p.add_argument("--out", default="geo_out", help="output directory")
    p.set_defaults(func=_run)


def _params(args: argparse.Namespace) -> Any:
    from privopt.geo import GeoParams

    return GeoParams(
        epsilon=args.epsilon,
        gamma=args.gamma,
        gamma_graph=args.gamma_graph,
        lr_radius=args.lr_radius,
        r_obf=args.r_obf,
        r_exp=args.r_exp,
        lr_max_size=args.lr_max_size or None,
        eps_d_cap=args.eps_d_cap,
        cr_cell_km=args.cr_cell_km,
        haversine_correction=args.haversine_correction,
    )


def _geography(args: argparse.Namespace) -> Any:
    from privopt.errors import InvalidInput
    from privopt.geo import grid_geography, load_rome_grid

    if args.rome:
        geo = load_rome_grid(args.rome)
    else:
        try:
            rows, cols = (int(x) for x in args.grid.lower().split("x"))
        except ValueError:
            raise InvalidInput(f"--grid must look like 20x20, got {args.grid!r}") from None
        geo = grid_geography(rows, cols, args.cell_km, metric="haversine", road_factor=1.2)
    if args.locations:
        geo = geo.sample(args.locations, seed=args.seed)
    return geo


def _save_atomic(pm: Any, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(suffix=".npz", dir=path.parent)
    os.close(fd)
    try:
        pm.save(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def _stdout_to_stderr() -> Any:
    """Send file descriptor 1 to stderr meanwhile: HiGHS prints its banner from C++ on
    stdout, which must carry the results only."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _run(args: argparse.Namespace) -> int:
    from privopt._atomic import atomic_directory, check_output
    from privopt.cli import emit_summary

    out = check_output(args.out, inputs=[args.rome], force=args.force)
    with _stdout_to_stderr(), atomic_directory(out) as staging:
        summary = _compute(args, staging)
    emit_summary(summary)
    return 0


def _compute(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from privopt.errors import InvalidInput
    from privopt.geo import CostReferenceTable, run_lrgeo
    from privopt.geo.report import baseline_rows, write_report

    params = _params(args)
    geo = _geography(args)
    if not 1 <= args.users <= geo.n_locations:
        raise InvalidInput(f"--users must lie in [1, {geo.n_locations}], got {args.users}")
    print(f"[geo] {geo!r}: building the CR table (s = {params.cr_cell_km} km)", file=sys.stderr)
    table = CostReferenceTable(geo, args.targets, cell_km=params.cr_cell_km, seed=args.seed)
    users = np.random.default_rng(args.seed).choice(geo.n_locations, args.users, replace=False)
    print(f"[geo] solving CLR-Geo for {args.users} users ({args.method})", file=sys.stderr)
    res = run_lrgeo(geo, params, users, table, method=args.method, rel_gap=args.gap, rng=args.seed)
    for m, pm in enumerate(res.matrices):
        _save_atomic(pm, out / f"user{m}.npz")
    wanted = [b for b in args.baselines.split(",") if b and b != "none"]
    print(f"[geo] baselines: {', '.join(wanted) or 'none'}", file=sys.stderr)
    base = baseline_rows(res, table, wanted, seed=args.seed)
    summary = {"params": params.to_json(), **res.summary(), "baselines": base}
    summary["relaxed_lower_bound_km"] = res.relaxed_bound()
    summary["approximation_ratio"] = res.cost() / summary["relaxed_lower_bound_km"]
    write_report(res, table, summary, out)
    tmp = out / ".result.json.tmp"
    tmp.write_text(json.dumps(summary, default=float), encoding="utf-8")
    os.replace(tmp, out / "result.json")
    return summary
