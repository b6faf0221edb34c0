"""One privacy accountant shared by threads: no spend slips past the budget, and no thread's
parallel group or rollback touches another thread's spends."""

from __future__ import annotations

import threading

import pytest
from privopt.dp import PlannedSpend, PrivacyAccountant
from privopt.errors import PrivacyBudgetExceeded


def run_together(n: int, work) -> None:
    """Run ``work(i)`` for i < n on n threads released at the same instant."""
    start = threading.Barrier(n)

    def go(i: int) -> None:
        start.wait()
        work(i)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_threads_racing_for_the_last_of_the_budget_never_overspend():
    """8 threads × 200 spends of 0.001 on a budget of 1: checking and recording are one step,
    so exactly 1000 spends fit and every other one is refused."""
    acct = PrivacyAccountant(1.0)
    refused = []

    def work(i: int) -> None:
        for _ in range(200):
            try:
                acct.spend(0.001, label=f"t{i}")
            except PrivacyBudgetExceeded:
                refused.append(i)

    run_together(8, work)
    assert acct.epsilon_spent == pytest.approx(1.0)
    assert len(acct.entries) == 1000 and len(refused) == 600


def test_a_spend_of_another_thread_does_not_join_an_open_parallel_group():
    """Thread A has ``parallel("g")`` open; thread B's sequential spend reads all the data and
    must cost in full, not hide as one more part of A's group."""
    acct = PrivacyAccountant()
    inside, done = threading.Event(), threading.Event()

    def other() -> None:
        inside.wait()
        acct.spend(0.5, label="everyone")
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with acct.parallel("g"):
        acct.spend(0.5, label="north")
        inside.set()
        done.wait()
    t.join()
    assert acct.epsilon_spent == pytest.approx(1.0)
    assert [e.group for e in acct.entries] == ["g", None]


def test_a_failed_transaction_undoes_only_its_own_thread_spends():
    acct = PrivacyAccountant()
    inside, done = threading.Event(), threading.Event()

    def other() -> None:
        inside.wait()
        acct.spend(0.25, label="released by B")
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with pytest.raises(RuntimeError), acct.transaction([PlannedSpend(0.5, label="A")]):
        acct.spend(0.5, label="A")
        inside.set()
        done.wait()
        raise RuntimeError("A failed before releasing")
    t.join()
    assert [e.label for e in acct.entries] == ["released by B"]


def test_plans_from_threads_take_distinct_groups():
    """Two threads each charge a plan with a parallel group at once: two groups, two costs."""
    acct = PrivacyAccountant()

    def work(i: int) -> None:
        acct.spend_all([PlannedSpend(0.3, label=p, group="regions") for p in ("n", "s")])

    run_together(2, work)
    assert len({e.group_index for e in acct.entries}) == 2
    assert acct.epsilon_spent == pytest.approx(0.6)


def test_a_copy_of_an_accountant_keeps_its_ledger():
    import copy
    import pickle

    acct = PrivacyAccountant(1.0)
    acct.spend(0.4, label="a")
    for clone in (copy.deepcopy(acct), pickle.loads(pickle.dumps(acct))):
        assert clone.entries == acct.entries
        clone.spend(0.5, label="b")
        with pytest.raises(PrivacyBudgetExceeded):
            clone.spend(0.2, label="c")
