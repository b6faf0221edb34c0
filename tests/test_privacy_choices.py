"""Privacy is chosen, not defaulted, and every release states it in plain words with numbers.

1. No public callable or constructor gives a privacy parameter (ε, δ, ρ and their variants) a
   numeric default: a user who forgets one gets an error naming it, not a silent choice. The
   few real exceptions are listed in :data:`NOT_A_PRIVACY_CHOICE` with the reason.
2. Each registered mechanism's example release states its guarantee with its numbers: the
   factor e^ε (rounded as the reports round it) and, for metric guarantees, the unit.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import privopt
import pytest
from privopt.census import CensusCounts, Hierarchy, m_h_dp, release
from privopt.dp import PlannedSpend, PrivacyAccountant, zcdp_epsilon
from privopt.errors import InvalidInput
from privopt.geo import GeoParams
from privopt.mdp import MDPProblem, solve
from privopt.registry import mechanism
from privopt.report import format_number

#: A privacy parameter by name: epsilon, delta, rho, eps_*, or a name ending in one of them.
PRIVACY_NAME = re.compile(r"^(epsilon|delta|rho|eps)(_\w+)?$|_(epsilon|delta|rho)$")

#: (qualified name, parameter) -> why its default is not a privacy choice made for the user.
NOT_A_PRIVACY_CHOICE: dict[tuple[str, str], str] = {
    ("GeoParams", "eps_d_cap"): "a cap on ε·d for dropping LP rows that cannot bind (a solver "
    "tolerance); the release is repaired and verified against every pair",
    ("PrivacyAccountant", "epsilon_budget"): "a cap on what may be spent (inf: none), "
    "not the privacy of any release",
    ("PrivacyAccountant", "rho_budget"): "a cap on what may be spent, not a release",
    ("PrivacyAccountant", "conversion_delta"): "the δ at which a ρ-zCDP spend is read "
    "as (ε, δ)-DP; the zCDP guarantee holds at every δ",
    ("CensusRelease", "conversion_delta"): "the δ at which ρ-zCDP is read as (ε, δ)-DP",
    ("LevelBudget", "conversion_delta"): "the δ at which ρ-zCDP is read as (ε, δ)-DP",
    ("level_budget", "conversion_delta"): "the δ at which ρ-zCDP is read as (ε, δ)-DP",
    ("PrivacyAccountant.spend", "epsilon"): "a spend is (ε, δ) or ρ; the other is 0 and a spend "
    "with neither is refused",
    ("PrivacyAccountant.spend", "delta"): "δ = 0 is pure ε-DP, stated by the spend's ε",
    ("PrivacyAccountant.spend", "rho"): "a spend is (ε, δ) or ρ; the other is 0",
    ("PlannedSpend", "epsilon"): "the arguments of PrivacyAccountant.spend",
    ("PlannedSpend", "delta"): "the arguments of PrivacyAccountant.spend",
    ("PlannedSpend", "rho"): "the arguments of PrivacyAccountant.spend",
    ("LedgerEntry", "rho"): "a record of a spend made, 0 for an (ε, δ) spend",
}


def _public_modules() -> Iterator[Any]:
    yield privopt
    for info in pkgutil.walk_packages(privopt.__path__, "privopt."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts) or parts[0] == "cluster":
            continue  # DPM states its own ε/δ rule (tests/cluster)
        yield importlib.import_module(info.name)


def _callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    seen: set[int] = set()
    for module in _public_modules():
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            targets: list[tuple[str, Any]] = []
            if inspect.isclass(obj):
                targets.append((obj.__qualname__, obj))
                for attr, value in vars(obj).items():
                    if inspect.isfunction(value) and not attr.startswith("_"):
                        targets.append((f"{obj.__qualname__}.{attr}", value))
                    elif isinstance(value, (classmethod, staticmethod)) and not attr.startswith(
                        "_"
                    ):
                        targets.append((f"{obj.__qualname__}.{attr}", value.__func__))
            elif callable(obj):
                targets.append((getattr(obj, "__qualname__", name), obj))
            for qualname, target in targets:
                if id(target) not in seen:
                    seen.add(id(target))
                    yield qualname, target


def _numeric_privacy_defaults() -> list[tuple[str, str, Any]]:
    found = []
    for qualname, target in _callables():
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):
            continue
        for p in signature.parameters.values():
            default = p.default
            numeric = isinstance(default, (int, float)) and not isinstance(default, bool)
            if PRIVACY_NAME.search(p.name) and numeric:
                found.append((qualname, p.name, default))
    return found


def test_no_privacy_parameter_has_a_numeric_default() -> None:
    found = _numeric_privacy_defaults()
    assert found, "the walk found no privacy parameter at all: it is not looking"
    unexplained = [f for f in found if (f[0], f[1]) not in NOT_A_PRIVACY_CHOICE]
    assert not unexplained, f"privacy parameters with a default chosen for the user: {unexplained}"


def test_the_allow_list_names_only_real_parameters() -> None:
    found = {(q, n) for q, n, _ in _numeric_privacy_defaults()}
    stale = set(NOT_A_PRIVACY_CHOICE) - found
    assert not stale, f"allow-listed parameters that no longer exist or have no default: {stale}"


def test_geo_params_require_epsilon() -> None:
    with pytest.raises(TypeError, match="epsilon"):
        GeoParams()  # type: ignore[call-arg]
    with pytest.raises(InvalidInput, match="epsilon"):
        GeoParams.from_json({"gamma": 0.5})
    assert GeoParams(epsilon=2.0).epsilon == 2.0


def test_zcdp_conversion_needs_its_delta() -> None:
    with pytest.raises(TypeError, match="delta"):
        zcdp_epsilon(0.5)  # type: ignore[call-arg]


def test_a_spend_with_neither_epsilon_nor_rho_is_refused() -> None:
    with pytest.raises(InvalidInput, match=r"epsilon.*rho"):
        PlannedSpend(label="count", mechanism="discrete Laplace")
    with pytest.raises(InvalidInput, match=r"epsilon.*rho"):
        PrivacyAccountant().spend(label="count", mechanism="discrete Laplace")


def test_census_needs_exactly_one_of_epsilon_and_rho() -> None:
    data = CensusCounts.from_leaf_counts(
        Hierarchy.from_nested({"US": ["GA", "NY"]}), [[2, 0, 1], [1, 1, 1]]
    )
    for call in (lambda: release(data, method="M_c^dp"), lambda: m_h_dp(data)):
        with pytest.raises(InvalidInput, match="epsilon is required"):
            call()
    with pytest.raises(InvalidInput, match="exactly one of epsilon"):
        m_h_dp(data, 1.0, rho=0.5)


@pytest.mark.parametrize("name", [m.name for m in privopt.mechanisms()])
def test_guarantee_text_states_the_numbers(name: str) -> None:
    released = mechanism(name).example()
    guarantee = released.guarantee
    text = released.summary()["guarantee_text"]
    assert text == guarantee.describe()
    assert text in released.report().body  # the report's header states the same
    params = guarantee.parameters
    if guarantee.kind == "k-anonymity":
        k = int(params["k"])
        assert f"k = {k}" in text and f"at least {k - 1} other rows" in text
        assert "not a differential-privacy guarantee" in text
        return
    epsilon = params["epsilon"]
    factor = f"e^{format_number(epsilon)} = {format_number(math.exp(epsilon))}"
    assert factor in text
    assert "probability" in text
    if guarantee.kind in ("epsilon-metric-DP", "(epsilon, gamma)-Geo-Ind"):
        unit = guarantee.unit or "distance unit"
        assert f"per {unit}" in text and f"1 {unit} apart" in text
    if "delta" in params:
        assert f"except with probability at most {format_number(params['delta'])}" in text
    if name == "geo":
        assert guarantee.unit == "km"
        stay = released.true_location_probability()  # type: ignore[attr-defined]
        assert 0.0 < stay <= 1.0
        # the same number as the Bayes adversary's, uniform prior over each LR set
        seen = released.inference_error()  # type: ignore[attr-defined]
        assert stay == pytest.approx(np.mean([e.true_report_probability for e in seen]))
        assert f"reported as itself with probability {format_number(stay)}" in text


def test_metric_guarantee_is_in_km_for_coordinates_on_the_earth() -> None:
    points = np.array([[41.9, 12.5], [41.91, 12.5], [41.92, 12.5]])  # (lat, lon)
    pm = solve(MDPProblem(points, epsilon=2.0, eta=2.0, metric="haversine"), progress=False)
    text = pm.guarantee.describe()
    assert "epsilon = 2 per km" in text and "e^2 = 7.389" in text and "within 2 km" in text
