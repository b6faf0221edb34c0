"""``privopt geo`` (the one-process run): the shared output checks, atomic output, one JSON
line on stdout, one-line errors."""

from __future__ import annotations

import json

from privopt.cli import main
from privopt.mdp import PerturbationMatrix

SMALL = [
    *("geo", "--grid", "6x6", "--cell-km", "0.5", "--epsilon", "2", "--gamma", "0.6"),
    *("--gamma-graph", "50", "--lr-radius", "2", "--r-obf", "1.5", "--r-exp", "1"),
    *("--lr-max-size", "5", "-M", "2", "--targets", "5", "--baselines", "none", "--quiet"),
]


def test_geo_writes_its_output_as_a_unit_and_prints_one_json_line(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main([*SMALL, "--out", str(out)]) == 0
    stdout = capsys.readouterr().out.splitlines()
    assert len(stdout) == 1
    summary = json.loads(stdout[0])
    assert summary["status"] == "optimal" and summary["out"] == str(out)
    names = {p.name for p in out.iterdir()}
    assert {"user0.npz", "user1.npz", "report.md", "result.json", ".privopt-output"} <= names
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporaries left
    pm = PerturbationMatrix.load(out / "user0.npz")
    assert pm.n_records == 5 and json.loads((out / "result.json").read_text())["users"] == 2
    # An existing output is refused before any work, and kept; --force replaces it.
    before = (out / "result.json").read_text()
    assert main([*SMALL, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("privopt geo: error: --out") and "already" in err[-1]
    assert (out / "result.json").read_text() == before
    assert main([*SMALL, "--out", str(out), "--force"]) == 0


def test_geo_refuses_an_output_inside_its_input(tmp_path, capsys) -> None:
    rome = tmp_path / "rome"
    rome.mkdir()
    assert main(["geo", "--rome", str(rome), "--out", str(rome), "--quiet"]) == 2
    assert "is, or contains, the input" in capsys.readouterr().err


def test_geo_bad_values_name_the_argument(tmp_path, capsys) -> None:
    for argv, what in (
        (["-K", "99"], "K"),  # more locations than the 36 of the map
        (["-M", "0"], "--users"),
        (["--lr-radius", "-1"], "lr_radius"),
        (["--r-exp", "3"], "r_exp"),
    ):
        assert main([*SMALL, *argv, "--out", str(tmp_path / "o")]) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("privopt geo: error:") and what in last, last
