"""``privopt geo`` (the one-process run): the shared output checks, atomic output, one JSON
line on stdout, one-line errors."""

from __future__ import annotations

import json

import numpy as np
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
    assert main(["geo", "--rome", str(rome), "--epsilon", "10", "--out", str(rome), "-q"]) == 2
    assert "is, or contains, the input" in capsys.readouterr().err


def test_geo_bad_values_name_the_argument(tmp_path, capsys) -> None:
    for argv, what in (
        (["-K", "99"], "K"),  # more locations than the 36 of the map
        (["-M", "0"], "--users"),
        (["--lr-radius", "-1"], "--lr-radius"),
        (["--r-exp", "3"], "r_exp"),
    ):
        assert main([*SMALL, *argv, "--out", str(tmp_path / "o")]) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("privopt geo: error:") and what in last, last


def _count_sources(monkeypatch) -> dict[str, int]:
    """Count the 64-bit words drawn from the OS CSPRNG and from seeded generators."""
    from privopt.dp.randomness import GeneratorSource, SecureSource

    calls = {"secure": 0, "generator": 0}
    for cls, key in ((SecureSource, "secure"), (GeneratorSource, "generator")):
        original = cls.random_words

        def counted(self, n, _original=original, _key=key):
            calls[_key] += 1
            return _original(self, n)

        monkeypatch.setattr(cls, "random_words", counted)
    return calls


def test_unseeded_geo_draws_from_the_os_csprng_and_a_seed_reproduces(
    tmp_path, capsys, monkeypatch
) -> None:
    """Issue 15 item 5: without --seed, targets, users, each client's v_a and the Laplace
    baseline's noise come from the OS CSPRNG; --seed makes the run reproducible (testing)."""
    argv = [*SMALL[:-3], "--baselines", "laplace", "--quiet"]
    calls = _count_sources(monkeypatch)
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert calls["secure"] > 0 and calls["generator"] == 0
    calls.update(secure=0, generator=0)
    runs = []
    for name in ("b", "c"):
        assert main([*argv, "--seed", "3", "--out", str(tmp_path / name)]) == 0
        runs.append(json.loads((tmp_path / name / "result.json").read_text()))
    assert calls["secure"] == 0 and calls["generator"] > 0
    assert runs[0]["cost_km"] == runs[1]["cost_km"]
    assert runs[0]["baselines"][0]["cost_km"] == runs[1]["baselines"][0]["cost_km"]
    capsys.readouterr()


def test_geo_serve_target_draw_is_csprng_unless_seeded(monkeypatch) -> None:
    from privopt.cli import build_parser
    from privopt.geo.cli import _service

    small = ["--grid", "5x5", "--targets", "4", "--gamma-graph", "50", "--lr-radius", "2"]
    small += ["--epsilon", "10"]
    calls = _count_sources(monkeypatch)
    args = build_parser().parse_args(["geo", "serve", *small])
    assert args.seed is None
    _service(args)
    assert calls["secure"] > 0
    calls.update(secure=0)
    seeded = build_parser().parse_args(["geo", "serve", *small, "--seed", "7"])
    targets = [_service(seeded).table.targets for _ in range(2)]
    assert calls["secure"] == 0
    np.testing.assert_array_equal(*targets)
    helps = build_parser()._subparsers._group_actions[0].choices["geo"].format_help()
    flat = " ".join(helps.split())
    assert "for testing only" in flat and "cryptographic source" in flat
