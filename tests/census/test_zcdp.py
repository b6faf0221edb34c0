"""Discrete Gaussian measurements under ρ-zCDP next to the geometric ones, and per-level shares
of the budget: sensitivities by brute force, the noise against its pmf, the ledger, every
mechanism's post-processing, and the release's guarantee."""

from __future__ import annotations

import math

import numpy as np
import privopt
import pytest
from census_helpers import random_counts, random_hierarchy
from privopt.census import (
    MECHANISMS,
    CensusCounts,
    Hierarchy,
    cumulate,
    measure_chain,
    measure_counts,
    measure_cumulative,
    tree_postprocess,
)
from privopt.census.solvers import chain_order, level_cumulative
from privopt.dp import PrivacyAccountant, discrete_gaussian_pmf, zcdp_epsilon
from privopt.errors import InvalidInput, PrivacyBudgetExceeded, PrivacyViolation

SHARES = (0.2, 0.3, 0.5)


@pytest.fixture(scope="module")
def data() -> CensusCounts:
    """A 3-level hierarchy (1 + 3 + 9 regions), N = 4."""
    h = Hierarchy.from_nested({"r": {f"s{i}": [f"c{i}{j}" for j in range(3)] for i in range(3)}})
    rng = np.random.default_rng(3)
    return CensusCounts.from_leaf_counts(h, rng.integers(0, 30, size=(9, 4)))


def _measurement_values(data: CensusCounts, kind: str) -> np.ndarray:
    """The true values a measurement of ``kind`` adds noise to, per region row (chain: in
    chain order, as a flat array)."""
    if kind == "counts":
        return data.counts
    if kind == "cumulative":
        return cumulate(data.counts)
    region, size, level, _ = chain_order(data.hierarchy, data.N)
    return level_cumulative(data.counts[region, size], level, data.hierarchy.n_levels)


def _level_of(data: CensusCounts, kind: str) -> np.ndarray:
    if kind == "chain":
        return chain_order(data.hierarchy, data.N)[2]
    return data.hierarchy.level


@pytest.mark.parametrize(
    ("kind", "measure"),
    [("counts", measure_counts), ("cumulative", measure_cumulative), ("chain", measure_chain)],
)
def test_sensitivities_are_those_of_every_neighbour(data, kind, measure):
    """Oracle: move one group of one leaf from size k to k±1 in every possible way and measure
    the largest ℓ1 and ℓ2 change of each level's values; the mechanisms' Δ and Δ₂ are those."""
    h, N = data.hierarchy, data.N
    leaf_counts = data.counts[h.leaves]
    base = _measurement_values(data, kind)
    level = _level_of(data, kind)
    L = h.n_levels
    worst_l1, worst_l2 = np.zeros(L), np.zeros(L)
    for leaf in range(leaf_counts.shape[0]):
        for k in range(N):
            if leaf_counts[leaf, k] == 0:
                continue
            for step in (-1, 1):
                if not 0 <= k + step < N:
                    continue
                moved = leaf_counts.copy()
                moved[leaf, k] -= 1
                moved[leaf, k + step] += 1
                other = CensusCounts.from_leaf_counts(h, moved)
                diff = (_measurement_values(other, kind) - base).astype(float)
                for lev in range(L):
                    part = diff[level == lev]
                    worst_l1[lev] = max(worst_l1[lev], np.abs(part).sum())
                    worst_l2[lev] = max(worst_l2[lev], math.sqrt((part**2).sum()))
    geometric = measure(data, 1.0, rng=0)
    gaussian = measure(data, rho=1.0, rng=0)
    np.testing.assert_allclose(geometric.sensitivity, worst_l1)
    np.testing.assert_allclose(gaussian.sensitivity, worst_l2)


