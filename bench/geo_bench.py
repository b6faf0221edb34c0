"""LR-Geo benchmarks (issue 14): Tables 1–2, Figs. 9–13 and the targets.

Every (table row) runs its ``--reps`` seeded repetitions in one fresh subprocess (one method's
memory or caches never affect another's; the peak RSS is that process's) and prints
mean ± 1.96·std over the repetitions with the paper's values beside ours. Costs are compared as
ratios (our absolute costs are far below Table 2, see docs/performance.md, "LR-Geo"). Times
exclude the CR table (as the artifact's), and "time" is the whole in-process exchange: clients,
CR requests, solve.

    python bench/geo_bench.py --rome ../shared/data/rome --table 1 --reps 20 --bound
    python bench/geo_bench.py --rome ../shared/data/rome --table targets --reps 5
    python bench/geo_bench.py --rome ../shared/data/rome --table solvers --reps 5
    python bench/geo_bench.py --rome ../shared/data/rome --table users      # Figs 9b, 11, 12
    python bench/geo_bench.py --rome ../shared/data/rome --table scaling    # Fig 9a, to 10,000
    python bench/geo_bench.py --rome ../shared/data/rome --table radius     # Fig 10a, L = 20, none
    python bench/geo_bench.py --rome ../shared/data/rome --table cell       # Fig 10b
    python bench/geo_bench.py --rome ../shared/data/rome --table ambiguity  # Fig 13

The sweeps take ``--plot FILE.png`` (docs/geo/ holds the figures docs/performance.md shows).

Methods (table 1): lrgeo (CLR-Geo, default solver), lrgeo-SOLVER (benders, rowgen, lp), lrgeo-f
(γ = ∞, also lrgeo-f-SOLVER), lp (full LP at γ = ∞), constopt, expmech, laplace. K > 1,331 uses
a generated grid of 0.5 km cells (roads 1.2× the straight line). The load average is printed
with each table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from harness import peak_rss_mib, print_json, run_json

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
PAPER_RATIO = {100: 1.24, 200: 1.20, 300: 1.13, 400: 1.23}  # = Table 2 LR-Geo / bound


# ------------------------------------------------------------------------ child process
def _geography(rome: str | None, k: int, seed: int, grid: bool = False) -> Any:
    from privopt.geo import grid_geography, load_rome_grid

    if rome and k <= 1331 and not grid:
        geo = load_rome_grid(rome)
    else:  # a generated grid with 0.5 km cells, roads 1.2× the straight line
        side = int(np.ceil(np.sqrt(k)))
        geo = grid_geography(side, side, 0.5, metric="haversine", road_factor=1.2)
    return geo if k >= geo.n_locations else geo.sample(k, seed=seed)


def _params(a: argparse.Namespace) -> Any:
    from privopt.geo import GeoParams

    return GeoParams(
        epsilon=a.epsilon,
        r_exp=a.r_exp,
        r_obf=max(a.r_exp, 4.5),
        gamma_graph=a.gamma_graph,
        lr_radius=a.lr_radius,
        cr_cell_km=a.cell,
        lr_max_size=a.lr_max_size or None,
    )


def _rep(a: argparse.Namespace, seed: int) -> dict:
    """One repetition of one method (inside the child process)."""
    from privopt.geo import CostReferenceTable, run_lrgeo

    geo = _geography(a.rome, a.k, seed, a.grid)
    params = _params(a)
    t = time.perf_counter()
    table = CostReferenceTable(
        geo, 20, cell_km=params.cr_cell_km, rng=seed, anchor_locations=a.anchor
    )
    out: dict[str, Any] = {"cr_table_s": time.perf_counter() - t, "K": geo.n_locations}
    users = np.random.default_rng(seed).choice(geo.n_locations, a.m, replace=False)
    if not a.method.startswith("lrgeo"):
        return {**out, **_baseline(a, geo, params, table, users, seed)}
    from privopt.geo import baselines as bl

    # lrgeo[-f][-SOLVER]: LR-Geo (-f: γ = ∞) with solve_clr's method SOLVER (default auto)
    parts = a.method.split("-")[1:]
    p = bl.lr_geo_f_params(params) if "f" in parts else params
    method = next((x for x in parts if x != "f"), "auto")
    res = run_lrgeo(geo, p, users, table, method=method, rng=seed)
    s = res.solution
    out.update(
        time_s=res.timings["total"],
        per_user_ms=1e3 * res.timings["total"] / a.m,
        solve_per_user_ms=1e3 * res.timings["solve"] / a.m,
        cost=res.cost(),
        status=s.status,
        gap=s.relative_gap,
        solver=s.method,
        y_norm=s.info["y_norm"],
        iterations=s.info.get("iterations", s.info.get("rounds")),
        lr_size=float(np.mean([len(lr) for lr in res.lr_sets])),
        no_neighbours=res.rows_without_neighbours(),
        lr_rows=int(sum(len(lr) for lr in res.lr_sets)),
    )
    if a.bound:
        out["bound"] = res.relaxed_bound()
        out["bound_exact_cost"] = res.relaxed_bound(exact=True)
        out["ratio"] = out["cost"] / out["bound"]
        out["ratio_exact_cost"] = out["cost"] / out["bound_exact_cost"]
    if a.gv:
        v = res.violations()
        out.update(
            gv_pct=100 * v.gv_ratio,
            gve=v.max_gve,
            gve_within=v.max_gve_within,
            gve_across=v.max_gve_across,
        )
    if a.ambiguity:
        exact, paper = res.ambiguity(table, seed=seed), res.ambiguity(table, interval="paper")
        out.update(
            matched=float(exact.mean()),
            matched_paper=float(paper.mean()),
            matched_share=float(exact.mean()) / table.n_points,
            cr_points=table.n_points,
        )
    return out


def _baseline(a: argparse.Namespace, geo: Any, params: Any, table: Any, users: Any, seed: int):
    """A baseline evaluated on the LR rows of the default LR-Geo users."""
    from privopt.geo import baselines as bl
    from privopt.geo import run_lrgeo
    from privopt.geo.metrics import expected_cost

    ref = run_lrgeo(geo, params, users, table, rng=seed)
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    if a.method == "laplace":
        mats = [
            bl.laplace(geo, params, table, lr, n_samples=100, rng=seed).matrix for lr in ref.lr_sets
        ]
    else:
        fn = {
            "lp": lambda: bl.full_lp(geo, params, table, gamma=float("inf")),
            "constopt": lambda: bl.const_opt(geo, params, table),
            "expmech": lambda: bl.exp_mech(geo, params, table),
        }[a.method]
        pm = fn()
        mats = [pm.matrix[lr] for lr in ref.lr_sets]
        gap = pm.relative_gap  # against the solver-independent (safe dual) lower bound
        status = pm.method if np.isnan(gap) else "optimal" if gap <= 1e-6 else f"gap {gap:.1e}"
        out.update(status=pm.info.get("status", status), gap=gap)
    out.update(time_s=time.perf_counter() - t0, cost=expected_cost(mats, ref.true_costs))
    return out


def _warm_up() -> None:
    """Imports, JIT compilation and the first HiGHS instance, outside the timed repetitions."""
    from privopt.geo import GeoParams, TravelCosts, baselines, grid_geography, run_lrgeo

    geo = grid_geography(4, 4, 0.5, metric="haversine")
    p = GeoParams(epsilon=2.0, gamma=0.6, lr_radius=1.0, r_obf=1.0, r_exp=0.5, lr_max_size=4)
    run_lrgeo(geo, p, [0, 5], TravelCosts(geo), rng=0)
    baselines.full_lp(geo, p, TravelCosts(geo))


def _child_main(a: argparse.Namespace) -> int:
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statuses say what is certified
        _warm_up()
        for seed in range(a.seed, a.seed + a.reps):
            runs.append(_rep(a, seed))
            print(f"[bench] {a.method} K={a.k} seed {seed}: {runs[-1]}", file=sys.stderr)
    print_json({"runs": runs, "peak_rss_mib": peak_rss_mib()})
    return 0


# ------------------------------------------------------------------------ parent process
def _child(a: argparse.Namespace, **setting: Any) -> dict:
    """Run one table row in a fresh process; {key: [value per rep]} plus peak_rss_mib."""
    opts = {"method": "lrgeo", "k": a.k, "m": a.m, "r_exp": a.r_exp, "epsilon": a.epsilon}
    opts |= {"gamma_graph": 50.0, "lr_radius": 20.0, "cell": 0.1, "lr_max_size": a.lr_max_size}
    opts |= {"anchor": a.anchor}
    opts |= setting
    argv = [sys.executable, __file__, "--child", "--reps", str(a.reps), "--seed", str(a.seed)]
    for key, value in opts.items():
        if isinstance(value, bool):
            argv += [f"--{key.replace('_', '-')}"] if value else []
        else:
            argv += [f"--{key.replace('_', '-')}", str(value)]
    if a.rome:
        argv += ["--rome", a.rome]
    out = run_json(argv, timeout=a.timeout)
    if "error" in out:
        return {"error": [out["error"]]}
    runs = out["runs"]
    table = {key: [r.get(key) for r in runs] for key in set().union(*runs)}
    table["peak_rss_mib"] = [out["peak_rss_mib"]]
    return table


def _stat(values: list[Any] | None, fmt: str = ".4g") -> str:
    v = np.asarray([x for x in values or [] if isinstance(x, (int, float))], dtype=float)
    if v.size == 0:
        return "—"
    return f"{v.mean():{fmt}} ± {1.96 * v.std():.2g}"


def _isolated(r: dict) -> str:
    """LR rows without a Geo-Ind neighbour in their own LR set: mean over reps / rows."""
    rows, alone = r.get("lr_rows"), r.get("no_neighbours")
    if not rows or not alone or "error" in r:
        return "—"
    return f"{np.mean(alone):.1f} / {np.mean(rows):.0f}"


def _statuses(r: dict) -> str:
    if "error" in r:
        return f"error: {r['error'][0]}"
    return ",".join(sorted({str(s) for s in r.get("status", [])}))


def _print_row(cells: list[Any]) -> None:
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def _header(*names: str) -> None:
    _print_row(list(names))
    _print_row(["---"] * len(names))


def table_1(a: argparse.Namespace) -> None:
    """Tables 1–2: time and cost per method and K (+ bound and ratio with --bound)."""
    ks = [int(k) for k in a.ks.split(",")]
    _header(
        "method", "K", "time (s)", "paper time", "cost (km)", "paper cost", "ratio (bound c̃)",
        "paper ratio", "ratio (bound c̄)", "rows w/o neighbours", "status", "peak RSS MiB",
    )  # fmt: skip
    paper_ks = [100, 200, 300, 400]
    for method in a.methods.split(","):
        for k in ks:
            r = _child(a, method=method, k=k, bound=a.bound and method.startswith("lrgeo"))
            i = paper_ks.index(k) if k in paper_ks else None
            pt = "" if i is None else PAPER_TIME.get(method, ["≤0.005"] * 4)[i]
            pc = None if i is None else PAPER_COST.get(method, [None] * 4)[i]
            pr = PAPER_RATIO.get(k, "") if method == "lrgeo" else ""
            _print_row(
                [method, k, _stat(r.get("time_s")), pt, _stat(r.get("cost")), pc or "—",
                 _stat(r.get("ratio")), pr, _stat(r.get("ratio_exact_cost")), _isolated(r),
                 _statuses(r), _stat(r.get("peak_rss_mib"), ".0f")]
            )  # fmt: skip


def table_targets(a: argparse.Namespace) -> None:
    """The issue's speed targets: per-user time at K = 1,331 (M = 4, 10), K = 10,000 vs
    1,331, the full LP and ConstOPT at K = 400, γ = ∞."""
    _header(
        "setting", "per user, whole exchange (ms)", "solve per user (ms)", "time (s)",
        "status", "target", "peak RSS MiB",
    )  # fmt: skip
    rows = [
        ("LR-Geo K=1331 M=4", {"k": 1331, "m": 4}, "≤ 50 ms / user"),
        ("LR-Geo K=1331 M=10", {"k": 1331, "m": 10}, "≤ 50 ms / user"),
        ("LR-Geo K=1369 M=4 (37×37 grid)", {"k": 1369, "m": 4, "grid": True}, "reference"),
        ("LR-Geo K=1369 M=10 (37×37 grid)", {"k": 1369, "m": 10, "grid": True}, "reference"),
        ("LR-Geo K=10000 M=4 (grid)", {"k": 10000, "m": 4}, "≤ 2× K=1331"),
        ("LR-Geo K=10000 M=10 (grid)", {"k": 10000, "m": 10}, "≤ 2× K=1331"),
        ("full LP K=400 γ=∞", {"k": 400, "method": "lp"}, "≤ 10 s, gap ≤ 1e-6"),
        ("ConstOPT K=400", {"k": 400, "method": "constopt"}, "≤ 10 s, gap ≤ 1e-6"),
    ]
    for name, setting, target in rows:
        if setting.get("method", "lrgeo") not in a.methods.split(","):
            continue  # e.g. --methods lrgeo: the LR-Geo rows only
        r = _child(a, **setting)
        _print_row(
            [name, _stat(r.get("per_user_ms")), _stat(r.get("solve_per_user_ms")),
             _stat(r.get("time_s")), _statuses(r), target, _stat(r.get("peak_rss_mib"), ".0f")]
        )  # fmt: skip


def table_solvers(a: argparse.Namespace) -> None:
    """Solver (a) Benders, (b) row generation and the monolithic LP on the same instances."""
    _header(
        "setting", "solver", "solve per user (ms)", "time (s)", "iterations / rounds", "‖y*‖",
        "status", "peak RSS MiB",
    )  # fmt: skip
    settings = [
        ("K=1331 M=4 r_exp=4 ε=10", {"k": 1331, "m": 4}),
        ("K=1331 M=10 r_exp=4 ε=10", {"k": 1331, "m": 10}),
        ("K=400 M=4 r_exp=1 ε=2", {"k": 400, "m": 4, "r_exp": 1.0, "epsilon": 2.0}),
        ("K=400 M=4 r_exp=1 ε=10", {"k": 400, "m": 4, "r_exp": 1.0}),
        ("K=400 M=4 γ=∞ (LR-Geo-F)", {"k": 400, "m": 4, "f": True}),
    ]
    for name, setting in settings:
        f = "-f" if setting.pop("f", False) else ""
        for solver in ("benders", "rowgen", "lp"):
            r = _child(a, method=f"lrgeo{f}-{solver}", **setting)
            _print_row(
                [name, solver, _stat(r.get("solve_per_user_ms")), _stat(r.get("time_s")),
                 _stat(r.get("iterations")), _stat(r.get("y_norm")), _statuses(r),
                 _stat(r.get("peak_rss_mib"), ".0f")]
            )  # fmt: skip


def table_sweep(a: argparse.Namespace) -> None:
    """Figs. 9–13: one parameter swept, LR-Geo's time, ratio, GV/GVE or ambiguity; with
    ``--plot`` also the figure (ours beside the paper's values where it gives them)."""
    sweep = {
        "users": ("m", [2, 4, 6, 8, 10], {"k": a.k, "gv": True}),
        "scaling": ("k", [100, 400, 800, 1331, 2500, 5000, 10000], {}),
        "radius": ("lr_radius", [10, 20, 30, 40, 50], {"k": a.k, "bound": True}),
        "cell": ("cell", [0.05, 0.1, 0.15, 0.2, 0.275], {"k": a.k, "bound": True}),
        "ambiguity": ("cell", [0.05, 0.1, 0.15, 0.2, 0.275], {"k": a.k, "ambiguity": True}),
    }[a.table]
    key, values, fixed = sweep
    cols = {
        "users": ["GV (%)", "max GVE", "max GVE within", "max GVE across"],
        "scaling": ["K"],
        "radius": ["ratio (bound c̃)", "ratio (bound c̄)", "mean |N_m|"],
        "cell": ["ratio (bound c̃)", "ratio (bound c̄)", "CR table (s)"],
        "ambiguity": ["rows matched (exact)", "rows matched (paper)", "share of V̂", "|V̂|"],
    }[a.table]
    fields = {
        "users": ["gv_pct", "gve", "gve_within", "gve_across"],
        "scaling": ["K"],
        "radius": ["ratio", "ratio_exact_cost", "lr_size"],
        "cell": ["ratio", "ratio_exact_cost", "cr_table_s"],
        "ambiguity": ["matched", "matched_paper", "matched_share", "cr_points"],
    }[a.table]
    caps = [a.lr_max_size] + ([0] if a.table == "radius" and a.lr_max_size else [])
    _header(key, "L", "time (s)", "per user (ms)", "solve (ms)", *cols, "status", "RSS MiB")
    series: dict[int, list[dict]] = {}
    for cap in caps:
        for value in values:
            r = _child(a, **{key: value, "lr_max_size": cap}, **fixed)
            series.setdefault(cap, []).append(r)
            _print_row(
                [value, cap or "none", _stat(r.get("time_s")), _stat(r.get("per_user_ms")),
                 _stat(r.get("solve_per_user_ms")), *(_stat(r.get(f)) for f in fields),
                 _statuses(r), _stat(r.get("peak_rss_mib"), ".0f")]
            )  # fmt: skip
    if a.plot:
        from geo_figures import plot_sweep

        plot_sweep(a.table, values, series, a.plot, k=a.k)
        print(f"\nfigure: {a.plot}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rome", help="directory with the Rome grid CSV files")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0, help="first seed (reps use seed, seed+1, …)")
    ap.add_argument(
        "--table",
        default="1",
        choices=["1", "targets", "solvers", "users", "scaling", "radius", "cell", "ambiguity"],
    )
    ap.add_argument("--methods", default="lrgeo,lrgeo-f,lp,constopt,expmech,laplace")
    ap.add_argument("--ks", default="100,200,300,400")
    ap.add_argument("--r-exp", type=float, default=4.0)
    ap.add_argument("--epsilon", type=float, default=10.0)
    ap.add_argument("--bound", action="store_true", help="also the relaxed bounds and ratios")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per table row")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--method", default="lrgeo", help=argparse.SUPPRESS)
    ap.add_argument("--k", type=int, default=400, help="K of the sweeps (default 400)")
    ap.add_argument("--m", type=int, default=4, help="users M (default 4)")
    ap.add_argument("--gamma-graph", type=float, default=50.0)
    ap.add_argument("--lr-radius", type=float, default=20.0)
    ap.add_argument("--cell", type=float, default=0.1)
    ap.add_argument(
        "--lr-max-size", type=int, default=20, help="L, LR sets' size cap; 0 = none (radius: both)"
    )
    ap.add_argument("--plot", help="sweeps: also write this PNG (atomically)")
    ap.add_argument("--gv", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--grid", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ambiguity", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument(
        "--anchor",
        action="store_true",
        help="CR table anchored at the locations (exact estimates: ĉ = c̃ = c̄)",
    )
    a = ap.parse_args(argv)
    if a.child:
        return _child_main(a)
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        f"load average: {' '.join(load)}; reps {a.reps}; ε {a.epsilon} km⁻¹; r_exp {a.r_exp} km; "
        f"table {a.table}{'; CR table anchored at the locations' if a.anchor else ''}\n"
    )
    tables = {"1": table_1, "targets": table_targets, "solvers": table_solvers}
    tables.get(a.table, table_sweep)(a)
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nload average at the end: {' '.join(load)}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
