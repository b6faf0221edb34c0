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
(``geo serve --threads W``). ``--processes 1,2,8`` does the same with P server processes
(``geo serve --processes P``: each decodes, checks and solves its own uploads); with both,
one server per pair. Each row also gives the server's CPU seconds per user (all its threads
and processes).

``--client-processes N`` spreads each level's C client threads over N processes of their own
(C/N threads each), so that the clients' JSON encoding does not cap what is measured at one
interpreter's speed: on a machine with spare cores, the server is then what limits users/s.
With ``--py-spy FILE`` the server is sampled while the
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
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
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


def _start_server(
    args: argparse.Namespace, workers: int, processes: int
) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "privopt", "geo", "serve", *_map_args(args), *PARAMS]
    cmd += ["--port", "0", "--max-batch", str(args.max_batch)]
    cmd += ["--batch-window", str(args.batch_window), "--method", args.method, "--quiet"]
    cmd += ["--processes", str(processes)]
    if workers > 1 and args.method in ("auto", "benders"):  # only Benders fans out
        cmd += ["--threads", str(workers)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line:
        raise SystemExit("the server did not start")
    return proc, json.loads(line)["url"]


def _server_processes(server: Any) -> list[Any]:
    """The server's process and its server processes (psutil; not the resource tracker)."""
    kids = [p for p in server.children() if "spawn_main" in " ".join(p.cmdline())]
    return [server, *kids]


def _server_cpu_s(server: Any) -> float:
    return sum(sum(p.cpu_times()[:2]) for p in _server_processes(server))


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


def _sessions(
    client: Any, geo: Any, threads: int, locs: np.ndarray, seed: int
) -> tuple[list[float], dict[str, list[float]], float]:
    """Run one session per entry of ``locs`` from ``threads`` threads; (session seconds, HTTP
    call seconds by route, CPU seconds of this process meanwhile)."""
    client.times.clear()
    durations: list[float] = []
    cpu = time.process_time()

    def one(n: int) -> None:
        t = time.perf_counter()
        rep = client.obfuscate(int(locs[n]), rng=seed + n)
        durations.append(time.perf_counter() - t)
        assert rep.reply.batch.status == "optimal", rep.reply.batch.status

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(len(locs))))
    return durations, {k: list(v) for k, v in client.times.items()}, time.process_time() - cpu


def _client_process(
    url: str, rome: str | None, threads: int, locs: np.ndarray, seed: int, start: Any
) -> tuple[list[float], dict[str, list[float]], float]:
    """One client process's share of a level (its own client, after the shared start)."""
    geo = _geography(argparse.Namespace(rome=rome))
    client = TimedClient(url, geo)
    start.wait()
    return _sessions(client, geo, threads, locs, seed)


