"""Census at scale (issue 17 item 2): M_H^dp's solver at 10⁶ leaves against the node-by-node
T^dp solver of the previous implementation (same run, same noisy input), the national synthetic
release with tracts and blocks end to end against a TopDown peer (same command), and the tree DP
decomposed by top-level subtree on a Dask LocalCluster against the serial run.

Every measurement runs in a fresh subprocess (``child NAME SPEC``, one JSON line); peak RSS is
the process's high-water mark (VmHWM) and, for the solver, the high-water mark reset just before
it starts (so data generation is not counted). Prints a markdown table per section and the load
average.

Usage: python bench/census_scale.py [--leaves 1000000] [--sections solver,e2e,dask,streamed]
       [--dask-leaves 1000000] [--workers 2] [--epsilon 1] [--baseline REV]
       [--streamed-fanouts '10,1000,1000;100,100,1000'] [--model-fanouts 100,1000,1000]
       [--solve-slowdown 1.2]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness import (
    BENCH,
    memory_write_text,
    package_at,
    peak_rss_mib,
    print_json,
    reset_peak_rss,
    run_json,
    use_package,
)

#: Regular hierarchies (fan-out per level below the root, 100 households per leaf) by leaves.
FANOUTS = {
    10**3: [10, 10, 10],
    10**4: [10, 10, 100],
    10**5: [10, 100, 100],
    10**6: [10, 100, 1000],
    10**7: [10, 1000, 1000],
}


def _measured_hierarchy(fanouts: list[int], epsilon: float, N: int = 20) -> tuple:
    """The regular hierarchy's noisy counts: (hierarchy, noisy (R, N), G, Laplace scale)."""
    import numpy as np
    from privopt.census import measure_counts
    from privopt.census.synthetic import synthetic_hierarchy

    data = synthetic_hierarchy(fanouts, 100 * int(np.prod(fanouts)), N=N, seed=0)
    m = measure_counts(data, epsilon, rng=0)
    return data.hierarchy, m.noisy, data.G, float(m.scale[0])


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


def solver_child(spec: dict[str, Any]) -> dict[str, Any]:
    """M_H^dp's solver alone ("regions": the tree DP by regions; "nodes": the previous
    node-by-node solver); its seconds and its own peak above the data."""
    from privopt.census.solvers import tree_postprocess

    h, noisy, G, lam = _measured_hierarchy(spec["fanouts"], spec["eps"], spec["N"])
    before = reset_peak_rss()
    t = time.perf_counter()
    if spec["method"] == "regions":
        counts, info = tree_postprocess(h, noisy, G, scale=lam)
    else:
        counts, info = node_by_node(h, noisy, G, lam)
    seconds = time.perf_counter() - t
    return {
        "seconds": seconds,
        "solver_peak_mib": peak_rss_mib(),
        "before_mib": before,
        "cost": int(info["cost"]),
        "rounds": info["rounds"],
        "certified": bool(info["certified"]),
        "regions": int(h.n_regions),
        "cells": int(counts.size),
    }


def e2e_child(spec: dict[str, Any]) -> dict[str, Any]:
    """``privopt census ARGV`` in this process: wall seconds, peak RSS, exit status."""
    from privopt.cli import main

    t = time.perf_counter()
    rc = main(spec["argv"])
    return {"seconds": time.perf_counter() - t, "peak_rss_mib": peak_rss_mib(), "exit": rc}


class TimedTask:
    """A task wrapper pickled to the workers (by reference to this module, which the workers
    import from ``bench/``): the task's result and its seconds inside the task."""

    def __init__(self, func: Any) -> None:
        self.func = func

    def __call__(self, *args: Any) -> tuple[Any, float, str]:
        # CPU seconds of the task's thread (the kernels run in it, the GIL released): on busy
        # shared cores a task's wall time also counts the time other processes held its core
        t = time.thread_time()
        out = self.func(*args)
        seconds = time.thread_time() - t
        try:
            from distributed import get_worker

            where = get_worker().address
        except (ImportError, ValueError):  # not on a Dask worker
            where = ""
        return out, seconds, where


