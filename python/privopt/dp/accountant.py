"""Privacy accountant: a ledger of (ε, δ) spends under basic composition.

Composition rules (Dwork & Roth 2014, Thm 3.16 and the parallel-composition argument of
McSherry 2009):

- *sequential*: mechanisms run on the same data add up, ε = Σ εᵢ and δ = Σ δᵢ;
- *parallel*: mechanisms run on disjoint parts of the data (under add/remove-one-record
  neighbours, a record lies in one part only) cost the maximum, ε = max εᵢ, δ = max δᵢ.
  Inside ``with acct.parallel("label"):`` every spend belongs to one disjoint part; the group
  as a whole is one sequential step.

The budget is checked *before* a spend is recorded: a spend that would go over raises
:class:`privopt.errors.PrivacyBudgetExceeded` and leaves the ledger exactly as it was.

A mechanism that spends in several steps charges *all or nothing* (never part of its cost
before a refusal): it checks its whole plan first (:meth:`PrivacyAccountant.check_plan`, or
records it in one step with :meth:`PrivacyAccountant.spend_all`), and runs inside
:meth:`PrivacyAccountant.transaction`, which removes the spends it recorded if it fails.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from privopt._validation import check_delta, check_epsilon, check_nonnegative, check_positive
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
    epsilon, delta : the (ε, δ) charged.
    sensitivity : the sensitivity the noise was calibrated to, or None.
    group : label of the parallel group the spend belongs to, or None (sequential).
    """

    label: str
    mechanism: str
    epsilon: float
    delta: float
    sensitivity: float | None
    group: str | None


@dataclass(frozen=True)
class PlannedSpend:
    """One spend of a plan, checked against the budget together with the others.

    The fields are the arguments of :meth:`PrivacyAccountant.spend`; ``group`` names the
    parallel group the spend belongs to (as inside ``parallel(group)``), None for sequential.

    Examples
    --------
    >>> PlannedSpend(0.5, label="total count", mechanism="discrete Laplace", sensitivity=1)
    PlannedSpend(epsilon=0.5, delta=0.0, label='total count', mechanism='discrete Laplace', \
sensitivity=1, group=None)
    """

    epsilon: float
    delta: float = 0.0
    label: str = ""
    mechanism: str = ""
    sensitivity: float | None = None
    group: str | None = None

    def __post_init__(self) -> None:
        self.ledger_entry()  # a malformed spend is refused where it is written

    def ledger_entry(self) -> LedgerEntry:
        """The validated :class:`LedgerEntry` this spend records.

        Raises
        ------
        InvalidInput
            Bad ε, δ or sensitivity, an empty label, or a group that is not a non-empty string.
        """
        epsilon = check_epsilon(self.epsilon)
        delta = check_delta(self.delta)
        sensitivity = self.sensitivity
        if sensitivity is not None:
            sensitivity = check_nonnegative("sensitivity", sensitivity)
        label, group = self.label, self.group
        if not isinstance(label, str) or not label:
            raise InvalidInput(f"label must be a non-empty string, got {label!r}")
        if group is not None and (not isinstance(group, str) or not group):
            raise InvalidInput(f"group must be None or a non-empty string, got {group!r}")
        return LedgerEntry(label, str(self.mechanism), epsilon, delta, sensitivity, group)


def _exceeds(total: float, budget: float) -> bool:
    return total > budget * (1 + _REL_TOL)


def _fields(entry: LedgerEntry) -> tuple:
    return (
        entry.label,
        entry.mechanism,
        entry.epsilon,
        entry.delta,
        entry.sensitivity,
        entry.group,
    )


