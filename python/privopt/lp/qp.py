"""Least-squares projection QPs on the HiGHS layer: ``min ‖x − t‖²`` over a polyhedron.

Used by the census QP baselines (M_H^r, M_c^r). The model goes through
:mod:`privopt.lp.highs`, so the outcome maps to :mod:`privopt.errors` like every other solve:
an infeasible QP raises :class:`~privopt.errors.InfeasibleModel`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt._validation import check_positive, check_real, real_array
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
    target = real_array("target", target).ravel()
    n = target.size
    A = sp.csc_array(A if sp.issparse(A) else real_array("A", A), dtype=np.float64)
    if A.shape[1] != n:
        raise InvalidInput(f"A must have {n} columns (one per target entry), got {A.shape}")
    if not np.isfinite(target).all():
        raise InvalidInput("target must be finite")
    m = A.shape[0]
    for name, bound in (("row_lower", row_lower), ("row_upper", row_upper)):
        if real_array(name, bound).shape not in ((m,), ()):
            raise InvalidInput(f"{name} must have shape ({m},) (one per row of A)")
    col_lower = check_real("col_lower", col_lower, allow_inf=True)
    if time_limit is not None:
        time_limit = check_positive("time_limit", time_limit, allow_inf=True)
    model = highs.Model.configured(method="choose", time_limit=time_limit)
    # objective xᵀx − 2 tᵀx: ½ xᵀ(2I)x plus the linear term
    model.load_qp(-2.0 * target, A, row_lower, row_upper, col_lower, highs.INF, np.full(n, 2.0))
    status = model.run()
    S = highs.ModelStatus
    if status == S.kOptimal:
        return model.solution().x
    text = model.status_text
    if status == S.kInfeasible:
        raise InfeasibleModel("the projection QP has no feasible point", status=text)
    if status == S.kTimeLimit:
        raise SolverLimit(f"HiGHS QP hit time_limit = {time_limit} s", status="time limit")
    raise NumericalTrouble(f"HiGHS QP ended with {text}", status=text)
