"""``--workers`` / ``--scheduler``: a run on a Dask cluster of worker processes publishes the
serial run's release, and a bad cluster option ends in one line naming it."""

from __future__ import annotations

import socket
from pathlib import Path

import distributed  # in the test extra: a missing install must fail, not skip
import numpy as np
import pytest
from privopt.cli import EXIT_USAGE, main


@pytest.fixture(scope="module")
def scheduler():
    """The address of a 2-process LocalCluster shared by this module's runs."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address


def _points(tmp_path: Path) -> str:
    rng = np.random.default_rng(0)
    path = tmp_path / "p.csv"
    np.savetxt(path, rng.uniform(0, 5, (16, 2)), delimiter=",", header="x,y", comments="")
    return str(path)


def _table(tmp_path: Path) -> str:
    rng = np.random.default_rng(1)
    rows = [
        f"{a},{z}" for a, z in zip(rng.integers(18, 90, 120), rng.integers(0, 20, 120), strict=True)
    ]
    path = tmp_path / "t.csv"
    path.write_text("age,zip\n" + "\n".join(rows) + "\n")
    return str(path)


_PARTS, _SEED = ("--parts", "2"), ("--seed", "3")

RUNS = {
    "mdp benders": (
        lambda t: ["mdp", _points(t), "--method", "benders", "--epsilon", "2", "--subsets", "3"],
        "perturbation_matrix.npz",
    ),
    "kanon split-carry": (
        lambda t: ["kanon", _table(t), "--anonymity", "3", "--method", "split-carry", *_PARTS],
        "anonymized.csv",
    ),
    "census m-h-dp": (
        lambda t: ["census", "--synthetic-us", "--epsilon", "1", "--method", "m-h-dp", *_SEED],
        "released_counts.csv",
    ),
}


@pytest.mark.dask
@pytest.mark.parametrize(("argv", "result"), list(RUNS.values()), ids=list(RUNS))
def test_a_run_on_a_scheduler_publishes_the_serial_release(argv, result, scheduler, tmp_path):
    args = argv(tmp_path)
    assert main([*args, "--out", str(tmp_path / "serial"), "-q"]) == 0
    assert main([*args, "--out", str(tmp_path / "dask"), "-q", "--scheduler", scheduler]) == 0
    serial, dask = tmp_path / "serial" / result, tmp_path / "dask" / result
    if result.endswith(".npz"):
        a, b = np.load(serial), np.load(dask)
        for key in ("matrix", "output_index"):
            np.testing.assert_array_equal(a[key], b[key])
    else:
        assert serial.read_bytes() == dask.read_bytes()


@pytest.mark.dask
def test_workers_start_and_stop_a_local_cluster(tmp_path):
    args = RUNS["kanon split-carry"][0](tmp_path)
    assert main([*args, "--out", str(tmp_path / "serial"), "-q"]) == 0
    assert main([*args, "--out", str(tmp_path / "dask"), "-q", "--workers", "2"]) == 0
    table = "anonymized.csv"
    assert (tmp_path / "serial" / table).read_bytes() == (tmp_path / "dask" / table).read_bytes()


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
