"""LR-Geo benchmarks (issue 14): Tables 1–2 and the targets, each method in its own process.

Every (setting, method) runs ``--reps`` seeded repetitions in a fresh subprocess (so that one
method's memory or caches do not affect another's) and prints mean ± 1.96·std with the paper's
values beside ours, plus the peak RSS of that process. Costs are compared as ratios (spec: our
absolute costs are far below Table 2, see docs/geo.md).

    python bench/geo_bench.py --rome ../shared/data/rome --reps 20 --table 1
    python bench/geo_bench.py --rome ../shared/data/rome --table targets
    python bench/geo_bench.py --table scaling          # generated grids up to K = 10,000

Methods: lrgeo (CLR-Geo, default solver), lrgeo-lp, lrgeo-f (γ = ∞), lp (full LP at γ = ∞),
constopt, expmech, laplace. The load average is printed with each table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

PAPER_TIME = {  # Table 1 (s), K = 100..400
    "lrgeo": [1.28, 1.42, 1.34, 1.20],
    "lrgeo-f": [1.63, 2.14, 2.42, 3.56],
    "lp": [27.31, 287.50, ">1800", ">1800"],
    "constopt": [3.69, 75.88, ">1800", ">1800"],
}
PAPER_COST = {  # Table 2 (km)
    "lrgeo": [0.36, 0.36, 0.35, 0.37],
    "lrgeo-f": [0.38, 0.36, 0.38, 0.40],
    "lp": [0.33, 0.33, None, None],
    "constopt": [0.35, 0.34, None, None],
    "laplace": [0.81, 0.78, 0.80, 0.79],
    "expmech": [0.67, 0.64, 0.68, 0.70],
    "bound": [0.29, 0.30, 0.31, 0.30],
}


def _geography(args: argparse.Namespace, k: int, seed: int):
    from privopt.geo import grid_geography, load_rome_grid

    if args.rome and k <= 1331:
        geo = load_rome_grid(args.rome)
    else:  # a generated grid with ~0.5 km cells, roads 1.2× the straight line
        side = int(np.ceil(np.sqrt(k)))
        geo = grid_geography(side, side, 0.5, metric="haversine", road_factor=1.2)
    return geo if k >= geo.n_locations else geo.sample(k, seed=seed)


def _one(args: argparse.Namespace) -> dict:
    """One repetition of one method (runs inside the child process)."""
    from privopt.geo import CostReferenceTable, GeoParams, run_lrgeo
    from privopt.geo import baselines as bl
    from privopt.geo.metrics import expected_cost

    seed = args.seed
    geo = _geography(args, args.k, seed)
    params = GeoParams(
        r_exp=args.r_exp,
        r_obf=max(args.r_exp, 4.5),
        gamma_graph=args.gamma_graph,
        lr_radius=args.lr_radius,
        cr_cell_km=args.cell,
    )
    t = time.perf_counter()
    table = CostReferenceTable(geo, 20, cell_km=params.cr_cell_km, seed=seed)
    t_cr = time.perf_counter() - t
    users = np.random.default_rng(seed).choice(geo.n_locations, args.m, replace=False)
    method = args.method
    out: dict = {"cr_table_s": t_cr}
    t0 = time.perf_counter()
    if method in ("lrgeo", "lrgeo-lp", "lrgeo-f"):
        p = bl.lr_geo_f_params(params) if method == "lrgeo-f" else params
        res = run_lrgeo(
            geo, p, users, table, method="lp" if method == "lrgeo-lp" else "auto", rng=seed
        )
        out.update(
            time_s=time.perf_counter() - t0,
            cost=res.cost(),
            status=res.solution.status,
            gap=res.solution.relative_gap,
            solve_s=res.timings["solve_s"],
            clients_s=res.timings["clients_s"],
            y_norm=res.solution.info["y_norm"],
            iterations=res.solution.info.get("iterations"),
        )
        if args.bound:
            out["bound"] = res.relaxed_bound()
            out["ratio"] = out["cost"] / out["bound"]
            v = res.violations()
            out.update(gv=v.gv_ratio, gve=v.max_gve)
        return out
    # Baselines are evaluated on the LR rows of the default LR-Geo users.
    ref = run_lrgeo(geo, params, users, table, rng=seed)
    t0 = time.perf_counter()
    if method == "laplace":
        mats = [
            bl.laplace(geo, params, table, lr, n_samples=100, rng=seed).matrix for lr in ref.lr_sets
        ]
    else:
        fn = {
            "lp": lambda: bl.full_lp(geo, params, table, gamma=float("inf")),
            "constopt": lambda: bl.const_opt(geo, params, table),
            "expmech": lambda: bl.exp_mech(geo, params, table),
        }[method]
        pm = fn()
        mats = [pm.matrix[lr] for lr in ref.lr_sets]
        out.update(status=pm.summary.get("status", pm.method), gap=pm.relative_gap)
    out.update(time_s=time.perf_counter() - t0, cost=expected_cost(mats, ref.true_costs))
    return out


def _child(argv: list[str]) -> dict:
    cmd = [sys.executable, __file__, "--child", *argv]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _stat(values: list[float]) -> str:
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if v.size == 0:
        return "—"
    return f"{v.mean():.4g} ± {1.96 * v.std():.2g}"


def _run_setting(args, method: str, k: int, extra: list[str]) -> dict:
    runs = []
    for rep in range(args.reps):
        argv = ["--method", method, "--k", str(k), "--seed", str(rep), *extra]
        if args.rome:
            argv += ["--rome", args.rome]
        runs.append(_child(argv))
        print(f"[bench] {method} K={k} rep {rep}: {runs[-1]}", file=sys.stderr)
    return {key: [r.get(key) for r in runs] for key in set().union(*runs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rome", help="directory with the Rome grid CSV files")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--table", default="1", choices=["1", "targets", "scaling", "users"])
    ap.add_argument("--methods", default="lrgeo,lrgeo-f,lp,constopt,expmech,laplace")
    ap.add_argument("--ks", default="100,200,300,400")
    ap.add_argument("--r-exp", type=float, default=4.0)
    ap.add_argument("--bound", action="store_true", help="also the relaxed bound, ratio, GV")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--method", default="lrgeo")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--m", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gamma-graph", type=float, default=50.0)
    ap.add_argument("--lr-radius", type=float, default=20.0)
    ap.add_argument("--cell", type=float, default=0.1)
    args = ap.parse_args(argv)
    if args.child:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _one(args)
        out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(out, default=float))
        return 0
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load average: {' '.join(load)}; reps {args.reps}; r_exp {args.r_exp} km\n")
    ks = [int(k) for k in args.ks.split(",")]
    extra = ["--r-exp", str(args.r_exp), "--m", str(args.m)] + (["--bound"] if args.bound else [])
    print(
        "| method | K | time (s) | paper time | cost (km) | paper cost | status "
        "| peak RSS MiB | extra |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for method in args.methods.split(","):
        for i, k in enumerate(ks):
            r = _run_setting(args, method, k, extra)
            pt = PAPER_TIME.get(method, ["≤0.005"] * 4)[i] if i < 4 else ""
            pc = PAPER_COST.get(method, [None] * 4)[i] if i < 4 else None
            more = {
                k2: _stat(r[k2])
                for k2 in ("bound", "ratio", "gv", "gve", "solve_s", "cr_table_s")
                if k2 in r
            }
            status = sorted({str(s) for s in r.get("status", [])})
            print(
                f"| {method} | {k} | {_stat(r.get('time_s', []))} | {pt} "
                f"| {_stat(r.get('cost', []))} "
                f"| {pc if pc is not None else '—'} | {','.join(status)} | "
                f"{_stat(r.get('peak_rss_mib', []))} | {json.dumps(more)} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