def test_gaussian_noise_follows_its_pmf_per_level():
    """The noise of each level is the discrete Gaussian of σ_ℓ = Δ₂/√(2ρ_ℓ): its first two
    moments and its pmf at the mode agree with the exact pmf (200 000 draws per level)."""
    h = Hierarchy.from_nested({"r": [f"s{i}" for i in range(4)]})
    zero = CensusCounts.from_leaf_counts(h, np.zeros((4, 100_000), dtype=np.int64), G=0)
    meas = measure_counts(zero, rho=0.08, shares=(0.25, 0.75), rng=11)
    for lev, share in enumerate((0.25, 0.75)):
        sigma = math.sqrt(2.0) / math.sqrt(2.0 * 0.08 * share)
        assert meas.scale[lev] == pytest.approx(sigma)
        noise = meas.noisy[h.level == lev].ravel()
        k = np.arange(-int(12 * sigma), int(12 * sigma) + 1)
        pmf = discrete_gaussian_pmf(k, sigma)
        var = float((pmf * k**2).sum())
        n = noise.size
        assert abs(noise.mean()) < 5 * math.sqrt(var / n)
        assert noise.var() == pytest.approx(var, rel=5 * math.sqrt(2.0 / n))
        at_zero = float(np.mean(noise == 0))
        assert at_zero == pytest.approx(pmf[k == 0][0], abs=5 * math.sqrt(pmf[k == 0][0] / n))


def test_shares_set_each_levels_geometric_scale(data):
    meas = measure_counts(data, 2.0, shares=SHARES, rng=0)
    np.testing.assert_allclose(meas.scale, 2.0 / (2.0 * np.array(SHARES)))
    even = measure_counts(data, 2.0, rng=0)
    np.testing.assert_array_equal(even.scale, np.full(3, 2.0 * 3 / 2.0))


def test_ledger_spends_rho_per_level_and_states_epsilon_delta(data):
    acct = PrivacyAccountant(delta_budget=1e-6, conversion_delta=1e-7)
    rel = MECHANISMS["M_H^dp"](data, rho=0.5, shares=SHARES, rng=0, accountant=acct)
    assert [e.rho for e in acct.entries] == pytest.approx([0.1, 0.15, 0.25])
    assert all(e.epsilon == 0 and e.delta == 0 for e in acct.entries)
    assert acct.rho_spent == pytest.approx(0.5)
    g = rel.guarantee
    assert g.kind == "rho-zCDP"
    assert g.parameters == pytest.approx(
        {"rho": 0.5, "epsilon": zcdp_epsilon(0.5, 1e-7), "delta": 1e-7}
    )
    assert rel.epsilon == pytest.approx(acct.epsilon_spent)
    assert "ρ-zCDP" in rel.guarantee_details and "0.2, 0.3, 0.5" in rel.guarantee_details
    rel.verify()


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("noise", ["geometric", "gaussian"])
def test_every_mechanism_takes_either_noise_and_shares(name, noise):
    rng = np.random.default_rng(5)
    data = random_counts(rng, random_hierarchy(rng, 3, 3), 4, 6)
    budget = {"epsilon": 2.0} if noise == "geometric" else {"rho": 0.5}
    shares = (0.5, 0.3, 0.2)
    acct = PrivacyAccountant()
    rel = MECHANISMS[name](data, rng=1, accountant=acct, shares=shares, **budget)
    assert rel.noise == noise and rel.shares == pytest.approx(shares)
    kind = "epsilon-DP" if noise == "geometric" else "rho-zCDP"
    if rel.info.get("chain_noise_scale") != "paper":
        assert rel.guarantee.kind == kind
    if name in ("M_H^dp", "M_c^dp", "M_c^ch", "TopDown"):
        rel.verify()  # integral, non-negative, consistent, faithful; ledger matches
        assert rel.status in (None, "optimal")


def test_gaussian_post_processing_is_the_exact_model_1_optimum(data):
    """The release is the certified tree DP of its own Gaussian measurements (the L2 objective
    of Model 1, the same as for geometric noise)."""
    meas = measure_counts(data, rho=0.05, rng=4)
    rel = MECHANISMS["M_H^dp"](data, measurements=meas)
    again, info = tree_postprocess(data.hierarchy, meas.noisy, data.G, scale=1.0)
    np.testing.assert_array_equal(rel.counts, again)
    assert info["certified"] and rel.info["cost"] == info["cost"]


