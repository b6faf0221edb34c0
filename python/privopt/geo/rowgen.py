"""CLR-Geo on :mod:`privopt.lp.rowgen`: one LP with lazy Geo-Ind rows and ỹ as shared columns.

Solver (b) of spec 001 §7: the users' free entries z'_m are the blocks, the rescaled ỹ (K) are
the shared columns (in the model from the start, no copy per user), each user's unit-measure
rows are always in the model, and its Geo-Ind rows (``e^{−εd} z_ik − z_jk ≤ 0`` over free and
exponential entries) join only when the current point violates them. Most Geo-Ind rows are slack
at the optimum, so the model stays a fraction of the monolithic LP.

Every column joins with the unit-measure rows that mention it, so the engine's column pricing
has nothing to add here; what is lazy is the rows. The lower bound is the engine's safe dual
bound of the *full* LP (rows left out take multiplier 0), independent of HiGHS's tolerances.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt.certify import UncertifiedResultWarning
from privopt.geo.clr import ClrModel
from privopt.lp import RowGenProblem, solve_rowgen

__all__ = ["solve_rowgen_clr", "ROW_TOLERANCE"]

#: A Geo-Ind row joins when the point violates it by more than this (rows are scaled so that
#: their largest coefficient is 1; the repair and the final check cover what is left).
ROW_TOLERANCE = 1e-10


def _oracle(rows: sp.csr_array) -> Any:
    """Separation oracle over one user's Geo-Ind rows (A over [z' | ỹ], all ≤ 0): the violated
    rows not yet in the model (each row joins once, so the rounds end)."""
    added = np.zeros(rows.shape[0], dtype=bool)

    def separate(x: np.ndarray, y: np.ndarray) -> tuple[sp.csr_array, np.ndarray, np.ndarray]:
        lhs = rows @ np.concatenate([x, y])
        new = np.flatnonzero((lhs > ROW_TOLERANCE) & ~added)
        added[new] = True
        return rows[new], np.full(new.size, -np.inf), np.zeros(new.size)

    return separate


def solve_rowgen_clr(
    model: ClrModel,
    *,
    rel_gap: float,
    time_limit: float | None,
    highs_options: dict[str, Any],
    progress: bool | str = "auto",
) -> tuple[list[np.ndarray], np.ndarray, float, dict[str, Any]]:
    """Solve CLR-Geo by row generation; returns (per-user z', ỹ, certified lower bound, info).
    ``progress``: the engine's bar of rounds (:mod:`privopt._progress`).

    Raises
    ------
    SolverLimit
        The time limit stopped it (``best`` holds the last round, its bound certified).
    """
    t0 = time.perf_counter()
    prob = RowGenProblem(
        model.n_columns, shared_cost=model.alpha, shared_lower=0.0, shared_upper=model.y_upper
    )
    for m, b in enumerate(model.blocks):
        both = sp.hstack([b.w, b.t], format="csr")  # [z' | ỹ], unit rows first
        prob.add_block(
            b.cost_free,
            lower=0.0,
            upper=1.0,
            rows=both[: b.n],
            row_lower=1.0,
            row_upper=1.0,
            separate=_oracle(both[b.n :]),
            name=f"user{m}",
        )
    build = time.perf_counter() - t0
    with warnings.catch_warnings():
        # the claim is made on the released (repaired) matrices by solve_clr, not here
        warnings.simplefilter("ignore", UncertifiedResultWarning)
        res = solve_rowgen(
            prob,
            rel_gap=rel_gap,
            time_limit=time_limit,
            highs_options=highs_options,
            progress=progress,
        )
    info = {
        "build_s": build,
        "rounds": len(res.rounds),
        "rows": res.n_rows,
        "rows_full": int(sum(b.w.shape[0] for b in model.blocks)),
        "vars": res.n_cols,
        "lp_objective": res.objective,
        "rowgen_status": res.status,
    }
    return res.x, res.y, res.lower_bound, info
