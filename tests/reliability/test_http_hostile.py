"""The LR-Geo HTTP service against hostile clients (``privopt geo serve``).

A real uvicorn server runs in a thread of this process on a free port, with short timeouts.

- ``HOSTILE``: one table of bad requests (deep or huge-number JSON, bad shapes, wrong
  Content-Type, uploads that pass the message checks but not the map's) → the 4xx each gets,
  with a fragment of its JSON error; none is a 500 or logs an internal error.
- Slow clients: connections with unfinished headers are closed within the header timeout, a
  stalled or trickling body gets 408, a truncated body is no internal error, connections
  beyond the limit get 503, and a normal client is answered meanwhile; 300 concurrent clients
  are all served.
- One user's upload that makes the batched solve fail costs only that user its answer.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pytest

# Why a skip: the HTTP stack is the optional extra privopt[server]; the test extra installs it,
# so CI always runs this module. It is skipped only in an environment without the extra.
pytest.importorskip("starlette", reason="needs the privopt[server] extra (starlette)")
pytest.importorskip("uvicorn", reason="needs the privopt[server] extra (uvicorn)")

from privopt.errors import NumericalTrouble
from privopt.geo import CostReferenceTable, GeoParams, grid_geography
from privopt.geo.client import LRGeoClient
from privopt.geo.clr import MAX_KM, geo_ind_edges
from privopt.geo.crtable import SnapTable
from privopt.geo.http_server import (
    GeoService,
    HTTPError,
    ServiceConfig,
    bind_socket,
    uvicorn_server,
)
from privopt.geo.messages import MAX_JSON_DEPTH, UserMatrix
from privopt.geo.server import answer_cr_request
from privopt.perturbation.matrix import verify_matrix

# Coupling active (r_exp = 0.5 km, ε = 2 km⁻¹), LR sets of 6 on a 6 × 6 grid: solves take ms.
PARAMS = GeoParams(
    epsilon=2.0, gamma=0.6, gamma_graph=50.0, lr_radius=3.0, r_obf=2.0, r_exp=0.5, lr_max_size=6
)
HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 1.0
#: Slack on a deadline: the event loop's timers and this test's reads on 2 busy cores.
SLACK_S = 2.0


@dataclass
class Server:
    """A service on a free port, served by uvicorn in a thread."""

    service: GeoService
    port: int
    uvicorn: Any = field(repr=False)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            with contextlib.suppress(OSError):  # a refusal may come before the body is sent
                conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())
        finally:
            conn.close()

    def post_json(self, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        return self.request("POST", path, body, {"Content-Type": "application/json"})

    def connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        return sock


def _service(**limits: Any) -> GeoService:
    geo = grid_geography(6, 6, 0.5, metric="haversine", road_factor=1.2)
    table = CostReferenceTable(geo, 5, cell_km=PARAMS.cr_cell_km, rng=0)
    config = ServiceConfig(
        **{
            "batch_window_s": 0.05,
            "header_timeout_s": HEADER_TIMEOUT_S,
            "body_timeout_s": BODY_TIMEOUT_S,
            **limits,
        }
    )
    return GeoService(table, PARAMS, config)


@contextlib.contextmanager
def running(service: GeoService) -> Iterator[Server]:
    """``service`` served in a thread until the block ends."""
    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn_server(service)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield Server(service, sock.getsockname()[1], server)
    finally:
        server.should_exit = True
        thread.join(30)
        server.config.app.state.batcher.close()
        sock.close()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with running(_service()) as s:
        yield s


# ------------------------------------------------------------------- valid messages to spoil
def _client(service: GeoService) -> LRGeoClient:
    return LRGeoClient(service.geography, PARAMS, SnapTable.of(service.table))


def _cr_request(service: GeoService, location: int = 7) -> dict[str, Any]:
    state = _client(service).start(location, np.random.default_rng(location))
    return state.request.to_json()


def _upload(service: GeoService, location: int = 7, user: str = "u") -> Any:
    """A valid upload of a user at ``location`` (an :class:`Upload`)."""
    client = _client(service)
    state = client.start(location, np.random.default_rng(location))
    client.estimate(state, answer_cr_request(service.table, state.request, PARAMS))
    return client.upload(state, user)


def _array(shape: Any, data: str | None = None, dtype: str = "int64") -> dict[str, Any]:
    if data is None:
        data = base64.b64encode(np.zeros(1, np.int64).tobytes()).decode()
    return {"dtype": dtype, "shape": shape, "data": data}


def _cr_with(service: GeoService, **fields: Any) -> bytes:
    return json.dumps({**_cr_request(service), **fields}).encode()


def _cr_raw(service: GeoService, name: str, text: bytes) -> bytes:
    """A valid CR request with field ``name`` written as the raw JSON ``text``."""
    return _cr_with(service, **{name: "@"}).replace(b'"@"', text)


def _upload_with(service: GeoService, **arrays: Any) -> bytes:
    """A valid upload with some arrays replaced (``np.ndarray``) or fields set (else)."""
    up = _upload(service)
    message = replace(up, **{k: v for k, v in arrays.items() if isinstance(v, np.ndarray)})
    out = message.to_json()
    out.update({k: v for k, v in arrays.items() if not isinstance(v, np.ndarray)})
    return json.dumps(out).encode()


def _spoiled(name: str, change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Any], bytes]:
    def body(service: GeoService) -> bytes:
        up = _upload(service)
        return _upload_with(service, **{name: change(getattr(up, name).copy())})

    return body


def _far_except_own(cd: np.ndarray) -> np.ndarray:
    own = cd.argmin(axis=1)
    out = np.full_like(cd, 1e5)
    out[np.arange(cd.shape[0]), own] = 0.0
    return out


def _set(index: Any, value: float) -> Callable[[np.ndarray], np.ndarray]:
    def change(a: np.ndarray) -> np.ndarray:
        a[index] = value
        return a

    return change


def _zero_off_diagonal(d: np.ndarray) -> np.ndarray:
    return np.zeros_like(d)


def _a_row_twice(service: GeoService) -> bytes:
    """A valid upload whose last row is its first location again (N_m is a set)."""
    up = _upload(service)
    n = up.cost.shape[0]
    rows = [*range(n - 1), 0]
    return _upload_with(
        service,
        pair_distances=up.pair_distances[np.ix_(rows, rows)],
        column_distances=up.column_distances[rows],
        cost=up.cost[rows],
    )


JSON = {"Content-Type": "application/json"}
DEEP = b"[" * 100_000 + b"]" * 100_000

#: (name, method, path, headers, body or body(service), status, fragment of the error).
HOSTILE: list[tuple[str, str, str, dict[str, str], Any, int, str]] = [
    # --- JSON that used to reach a RecursionError or an OverflowError (500)
    ("nested 100,000 deep", "POST", "/cr", JSON, DEEP, 400, "nested more than 32 levels"),
    ("nested deep in an upload", "POST", "/upload", JSON, DEEP, 400, "nested more than"),
    (
        "nested 33 deep inside a valid message",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, extra=json.loads("[" * 32 + "]" * 32)),
        400,
        "nested more than 32",
    ),
    (
        "400-digit radius",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_raw(s, "radius_km", b"9" * 400),
        400,
        "radius_km is an integer of 400 digits",
    ),
    (
        "5,000-digit centre (beyond Python's int limit)",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_raw(s, "center", b"1" + b"0" * 4999),
        400,
        "center is an integer of 5000 digits",
    ),
    (
        "centre 2^70",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, center=2**70),
        400,
        "center is an integer of 22 digits",
    ),
    (
        "radius 1e400",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_raw(s, "radius_km", b"1e400"),
        400,
        "radius_km is 1e400, beyond the float range",
    ),
    ("NaN literal", "POST", "/cr", JSON, b'{"type": "cr_request", "radius_km": NaN}', 400, "NaN"),
    ("-Infinity", "POST", "/cr", JSON, b'{"radius_km": -Infinity}', 400, "-Infinity, which"),
    # --- shapes
    (
        "shape [10**20, 0]",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, rows=_array([10**20, 0], "")),
        400,
        "rows.shape[0] is an integer of 21 digits",
    ),
    (
        "shape [true]",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, rows=_array([True])),
        400,
        "rows.shape[0] must be an int in [0, 50000000], got True",
    ),
    (
        "shape [-1]",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, cols=_array([-1])),
        400,
        "cols.shape[0] must be an int",
    ),
    (
        "shape [1.0]",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, rows=_array([1.0])),
        400,
        "rows.shape[0] must be an int",
    ),
    (
        "shape [10**8] (too many entries)",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, rows=_array([10**8])),
        400,
        "rows.shape[0] must be an int in [0, 50000000]",
    ),
    (
        "shape a string",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, rows=_array("abc")),
        400,
        "rows.shape must be a list",
    ),
    (
        "2-D rows",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, rows=_array([1, 1])),
        400,
        "rows must be 1-dimensional",
    ),
    (
        "data of the wrong length",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, rows=_array([3])),
        400,
        "rows.data holds 12 base64 characters, shape [3] needs 32",
    ),
    (
        "data not base64",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, rows=_array([1], "!!!!!!!!!!!!")),
        400,
        "not valid base64",
    ),
    (
        "dtype float for ids",
        "POST",
        "/cr",
        JSON,
        lambda s: _cr_with(s, rows=_array([1], dtype="float64")),
        400,
        "rows must have dtype int64",
    ),
    ("centre true", "POST", "/cr", JSON, lambda s: _cr_with(s, center=True), 400, "'center'"),
    # --- what is not a JSON message
    ("Content-Type text/plain", "POST", "/cr", {"Content-Type": "text/plain"}, b"{}", 415, "text"),
    ("no Content-Type", "POST", "/upload", {}, b"{}", 415, "got none"),
    (
        "charset latin-1",
        "POST",
        "/cr",
        {"Content-Type": "application/json; charset=latin-1"},
        b"{}",
        415,
        "UTF-8",
    ),
    (
        "gzip body",
        "POST",
        "/cr",
        {**JSON, "Content-Encoding": "gzip"},
        b"\x1f\x8b",
        415,
        "Content-Encoding 'gzip'",
    ),
    ("bytes not UTF-8", "POST", "/cr", JSON, b'{"a": "\xff\xfe"}', 400, "not UTF-8 (byte 7)"),
    ("UTF-16 JSON", "POST", "/cr", JSON, '{"a": 1}'.encode("utf-16"), 400, "not UTF-8"),
    ("empty body", "POST", "/cr", JSON, b"", 400, "malformed JSON"),
    ("truncated JSON", "POST", "/upload", JSON, b'{"type": "upl', 400, "malformed JSON"),
    ("a JSON array", "POST", "/cr", JSON, b"[1, 2]", 400, "must be a JSON object, got list"),
    ("no type", "POST", "/cr", JSON, b"{}", 400, "expected a message of type 'cr_request'"),
    (
        "a 1 MB type",
        "POST",
        "/cr",
        JSON,
        json.dumps({"type": "x" * 2**20}).encode(),
        400,
        "got 'xxxxxxxx",
    ),
    ("Content-Length not a number", "POST", "/cr", {"Content-Length": "1x"}, None, 400, "invalid"),
    (
        "body of 100 MB announced",
        "POST",
        "/cr",
        {**JSON, "Content-Length": "104857600"},
        None,
        413,
        "",
    ),
    ("unknown route", "POST", "/nowhere", JSON, b"{}", 404, ""),
    ("wrong method", "DELETE", "/setup", {}, None, 405, ""),
    # --- uploads that pass the message's checks but would break the batch
    (
        "cost 1e20 km",
        "POST",
        "/upload",
        JSON,
        _spoiled("cost", _set((0, 0), 1e20)),
        400,
        f"cost holds 1e+20 km, above the largest accepted MAX_KM = {MAX_KM:g} km",
    ),
    ("negative cost", "POST", "/upload", JSON, _spoiled("cost", _set((1, 2), -1.0)), 400, ">= 0"),
    (
        "every column far but its own",
        "POST",
        "/upload",
        JSON,
        _spoiled("column_distances", _far_except_own),
        400,
        "column_distances row 0 is not the map's distances from location",
    ),
    (
        "no column at distance 0",
        "POST",
        "/upload",
        JSON,
        _spoiled("column_distances", lambda cd: cd + 0.01),
        400,
        "row 0 has no column at distance 0",
    ),
    (
        "distinct rows at distance 0",
        "POST",
        "/upload",
        JSON,
        _spoiled("pair_distances", _zero_off_diagonal),
        400,
        "pair_distances[0, 1] is not the map's distance",
    ),
    (
        "the same location in two rows",
        "POST",
        "/upload",
        JSON,
        _a_row_twice,
        400,
        "are the same location of the map",
    ),
    (
        "too many rows",
        "POST",
        "/upload",
        JSON,
        lambda s: json.dumps(
            replace(
                _upload(s),
                pair_distances=np.zeros((7, 7)),
                column_distances=np.zeros((7, 36)),
                cost=np.zeros((7, 36)),
            ).to_json()
        ).encode(),
        400,
        "at most lr_max_size = 6 rows",
    ),
    (
        "columns of another map",
        "POST",
        "/upload",
        JSON,
        lambda s: _upload_with(s, columns=_array([1])),
        400,
        "columns must name every column",
    ),
    (
        "a user id of 201 characters",
        "POST",
        "/upload",
        JSON,
        lambda s: _upload_with(s, user="u" * 201),
        400,
        "at most 200",
    ),
    (
        "user not a string",
        "POST",
        "/upload",
        JSON,
        lambda s: _upload_with(s, user=7),
        400,
        "'user'",
    ),
]


@pytest.mark.parametrize(
    "method, path, headers, body, status, fragment",
    [row[1:] for row in HOSTILE],
    ids=[row[0] for row in HOSTILE],
)
def test_hostile_requests_get_4xx_json_errors(
    server: Server, capfd, method, path, headers, body, status, fragment
) -> None:
    payload = body(server.service) if callable(body) else body
    got, message = server.request(method, path, payload, headers)
    assert (got, message["type"], message["status"]) == (status, "error", status), message
    assert fragment in message["error"]
    err = capfd.readouterr().err
    assert "internal error" not in err and "Traceback" not in err


def test_the_table_covers_each_kind_of_mistake() -> None:
    """Every row's status is a client error, and the JSON, shape, header and upload checks
    each have several rows."""
    assert {row[5] for row in HOSTILE} <= {400, 404, 405, 413, 415}
    assert len(HOSTILE) >= 40
    assert MAX_JSON_DEPTH == 32  # the rows above name it


def test_the_server_is_still_serving_after_the_table(server: Server) -> None:
    assert server.request("GET", "/setup")[0] == 200
    status, reply = server.post_json(
        "/upload", json.dumps(_upload(server.service).to_json()).encode()
    )
    assert status == 200 and UserMatrix.from_json(reply).batch.status == "optimal"


# ------------------------------------------------------------------------------ slow clients
def _read_all(sock: socket.socket) -> bytes:
    out = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            out += chunk
    return out


def _open_files_for(connections: int) -> int:
    """How many of ``connections`` slow sockets this process can hold beside the server's."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2 * connections + 256  # both ends live in this process
    if soft != resource.RLIM_INFINITY and soft < want:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return connections if soft == resource.RLIM_INFINITY else min(connections, (soft - 256) // 2)


def test_unfinished_headers_are_closed_within_the_timeout_while_others_are_served() -> None:
    n = _open_files_for(1500)
    with running(_service(max_connections=n + 50)) as s:
        start = time.monotonic()
        slow = []
        for k in range(n):
            sock = s.connect()
            if k % 3:  # two in three send part of a head; the others nothing at all
                sock.sendall(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: appl")
            slow.append(sock)
        t = time.monotonic()
        assert s.request("GET", "/setup")[0] == 200  # a normal client meanwhile
        assert time.monotonic() - t < HEADER_TIMEOUT_S
        replies = [_read_all(sock) for sock in slow]  # each returns when the server closes
        elapsed = time.monotonic() - start
        for sock in slow:
            sock.close()
        assert elapsed < HEADER_TIMEOUT_S + SLACK_S + 0.002 * n  # opening them takes a while
        partial = [r for k, r in enumerate(replies) if k % 3]
        assert all(r.startswith(b"HTTP/1.1 408 ") and b'"status": 408' in r for r in partial)
        assert all(r == b"" for k, r in enumerate(replies) if not k % 3)
        assert s.request("GET", "/health")[0] == 200


def test_a_stalled_or_trickling_body_gets_408_within_the_timeout(server: Server) -> None:
    head = b"POST /cr HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    for trickle in (False, True):
        sock = server.connect()
        start = time.monotonic()
        sock.sendall(head + b"Content-Length: 1000\r\n\r\n0123456789")  # 10 of 1,000 bytes
        while trickle and time.monotonic() - start < BODY_TIMEOUT_S + 0.5:
            with contextlib.suppress(OSError):
                sock.sendall(b" ")  # one byte every 0.2 s: never done before the deadline
            time.sleep(0.2)
        reply = _read_all(sock)  # the server closes after its answer
        sock.close()
        assert reply.startswith(b"HTTP/1.1 408 "), reply[:200]
        assert b"connection: close" in reply.lower()
        assert b"the request body did not arrive within 1 s" in reply
        assert time.monotonic() - start < BODY_TIMEOUT_S + SLACK_S


def test_a_truncated_body_is_no_internal_error(server: Server, capfd) -> None:
    before = server.service.health(0)["requests"]
    head = b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    sock = server.connect()
    sock.sendall(head + b"Content-Length: 1000\r\n\r\n0123456789")
    sock.shutdown(socket.SHUT_WR)  # the client is gone before its body is complete
    assert _read_all(sock) == b""  # nothing to answer to
    sock.close()
    deadline = time.monotonic() + 5
    while server.service.health(0)["requests"]["refused"] == before["refused"]:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    after = server.service.health(0)["requests"]
    assert after["failed"] == before["failed"]
    err = capfd.readouterr().err
    assert "internal error" not in err and "Exception in ASGI" not in err
    assert server.request("GET", "/setup")[0] == 200


def test_a_body_refused_from_its_length_still_reads_its_413(server: Server) -> None:
    """The server closes after a 413 while the client is still sending: without the lingering
    close the unread input makes the kernel reset the connection, and the client lost its
    reply in 12 of 20 tries on a busy machine (0 of 20 with it)."""
    big = b"x" * (server.service.config.max_body_bytes + 8 * 2**20)
    for _ in range(8):
        status, message = server.post_json("/upload", big)
        assert status == 413 and "exceeds" in message["error"]


def test_connections_beyond_the_limit_get_503_and_the_server_recovers() -> None:
    with running(_service(max_connections=20)) as s:
        held = [s.connect() for _ in range(20)]
        time.sleep(0.2)  # let the server accept them
        extra = s.connect()
        reply = _read_all(extra)
        extra.close()
        assert reply.startswith(b"HTTP/1.1 503 "), reply[:200]
        assert b"more than 20 connections are open" in reply
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 5
        while (status := _status_or_none(s)) != 200:
            assert time.monotonic() < deadline, status
            time.sleep(0.05)


def _status_or_none(s: Server) -> int | None:
    try:
        return s.request("GET", "/setup")[0]
    except (OSError, http.client.HTTPException, ValueError):
        return None


def test_three_hundred_concurrent_clients_are_served(server: Server) -> None:
    body = json.dumps(_cr_request(server.service)).encode()

    def one(_: int) -> int:
        return server.post_json("/cr", body)[0]

    with ThreadPoolExecutor(300) as pool:
        statuses = list(pool.map(one, range(300)))
    assert statuses == [200] * 300


# -------------------------------------------------------------------- a failing upload alone
POISON = 123.456  # cost[0, 0] of the upload whose solve is made to fail


def _fail_on_poison(monkeypatch) -> list[int]:
    """Make every CLR-Geo solve that contains the poisoned upload raise NumericalTrouble (as
    HiGHS did on one user's 1e20 km costs); returns the sizes of the solves tried."""
    from privopt.geo import http_server

    real = http_server.solve_valid_uploads
    sizes: list[int] = []

    def solve(uploads, params, **kw):
        sizes.append(len(uploads))
        if any(u.cost[0, 0] == POISON for u in uploads):
            raise NumericalTrouble("HiGHS could not solve the model reliably: Solve error")
        return real(uploads, params, **kw)

    monkeypatch.setattr(http_server, "solve_valid_uploads", solve)
    return sizes


def _poisoned(service: GeoService, location: int) -> Any:
    up = _upload(service, location, "poisoned")
    cost = up.cost.copy()
    cost[0, 0] = POISON
    return replace(up, cost=cost)


def test_a_failing_upload_fails_alone_and_the_rest_of_its_batch_is_answered(monkeypatch) -> None:
    service = _service()
    sizes = _fail_on_poison(monkeypatch)
    uploads = [_upload(service, loc, f"user{loc}") for loc in (0, 7, 14, 21, 28, 35)]
    uploads[4] = _poisoned(service, 28)
    out = service.solve_batch(uploads)
    assert isinstance(out[4], HTTPError) and out[4].status == 422
    assert "this upload could not be solved (NumericalTrouble" in str(out[4])
    for n, (up, reply) in enumerate(zip(uploads, out, strict=True)):
        if n == 4:
            continue
        assert isinstance(reply, UserMatrix) and reply.user == up.user
        edges = geo_ind_edges(up.pair_distances, PARAMS.gamma)
        assert verify_matrix(reply.matrix, edges, PARAMS.epsilon).ok(1e-9)
        assert reply.batch.status == "optimal" and reply.batch.users < len(uploads)
    # Bisection: the batch of 6 fails; [0-2] solves; [3-5] fails; [3] solves; [4, 5] fails;
    # [4] fails alone (its user's 422) and [5] solves.
    assert sizes == [6, 3, 3, 1, 2, 1, 1]
    assert service.health(0)["requests"]["failed_solves"] == 4
    assert [r.batch.users for r in out if isinstance(r, UserMatrix)] == [3, 3, 3, 1, 1]


def test_over_http_a_poisoned_upload_gets_422_and_its_batch_mates_200(monkeypatch) -> None:
    _fail_on_poison(monkeypatch)
    with running(_service(batch_window_s=0.5, max_batch=8)) as s:
        bodies = [json.dumps(_upload(s.service, loc, f"u{loc}").to_json()) for loc in (1, 9, 20)]
        bodies.append(json.dumps(_poisoned(s.service, 30).to_json()))
        with ThreadPoolExecutor(4) as pool:  # one batch: all four wait in the window
            replies = list(pool.map(lambda b: s.post_json("/upload", b.encode()), bodies))
    statuses = [status for status, _ in replies]
    assert statuses == [200, 200, 200, 422], replies[-1]
    assert "NumericalTrouble" in replies[-1][1]["error"]
    for _, reply in replies[:3]:
        um = UserMatrix.from_json(reply)
        assert um.max_geo_ind_violation <= 1e-9 and um.batch.status == "optimal"


def test_serve_options_set_the_limits(capsys) -> None:
    from privopt.cli import build_parser, main
    from privopt.geo.cli import _service

    small = ["--grid", "5x5", "--targets", "4", "--gamma-graph", "50", "--lr-radius", "2"]
    limits = ["--header-timeout", "2.5", "--body-timeout", "7", "--max-connections", "300"]
    args = build_parser().parse_args(["geo", "serve", *small, *limits, "--seed", "1"])
    config = _service(args).config
    assert (config.header_timeout_s, config.body_timeout_s, config.max_connections) == (
        2.5,
        7.0,
        300,
    )
    assert main(["geo", "serve", *small, "--header-timeout", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("privopt geo serve: error: argument --header-timeout: must be")


# ------------------------------------------------------- requests that h11 cannot take as HTTP
HEAD_LIMIT = b"request line and headers above 16 KiB"

#: (name, the request in the pieces it arrives in, fragment of the 400's error).
UNPARSABLE: list[tuple[str, list[bytes], bytes]] = [
    ("request line of one word", [b"GARBAGE\r\n\r\n"], b"illegal request line"),
    (
        "header line without a colon",
        [b"GET /setup HTTP/1.1\r\nHost: x\r\nno-colon\r\n\r\n"],
        b"illegal header line",
    ),
    (
        "Content-Length abc",
        [b"POST /cr HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"],
        b"bad Content-Length",
    ),
    (
        "Content-Length -1",
        [b"POST /cr HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"],
        b"bad Content-Length",
    ),
    (
        "two Content-Lengths",
        [b"POST /cr HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 7\r\n\r\n{}"],
        b"conflicting Content-Length",
    ),
    (
        "headers of 20 KiB in one piece",
        [b"GET /setup HTTP/1.1\r\nX: " + b"a" * 20_000 + b"\r\n\r\n"],
        HEAD_LIMIT,
    ),
    (
        "headers of 20 KiB in two pieces",
        [
            b"GET /setup HTTP/1.1\r\nX: " + b"a" * 10_000 + b"\r\n",
            b"Y: " + b"b" * 10_000 + b"\r\n\r\n",
        ],
        HEAD_LIMIT,
    ),
    (
        "headers of 1 MB",
        [b"GET /setup HTTP/1.1\r\nX: " + b"a" * 1_000_000 + b"\r\n\r\n"],
        HEAD_LIMIT,
    ),
]


@pytest.mark.parametrize(
    ("pieces", "fragment"), [r[1:] for r in UNPARSABLE], ids=[r[0] for r in UNPARSABLE]
)
def test_a_request_that_is_not_http_gets_a_400_naming_why(
    server: Server, capfd, pieces, fragment
) -> None:
    """h11's own reason reaches the client ("invalid HTTP request received" named nothing), and
    the 16 KiB head limit holds however the head arrives (h11 checks only an unfinished one)."""
    with server.connect() as sock:
        with contextlib.suppress(OSError):  # the refusal may come before the last piece
            for piece in pieces:
                sock.sendall(piece)
                time.sleep(0.05)
        reply = _read_all(sock)
    assert reply.startswith(b"HTTP/1.1 400 "), reply[:200]
    message = json.loads(reply.partition(b"\r\n\r\n")[2])
    assert message["type"] == "error" and fragment.decode() in message["error"], message
    assert b"bytearray" not in reply  # h11 quotes the raw bytes; the reply does not
    err = capfd.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
