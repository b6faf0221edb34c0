"""The certification rule shared by every privopt solver.

A result may call itself **optimal** (or *converged*, *exact*, *certified*) only when a lower bound
computed independently of the solver's tolerances proves it::

    (value - certified_lower_bound) / max(|value|, tiny · scale) <= rel_gap

where ``scale`` is the magnitude of the problem's costs (1 unless the solver says otherwise).

The lower bound must come from a safe dual bound (directed rounding over the variable bounds), an
exhaustive dynamic programme, or an exact combinatorial argument — never from a solver's own
"optimal" flag or objective value. Otherwise the result states what it is (``"feasible"``,
``"time_limit"``, ``"gap_not_closed"``, ``"restricted"``), reports the proven ``relative_gap``,
and a :class:`UncertifiedResultWarning` says so once per call.

See ``docs/certification.md`` for the rule and the bound each solver uses.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from privopt._validation import check_bool
from privopt.errors import InvalidInput, NumericalTrouble

__all__ = [
    "CERTIFIED_STATUS",
    "UNCERTIFIED_STATUSES",
    "Certificate",
    "UncertifiedResultWarning",
    "certify",
    "proven_relative_gap",
    "warn_uncertified",
]

#: The one status that claims optimality.
CERTIFIED_STATUS = "optimal"
#: Statuses for results that are valid (feasible, private) but not proven optimal.
UNCERTIFIED_STATUSES = ("feasible", "time_limit", "gap_not_closed", "restricted")

#: Denominator floor of the relative gap, so that a zero objective has a meaningful gap.
TINY = 1e-12
#: How far (relative) a lower bound may exceed the value it bounds and still count as tight up
#: to rounding; beyond it the bound or the value is wrong, and no gap can be claimed.
BOUND_SLACK = 1e-6


class UncertifiedResultWarning(UserWarning):
    """A solver returned a valid result whose optimality it could not prove.

    The result's ``status`` says why (``"time_limit"``, ``"gap_not_closed"``, ``"restricted"``,
    ``"feasible"``) and its ``relative_gap`` carries the gap that is proven.
    """


@dataclass(frozen=True)
class Certificate:
    """Outcome of applying the certification rule to one result.

    Attributes
    ----------
    status : str
        ``"optimal"`` when certified, else the reason given by the caller.
    relative_gap : float
        Proven relative gap ``(value - lower_bound) / max(|value|, tiny)``, clipped at 0 from below;
        ``inf`` when no finite lower bound is known.
    lower_bound : float
        The certified lower bound used (``-inf`` when none).
    value : float
        The objective value of the returned result.
    """

    status: str
    relative_gap: float
    lower_bound: float
    value: float

    def __post_init__(self) -> None:
        if self.status not in (CERTIFIED_STATUS, *UNCERTIFIED_STATUSES):
            raise InvalidInput(
                f"status must be {CERTIFIED_STATUS!r} or one of {UNCERTIFIED_STATUSES}, "
                f"got {self.status!r}"
            )
        if not _real("relative_gap", self.relative_gap) >= 0:
            raise InvalidInput(f"relative_gap must be >= 0 (or inf), got {self.relative_gap!r}")

    @property
    def certified(self) -> bool:
        """True when the result is proven optimal to the requested gap."""
        return self.status == CERTIFIED_STATUS


def _real(name: str, x: float) -> float:
    if isinstance(x, (bool, str, bytes)) or np.iscomplexobj(x):
        raise InvalidInput(f"{name} must be a real number, got {x!r}")
    try:
        return float(x)
    except (TypeError, ValueError):
        raise InvalidInput(f"{name} must be a real number, got {x!r}") from None


def proven_relative_gap(value: float, lower_bound: float, tiny: float = TINY) -> float:
    """Relative gap proven by ``lower_bound`` for a minimisation result of objective ``value``.

    Returns ``inf`` when the bound is not finite, and 0 when the bound meets or exceeds the value
    by at most :data:`BOUND_SLACK` (relative): the bound is then tight up to rounding.

    Raises
    ------
    InvalidInput
        A value that is not a finite real number, or a bound that is not a real number.
    NumericalTrouble
        The bound exceeds the value by more than :data:`BOUND_SLACK`: a minimisation result
        cannot lie below a valid lower bound, so one of the two is wrong.

    Examples
    --------
    >>> proven_relative_gap(2.0, 1.5)
    0.25
    >>> proven_relative_gap(1.0, float("-inf"))
    inf
    """
    value = _real("value", value)
    lower_bound = _real("lower_bound", lower_bound)
    if not math.isfinite(value):
        raise InvalidInput(f"value must be finite to compute a gap, got {value!r}")
    if math.isnan(lower_bound) or not math.isfinite(lower_bound):
        return math.inf
    scale = max(abs(value), tiny)
    if lower_bound - value > BOUND_SLACK * max(scale, abs(lower_bound)):
        raise NumericalTrouble(
            f"the lower bound {lower_bound!r} exceeds the value {value!r} it bounds: one of "
            "them is wrong, so no optimality gap can be proven"
        )
    return max(0.0, (value - lower_bound) / scale)


def certify(
    value: float,
    lower_bound: float,
    rel_gap: float,
    *,
    scale: float = 1.0,
    otherwise: str = "gap_not_closed",
    what: str = "result",
    warn: bool = True,
    stacklevel: int = 3,
) -> Certificate:
    """Apply the certification rule to a minimisation result.

    Parameters
    ----------
    value : float
        Objective value of the returned (feasible) result.
    lower_bound : float
        A lower bound on the optimum proven independently of solver tolerances.
    rel_gap : float
        Requested relative gap (>= 0).
    scale : float
        Magnitude of the problem's objective coefficients (its largest cost, say; > 0). The
        floor of the gap's denominator is ``TINY * scale``, so that the rule does not depend on
        the unit: with costs near 1e-20 a loss of 2e-20 against a bound of 0 would otherwise
        pass as a gap of 2e-8.
    otherwise : str
        Status to report when the bound does not prove ``rel_gap``; one of
        :data:`UNCERTIFIED_STATUSES`.
    what : str
        Name of the result in the warning message (e.g. ``"mdp Benders"``).
    warn : bool
        Emit one :class:`UncertifiedResultWarning` when not certified.
    stacklevel : int
        Passed to :func:`warnings.warn`, so the warning points at the user's call.

    Returns
    -------
    Certificate

    Examples
    --------
    >>> certify(1.0, 1.0 - 1e-9, 1e-6).status
    'optimal'
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     c = certify(1.0, 0.7, 1e-6, otherwise="time_limit")
    >>> (c.status, round(c.relative_gap, 3))
    ('time_limit', 0.3)
    """
    if otherwise not in UNCERTIFIED_STATUSES:
        raise InvalidInput(f"otherwise must be one of {UNCERTIFIED_STATUSES}, got {otherwise!r}")
    if not _real("rel_gap", rel_gap) >= 0:
        raise InvalidInput(f"rel_gap must be >= 0, got {rel_gap!r}")
    warn = check_bool("warn", warn)
    scale = _real("scale", scale)
    if not (scale > 0 and math.isfinite(scale)):
        raise InvalidInput(f"scale must be a finite number > 0, got {scale!r}")
    gap = proven_relative_gap(value, lower_bound, TINY * scale)
    if gap <= rel_gap:
        return Certificate(CERTIFIED_STATUS, gap, lower_bound, value)
    if warn:
        warn_uncertified(what, otherwise, gap, stacklevel=stacklevel + 1)
    return Certificate(otherwise, gap, lower_bound, value)


def warn_uncertified(what: str, status: str, relative_gap: float, *, stacklevel: int = 2) -> None:
    """Emit the one warning that says a result is not proven optimal, and why."""
    if status not in UNCERTIFIED_STATUSES:
        raise InvalidInput(f"status must be one of {UNCERTIFIED_STATUSES}, got {status!r}")
    warnings.warn(
        f"{what}: not certified optimal "
        f"(status {status!r}, proven relative gap {relative_gap:.3g})",
        UncertifiedResultWarning,
        stacklevel=stacklevel + 1,
    )
