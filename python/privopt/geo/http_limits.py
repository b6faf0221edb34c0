"""Connection limits of the LR-Geo HTTP service: slow or excess clients cannot hold the server.

uvicorn's h11 protocol arms no timer before a connection's first response: a client that
connects and sends part of its headers, or nothing, holds its connection for as long as it
likes, and uvicorn's ``limit_concurrency`` answers 503 only once a request's headers are
complete. :func:`limited_protocol` returns uvicorn's h11 protocol with three additions:

- **a header deadline**: a request's line and headers must be complete within
  ``header_timeout_s`` seconds of the connection opening or of the previous response (an idle
  kept-alive connection waits for the same deadline). Then the connection is closed, with a
  JSON 408 when part of a request had arrived;
- **a connection limit**: a connection beyond ``max_connections`` open ones gets a JSON 503
  and is closed at once, before anything is read;
- a request h11 cannot parse (bad syntax, a bad Content-Length) gets a JSON 400 naming h11's
  reason, as every other refusal of the service does; so does a request line with headers above
  :data:`MAX_HEAD_BYTES`, however it arrives (h11 itself enforces the limit only on a head that
  is still incomplete, so a longer one sent in one piece would pass).

- **a lingering close**: a connection closed after a reply (413 for a body refused from its
  Content-Length, 408, 503, ``connection: close``) first sends its FIN and reads, discarding,
  for up to :data:`LINGER_S` seconds before the socket is closed. Closing a socket that still
  holds unread input makes the kernel answer with a reset, which can destroy the reply before
  the client reads it: a client still sending a refused 100 MB body saw "connection reset"
  instead of its 413.

A body that stalls is the application's to time out (:func:`~privopt.geo.http_server.read_body`
answers 408). The protocol is h11's whichever parsers are installed, so the limits hold the same
everywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from http import HTTPStatus
from typing import Any

import h11  # the server extra privopt[server]: uvicorn depends on h11
from uvicorn.protocols.http.h11_impl import H11Protocol

try:
    import resource
except ImportError:  # pragma: no cover - not on Windows, whose open-file limit is far higher
    resource = None  # type: ignore[assignment]

__all__ = ["limited_protocol", "raise_open_file_limit", "error_bytes"]

#: File descriptors kept beyond ``max_connections`` (the listening socket, logs, HiGHS, ...).
SPARE_FILES = 64

#: Seconds a closing connection keeps reading (and discarding) after its FIN, so that the
#: client receives the whole reply (see the module docstring).
LINGER_S = 2.0

#: Longest request line plus headers, in bytes: h11's (and uvicorn's) default limit.
MAX_HEAD_BYTES = 16 * 1024


def error_bytes(status: int, message: str) -> bytes:
    """A complete HTTP/1.1 response carrying the JSON ``error`` message, closing the connection
    (written directly to a transport whose request h11 never produced)."""
    body = json.dumps({"type": "error", "error": message, "status": status}).encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def limited_protocol(header_timeout_s: float, max_connections: int) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol class with a header deadline and a connection limit.

    Parameters
    ----------
    header_timeout_s : seconds a connection may wait for a request's complete head.
    max_connections : most connections open at once; more are refused with 503.

    Returns
    -------
    A subclass of ``uvicorn.protocols.http.h11_impl.H11Protocol`` for ``uvicorn.Config(http=)``.
    """
    limits = {
        "header_timeout_s": float(header_timeout_s),
        "max_connections": int(max_connections),
        "idle_state": h11.IDLE,
    }
    return type("LimitedH11Protocol", (_ConnectionLimits, H11Protocol), limits)


