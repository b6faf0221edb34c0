"""The accountant's composition rules (privopt.dp.accountant, rules 1-6), against the issue's
free-release cases and against an independent ledger that follows every record.

The independent ledger knows nothing of groups' maxima: it keeps one privacy-loss total per
*record* and charges each release to the records it reads. Every parallel group splits the
data into its parts; since the accountant may not assume how two groups' parts overlap, the
records are every combination of one part per group (the worst case is among them). A record's
loss is the sum of what the releases reading it cost; the accountant's totals must equal the
largest record loss (ε and δ each), and a spend must be refused exactly when it would take that
over the budget.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.dp import PlannedSpend, PrivacyAccountant
from privopt.errors import InvalidInput, PrivacyBudgetExceeded


def test_reentering_a_parallel_group_is_a_new_release():
    acct = PrivacyAccountant(epsilon_budget=1.0)
    with acct.parallel("regions"):
        acct.spend(0.5, label="north")
    with acct.parallel("regions"):
        acct.spend(0.5, label="north")
    assert acct.epsilon_spent == pytest.approx(1.0)
    with pytest.raises(PrivacyBudgetExceeded), acct.parallel("regions"):
        acct.spend(0.5, label="north")
    assert len(acct.entries) == 2


def test_spends_on_one_part_add_up():
    acct = PrivacyAccountant()
    with acct.parallel("regions"):
        acct.spend(0.5, label="north")
        acct.spend(0.5, label="north")
        acct.spend(0.3, label="south")
        acct.spend(0.2, label="north mean", part="north")
    assert acct.epsilon_spent == pytest.approx(1.2)
    with pytest.raises(InvalidInput, match="part"):
        acct.spend(0.1, label="everyone", part="north")  # no group open: no parts


def test_delta_budget_is_enforced_without_an_epsilon_budget():
    acct = PrivacyAccountant(delta_budget=1e-6)
    acct.spend(100.0, 6e-7, label="first")
    with pytest.raises(PrivacyBudgetExceeded, match="delta"):
        acct.spend(0.1, 6e-7, label="second")
    assert acct.remaining() == (math.inf, pytest.approx(4e-7))
    assert PrivacyAccountant().remaining() == (math.inf, math.inf)  # bookkeeping only
    assert PrivacyAccountant(1.0).remaining() == (1.0, 0.0)  # pure ε budget


def test_seeded_spends_are_recorded_and_shown():
    acct = PrivacyAccountant()
    acct.spend(0.5, label="secure count")
    assert not acct.seeded
    acct.spend(0.5, label="seeded count", seeded=True)
    assert acct.seeded and acct.entries[1].seeded
    text = acct.ledger()
    assert "2 (seeded)" in text and "for testing only" in text
    with pytest.raises(InvalidInput, match="seeded"):
        PlannedSpend(0.1, label="x", seeded=1)


class RecordLedger:
    """The independent ledger: one (ε, δ) loss per record (see the module docstring)."""

    def __init__(self) -> None:
        self.releases: list[tuple[int | None, str | None, float, float]] = []

    def losses(self, releases) -> tuple[float, float]:
        groups: dict[int, set[str]] = {}
        for g, part, _, _ in releases:
            if g is not None:
                groups.setdefault(g, set()).add(part)
        names = sorted(groups)
        worst_eps = worst_delta = 0.0
        for choice in itertools.product(*(sorted(groups[g]) for g in names)):
            record = dict(
                zip(names, choice, strict=True)
            )  # the part of each group this record lies in
            eps = sum(e for g, p, e, _ in releases if g is None or record[g] == p)
            delta = sum(d for g, p, _, d in releases if g is None or record[g] == p)
            worst_eps, worst_delta = max(worst_eps, eps), max(worst_delta, delta)
        return worst_eps, worst_delta


operations = st.lists(
    st.one_of(
        st.tuples(st.just("spend"), st.floats(0.01, 1.0), st.sampled_from([0.0, 1e-7, 3e-7])),
        st.tuples(
            st.just("group"),
            st.sampled_from(["regions", "ages"]),  # labels repeat: each block is a new group
            st.lists(
                st.tuples(
                    st.sampled_from(["a", "b", "c"]),
                    st.floats(0.01, 1.0),
                    st.sampled_from([0.0, 1e-7]),
                ),
                min_size=1,
                max_size=4,
            ),
        ),
        st.tuples(
            st.just("plan"),
            st.lists(
                st.tuples(
                    st.sampled_from([None, "p1", "p2"]),
                    st.sampled_from(["a", "b"]),
                    st.floats(0.01, 0.5),
                ),
                min_size=1,
                max_size=4,
            ),
        ),
    ),
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(
    ops=operations,
    eps_budget=st.sampled_from([math.inf, 1.0, 2.5]),
    delta_budget=st.sampled_from([None, 0.0, 5e-7]),
)
def test_accountant_agrees_with_a_per_record_ledger(ops, eps_budget, delta_budget) -> None:
    acct = PrivacyAccountant(eps_budget, delta_budget)
    eps_limit = eps_budget
    delta_limit = (
        delta_budget if delta_budget is not None else (0.0 if math.isfinite(eps_budget) else 1)
    )
    ledger = RecordLedger()
    n_groups = 0

    def fits(candidate) -> bool:
        eps, delta = ledger.losses(ledger.releases + candidate)
        return eps <= eps_limit * (1 + 1e-12) and delta <= delta_limit * (1 + 1e-12)

    def attempt(candidate, call) -> None:
        before = list(acct.entries)
        if fits(candidate):
            call()
            ledger.releases.extend(candidate)
        else:
            with pytest.raises(PrivacyBudgetExceeded):
                call()
            assert acct.entries == before

    for op in ops:
        if op[0] == "spend":
            _, eps, delta = op
            attempt(
                [(None, None, eps, delta)],
                lambda: acct.spend(eps, delta, label="all"),  # noqa: B023 - called at once
            )
        elif op[0] == "group":
            _, label, spends = op
            n_groups += 1
            with acct.parallel(label):
                for part, eps, delta in spends:
                    attempt(
                        [(n_groups, part, eps, delta)],
                        lambda: acct.spend(eps, delta, label="release", part=part),  # noqa: B023 - called at once
                    )
        else:
            _, items = op
            numbers: dict[str, int] = {}
            candidate = []
            for group, part, eps in items:
                if group is None:
                    candidate.append((None, None, eps, 0.0))
                else:
                    if group not in numbers:
                        n_groups += 1
                        numbers[group] = n_groups
                    candidate.append((numbers[group], part, eps, 0.0))
            plan = [
                PlannedSpend(eps, label="planned", group=g, part=None if g is None else p)
                for g, p, eps in items
            ]
            attempt(candidate, lambda: acct.spend_all(plan))  # noqa: B023 - called at once
        eps, delta = ledger.losses(ledger.releases)
        assert acct.epsilon_spent == pytest.approx(eps, rel=1e-12, abs=1e-15)
        assert acct.delta_spent == pytest.approx(delta, rel=1e-12, abs=1e-20)
