"""Mechanisms: the PGSR properties for any noise (injected measurements), zero-noise identity,
the M_c^dp oracle (spec 003 §8 O5), baselines, bad input."""

from __future__ import annotations

import re

import numpy as np
import pytest
from census_helpers import inject, inject_noise, random_counts, random_hierarchy
from privopt.census import (
    MECHANISMS,
    CensusCounts,
    Hierarchy,
    Measurements,
    m_c_ch,
    m_c_dp,
    m_h_dp,
    release,
    topdown,
)
from privopt.errors import InvalidInput, PrivacyViolation

CONSISTENT = ["M_H^dp", "M_c^dp", "M_c^ch", "TopDown"]


KIND = {
    "M_c^dp": "cumulative",
    "M_c^r": "cumulative",
    "M_c^ch": "chain",
}


def _inject(data: CensusCounts, name: str, noise: np.ndarray) -> Measurements:
    return inject_noise(data, KIND.get(name, "counts"), noise)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("name", CONSISTENT)
def test_consistent_mechanisms_verify_for_any_noise(name, seed):
    rng = np.random.default_rng(seed)
    data = random_counts(rng, random_hierarchy(rng, 3, 3), N=4, high=6)
    scale = [3, 30, 1000][seed % 3]
    noise = rng.integers(-scale, scale + 1, size=data.counts.shape)
    if seed == 4:
        noise = -np.abs(noise) - 50  # every noisy value negative
    rel = MECHANISMS[name](data, measurements=_inject(data, name, noise)).verify()
    assert rel.violations() == 0 and rel.counts.dtype == np.int64
    if name != "TopDown":
        assert rel.info["certified"]


@pytest.mark.parametrize("name", [*CONSISTENT, "M_H^r", "M_c^r", "M_H"])
def test_zero_noise_returns_truth(name):
    rng = np.random.default_rng(1)
    data = random_counts(rng, random_hierarchy(rng, 3, 3), N=3, high=5)
    rel = MECHANISMS[name](data, measurements=_inject(data, name, np.zeros_like(data.counts)))
    assert np.array_equal(rel.counts, data.counts)
    assert rel.l1_per_level(data).sum() == 0 and rel.violations() == 0


def test_o5_m_c_dp_running_example(running_example):
    # c̃ rows in region order US, GA, NY (spec 003 §8 O5): optimal step-3 cost 6.
    cum = np.array([[2, 5, 4, 7, 6], [3, 2, 4, 6, 5], [0, 2, 3, 2, 4]])
    rel = m_c_dp(running_example, measurements=inject(running_example, "cumulative", cum)).verify()
    n_bar = np.array([[2, 3, 0, 1, 0], [3, 0, 1, 2, 0], [0, 2, 1, 0, 1]])
    assert rel.info["cost"] == 6 == int(((rel.counts - n_bar) ** 2).sum())


def test_baselines_may_violate_and_verify_says_so():
    rng = np.random.default_rng(3)
    data = random_counts(rng, random_hierarchy(rng, 3, 4), N=4, high=8)
    noise = rng.integers(-5, 6, size=data.counts.shape)
    raw = MECHANISMS["M_H"](data, measurements=_inject(data, "M_H", noise))
    assert not raw.check()["consistent"]
    with pytest.raises(PrivacyViolation, match="consistent"):
        raw.verify()
    for name in ("M_H^r", "M_c^r"):
        rel = MECHANISMS[name](data, measurements=_inject(data, name, noise))
        assert rel.check()["nonnegative"] and rel.check()["integral"]


def test_dp_beats_or_ties_rounded_qp_in_l2():
    # Model 1's integer optimum can't have a larger objective than any feasible rounding.
    rng = np.random.default_rng(8)
    data = random_counts(rng, random_hierarchy(rng, 3, 3), N=3, high=10)
    noise = rng.integers(-6, 7, size=data.counts.shape)
    m = _inject(data, "M_H^dp", noise)
    dp, td = m_h_dp(data, measurements=m), topdown(data, measurements=m)
    obj = lambda c: float(((c - m.noisy) ** 2).sum())  # noqa: E731
    assert dp.info["cost"] == obj(dp.counts) <= obj(td.counts)


def test_bad_input(running_example):
    with pytest.raises(InvalidInput, match="data"):
        m_h_dp(np.zeros((3, 5)), 1.0)
    with pytest.raises(InvalidInput, match="epsilon"):
        m_h_dp(running_example, -1.0)
    with pytest.raises(InvalidInput, match="epsilon is required"):
        m_h_dp(running_example)
    with pytest.raises(InvalidInput, match="method must be one of"):
        release(running_example, 1.0, method="nope")
    with pytest.raises(InvalidInput, match="chain_noise_scale"):
        m_c_ch(running_example, 1.0, chain_noise_scale="loose")
    m = inject(running_example, "cumulative", np.zeros((3, 5)))
    with pytest.raises(InvalidInput, match="'counts' Measurements"):
        m_h_dp(running_example, measurements=m)
    with pytest.raises(InvalidInput, match="window"):
        m_h_dp(
            running_example,
            measurements=inject(running_example, "counts", running_example.counts),
            window="huge",
        )


def test_release_frame_and_table(tmp_path, running_example):
    rel = m_h_dp(
        running_example, measurements=inject(running_example, "counts", running_example.counts)
    )
    f = rel.to_frame()
    assert list(f.columns) == ["region", "level", "size", "count"] and len(f) == 15
    assert rel.write_table(tmp_path / "out.csv").exists()
    import pandas as pd

    back = pd.read_csv(tmp_path / "out.csv", dtype={"region": str, "level": str})
    assert back.equals(f.astype({"region": str, "level": str}))  # same text, any writer
    with pytest.raises(InvalidInput, match=r"csv or \.parquet"):
        rel.write_table(tmp_path / "out.txt")
    with pytest.raises(InvalidInput, match="write_table"):  # save writes a release directory
        rel.save(tmp_path / "out.csv")
    assert "M_H^dp" in repr(rel)


