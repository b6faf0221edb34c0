"""One command-line grammar: every default shown, one summary shape, method names in one
spelling with the old ones accepted, privacy parameters chosen rather than defaulted, and
--require-optimal's exit code."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
from privopt._arguments import Method
from privopt._cli_support import EXIT_UNCERTIFIED, SUMMARY_KEYS
from privopt.cli import EXIT_USAGE, _subparsers, build_parser, main


def _all_parsers(parser: argparse.ArgumentParser):
    for sub in _subparsers(parser):
        yield sub
        yield from _all_parsers(sub)


def test_help_shows_every_default():
    for sub in _all_parsers(build_parser()):
        formatter = sub._get_formatter()
        for action in sub._actions:
            if action.help == argparse.SUPPRESS or not action.option_strings:
                continue
            if action.default in (None, False, argparse.SUPPRESS) or action.required:
                continue
            text = formatter._get_help_string(action) if action.help else ""
            assert "default" in text, (sub.prog, action.option_strings)


def test_default_output_folder_is_named_after_the_command():
    for sub in _subparsers(build_parser()):
        name = sub.prog.removeprefix("privopt ")
        assert sub.get_default("out") == f"{name}-out", name


def test_method_names_are_lower_case_with_hyphens_and_old_spellings_still_work():
    kind = Method(["split_carry", "M_H^dp", "TopDown", "k_member"])
    assert kind.shown == ("split-carry", "m-h-dp", "topdown", "k-member")
    for text, key in [("split_carry", "split_carry"), ("M_H^dp", "M_H^dp"), ("m-h-dp", "M_H^dp")]:
        assert kind(text) == key
    with pytest.raises(argparse.ArgumentTypeError, match="must be one of split-carry"):
        kind("mondrian")


@pytest.mark.parametrize("command", ["mdp", "census", "cluster", "geo"])
def test_a_missing_epsilon_is_a_usage_error_naming_it(command, capsys):
    argv = {"cluster": ["cluster", "x.csv", "--bounds", "0", "1", "--delta", "0.1"]}.get(
        command, [command]
    )
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"privopt {command}: error: ") and "--epsilon" in err


def _inputs(tmp_path):
    pts = tmp_path / "p.csv"
    pts.write_text("x,y\n0,0\n1,0\n0,1\n1,1\n")
    tab = tmp_path / "t.csv"
    tab.write_text("age,zip\n30,1\n31,1\n40,2\n41,2\n")
    blobs = np.random.default_rng(0).normal(0, 1, (200, 2)).clip(-5, 5)
    np.save(tmp_path / "c.npy", blobs)
    return {
        "mdp": ["mdp", str(pts), "--epsilon", "1", "--eta", "1.5"],
        "kanon": ["kanon", str(tab), "--anonymity", "2", "--method", "milp"],
        "census": ["census", "--synthetic-us", "--scale", "1e-5", "--epsilon", "1"],
        "cluster": [
            *("cluster", str(tmp_path / "c.npy"), "--bounds", "-5", "5"),
            *("--epsilon", "1", "--delta", "0.01"),
        ],
        "geo": ["geo", "--grid", "4x4", "--epsilon", "5", "--users", "2", "--targets", "4"],
    }


@pytest.mark.parametrize("command", ["mdp", "kanon", "census", "cluster", "geo"])
def test_every_summary_has_the_same_first_keys(command, tmp_path, capsys):
    out = tmp_path / "o"
    seeded = ["--seed", "1"] if command in ("census", "cluster", "geo") else []
    assert main([*_inputs(tmp_path)[command], *seeded, "--out", str(out), "-q"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert list(summary)[: len(SUMMARY_KEYS)] == list(SUMMARY_KEYS)
    assert summary["command"] == command and summary["out"] == str(out)
    assert isinstance(summary["guarantee"], dict) and summary["guarantee_text"]
    assert summary["files"] and all(p.startswith(str(out)) for p in summary["files"])
    assert sorted(summary["files"]) == sorted(
        str(p) for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")
    )


def test_require_optimal_exits_3_when_the_status_is_not_certified(tmp_path, capsys):
    argv = _inputs(tmp_path)["mdp"]
    argv = [*argv, "--method", "benders", "--subsets", "2", "--gap", "0.5", "-q"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    loose = json.loads(capsys.readouterr().out)
    code = main([*argv, "--out", str(tmp_path / "b"), "--require-optimal"])
    captured = capsys.readouterr()
    if loose["status"] == "optimal":
        assert code == 0
    else:
        assert code == EXIT_UNCERTIFIED and "--require-optimal" in captured.err
        assert json.loads(captured.out)["status"] == loose["status"]
    # a release whose status is certified passes
    exact = [*_inputs(tmp_path)["mdp"], "--out", str(tmp_path / "c"), "-q", "--require-optimal"]
    assert main(exact) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "optimal"


def test_kanon_refuses_a_csv_name_as_its_output_folder(tmp_path, capsys):
    argv = [*_inputs(tmp_path)["kanon"], "--out", str(tmp_path / "t2.csv"), "-q"]
    assert main(argv) == EXIT_USAGE
    assert "--out is the output folder" in capsys.readouterr().err
    assert not (tmp_path / "t2.csv").exists()
