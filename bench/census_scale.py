"""Census at scale (issue 17 item 2): M_H^dp's solver at 10⁶ leaves against the node-by-node
T^dp solver of the previous implementation (same run, same noisy input), the national synthetic
release with tracts and blocks end to end against a TopDown peer (same command), and the tree DP
decomposed by top-level subtree on a Dask LocalCluster against the serial run.

Every measurement runs in a fresh subprocess; peak RSS is the process's high-water mark (VmHWM)
and, for the solver, the high-water mark reset just before it starts (so data generation is not
counted). Prints a markdown table per section and the load average.

Usage: python bench/census_scale.py [--leaves 1000000] [--sections solver,e2e,dask,streamed]
       [--dask-leaves 1000000] [--workers 2] [--epsilon 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SOLVER = r"""
import json, sys, time
import numpy as np
spec = json.loads(sys.argv[1])

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
def reset_hwm():
    open("/proc/self/clear_refs", "w").write("5")

from privopt.census import measure_counts
from privopt.census.synthetic import synthetic_hierarchy
from privopt.census.solvers import tree_postprocess
leaves = int(np.prod(spec["fanouts"]))
data = synthetic_hierarchy(spec["fanouts"], 100 * leaves, N=spec["N"], seed=0)
m = measure_counts(data, spec["eps"], rng=0)
h, noisy, G, lam = data.hierarchy, m.noisy, data.G, float(m.scale[0])
del data
reset_hwm()
base = hwm()
t = time.perf_counter()
if spec["method"] == "regions":
    counts, info = tree_postprocess(h, noisy, G, scale=lam)
else:
    sys.path.insert(0, spec["bench_dir"])
    from census_scale import node_by_node
    counts, info = node_by_node(h, noisy, G, lam)
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "solver_peak_mib": hwm(), "before_mib": base,
                  "cost": int(info["cost"]), "rounds": info["rounds"],
                  "certified": bool(info["certified"]), "regions": int(h.n_regions),
                  "cells": int(counts.size)}))
