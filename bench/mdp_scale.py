"""Metric-DP exact LP at scale (issue 17 item 1): the four workloads, each against a baseline
revision of privopt in the same command.

Every (workload, code) pair runs in a fresh child process, so that peak RSS is its own; the
baseline is the package source of ``--baseline REV`` (extracted with ``git archive``, using this
checkout's compiled extension, whose C++ is unchanged by the exact LP's work) imported instead of
the working tree's. Tables are printed in Markdown on stdout, progress on stderr, with the load
average.

    python bench/mdp_scale.py --data ../shared/data --baseline fedfbc0
    python bench/mdp_scale.py --data ../shared/data --workloads grid-eps2 geo400
    python bench/mdp_scale.py --data ../shared/data --baseline 662c932 --method benders \
        --workloads paper:grid paper:synthetic paper:road paper:text

Workloads (``make_workload``):

* ``grid-kn2000`` — a 40 × 50 grid of 1 km cells, K = N = 2,000, ε = 10/km, η = 2 km, c = d
  (the paper's grid setting at four times its size, every cell an output);
* ``grid-eps2`` — the paper's 20 × 25 grid, N = 500, K = 100 random outputs, ε = 2/km, η = 2
  (the hard regime: flat columns, many binding rows);
* ``road5000`` — 5,000 Rome road nodes (Haversine), K = 100, ε = 10/km, η = 2 km;
* ``geo400`` — LR-Geo's full-LP baseline: the Rome 40 × 40 grid sampled to K = 400 locations,
  γ = ∞ (every pair constrained), ε = 10, travel-cost loss (``privopt.geo.baselines.full_lp``);
* ``road-kn2000`` (not in the default set) — 2,000 road nodes, K = N (751.5 s, 2.9 GB before);
* ``grid-kn:N`` — the K = N grid of N 1 km cells (N a key of :data:`GRIDS`; the mdp-grid family
  of ``bench/scaling.py``);
* ``paper:DATASET`` — ``bench/mdp_bench.py``'s paper setting of one dataset (grid, synthetic,
  road, text: N = 500, K = 100, ε = 10, η = 2).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

from harness import package_at, peak_rss_mib, print_json, run_json, use_package
from mdp_bench import make_problem

#: Grid shapes (rows, cols) of 1 km cells per size N of the ``grid-kn:N`` workloads.
GRIDS = {500: (20, 25), 1000: (25, 40), 2000: (40, 50), 4000: (50, 80), 8000: (80, 100)}
DEFAULT_WORKLOADS = ("grid-kn2000", "grid-eps2", "road5000", "geo400")
GOALS = {
    "grid-kn2000": "≤ 60 s, ≤ 2 GiB",
    "grid-eps2": "≤ 5 s",
    "road5000": "≤ 120 s, gap ≤ 1e-6",
    "geo400": "≤ 10 s, gap ≤ 1e-6",
    "road-kn2000": "—",
}


def make_workload(name: str, data: Path | None):
    """The :class:`privopt.mdp.MDPProblem` of a workload, or for ``geo400`` a callable that
    runs the LR-Geo full-LP baseline."""
    from privopt.mdp import MDPProblem, rome_grid

    if name == "grid-kn2000":
        return MDPProblem(rome_grid(40, 50), epsilon=10.0, eta=2.0)
    if name == "warm-up":  # compiles and caches the Numba kernels (not reported)
        return MDPProblem(rome_grid(6, 6), epsilon=10.0, eta=2.0, outputs=10, seed=0)
    if name.startswith("grid-kn:"):
        return MDPProblem(rome_grid(*GRIDS[int(name[8:])]), epsilon=10.0, eta=2.0)
    if name == "grid-eps2":
        return make_problem("grid", 500, 100, 0, data, eps=2.0)
    if name == "road5000":
        return make_problem("road", 5000, 100, 0, data)
    if name == "road-kn2000":
        return make_problem("road", 2000, 2000, 0, data)
    if name.startswith("paper:"):  # bench/mdp_bench.py's paper settings, one dataset
        return make_problem(name[6:], 500, 100, 0, data)
    if name == "geo400":
        return _geo_full_lp(data)
    raise SystemExit(f"unknown workload {name}")


def _geo_full_lp(data: Path | None):
    if data is None:
        raise SystemExit("geo400 needs --data (the shared data folder)")
    from privopt.geo import CostReferenceTable, GeoParams, load_rome_grid
    from privopt.geo.baselines import full_lp

    geo = load_rome_grid(data / "rome").sample(400, seed=0)
    params = GeoParams(
        epsilon=10.0, r_exp=4.0, r_obf=4.5, gamma_graph=50.0, lr_radius=20.0, cr_cell_km=0.1
    )
    table = CostReferenceTable(geo, 20, cell_km=0.1, rng=0)
    return lambda: full_lp(geo, params, table, gamma=float("inf"))


def child(name: str, data: Path | None, method: str = "lp") -> dict:
    """One solve (inside the child process): time, loss, certified gap, verification.
    ``method``: :func:`privopt.mdp.solve`'s (``geo400`` always runs its full LP)."""
    from privopt.mdp import solve

    work = make_workload(name, data)
    start = time.perf_counter()
    pm = work() if callable(work) else solve(work, method)
    elapsed = time.perf_counter() - start
    parts = pm.info.get("components", [])
    out = {
        "time_s": elapsed,
        "loss": pm.expected_loss,
        "lower_bound": pm.lower_bound,
        "gap": pm.relative_gap,
        "status": pm.info.get("status", ""),
        "model_rows": int(sum(p.get("rows", 0) for p in parts)),
        "model_vars": int(sum(p.get("model_vars", 0) for p in parts)),
    }
    if not callable(work):
        out["max_rel_violation"] = pm.violations(work).max_relative_violation
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def run_child(
    name: str, data: Path | None, source: Path | None, limit: float, method: str = "lp"
) -> dict:
    """Run one workload in a fresh process (``source``: a baseline package folder)."""
    cmd = [sys.executable, __file__, "--child", name, "--method", method]
    if data is not None:
        cmd += ["--data", str(data)]
    if source is not None:
        cmd += ["--source", str(source)]
    return run_json(cmd, timeout=limit)


