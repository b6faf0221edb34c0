"""All-or-nothing charging: plans checked as a whole, transactions rolled back on error."""

from __future__ import annotations

import contextlib
import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.dp import PlannedSpend, PrivacyAccountant, sample_discrete_laplace
from privopt.errors import InvalidInput, PrivacyBudgetExceeded


def level_plan(epsilon: float, levels: int) -> list[PlannedSpend]:
    return [PlannedSpend(epsilon / levels, label=f"level {i + 1}/{levels}") for i in range(levels)]


def test_budget_one_level_short_is_refused_before_anything_is_recorded():
    # Three levels at ε/3 each against a budget that covers two of them (one sample short).
    acct = PrivacyAccountant(epsilon_budget=1.0)
    acct.spend(0.2, label="earlier release")
    before = list(acct.entries)
    plan = level_plan(1.2, 3)  # 0.4 + 0.4 + 0.4: the first two fit, the third does not
    with pytest.raises(PrivacyBudgetExceeded, match="plan of 3 spends"):
        acct.check_plan(plan)
    with pytest.raises(PrivacyBudgetExceeded):
        acct.spend_all(plan)
    with pytest.raises(PrivacyBudgetExceeded), acct.transaction(plan):
        pytest.fail("the block must not run when the plan does not fit")
    assert acct.entries == before
    assert acct.check_plan(plan[:2]) == (pytest.approx(1.0), 0.0)
    assert acct.entries == before  # checking records nothing


def test_budget_one_delta_sample_short():
    acct = PrivacyAccountant(epsilon_budget=10.0, delta_budget=1e-6)
    plan = [PlannedSpend(0.1, 1e-7, label=f"sample {i}") for i in range(11)]  # δ 1.1e-6
    with pytest.raises(PrivacyBudgetExceeded, match="delta"):
        acct.spend_all(plan)
    assert acct.entries == []
    new = acct.spend_all(plan[:10])
    assert acct.entries == new and len(new) == 10


def test_transaction_rolls_back_on_a_refusal_midway():
    acct = PrivacyAccountant(epsilon_budget=1.0)
    acct.spend(0.1, label="kept")
    with pytest.raises(PrivacyBudgetExceeded, match="third"), acct.transaction():
        acct.spend(0.4, label="first")
        acct.spend(0.4, label="second")
        acct.spend(0.4, label="third")
    assert [e.label for e in acct.entries] == ["kept"]


def test_transaction_rolls_back_on_any_error_and_keeps_a_success():
    acct = PrivacyAccountant(epsilon_budget=1.0)
    with pytest.raises(ZeroDivisionError), acct.transaction():
        acct.spend(0.5, label="noise drawn")
        sample_discrete_laplace(0.5, rng=0)
        _ = 1 / 0  # the mechanism fails before releasing anything
    assert acct.entries == []
    with acct.transaction(level_plan(0.9, 3)) as same:
        assert same is acct
        for spend in level_plan(0.9, 3):
            acct.spend(spend.epsilon, label=spend.label)
    assert len(acct.entries) == 3
    with pytest.raises(KeyboardInterrupt), acct.transaction():  # an interrupt is undone too
        acct.spend(0.05, label="interrupted")
        raise KeyboardInterrupt
    assert len(acct.entries) == 3


def test_nested_transactions_undo_only_their_own_spends():
    acct = PrivacyAccountant(epsilon_budget=1.0)
    with acct.transaction():
        acct.spend(0.3, label="outer")
        with pytest.raises(PrivacyBudgetExceeded), acct.transaction():
            acct.spend(0.3, label="inner ok")
            acct.spend(0.5, label="inner over")
        acct.spend(0.2, label="outer again")
    assert [e.label for e in acct.entries] == ["outer", "outer again"]