"""


def node_by_node(h, noisy, G: int, scale: float):
    """The previous implementation's solver: one T^dp node per (region, size) for the generic
    kernel (a table and a trace slot per node, leaves included), one uniform window
    δ = min(3⌈2λ²⌉, max(8, 4λ√(1 + largest fanout)), G), doubled everywhere until certified."""
    import math

    import numpy as np
    from privopt.census.solvers import (
        _tdp_structure,
        _touches,
        _window_bounds,
        paper_delta,
        solve_tree,
        sum_of_squares,
    )

    R, N = noisy.shape
    child_ptr, child_idx = _tdp_structure(h, N)
    flat = noisy.T.ravel()
    noisy_all = np.concatenate([flat, [0]]).astype(np.int64)
    weight = np.ones(flat.size + 1, dtype=np.int64)
    weight[-1] = 0
    fan = int(np.diff(h.child_ptr).max(initial=1))
    delta = min(paper_delta(scale), max(8, math.ceil(4 * scale * math.sqrt(1 + fan))), G)
    rounds = 0
    while True:
        rounds += 1
        lo, hi = _window_bounds(flat, delta, G)
        status, _, _, values, _ = solve_tree(
            child_ptr,
            child_idx,
            noisy_all,
            weight,
            np.concatenate([lo, [G]]),
            np.concatenate([hi, [G]]),
            flat.size,
        )
        if status == 0 and not np.any(_touches(values[:-1], lo, hi, G)):
            break
        delta = min(2 * delta, G)
    counts = values[:-1].reshape(N, R).T
    return counts, {"cost": sum_of_squares(counts - noisy), "rounds": rounds, "certified": True}


def run_child(code: str, spec: dict, timeout: float = 3600) -> dict:
    res = subprocess.run(
        [sys.executable, "-c", code, json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if res.returncode != 0:
        return {"error": (res.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def solver_section(args: argparse.Namespace) -> None:
    fanouts = {10**5: [10, 100, 100], 10**6: [10, 100, 1000], 10**7: [10, 1000, 1000]}[args.leaves]
    print(f"## M_H^dp solver alone, {args.leaves:,} leaves ({fanouts}), N = 20, ε = {args.epsilon}")
    print(
        "| solver | seconds | process peak RSS MiB | solver's own MiB (peak − before) | rounds "
        "| certified | cost |"
    )
    print("|---|---|---|---|---|---|---|")
    res = {}
    for method in ("regions", "nodes"):
        spec = {
            "fanouts": fanouts,
            "N": 20,
            "eps": args.epsilon,
            "method": method,
            "bench_dir": os.path.dirname(os.path.abspath(__file__)),
        }
        r = res[method] = run_child(SOLVER, spec)
        name = {"regions": "by regions (this code)", "nodes": "node by node (previous)"}[method]
        if "error" in r:
            print(f"| {name} | failed: {r['error'][:80]} | | | | | |", flush=True)
            continue
        print(
            f"| {name} | {r['seconds']:.2f} | {r['solver_peak_mib']:.0f} | "
            f"{r['solver_peak_mib'] - r['before_mib']:.0f} | {r['rounds']} | {r['certified']} | "
            f"{r['cost']} |",
            flush=True,
        )
    a, b = res.get("regions", {}), res.get("nodes", {})
    if "seconds" in a and "seconds" in b:
        own_a = a["solver_peak_mib"] - a["before_mib"]
        own_b = b["solver_peak_mib"] - b["before_mib"]
        print(
            f"\nRatio previous / this code: time {b['seconds'] / a['seconds']:.1f}×, solver's own "
            f"memory {own_b / own_a:.1f}×; same cost: {a['cost'] == b['cost']}\n"
        )


def e2e_section(args: argparse.Namespace) -> None:
    print(
        "## End to end: privopt census --synthetic-us --tracts-per-county 20 "
        "--blocks-per-tract 16 --epsilon 1 (1.1 M regions × 20 sizes)"
    )
    print("| mechanism | wall s | peak RSS MiB | exit |")
    print("|---|---|---|---|")
    res = {}
    for mech in ("M_H^dp", "TopDown"):
        with tempfile.TemporaryDirectory() as out:
            cmd = [
                sys.executable,
                "-c",
                "import resource, sys, time\n"
                "from privopt.cli import main\n"
                "t = time.perf_counter()\n"
                "rc = main(sys.argv[1:])\n"
                "w = time.perf_counter() - t\n"
                "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
                "print(f'BENCH {w} {peak} {rc}', file=sys.stderr)\n",
                "census",
                "--synthetic-us",
                "--tracts-per-county",
                "20",
                "--blocks-per-tract",
                "16",
                "--mechanism",
                mech,
                "--epsilon",
                str(args.epsilon),
                "--seed",
                "0",
                "--out",
                os.path.join(out, "r"),
            ]
            t = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
            wall = time.perf_counter() - t
            line = [x for x in p.stderr.splitlines() if x.startswith("BENCH")]
            peak = float(line[-1].split()[2]) if line else float("nan")
            res[mech] = (wall, peak, p.returncode)
            print(f"| {mech} | {wall:.1f} | {peak:.0f} | {p.returncode} |", flush=True)
            if p.returncode:
                print("```\n" + p.stderr[-2000:] + "\n```")
    if "M_H^dp" in res and "TopDown" in res:
        a, b = res["M_H^dp"], res["TopDown"]
        print(
            f"\nRatio M_H^dp / TopDown (same command): wall {a[0] / b[0]:.2f}×, "
            f"peak {a[1] / b[1]:.2f}×\n"
        )


DASK = r"""
import json, sys, time
import numpy as np
spec = json.loads(sys.argv[1])
import distributed
from privopt.census import measure_counts
from privopt.census.synthetic import synthetic_hierarchy
from privopt.census.solvers import tree_postprocess
data = synthetic_hierarchy(spec["fanouts"], 100 * int(np.prod(spec["fanouts"])), N=20, seed=0)
m = measure_counts(data, spec["eps"], rng=0)
h, noisy, G, lam = data.hierarchy, m.noisy, data.G, float(m.scale[0])
t = time.perf_counter()
serial, info = tree_postprocess(h, noisy, G, scale=lam)
t_serial = time.perf_counter() - t
with distributed.LocalCluster(n_workers=spec["workers"], threads_per_worker=1, processes=True,
                              dashboard_address=None, memory_limit="4GiB") as cluster, \
        distributed.Client(cluster) as client:
    client.run(lambda: None)  # workers up
    t = time.perf_counter()
    remote, rinfo = tree_postprocess(h, noisy, G, scale=lam, executor=client.get_executor())
    t_remote = time.perf_counter() - t
    peaks = client.run(lambda: __import__("resource").getrusage(
        __import__("resource").RUSAGE_SELF).ru_maxrss / 1024)
