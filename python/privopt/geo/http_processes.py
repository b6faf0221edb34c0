"""The LR-Geo service on several server processes (``privopt geo serve --processes P``).

One server process decodes and checks every upload, answers every request and assembles and
releases every batch: work that holds its interpreter's lock and that more solver threads or
Dask workers do not share (the scaling page measures it at over half of a user's server time
on Rome). :func:`serve_processes` therefore runs P whole servers — event loop, batcher, solver
thread, each with its own executor — on **one** listening socket: the kernel hands each new
connection to one of them, each forms and solves batches of the uploads it received, and they
share their counters (:class:`~privopt.geo.http_counters.ServiceCounters`: ``GET /health``
describes the whole server, batch ids are unique across processes) and nothing else. Batches
are independent CLR-Geo solves whichever process forms them; what changes with P is only how
uploads are grouped (each process's batches hold about 1/P of the uploads arriving).

The processes are started by ``multiprocessing``'s spawn context, each receiving the table,
the parameters and the settings once (pickled: 22 MB for Rome's table, milliseconds). This
process supervises them: a server process that stops after it started serving is started
again (logged on stderr); one that stops before it is ready stops the whole server with an
error, as a failure at start would; SIGINT/SIGTERM here stop them all. A server process whose
supervisor disappears (even by SIGKILL) stops itself.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from privopt._validation import check_instance, check_int, check_positive
from privopt.errors import InvalidInput, PrivoptError
from privopt.geo.crtable import CostReferenceTable
from privopt.geo.http_counters import ServiceCounters
from privopt.geo.http_server import GeoService, ServiceConfig, serve
from privopt.geo.params import GeoParams

__all__ = ["serve_processes", "ExecutorFactory"]

#: Opens the executor of one server process's batch solves (a picklable callable returning a
#: context manager, e.g. a ``functools.partial`` of a module-level function); None: serial.
ExecutorFactory = Callable[[], AbstractContextManager[Executor | None]]

#: Seconds a stopping server process gets to finish its requests before it is killed.
STOP_GRACE_S = 30.0


@dataclass(frozen=True)
class _ProcessParts:
    """What each server process receives when it starts (pickled by the spawn context)."""

    table: CostReferenceTable
    params: GeoParams
    config: ServiceConfig
    counters: ServiceCounters
    sock: socket.socket
    executor: ExecutorFactory | None
    log_level: str


class _Stop(BaseException):
    """SIGTERM in a server process: leave its serve loop, then exit 0."""


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop()


def _serve_process(parts: _ProcessParts, index: int, ready: Any) -> None:
    """Body of server process ``index``: one whole service on the shared socket until
    SIGINT/SIGTERM, or until its supervisor is gone."""
    signal.signal(signal.SIGTERM, _raise_stop)
    parent = multiprocessing.parent_process()
    if parent is not None:  # a supervisor killed outright leaves no server behind
        threading.Thread(
            target=_stop_with, args=(parent.sentinel,), name="privopt-geo-supervisor", daemon=True
        ).start()
    try:
        opened = parts.executor() if parts.executor is not None else contextlib.nullcontext()
        with opened as executor:
            service = GeoService(
                parts.table,
                parts.params,
                parts.config,
                executor=executor,
                counters=parts.counters,
                process=index,
            )
            ready.set()
            serve(service, parts.sock, log_level=parts.log_level)
    except (KeyboardInterrupt, _Stop):
        pass  # the normal way to stop


def _stop_with(sentinel: int) -> None:
    """Wait for the supervisor's end, then stop this process as SIGTERM would."""
    wait([sentinel])
    os.kill(os.getpid(), signal.SIGTERM)


def serve_processes(
    table: CostReferenceTable,
    params: GeoParams,
    sock: socket.socket,
    *,
    processes: int,
    config: ServiceConfig | None = None,
    counters: ServiceCounters | None = None,
    executor: ExecutorFactory | None = None,
    log_level: str = "warning",
    ready_timeout_s: float = 120.0,
) -> None:
    """Serve the LR-Geo service from ``processes`` server processes on the listening ``sock``
    until SIGINT/SIGTERM (which raise here, as in any main thread; the processes are stopped
    on the way out).

    Parameters
    ----------
    table, params, config : the service's state (:class:`~privopt.geo.http_server.GeoService`).
        Every limit of ``config`` (connections, waiting uploads, batch size) holds per process.
    sock : a listening socket (:func:`~privopt.geo.http_server.bind_socket`).
    processes : number of server processes (≥ 1).
    counters : the server's counters, shared by its processes (made here when None); one given
        must have been made with ``processes`` rows and ``shared=True``.
    executor : opens each process's executor of its batches' Benders subproblems (None: each
        process solves them in its solver thread).
    ready_timeout_s : seconds a process may take from its start to serving (s).

    Raises
    ------
    InvalidInput
        ``counters`` not shared, or made for another number of processes.
    PrivoptError
        A server process stopped before it was ready, or was not ready in time.
    """
    check_int("processes", processes, minimum=1)
    check_positive("ready_timeout_s", ready_timeout_s)
    counters = ServiceCounters(processes, shared=True) if counters is None else counters
    check_instance("counters", counters, ServiceCounters)
    if counters.processes != processes or not counters.shared:
        # Plain-memory counters would be copied into each process: /health would see none.
        raise InvalidInput(
            f"counters must be ServiceCounters({processes}, shared=True), got "
            f"ServiceCounters({counters.processes}, shared={counters.shared})"
        )
    parts = _ProcessParts(
        table, params, config or ServiceConfig(), counters, sock, executor, log_level
    )
    ctx = multiprocessing.get_context("spawn")
    running: list[Any] = [None] * processes

    def start(index: int) -> None:
        counters.set_pending(index, 0)  # uploads a stopped process held are gone with it
        ready = ctx.Event()
        proc = ctx.Process(
            target=_serve_process,
            args=(parts, index, ready),
            name=f"privopt-geo-server-{index}",
        )
        proc.start()
        running[index] = (proc, ready)

    try:
        for index in range(processes):
            start(index)
        _wait_ready(running, ready_timeout_s)
        print(f"[geo serve] {processes} server processes ready", file=sys.stderr)
        while True:
            by_sentinel = {proc.sentinel: i for i, (proc, _) in enumerate(running)}
            for sentinel in wait(list(by_sentinel)):
                index = by_sentinel[sentinel]
                proc = running[index][0]
                proc.join()
                print(
                    f"[geo serve] server process {index} stopped (exit code {proc.exitcode}); "
                    "starting it again",
                    file=sys.stderr,
                )
                start(index)
                _wait_ready([running[index]], ready_timeout_s)
    finally:
        _stop_all([entry[0] for entry in running if entry is not None])


def _wait_ready(entries: list[Any], timeout_s: float) -> None:
    """Wait until every (process, ready event) of ``entries`` serves; raise if one stops
    first or is not ready within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    for proc, ready in entries:
        while not ready.wait(0.05):
            if not proc.is_alive():
                raise PrivoptError(
                    f"server process {proc.name} stopped before it was ready (exit code "
                    f"{proc.exitcode}); its error is above on stderr"
                )
            if time.monotonic() > deadline:
                raise PrivoptError(f"server process {proc.name} not ready after {timeout_s:g} s")


def _stop_all(procs: list[Any]) -> None:
    """SIGTERM to every live process, then wait; kill one still there after STOP_GRACE_S."""
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            print(f"[geo serve] {proc.name} did not stop in time: killed", file=sys.stderr)
            proc.kill()
            proc.join()
