"""In-out separation (Ben-Ameur & Neto 2007; Fischetti, Ljubić & Sinnl 2017): the subproblems
are solved at a point between the master point and a *core point* inside the feasible set,
which stabilises the long tail of classical Benders.

With a core ``c`` (a master point at which every subproblem is feasible) and weight λ, the
separation point is ``x_sep = λ·x̄ + (1 − λ)·c``:

* a feasibility cut at ``x_sep`` also cuts ``x̄`` off (the feasible set is convex, contains
  ``c``, and the cut separates ``x_sep`` from it);
* a fully feasible ``x_sep`` gives an upper bound and becomes the new core (it moves towards
  the master points);
* when the cuts at ``x_sep`` leave ``x̄`` unseparated, the next round separates at ``x̄``
  itself (λ = 1 for one round), so the method never stops on a stabilised point.
"""

from __future__ import annotations

import numpy as np

from privopt.errors import InvalidInput


class InOut:
    """State of the in-out separation: core point and the weight λ of the master point.

    Parameters
    ----------
    core : the core point, shape (n_master,), or None (no stabilisation: x_sep = x̄).
    weight : λ in (0, 1]; 1 separates at the master points (classical Benders).
    stall_weight : with ``weight = 1``: the λ switched to when the classical iteration stalls
        (no cut separates x̄); None: a stall ends the run.

    Examples
    --------
    >>> import numpy as np
    >>> io = InOut(np.zeros(2), weight=0.5)
    >>> io.separation_point(np.array([2.0, 4.0])).tolist()
    [1.0, 2.0]
    >>> io.after_round(np.array([1.0, 2.0]), feasible=True, separated=True)  # core moves
    False
    >>> io.core.tolist()
    [1.0, 2.0]
    """

    def __init__(
        self, core: np.ndarray | None, weight: float = 1.0, stall_weight: float | None = None
    ) -> None:
        if not (0.0 < weight <= 1.0):
            raise InvalidInput(f"in_out must be in (0, 1], got {weight!r}")
        if stall_weight is not None and not (0.0 < stall_weight < 1.0):
            raise InvalidInput(f"stall_in_out must be in (0, 1), got {stall_weight!r}")
        self.core = core
        self.weight = weight
        self.stall_weight = stall_weight
        self.lam = weight if core is not None else 1.0

    def separation_point(self, x_master: np.ndarray) -> np.ndarray:
        """Where the subproblems are solved this round."""
        if self.core is None or self.lam >= 1.0:
            return x_master
        return self.lam * x_master + (1.0 - self.lam) * self.core

    def after_round(self, x_sep: np.ndarray, *, feasible: bool, separated: bool) -> bool:
        """Update after a round at ``x_sep``; True when the next round must separate at the
        master point itself (a retry, not a stall: the run goes on even without cuts)."""
        if self.core is None:
            return False
        inside = self.lam < 1.0
        if feasible and inside:
            self.core = x_sep.copy()  # feasible: the core moves towards the master points
        retry = False
        if not separated and self.weight == 1.0 and self.stall_weight is not None:
            # Classical Benders stalled (no cut separates x̄ once made safe for HiGHS):
            # stabilise around the core from now on.
            self.weight, retry = self.stall_weight, True
        if not separated and inside:
            self.lam = 1.0  # these cuts leave x̄ untouched: separate at x̄ itself next
            return True
        self.lam = self.weight
        return retry
