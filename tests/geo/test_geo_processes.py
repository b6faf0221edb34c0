"""The LR-Geo service on several server processes (``geo serve --processes P``): shared
counters, the same matrices as a serial solve, a killed process replaced, nothing left behind."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import psutil
import pytest
from privopt.cli import main
from privopt.errors import InvalidInput
from privopt.geo.http_counters import RECENT_BATCHES, REQUEST_KINDS, ServiceCounters

_SERVE = [
    *("geo", "serve", "--grid", "6x6", "--cell-km", "0.5", "--epsilon", "2", "--gamma", "0.6"),
    *("--gamma-graph", "50", "--lr-radius", "2", "--r-obf", "1.5", "--r-exp", "0.5"),
    *("--lr-max-size", "5", "--targets", "4", "--max-batch", "3", "--batch-window", "0.5"),
    *("--method", "benders", "--port", "0"),
]


def _count_in_child(counters: ServiceCounters, process: int, n: int) -> None:
    for i in range(n):
        counters.count(process, REQUEST_KINDS[i % len(REQUEST_KINDS)])
        counters.record_batch(process, 1 + i % 3, 0.5)
    counters.set_pending(process, process + 1)


@pytest.mark.parametrize("shared", [False, True])
def test_counters_sum_their_processes_rows_and_batch_ids_are_unique(shared: bool) -> None:
    counters = ServiceCounters(3, shared=shared)
    ids = [counters.record_batch(p, 2, 0.25) for _ in range(4) for p in range(3)]
    assert sorted(ids) == list(range(12))  # j·P + p: unique, and dense when all keep pace
    counters.count(1, "upload")
    counters.count(2, "upload")
    counters.count(0, "failed_solves")
    counters.set_pending(2, 5)
    snap = counters.snapshot()
    assert snap["requests"] == {"cr": 0, "upload": 2, "refused": 0, "failed": 0, "failed_solves": 1}
    assert (snap["batches"], snap["batch_users"], snap["pending_uploads"]) == (12, 24, 5)
    assert snap["batch_sizes"] == [2] * 12 and snap["solve_s_total"] == pytest.approx(3.0)


def test_recent_batch_sizes_are_the_latest_in_id_order() -> None:
    counters = ServiceCounters(2, shared=False)
    for j in range(RECENT_BATCHES + 10):
        counters.record_batch(0, j, 0.0)  # ids 0, 2, 4, ...
        if j < 5:
            counters.record_batch(1, 1000 + j, 0.0)  # ids 1, 3, ..., 9
    sizes = counters.snapshot()["batch_sizes"]
    assert len(sizes) == RECENT_BATCHES
    assert sizes[-1] == RECENT_BATCHES + 9 and sizes == sorted(sizes)  # process 1's are older


def test_counters_are_shared_with_spawned_processes_and_survive_a_killed_one() -> None:
    """Two spawned processes count in their rows; the sums are exact. A process killed
    mid-count holds no lock of the others: counting and reading go on."""
    counters = ServiceCounters(3, shared=True)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_count_in_child, args=(counters, p, 500)) for p in (0, 1)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    snap = counters.snapshot()
    assert sum(snap["requests"].values()) == 1000 and snap["batches"] == 1000
    assert snap["batch_users"] == 2 * sum(1 + i % 3 for i in range(500))
    assert snap["pending_uploads"] == 1 + 2
    victim = ctx.Process(target=_count_in_child, args=(counters, 2, 10**9))
    victim.start()
    time.sleep(1.0)
    victim.kill()
    victim.join(30)
    counters.count(0, "cr")  # the killed process held nothing that others wait for
    assert counters.snapshot()["requests"]["cr"] > 500 // len(REQUEST_KINDS)


def test_counters_travel_by_pickle_with_a_fresh_lock_and_refuse_bad_sizes() -> None:
    counters = ServiceCounters(1)
    counters.count(0, "cr")
    copy = pickle.loads(pickle.dumps(counters))
    copy.count(0, "cr")
    assert copy.snapshot()["requests"]["cr"] == 2 and counters.snapshot()["requests"]["cr"] == 1
    with pytest.raises(InvalidInput, match="processes"):
        ServiceCounters(0)


def test_serve_processes_refuses_counters_its_processes_would_not_share() -> None:
    """Plain-memory counters would be copied into each process (``/health`` would count
    nothing); counters for another number of processes would miss rows. Both are refused
    before any process starts."""
    pytest.importorskip("starlette", reason="needs the privopt[server] extra")
    from privopt.geo import CostReferenceTable, GeoParams, grid_geography
    from privopt.geo.http_processes import serve_processes
    from privopt.geo.http_server import bind_socket

    geo = grid_geography(3, 3, 0.5, metric="haversine", road_factor=1.2)
    params = GeoParams(epsilon=2.0, gamma=0.6, lr_radius=2.0, r_obf=1.5, r_exp=0.5)
    table = CostReferenceTable(geo, 2, cell_km=params.cr_cell_km, rng=0)
    with bind_socket() as sock:
        for counters in (ServiceCounters(2, shared=False), ServiceCounters(3)):
            with pytest.raises(InvalidInput, match="counters must be ServiceCounters"):
                serve_processes(table, params, sock, processes=2, counters=counters)


def test_a_service_refuses_a_process_index_outside_its_counters() -> None:
    pytest.importorskip("starlette", reason="needs the privopt[server] extra")
    from privopt.geo import CostReferenceTable, GeoParams, grid_geography
    from privopt.geo.http_server import GeoService

    geo = grid_geography(4, 4, 0.5, metric="haversine", road_factor=1.2)
    params = GeoParams(epsilon=2.0, gamma=0.6, lr_radius=2.0, r_obf=1.5, r_exp=0.5)
    table = CostReferenceTable(geo, 3, cell_km=params.cr_cell_km, rng=0)
    with pytest.raises(InvalidInput, match="process"):
        GeoService(table, params, counters=ServiceCounters(2), process=2)


def _server_processes(pid: int) -> list[psutil.Process]:
    """The spawned server processes of ``geo serve`` ``pid`` (not its resource tracker)."""
    return [p for p in psutil.Process(pid).children() if "spawn_main" in " ".join(p.cmdline())]


def _gone(proc: psutil.Process) -> bool:
    """Whether ``proc`` has ended (a zombie that nobody reaps has ended too)."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_for(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _start_server(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, str, object]:
    log = (tmp_path / "serve.log").open("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "privopt", *_SERVE, *extra],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    line = proc.stdout.readline() if proc.stdout else ""
    assert line, (log.seek(0), log.read())[1]
    return proc, json.loads(line)["url"], log


def _log_text(log) -> str:
    log.flush()
    log.seek(0)
    return log.read()


def test_two_server_processes_answer_like_a_serial_solve_and_replace_a_killed_one(tmp_path):
    """--processes 2: every user's matrix is the serial solve of its batch's uploads; /health
    counts both processes; a server process killed outright is started again and the server
    keeps answering; SIGTERM stops everything with exit code 0."""
    pytest.importorskip("starlette", reason="needs the privopt[server] extra")
    from privopt.geo import grid_geography, solve_uploads
    from privopt.geo.http_client import GeoServiceClient

    proc, url, log = _start_server(tmp_path, "--processes", "2", "--threads", "2")
    try:
        assert _wait_for(lambda: "2 server processes ready" in _log_text(log), 120), _log_text(log)
        geo = grid_geography(6, 6, 0.5, metric="haversine", road_factor=1.2)
        client = GeoServiceClient(url, geo, timeout=120)
        locations = (3, 8, 17, 22, 30, 35)
        with ThreadPoolExecutor(len(locations)) as pool:
            futures = [pool.submit(client.obfuscate, x, rng=x, user=f"u{x}") for x in locations]
            reports = [f.result() for f in futures]
        health = client.health()
        assert health["processes"] == 2 and health["requests"]["upload"] == len(locations)
        assert health["requests"]["cr"] == len(locations)
        assert health["batch_users"] == len(locations) == sum(health["batch_sizes"])
        batches: dict[int, list] = {}
        for rep in reports:
            batches.setdefault(rep.reply.batch.id, []).append(rep)
        assert len(batches) == health["batches"]
        for reps in batches.values():
            reps.sort(key=lambda r: r.reply.batch.position)
            assert [r.reply.batch.position for r in reps] == list(range(len(reps)))
            serial, _ = solve_uploads(
                [r.upload for r in reps], client.params, method="benders", progress=False
            )
            for rep, mine in zip(reps, serial, strict=True):
                np.testing.assert_array_equal(rep.matrix.matrix, mine.matrix)

        servers = _server_processes(proc.pid)
        assert len(servers) == 2
        servers[0].kill()  # SIGKILL (TerminateProcess on Windows): no cleanup runs
        assert _wait_for(lambda: "server process" in _log_text(log), 60)
        assert _wait_for(lambda: _log_text(log).count("starting it again") == 1, 60)
        again = client.obfuscate(12, rng=12, user="after")
        assert again.reply.batch.status == "optimal"
        assert client.health()["requests"]["upload"] == len(locations) + 1
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=90)
        text = _log_text(log)
        log.close()
    assert code == 0, text
    assert "stopped:" in text and "'upload': 7" in text  # the final line sums every process
    assert _wait_for(lambda: all(_gone(p) for p in servers[1:]), 30)


