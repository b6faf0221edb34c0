"""Per-level budget shares: the implied errors against the noise pmf, the targets met (or the
worst excess minimised) against random splits, and the errors checked by simulating releases."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from privopt.census import MECHANISMS, allocate_budget
from privopt.census.budget import MEASUREMENT_OF
from privopt.census.synthetic import synthetic_hierarchy
from privopt.dp import discrete_gaussian_pmf, discrete_laplace_pmf
from privopt.errors import InvalidInput


@pytest.fixture(scope="module")
def data():
    """3 levels (1 + 6 + 30 regions) × 3 sizes, counts in the hundreds."""
    return synthetic_hierarchy([6, 5], 60_000, N=3, seed=3)


def _worst_ratio(plan, shares, level_sizes) -> float:
    """Worst RMSE / target of ``shares``, from the noise pmf (independent of the module)."""
    return max(
        _pmf_rmse(plan, lev, share, level_sizes) / plan.targets[lev]
        for lev, share in enumerate(shares)
    )


def _pmf_rmse(plan, lev: int, share: float, level_sizes) -> float:
    """RMSE of one measured count, from the exact pmf of the level's noise."""
    kind = MEASUREMENT_OF[plan.method]
    budget = plan.total * share
    if plan.noise == "geometric":
        sens = {"counts": 2, "cumulative": 1, "chain": int(level_sizes[lev])}[kind]
        scale = sens / budget
        k = np.arange(-int(60 * scale) - 10, int(60 * scale) + 11)
        var = float(np.sum(discrete_laplace_pmf(k, budget, sensitivity=sens) * k * k))
    else:
        sens2 = {"counts": 2.0, "cumulative": 1.0, "chain": float(level_sizes[lev])}[kind]
        sigma = math.sqrt(sens2 / (2 * budget))
        k = np.arange(-int(14 * sigma) - 3, int(14 * sigma) + 4)
        var = float(np.sum(discrete_gaussian_pmf(k, sigma) * k * k))
    return math.sqrt(var * (1 if kind == "counts" else 2))


@pytest.mark.parametrize("method", ["M_H^dp", "M_c^dp", "M_c^ch"])
@pytest.mark.parametrize("budget", [{"epsilon": 1.0}, {"rho": 0.05}])
def test_expected_error_matches_the_noise_pmf(data, method, budget):
    plan = allocate_budget(data.hierarchy, targets=[40.0, 30.0, 20.0], method=method, **budget)
    for lev, share in enumerate(plan.shares):
        exact = _pmf_rmse(plan, lev, share, data.hierarchy.level_sizes)
        assert plan.expected_rmse[lev] == pytest.approx(exact, rel=1e-6)


@pytest.mark.parametrize(
    ("budget", "targets", "met"),
    [
        ({"epsilon": 1.0}, [40.0, 30.0, 20.0], True),  # reachable
        ({"epsilon": 0.2}, [10.0, 10.0, 5.0], False),  # far beyond this budget
        ({"rho": 0.05}, [40.0, 30.0, 20.0], True),
        ({"rho": 0.001}, [10.0, 10.0, 5.0], False),
    ],
)
def test_shares_meet_the_targets_or_minimise_the_worst_excess(data, budget, targets, met):
    plan = allocate_budget(data.hierarchy, targets=targets, method="M_H^dp", **budget)
    assert plan.met is met
    assert math.isclose(sum(plan.shares), 1.0, rel_tol=1e-12) and min(plan.shares) > 0
    ratios = np.asarray(plan.expected_rmse) / np.asarray(targets)
    assert (ratios <= 1 + 1e-9).all() if met else (ratios.max() > 1)
    assert ratios.max() - ratios.min() <= 1e-6 * ratios.max()  # the same ratio at every level
    # No other split does better on the worst ratio (minimax), nor does the even split.
    rng = np.random.default_rng(0)
    for shares in [np.full(3, 1 / 3), *rng.dirichlet(np.ones(3), size=60)]:
        assert _worst_ratio(plan, shares, data.hierarchy.level_sizes) >= plan.worst_ratio * (
            1 - 1e-6
        )


def test_without_targets_the_worst_rmse_is_minimised(data):
    plan = allocate_budget(data, 1.0, method="M_c^ch")  # the chain's Δ grows with |R_ℓ|
    assert plan.met is None and plan.targets is None
    assert np.ptp(plan.expected_rmse) <= 1e-6 * max(plan.expected_rmse)
    assert plan.shares[0] < plan.shares[1] < plan.shares[2]
    even = allocate_budget(data, 1.0)  # counts: the same Δ at every level, the even split
    assert np.allclose(even.shares, 1 / 3)


@pytest.mark.parametrize(("method", "budget"), [("M_H", {"rho": 0.05}), ("M_H", {"epsilon": 1.0})])
def test_simulated_error_of_raw_measurements_is_the_expected_one(data, method, budget):
    """M_H releases the measurements themselves. 150 releases: the top level (1 region × 3
    sizes) rests on 450 draws, an RMSE sampling error of about 5 % for the heavy-tailed
    double geometric; the measured RMSE lies within 15 % of the planned one."""
    plan = allocate_budget(data, targets=[40.0, 30.0, 20.0], method=method, **budget)
    measured = plan.simulate(data, runs=150, random_state=1, progress=False)
    assert np.allclose(measured, plan.expected_rmse, rtol=0.15)


@pytest.mark.parametrize("method", ["M_H^dp", "M_c^dp"])
def test_simulated_releases_meet_the_targets(data, method):
    """The post-processed counts are at least as accurate as the planned measurements: their
    measured RMSE stays within the targets (verified by simulating 20 releases)."""
    targets = [40.0, 30.0, 20.0]
    plan = allocate_budget(data, rho=0.05, targets=targets, method=method)
    assert plan.met
    with ThreadPoolExecutor(2) as pool:
        measured = plan.simulate(data, runs=20, random_state=2, executor=pool, progress=False)
    assert (measured <= np.asarray(targets)).all()
    release = MECHANISMS[method](data, rng=0, **plan.mechanism_arguments())
    assert release.shares == pytest.approx(plan.shares)


def test_a_scalar_target_applies_to_every_level(data):
    plan = allocate_budget(data, 1.0, targets=25.0)
    assert plan.targets == (25.0, 25.0, 25.0)
    assert list(plan.to_frame(data.hierarchy.level_names)["share"]) == list(plan.shares)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({}, "exactly one of epsilon"),
        ({"epsilon": 1.0, "rho": 0.1}, "exactly one of epsilon"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"rho": -1.0}, "rho must be > 0"),
        ({"epsilon": 1.0, "targets": [1.0, 2.0]}, "one RMSE per level"),
        ({"epsilon": 1.0, "targets": [1.0, 0.0, 2.0]}, "targets must be > 0"),
        ({"epsilon": 1.0, "targets": [1.0, math.nan, 2.0]}, "targets"),
        ({"epsilon": 1.0, "method": "M_X"}, "method must be one of"),
    ],
)
def test_bad_arguments_are_named(data, kwargs, fragment):
    with pytest.raises(InvalidInput, match=fragment):
        allocate_budget(data.hierarchy, **kwargs)
