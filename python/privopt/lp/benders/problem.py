"""The decomposed problem: a master LP plus subproblems coupled through their row bounds."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt._validation import check_finite_array, check_real
from privopt.errors import (
    InvalidInput,
)
from privopt.lp.model import LinearProgram, _block_to_csc

__all__ = ["BendersProblem", "Cut"]

_INF = math.inf


# =========================================================================== problem


@dataclass(frozen=True)
class _SubData:
    """What a worker needs for one subproblem (picklable, shipped once)."""

    lp: LinearProgram
    t_cols: np.ndarray  # (n_coupled,) master columns that T_k touches
    t_matrix: sp.csr_array  # (n_rows, n_coupled) T_k restricted to t_cols
    options: tuple[tuple[str, Any], ...] = ()  # extra HiGHS options (name, value)


class BendersProblem:
    """A master LP plus K subproblems whose row bounds depend affinely on the master variables.

    Parameters
    ----------
    master : the master problem over ``x`` (minimisation; may have integer variables). The
        ``theta`` variables are added internally (one per subproblem, or one in single-cut mode).

    Examples
    --------
    >>> import numpy as np
    >>> from privopt.lp import LinearProgram
    >>> from privopt.lp.benders import BendersProblem, solve_benders
    >>> master = LinearProgram(1, objective=[1.0], upper=10.0)      # buy capacity x at cost 1
    >>> sub = LinearProgram(1, objective=[3.0])                      # unmet demand u at cost 3
    >>> _ = sub.add_rows(np.array([[1.0]]), lower=[4.0])            # x + u >= 4
    >>> prob = BendersProblem(master)
    >>> prob.add_subproblem(sub, np.array([[1.0]]), theta_lower=0.0)
    0
    >>> res = solve_benders(prob)
    >>> round(res.objective, 6), np.round(res.x_master, 6).tolist()
    (4.0, [4.0])
    """

    def __init__(self, master: LinearProgram) -> None:
        if not isinstance(master, LinearProgram):
            raise InvalidInput(f"master must be a LinearProgram, got {type(master).__name__}")
        if master.sense != "min":
            raise InvalidInput("master must be a minimisation (negate the objective of a max)")
        self.master = master.copy()
        self.n_master = master.n_vars
        self._subs: list[_SubData] = []
        self.theta_lower: list[float] = []
        self.theta_upper: list[float] = []
        self.names: list[str] = []

    @property
    def n_subproblems(self) -> int:
        """Number of subproblems added so far."""
        return len(self._subs)

    def subproblem(self, k: int) -> tuple[LinearProgram, sp.csr_array]:
        """The ``k``-th subproblem LP and its coupling ``T_k`` (n_rows × n_master)."""
        d = self._subs[k]
        m = d.lp.n_rows
        T = sp.csr_array(
            (d.t_matrix.data, d.t_cols[d.t_matrix.indices], d.t_matrix.indptr),
            shape=(m, self.n_master),
        )
        return d.lp, T

    def add_subproblem(
        self,
        lp: LinearProgram,
        coupling: Any,
        *,
        theta_lower: float = -_INF,
        name: str | None = None,
        theta_upper: float = _INF,
    ) -> int:
        """Add subproblem ``min q^T y s.t. L - T x <= W y <= U - T x`` and return its index.

        Parameters
        ----------
        lp : the subproblem over ``y`` (an LP, minimisation) with nominal row bounds ``L, U``.
        coupling : ``T``, shape (lp.n_rows, w) with ``w <= n_master`` (missing columns are
            zero): scipy.sparse, dense, or a ``(rows, cols, vals)`` triple.
        theta_lower : a valid lower bound on ``phi_k(x)`` over the master's feasible set (e.g.
            0 when ``q >= 0`` and ``y >= 0``); ``-inf`` if none is known.
        theta_upper : a valid upper bound on ``phi_k(x)`` where it is finite, if known. It
            makes the master's safe dual bound rigorous in ``theta_k`` too (without it a
            negative reduced cost of ``theta_k`` falls back to the solver's value).
        name : label used in messages.
        """
        if not isinstance(lp, LinearProgram):
            raise InvalidInput(f"lp must be a LinearProgram, got {type(lp).__name__}")
        if lp.sense != "min" or lp.is_mip:
            raise InvalidInput("a subproblem must be a continuous minimisation LP")
        T = _block_to_csc(
            coupling, lp.n_rows if isinstance(coupling, tuple) else None, self.n_master
        )
        if T.shape[0] != lp.n_rows or T.shape[1] > self.n_master:
            raise InvalidInput(
                f"coupling must have shape ({lp.n_rows}, <= {self.n_master}), got {T.shape}"
            )
        T = sp.csc_array(T)
        T.eliminate_zeros()
        t_cols = np.flatnonzero(np.diff(T.indptr)).astype(np.int64)
        t_matrix = sp.csr_array(T[:, t_cols])
        lower = check_real("theta_lower", theta_lower, allow_inf=True)
        if lower == _INF:
            raise InvalidInput(f"theta_lower must be a number < inf, got {theta_lower!r}")
        upper = check_real("theta_upper", theta_upper, allow_inf=True)
        if upper < lower:
            raise InvalidInput(f"theta_upper must be >= theta_lower, got {theta_upper!r}")
        self._subs.append(_SubData(lp.copy(), t_cols, t_matrix))
        self.theta_lower.append(lower)
        self.theta_upper.append(upper)
        self.names.append(name if name is not None else f"sub{len(self._subs) - 1}")
        return len(self._subs) - 1

    def to_monolithic(self) -> LinearProgram:
        """The equivalent single LP over ``(x, y_1, ..., y_K)`` (for checks and small cases)."""
        lp = self.master.copy()
        for k in range(self.n_subproblems):
            sub, T = self.subproblem(k)
            cols = lp.add_variables(
                sub.n_vars,
                objective=sub.objective,
                lower=sub.col_lower,
                upper=sub.col_upper,
                name=self.names[k],
            )
            block = sp.hstack([T, sub.matrix()], format="csc")
            colmap = np.concatenate([np.arange(self.n_master), np.arange(cols.start, cols.stop)])
            lp.add_rows(
                block, lower=sub.row_lower, upper=sub.row_upper, columns=colmap, name=self.names[k]
            )
            lp.offset += sub.offset
        return lp


@dataclass
class Cut:
    """A master row ``lower <= coef^T (x, theta) <= upper`` given by the caller.

    ``coef`` is a 1-D array or sparse row over ``n_master + n_theta`` columns (column
    ``n_master + k`` is ``theta_k``; a shorter row leaves the rest zero). The bounds are
    checked at construction (real, not NaN, ``lower <= upper``, not both infinite on the same
    side), the coefficients for finiteness; the width is checked against the master by
    :func:`~privopt.lp.benders.solve_benders`.

    Raises
    ------
    InvalidInput
        A NaN, complex or non-numeric bound, ``lower > upper``, or a non-finite coefficient.

    Examples
    --------
    >>> Cut([1.0, 0.0, 1.0], lower=2.0).upper
    inf
    """

    coef: Any
    lower: float = -_INF
    upper: float = _INF

    def __post_init__(self) -> None:
        self.lower = _cut_bound("lower", self.lower)
        self.upper = _cut_bound("upper", self.upper)
        if self.lower > self.upper or self.lower == _INF or self.upper == -_INF:
            raise InvalidInput(
                f"Cut bounds must satisfy lower <= upper, lower < inf and upper > -inf, "
                f"got lower={self.lower!r}, upper={self.upper!r}"
            )
        values = sp.csr_array(self.coef).data if sp.issparse(self.coef) else self.coef
        check_finite_array("Cut coef", values)


def _cut_bound(name: str, value: Any) -> float:
    return check_real(f"Cut {name}", value, allow_inf=True)