def test_server_processes_stop_when_their_supervisor_is_killed(tmp_path):
    """SIGKILL to `geo serve` (no cleanup can run there) still leaves no server process
    listening: each watches its supervisor."""
    pytest.importorskip("starlette", reason="needs the privopt[server] extra")
    proc, _, log = _start_server(tmp_path, "--processes", "2")
    try:
        assert _wait_for(lambda: "2 server processes ready" in _log_text(log), 120), _log_text(log)
        servers = _server_processes(proc.pid)
        assert len(servers) == 2
    finally:
        proc.kill()
        proc.wait(30)
    assert _wait_for(lambda: all(_gone(p) for p in servers), 60), _log_text(log)
    log.close()


def test_processes_is_a_positive_count(capsys) -> None:
    assert main([*_SERVE, "--processes", "0"]) == 2
    assert "--processes" in capsys.readouterr().err


@pytest.mark.dask
def test_a_server_process_that_fails_at_start_stops_the_server_with_its_reason(tmp_path):
    """An unreachable --scheduler is named before any server process starts; through the API,
    a process whose executor cannot open (no scheduler there) stops before it is ready, and
    serve_processes raises naming it, instead of restarting it for ever or serving on fewer
    processes."""
    pytest.importorskip("starlette", reason="needs the privopt[server] extra")
    pytest.importorskip("distributed")
    import argparse
    import functools
    import socket

    from privopt._cli_support import executor_from_args
    from privopt.errors import PrivoptError
    from privopt.geo import CostReferenceTable, GeoParams, grid_geography
    from privopt.geo.http_processes import serve_processes
    from privopt.geo.http_server import bind_socket

    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        dead = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    argv = [*_SERVE, "--processes", "2", "--scheduler", dead, "--connect-timeout", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "privopt", *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and f"cannot reach the Dask scheduler at {dead}" in done.stderr
    assert done.stdout == ""  # refused before it listened

    geo = grid_geography(4, 4, 0.5, metric="haversine", road_factor=1.2)
    params = GeoParams(epsilon=2.0, gamma=0.6, lr_radius=2.0, r_obf=1.5, r_exp=0.5)
    table = CostReferenceTable(geo, 3, cell_km=params.cr_cell_km, rng=0)
    options = argparse.Namespace(threads=None, scheduler=dead, connect_timeout=1.0, workers=None)
    sock = bind_socket()
    try:
        with pytest.raises(PrivoptError, match=r"server-.* stopped before it was ready"):
            serve_processes(
                table,
                params,
                sock,
                processes=2,
                executor=functools.partial(executor_from_args, options),
            )
    finally:
        sock.close()
