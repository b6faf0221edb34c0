"""The LR-Geo server as an HTTP JSON service (``privopt geo serve``, extra ``privopt[server]``).

The server holds the public map, the parameters and its private cost reference table. Clients
talk to it with the JSON messages of :mod:`privopt.geo.messages`:

==============  =========================  ====================================================
route           body                       reply
==============  =========================  ====================================================
``GET /setup``  —                          ``setup``: parameters, map fingerprint, snap table
``POST /cr``    ``cr_request``             ``cr_block`` (:func:`~privopt.geo.answer_cr_request`)
``POST /upload`` ``upload``                ``user_matrix``, once the user's batch is solved
``GET /health`` —                          ``health``: counters of requests and batches
==============  =========================  ====================================================

Uploads are batched: a batch closes when ``max_batch`` uploads wait or ``batch_window_s``
seconds after its first upload, and is solved by **one** CLR-Geo run
(:func:`~privopt.geo.solve_uploads`: one Benders or LP solve for the whole batch) in a solver
thread, while the event loop keeps answering. Uploads arriving meanwhile form the next batch.
A batch whose solve fails is solved again in halves, down to single uploads, so that one
failing upload costs its own user an answer and no one else's.

Every refusal is a JSON ``error`` message with a 4xx status and the server keeps serving:
400 for bad JSON or bad values (the :class:`~privopt.errors.InvalidInput` text, naming the
field), 404/405 for a wrong route or method, 408 for headers or a body that did not arrive in
time, 413 for a body above ``max_body_bytes`` (refused from its Content-Length before it is
read, or as soon as a streamed body exceeds it), 415 for a body that is not JSON, 422 for an
upload that cannot be solved even on its own, 503 when more than ``max_pending`` uploads wait
or ``max_connections`` connections are open. Only a fault of the server itself is a 500.

The framework-free part (:class:`GeoService`, :class:`UploadBatcher`, :func:`read_body`) holds
the logic; the Starlette app (:func:`create_app`) and uvicorn (:func:`serve`, with the
connection limits of :mod:`privopt.geo.http_limits`) only carry bytes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from privopt._validation import check_instance, check_int, check_nonnegative, check_positive
from privopt.errors import InvalidInput, PrivoptError
from privopt.geo.crtable import CostReferenceTable, SnapTable
from privopt.geo.http_counters import ServiceCounters
from privopt.geo.http_limits import limited_protocol, raise_open_file_limit
from privopt.geo.messages import CRRequest, ErrorMessage, Setup, Upload, UserMatrix
from privopt.geo.params import GEO_REL_GAP, GeoParams, check_params
from privopt.geo.server import answer_cr_request, solve_valid_uploads
from privopt.geo.solve import CLR_METHODS

__all__ = [
    "ServiceConfig",
    "GeoService",
    "UploadBatcher",
    "check_content_type",
    "read_body",
    "create_app",
    "uvicorn_server",
    "bind_socket",
    "serve",
]

#: Longest user id a client may choose (characters).
MAX_USER_ID = 200


@dataclass(frozen=True)
class ServiceConfig:
    """Limits and solver settings of the service.

    Attributes
    ----------
    max_batch : most uploads solved together (one CLR-Geo run).
    batch_window_s : seconds a batch stays open after its first upload.
    max_body_bytes : largest request body read (bytes); larger ones get 413.
    max_pending : most uploads waiting for a batch; more get 503.
    header_timeout_s : seconds a connection may wait for a request's complete line and
        headers, from its opening or from the previous response (an idle kept-alive
        connection is closed after as long); late ones are closed (408 when partly sent).
    body_timeout_s : seconds to receive a whole request body once its headers are in; a
        late one gets 408 and the connection is closed.
    max_connections : most connections open at once; one more gets 503 and is closed.
    method, rel_gap, time_limit : the CLR-Geo solver (:func:`~privopt.geo.solve_clr`);
        ``time_limit`` in seconds per batch.
    """

    max_batch: int = 64
    batch_window_s: float = 0.25
    max_body_bytes: int = 32 * 2**20
    max_pending: int = 4096
    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    max_connections: int = 1024
    method: str = "auto"
    rel_gap: float = GEO_REL_GAP
    time_limit: float | None = None

    def __post_init__(self) -> None:
        check_int("max_batch", self.max_batch, minimum=1)
        check_nonnegative("batch_window_s", self.batch_window_s)
        check_int("max_body_bytes", self.max_body_bytes, minimum=1024)
        check_int("max_pending", self.max_pending, minimum=1)
        check_positive("header_timeout_s", self.header_timeout_s)
        check_positive("body_timeout_s", self.body_timeout_s)
        check_int("max_connections", self.max_connections, minimum=1)
        if self.time_limit is not None:
            check_positive("time_limit", self.time_limit)

        check_nonnegative("rel_gap", self.rel_gap)
        if not isinstance(self.method, str) or self.method not in CLR_METHODS:
            raise InvalidInput(f"method must be one of {CLR_METHODS}, got {self.method!r}")


class HTTPError(Exception):
    """A refusal with its HTTP status (the message goes into the JSON error).

    ``close``: end the connection after the reply (the request's body was not read through).
    """

    def __init__(self, status: int, message: str, *, close: bool = False) -> None:
        super().__init__(message)
        self.status, self.close = status, close


class GeoService:
    """What the server knows and does, independent of the web framework.

    Parameters
    ----------
    table : the server's :class:`CostReferenceTable` (its geography is the public map).
    params : the public parameters.
    config : limits and solver settings.
    executor : executor of the Benders subproblems within a batch (serial when None).
    counters : the server's counters, shared by its processes when it runs several (a new
        single-process one when None).
    process : this process's index among the server's processes (0-based).
    """

    def __init__(
        self,
        table: CostReferenceTable,
        params: GeoParams,
        config: ServiceConfig | None = None,
        *,
        executor: Executor | None = None,
        counters: ServiceCounters | None = None,
        process: int = 0,
    ) -> None:
        check_instance("table", table, CostReferenceTable)
        check_params("params", params)
        if config is not None:
            check_instance("config", config, ServiceConfig)
        if executor is not None and not callable(getattr(executor, "submit", None)):
            raise InvalidInput(
                f"executor must have a submit() method, got {type(executor).__name__}"
            )
        counters = ServiceCounters() if counters is None else counters
        check_instance("counters", counters, ServiceCounters)
        check_int("process", process, minimum=0, maximum=counters.processes - 1)
        self.counters, self.process = counters, process
        self.table, self.params = table, params
        self.config = config or ServiceConfig()
        self.executor = executor
        self.geography = table.geography
        snaps = SnapTable.of(table)
        self.setup = Setup(
            params,
            self.geography.fingerprint(),
            snaps.snap,
            snaps.road_km,
            snaps.line_km,
            self.config.max_body_bytes,
        )
        self._setup_json = self.setup.to_json()

    def setup_message(self) -> dict[str, Any]:
        """The ``setup`` message (built once)."""
        return self._setup_json

    def answer_cr(self, body: bytes) -> dict[str, Any]:
        """A ``cr_request`` body → its ``cr_block`` message (raises InvalidInput)."""
        request = CRRequest.from_json(body)  # from_json decodes the text once
        block = answer_cr_request(self.table, request, self.params)
        self.count("cr")
        return block.to_json()

    def parse_upload(self, body: bytes) -> Upload:
        """An ``upload`` body → a validated :class:`Upload` of this map (raises InvalidInput).

        Besides the message's own checks (shapes, symmetry, every value in [0,
        :data:`~privopt.geo.clr.MAX_KM`]), an upload must fit this server: user ids of at most
        :data:`MAX_USER_ID` characters, all the map's columns in order, at most
        ``lr_max_size`` rows, and the map's own distances (:meth:`check_map_distances`).
        """
        up = Upload.from_json(body)  # decoded and checked once; the batch solve trusts it
        k = self.geography.n_locations
        if len(up.user) > MAX_USER_ID:
            raise InvalidInput(f"user must be at most {MAX_USER_ID} characters")
        if up.columns is None or not np.array_equal(up.columns, np.arange(k)):
            raise InvalidInput(f"columns must be all {k} locations of the map, in order")
        limit = self.params.lr_max_size
        if limit is not None and up.pair_distances.shape[0] > limit:
            raise InvalidInput(
                f"an upload has at most lr_max_size = {limit} rows, "
                f"got {up.pair_distances.shape[0]}"
            )
        self.check_map_distances(up)
        return up

    def check_map_distances(self, up: Upload) -> None:
        """Refuse (InvalidInput) an upload whose distances are not the public map's.

        Each LR row is a location of the map, a different one for each row (N_m is a set), so
        its ``column_distances`` row holds 0 at its own column and equals the map's distances
        from there, and ``pair_distances`` are those rows at the rows' own columns (to 1e-9,
        relative or in km). Distances that are not
        (every column far from a row, distinct rows at distance 0) can make the coupled LP
        infeasible for the whole batch. The check locates each row, as anyone holding the
        map can from the distances (the A7 limitation); nothing of it is kept.
        """
        cd = up.column_distances
        rows = np.arange(cd.shape[0])
        own = cd.argmin(axis=1)
        far = np.flatnonzero(cd[rows, own] != 0)
        if far.size:
            raise InvalidInput(
                f"column_distances row {int(far[0])} has no column at distance 0: each row "
                "must be a location of the map"
            )
        # Rows sharing a location: more than the map has locations there (coincident ones).
        shared = np.bincount(own, minlength=cd.shape[1])[own] > (cd == 0).sum(axis=1)
        if shared.any():
            same = np.flatnonzero(own == own[np.argmax(shared)])
            raise InvalidInput(
                f"column_distances rows {int(same[0])} and {int(same[1])} are the same location "
                "of the map: each row must be a different location"
            )
        wrong = ~np.isclose(cd, self.geography.distance_rows(own), rtol=1e-9, atol=1e-9)
        if wrong.any():
            i = int(np.flatnonzero(wrong.any(axis=1))[0])
            raise InvalidInput(
                f"column_distances row {i} is not the map's distances from location "
                f"{int(own[i])} (the column where it is 0)"
            )
        wrong = ~np.isclose(up.pair_distances, cd[:, own], rtol=1e-9, atol=1e-9)
        if wrong.any():
            i, j = (int(x[0]) for x in np.nonzero(wrong))
            raise InvalidInput(
                f"pair_distances[{i}, {j}] is not the map's distance between rows {i} and {j} "
                f"(column_distances[{i}, {int(own[j])}])"
            )

    def solve_batch(self, uploads: list[Upload]) -> list[UserMatrix | Exception]:
        """Solve a batch; for each upload, in order, its reply or the error to answer it with.

        One CLR-Geo run for the whole batch. If it fails, the batch is split in halves and each
        is solved on its own, down to single uploads: with one failing upload among n, about
        2·log2(n) more (smaller) solves; its user gets the error (an :class:`HTTPError` 422 for
        a solver failure) and every other user the matrix of the largest part that solved.
        """
        try:
            return list(self._solve_together(uploads))
        except Exception as exc:  # noqa: BLE001 - whatever failed, the other users are answered
            self.count("failed_solves")
            what = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            if len(uploads) == 1:
                print(f"[geo serve] an upload could not be solved ({what})", file=sys.stderr)
                return [_unsolvable(exc)]
            print(
                f"[geo serve] a batch of {len(uploads)} uploads failed ({what}): "
                "solving its halves apart",
                file=sys.stderr,
            )
            half = len(uploads) // 2
            return self.solve_batch(uploads[:half]) + self.solve_batch(uploads[half:])

    def _solve_together(self, uploads: list[Upload]) -> list[UserMatrix]:
        """One CLR-Geo run of uploads that :meth:`parse_upload` validated (two clients may
        choose the same id: each reply goes by position); each reply gets the batch's number."""
        c = self.config
        start = time.perf_counter()
        replies, _ = solve_valid_uploads(
            uploads,
            self.params,
            method=c.method,
            executor=self.executor,
            rel_gap=c.rel_gap,
            time_limit=c.time_limit,
            progress=False,  # batches follow one another: the log line per batch says enough
        )
        batch = self.counters.record_batch(self.process, len(uploads), time.perf_counter() - start)
        return [
            dataclasses.replace(r, batch=dataclasses.replace(r.batch, id=batch)) for r in replies
        ]

    def count(self, what: str) -> None:
        """Count one event of kind ``what`` (thread-safe; counted for the whole server)."""
        self.counters.count(self.process, what)

    def set_pending(self, pending: int) -> None:
        """Uploads waiting for a batch in this process."""
        self.counters.set_pending(self.process, pending)

    def health(self, pending: int | None = None) -> dict[str, Any]:
        """The ``health`` message of the whole server (every process): request counters,
        batches solved (``batch_users`` uploads in all, the sizes of the latest ones), solve
        seconds, uploads waiting (``pending``: this process's count as it stands now, when
        given)."""
        if pending is not None:
            self.set_pending(pending)
        return {
            "type": "health",
            "n_locations": self.geography.n_locations,
            "processes": self.counters.processes,
            **self.counters.snapshot(),
        }