def test_plans_with_parallel_groups():
    acct = PrivacyAccountant(epsilon_budget=1.0)
    plan = [PlannedSpend(0.6, label=f"cell {i}", group="cells") for i in range(50)]
    plan.append(PlannedSpend(0.4, label="total"))
    assert acct.check_plan(plan) == (pytest.approx(1.0), 0.0)
    acct.spend_all(plan)
    assert acct.epsilon_spent == pytest.approx(1.0)
    assert {e.group for e in acct.entries} == {"cells", None}
    # Inside parallel(...), ungrouped planned spends belong to the open group.
    acct2 = PrivacyAccountant(epsilon_budget=1.0)
    with acct2.parallel("regions"):
        acct2.spend_all([PlannedSpend(0.7, label="north"), PlannedSpend(0.7, label="south")])
    assert [e.group for e in acct2.entries] == ["regions", "regions"]
    assert acct2.epsilon_spent == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("plan", "fragment"),
    [
        (PlannedSpend(0.1, label="x"), "iterable of PlannedSpend"),
        (42, "iterable of PlannedSpend"),
        ([(0.1, 0.0)], r"plan\[0\] must be a PlannedSpend"),
    ],
)
def test_malformed_plans(plan, fragment):
    acct = PrivacyAccountant(epsilon_budget=1.0)
    for call in (acct.check_plan, acct.spend_all):
        with pytest.raises(InvalidInput, match=fragment):
            call(plan)
    assert acct.entries == []


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        (dict(epsilon=0.1), "label"),
        (dict(epsilon=-0.1, label="x"), "epsilon"),
        (dict(epsilon=0.1, delta=1.5, label="x"), "delta"),
        (dict(epsilon=0.1, label="x", sensitivity=-2), "sensitivity"),
        (dict(epsilon=0.1, label="x", group=""), "group"),
    ],
)
def test_malformed_spends_are_refused_where_they_are_written(fields, fragment):
    with pytest.raises(InvalidInput, match=fragment):
        PlannedSpend(**fields)


spends = st.lists(
    st.tuples(
        st.floats(1e-6, 1.0),
        st.sampled_from([0.0, 1e-8, 1e-7]),
        st.sampled_from([None, "g1", "g2"]),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(
    prior=spends,
    plan=spends,
    eps_budget=st.floats(0.1, 5.0),
    delta_budget=st.sampled_from([0.0, 3e-7, 1e-6]),
)
def test_plan_is_all_or_nothing_and_agrees_with_spending_group_by_group(
    prior, plan, eps_budget, delta_budget
):
    acct = PrivacyAccountant(eps_budget, delta_budget)
    for i, (eps, delta, group) in enumerate(prior):
        with contextlib.suppress(PrivacyBudgetExceeded):
            acct.spend_all([PlannedSpend(eps, delta, label=f"prior {i}", group=group)])
    planned = [PlannedSpend(e, d, label=f"p{i}", group=g) for i, (e, d, g) in enumerate(plan)]
    # Oracle: the same spends recorded one at a time on a copy, each planned group in one
    # parallel() block (the plan's spends naming a group form one new group); totals only
    # grow, so the plan fits exactly when every single spend is accepted in turn.
    oracle = copy.deepcopy(acct)
    try:
        for p in planned:
            if p.group is None:
                oracle.spend(p.epsilon, p.delta, label=p.label)
        for group in dict.fromkeys(p.group for p in planned if p.group is not None):
            with oracle.parallel(group):
                for p in planned:
                    if p.group == group:
                        oracle.spend(p.epsilon, p.delta, label=p.label)
        fits = True
    except PrivacyBudgetExceeded:
        fits = False
    before = list(acct.entries)
    try:
        acct.spend_all(planned)
        assert fits
        assert acct.epsilon_spent == pytest.approx(oracle.epsilon_spent, rel=1e-12)
        assert acct.delta_spent == pytest.approx(oracle.delta_spent, rel=1e-12, abs=1e-300)
    except PrivacyBudgetExceeded:
        assert not fits
        assert acct.entries == before
