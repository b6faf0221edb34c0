"""``privopt census`` with discrete Gaussian noise (--rho), per-level targets (--targets) and
per-count intervals (--intervals): what is written and what the summary says."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import privopt
from privopt.census import allocate_budget
from privopt.cli import main

SYNTHETIC = ["census", "--synthetic-us", "--scale", "1e-5", "--seed", "2", "-q"]


def test_rho_targets_and_intervals_reach_the_outputs(tmp_path, capsys):
    out = tmp_path / "o"
    argv = [*SYNTHETIC, "--method", "M_H^dp", "--rho", "0.5", "--targets", "40,20,10"]
    argv += ["--intervals", "0.9", "--interval-runs", "30", "--out", str(out)]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    rel = privopt.load(out)
    assert printed["guarantee"]["kind"] == "rho-zCDP" and rel.rho == 0.5
    plan = allocate_budget(rel.hierarchy, rho=0.5, targets=[40, 20, 10], method="M_H^dp")
    assert printed["targets_met"] is True
    assert np.allclose(printed["shares"], plan.shares) and np.allclose(rel.shares, plan.shares)
    table = pd.read_csv(out / "count_intervals.csv")
    assert list(table.columns) == ["region", "level", "size", "count", "lower", "upper"]
    assert (table["lower"] <= table["count"]).all() and (table["count"] <= table["upper"]).all()
    assert np.array_equal(table["count"].to_numpy(), rel.counts.ravel())
    assert (out / "census_intervals.png").stat().st_size > 0
    report = (out / "report.md").read_text()
    assert "Budget split over the levels" in report and "90% intervals" in report


def test_unreachable_targets_are_reported_not_met(tmp_path, capsys):
    argv = [*SYNTHETIC, "--epsilon", "0.1", "--targets", "1", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["targets_met"] is False
    assert "cannot all be met" in (tmp_path / "o" / "report.md").read_text()


def test_the_budget_is_chosen_not_defaulted(tmp_path, capsys):
    assert main([*SYNTHETIC, "--out", str(tmp_path / "o")]) == 2
    assert "required: --epsilon (or --rho" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    assert main([*SYNTHETIC, "--epsilon", "1", "--out", str(tmp_path / "o")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["guarantee"]["kind"] == "epsilon-DP" and printed["epsilon"] == 1.0
