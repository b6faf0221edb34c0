"""Mechanisms with real noise from privopt.dp: ledger, budget, reproducibility, noise scale;
the synthetic generator, the CLI and the demo section."""

from __future__ import annotations

import math

import numpy as np
import pytest
from privopt.census import (
    CensusCounts,
    Hierarchy,
    m_c_ch,
    m_c_dp,
    m_h_dp,
    measure_chain,
    measure_counts,
    release,
    topdown,
)
from privopt.census.synthetic import household_size_distribution, synthetic_us
from privopt.cli import main
from privopt.dp import PrivacyAccountant
from privopt.errors import PrivacyBudgetExceeded


@pytest.fixture(scope="module")
def small_us() -> CensusCounts:
    return synthetic_us(0, N=6, scale=2e-4)


def test_synthetic_us_shape_and_calibration():
    d = synthetic_us(0, N=20, scale=1e-2)
    assert d.hierarchy.level_sizes.tolist() == [1, 52, 3221]
    assert synthetic_us(0, N=20, scale=1e-2, include_pr=False).hierarchy.level_sizes.tolist() == [
        1,
        51,
        3143,
    ]
    assert abs(d.G - 1_180_933) <= 1
    share = d.counts[0] / d.G
    assert abs(share[0] - 0.267) < 0.01 and abs((share * np.arange(1, 21)).sum() - 2.55) < 0.05
    assert np.array_equal(synthetic_us(0, N=20, scale=1e-2).counts, d.counts)
    p = household_size_distribution(20)
    assert p.shape == (20,) and abs(p.sum() - 1) < 1e-12 and np.all(p >= 0)
    deep = synthetic_us(1, N=4, scale=1e-3, tracts_per_county=3, blocks_per_tract=2)
    assert deep.hierarchy.n_levels == 5 and deep.hierarchy.level_sizes[3] >= 3221


def test_all_mechanisms_verify_and_ledger(small_us):
    L = small_us.hierarchy.n_levels
    for name in ("M_H^dp", "M_c^dp", "M_c^ch", "TopDown"):
        acct = PrivacyAccountant(epsilon_budget=1.0)
        rel = release(small_us, 1.0, name, rng=7, accountant=acct).verify()
        assert len(rel.ledger) == L and math.isclose(acct.epsilon_spent, 1.0)
        assert rel.timings["total"] >= rel.timings["postprocess"] >= 0
        assert "ε-DP" in rel.guarantee_details
        assert rel.guarantee.kind == "epsilon-DP" and rel.guarantee.parameters["epsilon"] == 1.0


def test_budget_is_checked_before_drawing(running_example):
    acct = PrivacyAccountant(epsilon_budget=0.5)
    with pytest.raises(PrivacyBudgetExceeded):
        m_h_dp(running_example, 1.0, rng=0, accountant=acct)


def test_reproducible_with_a_seed(small_us):
    a, b = m_c_dp(small_us, 0.5, rng=3), m_c_dp(small_us, 0.5, rng=3)
    assert np.array_equal(a.counts, b.counts)


def test_noise_scale_is_wired(small_us):
    # ñ − n has the double-geometric variance 2α/(1−α)², α = exp(−ε_level/Δ) (spec 003 §1.4).
    L, eps = small_us.hierarchy.n_levels, 3.0
    m = measure_counts(small_us, eps, rng=0)
    d = (m.noisy - small_us.counts).ravel()
    alpha = math.exp(-eps / (L * 2))
    var = 2 * alpha / (1 - alpha) ** 2
    assert abs(d.mean()) < 5 * math.sqrt(var / d.size)
    assert abs(d.var() / var - 1) < 0.1
    strict = measure_chain(small_us, eps, rng=0)
    paper = measure_chain(small_us, eps, rng=0, chain_noise_scale="paper")
    assert strict.sensitivity.tolist() == small_us.hierarchy.level_sizes.tolist()
    assert paper.sensitivity.tolist() == [1.0] * L
    loose = m_c_ch(small_us, measurements=paper)
    assert "NOT ε-DP" in loose.guarantee_details
    # The paper's scale spends |R_l|·ε/L on level l: the guarantee states that sum, not ε.
    sizes = small_us.hierarchy.level_sizes
    assert loose.guarantee.parameters["epsilon"] == pytest.approx(eps * sizes.sum() / L)
    assert m_c_ch(small_us, measurements=strict).guarantee.parameters["epsilon"] == eps


