"""Privacy accountant: a ledger of (ε, δ) spends under basic composition.

The rules (Dwork & Roth 2014, Thm 3.16; McSherry 2009 for parallel composition), stated for
add/remove-one-record neighbours, where a record's privacy loss is the sum of what every release
that reads it costs:

1. **Sequential.** A spend outside any parallel group reads all the data: the totals add,
   ε = Σ εᵢ and δ = Σ δᵢ.
2. **A parallel group** is opened by ``with acct.parallel("label"):`` and *closes when that block
   exits*. Every ``with`` opens a new group, even under a label used before: two groups are two
   releases on the same data and compose sequentially.
3. **Parts.** Each spend inside a group names the disjoint part of the data it reads
   (``part=``, by default its ``label``). Spends on the same part compose sequentially within
   the part; parts are disjoint, so a record lies in one part only, and the group costs
   ``max over parts`` of the part's ε total (and, separately, of its δ total).
4. **Plans** (:meth:`PrivacyAccountant.check_plan`, :meth:`PrivacyAccountant.spend_all`): the
   spends of one plan that name the same ``group`` form one new group; inside an open
   ``parallel(...)`` block, a plan's spends with no group, or with the open group's label, join
   the open group.
5. **Budgets.** A declared budget is checked *before* a spend is recorded: a spend that would go
   over raises :class:`privopt.errors.PrivacyBudgetExceeded` and leaves the ledger exactly as
   it was. ε and δ are separate budgets: ``PrivacyAccountant()`` declares neither (bookkeeping
   only), ``PrivacyAccountant(1.0)`` a pure ε = 1 budget (δ = 0), and
   ``PrivacyAccountant(delta_budget=1e-6)`` a δ budget with ε unlimited.
6. **zCDP.** A spend may state ρ instead of ε (``rho=``: ρ-zCDP, Bun & Steinke, TCC 2016),
   as the discrete Gaussian mechanism does. ρ composes as ε does (sequential spends add, a
   parallel group counts its largest part). For the (ε, δ) totals, and so for the ε and δ
   budgets, the zCDP spends' total ρ is converted once to (ρ + 2√(ρ ln(1/δ_c)), δ_c)-DP
   (Proposition 1.3), δ_c being the accountant's ``conversion_delta``, and added to the other
   spends' totals. :attr:`PrivacyAccountant.rho_spent` states the whole ledger in zCDP: an
   ε-DP spend counts ε²/2 (Proposition 1.4); a spend with δ > 0 has no zCDP bound, so it makes
   ρ infinite. A declared ``rho_budget`` bounds :attr:`PrivacyAccountant.rho_spent`.
7. **Seeded randomness.** A spend whose noise came from a seed (``seeded=True``) is recorded as
   such: anyone who knows the seed can recompute that noise, so the release is reproducible and
   for testing only. :attr:`PrivacyAccountant.seeded` says whether any spend was.

A mechanism that spends in several steps charges *all or nothing* (never part of its cost
before a refusal): it checks its whole plan first (:meth:`PrivacyAccountant.check_plan`, or
records it in one step with :meth:`PrivacyAccountant.spend_all`), and runs inside
:meth:`PrivacyAccountant.transaction`, which removes the spends it recorded if it fails.

One accountant may be shared by threads: checking a spend against the budget and recording it
is one step under a lock (two threads cannot both fit into the last of the budget), and a
parallel group or a transaction belongs to the thread that opened it (another thread's spends
neither join the group nor are undone by its rollback).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from privopt._validation import (
    check_bool,
    check_delta,
    check_epsilon,
    check_nonnegative,
    check_positive,
)
from privopt.dp.calibration import DEFAULT_CONVERSION_DELTA, zcdp_epsilon
from privopt.errors import InvalidInput, PrivacyBudgetExceeded

__all__ = ["LedgerEntry", "PlannedSpend", "PrivacyAccountant"]

# Sums of floats drift: 0.1 + 0.2 > 0.3. A spend that exceeds the budget by no more than this
# relative slack is accepted, so that splitting a budget into k equal parts never fails.
_REL_TOL = 1e-12


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded spend.

    Attributes
    ----------
    label : what was released (e.g. "county counts").
    mechanism : which mechanism released it (e.g. "discrete Laplace").
    epsilon, delta : the (ε, δ) charged (both 0 for a zCDP spend).
    sensitivity : the sensitivity the noise was calibrated to, or None.
    group : label of the parallel group the spend belongs to, or None (sequential).
    part : inside a group, the disjoint part of the data the spend reads (None outside).
    group_index : which opening of a group (each ``parallel()`` block and each planned group
        is a new one, numbered from 1 in the ledger's order), None outside.
    seeded : the noise came from a seed: reproducible by anyone who knows it, testing only.
    rho : the ρ of a zCDP spend (0 for an (ε, δ) spend).
    """

    label: str
    mechanism: str
    epsilon: float
    delta: float
    sensitivity: float | None
    group: str | None = None
    part: str | None = None
    group_index: int | None = None
    seeded: bool = False
    rho: float = 0.0

    @property
    def zcdp_rho(self) -> float:
        """This spend in zCDP: ρ itself, ε²/2 for an ε-DP spend (Bun & Steinke 2016,
        Proposition 1.4), inf for a spend with δ > 0 (no zCDP bound)."""
        if self.rho > 0:
            return self.rho
        return 0.5 * self.epsilon * self.epsilon if self.delta == 0 else math.inf


