"""Exception types raised by privopt.

Every error names the offending argument and value. They subclass the built-in exception a
caller would expect (``ValueError`` for bad input, ``RuntimeError`` for solver outcomes), so
generic handlers keep working.
"""

from __future__ import annotations

__all__ = [
    "PrivoptError",
    "InvalidInput",
    "SolverError",
    "InfeasibleModel",
    "UnboundedModel",
    "SolverLimit",
    "NumericalTrouble",
    "PrivacyBudgetExceeded",
    "PrivacyViolation",
    "UnprotectedRecordsWarning",
]


class PrivoptError(Exception):
    """Base class of every privopt error."""


class InvalidInput(PrivoptError, ValueError):
    """An argument has a wrong value, type or shape (NaN, ε ≤ 0, k > n, empty graph, ...)."""


class SolverError(PrivoptError, RuntimeError):
    """The optimisation solver did not return an optimal solution."""

    def __init__(self, message: str, *, status: str | None = None) -> None:
        super().__init__(message)
        #: The solver's own status text (e.g. HiGHS ``model_status``), for diagnostics.
        self.status = status


class InfeasibleModel(SolverError):
    """The model has no feasible point.

    ``farkas_ray`` holds a dual ray (Farkas certificate, one entry per row) when the solver
    produced one, else ``None``.
    """

    def __init__(self, message: str, *, status: str | None = None, farkas_ray=None) -> None:
        super().__init__(message, status=status)
        self.farkas_ray = farkas_ray


class UnboundedModel(SolverError):
    """The objective is unbounded on the feasible set (``primal_ray`` when available)."""

    def __init__(self, message: str, *, status: str | None = None, primal_ray=None) -> None:
        super().__init__(message, status=status)
        self.primal_ray = primal_ray


class SolverLimit(SolverError):
    """A time, iteration or node limit stopped the solver before optimality.

    ``best`` holds the best solution found so far (or ``None``); it is not certified optimal.
    """

    def __init__(self, message: str, *, status: str | None = None, best=None) -> None:
        super().__init__(message, status=status)
        self.best = best


class NumericalTrouble(SolverError):
    """The solver reported numerical difficulties; its answer cannot be trusted."""


class PrivacyBudgetExceeded(PrivoptError, RuntimeError):
    """A spend would take the privacy accountant over its declared (ε, δ) budget."""


class PrivacyViolation(PrivoptError, RuntimeError):
    """A released object does not satisfy its stated privacy guarantee."""


class UnprotectedRecordsWarning(UserWarning):
    """A released mechanism satisfies its guarantee, yet the guarantee itself says nothing about
    some records (e.g. a metric-DP record with no neighbour within η): the warning names how many
    and how to protect them."""
