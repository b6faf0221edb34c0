"""Census scaling run: time and peak memory per mechanism from 10³ to 10⁶ leaves (4 levels), the
national release targets, and TableMerge against a plain std::sort of the same slopes.

Each (size, mechanism) runs in a fresh subprocess so that its peak RSS is its own.
Usage: python bench/census_scaling.py [--max-leaves 1000000] [--min-leaves 1] [--N 20]
       [--qp-N 4] [--qp-limit 120] [--epsilon 1.0] [--mechanisms M_H^dp,M_c^dp,M_c^ch,TopDown]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CHILD = r"""
import json, resource, sys, time
import numpy as np
from privopt.census import MECHANISMS
from privopt.census.synthetic import synthetic_hierarchy, synthetic_us
spec = json.loads(sys.argv[1])
if spec["data"] == "national":
    data = synthetic_us(0, N=spec["N"])
else:
    data = synthetic_hierarchy(spec["fanouts"], spec["groups"], N=spec["N"], seed=0)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kw = {"time_limit": spec["qp_limit"]} if spec["mech"] in ("M_H^r", "M_c^r") else {}
# One-off Numba compilation of the privopt.dp samplers (and of the PAVA kernel) happens on the
# first draw in a process; time it apart so that the rows show the steady-state cost.
t = time.perf_counter()
tiny = synthetic_hierarchy([2], 10, N=spec["N"], seed=1)
MECHANISMS[spec["mech"]](tiny, spec["eps"], rng=1, **kw)
warmup = time.perf_counter() - t
t = time.perf_counter()
try:
    rel = MECHANISMS[spec["mech"]](data, spec["eps"], rng=0, **kw)
    ok = True
except Exception as exc:  # a QP time limit
    ok = repr(exc)