def _unsolvable(exc: Exception) -> Exception:
    """What a user whose upload failed alone is answered with: 422 for a solver failure (the
    upload passed every check, yet the solver cannot handle it), else the error itself (400
    for InvalidInput, 500 for a fault of the server)."""
    if isinstance(exc, PrivoptError) and not isinstance(exc, InvalidInput):
        text = " ".join(str(exc).split())
        return HTTPError(422, f"this upload could not be solved ({type(exc).__name__}: {text})")
    return exc


class UploadBatcher:
    """Collects uploads into batches and solves one batch at a time in a solver thread.

    A batch starts when the solver is free and either ``max_batch`` uploads wait or the oldest
    has waited ``window_s``. ``solve`` returns, per upload, its reply or the exception its
    waiter raises; ``on_pending``, when given, is told the number of waiting uploads each time
    it changes. Lives on one asyncio event loop.
    """

    def __init__(
        self,
        solve: Callable[[list[Upload]], list[UserMatrix | Exception]],
        *,
        max_batch: int,
        window_s: float,
        max_pending: int,
        on_pending: Callable[[int], None] | None = None,
    ) -> None:
        self._solve = solve
        self._on_pending = on_pending
        self.max_batch, self.window_s, self.max_pending = max_batch, window_s, max_pending
        self._pending: list[tuple[Upload, asyncio.Future[UserMatrix], float]] = []
        self._busy = False
        self._timer: asyncio.TimerHandle | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="privopt-geo-solver")

    @property
    def pending(self) -> int:
        """Number of uploads waiting for the next batch."""
        return len(self._pending)

    async def submit(self, upload: Upload) -> UserMatrix:
        """Queue ``upload`` and wait for its reply (raises its own error, or what the whole
        solve raised)."""
        if len(self._pending) >= self.max_pending:
            raise HTTPError(503, f"{self.max_pending} uploads are waiting; try again later")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[UserMatrix] = loop.create_future()
        self._pending.append((upload, future, loop.time()))
        self._pending_changed()
        self._schedule(loop)
        return await future

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._busy or not self._pending:
            return
        wait = self._pending[0][2] + self.window_s - loop.time()
        if len(self._pending) >= self.max_batch or wait <= 0:
            self._start(loop)
        elif self._timer is None:
            self._timer = loop.call_later(wait, self._on_timer, loop)

    def _on_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        self._schedule(loop)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch = self._pending[: self.max_batch]
        del self._pending[: self.max_batch]
        self._pending_changed()
        self._busy = True
        task = loop.run_in_executor(self._pool, self._solve, [u for u, _, _ in batch])
        task.add_done_callback(lambda t: self._finish(loop, batch, t))

    def _pending_changed(self) -> None:
        if self._on_pending is not None:
            self._on_pending(len(self._pending))

    def _finish(self, loop: asyncio.AbstractEventLoop, batch: list[Any], task: Any) -> None:
        self._busy = False
        exc = task.exception()
        results = [exc] * len(batch) if exc is not None else task.result()
        for (_, future, _), result in zip(batch, results, strict=True):
            if future.done():  # the client went away
                continue
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)
        self._schedule(loop)

    def close(self) -> None:
        """Stop the solver pool; pending batches are cancelled."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def check_content_type(headers: Any) -> None:
    """Refuse (415) a request body that is not plain UTF-8 JSON, before reading it.

    ``headers``: a case-insensitive mapping (Starlette's ``request.headers``).
    """
    value = headers.get("content-type")
    media, *params = (value or "").split(";")
    if media.strip().lower() != "application/json":
        got = "none" if value is None else repr(value[:80])
        raise HTTPError(415, f"Content-Type must be application/json, got {got}", close=True)
    for param in params:
        key, _, charset = param.partition("=")
        if key.strip().lower() == "charset" and charset.strip(' "').lower() not in (
            "utf-8",
            "utf8",
        ):
            raise HTTPError(
                415, f"the JSON must be UTF-8, got charset {charset.strip()!r}", close=True
            )
    encoding = headers.get("content-encoding", "identity").strip().lower()
    if encoding != "identity":
        raise HTTPError(415, f"Content-Encoding {encoding[:40]!r} is not accepted", close=True)


async def read_body(receive_stream: Any, headers: Any, limit: int, timeout_s: float) -> bytes:
    """The request body within ``timeout_s`` seconds.

    Refused with 413 from its Content-Length before reading, or as soon as the streamed bytes
    exceed ``limit``; with 408 when it has not fully arrived after ``timeout_s`` seconds (a
    client that stalls or trickles). Each refusal closes the connection.
    """
    length = headers.get("content-length")
    if length is not None:
        if not (length.isascii() and length.isdigit()):
            raise HTTPError(400, f"bad Content-Length {length[:40]!r}", close=True)
        if int(length) > limit:
            message = f"request body of {int(length)} bytes exceeds {limit} bytes"
            raise HTTPError(413, message, close=True)
    chunks: list[bytes] = []
    size = 0

    async def collect() -> None:
        nonlocal size
        async for chunk in receive_stream:
            size += len(chunk)
            if size > limit:
                raise HTTPError(413, f"request body exceeds {limit} bytes", close=True)
            chunks.append(chunk)

    try:
        await asyncio.wait_for(collect(), timeout_s)
    except asyncio.TimeoutError:
        of = "" if length is None else f" of {int(length)}"
        message = f"the request body did not arrive within {timeout_s:g} s ({size}{of} bytes)"
        raise HTTPError(408, message, close=True) from None
    return b"".join(chunks)


def _error_json(status: int, message: str) -> dict[str, Any]:
    return ErrorMessage(" ".join(message.split()) or "(no message)", status).to_json()


def _classify(exc: BaseException) -> tuple[int, str]:
    """(HTTP status, message) of a failure while serving a request: 4xx for what the client
    did, 500 only for a fault of the server (logged with its traceback)."""
    if isinstance(exc, HTTPError):
        return exc.status, str(exc)
    if isinstance(exc, InvalidInput):
        return 400, str(exc)
    if isinstance(exc, PrivoptError):
        return 500, f"the batch could not be solved ({type(exc).__name__}: {exc})"
    print(f"[geo serve] internal error:\n{traceback.format_exc()}", file=sys.stderr)
    return 500, f"internal error ({type(exc).__name__})"


def create_app(service: GeoService) -> Any:
    """The Starlette application of ``service`` (needs the ``privopt[server]`` extra)."""
    cfg = service.config
    batcher = UploadBatcher(
        service.solve_batch,
        max_batch=cfg.max_batch,
        window_s=cfg.batch_window_s,
        max_pending=cfg.max_pending,
        on_pending=service.set_pending,
    )

    def endpoint(
        handler: Callable[[Request], Awaitable[dict[str, Any]]],
    ) -> Callable[[Request], Awaitable[JSONResponse]]:
        async def wrapped(request: Request) -> JSONResponse:
            try:
                return JSONResponse(await handler(request))
            except Exception as exc:  # noqa: BLE001 - every failure becomes a JSON error
                status, message = _classify(exc)
                service.count("refused" if status < 500 else "failed")
                close = {"connection": "close"} if getattr(exc, "close", False) else None
                body = _error_json(status, message)
                return JSONResponse(body, status_code=status, headers=close)

        return wrapped

    async def body(request: Request) -> bytes:
        check_content_type(request.headers)
        try:
            stream = request.stream()
            return await read_body(stream, request.headers, cfg.max_body_bytes, cfg.body_timeout_s)
        except ClientDisconnect:  # the reply goes nowhere; nothing failed here
            raise HTTPError(400, "the client left before its body was complete") from None

    async def setup(request: Request) -> dict[str, Any]:
        return service.setup_message()

    async def health(request: Request) -> dict[str, Any]:
        return service.health(batcher.pending)

    async def cr(request: Request) -> dict[str, Any]:
        return await run_in_threadpool(service.answer_cr, await body(request))

    async def upload(request: Request) -> dict[str, Any]:
        up = await run_in_threadpool(service.parse_upload, await body(request))
        service.count("upload")
        reply = await batcher.submit(up)
        return await run_in_threadpool(reply.to_json)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        service.count("refused" if status < 500 else "failed")
        return JSONResponse(_error_json(status, str(detail)), status_code=status)

    app = Starlette(
        routes=[
            Route("/setup", endpoint(setup), methods=["GET"]),
            Route("/health", endpoint(health), methods=["GET"]),
            Route("/cr", endpoint(cr), methods=["POST"]),
            Route("/upload", endpoint(upload), methods=["POST"]),
        ],
        exception_handlers={HTTPException: http_error},
    )
    app.state.batcher = batcher
    return app


def bind_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free port, see ``getsockname()``).

    Binding before the server starts lets the caller announce the real port; connections made
    meanwhile wait in the backlog.
    """
    check_int("port", port, minimum=0, maximum=65535)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InvalidInput(f"cannot listen on {host}:{port} ({exc.strerror})") from None
    sock.listen(2048)
    return sock


def uvicorn_server(service: GeoService, *, log_level: str = "warning") -> Any:
    """The ``uvicorn.Server`` of ``service``, not started: the Starlette app behind uvicorn's
    h11 protocol with the connection limits of ``service.config``
    (:mod:`privopt.geo.http_limits`); logs on stderr, no access log. :func:`serve` runs it;
    a test may run it in a thread and stop it with ``should_exit = True``.
    """

    cfg = service.config
    log_config = {
        "version": 1,
        "disable_existing_loggers": False,
        "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr"}},
        "loggers": {"uvicorn": {"handlers": ["stderr"], "level": log_level.upper()}},
    }
    config = uvicorn.Config(
        create_app(service),
        http=limited_protocol(cfg.header_timeout_s, cfg.max_connections),
        log_config=log_config,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        # uvicorn's own idle timer after a response; the header deadline covers the rest.
        timeout_keep_alive=cfg.header_timeout_s,  # type: ignore[arg-type]
    )
    return uvicorn.Server(config)


def serve(service: GeoService, sock: socket.socket, *, log_level: str = "warning") -> None:
    """Serve ``service`` on the listening ``sock`` until SIGINT/SIGTERM (uvicorn, one
    process; see :func:`uvicorn_server`). The process's open-file limit is raised to hold
    ``max_connections`` where the system allows."""
    server = uvicorn_server(service, log_level=log_level)
    raise_open_file_limit(service.config.max_connections)
    try:
        server.run(sockets=[sock])
    finally:
        server.config.app.state.batcher.close()
