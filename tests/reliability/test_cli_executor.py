"""``--workers`` / ``--scheduler``: a run on a Dask cluster of worker processes publishes the
serial run's release, also when a worker dies mid-run, and a bad cluster option ends in one
line naming it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import distributed  # in the test extra: a missing install must fail, not skip
import numpy as np
import pytest
from privopt.cli import EXIT_USAGE, main

from .test_faults import kill_inside


@pytest.fixture(scope="module")
def scheduler():
    """The address of a 2-process LocalCluster shared by this module's runs."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address


def _tasks_run(address: str) -> int:
    """The scheduler's count of task state changes so far (it grows as tasks run)."""
    with distributed.Client(address) as client:
        return int(
            client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)
        )


def _points(tmp_path: Path) -> str:
    rng = np.random.default_rng(0)
    path = tmp_path / "p.csv"
    np.savetxt(path, rng.uniform(0, 5, (16, 2)), delimiter=",", header="x,y", comments="")
    return str(path)


def _table(tmp_path: Path) -> str:
    """300 rows: at k = 3 a part needs 8·k·(2k − 1) = 120 rows, so --parts 2 makes 2 parts."""
    rng = np.random.default_rng(1)
    rows = [
        f"{a},{z}" for a, z in zip(rng.integers(18, 90, 300), rng.integers(0, 20, 300), strict=True)
    ]
    path = tmp_path / "t.csv"
    path.write_text("age,zip\n" + "\n".join(rows) + "\n")
    return str(path)


def _npy_points(tmp_path: Path) -> str:
    """1,200 points in 4 blobs, column-major as bench/dpm_scale.py writes them."""
    rng = np.random.default_rng(2)
    centres = rng.uniform(-60, 60, (4, 3))
    path = tmp_path / "p.npy"
    np.save(path, np.asfortranarray(centres[rng.integers(0, 4, 1200)] + rng.normal(size=(1200, 3))))
    return str(path)


_PARTS, _SEED = ("--parts", "2"), ("--seed", "3")
_GEO = [
    *("geo", "--grid", "5x5", "--cell-km", "0.5", "--epsilon", "2", "--gamma", "0.6"),
    *("--gamma-graph", "50", "--lr-radius", "2", "--r-obf", "1.5", "--r-exp", "1"),
    *("--lr-max-size", "5", "-M", "3", "--targets", "4", "--baselines", "none"),
    *("--method", "benders", *_SEED),
]
_DPM = ("--bounds", "-100", "100", "--epsilon", "5", "--delta", "1e-6", *_SEED)


@dataclass(frozen=True)
class Run:
    argv: Callable[[Path], list[str]]  # tmp_path -> the command line of both runs
    results: tuple[str, ...]  # the files that must be the same
    on_cluster: tuple[str, ...] = ()  # options of the Dask run only


RUNS = {
    "mdp benders": Run(
        lambda t: ["mdp", _points(t), "--method", "benders", "--epsilon", "2", "--subsets", "3"],
        ("perturbation_matrix.npz",),
    ),
    "geo benders": Run(lambda t: _GEO, ("user0.npz", "user1.npz", "user2.npz")),
    "kanon split-carry": Run(
        lambda t: ["kanon", _table(t), "--anonymity", "3", "--method", "split-carry", *_PARTS],
        ("anonymized.csv",),
    ),
    "census m-h-dp": Run(
        lambda t: ["census", "--synthetic-us", "--epsilon", "1", "--method", "m-h-dp", *_SEED],
        ("released_counts.csv",),
    ),
    # One task per top-level region, written by the workers into the run's staging folder.
    "census streamed": Run(
        lambda t: ["census", "--streamed-synthetic", "6,4,5", "--max-size", "3", "--epsilon", "1"],
        ("root.npy", *(f"subtree_{i}.npy" for i in range(6))),
    ),
    # The serial run loads the .npy whole; the Dask run reads it in 5 row chunks on the workers.
    "cluster npy": Run(
        lambda t: ["cluster", _npy_points(t), *_DPM],
        ("centres.csv", "labels.csv", "data.npz"),
        ("--chunk-rows", "250"),
    ),
}


def assert_same_files(
    results: tuple[str, ...], serial: Path, dask: Path, rtol: float = 0.0
) -> None:
    """The files are equal; a matrix within ``rtol`` (0: bit for bit)."""
    for name in results:
        if name.startswith("user") or name == "perturbation_matrix.npz":
            a, b = np.load(serial / name), np.load(dask / name)
            np.testing.assert_array_equal(a["output_index"], b["output_index"])
            np.testing.assert_allclose(a["matrix"], b["matrix"], rtol=rtol, atol=rtol * 1e-3)
        else:
            assert (serial / name).read_bytes() == (dask / name).read_bytes(), name


