"""Benders on Dask against serial (issue 17: "Benders on Dask, 2 workers, N = 2,000 >= 1.6x
serial"): the same mDP Benders run (Rome grid, the largest mDP component, a fixed number of
iterations so the two runs do the same work) serially and on a ``LocalCluster`` of worker
processes (one thread each), in the same command. The iterates must be bit for bit equal.

Prints a markdown table (wall times, ratio, the profile that bounds the ratio: master share,
subproblem rounds against their ideal ``sum of solve times / workers``, setup), the CPU
seconds of each run (this process, the workers, every other process on the machine, from
``/proc/stat``) with the load average sampled every 5 s, and the peak RSS of this process and
of the workers. Progress on stderr.

Measured on the shared 2-core development machine with the defaults (grid N = 2,000, K = 100,
ε·η = 4, M = 4, 5 iterations; the master is 3-5 % of the run), iterates bit for bit equal:
1.21x at load 0.7-1.9 and 1.07x at load 0.5-2.6; 0.86x at load 2.8-6.1, where the other
jobs took 1.1-1.3 of the 2 cores, the two workers together got 0.85 of a core against the
serial run's 0.73, and the same iterations cost 1.37x the CPU seconds on the workers (each
solve 2.14x the serial wall time). Per-task overhead and imbalance cost 9-15 % of the rounds:
the batching is not what bounds the ratio (docs/performance.md, *Benders on Dask*).

With ``--baseline REV`` the serial run is repeated with the package of git revision ``REV``
(a child process, as in ``bench/mdp_scale.py``) and its master share and master seconds per
iteration are printed beside this tree's. The last lines give the serial-share model: the
serial part of the Benders time (master, certification, cut assembly) against the subproblem
rounds, and the speed-up Amdahl's law predicts at 8 and 16 workers (at most M subproblems run at
once) with the round efficiency measured here (rounds speed-up / workers) or given by
``--round-efficiency`` (from a run on a larger machine). ``--serial-only`` skips the Dask run.
A small untimed run first compiles the Numba kernels (neither timed run pays for them).

The critical-path model replays each serial run's recorded rounds (every subproblem's solve
seconds) on W workers: the same masters and serial remainder, each round as long as its busiest
batch (the dispatcher's own split) times ``--solve-slowdown`` (1.20: 8 workers on 16 cores),
and the engine's core round overlapping the first master. ``--compare-core-round`` adds a
serial run with the core round off; ``--workers 1,2,4,8,16`` runs Dask at each count and prints
the measured curve beside the model's; ``--json PATH`` writes every run's figures.

Usage: python bench/benders_dask.py [--rows 40] [--cols 50] [--outputs 100] [--epsilon 2]
       [--eta 2] [--iterations 5] [--workers 2|1,2,4,8,16] [--m 4] [--baseline REV]
       [--serial-only] [--round-efficiency E] [--solve-slowdown F] [--core-round on|off]
       [--compare-core-round] [--json PATH]
(the defaults are the settings above).
"""

from __future__ import annotations

import os

# Dask's nannies start workers with one BLAS/OpenMP thread; the serial run uses the same, so
# dot products sum in the same order and the iterates can be compared bit for bit (with a
# multi-threaded BLAS here they differed in the last bit of an upper bound).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from harness import (  # noqa: E402
    memory_write_text,
    package_at,
    peak_rss_mib,
    print_json,
    run_json,
    use_package,
    write_atomically,
)

# privopt is imported inside the functions: a baseline child imports it from another revision.


def largest_block(args: argparse.Namespace) -> Any:
    """The mDP block of the grid's largest component (the whole grid when connected)."""
    from privopt.mdp import MDPProblem, rome_grid

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


def machine_busy_s() -> float:
    """CPU seconds that all processes on this machine have been busy since boot, summed over
    the cores (``/proc/stat``: user, nice, system, irq, softirq)."""
    with open("/proc/stat") as fh:
        ticks = [int(v) for v in fh.readline().split()[1:8]]
    user, nice, system, _idle, _iowait, irq, softirq = ticks
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def process_cpu_s() -> float:
    """CPU seconds of this process and the children it waited for (all threads)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class LoadSampler:
    """The 1-minute load average every 5 s while a run lasts (min, mean, max)."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(5.0):
                return

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> str:
        s = self.samples
        return f"{min(s):.1f} / {sum(s) / len(s):.1f} / {max(s):.1f}"