total = time.perf_counter() - t
out = {"ok": ok, "seconds": total, "warmup": warmup, "data_rss_mib": rss0 / 1024,
       "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "regions": int(data.hierarchy.n_regions), "cells": int(data.counts.size)}
if ok is True:
    out.update(post=rel.timings["postprocess"], noise=rel.timings["noise"],
               cv=rel.violations(), certified=rel.info.get("certified"),
               qp_solver=rel.info.get("qp_solver"))
print(json.dumps(out))
"""


def run(spec: dict) -> dict:
    res = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec)], capture_output=True, text=True, timeout=900
    )
    if res.returncode != 0:
        return {"ok": res.stderr.strip().splitlines()[-1] if res.stderr else "failed"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def table_merge_vs_sort() -> None:
    import numpy as np
    from privopt._core import census as kernels

    rng = np.random.default_rng(0)
    print("\n## TableMerge vs std::sort of the same slope list (C++, per call)")
    print("| children | width | heap merge ms | sorted merge ms | std::sort ms | heap/sort |")
    print("|---|---|---|---|---|---|")
    for k, width in ((2, 1000), (60, 433), (254, 433), (1000, 200), (50, 20000)):
        los = rng.integers(0, 50, size=k)
        noisy = los + rng.integers(0, width, size=k)
        tables = [(np.arange(lo, lo + width) - c) ** 2 for lo, c in zip(los, noisy, strict=True)]
        th, ts, tsort = kernels.time_table_merge(los, tables, 5)
        print(
            f"| {k} | {width} | {th * 1e3:.3f} | {ts * 1e3:.3f} | {tsort * 1e3:.3f} | "
            f"{th / tsort:.2f} |"
        )


def national(mechs: list[str], N: int, args: argparse.Namespace) -> None:
    """The national release with every mechanism, then the runtime ratios of the baselines to
    the DP mechanisms measured in this same run (the paper's Fig. 8 claims)."""
    print(f"## National release (1 + 52 + 3,221 regions), N = {N}")
    print(
        "| mechanism | seconds | post-processing s | noise s | first call (JIT) s |"
        " peak RSS MiB | #CV |"
    )
    print("|---|---|---|---|---|---|---|")
    res = {}
    for m in [*mechs, "M_H^r", "M_c^r"]:
        r = run(
            {"data": "national", "N": N, "mech": m, "eps": args.epsilon, "qp_limit": args.qp_limit}
        )
        res[m] = r
        if r.get("ok") is True:
            label = f"{m} ({r['qp_solver']})" if r.get("qp_solver") else m
            print(
                f"| {label} | {r['seconds']:.3f} | {r['post']:.3f} | {r['noise']:.3f} | "
                f"{r['warmup']:.2f} | {r['peak_rss_mib']:.0f} | {r['cv']} |",
                flush=True,
            )
        else:
            print(f"| {m} | — ({str(r.get('ok'))[:60]}) | | | | | |", flush=True)
    print(
        f"\nRatios (baseline / DP mechanism, same input, N = {N}; '>' = the baseline hit "
        f"the {args.qp_limit:g} s QP limit):\n"
    )
    print("| baseline | DP mechanism | post-processing ratio | total ratio |")
    print("|---|---|---|---|")
    for base, dp in (
        ("M_H^r", "M_H^dp"),
        ("M_c^r", "M_c^dp"),
        ("M_c^r", "M_c^ch"),
        ("TopDown", "M_H^dp"),
        ("TopDown", "M_c^dp"),
        ("TopDown", "M_c^ch"),
    ):
        b, d = res.get(base, {}), res.get(dp, {})
        if d.get("ok") is not True or base not in res:
            continue
        if b.get("ok") is True:
            print(
                f"| {base} | {dp} | {b['post'] / d['post']:.1f}× | "
                f"{b['seconds'] / d['seconds']:.1f}× |"
            )
        elif "time" not in str(b.get("ok")):
            print(f"| {base} | {dp} | failed | failed |")
        else:
            print(
                f"| {base} | {dp} | > {args.qp_limit / d['post']:.0f}× | "
                f"> {args.qp_limit / d['seconds']:.0f}× |"
            )
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-leaves", type=int, default=10**6)
    ap.add_argument(
        "--min-leaves",
        type=int,
        default=1,
        help="skip smaller hierarchies (and the national runs when > 3,221)",
    )
    ap.add_argument("--N", type=int, default=20)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--qp-limit", type=float, default=120.0)
    ap.add_argument(
        "--qp-N",
        type=int,
        default=4,
        help="also run the national release at this N, where the QPs finish",
    )
    ap.add_argument("--mechanisms", default="M_H^dp,M_c^dp,M_c^ch,TopDown")
    args = ap.parse_args()
    mechs = args.mechanisms.split(",")
    print(f"# Census scaling, ε = {args.epsilon}, N = {args.N} (wall-clock, this machine)\n")
    if args.min_leaves <= 3221:
        for N in sorted({args.N, args.qp_N}, reverse=True):
            national(mechs, N, args)
    print("## 4-level hierarchies (root → 10 → … ), 100 groups per leaf on average")
    print(
        "| leaves | regions | cells | mechanism | seconds | post s | noise s | peak RSS MiB |"
        " certified |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    shapes = [[10, 10, 10], [10, 10, 100], [10, 100, 100], [10, 100, 1000]]
    for fan in shapes:
        leaves = fan[0] * fan[1] * fan[2]
        if leaves > args.max_leaves:
            break
        if leaves < args.min_leaves:
            continue
        for m in mechs:
            t = time.perf_counter()
            r = run(
                {
                    "data": "regular",
                    "fanouts": fan,
                    "groups": 100 * leaves,
                    "N": args.N,
                    "mech": m,
                    "eps": args.epsilon,
                    "qp_limit": args.qp_limit,
                }
            )
            if r.get("ok") is True:
                print(
                    f"| {leaves} | {r['regions']} | {r['cells']} | {m} | {r['seconds']:.2f} | "
                    f"{r['post']:.2f} | {r['noise']:.2f} | {r['peak_rss_mib']:.0f} | "
                    f"{r['certified']} |",
                    flush=True,
                )
            else:
                print(
                    f"| {leaves} | | | {m} | failed: {str(r.get('ok'))[:60]} "
                    f"({time.perf_counter() - t:.0f} s) | | | | |",
                    flush=True,
                )
    table_merge_vs_sort()


if __name__ == "__main__":
    main()