equal = bool(np.array_equal(serial, remote))
print(json.dumps({"serial": t_serial, "dask": t_remote, "equal": equal,
                  "worker_peak_mib": max(peaks.values()), "rounds": info["rounds"]}))
"""


#: Regular hierarchies (fan-out per level below the root) of the Dask sections, by leaf count.
DASK_FANOUTS = {10**5: [10, 100, 100], 10**6: [10, 100, 1000], 10**7: [10, 1000, 1000]}


def dask_section(args: argparse.Namespace) -> None:
    fanouts = DASK_FANOUTS[args.dask_leaves]
    print(
        f"## Tree DP on a Dask LocalCluster ({args.workers} worker processes), "
        f"{args.dask_leaves:,} leaves"
    )
    r = run_child(DASK, {"fanouts": fanouts, "eps": args.epsilon, "workers": args.workers})
    if "error" in r:
        print(f"failed: {r['error']}")
        return
    print("| serial s | Dask s | serial / Dask | bit-for-bit equal | worker peak RSS MiB |")
    print("|---|---|---|---|---|")
    print(
        f"| {r['serial']:.2f} | {r['dask']:.2f} | {r['serial'] / r['dask']:.2f} | {r['equal']} | "
        f"{r['worker_peak_mib']:.0f} |\n"
    )


STREAMED = r"""
import json, resource, sys, tempfile, time
import numpy as np
spec = json.loads(sys.argv[1])
import distributed
from privopt.census.streamed import RegularSyntheticSource, m_h_dp_streamed
leaves = int(np.prod(spec["fanouts"]))
source = RegularSyntheticSource(tuple(spec["fanouts"]), n_groups=100 * leaves, N=20, seed=0)
with tempfile.TemporaryDirectory() as out, distributed.LocalCluster(
        n_workers=spec["workers"], threads_per_worker=1, processes=True, dashboard_address=None,
        memory_limit="4GiB") as cluster, distributed.Client(cluster) as client:
    client.run(lambda: None)
    t = time.perf_counter()
    rel = m_h_dp_streamed(source, spec["eps"], client.get_executor(), out)
    seconds = time.perf_counter() - t
    peaks = client.run(lambda: __import__("resource").getrusage(
        __import__("resource").RUSAGE_SELF).ru_maxrss / 1024)
driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "worker_peak_mib": max(peaks.values()),
                  "driver_peak_mib": driver, "rounds": rel.info["rounds"],
                  "certified": rel.info["certified"], "regions": rel.info["regions"],
                  "l1": rel.l1_per_level.tolist()}))
"""


def streamed_section(args: argparse.Namespace) -> None:
    fanouts = DASK_FANOUTS[args.dask_leaves]
    print(
        f"## Streamed M_H^dp (generated, measured and solved per top-level subtree) on a Dask "
        f"LocalCluster ({args.workers} worker processes, 4 GiB each), {args.dask_leaves:,} leaves"
    )
    r = run_child(STREAMED, {"fanouts": fanouts, "eps": args.epsilon, "workers": args.workers})
    if "error" in r:
        print(f"failed: {r['error']}")
        return
    print(
        "| regions | seconds (noise, DP, I/O) | worker peak RSS MiB | driver peak RSS MiB "
        "| rounds |"
    )
    print("|---|---|---|---|---|")
    print(
        f"| {r['regions']:,} | {r['seconds']:.1f} | {r['worker_peak_mib']:.0f} | "
        f"{r['driver_peak_mib']:.0f} | {r['rounds']} |\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--leaves", type=int, default=10**6, choices=[10**5, 10**6, 10**7])
    ap.add_argument("--dask-leaves", type=int, default=10**6, choices=[10**5, 10**6, 10**7])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--sections", default="solver,e2e,dask,streamed")
    args = ap.parse_args()
    print(f"# Census at scale (load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)\n")
    for name in args.sections.split(","):
        {
            "solver": solver_section,
            "e2e": e2e_section,
            "dask": dask_section,
            "streamed": streamed_section,
        }[name](args)
    print(f"(load average at the end {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