def _array_bytes(x: Any) -> int:
    """Bytes of the numpy arrays in ``x`` (nested tuples, lists and plain objects)."""
    import numpy as np

    if isinstance(x, np.ndarray):
        return x.nbytes
    if isinstance(x, (list, tuple)):
        return sum(_array_bytes(y) for y in x)
    if hasattr(x, "__dict__") and type(x).__module__.startswith("privopt"):
        return _array_bytes(list(vars(x).values()))
    return 0


class MapTracer:
    """Records every fan-out of the forest runner: wall seconds, seconds inside each task,
    array bytes sent with the tasks (a batch already on the workers, a future, not counted)
    and sent back; and the bytes placed on the workers once (``scatter``)."""

    def __init__(self, forest: Any, client: Any) -> None:
        self.maps: list[dict[str, Any]] = []
        self.scattered = 0
        self.sends: list[tuple[float, float]] = []  # (start, end) of each scatter
        self._per_job_args = hasattr(forest, "_Batch")  # since 662c932: arguments per job
        self._streamed = hasattr(forest, "split_level")  # results consumed as they arrive
        forest._map = self._map
        scatter = client.scatter

        lock = threading.Lock()  # the runner places batches from several threads at once

        def counted(data: Any, **kw: Any) -> Any:
            size = _array_bytes(data)
            t = time.perf_counter()
            out = scatter(data, **kw)
            with lock:
                self.scattered += size
                self.sends.append((t, time.perf_counter()))
            return out

        client.scatter = counted

    def _map(self, executor: Any, func: Any, jobs: Any) -> Any:
        """The runner's fan-out, timed: this code consumes (position, result) pairs as tasks
        finish (its copies into place run inside the fan-out, overlapping the tasks); the
        previous code takes the list of results in order."""
        if self._streamed:
            return self._streamed_map(executor, func, jobs)
        out = list(self._streamed_map(executor, func, jobs))
        return [result for _, result in sorted(out, key=lambda pair: pair[0])]

    def _streamed_map(self, executor: Any, func: Any, jobs: Any) -> Any:
        from concurrent.futures import as_completed

        t, cpu = time.perf_counter(), time.thread_time()
        futures, sent = {}, 0
        for job in jobs:  # submitted one by one, as the runner does (placing overlaps work)
            sent += _array_bytes(job)
            if self._per_job_args:
                future = executor.submit(TimedTask(func), *job)
            else:  # the code before 662c932: one payload per job
                future = executor.submit(TimedTask(func), job)
            futures[future] = len(futures)
        tasks, back = [], 0
        for future in as_completed(futures):
            result, seconds, where = future.result()
            tasks.append((seconds, where))
            back += _array_bytes(result)
            yield futures[future], result
        self.maps.append(
            {
                "task": func.__name__,
                "wall": time.perf_counter() - t,
                "cpu": time.thread_time() - cpu,
                "tasks": [seconds for seconds, _ in tasks],
                "workers": [where for _, where in tasks],
                "sent": sent,
                "back": back,
            }
        )


