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


def _start_server(args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "privopt", "geo", "serve", *_map_args(args), *PARAMS]
    cmd += ["--port", "0", "--max-batch", str(args.max_batch)]
    cmd += ["--batch-window", str(args.batch_window), "--method", args.method, "--quiet"]
    if args.workers > 1 and args.method in ("auto", "benders"):  # only Benders fans out
        cmd += ["--threads", str(args.workers)]
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


def _run_level(client: Any, geo: Any, concurrency: int, sessions: int, seed: int) -> dict:
    client.times.clear()
    locs = np.random.default_rng(seed).integers(geo.n_locations, size=sessions)
    before = client.health()
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
    after = client.health()
    sizes = after["batch_sizes"][len(before["batch_sizes"]) :]
    solve = after["solve_s_total"] - before["solve_s_total"]
    return {
        "wall": wall,
        "sessions": durations,
        "routes": {k: list(v) for k, v in client.times.items()},
        "batches": sizes,
        "solve_per_user_ms": 1e3 * solve / sessions,
    }


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
        type=int,
        default=1,
        help="server threads per batch solve (geo serve --threads; Benders only)",
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    geo = _geography(args)
    proc, url = _start_server(args)
    try:
        client = TimedClient(url, geo)
        client.obfuscate(0, rng=0)  # warm-up (imports, first HiGHS)
        rows = []
        for c in (int(x) for x in args.concurrency.split(",")):
            r = _run_level(client, geo, c, args.sessions, args.seed + c)
            rows.append((c, r))
        server_rss = peak_rss_mib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    _baseline(args, geo, 2)  # warm-up: imports and the first HiGHS
    base = {c: _baseline(args, geo, min(c, geo.n_locations)) for c, _ in rows}
    client_rss = peak_rss_mib()
    print(
        f"\nK = {geo.n_locations} ({geo.name}), {args.sessions} sessions per level, "
        f"max_batch {args.max_batch}, window {args.batch_window} s, method {args.method}, "
        f"{args.workers} solver thread(s); "
        f"load average {os.getloadavg()[0]:.1f}; peak RSS server {server_rss:.0f} MiB, "
        f"clients {client_rss:.0f} MiB\n"
    )
    print(
        "| C | sessions/s | HTTP req/s | /cr p50 / p95 (ms) | /upload p50 / p95 (ms) | "
        "session p95 (ms) | batches (mean size) | solve per user (ms) | "
        "in-process per user (ms) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for c, r in rows:
        n = len(r["sessions"])
        cr, up = r["routes"].get("/cr", []), r["routes"].get("/upload", [])
        print(
            f"| {c} | {n / r['wall']:.1f} | {(len(cr) + len(up)) / r['wall']:.1f} | "
            f"{_ms(cr, 50)} / {_ms(cr, 95)} | {_ms(up, 50)} / {_ms(up, 95)} | "
            f"{_ms(r['sessions'], 95)} | {len(r['batches'])} ({np.mean(r['batches']):.1f}) | "
            f"{r['solve_per_user_ms']:.1f} | {1e3 * base[c]:.1f} |"
        )


if __name__ == "__main__":
    main()
