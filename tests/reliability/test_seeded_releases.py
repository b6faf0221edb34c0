"""A release whose noise came from a seed says so: in its guarantee, its summary, its ledger
and on the command line. Anyone who knows the seed can recompute and remove the noise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from privopt import census as cen
from privopt import geo
from privopt.cli import main
from privopt.cluster import DPM


def _counts() -> cen.CensusCounts:
    rec = pd.DataFrame({"state": ["GA", "GA", "NY", "NY"], "hh": ["a", "a", "b", "c"]})
    return cen.CensusCounts.from_records(rec, ["state"], "hh")


def test_census_release_states_seeded_randomness():
    seeded = cen.m_h_dp(_counts(), 1.0, rng=7)
    assert seeded.seeded and "SEEDED" in seeded.guarantee_details and "SEEDED" in repr(seeded)
    assert seeded.guarantee.seeded and seeded.summary()["guarantee"]["seeded"]
    assert all(entry.seeded for entry in seeded.ledger)
    secure = cen.m_h_dp(_counts(), 1.0)
    assert not secure.seeded and "SEEDED" not in secure.guarantee_details
    assert not secure.guarantee.seeded and "SEEDED" not in repr(secure)
    assert not any(entry.seeded for entry in secure.ledger)


def test_dpm_fit_states_seeded_randomness():
    X = np.random.default_rng(0).uniform(0, 1, (200, 2))
    seeded = DPM(bounds=(0, 1), epsilon=1.0, delta=1e-6, random_state=3).fit(X)
    assert seeded.seeded_ and seeded.accountant_.seeded and "(seeded)" in seeded.ledger_
    secure = DPM(bounds=(0, 1), epsilon=1.0, delta=1e-6).fit(X)
    assert not secure.seeded_ and "(seeded)" not in secure.ledger_


def test_cost_reference_table_targets_are_unseeded_by_default(monkeypatch):
    seen = []
    real = geo.crtable.draw_indices

    def spy(n, k, seed):
        seen.append(seed)
        return real(n, k, seed)

    monkeypatch.setattr(geo.crtable, "draw_indices", spy)
    geo.CostReferenceTable(geo.grid_geography(4, 4), 3)
    assert seen == [None]  # the OS CSPRNG: the targets are the server's secret


@pytest.mark.parametrize("seed", [None, "5"])
def test_cli_warns_when_the_noise_is_seeded(seed, tmp_path, capsys):
    points = tmp_path / "x.csv"
    pd.DataFrame(np.random.default_rng(1).uniform(0, 10, (60, 2)), columns=["a", "b"]).to_csv(
        points, index=False
    )
    argv = [
        "cluster",
        "--epsilon",
        "1",
        "--delta",
        "0.01",
        str(points),
        "--bounds",
        "0",
        "10",
        "--out",
        str(tmp_path / "o"),
    ]
    code = main([*argv, "--quiet", *(() if seed is None else ("--seed", seed))])
    err = capsys.readouterr().err
    assert code == 0, err
    warned = "warning: --seed 5 makes the random draws reproducible" in err
    assert warned == (seed is not None)