@dataclass(frozen=True)
class PlannedSpend:
    """One spend of a plan, checked against the budget together with the others.

    The fields are the arguments of :meth:`PrivacyAccountant.spend`; ``group`` names the
    parallel group the spend belongs to, None for sequential (rule 4 of the module: the spends
    of one plan naming the same group form one new group), and ``part`` the disjoint part it
    reads within its group (default: its label). A zCDP spend gives ``rho`` and leaves ε and δ
    at 0.

    Examples
    --------
    >>> PlannedSpend(0.5, label="total count", mechanism="discrete Laplace", sensitivity=1)
    PlannedSpend(epsilon=0.5, delta=0.0, label='total count', mechanism='discrete Laplace', \
sensitivity=1, group=None, part=None, seeded=False, rho=0.0)
    >>> PlannedSpend(rho=0.1, label="county counts", mechanism="discrete Gaussian").rho
    0.1
    """

    epsilon: float = 0.0
    delta: float = 0.0
    label: str = ""
    mechanism: str = ""
    sensitivity: float | None = None
    group: str | None = None
    part: str | None = None
    seeded: bool = False
    rho: float = 0.0

    def __post_init__(self) -> None:
        self.ledger_entry()  # a malformed spend is refused where it is written

    def ledger_entry(self, group_index: int | None = None) -> LedgerEntry:
        """The validated :class:`LedgerEntry` this spend records (in group ``group_index``).

        Raises
        ------
        InvalidInput
            Bad ε, δ, ρ or sensitivity (a zCDP spend with ε or δ too), an empty label, a group
            or part that is not a non-empty string, a part outside a group, or ``seeded`` not
            a bool.
        """
        rho = check_nonnegative("rho", self.rho)
        if rho > 0:  # a zCDP spend: its (ε, δ) comes from the accountant's conversion
            if _is_zero(self.epsilon) and _is_zero(self.delta):
                epsilon, delta = 0.0, 0.0
            else:
                raise InvalidInput(
                    f"a spend states either rho (zCDP) or (epsilon, delta), got rho={self.rho!r} "
                    f"with epsilon={self.epsilon!r}, delta={self.delta!r}"
                )
        else:
            if _is_zero(self.epsilon):  # the unset default: neither kind of spend was given
                raise InvalidInput(
                    "epsilon must be > 0 (or give rho > 0 for a zCDP spend), got "
                    f"epsilon={self.epsilon!r}, rho={self.rho!r}"
                )
            epsilon = check_epsilon(self.epsilon)
            delta = check_delta(self.delta)
        sensitivity = self.sensitivity
        if sensitivity is not None:
            sensitivity = check_nonnegative("sensitivity", sensitivity)
        label, group, part = self.label, self.group, self.part
        if not isinstance(label, str) or not label:
            raise InvalidInput(f"label must be a non-empty string, got {label!r}")
        for name, value in (("group", group), ("part", part)):
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidInput(f"{name} must be None or a non-empty string, got {value!r}")
        if part is not None and group is None:
            raise InvalidInput(
                f"part={part!r} needs a parallel group: parts are disjoint pieces of the data "
                "within one group (outside a group a spend reads all of it)"
            )
        check_bool("seeded", self.seeded)
        if group is not None and part is None:
            part = label
        return LedgerEntry(
            label,
            str(self.mechanism),
            epsilon,
            delta,
            sensitivity,
            group,
            part,
            group_index if group is not None else None,
            self.seeded,
            rho,
        )