def test_dp_mechanisms_are_more_accurate_than_raw_rounding(small_us):
    # Same noise; the DP optimum is the closest feasible release in L2 to the measurements.
    m = measure_counts(small_us, 0.5, rng=11)
    dp, td = m_h_dp(small_us, measurements=m), topdown(small_us, measurements=m)
    assert ((dp.counts - m.noisy) ** 2).sum() <= ((td.counts - m.noisy) ** 2).sum()


def test_cli_records_and_errors(tmp_path, capsys):
    rec = tmp_path / "rec.csv"
    rec.write_text("state,county,hh\nGA,g1,A\nGA,g1,A\nGA,g2,B\nNY,n1,C\nNY,n1,C\nNY,n1,C\n")
    out = tmp_path / "out"
    assert (
        main(
            [
                "census",
                "--epsilon",
                "1",
                "--records",
                str(rec),
                "--levels",
                "state,county",
                "--group",
                "hh",
                "--seed",
                "0",
                "--out",
                str(out),
                "--mechanism",
                "M_H^dp",
                "--compare",
                "M_H^dp,TopDown,M_H^r",
            ]
        )
        == 0
    )
    import pandas as pd

    f = pd.read_csv(out / "released_counts.csv")
    assert f.loc[f.region == "root", "count"].sum() == 3
    assert (out / "report.md").exists() and (out / "census_l1_per_level.png").exists()
    counts = tmp_path / "counts.csv"
    counts.write_text("state,county,size_1,size_2\nGA,g1,3,1\nGA,g2,0,2\nNY,n1,5,0\n")
    assert (
        main(
            [
                "census",
                "--epsilon",
                "1",
                "--counts",
                str(counts),
                "--levels",
                "state,county",
                "--seed",
                "1",
                "--out",
                str(out),
                "--mechanism",
                "M_c^ch",
                "--force",  # replaces the first run's output
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "census",
                "--epsilon",
                "1",
                "--records",
                str(rec),
                "--levels",
                "state,county",
                "--out",
                str(out) + "2",
            ]
        )
        == 2
    )
    assert "--group" in capsys.readouterr().err


def test_cli_out_is_a_loadable_release(tmp_path, capsys):
    """``privopt census --out DIR`` writes the release itself: privopt.load(DIR) gives it back,
    it verifies, and the command printed exactly its summary (plus paths and checks)."""
    import json

    import privopt
    from privopt.census import CensusRelease

    rec = tmp_path / "rec.csv"
    rec.write_text("state,county,hh\nGA,g1,A\nGA,g1,A\nGA,g2,B\nNY,n1,C\nNY,n1,D\nNY,n1,D\n")
    out = tmp_path / "out"
    argv = [
        "census",
        "--epsilon",
        "1",
        "--records",
        str(rec),
        "--levels",
        "state,county",
        "--group",
        "hh",
    ]
    assert main([*argv, "--method", "M_H^dp", "--seed", "3", "--out", str(out), "-q"]) == 0
    printed = json.loads(capsys.readouterr().out)
    loaded = privopt.load(out)
    assert isinstance(loaded, CensusRelease) and loaded.verify() is loaded
    assert loaded.method == "M_H^dp" and loaded.counts[0].sum() == loaded.G == 4
    assert loaded.measurements is None  # noisy intermediate values are not published
    assert {k: printed[k] for k in loaded.summary()} == loaded.summary()
    assert printed["mechanism"] == "census" and printed["ok"]
    table = __import__("pandas").read_csv(out / "released_counts.csv")
    assert table["count"].tolist() == loaded.counts.ravel().tolist()


def test_release_round_trip_keeps_the_hierarchy_and_ledger(tmp_path, small_us):
    import privopt

    rel = m_c_ch(small_us, 1.0, rng=5, chain_noise_scale="paper")
    back = privopt.load(rel.save(tmp_path / "rel"))
    h, g = rel.hierarchy, back.hierarchy
    assert g.fingerprint == h.fingerprint and np.array_equal(g.level, h.level)
    assert back.ledger == rel.ledger and back.info == rel.info and back == rel
    assert back.guarantee == rel.guarantee and back.guarantee.parameters["epsilon"] > 1.0
    assert back.status == "optimal" and back.relative_gap == 0.0


