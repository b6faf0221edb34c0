"""Privacy accountant: composition arithmetic, budget enforcement, ledger text."""

from __future__ import annotations

import math

import pytest
from privopt.dp import LedgerEntry, PrivacyAccountant
from privopt.errors import InvalidInput, PrivacyBudgetExceeded


def test_sequential_composition_adds():
    acct = PrivacyAccountant()
    acct.spend(0.1, label="a")
    acct.spend(0.25, 1e-6, label="b", mechanism="Gaussian", sensitivity=2.0)
    acct.spend(0.05, 2e-6, label="c")
    assert acct.epsilon_spent == pytest.approx(0.4, rel=1e-15)
    assert acct.delta_spent == pytest.approx(3e-6, rel=1e-15)
    assert acct.remaining() == (math.inf, math.inf)  # no budget declared: bookkeeping only
    assert acct.entries[1] == LedgerEntry("b", "Gaussian", 0.25, 1e-6, 2.0, None)


def test_declared_epsilon_budget_alone_means_pure_dp():
    acct = PrivacyAccountant(epsilon_budget=1.0)
    with pytest.raises(PrivacyBudgetExceeded, match="delta"):
        acct.spend(0.1, 1e-9, label="gaussian")
    acct.spend(0.1, label="laplace")
    assert acct.remaining() == (pytest.approx(0.9), 0.0)


def test_parallel_groups_count_their_max():
    acct = PrivacyAccountant(epsilon_budget=2.0, delta_budget=1e-5)
    acct.spend(0.5, label="total")
    with acct.parallel("regions") as same:
        assert same is acct
        acct.spend(0.3, 1e-6, label="north")
        acct.spend(0.7, label="south")
        acct.spend(0.2, 4e-6, label="east")
    acct.spend(0.1, label="after")
    with acct.parallel("ages"):
        acct.spend(0.2, label="young")
        acct.spend(0.2, label="old")
    # 0.5 + max(0.3, 0.7, 0.2) + 0.1 + max(0.2, 0.2); δ: max(1e-6, 0, 4e-6)
    assert acct.epsilon_spent == pytest.approx(1.5, rel=1e-15)
    assert acct.delta_spent == pytest.approx(4e-6, rel=1e-15)
    rem_eps, rem_delta = acct.remaining()
    assert rem_eps == pytest.approx(0.5) and rem_delta == pytest.approx(6e-6)
    assert [e.group for e in acct.entries] == [
        None,
        "regions",
        "regions",
        "regions",
        None,
        "ages",
        "ages",
    ]


def test_parallel_spend_within_group_max_is_free_of_budget_growth():
    acct = PrivacyAccountant(epsilon_budget=1.0)
    with acct.parallel("cells"):
        for i in range(100):  # 100 disjoint cells at ε = 1 each: still ε = 1 in total
            acct.spend(1.0, label=f"cell {i}")
    assert acct.epsilon_spent == 1.0


def test_budget_exceeded_raises_before_recording():
    acct = PrivacyAccountant(epsilon_budget=1.0, delta_budget=1e-6)
    acct.spend(0.6, label="first")
    before = list(acct.entries)
    with pytest.raises(PrivacyBudgetExceeded, match="second"):
        acct.spend(0.5, label="second")
    with pytest.raises(PrivacyBudgetExceeded, match="delta"):
        acct.spend(0.1, 2e-6, label="third")
    with pytest.raises(PrivacyBudgetExceeded), acct.parallel("g"):
        acct.spend(0.3, label="g1")
        acct.spend(0.45, label="g2")  # group max 0.45 → total 1.05
    assert acct.entries == [*before, acct.entries[-1]]  # only g1 recorded
    assert acct.epsilon_spent == pytest.approx(0.9)
    assert acct._group is None  # the context closed despite the exception


def test_equal_split_of_budget_never_fails_on_rounding():
    acct = PrivacyAccountant(epsilon_budget=0.3)
    for _ in range(3):
        acct.spend(0.1, label="third")  # 0.1+0.1+0.1 = 0.30000000000000004 > 0.3
    acct2 = PrivacyAccountant(epsilon_budget=1.0)
    for _ in range(10):
        acct2.spend(0.1, label="tenth")
    with pytest.raises(PrivacyBudgetExceeded):
        acct2.spend(1e-9, label="one too many")


def test_ledger_text():
    acct = PrivacyAccountant(epsilon_budget=1.0, delta_budget=1e-5)
    assert "(no spends)" in acct.ledger()
    acct.spend(0.5, label="county counts", mechanism="discrete Laplace", sensitivity=1)
    with acct.parallel("states"):
        acct.spend(0.25, 1e-6, label="state sums", mechanism="Gaussian", sensitivity=3.5)
    text = acct.ledger()
    assert str(acct) == text
    lines = text.splitlines()
    assert lines[0].split() == [
        "#",
        "label",
        "mechanism",
        "epsilon",
        "delta",
        "sensitivity",
        "group",
        "part",
    ]
    assert "county counts" in lines[2] and "discrete Laplace" in lines[2] and "0.5" in lines[2]
    assert "state sums" in lines[3] and "states #1" in lines[3] and "1e-06" in lines[3]
    assert "spent:     epsilon=0.75  delta=1e-06" in text
    assert "remaining: epsilon=0.25  delta=9e-06" in text
    # Columns are aligned: every row starts its 'label' cell at the same offset.
    assert lines[2].index("county") == lines[3].index("state") == lines[0].index("label")
    assert "entries=2" in repr(acct)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"epsilon": 0.0, "label": "x"}, "epsilon"),
        ({"epsilon": -1.0, "label": "x"}, "epsilon"),
        ({"epsilon": math.nan, "label": "x"}, "epsilon"),
        ({"epsilon": math.inf, "label": "x"}, "epsilon"),
        ({"epsilon": 1.0, "delta": 1.0, "label": "x"}, "delta"),
        ({"epsilon": 1.0, "delta": -0.1, "label": "x"}, "delta"),
        ({"epsilon": 1.0, "label": ""}, "label"),
        ({"epsilon": 1.0, "label": "x", "sensitivity": -1}, "sensitivity"),
    ],
)
def test_invalid_spend(kwargs, name):
    acct = PrivacyAccountant()
    with pytest.raises(InvalidInput, match=name):
        acct.spend(**kwargs)
    assert acct.entries == []


def test_invalid_budget_and_nested_groups():
    with pytest.raises(InvalidInput, match="epsilon_budget"):
        PrivacyAccountant(epsilon_budget=0.0)
    with pytest.raises(InvalidInput, match="epsilon_budget"):
        PrivacyAccountant(epsilon_budget=math.nan)
    with pytest.raises(InvalidInput, match="delta_budget"):
        PrivacyAccountant(delta_budget=1.0)
    acct = PrivacyAccountant()
    with pytest.raises(InvalidInput, match="nest"), acct.parallel("a"), acct.parallel("b"):
        pass