def _row(name: str, code: str, r: dict, base: dict | None) -> str:
    if "error" in r:
        return f"| {name} | {code} | {r['error']} | | | | | | {GOALS.get(name, '')} |"
    ratio = ""
    if base is not None and "time_s" in base:
        ratio = f"{base['time_s'] / r['time_s']:.1f}×"
    elif base is not None:
        ratio = f"> {base['error']}"
    return (
        f"| {name} | {code} | {r['time_s']:.2f} | {ratio} | {r['peak_rss_mib']:.0f} "
        f"| {r['loss']:.10g} | {r['gap']:.1e} | {r['model_rows']:,} / {r['model_vars']:,} "
        f"| {GOALS.get(name, '')} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None, help="the shared data folder")
    ap.add_argument("--baseline", default=None, help="git revision to compare against")
    ap.add_argument("--workloads", nargs="+", default=list(DEFAULT_WORKLOADS))
    ap.add_argument("--limit", type=float, default=1800.0, help="seconds per run")
    ap.add_argument("--method", default="lp", help="privopt.mdp.solve's method (lp, benders)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--source", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        if args.source:
            use_package(args.source)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            print_json(child(args.child, args.data, args.method))
        return 0
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(
        f"load average at start: {load}; baseline {args.baseline or '(none)'}; "
        f"method {args.method}\n"
    )
    print(
        "| workload | code | time (s) | speed-up | peak RSS (MiB) | loss | certified gap "
        "| model rows / vars | goal |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        source = package_at(args.baseline, Path(tmp)) if args.baseline else None
        # One untimed solve per code first: the baseline's freshly extracted package has no
        # Numba cache yet, and its first timed run would include ~1.3 s of compilation.
        for warm_source in ([source] if source is not None else []) + [None]:
            run_child("warm-up", args.data, warm_source, args.limit)
        for name in args.workloads:
            base = None
            if source is not None:
                print(f"[mdp_scale] {name}: baseline", file=sys.stderr, flush=True)
                base = run_child(name, args.data, source, args.limit, args.method)
                print(_row(name, f"baseline {args.baseline}", base, None), flush=True)
            print(f"[mdp_scale] {name}: this tree", file=sys.stderr, flush=True)
            r = run_child(name, args.data, None, args.limit, args.method)
            print(_row(name, "this tree", r, base), flush=True)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"\nload average at end: {load}; cores: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
