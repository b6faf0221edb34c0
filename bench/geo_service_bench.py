"""Throughput and latency of ``privopt geo serve`` (issue 14 item 10) at K = 1,331.

Starts the server in a subprocess (Rome grid, or a generated 37 × 37 grid of 1,369 cells when
no ``--rome``), then for each concurrency C runs ``--sessions`` client sessions (GET-free: one
``POST /cr`` and one ``POST /upload`` each, the true location drawn uniformly) from C threads
of this process, and prints per route: requests per second, p50/p95 latency (ms), and per
session the end-to-end p95, the batches the server formed, its solve time per user and the peak
RSS of both processes. The baseline in the same command is the in-process exchange
(:func:`privopt.geo.run_lrgeo`, JSON but no HTTP) for the same number of users.

    python bench/geo_service_bench.py --rome ../shared/data/rome
    python bench/geo_service_bench.py --rome ../shared/data/rome --concurrency 1,10,50 \\
        --sessions 100 --max-batch 64 --batch-window 0.25

``--workers 1,2,8`` runs the levels once per server, in one command: 1 is the serial server
(one solver thread), W > 1 a server whose batches' Benders subproblems run on W threads
(``geo serve --threads W``). Each row also gives the server's CPU seconds per user (all its
threads) and its batches' methods. With ``--py-spy FILE`` the server is sampled while the
clients run (py-spy, raw collapsed stacks with thread names, one file per server) and the
share of samples per thread and per stage (HTTP and JSON front, upload checks, model
assembly, HiGHS, the release) is printed to stderr: what one server process does serially.

The clients share this process (and its GIL) with each other, not with the server; on a
loaded 2-core machine they compete with the server for the CPU: the load is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from harness import peak_rss_mib
from privopt.geo.http_client import GeoServiceClient

PARAMS = ["--epsilon", "10", "--gamma-graph", "50"]  # artifact settings: γ = 0.5, L = 20, r_exp = 4


def _map_args(args: argparse.Namespace) -> list[str]:
    return ["--rome", args.rome] if args.rome else ["--grid", "37x37"]


def _geography(args: argparse.Namespace) -> Any:
    from privopt.geo import grid_geography, load_rome_grid

    if args.rome:
        return load_rome_grid(args.rome)
    return grid_geography(37, 37, 0.5, metric="haversine", road_factor=1.2)


def _start_server(args: argparse.Namespace, workers: int) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "privopt", "geo", "serve", *_map_args(args), *PARAMS]
    cmd += ["--port", "0", "--max-batch", str(args.max_batch)]
    cmd += ["--batch-window", str(args.batch_window), "--method", args.method, "--quiet"]
    if workers > 1 and args.method in ("auto", "benders"):  # only Benders fans out
        cmd += ["--threads", str(workers)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line:
        raise SystemExit("the server did not start")
    return proc, json.loads(line)["url"]


class TimedClient(GeoServiceClient):
    """A GeoServiceClient that records the latency of each HTTP call by route."""

    def __init__(self, url: str, geo: Any) -> None:
        self.times: dict[str, list[float]] = {}
        self.lock = threading.Lock()
        super().__init__(url, geo)

    def _call(self, method: str, path: str, message: Any = None) -> Any:
        t = time.perf_counter()
        out = super()._call(method, path, message)
        with self.lock:
            self.times.setdefault(path, []).append(time.perf_counter() - t)
        return out


def _run_level(
    client: Any, geo: Any, concurrency: int, sessions: int, seed: int, server: Any
) -> dict:
    client.times.clear()
    locs = np.random.default_rng(seed).integers(geo.n_locations, size=sessions)
    before = client.health()
    cpu = sum(server.cpu_times()[:2])
    durations: list[float] = []

    def one(n: int) -> None:
        t = time.perf_counter()
        rep = client.obfuscate(int(locs[n]), rng=seed + n)
        durations.append(time.perf_counter() - t)
        assert rep.reply.batch.status == "optimal", rep.reply.batch.status

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(sessions)))
    wall = time.perf_counter() - t0
    server_cpu = sum(server.cpu_times()[:2]) - cpu
    after = client.health()
    sizes = after["batch_sizes"][len(before["batch_sizes"]) :]
    solve = after["solve_s_total"] - before["solve_s_total"]
    return {
        "wall": wall,
        "sessions": durations,
        "routes": {k: list(v) for k, v in client.times.items()},
        "batches": sizes,
        "solve_per_user_ms": 1e3 * solve / sessions,
        "server_cpu_per_user_ms": 1e3 * server_cpu / sessions,
    }


#: Stages of the server's work: the first whose function appears in a sample's stack.
STAGES = [
    ("Benders subproblems (HiGHS, dual bounds)", "_SubSolver.solve"),
    ("batch solve, serial part (assembly, master, release)", "GeoService.solve_batch"),
    ("upload decode and checks", "GeoService.parse_upload"),
    ("CR answers", "GeoService.answer_cr"),
    ("reply encode", "to_json"),
]
#: Innermost frames of a thread that waits (py-spy counts some waits as active).
WAITS = ("Condition.wait", "EpollSelector.select", "Queue.get", "Event.wait")


def _profile_shares(path: str) -> dict[str, Any]:
    """Shares of py-spy's raw samples (``--threads``) per thread kind and per stage (STAGES;
    waits apart; the rest is the HTTP front and the event loop)."""
    threads: dict[str, int] = {}
    stages: dict[str, int] = {}
    total = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            n = int(count)
            total += n
            head, *frames = stack.split(";")
            kind = head.partition("): ")[2].rstrip("0123456789").rstrip("_-") or head
            names = [f.split(" (")[0] for f in frames]
            stage = "HTTP front and event loop"
            if names and names[-1] in WAITS:
                stage = "waiting"
            else:
                for label, key in STAGES:
                    if any(key in f for f in names):
                        stage = label
                        break
            threads[kind] = threads.get(kind, 0) + n
            stages[stage] = stages.get(stage, 0) + n
    total = max(total, 1)

    def shares(counts: dict[str, int]) -> dict[str, float]:
        return {k: round(v / total, 3) for k, v in sorted(counts.items(), key=lambda x: -x[1])}

    return {"samples": total, "threads": shares(threads), "stages": shares(stages)}


def _baseline(args: argparse.Namespace, geo: Any, m: int) -> float:
    """Seconds per user of the in-process exchange (run_lrgeo: JSON, no HTTP), CR table
    excluded, M = m users."""
    from privopt.geo import CostReferenceTable, GeoParams, run_lrgeo

    params = GeoParams(epsilon=10.0, gamma_graph=50.0)
    table = CostReferenceTable(geo, 20, cell_km=params.cr_cell_km, rng=0)
    users = np.random.default_rng(1).choice(geo.n_locations, m, replace=False)
    t = time.perf_counter()
    res = run_lrgeo(geo, params, users, table, method=args.method, rng=0)
    assert res.solution.status == "optimal"
    return (time.perf_counter() - t) / m


def _ms(values: list[float], q: float) -> str:
    return f"{1e3 * float(np.percentile(values, q)):.1f}" if values else "—"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rome", help="Rome grid directory (default: a generated 37x37 grid)")
    ap.add_argument("--concurrency", default="1,10,50", help="comma list of client threads")
    ap.add_argument("--sessions", type=int, default=100, help="client sessions per level")
    ap.add_argument("--max-batch", type=int, default=64)
    ap.add_argument("--batch-window", type=float, default=0.25)
    ap.add_argument("--method", default="auto", choices=["auto", "benders", "rowgen", "lp"])
    ap.add_argument(
        "--workers",
        default="1",
        help="comma list: one server per entry, with that many threads per batch solve "
        "(geo serve --threads; Benders only; 1: the serial server)",
    )
    ap.add_argument("--py-spy", default=None, help="sample each server with py-spy into FILE.W")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    geo = _geography(args)
    rows, server_rss = [], {}
    for workers in (int(x) for x in args.workers.split(",")):
        server_rss[workers] = _run_server(args, geo, workers, rows)
    _baseline(args, geo, 2)  # warm-up: imports and the first HiGHS
    base = {c: _baseline(args, geo, min(c, geo.n_locations)) for _, c, _ in rows}
    client_rss = peak_rss_mib()
    rss = ", ".join(f"{v:.0f}" for v in server_rss.values())
    print(
        f"\nK = {geo.n_locations} ({geo.name}), {args.sessions} sessions per level, "
        f"max_batch {args.max_batch}, window {args.batch_window} s, method {args.method}; "
        f"load average {os.getloadavg()[0]:.1f}; peak RSS server {rss} MiB, "
        f"clients {client_rss:.0f} MiB\n"
    )
    print(
        "| W | C | sessions/s | HTTP req/s | /cr p50 / p95 (ms) | /upload p50 / p95 (ms) | "
        "session p95 (ms) | batches (mean size) | solve per user (ms) | "
        "server CPU per user (ms) | in-process per user (ms) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for w, c, r in rows:
        n = len(r["sessions"])
        cr, up = r["routes"].get("/cr", []), r["routes"].get("/upload", [])
        print(
            f"| {w} | {c} | {n / r['wall']:.1f} | {(len(cr) + len(up)) / r['wall']:.1f} | "
            f"{_ms(cr, 50)} / {_ms(cr, 95)} | {_ms(up, 50)} / {_ms(up, 95)} | "
            f"{_ms(r['sessions'], 95)} | {len(r['batches'])} ({np.mean(r['batches']):.1f}) | "
            f"{r['solve_per_user_ms']:.1f} | {r['server_cpu_per_user_ms']:.1f} | "
            f"{1e3 * base[c]:.1f} |"
        )


def _run_server(args: argparse.Namespace, geo: Any, workers: int, rows: list) -> float:
    """Start a server of ``workers`` solver threads, run every level against it (appending
    (workers, C, result) to ``rows``), stop it; its peak RSS in MiB."""
    import psutil

    proc, url = _start_server(args, workers)
    spy = None
    try:
        client = TimedClient(url, geo)
        client.obfuscate(0, rng=0)  # warm-up (imports, first HiGHS)
        if args.py_spy:
            out = f"{args.py_spy}.{workers}"
            cmd = ["py-spy", "record", "--pid", str(proc.pid), "--format", "raw", "--threads"]
            spy = subprocess.Popen([*cmd, "--nonblocking", "-o", out], stdout=subprocess.DEVNULL)
        server = psutil.Process(proc.pid)
        for c in (int(x) for x in args.concurrency.split(",")):
            rows.append(
                (workers, c, _run_level(client, geo, c, args.sessions, args.seed + c, server))
            )
        rss = peak_rss_mib(proc.pid)
    finally:
        if spy is not None:
            spy.send_signal(2)  # SIGINT: py-spy writes its file and exits
            spy.wait(timeout=60)
        proc.terminate()
        proc.wait(timeout=60)
    if spy is not None:
        print(json.dumps({"workers": workers, **_profile_shares(out)}), file=sys.stderr)
    return rss


if __name__ == "__main__":
    main()