@pytest.mark.dask
@pytest.mark.parametrize("run", list(RUNS.values()), ids=list(RUNS))
def test_a_run_on_a_scheduler_publishes_the_serial_release(run, scheduler, tmp_path):
    args = run.argv(tmp_path)
    assert main([*args, "--out", str(tmp_path / "serial"), "-q"]) == 0
    dask = [*args, *run.on_cluster, "--out", str(tmp_path / "dask"), "-q"]
    before = _tasks_run(scheduler)
    assert main([*dask, "--scheduler", scheduler]) == 0
    assert _tasks_run(scheduler) > before  # the work ran on the cluster
    assert_same_files(run.results, tmp_path / "serial", tmp_path / "dask")


@pytest.mark.dask
def test_workers_start_and_stop_a_local_cluster(tmp_path):
    args = RUNS["kanon split-carry"].argv(tmp_path)
    assert main([*args, "--out", str(tmp_path / "serial"), "-q"]) == 0
    assert main([*args, "--out", str(tmp_path / "dask"), "-q", "--workers", "2"]) == 0
    table = "anonymized.csv"
    assert (tmp_path / "serial" / table).read_bytes() == (tmp_path / "dask" / table).read_bytes()


def test_a_table_too_small_for_its_parts_says_so(tmp_path, capsys):
    """120 rows at k = 3 hold one part of 8·k·(2k − 1) = 120 rows: the run asked to fan out
    solves it whole, here, and says why on stderr."""
    table = tmp_path / "t.csv"
    table.write_text("\n".join(Path(_table(tmp_path)).read_text().splitlines()[:121]) + "\n")
    argv = ["kanon", str(table), "--anonymity", "3", "--method", "split-carry", "--threads", "2"]
    assert main([*argv, "--out", str(tmp_path / "o"), "-q"]) == 0
    assert (
        "note: --threads 2 asked for more parts than the table holds: a part needs at least "
        "8·k·(2k − 1) = 120 rows, so it was solved in 1 part, in this process"
    ) in capsys.readouterr().err


#: (run, the function that runs only inside tasks and kills its worker on its 3rd call)
KILLS = {
    # One batch of subproblems per worker: the victim's 3rd solve is in the second round.
    "mdp benders": ("mdp benders", "privopt.lp.benders.subproblems", "_solve_by"),
    # One call per row chunk and tree level: the 3rd is in the first level pass.
    "cluster npy": ("cluster npy", "privopt.cluster._chunks", "chunk_level_step"),
    # Every task of a region reads or builds its data first: 6 regions, 12 tasks on 2 workers.
    "census streamed": ("census streamed", "privopt.census.streamed", "_subtree_job"),
}


