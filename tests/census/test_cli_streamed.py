"""``privopt census --streamed-synthetic``: the command line's streamed M_H^dp publishes what
:func:`privopt.census.streamed.m_h_dp_streamed` writes, bit for bit, with its checks, report
and plot and without the spilled measurements; the release's check reads a broken file as
broken; options the run would not read are refused in one line."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from privopt.census.streamed import RegularSyntheticSource, m_h_dp_streamed
from privopt.cli import EXIT_USAGE, main

_ARGS = ["census", "--streamed-synthetic", "3,4,5", "--max-size", "3", "--epsilon", "0.5"]


@pytest.mark.parametrize("where", [[], ["--threads", "2"]])
def test_the_command_line_publishes_the_api_release(tmp_path, capsys, where):
    out = tmp_path / "run"
    assert main([*_ARGS, "--seed", "4", *where, "--out", str(out), "-q"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ok"] and summary["certified"] and summary["streamed"]
    assert summary["guarantee"]["seeded"] is True and "SEEDED" in summary["guarantee_text"]
    assert summary["checks"] == dict.fromkeys(
        ["integral", "nonnegative", "consistent", "faithful"], True
    )
    assert summary["regions"] == 1 + 3 * (1 + 4 + 20) and summary["G"] == 100 * 60
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert names == [
        "census_l1_per_level.png", "report.md", "root.npy",
        "subtree_0.npy", "subtree_1.npy", "subtree_2.npy",
    ]  # fmt: skip
    assert summary["files"] == [str(out / n) for n in names]
    assert "SEEDED" in (out / "report.md").read_text()
    api = tmp_path / "api"
    api.mkdir()
    source = RegularSyntheticSource((3, 4, 5), 6000, N=3, seed=4)
    with ThreadPoolExecutor(2) as pool:
        rel = m_h_dp_streamed(source, 0.5, pool, api, progress=False)
    for name in ("root.npy", "subtree_0.npy", "subtree_1.npy", "subtree_2.npy"):
        assert np.array_equal(np.load(out / name), np.load(api / name)), name
    assert summary["cost"] == rel.info["cost"]
    assert summary["l1_per_level"] == rel.l1_per_level.tolist()


def test_the_check_reads_a_broken_release_as_broken(tmp_path):
    source = RegularSyntheticSource((2, 3, 4), 3000, N=2, seed=1)
    with ThreadPoolExecutor(1) as pool:
        rel = m_h_dp_streamed(source, 1.0, pool, tmp_path, progress=False)
    assert all(rel.check().values())
    path = tmp_path / "subtree_1.npy"
    counts = np.load(path)
    moved = counts.copy()
    moved[5, 0] += 1  # one leaf off its parent's sum
    np.save(path, moved)
    assert rel.check() == {
        "integral": True, "nonnegative": True, "consistent": False, "faithful": False,
    }  # fmt: skip
    swapped = counts.copy()
    swapped[[5, 6]] = swapped[[6, 5]]  # two leaves of one parent: sums unchanged
    np.save(path, swapped)
    assert all(rel.check().values())
    negative = counts.copy()
    negative[-1, 1] = -1
    np.save(path, negative)
    assert not rel.check()["nonnegative"]
    np.save(path, counts.astype(np.float64))
    assert not rel.check()["integral"]


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--method", "m-c-dp"], "runs m-h-dp"),
        (["--levels", "a,b"], "--levels is only used with"),
        (["--targets", "5"], "--targets is only used with"),
        (["--format", "parquet"], "--format is only used with"),
        (["--synthetic-us"], "give one input"),
    ],
)
def test_options_it_would_not_read_are_refused(tmp_path, capsys, extra, fragment):
    assert main([*_ARGS, *extra, "--out", str(tmp_path / "o")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["census", "--streamed-synthetic", "3,x", "--epsilon", "1"], "'x' is not a fan-out"),
        (["census", "--streamed-synthetic", "3,0", "--epsilon", "1"], "'0' is not a fan-out"),
        (["census", "--streamed-synthetic", "3,4", "--rho", "1"], "needs --epsilon"),
        (["census", "--synthetic-us", "--groups", "5", "--epsilon", "1"], "--groups is only"),
        (["census", "--streamed-synthetic", "10000000,10000000,100000", "--epsilon", "1"], "2^61"),
    ],
)
def test_bad_streamed_arguments_are_one_line(tmp_path, capsys, argv, fragment):
    assert main([*argv, "--out", str(tmp_path / "o")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1