def _run_level(
    client: Any, geo: Any, concurrency: int, args: argparse.Namespace, seed: int, server: Any
) -> dict:
    locs = np.random.default_rng(seed).integers(geo.n_locations, size=args.sessions)
    before = client.health()
    cpu = _server_cpu_s(server)
    n_proc = min(args.client_processes, concurrency)
    t0 = time.perf_counter()
    if n_proc <= 1:
        durations, routes, client_cpu = _sessions(client, geo, concurrency, locs, seed)
        wall = time.perf_counter() - t0
    else:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        manager = ctx.Manager()
        start = manager.Event()
        shares = np.array_split(np.arange(args.sessions), n_proc)
        with ProcessPoolExecutor(n_proc, mp_context=ctx) as pool:
            futures = [
                pool.submit(
                    _client_process,
                    client.url,
                    args.rome,
                    max(1, concurrency // n_proc),
                    locs[share],
                    seed + int(share[0]) if share.size else seed,
                    start,
                )
                for share in shares
            ]
            time.sleep(0.5)  # let them start (interpreter, map) before the clock runs
            t0 = time.perf_counter()
            start.set()
            results = [f.result() for f in futures]
            wall = time.perf_counter() - t0
        manager.shutdown()
        durations = [d for r in results for d in r[0]]
        client_cpu = sum(r[2] for r in results)
        routes = {}
        for _, by_route, _ in results:
            for k, v in by_route.items():
                routes.setdefault(k, []).extend(v)
    server_cpu = _server_cpu_s(server) - cpu
    after = client.health()
    solved = after["batches"] - before["batches"]
    sizes = after["batch_sizes"][-solved:] if solved else []
    solve = after["solve_s_total"] - before["solve_s_total"]
    return {
        "wall": wall,
        "sessions": durations,
        "routes": routes,
        "batches": sizes,
        "solve_per_user_ms": 1e3 * solve / args.sessions,
        "server_cpu_per_user_ms": 1e3 * server_cpu / args.sessions,
        "client_cpu_per_user_ms": 1e3 * client_cpu / args.sessions,
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
    ap.add_argument(
        "--processes",
        default="1",
        help="comma list: one server per entry, with that many server processes "
        "(geo serve --processes)",
    )
    ap.add_argument(
        "--client-processes",
        type=int,
        default=1,
        help="processes the C client threads of a level are spread over (default 1: threads "
        "of this process)",
    )
    ap.add_argument("--py-spy", default=None, help="sample each server with py-spy into FILE.W")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    geo = _geography(args)
    rows, server_rss = [], {}
    for workers in (int(x) for x in args.workers.split(",")):
        for processes in (int(x) for x in args.processes.split(",")):
            server_rss[workers, processes] = _run_server(args, geo, workers, processes, rows)
    _baseline(args, geo, 2)  # warm-up: imports and the first HiGHS
    base = {c: _baseline(args, geo, min(c, geo.n_locations)) for _, _, c, _ in rows}
    client_rss = peak_rss_mib()
    rss = ", ".join(f"W={w} P={p}: {v}" for (w, p), v in server_rss.items())
    print(
        f"\nK = {geo.n_locations} ({geo.name}), {args.sessions} sessions per level, "
        f"max_batch {args.max_batch}, window {args.batch_window} s, method {args.method}; "
        f"client processes {args.client_processes}; load average {os.getloadavg()[0]:.1f}; "
        f"peak RSS per server process (largest) {rss} MiB, clients {client_rss:.0f} MiB\n"
    )
    print(
        "| W | P | C | sessions/s | HTTP req/s | /cr p50 / p95 (ms) | /upload p50 / p95 (ms) | "
        "session p95 (ms) | batches (mean size) | solve per user (ms) | "
        "server CPU per user (ms) | client CPU per user (ms) | in-process per user (ms) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for w, p, c, r in rows:
        n = len(r["sessions"])
        cr, up = r["routes"].get("/cr", []), r["routes"].get("/upload", [])
        print(
            f"| {w} | {p} | {c} | {n / r['wall']:.1f} | {(len(cr) + len(up)) / r['wall']:.1f} | "
            f"{_ms(cr, 50)} / {_ms(cr, 95)} | {_ms(up, 50)} / {_ms(up, 95)} | "
            f"{_ms(r['sessions'], 95)} | {len(r['batches'])} ({np.mean(r['batches']):.1f}) | "
            f"{r['solve_per_user_ms']:.1f} | {r['server_cpu_per_user_ms']:.1f} | "
            f"{r['client_cpu_per_user_ms']:.1f} | {1e3 * base[c]:.1f} |"
        )


def _run_server(
    args: argparse.Namespace, geo: Any, workers: int, processes: int, rows: list
) -> str:
    """Start a server of ``workers`` solver threads in each of ``processes`` processes, run
    every level against it (appending (workers, processes, C, result) to ``rows``), stop it;
    the peak RSS of its largest process in MiB."""
    import psutil

    proc, url = _start_server(args, workers, processes)
    spy = None
    try:
        client = TimedClient(url, geo)
        deadline = time.monotonic() + 120
        while len(_server_processes(psutil.Process(proc.pid))) < processes + (processes > 1):
            if time.monotonic() > deadline:
                raise SystemExit("the server processes did not start")
            time.sleep(0.1)
        with ThreadPoolExecutor(2 * processes) as pool:  # warm-up: imports, first HiGHS
            list(pool.map(lambda n: client.obfuscate(n, rng=n), range(2 * processes)))
        if args.py_spy:
            out = f"{args.py_spy}.{workers}.{processes}"
            cmd = ["py-spy", "record", "--pid", str(proc.pid), "--format", "raw", "--threads"]
            cmd += ["--subprocesses"] if processes > 1 else []
            spy = subprocess.Popen([*cmd, "--nonblocking", "-o", out], stdout=subprocess.DEVNULL)
        server = psutil.Process(proc.pid)
        for c in (int(x) for x in args.concurrency.split(",")):
            level = _run_level(client, geo, c, args, args.seed + c, server)
            rows.append((workers, processes, c, level))
        peaks = [peak_rss_mib(p.pid) for p in _server_processes(server)]
        rss = f"{max(peaks):.0f}" if processes == 1 else f"{max(peaks[1:]):.0f}"
    finally:
        if spy is not None:
            spy.send_signal(2)  # SIGINT: py-spy writes its file and exits
            spy.wait(timeout=60)
        proc.terminate()
        proc.wait(timeout=60)
    if spy is not None:
        shares = _profile_shares(out)
        print(json.dumps({"workers": workers, "processes": processes, **shares}), file=sys.stderr)
    return rss


if __name__ == "__main__":
    main()
