"""Benders on Dask against serial (issue 17: "Benders on Dask, 2 workers, N = 2,000 >= 1.6x
serial"): the same mDP Benders run (Rome grid, the largest mDP component, a fixed number of
iterations so the two runs do the same work) serially and on a ``LocalCluster`` of worker
processes (one thread each), in the same command. The iterates must be bit for bit equal.

Prints a markdown table (wall times, ratio, the profile that bounds the ratio: master share,
subproblem rounds against their ideal ``sum of solve times / workers``, setup), peak RSS of
this process and of the workers, and the load average before and after. Progress on stderr.

Measured on the shared 2-core development machine (grid N = 2,000, K = 100, ε·η = 4, M = 4,
5 iterations; the master is 4-5 % of the run): 1.21x at load 0.7-1.9 and 1.07x at load
0.5-2.6, iterates bit for bit equal. Per-task overhead and imbalance cost 16-20 s of ~120-150 s
of rounds; what bounds the ratio is that each solve takes 1.4-1.6x longer on the workers
than serially (two workers and the other users' jobs share the 2 cores), not the batching.

Usage: python bench/benders_dask.py [--rows 40] [--cols 50] [--outputs 100] [--epsilon 2]
       [--eta 2] [--iterations 15] [--workers 2] [--m 25]
"""

from __future__ import annotations

import os

# Dask's nannies start workers with one BLAS/OpenMP thread; the serial run uses the same, so
# dot products sum in the same order and the iterates can be compared bit for bit (with a
# multi-threaded BLAS here they differed in the last bit of an upper bound).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from privopt.errors import SolverLimit  # noqa: E402
from privopt.mdp import MDPProblem, rome_grid  # noqa: E402
from privopt.mdp.benders import solve_benders_block  # noqa: E402


def largest_block(args: argparse.Namespace) -> Any:
    """The mDP block of the grid's largest component (the whole grid when connected)."""
    prob = MDPProblem(
        rome_grid(args.rows, args.cols),
        epsilon=args.epsilon,
        eta=args.eta,
        outputs=args.outputs,
        seed=0,
    )
    _, labels = prob.components
    comp = int(np.argmax(np.bincount(labels)))
    return prob.subproblem(np.flatnonzero(labels == comp))


def run(block: Any, args: argparse.Namespace, executor: Any) -> dict[str, Any]:
    """One Benders run of ``args.iterations`` iterations; its wall time and profile."""
    t0 = time.perf_counter()
    try:
        _, _, info, hist = solve_benders_block(
            block, m=args.m, max_iterations=args.iterations, executor=executor, progress=False
        )
    except SolverLimit as err:  # the iteration limit: the expected end here
        _, _, info, hist = err.best
    wall = time.perf_counter() - t0
    return {
        "wall": wall,
        "benders": info["time_s"] - info["setup_s"],
        "setup": info["setup_s"],
        "master": info["master_time_s"],
        "rounds": info["sub_time_s"],
        "solves": info["sub_time_sum_s"],
        "iterations": info["iterations"],
        "bounds": [(h["lb"], h["ub"]) for h in hist],
        "executor": info["executor"],
    }


def peak_rss_mib() -> float:
    """This process's peak RSS (VmHWM; ``ru_maxrss`` survives exec, so spawned workers
    would report their parent's peak)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--cols", type=int, default=50)
    ap.add_argument("--outputs", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=2.0)
    ap.add_argument("--eta", type=float, default=2.0)
    ap.add_argument("--iterations", type=int, default=15)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--m", type=int, default=25)
    args = ap.parse_args()
    from distributed import Client, LocalCluster

    load0 = os.getloadavg()
    block = largest_block(args)
    print(f"block: {block.n} records, K = {block.k}", file=sys.stderr)
    print("serial run ...", file=sys.stderr)
    serial = run(block, args, None)
    print(f"dask run ({args.workers} workers) ...", file=sys.stderr)
    t0 = time.perf_counter()
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        start_s = time.perf_counter() - t0
        dask = run(block, args, client.get_executor())
        worker_rss = client.run(peak_rss_mib)
    load1 = os.getloadavg()
    report(args, block, serial, dask, start_s, worker_rss, load0, load1)


def report(
    args: argparse.Namespace,
    block: Any,
    serial: dict[str, Any],
    dask: dict[str, Any],
    start_s: float,
    worker_rss: dict[str, float],
    load0: tuple[float, ...],
    load1: tuple[float, ...],
) -> None:
    w = args.workers
    print(
        f"## Benders, grid N = {block.n}, K = {block.k}, eps*eta = {args.epsilon * args.eta:g}, "
        f"M = {args.m}, {args.iterations} iterations: serial vs Dask LocalCluster "
        f"({w} workers x 1 thread)\n"
    )
    print("| run | wall s | Benders s | setup s | master s | sub rounds s | sum of solves s |")
    print("|---|---|---|---|---|---|---|")
    for name, r in (("serial", serial), (f"dask ({dask['executor']})", dask)):
        print(
            f"| {name} | {r['wall']:.1f} | {r['benders']:.1f} | {r['setup']:.1f} | "
            f"{r['master']:.1f} | {r['rounds']:.1f} | {r['solves']:.1f} |"
        )
    same = serial["bounds"] == dask["bounds"]
    ideal = dask["solves"] / w
    print(
        f"\nratio serial/dask: wall {serial['wall'] / dask['wall']:.2f}x, Benders "
        f"{serial['benders'] / dask['benders']:.2f}x, sub rounds "
        f"{serial['rounds'] / max(dask['rounds'], 1e-9):.2f}x; iterates bit for bit equal: "
        f"{same}; iterations {serial['iterations']} / {dask['iterations']}"
    )
    print(
        f"profile (dask): master {dask['master'] / dask['benders']:.0%} of the Benders time; "
        f"sub rounds {dask['rounds']:.1f} s against ideal {ideal:.1f} s (sum of solves / {w}): "
        f"overhead + imbalance {dask['rounds'] - ideal:.1f} s; "
        f"best possible Benders ratio with this master "
        f"{serial['benders'] / (serial['benders'] - serial['rounds'] + serial['rounds'] / w):.2f}x"
    )
    rss = ", ".join(f"{v:.0f}" for v in worker_rss.values())
    print(
        f"peak RSS: this process {peak_rss_mib():.0f} MiB, workers [{rss}] MiB; "
        f"cluster start {start_s:.1f} s (not counted)"
    )
    print(
        f"load average before {load0[0]:.2f} / after {load1[0]:.2f} (1 min), {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
