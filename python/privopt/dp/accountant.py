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
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from privopt._validation import check_delta, check_epsilon, check_nonnegative, check_positive
from privopt.errors import InvalidInput, PrivacyBudgetExceeded

__all__ = ["LedgerEntry", "PrivacyAccountant"]

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


def _exceeds(total: float, budget: float) -> bool:
    return total > budget * (1 + _REL_TOL)


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
        epsilon = check_epsilon(epsilon)
        delta = check_delta(delta)
        if sensitivity is not None:
            sensitivity = check_nonnegative("sensitivity", sensitivity)
        if not isinstance(label, str) or not label:
            raise InvalidInput(f"label must be a non-empty string, got {label!r}")
        entry = LedgerEntry(label, str(mechanism), epsilon, delta, sensitivity, self._group)
        eps_after, delta_after = self._totals([*self.entries, entry])
        if _exceeds(eps_after, self.epsilon_budget) or _exceeds(delta_after, self._delta_limit):
            raise PrivacyBudgetExceeded(
                f"spending (epsilon={epsilon:g}, delta={delta:g}) on {label!r} would bring the "
                f"total to (epsilon={eps_after:g}, delta={delta_after:g}), over the budget "
                f"(epsilon={self.epsilon_budget:g}, delta={self._delta_limit:g}); "
                f"already spent (epsilon={self.epsilon_spent:g}, delta={self.delta_spent:g})"
            )
        self.entries.append(entry)

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