def _is_zero(value: Any) -> bool:
    """``value`` is the number 0 (not a bool, not text)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0


def _exceeds(total: float, budget: float) -> bool:
    return total > budget * (1 + _REL_TOL)


@dataclass
class _ThreadState:
    """What one thread has open on an accountant: its parallel group and its transactions
    (each the list of entries recorded inside it, to undo on failure)."""

    group: str | None = None
    group_index: int | None = None
    transactions: list[list[LedgerEntry]] = field(default_factory=list)


class PrivacyAccountant:
    """Records (ε, δ) spends and enforces a budget under basic composition.

    Parameters
    ----------
    epsilon_budget : total ε allowed (``math.inf``, the default: no ε limit).
    delta_budget : total δ allowed, in [0, 1), or None (the default): then 0 when an ε budget
        is declared (``PrivacyAccountant(1.0)`` is a pure ε = 1 budget) and unlimited when not
        (``PrivacyAccountant()`` only keeps books). A δ budget given explicitly is always
        enforced, whatever ε is.
    rho_budget : total ρ allowed in zCDP (``math.inf``, the default: no ρ limit); bounds
        :attr:`rho_spent` (rule 6 of the module docstring).
    conversion_delta : δ_c in (0, 1) at which the zCDP spends' total ρ is stated as (ε, δ)-DP
        (default 1e-10); it is added to the δ total once any zCDP spend is recorded, so under an
        ε budget with δ = 0 a zCDP spend does not fit: declare ``delta_budget`` ≥ δ_c.

    Examples
    --------
    >>> acct = PrivacyAccountant(epsilon_budget=1.0)
    >>> acct.spend(0.5, label="total count", mechanism="discrete Laplace", sensitivity=1)
    >>> with acct.parallel("per-region counts"):
    ...     acct.spend(0.3, label="north")
    ...     acct.spend(0.3, label="south")
    >>> round(acct.epsilon_spent, 10), round(acct.remaining()[0], 10)
    (0.8, 0.2)
    """

    def __init__(
        self,
        epsilon_budget: float = math.inf,
        delta_budget: float | None = None,
        *,
        rho_budget: float = math.inf,
        conversion_delta: float = DEFAULT_CONVERSION_DELTA,
    ) -> None:
        self.epsilon_budget = check_positive("epsilon_budget", epsilon_budget, allow_inf=True)
        if delta_budget is None:  # not declared: pure DP under an ε budget, else bookkeeping
            self.delta_budget = 0.0 if math.isfinite(self.epsilon_budget) else math.inf
        else:
            self.delta_budget = check_delta(delta_budget, "delta_budget")
        self.rho_budget = check_positive("rho_budget", rho_budget, allow_inf=True)
        self.conversion_delta = check_delta(conversion_delta, "conversion_delta")
        if self.conversion_delta == 0:
            raise InvalidInput(
                "conversion_delta must be > 0: rho-zCDP implies (epsilon, delta)-DP only for "
                "delta > 0"
            )
        self.entries: list[LedgerEntry] = []
        self._groups_opened = 0
        self._lock = threading.RLock()  # a budget check and its record are one step
        self._local = threading.local()  # per thread: _ThreadState

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"], state["_local"]  # neither can be copied; a copy has no open blocks
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._local = threading.local()

    def _thread(self) -> _ThreadState:
        """The calling thread's open group and transactions."""
        state = getattr(self._local, "state", None)
        if state is None:
            state = self._local.state = _ThreadState()
        return state

    @property
    def _group(self) -> str | None:
        """Label of the parallel group the calling thread has open (None: none)."""
        return self._thread().group

    def _record(self, entries: list[LedgerEntry], *, what: str) -> None:
        """Check ``entries`` against the budget and append them, as one step."""
        with self._lock:
            self._check_fits(entries, what=what)
            self.entries.extend(entries)
            opened = [e.group_index for e in entries if e.group_index is not None]
            self._groups_opened = max([self._groups_opened, *opened])
        for recorded in self._thread().transactions:
            recorded.extend(entries)

    # -- totals --------------------------------------------------------------------------
    @staticmethod
    def _composed(entries: list[LedgerEntry]) -> tuple[float, float, float, float]:
        """(ε, δ, ρ of the zCDP spends, ρ of every spend in zCDP) by the rules of the module
        docstring: sequential spends add; each group adds the maximum over its parts of the
        part's sums, for each quantity separately."""
        totals = [0.0, 0.0, 0.0, 0.0]
        parts: dict[int | None, dict[str | None, list[float]]] = {}
        for e in entries:
            values = (e.epsilon, e.delta, e.rho, e.zcdp_rho)
            if e.group is None:
                target = totals
            else:
                target = parts.setdefault(e.group_index, {}).setdefault(e.part, [0.0] * 4)
            for i, v in enumerate(values):
                target[i] += v
        for group in parts.values():
            for i in range(4):
                totals[i] += max(t[i] for t in group.values())
        return totals[0], totals[1], totals[2], totals[3]

    def _totals(self, entries: list[LedgerEntry]) -> tuple[float, float]:
        """(ε, δ) of ``entries``: the (ε, δ) spends composed, plus the zCDP spends' total ρ
        converted at :attr:`conversion_delta` (rule 6)."""
        eps, delta, rho, _ = self._composed(entries)
        if rho > 0:
            eps += zcdp_epsilon(rho, self.conversion_delta)
            delta += self.conversion_delta
        return eps, delta

    @property
    def epsilon_spent(self) -> float:
        """Total ε charged so far (sequential sum; each parallel group counts its max; zCDP
        spends as their (ε, δ) conversion)."""
        return self._totals(self.entries)[0]

    @property
    def delta_spent(self) -> float:
        """Total δ charged so far (with δ_c once any zCDP spend is recorded)."""
        return self._totals(self.entries)[1]

    @property
    def rho_spent(self) -> float:
        """The whole ledger in zCDP: ρ spends as they are, ε-DP spends as ε²/2, inf once a
        spend has δ > 0 (rule 6)."""
        return self._composed(self.entries)[3]

    @property
    def zcdp_rho_spent(self) -> float:
        """Total ρ of the zCDP spends only (what the (ε, δ) totals convert)."""
        return self._composed(self.entries)[2]

    def remaining(self) -> tuple[float, float]:
        """(ε, δ) still available: budget minus spent, floored at 0 (both inf without budget)."""
        eps, delta = self._totals(self.entries)
        return max(0.0, self.epsilon_budget - eps), max(0.0, self.delta_budget - delta)

    def remaining_rho(self) -> float:
        """ρ still available under :attr:`rho_budget` (inf without one), floored at 0."""
        return max(0.0, self.rho_budget - self.rho_spent)

    @property
    def seeded(self) -> bool:
        """True when any recorded spend drew its noise from a seed (reproducible: testing only)."""
        return any(e.seeded for e in self.entries)

    # -- recording -----------------------------------------------------------------------
    def spend(
        self,
        epsilon: float = 0.0,
        delta: float = 0.0,
        *,
        label: str,
        mechanism: str = "",
        sensitivity: float | None = None,
        part: str | None = None,
        seeded: bool = False,
        rho: float = 0.0,
    ) -> None:
        """Record a release costing (ε, δ), or ρ in zCDP, after checking it fits the budget.

        Parameters
        ----------
        epsilon : ε > 0 of the release (0 for a zCDP release).
        delta : δ ∈ [0, 1) of the release.
        label : what was released (shown in the ledger).
        mechanism : the mechanism's name (shown in the ledger).
        sensitivity : the sensitivity the noise was calibrated to (shown in the ledger).
        part : inside ``parallel(...)``, the disjoint part of the data the release reads
            (default: ``label``); spends on one part add up. Refused outside a group.
        seeded : the noise came from a seed (reproducible; recorded, and shown in the ledger).
        rho : ρ > 0 of a zCDP release, which then gives neither ε nor δ (rule 6).

        Raises
        ------
        InvalidInput
            Bad ε, δ, ρ, sensitivity, an empty label, or a part outside a group.
        PrivacyBudgetExceeded
            The spend would take the totals over the budget; nothing is recorded.

        Examples
        --------
        >>> acct = PrivacyAccountant(rho_budget=1.0)
        >>> acct.spend(rho=0.25, label="county counts", mechanism="discrete Gaussian")
        >>> acct.rho_spent, round(acct.epsilon_spent, 4), acct.delta_spent
        (0.25, 5.0485, 1e-10)
        """
        mine = self._thread()
        entry = PlannedSpend(
            epsilon, delta, label, mechanism, sensitivity, mine.group, part, seeded, rho
        ).ledger_entry(mine.group_index)
        cost = (
            f"rho={entry.rho:g}"
            if entry.rho > 0
            else f"epsilon={entry.epsilon:g}, delta={entry.delta:g}"
        )
        self._record([entry], what=f"spending ({cost}) on {entry.label!r}")

    def _check_fits(self, new: list[LedgerEntry], *, what: str) -> tuple[float, float]:
        """Raise PrivacyBudgetExceeded unless the ledger plus ``new`` fits; return the totals."""
        after = [*self.entries, *new]
        eps_after, delta_after = self._totals(after)
        if _exceeds(eps_after, self.epsilon_budget) or _exceeds(delta_after, self.delta_budget):
            hint = ""
            if self._composed(after)[2] > 0 and _exceeds(delta_after, self.delta_budget):
                hint = (
                    f" (zCDP spends are stated as (epsilon, delta)-DP at delta = "
                    f"{self.conversion_delta:g}: declare a delta_budget that holds it)"
                )
            raise PrivacyBudgetExceeded(
                f"{what} would bring the "
                f"total to (epsilon={eps_after:g}, delta={delta_after:g}), over the budget "
                f"(epsilon={self.epsilon_budget:g}, delta={self.delta_budget:g}); "
                f"already spent (epsilon={self.epsilon_spent:g}, delta={self.delta_spent:g})" + hint
            )
        rho_after = self._composed(after)[3]
        if _exceeds(rho_after, self.rho_budget):
            raise PrivacyBudgetExceeded(
                f"{what} would bring the zCDP total to rho={rho_after:g}, over the budget "
                f"rho={self.rho_budget:g}; already spent rho={self.rho_spent:g}"
                + (" (a spend with delta > 0 has no zCDP bound)" if math.isinf(rho_after) else "")
            )
        return eps_after, delta_after

    # -- all-or-nothing ------------------------------------------------------------------
    def _plan_entries(self, plan: Iterable[PlannedSpend]) -> list[LedgerEntry]:
        """Validate a plan and number its groups (rule 4 of the module docstring): inside
        ``parallel(...)`` its ungrouped spends, and those naming the open group, join the open
        group; every other group named in the plan is a new one."""
        if isinstance(plan, PlannedSpend) or not isinstance(plan, Iterable):
            raise InvalidInput(f"plan must be an iterable of PlannedSpend, got {plan!r}")
        entries = []
        numbers: dict[str, int] = {}
        mine = self._thread()
        if mine.group is not None and mine.group_index is not None:
            numbers[mine.group] = mine.group_index
        next_number = self._groups_opened
        for i, item in enumerate(plan):
            if not isinstance(item, PlannedSpend):
                raise InvalidInput(f"plan[{i}] must be a PlannedSpend, got {item!r}")
            spend = (
                replace(item, group=mine.group)
                if item.group is None and mine.group is not None
                else item
            )
            number = None
            if spend.group is not None:
                if spend.group not in numbers:
                    next_number += 1
                    numbers[spend.group] = next_number
                number = numbers[spend.group]
            entries.append(spend.ledger_entry(number))
        return entries

    def check_plan(self, plan: Iterable[PlannedSpend]) -> tuple[float, float]:
        """Check that every spend of ``plan`` together fits the remaining budget; record nothing.

        Parameters
        ----------
        plan : the spends a mechanism will make, in any order (parallel spends name their
            ``group``).

        Returns
        -------
        (epsilon, delta) : the totals the ledger would reach after the whole plan.

        Raises
        ------
        InvalidInput
            A spend of the plan is malformed (bad ε, δ, sensitivity, label or group).
        PrivacyBudgetExceeded
            The plan as a whole does not fit, even if each spend alone would.

        Examples
        --------
        >>> acct = PrivacyAccountant(epsilon_budget=1.0)
        >>> plan = [PlannedSpend(0.5, label=f"level {i}") for i in (1, 2, 3)]
        >>> acct.check_plan(plan)
        Traceback (most recent call last):
        ...
        privopt.errors.PrivacyBudgetExceeded: the plan of 3 spends (epsilon=1.5, delta=0) ...
        >>> acct.check_plan(plan[:2])
        (1.0, 0.0)
        """
        with self._lock:  # the group numbers a plan takes must not change meanwhile
            entries = self._plan_entries(plan)
            eps = sum(e.epsilon for e in entries)
            delta = sum(e.delta for e in entries)
            rho = sum(e.rho for e in entries)
            cost = f"epsilon={eps:g}, delta={delta:g}" + (f", rho={rho:g}" if rho > 0 else "")
            what = f"the plan of {len(entries)} spends ({cost})"
            return self._check_fits(entries, what=what)

    def spend_all(self, plan: Iterable[PlannedSpend]) -> list[LedgerEntry]:
        """Check ``plan`` as a whole and record all its spends, or none of them.

        Returns the new ledger entries. Raises as :meth:`check_plan`; on a raise the ledger is
        unchanged.

        Examples
        --------
        >>> acct = PrivacyAccountant(epsilon_budget=1.0)
        >>> new = acct.spend_all([PlannedSpend(0.4, label="a"), PlannedSpend(0.4, label="b")])
        >>> len(new), round(acct.epsilon_spent, 12)
        (2, 0.8)
        """
        with self._lock:
            entries = self._plan_entries(plan)
            self._record(entries, what=f"the plan of {len(entries)} spends")
        return entries

    @contextmanager
    def transaction(
        self, plan: Iterable[PlannedSpend] | None = None
    ) -> Iterator[PrivacyAccountant]:
        """Context whose spends are kept only if the block completes without an exception.

        With ``plan``, the plan is first checked as a whole (:meth:`check_plan`), so a mechanism
        that would run out of budget half-way is refused before it draws any noise. On an
        exception inside the block, every spend recorded in it is removed and the exception
        propagates. Transactions nest: an inner failure that the outer block catches removes
        only the inner spends.

        Removing a spend is sound only if nothing computed from the noise left the block: the
        mechanism must release its output after the block, not inside it.

        Examples
        --------
        >>> acct = PrivacyAccountant(epsilon_budget=1.0)
        >>> try:
        ...     with acct.transaction():
        ...         acct.spend(0.6, label="first")
        ...         acct.spend(0.6, label="second")  # over budget: both are undone
        ... except Exception as err:
        ...     type(err).__name__
        'PrivacyBudgetExceeded'
        >>> acct.entries
        []
        """
        if plan is not None:
            self.check_plan(plan)
        recorded: list[LedgerEntry] = []
        transactions = self._thread().transactions
        transactions.append(recorded)
        try:
            yield self
        except BaseException:
            undo = {id(e) for e in recorded}
            with self._lock:
                self.entries[:] = [e for e in self.entries if id(e) not in undo]
            raise
        finally:
            transactions[:] = [t for t in transactions if t is not recorded]

    @contextmanager
    def parallel(self, label: str) -> Iterator[PrivacyAccountant]:
        """Context in which each spend reads one disjoint part of the data (``part=``, default
        its label): the group costs the maximum over its parts of each part's sum.

        Every ``with`` opens a new group that closes when the block exits; a later block under
        the same label is a new group and composes sequentially with this one. Groups do not
        nest (a nested group would need its own disjointness argument).

        Examples
        --------
        >>> acct = PrivacyAccountant()
        >>> for _ in range(2):  # two releases of the same regions: they add up
        ...     with acct.parallel("regions"):
        ...         acct.spend(0.5, label="north")
        ...         acct.spend(0.5, label="south")
        >>> acct.epsilon_spent
        1.0
        """
        if not isinstance(label, str) or not label:
            raise InvalidInput(f"label must be a non-empty string, got {label!r}")
        mine = self._thread()
        if mine.group is not None:
            raise InvalidInput(
                f"parallel group {label!r} opened inside group {mine.group!r}; "
                "parallel groups do not nest"
            )
        with self._lock:
            self._groups_opened += 1
            mine.group, mine.group_index = label, self._groups_opened
        try:
            yield self
        finally:
            mine.group, mine.group_index = None, None

    # -- display -------------------------------------------------------------------------
    def ledger(self) -> str:
        """The ledger as a fixed-width text table, with totals and the budget."""
        # The rho column shows only in a ledger that holds a zCDP spend.
        with_rho = any(e.rho > 0 for e in self.entries)
        header = ["#", "label", "mechanism", "epsilon", "delta"]
        header += ["rho"] * with_rho + ["sensitivity", "group", "part"]
        rows = [
            [
                str(i) + (" (seeded)" if e.seeded else ""),
                e.label,
                e.mechanism or "-",
                "-" if e.rho > 0 else f"{e.epsilon:.6g}",
                "-" if e.rho > 0 else f"{e.delta:.6g}",
                *([f"{e.rho:.6g}" if e.rho > 0 else "-"] * with_rho),
                "-" if e.sensitivity is None else f"{e.sensitivity:.6g}",
                "-" if e.group is None else f"{e.group} #{e.group_index}",
                "-" if e.part is None or e.part == e.label else e.part,
            ]
            for i, e in enumerate(self.entries, 1)
        ]
        widths = [
            max(len(h), *(len(r[c]) for r in rows)) if rows else len(h)
            for c, h in enumerate(header)
        ]

        def line(cells: list[str]) -> str:
            return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

        eps, delta = self._totals(self.entries)
        rem_eps, rem_delta = self.remaining()
        out = [line(header), line(["-" * w for w in widths])]
        out += [line(r) for r in rows] or ["(no spends)"]
        out.append("")
        out.append(
            f"spent:     epsilon={eps:.6g}  delta={delta:.6g}  "
            "(sequential sum; each parallel group counts its largest part)"
        )
        _, _, zcdp, rho_all = self._composed(self.entries)
        if zcdp > 0:
            out.append(
                f"zCDP:      the rho={zcdp:.6g} of the zCDP spends is included above as "
                f"(epsilon={zcdp_epsilon(zcdp, self.conversion_delta):.6g}, "
                f"delta={self.conversion_delta:.6g})-DP (Bun & Steinke 2016, Prop. 1.3); "
                f"the whole ledger in zCDP: rho={rho_all:.6g}"
            )
        out.append(f"budget:    epsilon={self.epsilon_budget:.6g}  delta={self.delta_budget:.6g}")
        if math.isfinite(self.rho_budget):
            out.append(f"           rho={self.rho_budget:.6g}")
        out.append(f"remaining: epsilon={rem_eps:.6g}  delta={rem_delta:.6g}")
        if self.seeded:
            out.append(
                "seeded:    spends marked (seeded) drew their noise from a seed; anyone who "
                "knows it can recompute the noise: for testing only, not a private release"
            )
        return "\n".join(out)

    def __str__(self) -> str:
        return self.ledger()

    def __repr__(self) -> str:
        rho = f", rho_budget={self.rho_budget!r}" if math.isfinite(self.rho_budget) else ""
        return (
            f"PrivacyAccountant(epsilon_budget={self.epsilon_budget!r}, "
            f"delta_budget={self.delta_budget!r}{rho}, entries={len(self.entries)})"
        )