def dask_child(spec: dict[str, Any]) -> dict[str, Any]:
    """The tree DP serial, then decomposed on a LocalCluster of worker processes; both times,
    whether the counts are bit-for-bit equal, each worker's peak RSS, and per fan-out (bottom-up,
    top-down) its wall and task seconds and the bytes sent and returned. ``spec["package"]``:
    a package folder (:func:`harness.package_at`) the driver and the workers import instead."""
    preload = []
    if spec.get("package"):
        use_package(spec["package"])
        preload = [_preload_file(spec["package"])]
    import distributed
    import numpy as np
    from privopt.census import forest
    from privopt.census.solvers import tree_postprocess

    h, noisy, G, lam = _measured_hierarchy(spec["fanouts"], spec["eps"])
    t, cpu = time.perf_counter(), time.thread_time()
    serial, info = tree_postprocess(h, noisy, G, scale=lam)
    t_serial, cpu_serial = time.perf_counter() - t, time.thread_time() - cpu
    before = reset_peak_rss()
    with (
        distributed.LocalCluster(
            n_workers=spec["workers"],
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            memory_limit="4GiB",
            preload=preload,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.run(lambda: None)  # workers up
        tracer = MapTracer(forest, client)
        t, cpu = time.perf_counter(), time.thread_time()
        remote, _ = tree_postprocess(
            h, noisy, G, scale=lam, executor=client.get_executor(), n_tasks=spec.get("tasks")
        )
        t_remote, cpu_remote = time.perf_counter() - t, time.thread_time() - cpu
        peaks = client.run(peak_rss_mib)
    in_maps = sum(m["wall"] for m in tracer.maps)
    return {
        "serial": t_serial,
        "serial_cpu": cpu_serial,
        "driver_cpu": cpu_remote - sum(m["cpu"] for m in tracer.maps),
        "dask": t_remote,
        "equal": bool(np.array_equal(serial, remote)),
        "worker_peak_mib": sorted(peaks.values()),
        "driver_peak_mib": peak_rss_mib(),
        "driver_before_mib": before,
        "rounds": info["rounds"],
        "subtrees": _subtrees(forest, h, spec.get("tasks") or 4 * spec["workers"]),
        "driver_s": t_remote - in_maps,
        "scattered_mib": tracer.scattered / 2**20,
        # from the first send's start to the last one's end (sends overlap one another and the
        # bottom-up tasks, inside the fan-outs' wall time)
        "scatter_s": (
            max(e for _, e in tracer.sends) - min(s for s, _ in tracer.sends) if tracer.sends else 0
        ),
        "maps": [
            {
                "task": m["task"].strip("_").replace("_task", ""),
                "wall": m["wall"],
                "n": len(m["tasks"]),
                # the driver's own CPU seconds inside the fan-out: placing batches, taking the
                # returned tables (bottom-up) or copying the returned rows into place (top-down)
                "driver_cpu": m["cpu"],
                "task_sum": sum(m["tasks"]),
                "task_max": max(m["tasks"]),
                "task_s": sorted(m["tasks"]),
                "busiest_worker_s": max(
                    sum(t for t, w in zip(m["tasks"], m["workers"], strict=True) if w == where)
                    for where in set(m["workers"])
                ),
                "sent_mib": m["sent"] / 2**20,
                "back_mib": m["back"] / 2**20,
            }
            for m in tracer.maps
        ],
    }


def _subtrees(forest: Any, h: Any, n_tasks: int) -> int:
    """Subtrees the runner's tasks solve: those at its cut level (this code), else the
    top-level ones."""
    if not hasattr(forest, "split_level"):
        return len(forest.top_level_subtrees(h))
    return int(forest._Split.at(h, forest.split_level(h, n_tasks)).roots.size)


def _preload_file(package: str) -> str:
    """A Dask worker preload script that imports privopt from ``package`` (as the driver)."""
    path = os.path.join(package, "use_this_package.py")
    with open(path, "w") as f:
        f.write(
            f"import sys\nsys.path.insert(0, {str(BENCH)!r})\n"
            f"from harness import use_package\nuse_package({package!r})\n"
        )
    return path


def streamed_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Streamed M_H^dp (generated, measured and solved per top-level subtree) on a
    LocalCluster: seconds, the workers' and the driver's peak RSS, the bytes on disk (spilled
    measurements, released counts). ``spec["package"]``: a package folder
    (:func:`harness.package_at`) the driver and the workers import instead."""
    preload = []
    if spec.get("package"):
        use_package(spec["package"])
        preload = [_preload_file(spec["package"])]
    import distributed
    import numpy as np
    from privopt.census.streamed import RegularSyntheticSource, m_h_dp_streamed

    leaves = int(np.prod(spec["fanouts"]))
    source = RegularSyntheticSource(tuple(spec["fanouts"]), n_groups=100 * leaves, N=20, seed=0)
    with (
        tempfile.TemporaryDirectory() as out,
        distributed.LocalCluster(
            n_workers=spec["workers"],
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            memory_limit="4GiB",
            preload=preload,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.run(lambda: None)
        t = time.perf_counter()
        rel = m_h_dp_streamed(source, spec["eps"], client.get_executor(), out)
        seconds = time.perf_counter() - t
        peaks = client.run(peak_rss_mib)
        spill_mib = sum(f.stat().st_size for f in Path(out, "measurements").iterdir()) / 2**20
        release_mib = sum(f.stat().st_size for f in Path(out).glob("*.npy")) / 2**20
    t = rel.timings
    return {
        "seconds": seconds,
        "worker_peak_mib": max(peaks.values()),
        "driver_peak_mib": peak_rss_mib(),
        "rounds": rel.info["rounds"],
        "certified": rel.info["certified"],
        "regions": rel.info["regions"],
        "l1": rel.l1_per_level.tolist(),
        "subtrees": int(spec["fanouts"][0]),
        "leaves_per_subtree": leaves // int(spec["fanouts"][0]),
        "up_task_s": t["up_task_s"],
        "down_task_s": t["down_task_s"],
        "driver_s": t["driver_s"],
        "spill_mib": spill_mib,
        "release_mib": release_mib,
    }


CHILDREN = {
    "solver": solver_child,
    "e2e": e2e_child,
    "dask": dask_child,
    "streamed": streamed_child,
}


def run_child(name: str, spec: dict[str, Any], timeout: float = 3600) -> dict[str, Any]:
    """One measurement (:data:`CHILDREN`) in a fresh process; ``{"error": ...}`` on failure."""
    return run_json([sys.executable, __file__, "child", name, json.dumps(spec)], timeout=timeout)


def solver_section(args: argparse.Namespace) -> None:
    fanouts = FANOUTS[args.leaves]
    print(f"## M_H^dp solver alone, {args.leaves:,} leaves ({fanouts}), N = 20, ε = {args.epsilon}")
    print(
        "| solver | seconds | process peak RSS MiB | solver's own MiB (peak − before) | rounds "
        "| certified | cost |"
    )
    print("|---|---|---|---|---|---|---|")
    res = {}
    for method in ("regions", "nodes"):
        spec = {"fanouts": fanouts, "N": 20, "eps": args.epsilon, "method": method}
        r = res[method] = run_child("solver", spec)
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
    print("| mechanism | wall s (process) | peak RSS MiB | exit |")
    print("|---|---|---|---|")
    res = {}
    for mech in ("M_H^dp", "TopDown"):
        with tempfile.TemporaryDirectory() as out:
            argv = ["census", "--synthetic-us", "--tracts-per-county", "20"]
            argv += ["--blocks-per-tract", "16", "--mechanism", mech]
            argv += ["--epsilon", str(args.epsilon), "--seed", "0"]
            argv += ["--out", os.path.join(out, "r")]
            t = time.perf_counter()
            r = run_child("e2e", {"argv": argv})
            wall = time.perf_counter() - t  # the whole process: start-up and imports included
        if "error" in r:
            print(f"| {mech} | failed: {r['error'][:80]} | | |", flush=True)
            continue
        res[mech] = (wall, r["peak_rss_mib"])
        print(f"| {mech} | {wall:.1f} | {r['peak_rss_mib']:.0f} | {r['exit']} |", flush=True)
    if "M_H^dp" in res and "TopDown" in res:
        a, b = res["M_H^dp"], res["TopDown"]
        print(
            f"\nRatio M_H^dp / TopDown (same command): wall {a[0] / b[0]:.2f}×, "
            f"peak {a[1] / b[1]:.2f}×\n"
        )


@contextlib.contextmanager
def code_versions(baseline: str | None) -> Iterator[list[tuple[str, str | None]]]:
    """The code versions a section runs, as (label, package folder or None for this tree): the
    ``baseline`` revision's package first (its folder removed afterwards), then this code."""
    codes: list[tuple[str, str | None]] = [("this code", None)]
    if not baseline:
        yield codes
        return
    with tempfile.TemporaryDirectory() as folder:
        yield [(f"baseline {baseline}", str(package_at(baseline, Path(folder)))), *codes]


def dask_section(args: argparse.Namespace) -> None:
    print(
        f"## Tree DP on a Dask LocalCluster ({args.workers} worker processes, 4 GiB each), "
        f"{args.dask_leaves:,} leaves, against the serial run in the same process"
    )
    print(f"\n{memory_write_text()}\n")
    rows = []
    with code_versions(args.baseline) as codes:
        for name, package in codes:
            spec = {
                "fanouts": FANOUTS[args.dask_leaves],
                "eps": args.epsilon,
                "workers": args.workers,
            }
            r = run_child("dask", {**spec, "package": package, "tasks": args.dask_tasks})
            rows.append((name, r))
    print(
        "| code | serial s (CPU s) | Dask s | serial / Dask | bit-for-bit | worker peak RSS MiB "
        "| driver peak MiB | driver s outside fan-outs (CPU s) | placed once MiB (s) "
        "| sent per round MiB "
        "| returned per round MiB | rounds | subtrees |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        if "error" in r:
            print(f"| {name} | failed: {r['error'][:80]} |" + " |" * 11)
            continue
        rounds = max(1, len(r["maps"]) // 2)
        sent = sum(m["sent_mib"] for m in r["maps"]) / rounds
        back = sum(m["back_mib"] for m in r["maps"]) / rounds
        print(
            f"| {name} | {r['serial']:.2f} ({r['serial_cpu']:.2f}) | {r['dask']:.2f} "
            f"| {r['serial'] / r['dask']:.2f} "
            f"| {r['equal']} | {' / '.join(f'{p:.0f}' for p in r['worker_peak_mib'])} "
            f"| {r['driver_peak_mib']:.0f} | {r['driver_s']:.2f} ({r['driver_cpu']:.2f}) "
            f"| {r['scattered_mib']:.0f} ({r['scatter_s']:.2f}) "
            f"| {sent:.1f} | {back:.1f} | {r['rounds']} | {r['subtrees']:,} |"
        )
    print("\nPer fan-out (tasks: batches of subtrees):\n")
    print(
        "| code | fan-out | tasks | wall s | driver CPU s | Σ task CPU s | longest task CPU s "
        "| busiest worker Σ task CPU s | sent MiB | returned MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        for m in r.get("maps", []):
            print(
                f"| {name} | {m['task']} | {m['n']} | {m['wall']:.2f} "
                f"| {m.get('driver_cpu', float('nan')):.2f} | {m['task_sum']:.2f} "
                f"| {m['task_max']:.2f} | {m.get('busiest_worker_s', float('nan')):.2f} "
                f"| {m['sent_mib']:.1f} | {m['back_mib']:.1f} |"
            )
    print("\nCPU seconds of each task, ascending:\n")
    for name, r in rows:
        for m in r.get("maps", []):
            times = " ".join(f"{t:.3f}" for t in m.get("task_s", []))
            print(f"- {name}, {m['task']}: {times}")
    print()


def streamed_section(args: argparse.Namespace) -> None:
    shapes = (
        [[int(f) for f in shape.split(",")] for shape in args.streamed_fanouts.split(";")]
        if args.streamed_fanouts
        else [FANOUTS[args.dask_leaves]]
    )
    print(
        f"## Streamed M_H^dp (generated, measured and solved per top-level subtree) on a Dask "
        f"LocalCluster ({args.workers} worker processes, 4 GiB each)"
    )
    print(
        "| code | fan-outs | leaves | subtrees | regions | seconds (noise, DP, I/O) "
        "| tasks up / down | task s mean / max (up, down) | driver s | worker peak RSS MiB "
        "| driver peak RSS MiB | spilled MiB | released MiB | rounds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    runs = []
    with code_versions(args.baseline) as codes:
        for fanouts, (name, package) in itertools.product(shapes, codes):
            spec = {"fanouts": fanouts, "eps": args.epsilon, "workers": args.workers}
            r = run_child("streamed", {**spec, "package": package})
            if "error" in r:
                print(f"| {name} | {fanouts} | failed: {r['error']} ||||||||||||")
                continue
            if package is None:  # the model is fitted on this code's runs
                runs.append(r)
            up, down = r["up_task_s"], r["down_task_s"]
            print(
                f"| {name} | {fanouts} | {r['subtrees'] * r['leaves_per_subtree']:,} | "
                f"{r['subtrees']} | {r['regions']:,} | {r['seconds']:.1f} | "
                f"{len(up)} / {len(down)} | "
                f"{sum(up) / len(up):.2f} / {max(up):.2f}, {sum(down) / len(down):.2f} / "
                f"{max(down):.2f} | {r['driver_s']:.2f} | {r['worker_peak_mib']:.0f} | "
                f"{r['driver_peak_mib']:.0f} | {r.get('spill_mib', float('nan')):.0f} | "
                f"{r.get('release_mib', float('nan')):.0f} | {r['rounds']} |"
            )
    if runs and args.model_fanouts:
        streamed_model(args, runs, [int(f) for f in args.model_fanouts.split(",")])
    print()


def streamed_model(args: argparse.Namespace, runs: list[dict[str, Any]], target: list[int]) -> None:
    """Predicted seconds and memory per worker for the hierarchy ``target`` on 1-16 workers:
    each phase (bottom-up, top-down; as many of each per subtree as measured) takes
    ceil(k / W) tasks on the busiest worker, a task's seconds are per leaf as measured (mean
    over the runs) times ``--solve-slowdown``, the driver's seconds per subtree as measured;
    the peak RSS per worker is a line in the leaves per subtree (fitted on two shapes, else
    through the measured point and a worker's 196 MiB with privopt loaded)."""
    k = target[0]
    leaves = 1
    for f in target:
        leaves *= f
    s = leaves // k
    per_leaf = {
        phase: sum(
            sum(r[f"{phase}_task_s"]) / (len(r[f"{phase}_task_s"]) * r["leaves_per_subtree"])
            for r in runs
        )
        / len(runs)
        for phase in ("up", "down")
    }
    per_subtree_tasks = {
        phase: sum(len(r[f"{phase}_task_s"]) / r["subtrees"] for r in runs) / len(runs)
        for phase in ("up", "down")
    }
    driver_per_subtree = sum(r["driver_s"] / r["subtrees"] for r in runs) / len(runs)
    pts = sorted({(r["leaves_per_subtree"], r["worker_peak_mib"]) for r in runs})
    if len(pts) >= 2:
        (s0, m0), (s1, m1) = pts[0], pts[-1]
        slope = (m1 - m0) / (s1 - s0)
        base = m0 - slope * s0
    else:
        base = 196.0
        slope = (pts[0][1] - base) / pts[0][0]
    f = args.solve_slowdown
    print(
        f"\nmodel for fan-outs {target} ({leaves:,} leaves, {k} subtrees of {s:,}): task seconds "
        f"per leaf up {per_leaf['up'] * 1e6:.2f} µs, down {per_leaf['down'] * 1e6:.2f} µs "
        f"(x {f:.2f} per task on a loaded machine), tasks per subtree up "
        f"{per_subtree_tasks['up']:.2f}, down {per_subtree_tasks['down']:.2f}, driver "
        f"{driver_per_subtree * 1e3:.1f} ms per subtree; memory per worker {base:.0f} MiB + "
        f"{slope * 1e6:.0f} MiB per 10⁶ leaves of a subtree\n"
    )
    print("| workers | predicted s | predicted peak RSS per worker MiB |")
    print("|---|---|---|")
    for w in (1, 2, 4, 8, 16):
        busiest = -(-k // w)
        t = driver_per_subtree * k + sum(
            busiest * per_subtree_tasks[p] * per_leaf[p] * s * (1.0 if w == 1 else f)
            for p in ("up", "down")
        )
        print(f"| {w} | {t:.1f} | {base + slope * s:.0f} |")


SECTIONS = {
    "solver": solver_section,
    "e2e": e2e_section,
    "dask": dask_section,
    "streamed": streamed_section,
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["child"]:  # child NAME SPEC: one measurement, one JSON line
        print_json(CHILDREN[argv[1]](json.loads(argv[2])))
        return 0
    sizes = [10**5, 10**6, 10**7]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--leaves", type=int, default=10**6, choices=sizes)
    ap.add_argument("--dask-leaves", type=int, default=10**6, choices=sizes)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--dask-tasks",
        type=int,
        default=None,
        help="dask section: batches of subtrees (default: 4 per worker)",
    )
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--sections", default="solver,e2e,dask,streamed")
    ap.add_argument(
        "--streamed-fanouts",
        default=None,
        help="streamed section: hierarchies to run, fan-outs per level separated by ';' "
        "(e.g. '10,1000,1000;100,100,1000'); default the one of --dask-leaves",
    )
    ap.add_argument(
        "--model-fanouts",
        default=None,
        help="streamed section: predict this hierarchy on 1-16 workers (e.g. 100,1000,1000)",
    )
    ap.add_argument(
        "--solve-slowdown",
        type=float,
        default=1.0,
        help="streamed model: a task's seconds on a loaded machine against here",
    )
    ap.add_argument(
        "--baseline",
        default=None,
        help="dask and streamed sections: also run this git revision's Python code",
    )
    args = ap.parse_args(argv)
    unknown = set(args.sections.split(",")) - set(SECTIONS)
    if unknown:
        ap.error(f"--sections: unknown {sorted(unknown)} (choose from {', '.join(SECTIONS)})")
    print(f"# Census at scale (load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)\n")
    for name in args.sections.split(","):
        SECTIONS[name](args)
    print(f"(load average at the end {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
