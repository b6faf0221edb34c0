"""Privacy budget charged all-or-nothing (issue 12 defect 7): a release whose plan does not fit
records nothing and draws nothing; a release that fails after drawing leaves no spend behind."""

from __future__ import annotations

import numpy as np
import pytest
from census_helpers import random_counts, random_hierarchy
from privopt.census import (
    MECHANISMS,
    measure_chain,
    measure_counts,
    measure_cumulative,
    release,
)
from privopt.dp import PrivacyAccountant
from privopt.errors import PrivacyBudgetExceeded, SolverLimit

ALL = sorted(MECHANISMS)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(2)
    return random_counts(rng, random_hierarchy(rng, 3, 3), N=3, high=5)


@pytest.mark.parametrize("name", ALL)
def test_budget_one_level_short_records_and_draws_nothing(data, name):
    # ε = 0.9 over L = 3 levels is three spends of 0.3; the budget holds two and a half. The
    # old M_c^ch recorded 1/3 of ε, then refused.
    eps, L = 0.9, data.hierarchy.n_levels
    acct = PrivacyAccountant(epsilon_budget=eps * (L - 0.5) / L)
    acct.spend(1e-3, label="earlier release")
    before = list(acct.entries)
    gen = np.random.default_rng(7)
    state = gen.bit_generator.state
    with pytest.raises(PrivacyBudgetExceeded):
        release(data, eps, name, rng=gen, accountant=acct)
    assert acct.entries == before
    assert gen.bit_generator.state == state  # no noise was drawn


@pytest.mark.parametrize("name", ALL)
def test_budget_just_enough_records_every_level(data, name):
    eps, L = 0.9, data.hierarchy.n_levels
    acct = PrivacyAccountant(epsilon_budget=eps)
    rel = release(data, eps, name, rng=0, accountant=acct)
    assert len(acct.entries) == L and acct.entries == rel.ledger
    assert acct.epsilon_spent == pytest.approx(eps)
    with pytest.raises(PrivacyBudgetExceeded):  # nothing left, not even one level
        release(data, 1e-9 * L, name, rng=0, accountant=acct)
    assert len(acct.entries) == L


@pytest.mark.parametrize("measure", [measure_counts, measure_cumulative, measure_chain])
def test_measurements_one_level_short(data, measure):
    acct = PrivacyAccountant(epsilon_budget=0.5)
    with pytest.raises(PrivacyBudgetExceeded):
        measure(data, 0.6, rng=0, accountant=acct)
    assert acct.entries == []


POSTPROCESS = {
    "M_H^dp": "tree_postprocess",
    "M_c^dp": "tree_postprocess",
    "M_c^ch": "chain_postprocess",
    "M_H^r": "solve_qp",
    "M_c^r": "solve_qp",
}


@pytest.mark.parametrize("name", sorted(POSTPROCESS))
def test_failure_after_drawing_rolls_the_spend_back(data, name, monkeypatch):
    # The noise was drawn but nothing derived from it was released: no spend remains.
    import privopt.census.mechanisms as mech

    def refuse(*args, **kwargs):
        raise SolverLimit("post-processing refused (test)")

    monkeypatch.setattr(mech, POSTPROCESS[name], refuse)
    acct = PrivacyAccountant(epsilon_budget=2.0)
    with pytest.raises(SolverLimit):
        release(data, 1.0, name, rng=0, accountant=acct)
    assert acct.entries == []
    release(data, 1.0, "TopDown", rng=0, accountant=acct)  # the budget is intact
    assert acct.epsilon_spent == pytest.approx(1.0)