@pytest.mark.dask
@pytest.mark.parametrize(("run", "module", "function"), list(KILLS.values()), ids=list(KILLS))
def test_a_worker_killed_mid_run_is_retried(run, module, function, scheduler, tmp_path):
    """The command line hands the API a Dask client's executor, so a task lost with its worker
    is run again (the API's retries, or Dask's own), and the release is the serial one: bit for
    bit for DPM and the streamed census (a rerun region reads its spilled measurements, or
    draws them again from the same seed); for Benders up to rounding, as the rerun subproblems
    start from a cold solver (tests/reliability/test_faults.py holds the API to the same
    tolerance)."""
    spec = RUNS[run]
    args = spec.argv(tmp_path)
    assert main([*args, "--out", str(tmp_path / "serial"), "-q"]) == 0
    with distributed.Client(scheduler) as client:
        client.wait_for_workers(2, timeout=60)  # the previous victim is back
        before = set(client.scheduler_info()["workers"])
        kill_inside(client, module, function, 3)
        dask = [*args, *spec.on_cluster, "--out", str(tmp_path / "dask"), "-q"]
        assert main([*dask, "--scheduler", scheduler]) == 0
        client.wait_for_workers(2, timeout=60)
        assert set(client.scheduler_info()["workers"]) != before  # a worker did die
    assert_same_files(spec.results, tmp_path / "serial", tmp_path / "dask", rtol=1e-9)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("extra", "code", "fragment"),
    [
        (["--workers", "0"], EXIT_USAGE, "argument --workers: must be an integer >= 1"),
        (
            ["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"],
            EXIT_USAGE,
            "argument --scheduler: not allowed with argument --workers",
        ),
        (
            ["--scheduler", "tcp://127.0.0.1:PORT", "--connect-timeout", "0.5"],
            1,
            "cannot reach the Dask scheduler at tcp://127.0.0.1:PORT within 0.5 s",
        ),
    ],
    ids=["zero workers", "workers and scheduler", "unreachable scheduler"],
)
def test_a_bad_cluster_option_is_one_line(extra, code, fragment, tmp_path, capsys):
    port = str(_closed_port())
    extra = [e.replace("PORT", port) for e in extra]
    argv = ["mdp", _points(tmp_path), "--method", "benders", "--epsilon", "2", *extra]
    assert main([*argv, "--out", str(tmp_path / "o"), "-q"]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("privopt mdp: error: ")
    assert fragment.replace("PORT", port) in err[-1]
    assert not (tmp_path / "o").exists()


@pytest.mark.dask
def test_cluster_progress_shows_the_passes_on_the_cluster(scheduler, tmp_path, capsys):
    """--progress on: bars of the tree's levels and of the label batches, on stderr only."""
    argv = ["cluster", _npy_points(tmp_path), *_DPM, "--chunk-rows", "300", "--progress", "on"]
    assert main([*argv, "--scheduler", scheduler, "--out", str(tmp_path / "o")]) == 0
    out, err = capsys.readouterr()
    assert "DPM tree depth" in err and "DPM labels" in err
    assert json.loads(out)["n"] == 1200  # stdout: the summary alone
    assert len((tmp_path / "o" / "labels.csv").read_text().splitlines()) == 1200


@pytest.mark.dask
def test_a_bad_npy_on_a_cluster_is_one_line(scheduler, tmp_path, capsys):
    """A truncated file is refused before any cluster starts; a NaN, found by the workers'
    first pass, ends the run as on one process: one line, exit 2, no output."""
    good = np.load(_npy_points(tmp_path))
    cases = {
        "truncated": ("is truncated: its header says 1200 × 3 values", ["--workers", "2"]),
        "nan": ("X contains a non-finite value (NaN or inf)", ["--scheduler", scheduler]),
    }
    for name, (fragment, where) in cases.items():
        path = tmp_path / f"{name}.npy"
        if name == "nan":
            good[700, 1] = np.nan
            np.save(path, good)
        else:
            np.save(path, good)
            with open(path, "r+b") as f:
                f.truncate(5000)
        argv = ["cluster", str(path), *_DPM, *where, "--out", str(tmp_path / "o"), "-q"]
        assert main(argv) == EXIT_USAGE
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("privopt cluster: error: ") and fragment in err[-1], err
        assert not (tmp_path / "o").exists()


_SERVE = [
    *("geo", "serve", "--grid", "6x6", "--cell-km", "0.5", "--epsilon", "2", "--gamma", "0.6"),
    *("--gamma-graph", "50", "--lr-radius", "2", "--r-obf", "1.5", "--r-exp", "0.5"),
    *("--lr-max-size", "5", "--targets", "4", "--max-batch", "3", "--batch-window", "1"),
    *("--method", "benders", "--port", "0"),
]


@pytest.mark.dask
@pytest.mark.parametrize("where, processes", [("scheduler", 1), ("scheduler", 2), ("workers", 2)])
def test_geo_serve_solves_its_batches_on_the_cluster(scheduler, tmp_path, where, processes):
    """A server started with --scheduler (or --workers) solves each batch's per-user
    subproblems on the cluster, from each of its server processes; every user's matrix is
    the one a serial solve of the same uploads gives."""
    pytest.importorskip("starlette", reason="needs the privopt[server] extra")
    from privopt.geo import grid_geography, solve_uploads
    from privopt.geo.http_client import GeoServiceClient

    before = _tasks_run(scheduler)
    cluster = ["--scheduler", scheduler] if where == "scheduler" else ["--workers", "2"]
    log = (tmp_path / "serve.log").open("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "privopt", *_SERVE, *cluster, "--processes", str(processes)],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        line = proc.stdout.readline()  # the one JSON line, printed once it listens
        assert line, (log.seek(0), log.read())[1]
        geo = grid_geography(6, 6, 0.5, metric="haversine", road_factor=1.2)
        client = GeoServiceClient(json.loads(line)["url"], geo, timeout=120)
        with ThreadPoolExecutor(3) as pool:
            futures = [
                pool.submit(client.obfuscate, loc, rng=loc, user=f"u{loc}") for loc in (3, 17, 30)
            ]
            reports = [f.result() for f in futures]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        log.close()
    batches: dict[int, list] = {}
    for rep in reports:
        batches.setdefault(rep.reply.batch.id, []).append(rep)
    for reps in batches.values():
        reps.sort(key=lambda r: r.reply.batch.position)
        serial, _ = solve_uploads(
            [r.upload for r in reps], client.params, method="benders", progress=False
        )
        for rep, mine in zip(reps, serial, strict=True):
            np.testing.assert_array_equal(rep.matrix.matrix, mine.matrix)
    if where == "scheduler":
        assert _tasks_run(scheduler) > before  # the batches' subproblems ran on the cluster