def test_release_method_replaces_mechanism(running_example):
    rel = release(running_example, 1.0, "M_c^dp", rng=0)
    assert rel.method == "M_c^dp" and rel.mechanism == "census"
    with pytest.warns(DeprecationWarning, match="method"):
        old = release(running_example, 1.0, mechanism="M_c^dp", rng=0)
    assert old.method == "M_c^dp" and np.array_equal(old.counts, rel.counts)  # same seed


def test_release_parquet(tmp_path, running_example):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rel = m_h_dp(
        running_example, measurements=inject(running_example, "counts", running_example.counts)
    )
    back = pd.read_parquet(rel.write_table(tmp_path / "out.parquet"))
    assert back.equals(rel.to_frame())


def test_hierarchy_single_level():
    h = Hierarchy.from_parents([-1])
    data = CensusCounts.from_leaf_counts(h, [[3, 1, 2]])
    for name in CONSISTENT:
        noise = np.array([[4, -2, 1]])
        rel = MECHANISMS[name](data, measurements=_inject(data, name, noise)).verify()
        assert rel.counts.sum() == 6


@pytest.mark.parametrize("name", ["M_H^r", "M_c^r"])
def test_qp_solvers_agree(name):
    pytest.importorskip("clarabel")
    rng = np.random.default_rng(4)
    data = random_counts(rng, random_hierarchy(rng, 3, 3), N=4, high=30)
    m = _inject(data, name, rng.integers(-8, 9, size=data.counts.shape))
    a = MECHANISMS[name](data, measurements=m, qp_solver="clarabel")
    b = MECHANISMS[name](data, measurements=m, qp_solver="highs")
    assert a.info["qp_solver"] == "clarabel" and b.info["qp_solver"] == "highs"
    # Same strictly convex QP: the rounded solutions agree up to round-off at .5 ties.
    assert np.abs(a.counts - b.counts).max() <= 1 and np.mean(a.counts != b.counts) < 0.05
    with pytest.raises(InvalidInput, match="qp_solver"):
        MECHANISMS[name](data, measurements=m, qp_solver="gurobi")


def test_topdown_refuses_totals_beyond_float64():
    # TopDown's projection is float64: at G >= 2^53 it failed its own check() (issue 12
    # defect 5). It now refuses; just below, every check holds; M_H^dp is exact there too.
    h = Hierarchy.from_nested({"US": ["GA", "NY"]})
    for G in (2**52 + 1, 2**53 - 1):
        data = CensusCounts.from_leaf_counts(h, [[G - 5, 3], [1, 1]])
        assert all(topdown(data, 1.0, rng=0).check().values())
    big = CensusCounts.from_leaf_counts(h, [[2**53, 3], [1, 1]])
    with pytest.raises(InvalidInput, match="2\\^53"):
        topdown(big, 1.0, rng=0)
    rel = m_h_dp(big, 1.0, rng=0).verify()
    assert int(rel.counts[0].sum(dtype=object)) == 2**53 + 5


def test_grouped_round_repairs_float_drift():
    # Projections whose float sums overshoot or undershoot the integer targets still round to
    # non-negative integers summing exactly to each target.
    from privopt.census.mechanisms import _grouped_round

    rng = np.random.default_rng(0)
    for _ in range(300):
        n, groups = int(rng.integers(1, 7)), int(rng.integers(1, 4))
        group = np.unique(rng.integers(0, groups, size=n), return_inverse=True)[1]
        target = rng.integers(0, 2 ** int(rng.integers(1, 52)), size=group.max() + 1)
        x = rng.random(n)
        for g in range(target.size):
            m = group == g
            x[m] = x[m] / x[m].sum() * target[g] * (1 + rng.normal() * 1e-9)
        out = _grouped_round(x, group, target)
        assert (out >= 0).all()
        assert [int(out[group == g].sum()) for g in range(target.size)] == target.tolist()


@pytest.mark.parametrize("name", ["M_H^r", "M_c^r"])
def test_non_finite_qp_solution_raises(name, monkeypatch, running_example):
    # A QP solver answering NaN must not become a release (NaN rounds to INT64_MIN).
    import privopt.census.mechanisms as mech
    from privopt.errors import NumericalTrouble

    monkeypatch.setattr(mech, "solve_qp", lambda target, *a, **k: np.full(target.size, np.nan))
    m = _inject(running_example, name, np.zeros_like(running_example.counts))
    with pytest.raises(NumericalTrouble, match=re.escape(f"{name} QP solution is not finite")):
        MECHANISMS[name](running_example, measurements=m)


def test_save_without_pyarrow_writes_the_same_csv(tmp_path, running_example, monkeypatch):
    import sys

    from privopt import _optional

    release_module = sys.modules["privopt.census.release"]  # (privopt.census.release the function)

    rel = m_h_dp(running_example, 1.0, rng=0)
    monkeypatch.setattr(release_module, "CSV_BLOCK_ROWS", 4)  # several blocks
    rel.write_table(tmp_path / "fast.csv")
    monkeypatch.setattr(_optional, "pyarrow", lambda: None)  # as without pyarrow installed
    rel.write_table(tmp_path / "plain.csv")
    assert (tmp_path / "fast.csv").read_text() == (tmp_path / "plain.csv").read_text()
    with pytest.raises(InvalidInput, match="pyarrow"):
        rel.write_table(tmp_path / "out.parquet")