#: Worker counts of the critical-path model.
MODEL_WORKERS = (1, 2, 4, 8, 16)


class RoundRecorder:
    """Records, for every subproblem round of a run, each subproblem's solve seconds, and the
    batches a run on W workers would use (the dispatcher's own split, by size). It wraps the
    engine's round collection; a baseline revision without it records nothing."""

    def __init__(self) -> None:
        self.rounds: list[list[float]] = []
        self.batches: dict[str, list[list[int]]] = {}

    def __enter__(self) -> RoundRecorder:
        try:
            from privopt.lp.benders import subproblems
        except ImportError:
            return self
        # A round is collected by _PendingRound.collect; revisions before it solved a round
        # in _Dispatcher.solve_all.
        pending = getattr(subproblems, "_PendingRound", None)
        self._cls, self._name = (
            (pending, "collect") if pending is not None else (subproblems._Dispatcher, "solve_all")
        )
        self._original = original = getattr(self._cls, self._name)
        recorder = self

        def recorded(obj: Any, *args: Any, **kwargs: Any) -> list[Any]:
            outcomes = original(obj, *args, **kwargs)
            recorder.rounds.append([float(o.seconds) for o in outcomes])
            if not recorder.batches:
                subs = obj.dispatcher.subs if pending is not None else obj.subs
                recorder.batches = {
                    str(w): subproblems._balanced_batches(subs, w) for w in MODEL_WORKERS
                }
            return outcomes

        setattr(self._cls, self._name, recorded)
        return self

    def __exit__(self, *exc: object) -> None:
        if getattr(self, "_cls", None) is not None:
            setattr(self._cls, self._name, self._original)


