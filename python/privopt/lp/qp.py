"""Least-squares projection QPs on the HiGHS layer: ``min ‖x − t‖²`` over a polyhedron.

Used by the census QP baselines (M_H^r, M_c^r). The model goes through
:mod:`privopt.lp.highs`, so the outcome maps to :mod:`privopt.errors` like every other solve:
an infeasible QP raises :class:`~privopt.errors.InfeasibleModel`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt.errors import InfeasibleModel, InvalidInput, NumericalTrouble, SolverLimit
from privopt.lp import highs

__all__ = ["solve_projection_qp"]


def solve_projection_qp(
    target: np.ndarray,
    A: Any,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: float = 0.0,
    time_limit: float | None = None,
) -> np.ndarray:
    """The point of ``{x : row_lower ≤ A x ≤ row_upper, x ≥ col_lower}`` nearest to ``target``.

    Parameters
    ----------
    target : (n,) float, the point projected.
    A : (m, n) sparse or dense constraint matrix.
    row_lower, row_upper : (m,) row bounds (±inf allowed).
    col_lower : lower bound of every variable (scalar).
    time_limit : seconds, or None.

    Returns
    -------
    (n,) float64 array: the minimiser of ``‖x − target‖²`` (objective ``xᵀx − 2 tᵀx``).

    Raises
    ------
    InvalidInput (shapes, NaN), InfeasibleModel (empty feasible set), SolverLimit (time
    limit), NumericalTrouble (any other HiGHS outcome).

    Examples
    --------
    >>> import numpy as np
    >>> x = solve_projection_qp(np.array([2.0, 0.0]), np.array([[1.0, 1.0]]), [1.0], [1.0])
    >>> np.round(x, 6).tolist()   # nearest point of x0 + x1 = 1, x >= 0 to (2, 0)
    [1.0, 0.0]
    """
    target = np.asarray(target, dtype=np.float64).ravel()
    n = target.size
    A = sp.csc_array(A, dtype=np.float64)
    if A.shape[1] != n:
        raise InvalidInput(f"A must have {n} columns (one per target entry), got {A.shape}")
    if not np.isfinite(target).all():
        raise InvalidInput("target must be finite")
    lp = highs.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = A.shape[0]
    lp.col_cost_ = -2.0 * target
    lp.col_lower_ = np.full(n, float(col_lower))
    lp.col_upper_ = np.full(n, highs.INF)
    lp.row_lower_ = np.asarray(row_lower, dtype=np.float64)
    lp.row_upper_ = np.asarray(row_upper, dtype=np.float64)
    lp.a_matrix_.format_ = highs.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data
    hess = highs.HighsHessian()
    hess.dim_ = n
    hess.format_ = highs.HessianFormat.kTriangular
    hess.start_ = np.arange(n + 1, dtype=np.int32)
    hess.index_ = np.arange(n, dtype=np.int32)
    hess.value_ = np.full(n, 2.0)
    model = highs.HighsModel()
    model.lp_ = lp
    model.hessian_ = hess
    h = highs.new_highs(method="choose", time_limit=time_limit)
    h.passModel(model)
    highs.run(h)
    return _solution_or_raise(h, time_limit)


def _solution_or_raise(h: Any, time_limit: float | None) -> np.ndarray:
    status = h.getModelStatus()
    text = h.modelStatusToString(status)
    S = highs.ModelStatus
    if status == S.kOptimal:
        return np.asarray(h.getSolution().col_value)
    if status == S.kInfeasible:
        raise InfeasibleModel("the projection QP has no feasible point", status=text)
    if status == S.kTimeLimit:
        raise SolverLimit(f"HiGHS QP hit time_limit = {time_limit} s", status="time limit")
    raise NumericalTrouble(f"HiGHS QP ended with {text}", status=text)
