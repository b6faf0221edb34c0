"""``privopt geo serve`` / ``privopt geo client`` over real HTTP (issue 14 item 10).

One server runs in a subprocess on a free port for the whole module. 50 clients report
concurrently; every returned matrix is checked on its own (Geo-Ind against the map, its rows,
its certificate), each batch is re-solved by the monolithic LP in this process (the two
certificates must bracket each other), and Thm 4.4 is checked across the users of a batch.
Then malformed JSON, a user outside the map, a 100 MB body and other bad requests get 4xx
JSON errors while the server keeps serving.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import privopt
import privopt.perturbation.matrix as matrix_module
import pytest

# Why a skip: the HTTP stack is the optional extra privopt[server]; the test extra installs it,
# so CI always runs this module. It is skipped only in an environment without the extra.
pytest.importorskip("starlette", reason="needs the privopt[server] extra (starlette)")
pytest.importorskip("uvicorn", reason="needs the privopt[server] extra (uvicorn)")

from privopt.errors import InvalidInput
from privopt.geo import grid_geography, solve_uploads, user_problem
from privopt.geo.http_client import GeoServiceClient

# Coupling active (r_exp = 0.5 km, ε = 2 km⁻¹: y* > 0), LR sets of 8, 4-neighbours Geo-Ind.
SERVE = [
    *("--grid", "8x8", "--cell-km", "0.5", "--epsilon", "2", "--gamma", "0.6"),
    *("--gamma-graph", "50", "--lr-radius", "3", "--r-obf", "2", "--r-exp", "0.5"),
    *("--lr-max-size", "8", "--targets", "10", "--max-batch", "20", "--batch-window", "0.5"),
    *("--max-body-mb", "8", "--threads", "2", "--port", "0"),
]
N_CLIENTS = 50


def _geography():
    return grid_geography(8, 8, 0.5, metric="haversine", road_factor=1.2)


@pytest.fixture(scope="module")
def server():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - a file, not a pipe: a full pipe would block it
    proc = subprocess.Popen(
        [sys.executable, "-m", "privopt", "geo", "serve", *SERVE],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=env,
    )
    proc.stderr = log
    try:
        line = proc.stdout.readline()  # the one JSON line, printed once it listens
        if not line:
            log.seek(0)
            pytest.fail(f"the server did not start: {log.read()}")
        info = json.loads(line)
        yield proc, info["url"]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def reports(server):
    _, url = server
    geo = _geography()
    client = GeoServiceClient(url, geo, timeout=120)
    locations = np.random.default_rng(7).choice(geo.n_locations, N_CLIENTS)
    with ThreadPoolExecutor(N_CLIENTS) as pool:
        futures = [
            pool.submit(client.obfuscate, int(loc), rng=1000 + n, user=f"user{n % 7}")
            for n, loc in enumerate(locations)
        ]
        return geo, client, locations, [f.result() for f in futures]


@pytest.mark.slow
def test_fifty_concurrent_clients_get_verified_certified_matrices(reports) -> None:
    geo, client, locations, out = reports
    params = client.params
    prob = user_problem(geo, params)
    d = geo.distance_matrix()
    for loc, rep in zip(locations, out, strict=True):
        pm = rep.matrix
        # Rows are the user's LR set, nearest first: the L nearest locations in d.
        assert loc in pm.row_index and pm.n_records == params.lr_max_size
        assert np.all(np.diff(pm.row_index) > 0)  # sorted: the order does not point at loc
        assert np.all(d[loc, pm.row_index] <= np.sort(d[loc])[params.lr_max_size - 1] + 1e-12)
        # (ε, γ)-Geo-Ind against the map's own edges (not the upload's), stochastic rows.
        assert pm.violations(prob).ok(1e-9)
        assert rep.reply.batch.status == "optimal" and rep.reply.batch.relative_gap <= 1e-6
        assert rep.reply.max_geo_ind_violation <= 1e-9  # the server's check of this user's rows
        assert pm.matrix[0, rep.reported] > 0  # drawn from the true row
        assert rep.upload.user == rep.reply.user  # ids may repeat across clients
    batches: dict[int, list] = {}
    for rep in out:
        batches.setdefault(rep.reply.batch.id, []).append(rep)
    assert sum(len(b) for b in batches.values()) == N_CLIENTS
    assert all(len(b) == b[0].reply.batch.users <= 20 for b in batches.values())
    for reps in batches.values():  # one certificate per batch, one place per user
        assert len({r.reply.batch.objective for r in reps}) == 1
        assert sorted(r.reply.batch.position for r in reps) == list(range(len(reps)))
    for reps in batches.values():
        _check_batch_against_monolithic_lp(reps, params)
        _check_thm44_across_users(reps, d, params)
    health = client.health()
    assert health["requests"]["upload"] >= N_CLIENTS and health["batches"] >= len(batches)


def _check_batch_against_monolithic_lp(reps, params) -> None:
    """The server's batch objective and the monolithic LP's (HiGHS simplex in this process):
    each certified lower bound is below the other solve's objective, and both agree to the
    requested gap."""
    reps = sorted(reps, key=lambda r: r.reply.batch.position)
    uploads = [dataclasses.replace(r.upload, user=str(n)) for n, r in enumerate(reps)]
    _, lp = solve_uploads(uploads, params, method="lp")
    server_obj, server_lb = reps[0].reply.batch.objective, reps[0].reply.batch.lower_bound
    assert lp.status == "optimal"
    assert server_lb <= lp.objective * (1 + 1e-12) and lp.lower_bound <= server_obj * (1 + 1e-12)
    assert abs(server_obj - lp.objective) <= 2e-6 * max(server_obj, lp.objective)
    own = sum(r.reply.objective for r in reps)
    assert own == pytest.approx(server_obj, rel=1e-12)


def _check_thm44_across_users(reps, d, params) -> None:
    """Exponential entries (d > r_exp) are ε/2-Geo-Ind between any rows of any two users of
    one batch (they share y)."""
    eps, r_exp = params.epsilon, params.r_exp
    worst = 0.0
    for a in reps:
        ra, za = a.matrix.row_index, a.matrix.matrix
        for b in reps:
            rb, zb = b.matrix.row_index, b.matrix.matrix
            both = (d[ra] > r_exp)[:, None, :] & (d[rb] > r_exp)[None, :, :]
            bound = np.exp(eps * d[np.ix_(ra, rb)] / 2)[:, :, None] * zb[None, :, :]
            excess = np.where(both, za[:, None, :] - bound * (1 + 1e-9), -np.inf)
            worst = max(worst, float(excess.max(initial=-np.inf)))
    assert worst <= 1e-15
    # The coupling is active here: some mass sits on exponential entries.
    assert any(np.sum(r.matrix.matrix[d[r.matrix.row_index] > r_exp]) > 1e-6 for r in reps)


def _post(url: str, path: str, body: bytes) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"}
    req = urllib.request.Request(url + path, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _post_raw(url: str, path: str, body, **headers) -> tuple[int, dict]:
    """POST with http.client (a body the server may refuse before reading it all)."""
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        try:
            chunked = "Transfer-Encoding" in headers
            headers = {"Content-Type": "application/json", **headers}
            conn.request("POST", path, body=body, headers=headers, encode_chunked=chunked)
        except OSError:  # the server may answer 413 and stop reading mid-body
            pass
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def _is_error(status: int, message: dict, code: int, match: str) -> bool:
    return (
        status == code
        and message["type"] == "error"
        and message["status"] == code
        and match in message["error"]
    )


@pytest.mark.slow
def test_bad_requests_get_4xx_json_and_the_server_keeps_serving(server, reports) -> None:
    proc, url = server
    geo, client, _, _ = reports
    # Malformed JSON, on both POST routes.
    for path in ("/cr", "/upload"):
        assert _is_error(*_post(url, path, b'{"type": "cr_request", '), 400, "malformed JSON")
    # A user outside the map: its CR request names a centre that is not a location.
    state = client.client.start(3, 0)
    bad = dataclasses.replace(state.request, center=geo.n_locations + 5).to_json()
    status, msg = _post(url, "/cr", json.dumps(bad).encode())
    assert _is_error(status, msg, 400, f"center {geo.n_locations + 5} is not a location")
    # ... and the client refuses such a location itself, before anything is sent.
    with pytest.raises(InvalidInput, match="location"):
        client.obfuscate(geo.n_locations)
    # An upload for another map (wrong columns) and one with more rows than L.
    up = client.client.upload(_estimated(client, 3), "x").to_json()
    up["columns"]["shape"] = [3]
    assert _is_error(*_post(url, "/upload", json.dumps(up).encode()), 400, "columns")
    # A 100 MB body: refused from its Content-Length; a streamed one once it passes the limit.
    big = b"x" * (100 * 2**20)
    assert _is_error(*_post_raw(url, "/upload", big), 413, "exceeds")
    chunks = (b"y" * 2**20 for _ in range(12))
    assert _is_error(*_post_raw(url, "/cr", chunks, **{"Transfer-Encoding": "chunked"}), 413, "")
    # Unknown route, wrong method, wrong message type.
    assert _is_error(*_post(url, "/nowhere", b"{}"), 404, "")
    assert _is_error(*_post(url, "/setup", b"{}"), 405, "")
    assert _is_error(*_post(url, "/cr", b'{"type": "upload"}'), 400, "cr_request")
    # Still serving: a full report goes through and the refusals were counted.
    assert proc.poll() is None
    rep = client.obfuscate(11, rng=5)
    assert rep.reply.batch.status == "optimal" and 11 in rep.matrix.row_index
    assert client.health()["requests"]["refused"] >= 9


def _estimated(client: GeoServiceClient, location: int):
    state = client.client.start(location, 0)
    block = client._call("POST", "/cr", state.request.to_json())
    from privopt.geo.messages import CRBlock

    client.client.estimate(state, CRBlock.from_json(block))
    return state


def test_client_refuses_a_server_on_another_map(server) -> None:
    _, url = server
    with pytest.raises(InvalidInput, match="another map"):
        GeoServiceClient(url, grid_geography(8, 9, 0.5, metric="haversine", road_factor=1.2))


@pytest.mark.slow
def test_cli_client_reports_and_saves_its_matrix(server, tmp_path, capsys) -> None:
    _, url = server
    out = tmp_path / "m.npz"
    cmd = [sys.executable, "-m", "privopt", "geo", "client", "--server", url]
    run = subprocess.run(
        [*cmd, "--grid", "8x8", "--location", "20", "--seed", "3", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 1  # stdout carries the result only
    summary = json.loads(lines[0])
    assert summary["batch"]["status"] == "optimal" and 0 <= summary["reported_location"] < 64
    assert "location" not in {k for k in summary if k != "reported_location"}
    from privopt.mdp import PerturbationMatrix

    pm = PerturbationMatrix.load(out)
    assert 20 in pm.row_index and pm.violations(user_problem(_geography(), _params(url))).ok(1e-9)
    # privopt.load reads it as the release it is, which checks its own Geo-Ind pairs.
    loaded = privopt.load(out)
    assert loaded == pm and loaded.kind == "(epsilon, gamma)-Geo-Ind" and loaded.edges is not None
    assert loaded.verify() is loaded and loaded.guarantee.parameters["gamma"] == pm.eta
    # Errors end in one line and exit code 2, before any request: an existing --out, a
    # location outside the map.
    from privopt.cli import main

    args = ["geo", "client", "--server", url, "--grid", "8x8"]
    assert main([*args, "--location", "20", "--out", str(out)]) == 2
    assert main([*args, "--location", "64"]) == 2
    err = capsys.readouterr()
    assert err.out == ""
    lines = err.err.strip().splitlines()
    assert "already exists" in lines[-2] and lines[-1].startswith(
        "privopt geo client: error: location"
    )


def _params(url: str):
    from privopt.geo.messages import Setup

    with urllib.request.urlopen(url + "/setup", timeout=30) as resp:
        return Setup.from_json(json.loads(resp.read())).params


def test_the_client_draws_its_report_with_the_exact_sampler(server, monkeypatch) -> None:
    """The local draw is :func:`privopt.dp.categorical.sample_rows` on the returned matrix's
    true row (integer arithmetic on random bits), not a floating-point inverse CDF."""
    calls = []
    exact = matrix_module.sample_rows

    def recorded(matrix, rows, source):
        out = exact(matrix, rows, source)
        calls.append((matrix, rows.copy(), out.copy()))
        return out

    monkeypatch.setattr(matrix_module, "sample_rows", recorded)
    _, url = server
    rep = GeoServiceClient(url, _geography()).obfuscate(11, rng=7)
    assert len(calls) == 1
    matrix, rows, out = calls[0]
    assert matrix is rep.matrix.matrix
    assert rep.matrix.row_index[rows[0]] == 11 and out[0] == rep.reported


def test_server_stops_cleanly_on_sigterm(server, reports) -> None:
    """Last in the module: SIGTERM ends the server with exit code 0 and one stdout line."""
    proc, _ = server
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert proc.stdout.read() == ""  # nothing after the URL line
    proc.stderr.seek(0)
    assert "stopped" in proc.stderr.read()