def test_measurements_are_reused_only_with_their_own_budget(data):
    meas = measure_counts(data, rho=0.2, shares=SHARES, rng=0)
    acct = PrivacyAccountant()
    rel = MECHANISMS["M_H^dp"](data, measurements=meas, accountant=acct)
    assert acct.entries == [] and rel.rho == 0.2
    assert MECHANISMS["TopDown"](data, rho=0.2, measurements=meas).rho == 0.2
    with pytest.raises(InvalidInput, match="differs"):
        MECHANISMS["M_H^dp"](data, 1.0, measurements=meas)
    with pytest.raises(InvalidInput, match="differs"):
        MECHANISMS["M_H^dp"](data, rho=0.3, measurements=meas)
    with pytest.raises(InvalidInput, match="shares"):
        MECHANISMS["M_H^dp"](data, shares=(0.4, 0.3, 0.3), measurements=meas)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"epsilon": 1.0, "rho": 0.5}, "exactly one of epsilon"),
        ({"rho": 0.0}, "rho"),
        ({"rho": -1.0}, "rho"),
        ({"rho": math.nan}, "rho"),
        ({"rho": "0.5"}, "rho"),
        ({"rho": 0.5, "shares": (0.5, 0.5)}, "one fraction per level"),
        ({"rho": 0.5, "shares": (0.5, 0.6, -0.1)}, "shares"),
        ({"epsilon": 1.0, "shares": (0.2, 0.2, 0.2)}, "summing to 1"),
        ({"epsilon": 1.0, "shares": (0.5, 0.5, math.nan)}, "shares"),
        ({"epsilon": 1.0, "shares": "even"}, "shares"),
    ],
)
def test_bad_budgets_are_refused_before_any_spend(data, kwargs, fragment):
    acct = PrivacyAccountant()
    for mechanism in (MECHANISMS["M_H^dp"], MECHANISMS["M_c^ch"], measure_cumulative):
        with pytest.raises(InvalidInput, match=fragment):
            mechanism(data, rng=0, accountant=acct, **kwargs)
    assert acct.entries == []


def test_paper_chain_scale_is_geometric_only(data):
    with pytest.raises(InvalidInput, match="strict"):
        MECHANISMS["M_c^ch"](data, rho=0.5, rng=0, chain_noise_scale="paper")


def test_a_pure_budget_refuses_gaussian_noise_and_spends_nothing(data):
    acct = PrivacyAccountant(5.0)
    with pytest.raises(PrivacyBudgetExceeded, match="delta"):
        MECHANISMS["M_H^dp"](data, rho=0.1, rng=0, accountant=acct)
    assert acct.entries == []


def test_zcdp_release_saves_loads_and_verifies_its_ledger(data, tmp_path):
    rel = MECHANISMS["M_c^dp"](data, rho=0.3, shares=SHARES, rng=0)
    loaded = privopt.load(rel.save(tmp_path / "rel"))
    assert loaded == rel and loaded.guarantee == rel.guarantee
    assert loaded.rho == 0.3 and loaded.shares == pytest.approx(SHARES)
    loaded.verify()
    summary = rel.summary()
    assert summary["noise"] == "gaussian" and summary["rho"] == 0.3
    assert summary["shares"] == pytest.approx(list(SHARES))
    doctored = type(rel)(
        rel.method,
        rel.hierarchy,
        rel.counts,
        rel.G,
        None,
        ledger=rel.ledger[:1],
        seeded=True,
        noise="gaussian",
        rho=0.3,
    )
    with pytest.raises(PrivacyViolation, match="rho"):
        doctored.verify()


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"noise": "laplace"}, "noise"),
        ({"noise": "gaussian"}, "rho must be given"),
        ({"rho": 0.5}, "rho must be given"),
        ({"noise": "gaussian", "rho": 0.5, "conversion_delta": 0.0}, "conversion_delta"),
        ({"noise": "gaussian", "rho": 0.5, "epsilon": 3.0}, "pass epsilon=None"),
        ({"shares": (1.0,)}, "shares"),
    ],
)
def test_release_constructor_refuses_inconsistent_budgets(data, kwargs, fragment):
    rel = MECHANISMS["M_H^dp"](data, 1.0, rng=0)
    args = {"epsilon": 1.0, **kwargs}
    with pytest.raises(InvalidInput, match=fragment):
        type(rel)(rel.method, rel.hierarchy, rel.counts, rel.G, **args)