class _ConnectionLimits:
    """The additions to uvicorn's ``H11Protocol`` (a mixin: its attributes ``conn``,
    ``transport``, ``loop``, ``connections`` are H11Protocol's)."""

    header_timeout_s: float
    max_connections: int
    idle_state: Any  # h11.IDLE: the peer has not sent a complete request head
    _header_timer: asyncio.TimerHandle | None = None
    conn: Any
    transport: Any
    loop: asyncio.AbstractEventLoop
    connections: set[Any]

    def connection_made(self, transport: Any) -> None:
        lingering = _LingeringTransport(transport, asyncio.get_running_loop(), LINGER_S)
        super().connection_made(lingering)  # type: ignore[misc]
        self.conn = _ReasonKeeper(self.conn)
        if len(self.connections) > self.max_connections:
            n = self.max_connections
            self._refuse(503, f"more than {n} connections are open; try again later")
            return
        self._arm_header_deadline()

    def data_received(self, data: bytes) -> None:
        if self.transport.lingering:  # the reply is sent: what still arrives is discarded
            return
        if self.conn.their_state is self.idle_state and self._head_too_long(data):
            limit = f"{MAX_HEAD_BYTES // 1024} KiB"
            self._refuse(400, f"invalid HTTP request (request line and headers above {limit})")
            return
        super().data_received(data)  # type: ignore[misc]
        if self.conn.their_state is not self.idle_state:  # a request's head is complete
            self._disarm_header_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if self.conn.their_state is self.idle_state:  # waiting for the next request's head
            self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        self.transport.closed()
        super().connection_lost(exc)  # type: ignore[misc]

    def send_400_response(self, msg: str) -> None:
        reason = self.conn.refusal or msg.rstrip(".")
        self._refuse(400, f"invalid HTTP request ({reason})")

    def _head_too_long(self, data: bytes) -> bool:
        """Whether the request head being received, with ``data``, passes MAX_HEAD_BYTES."""
        buffered = self.conn.trailing_data[0]
        if len(buffered) + len(data) <= MAX_HEAD_BYTES:
            return False
        head = bytes(buffered) + data
        return head.find(b"\r\n\r\n", 0, MAX_HEAD_BYTES + 4) < 0

    def _arm_header_deadline(self) -> None:
        self._disarm_header_deadline()
        if not self.transport.is_closing():
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_late)

    def _disarm_header_deadline(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not self.idle_state:
            return
        if self.conn.trailing_data[0]:  # part of a request's head arrived
            late = f"the request's headers did not arrive within {self.header_timeout_s:g} s"
            self._refuse(408, late)
        else:  # an idle connection: closed without a word, as keep-alive ends
            self.transport.close()

    def _refuse(self, status: int, message: str) -> None:
        if not self.transport.is_closing():
            self.transport.write(error_bytes(status, message))
            self.transport.close()


class _ReasonKeeper:
    """An h11 connection that keeps the reason of the error it raises for a request it cannot
    parse (uvicorn replaces it by "Invalid HTTP request received" before answering)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._error = h11.RemoteProtocolError
        self.refusal = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def next_event(self) -> Any:
        try:
            return self._conn.next_event()
        except self._error as exc:
            self.refusal = _reason(exc)
            raise


def _reason(exc: Exception) -> str:
    """h11's reason for refusing a request, without the raw bytes it quotes."""
    text = str(exc).split(": bytearray(")[0].split(": b'")[0].strip().rstrip(".")
    if text.lower().startswith("receive buffer too long"):
        return f"request line and headers above {MAX_HEAD_BYTES // 1024} KiB"
    return text or type(exc).__name__


class _LingeringTransport:
    """A transport whose ``close()`` lingers: FIN first (``write_eof``, after the buffered reply),
    then the socket is closed when the client closes its side or after ``linger_s`` seconds,
    whichever comes first. Everything else is the wrapped transport's."""

    def __init__(self, transport: Any, loop: asyncio.AbstractEventLoop, linger_s: float) -> None:
        self._transport = transport
        self._loop = loop
        self._linger_s = linger_s
        self._timer: asyncio.TimerHandle | None = None
        self.lingering = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self.lingering or bool(self._transport.is_closing())

    def close(self) -> None:
        if self.is_closing():
            return
        if not self._transport.can_write_eof():
            self._transport.close()
            return
        self.lingering = True
        self._transport.write_eof()
        # uvicorn may have paused reading while the refused body arrived
        with contextlib.suppress(RuntimeError, AttributeError):
            self._transport.resume_reading()
        self._timer = self._loop.call_later(self._linger_s, self._transport.close)

    def abort(self) -> None:
        self.closed()
        self._transport.abort()

    def closed(self) -> None:
        """The connection is gone: the linger timer has nothing left to close."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def raise_open_file_limit(max_connections: int) -> None:
    """Raise this process's soft limit of open files to hold ``max_connections`` connections
    plus :data:`SPARE_FILES` (up to the hard limit); a note on stderr when it cannot."""
    if resource is None:  # pragma: no cover - Windows
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max_connections + SPARE_FILES
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if new > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    if new < wanted:
        print(
            f"[geo serve] note: at most {new} open files are allowed, fewer than "
            f"max_connections + {SPARE_FILES} = {wanted}: the system refuses connections beyond",
            file=sys.stderr,
        )