class PrivacyAccountant:
    """Records (ε, δ) spends and enforces a budget under basic composition.

    Parameters
    ----------
    epsilon_budget : total ε allowed (``math.inf``: no limit, only bookkeeping).
    delta_budget : total δ allowed, in [0, 1). Enforced only together with a finite
        ``epsilon_budget``: the default ``PrivacyAccountant()`` declares no budget at all and
        only keeps books (ε and δ both unlimited), whereas ``PrivacyAccountant(1.0)`` means a
        pure ε = 1 budget (δ = 0).

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

    def __init__(self, epsilon_budget: float = math.inf, delta_budget: float = 0.0) -> None:
        self.epsilon_budget = check_positive("epsilon_budget", epsilon_budget, allow_inf=True)
        self.delta_budget = check_delta(delta_budget, "delta_budget")
        # No ε budget declared: bookkeeping only, so δ is not limited either (see docstring).
        self._delta_limit = self.delta_budget if math.isfinite(self.epsilon_budget) else math.inf
        self.entries: list[LedgerEntry] = []
        self._group: str | None = None

    # -- totals --------------------------------------------------------------------------
    @staticmethod
    def _totals(entries: list[LedgerEntry]) -> tuple[float, float]:
        eps = 0.0
        delta = 0.0
        groups: dict[str, tuple[float, float]] = {}
        for e in entries:
            if e.group is None:
                eps += e.epsilon
                delta += e.delta
            else:
                ge, gd = groups.get(e.group, (0.0, 0.0))
                groups[e.group] = (max(ge, e.epsilon), max(gd, e.delta))
        for ge, gd in groups.values():
            eps += ge
            delta += gd
        return eps, delta

    @property
    def epsilon_spent(self) -> float:
        """Total ε charged so far (sequential sum; each parallel group counts its max)."""
        return self._totals(self.entries)[0]

    @property
    def delta_spent(self) -> float:
        """Total δ charged so far."""
        return self._totals(self.entries)[1]

    def remaining(self) -> tuple[float, float]:
        """(ε, δ) still available: budget minus spent, floored at 0 (both inf without budget)."""
        eps, delta = self._totals(self.entries)
        return max(0.0, self.epsilon_budget - eps), max(0.0, self._delta_limit - delta)

    # -- recording -----------------------------------------------------------------------
    def spend(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        label: str,
        mechanism: str = "",
        sensitivity: float | None = None,
    ) -> None:
        """Record a release costing (ε, δ), after checking it fits the budget.

        Parameters
        ----------
        epsilon : ε > 0 of the release.
        delta : δ ∈ [0, 1) of the release.
        label : what was released (shown in the ledger).
        mechanism : the mechanism's name (shown in the ledger).
        sensitivity : the sensitivity the noise was calibrated to (shown in the ledger).

        Raises
        ------
        InvalidInput
            Bad ε, δ, sensitivity or an empty label.
        PrivacyBudgetExceeded
            The spend would take the totals over the budget; nothing is recorded.
        """
        entry = PlannedSpend(
            epsilon, delta, label, mechanism, sensitivity, self._group
        ).ledger_entry()
        self._check_fits(
            [entry],
            what=f"spending (epsilon={entry.epsilon:g}, delta={entry.delta:g}) on {entry.label!r}",
        )
        self.entries.append(entry)

    def _check_fits(self, new: list[LedgerEntry], *, what: str) -> tuple[float, float]:
        """Raise PrivacyBudgetExceeded unless the ledger plus ``new`` fits; return the totals."""
        eps_after, delta_after = self._totals([*self.entries, *new])
        if _exceeds(eps_after, self.epsilon_budget) or _exceeds(delta_after, self._delta_limit):
            raise PrivacyBudgetExceeded(
                f"{what} would bring the "
                f"total to (epsilon={eps_after:g}, delta={delta_after:g}), over the budget "
                f"(epsilon={self.epsilon_budget:g}, delta={self._delta_limit:g}); "
                f"already spent (epsilon={self.epsilon_spent:g}, delta={self.delta_spent:g})"
            )
        return eps_after, delta_after

    # -- all-or-nothing ------------------------------------------------------------------
    def _plan_entries(self, plan: Iterable[PlannedSpend]) -> list[LedgerEntry]:
        """Validate a plan; inside ``parallel(...)``, its ungrouped spends join that group."""
        if isinstance(plan, PlannedSpend) or not isinstance(plan, Iterable):
            raise InvalidInput(f"plan must be an iterable of PlannedSpend, got {plan!r}")
        entries = []
        for i, item in enumerate(plan):
            if not isinstance(item, PlannedSpend):
                raise InvalidInput(f"plan[{i}] must be a PlannedSpend, got {item!r}")
            grouped = (
                replace(item, group=self._group)
                if item.group is None and self._group is not None
                else item
            )
            entries.append(grouped.ledger_entry())
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
        entries = self._plan_entries(plan)
        eps = sum(e.epsilon for e in entries)
        delta = sum(e.delta for e in entries)
        what = f"the plan of {len(entries)} spends (epsilon={eps:g}, delta={delta:g})"
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
        entries = self._plan_entries(plan)
        what = f"the plan of {len(entries)} spends"
        self._check_fits(entries, what=what)
        self.entries.extend(entries)
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
        mark = len(self.entries)
        try:
            yield self
        except BaseException:
            del self.entries[mark:]
            raise

    @contextmanager
    def parallel(self, label: str) -> Iterator[PrivacyAccountant]:
        """Context in which each spend is on a disjoint part of the data: they cost their max.

        Groups do not nest (a nested group would need its own disjointness argument).
        Re-entering a label already used joins that group.
        """
        if not isinstance(label, str) or not label:
            raise InvalidInput(f"label must be a non-empty string, got {label!r}")
        if self._group is not None:
            raise InvalidInput(
                f"parallel group {label!r} opened inside group {self._group!r}; "
                "parallel groups do not nest"
            )
        self._group = label
        try:
            yield self
        finally:
            self._group = None

    # -- display -------------------------------------------------------------------------
    def ledger(self) -> str:
        """The ledger as a fixed-width text table, with totals and the budget."""
        header = ["#", "label", "mechanism", "epsilon", "delta", "sensitivity", "group"]
        rows = [
            [
                str(i),
                e.label,
                e.mechanism or "-",
                f"{e.epsilon:.6g}",
                f"{e.delta:.6g}",
                "-" if e.sensitivity is None else f"{e.sensitivity:.6g}",
                e.group or "-",
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
            "(sequential sum; parallel groups count their max)"
        )
        out.append(f"budget:    epsilon={self.epsilon_budget:.6g}  delta={self._delta_limit:.6g}")
        out.append(f"remaining: epsilon={rem_eps:.6g}  delta={rem_delta:.6g}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.ledger()

    def __repr__(self) -> str:
        return (
            f"PrivacyAccountant(epsilon_budget={self.epsilon_budget!r}, "
            f"delta_budget={self.delta_budget!r}, entries={len(self.entries)})"
        )