def run(block: Any, args: argparse.Namespace, executor: Any, client: Any = None) -> dict[str, Any]:
    """One Benders run of ``args.iterations`` iterations; its wall time and profile, and the
    CPU seconds spent by this process, by the workers (``client``) and by the whole machine."""
    from privopt.errors import SolverLimit
    from privopt.mdp.benders import solve_benders_block

    workers0 = client.run(process_cpu_s) if client is not None else {}
    busy0, cpu0 = machine_busy_s(), process_cpu_s()
    t0 = time.perf_counter()
    core = {} if args.core_round is None else {"core_round": args.core_round == "on"}
    with LoadSampler() as load, RoundRecorder() as recorder:
        try:
            _, _, info, hist = solve_benders_block(
                block,
                m=args.m,
                max_iterations=args.iterations,
                executor=executor,
                progress=False,
                **core,
            )
        except SolverLimit as err:  # the iteration limit: the expected end here
            _, _, info, hist = err.best
    wall = time.perf_counter() - t0
    cpu, busy = process_cpu_s() - cpu0, machine_busy_s() - busy0
    workers1 = client.run(process_cpu_s) if client is not None else {}
    cpu_workers = sum(workers1[w] - workers0.get(w, 0.0) for w in workers1)
    return {
        "cpu": cpu,
        "cpu_workers": cpu_workers,
        "cpu_others": busy - cpu - cpu_workers,
        "load": load.summary(),
        "wall": wall,
        "benders": info["time_s"] - info["setup_s"],
        "setup": info["setup_s"],
        "master": info["master_time_s"],
        "rounds": info["sub_time_s"],
        "solves": info["sub_time_sum_s"],
        "iterations": info["iterations"],
        "bounds": [(h["lb"], h["ub"]) for h in hist],
        "executor": info["executor"],
        "masters": [h["master_time"] for h in hist],
        "round_solves": recorder.rounds,
        "batches": recorder.batches,
        "core_round": len(recorder.rounds) > len(hist),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--cols", type=int, default=50)
    ap.add_argument("--outputs", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=2.0)
    ap.add_argument("--eta", type=float, default=2.0)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument(
        "--workers",
        default="2",
        help="Dask workers, or a list (1,2,4,8,16): one Dask run per count, and a curve table",
    )
    ap.add_argument("--json", default=None, help="also write every run's figures to this file")
    ap.add_argument("--m", type=int, default=4)
    ap.add_argument("--baseline", default=None, help="git revision whose serial run to compare")
    ap.add_argument("--serial-only", action="store_true", help="no Dask run")
    ap.add_argument(
        "--round-efficiency",
        type=float,
        default=None,
        help="the model's round efficiency (rounds speed-up / workers) from a run elsewhere",
    )
    ap.add_argument(
        "--solve-slowdown",
        type=float,
        default=1.20,
        help="the critical-path model's per-solve time on a loaded machine against serial "
        "(1.20: 8 workers on 16 cores)",
    )
    ap.add_argument(
        "--core-round",
        choices=("on", "off"),
        default=None,
        help="the engine's core round in this tree's runs (default: the package's default)",
    )
    ap.add_argument(
        "--compare-core-round",
        action="store_true",
        help="also a serial run with the core round off, in the same command",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--source", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:  # one serial run, in a fresh process (the baseline's package)
        if args.source:
            use_package(args.source)
        warm_up()
        print_json(run(largest_block(args), args, None))
        return

    counts = [int(w) for w in str(args.workers).split(",")]
    if min(counts) < 1:
        ap.error("--workers: counts must be at least 1")
    args.workers = counts[-1]
    load0 = os.getloadavg()
    base = baseline_run(args) if args.baseline else None
    block = largest_block(args)
    print(f"block: {block.n} records, K = {block.k}", file=sys.stderr)
    warm_up()
    without = None
    if args.compare_core_round:
        print("serial run, core round off ...", file=sys.stderr)
        without = run(block, argparse.Namespace(**{**vars(args), "core_round": "off"}), None)
    print("serial run ...", file=sys.stderr)
    serial = run(block, args, None)
    curve: dict[int, dict[str, Any]] = {}
    dask, start_s, worker_rss = None, 0.0, {}
    for w in [] if args.serial_only else counts:
        args.workers = w
        dask, start_s, worker_rss = dask_run(block, args)
        curve[w] = {**dask, "start_s": start_s, "worker_peak_mib": list(worker_rss.values())}
    load1 = os.getloadavg()
    report(args, block, serial, dask, base, start_s, worker_rss, load0, load1, without)
    if len(curve) > 1:
        report_curve(args, serial, curve)
    if args.json:
        runs = {"serial": serial, "baseline": base, "core_round_off": without, "dask": curve}
        write_atomically(Path(args.json), json.dumps(runs, indent=1))


def warm_up() -> None:
    """One small untimed run: the Numba kernels of the release's repair compile here, not
    inside the first timed run."""
    from privopt.errors import SolverLimit
    from privopt.mdp import MDPProblem, rome_grid
    from privopt.mdp.benders import solve_benders_block

    prob = MDPProblem(rome_grid(6, 6), epsilon=2.0, eta=2.0, outputs=10, seed=0)
    with contextlib.suppress(SolverLimit):  # the iteration limit: the expected end
        solve_benders_block(prob.subproblem(np.arange(36)), m=2, max_iterations=2, progress=False)


def baseline_run(args: argparse.Namespace) -> dict[str, Any]:
    """The serial run with the package of ``args.baseline``, in a child process."""
    print(f"serial run, baseline {args.baseline} ...", file=sys.stderr)
    flags = ["rows", "cols", "outputs", "epsilon", "eta", "iterations", "m"]
    cmd = [sys.executable, __file__, "--child"]
    for name in flags:
        cmd += [f"--{name}", str(getattr(args, name))]
    with tempfile.TemporaryDirectory() as tmp:
        source = package_at(args.baseline, Path(tmp))
        return {
            **run_json([*cmd, "--source", str(source)], timeout=None),
            "label": f"baseline {args.baseline}",
        }


def dask_run(block: Any, args: argparse.Namespace) -> tuple[dict[str, Any], float, dict]:
    """The run on a ``LocalCluster``; also the cluster's start time and the workers' peak RSS."""
    from distributed import Client, LocalCluster

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
        dask = run(block, args, client.get_executor(), client)
        worker_rss = client.run(peak_rss_mib)
    return dask, start_s, worker_rss


def report(
    args: argparse.Namespace,
    block: Any,
    serial: dict[str, Any],
    dask: dict[str, Any] | None,
    base: dict[str, Any] | None,
    start_s: float,
    worker_rss: dict[str, float],
    load0: tuple[float, ...],
    load1: tuple[float, ...],
    without: dict[str, Any] | None = None,
) -> None:
    w = args.workers
    print(
        f"## Benders, grid N = {block.n}, K = {block.k}, eps*eta = {args.epsilon * args.eta:g}, "
        f"M = {args.m}, {args.iterations} iterations: serial vs Dask LocalCluster "
        f"({w} workers x 1 thread)\n"
    )
    runs = [("serial", serial)]
    if without is not None:
        runs.insert(0, ("serial, core round off", without))
    if base is not None:
        runs.insert(0, (f"serial, baseline {args.baseline}", base))
    if dask is not None:
        runs.append((f"dask ({dask['executor']})", dask))
    print(
        "| run | wall s | Benders s | setup s | master s | master s / iteration | "
        "master share | sub rounds s | sum of solves s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in runs:
        if "error" in r:
            print(f"| {name} | {r['error']} | | | | | | | |")
            continue
        print(
            f"| {name} | {r['wall']:.1f} | {r['benders']:.1f} | {r['setup']:.1f} | "
            f"{r['master']:.1f} | {r['master'] / max(r['iterations'], 1):.2f} | "
            f"{r['master'] / r['benders']:.0%} | {r['rounds']:.1f} | {r['solves']:.1f} |"
        )
    if dask is not None:
        report_dask(args, serial, dask)
    report_model(args, serial, dask)
    report_critical_path(args, [r for r in (base, without, serial) if r is not None])
    print(
        f"\npeak RSS: this process {peak_rss_mib():.0f} MiB"
        + (
            f", workers [{', '.join(f'{v:.0f}' for v in worker_rss.values())}] MiB; "
            f"cluster start {start_s:.1f} s (not counted)"
            if dask is not None
            else ""
        )
    )
    print(
        f"load average before {load0[0]:.2f} / after {load1[0]:.2f} (1 min), {os.cpu_count()} cores"
    )
    print(memory_write_text())


def report_dask(args: argparse.Namespace, serial: dict[str, Any], dask: dict[str, Any]) -> None:
    """Ratios, the profile that bounds them, and the CPU seconds of both runs."""
    w = args.workers
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
        f"overhead + imbalance {dask['rounds'] - ideal:.1f} s"
    )
    print(
        "\n| run | load (min / mean / max) | CPU s: this process | CPU s: workers | "
        "cores used by the run | CPU s: other processes | cores used by them |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, r in (("serial", serial), ("dask", dask)):
        ours = r["cpu"] + r["cpu_workers"]
        print(
            f"| {name} | {r['load']} | {r['cpu']:.1f} | {r['cpu_workers']:.1f} | "
            f"{ours / r['wall']:.2f} | {r['cpu_others']:.1f} | {r['cpu_others'] / r['wall']:.2f} |"
        )
    print(
        f"CPU of the run, dask / serial: {(dask['cpu'] + dask['cpu_workers']) / serial['cpu']:.2f}x"
        f"; per solve, dask / serial: {dask['solves'] / serial['solves']:.2f}x "
        f"({os.cpu_count()} cores; other processes: the scheduler's nannies and every other job)"
    )


def report_model(
    args: argparse.Namespace, serial: dict[str, Any], dask: dict[str, Any] | None
) -> None:
    """Amdahl's law on the serial run: its serial part (the Benders time outside the
    subproblem rounds: master, certification, cut assembly) stays, the rounds divide by
    workers x round efficiency (measured on Dask: rounds speed-up / workers; 1 without it)."""
    rounds, total = serial["rounds"], serial["benders"]
    serial_part = total - rounds
    if args.round_efficiency is not None:
        eff, where = args.round_efficiency, "given"
    elif dask is not None:
        eff = serial["rounds"] / max(dask["rounds"], 1e-9) / args.workers
        where = f"measured at {args.workers} workers"
    else:
        eff, where = 1.0, "assumed"
    # A round has M subproblems at most: workers beyond M add nothing.
    predicted = {n: total / (serial_part + rounds / (min(n, args.m) * eff)) for n in (8, 16)}
    print(
        f"\nmodel: serial part {serial_part:.1f} s of {total:.1f} s ({serial_part / total:.0%}; "
        f"master {serial['master'] / total:.0%}); round efficiency {eff:.2f} ({where}); "
        + "; ".join(f"predicted speed-up at {n} workers {v:.2f}x" for n, v in predicted.items())
    )


def report_curve(
    args: argparse.Namespace, serial: dict[str, Any], curve: dict[int, dict[str, Any]]
) -> None:
    """One row per worker count: measured against the serial run, and the critical-path
    model's prediction from the serial run's recorded rounds (``--solve-slowdown``)."""
    print(
        f"\n## Scaling curve ({os.cpu_count()} cores), serial Benders {serial['benders']:.1f} s\n"
    )
    print(
        "| workers | Benders s | speed-up | master share | sub rounds speed-up | per solve / "
        "serial | peak RSS per worker MiB (max) | iterates equal | model s | model speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for w, r in sorted(curve.items()):
        model = (
            critical_path_s(serial, w, 1.0 if w == 1 else args.solve_slowdown)
            if serial.get("round_solves")
            else math.nan
        )
        print(
            f"| {w} | {r['benders']:.1f} | {serial['benders'] / r['benders']:.2f}x | "
            f"{r['master'] / r['benders']:.0%} | "
            f"{serial['rounds'] / max(r['rounds'], 1e-9):.2f}x | "
            f"{r['solves'] / max(serial['solves'], 1e-9):.2f} | "
            f"{max(r['worker_peak_mib'], default=0):.0f} | {r['bounds'] == serial['bounds']} | "
            f"{model:.1f} | {serial['benders'] / model:.2f}x |"
        )


def critical_path_s(r: dict[str, Any], workers: int, slowdown: float) -> float:
    """The Benders time of run ``r`` replayed on ``workers`` workers: the same masters and
    serial remainder (cut assembly, certification, release), each round as long as its busiest
    batch (the dispatcher's split for that many workers) times ``slowdown``, and the core
    round overlapping the first master."""
    batches = r["batches"][str(workers)]
    rounds, masters = r["round_solves"], r["masters"]

    def round_s(times: list[float]) -> float:
        return slowdown * max(sum(times[k] for k in b) for b in batches)

    remainder = r["benders"] - sum(masters) - r["rounds"]
    total = remainder + sum(masters)
    if r["core_round"]:
        total += max(0.0, round_s(rounds[0]) - masters[0])
        rounds = rounds[1:]
    return total + sum(round_s(t) for t in rounds)


def report_critical_path(args: argparse.Namespace, runs: list[dict[str, Any]]) -> None:
    """The critical-path model of each serial run of this tree: predicted Benders seconds and
    speed-up (against that run, and against the first run listed) at 1-16 workers."""
    runs = [r for r in runs if r.get("round_solves")]
    if not runs:
        return
    f = args.solve_slowdown
    print(
        f"\ncritical-path model (rounds as long as their busiest batch x {f:.2f}, the core "
        "round overlapping the first master; recorded solve times of the serial runs):\n"
    )
    print("| serial run | workers | predicted Benders s | speed-up | against the first run |")
    print("|---|---|---|---|---|")
    ref = runs[0]["benders"]
    for r in runs:
        name = r.get("label") or ("core round on" if r["core_round"] else "core round off")
        for w in MODEL_WORKERS:
            t = critical_path_s(r, w, 1.0 if w == 1 else f)
            print(
                f"| {name} ({r['benders']:.1f} s) | {w} | {t:.1f} | {r['benders'] / t:.2f}x | "
                f"{ref / t:.2f}x |"
            )


if __name__ == "__main__":
    main()
