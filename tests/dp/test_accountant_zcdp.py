"""The accountant's zCDP rules: ρ composes as ε does, is stated as (ε, δ) at the accountant's
conversion δ, and a ρ budget bounds the whole ledger in zCDP (Bun & Steinke 2016)."""

from __future__ import annotations

import math

import pytest
from privopt.dp import (
    PlannedSpend,
    PrivacyAccountant,
    discrete_gaussian_delta,
    gaussian_delta,
    zcdp_epsilon,
)
from privopt.errors import InvalidInput, PrivacyBudgetExceeded


def test_conversion_is_bun_steinke_proposition_1_3():
    for rho in (1e-4, 0.01, 0.5, 2.63, 40.0):
        for delta in (1e-10, 1e-6, 0.01):
            assert zcdp_epsilon(rho, delta) == pytest.approx(
                rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-15
            )
    assert zcdp_epsilon(0.0, 1e-6) == 0.0


@pytest.mark.parametrize("sigma", [1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_conversion_is_sound_for_the_gaussian_mechanism(sigma, delta):
    """Oracle: the Gaussian mechanism of ℓ2-sensitivity 1 is (1/(2σ²))-zCDP; its exact δ at the
    converted ε (Balle & Wang's condition, continuous; CKS Thm 7, discrete) is at most δ."""
    rho = 1.0 / (2.0 * sigma**2)
    eps = zcdp_epsilon(rho, delta)
    assert gaussian_delta(sigma, eps) <= delta
    assert discrete_gaussian_delta(sigma, eps) <= delta


@pytest.mark.parametrize(
    ("rho", "delta", "fragment"),
    [(-0.1, 1e-6, "rho"), (math.nan, 1e-6, "rho"), (math.inf, 1e-6, "rho"), (0.1, 0.0, "delta")],
)
def test_conversion_refuses_bad_parameters(rho, delta, fragment):
    with pytest.raises(InvalidInput, match=fragment):
        zcdp_epsilon(rho, delta)


def test_rho_composes_like_epsilon_and_is_converted_once():
    acct = PrivacyAccountant(conversion_delta=1e-8)
    acct.spend(rho=0.1, label="counts")
    with acct.parallel("states"):
        acct.spend(rho=0.2, label="north")
        acct.spend(rho=0.05, label="south")
        acct.spend(rho=0.05, label="south again", part="south")
    assert acct.zcdp_rho_spent == pytest.approx(0.3)
    assert acct.rho_spent == pytest.approx(0.3)
    # Converted once, from the composed ρ (not spend by spend, which would be looser).
    assert acct.epsilon_spent == pytest.approx(zcdp_epsilon(0.3, 1e-8))
    assert acct.delta_spent == 1e-8
    acct.spend(0.5, label="a pure spend")
    assert acct.epsilon_spent == pytest.approx(0.5 + zcdp_epsilon(0.3, 1e-8))
    assert acct.rho_spent == pytest.approx(0.3 + 0.5**2 / 2)  # Proposition 1.4


def test_pure_ledger_totals_are_unchanged():
    acct = PrivacyAccountant(1.0)
    acct.spend(0.5, label="a")
    assert (acct.epsilon_spent, acct.delta_spent) == (0.5, 0.0)
    assert acct.rho_spent == 0.125
    assert "rho" not in acct.ledger().splitlines()[0].split()


def test_a_spend_with_delta_has_no_zcdp_bound():
    acct = PrivacyAccountant()
    acct.spend(0.5, 1e-6, label="approximate")
    assert math.isinf(acct.rho_spent)
    bounded = PrivacyAccountant(rho_budget=1.0)
    with pytest.raises(PrivacyBudgetExceeded, match="no zCDP bound"):
        bounded.spend(0.5, 1e-6, label="approximate")
    assert bounded.entries == []


def test_rho_budget_is_enforced_before_recording():
    acct = PrivacyAccountant(rho_budget=0.5)
    acct.spend(rho=0.3, label="first")
    with pytest.raises(PrivacyBudgetExceeded, match=r"rho=0\.6"):
        acct.spend(rho=0.3, label="second")
    assert len(acct.entries) == 1
    assert acct.remaining_rho() == pytest.approx(0.2)
    with pytest.raises(PrivacyBudgetExceeded):
        acct.spend_all([PlannedSpend(rho=0.1, label="a"), PlannedSpend(rho=0.15, label="b")])
    assert len(acct.entries) == 1
    acct.spend(rho=0.2, label="the rest")  # exactly the budget fits
    assert acct.remaining_rho() == pytest.approx(0.0, abs=1e-12)


def test_pure_epsilon_budget_refuses_a_zcdp_spend_and_says_why():
    acct = PrivacyAccountant(10.0)  # δ = 0: no zCDP spend can fit
    with pytest.raises(PrivacyBudgetExceeded, match="declare a delta_budget"):
        acct.spend(rho=0.01, label="counts")
    assert acct.entries == []
    ok = PrivacyAccountant(10.0, delta_budget=1e-6, conversion_delta=1e-6)
    ok.spend(rho=0.5, label="counts")
    assert ok.epsilon_spent == pytest.approx(zcdp_epsilon(0.5, 1e-6))
    with pytest.raises(PrivacyBudgetExceeded):
        ok.spend(rho=5.0, label="too much")  # converted ε goes over 10


def test_transaction_takes_back_zcdp_spends():
    acct = PrivacyAccountant()
    with pytest.raises(RuntimeError), acct.transaction():
        acct.spend(rho=0.2, label="counts")
        raise RuntimeError("post-processing failed")
    assert acct.entries == [] and acct.rho_spent == 0.0


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"rho": 0.1, "epsilon": 0.5}, "either rho"),
        ({"rho": 0.1, "delta": 1e-6}, "either rho"),
        ({"rho": -0.1}, "rho"),
        ({"rho": math.nan}, "rho"),
        ({"rho": math.inf}, "rho"),
        ({"rho": "0.1"}, "rho"),
        ({"rho": True}, "rho"),
        ({}, "epsilon"),  # neither: a spend must cost something
    ],
)
def test_malformed_zcdp_spends_are_refused(kwargs, fragment):
    with pytest.raises(InvalidInput, match=fragment):
        PlannedSpend(label="x", **kwargs)
    with pytest.raises(InvalidInput, match=fragment):
        PrivacyAccountant().spend(label="x", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"rho_budget": 0.0}, "rho_budget"),
        ({"rho_budget": -1.0}, "rho_budget"),
        ({"rho_budget": math.nan}, "rho_budget"),
        ({"conversion_delta": 0.0}, "conversion_delta"),
        ({"conversion_delta": 1.0}, "conversion_delta"),
        ({"conversion_delta": "1e-6"}, "conversion_delta"),
    ],
)
def test_bad_zcdp_budgets_are_refused(kwargs, fragment):
    with pytest.raises(InvalidInput, match=fragment):
        PrivacyAccountant(**kwargs)


def test_ledger_shows_rho_and_its_conversion():
    acct = PrivacyAccountant(rho_budget=1.0, delta_budget=1e-6)
    acct.spend(rho=0.125, label="county counts", mechanism="discrete Gaussian", sensitivity=1.5)
    acct.spend(0.5, label="total", mechanism="discrete Laplace")
    text = acct.ledger()
    header = text.splitlines()[0].split()
    assert header[:6] == ["#", "label", "mechanism", "epsilon", "delta", "rho"]
    assert "0.125" in text.splitlines()[2]
    assert f"epsilon={zcdp_epsilon(0.125, 1e-10):.6g}" in text
    assert "whole ledger in zCDP: rho=0.25" in text
    assert "rho_budget=1.0" in repr(acct)