def test_verify_refuses_a_tampered_release(tmp_path, running_example):
    import privopt
    from privopt.errors import PrivacyViolation

    folder = m_h_dp(running_example, 1.0, rng=0).save(tmp_path / "rel")
    with np.load(folder / "data.npz") as f:
        data = dict(f)
    data["counts"][1, 0] += 1  # GA no longer adds up to the nation
    np.savez(folder / "data.npz", **data)
    with pytest.raises(PrivacyViolation, match="not consistent, faithful"):
        privopt.load(folder).verify()
    rel = m_h_dp(running_example, 1.0, rng=0)
    rel.epsilon = 2.0  # the ledger charged 1
    with pytest.raises(PrivacyViolation, match="ledger records 1"):
        rel.verify()


def test_raw_and_qp_releases_state_no_status(running_example):
    from privopt.census import m_h, m_h_r

    for rel in (m_h(running_example, 1.0, rng=0), m_h_r(running_example, 1.0, rng=0)):
        assert rel.status is None and rel.relative_gap is None
        assert rel.summary()["status"] is None


def test_demo_section(tmp_path):
    from privopt.census.demo import demo_section

    section = demo_section(tmp_path, 0)
    assert "M_c^ch" in section.body and (tmp_path / section.figures[0]).exists()


def test_single_region_any_epsilon():
    h = Hierarchy.from_parents([-1])
    data = CensusCounts.from_leaf_counts(h, [[3, 1, 2]])
    for eps in (0.01, 1.0, 50.0):
        assert m_c_ch(data, eps, rng=0).verify().counts.sum() == 6


def test_synthetic_us_on_a_fips_county_list(tmp_path):
    from privopt.census.synthetic import STATE_FIPS
    from privopt.errors import InvalidInput

    rows = (
        ["statefp,countyfp,name"]
        + [f"{f},{c:03d},x" for f in STATE_FIPS.values() for c in (1, 3)]
        + ["13,001,dup", "99,001,unknown state"]
    )
    path = tmp_path / "counties.csv"
    path.write_text("\n".join(rows) + "\n")
    d = synthetic_us(0, N=4, scale=1e-4, counties_csv=path)
    assert d.hierarchy.level_sizes.tolist() == [1, 52, 104]
    assert d.hierarchy.names[d.hierarchy.leaves][:2].tolist() == ["01001", "01003"]
    path.write_text("statefp,countyfp\n01,001\n")
    with pytest.raises(InvalidInput, match="no counties for"):
        synthetic_us(0, N=4, scale=1e-4, counties_csv=path)


def test_cli_synthetic_options_and_secure_default(tmp_path):
    import pandas as pd

    out = tmp_path / "syn"
    args = [
        "census",
        "--epsilon",
        "1",
        "--synthetic-us",
        "--scale",
        "1e-5",
        "--max-size",
        "3",
        "--tracts-per-county",
        "2",
        "--out",
        str(out),
    ]
    # No --seed: the release noise comes from the OS CSPRNG; --compare still runs (seed 0).
    assert (
        main([*args, "--mechanism", "M_H^dp", "--window", "40", "--compare", "M_H^dp,TopDown"]) == 0
    )
    f = pd.read_csv(out / "released_counts.csv")
    assert f["level"].unique().tolist() == ["nation", "state", "county", "tract"]
    assert "ε-DP" in (out / "report.md").read_text()
    counts = tmp_path / "counts.csv"
    counts.write_text("state,county,size_1,size_2\nGA,g1,3,1\nGA,g2,0,2\nNY,n1,5,0\n")
    assert (
        main(
            [
                "census",
                "--epsilon",
                "1",
                "--counts",
                str(counts),
                "--levels",
                "state,county",
                "--out",
                str(out),
                "--mechanism",
                "M_H^r",
                "--qp-solver",
                "highs",
                "--seed",
                "1",
                "--force",  # replaces the first run's output
            ]
        )
        == 0
    )


def test_cli_ragged_counts_with_padding(tmp_path):
    import pandas as pd

    counts = tmp_path / "ragged.csv"
    counts.write_text("state,county,size_1,size_2\nVA,v1,3,1\nVA,v2,0,2\nDC,,5,0\n")
    out = tmp_path / "ragged"
    base = [
        "census",
        "--epsilon",
        "1",
        "--counts",
        str(counts),
        "--levels",
        "state,county",
        "--out",
        str(out),
        "--mechanism",
        "M_H^dp",
        "--seed",
        "0",
    ]
    assert main(base) == 2  # InvalidInput → usage error without --pad-leaves
    assert main([*base, "--pad-leaves"]) == 0
    f = pd.read_csv(out / "released_counts.csv")
    assert set(f.region) == {"root", "VA", "DC", "VA/v1", "VA/v2", "DC/DC"}
