"""Solvers of :class:`~privopt.perturbation.MDPProblem`: one entry point, :func:`solve`
(``method=`` "lp" | "benders" | "expmech"), returning a verified (and, where solver tolerances
left violations, repaired) :class:`~privopt.perturbation.PerturbationMatrix`.

"lp" and "expmech" are the shared core's (:mod:`privopt.perturbation.solve`); "benders" is
metric DP at scale: the spec 000 decomposition (:mod:`privopt.mdp.benders`) as the block
solver of the same component loop.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from privopt._progress import with_progress_argument
from privopt._validation import check_bool, check_instance, check_positive
from privopt.errors import InvalidInput
from privopt.mdp.benders import solve_benders_block
from privopt.perturbation.exact_lp import build_lp
from privopt.perturbation.matrix import PerturbationMatrix
from privopt.perturbation.problem import MatrixBlock, MDPProblem
from privopt.perturbation.solve import (
    exponential_mechanism,
    solve_components,
    solve_epsilon_path,
    solve_exact,
)

__all__ = ["solve", "solve_epsilon_path", "exponential_mechanism", "build_lp", "METHODS"]

METHODS = ("lp", "benders", "expmech")


def _check_benders_options(method: str, options: dict[str, Any]) -> None:
    """Unknown keywords are refused, never ignored: a typo must not change the solve silently."""
    if not options:
        return
    valid: list[str] = []
    if method == "benders":
        # passed by solve() itself
        taken = {"block", "lp_method", "threads", "time_limit", "repair_rtol"}
        valid = [n for n in inspect.signature(solve_benders_block).parameters if n not in taken]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        extra = (
            f"method {method!r} also takes {', '.join(valid)}"
            if valid
            else f"method {method!r} takes no other"
        )
        raise InvalidInput(
            f"unknown keyword(s) {unknown} for solve(); its keywords are "
            f"{', '.join(_SOLVE_OPTIONS)}; {extra}"
        )


#: solve()'s own keywords, for the message above.
_SOLVE_OPTIONS = (
    "lp_method",
    "threads",
    "time_limit",
    "row_generation",
    "initial_rows",
    "columns",
    "polish",
    "polish_gap",
    "repair_rtol",
)


@with_progress_argument
def solve(
    problem: MDPProblem,
    method: str = "lp",
    *,
    lp_method: str = "choose",
    threads: int | None = None,
    time_limit: float | None = None,
    row_generation: bool = True,
    initial_rows: str = "none",
    columns: str = "generate",
    polish: bool | str = "auto",
    polish_gap: float = 1e-5,
    repair_rtol: float = 1e-9,
    **benders_options: Any,
) -> PerturbationMatrix:
    """Optimal (or baseline) ε-mDP perturbation matrix for ``problem``.

    Parameters
    ----------
    problem : the :class:`MDPProblem`.
    method : "lp" (exact monolithic LP with HiGHS), "benders" (Benders decomposition,
        see :func:`privopt.mdp.benders.solve_benders_block` for ``benders_options``;
        it runs on :func:`privopt.lp.benders.solve_benders`) or
        "expmech" (Eq. 47 baseline).
    lp_method : HiGHS algorithm for LPs: "choose", "simplex", "ipm", "pdlp".
    row_generation : for ``method="lp"``: solve by lazy mDP-row generation (default; exact,
        see :func:`solve_block_rowgen`) or pass all |E|·K rows to HiGHS at once (``False``,
        "plain HiGHS").
    initial_rows : row generation's first mDP rows: "none" (only the unit-measure rows,
        default) or "dag" (also the shortest-path-DAG rows; fewer rounds, larger model).
    columns : row generation's variables: "generate" (default: only the z_ik that the rows
        mention or whose reduced cost is negative; the bound still covers all N·K) or "all".
    polish, polish_gap : row generation solves rows scaled to coefficient ≤ 1 (accurate duals,
        hence a tight rigorous bound), then repairs the tiny violations that scaling allows.
        ``polish=True`` always, ``"auto"`` (default) only when the certified gap exceeds
        ``polish_gap`` (default 1e-5), re-solves the final rows unscaled from the final basis
        (accurate primal, less repair; 2–25× the time). The lower bound is rigorous either
        way (safe dual bound, :func:`_safe_lower_bound`); the certified gap is
        ``PerturbationMatrix.relative_gap``.
    threads, time_limit : HiGHS threads; time limit in seconds (per LP for method "lp", for
        the whole decomposition for "benders").
    repair_rtol : released matrices satisfy every mDP ratio to this relative tolerance;
        when solver tolerances leave larger violations, :func:`privopt.perturbation.matrix.repair`
        restores them and the utility cost is recorded in ``summary``.
    progress : ``True``, ``False`` or ``"auto"`` (default): bars on stderr over the
        row-generation rounds or the Benders iterations (``"auto"``: on a terminal, once the
        call has run 2 s; the command line shows them unless ``--quiet``).

    Returns
    -------
    PerturbationMatrix (N × K) with ``history`` and ``summary``.

    Notes
    -----
    The mDP graph is split into components first (Property 3.1): an isolated record gets its
    cheapest output, every other component is solved separately and the rows concatenated.
    """
    if method not in METHODS:
        raise InvalidInput(f"method must be one of {METHODS}, got {method!r}")
    _check_benders_options(method, benders_options)
    check_instance("problem", problem, MDPProblem)
    row_generation = check_bool("row_generation", row_generation)
    if time_limit is not None:
        time_limit = check_positive("time_limit", time_limit, allow_inf=True)
    if method == "expmech":
        return _with_unit(problem, exponential_mechanism(problem))
    if method == "lp":
        return _with_unit(
            problem,
            solve_exact(
                problem,
                lp_method=lp_method,
                threads=threads,
                time_limit=time_limit,
                row_generation=row_generation,
                initial_rows=initial_rows,
                columns=columns,
                polish=polish,
                polish_gap=polish_gap,
                repair_rtol=repair_rtol,
            ),
        )

    def benders_block(
        block: MatrixBlock, left: float | None
    ) -> tuple[Any, float, dict[str, Any], list[dict[str, Any]]]:
        options = dict(benders_options)
        if block.objective_shift and "abs_gap" in options:  # in the block's (scaled) units
            options["abs_gap"] = math.ldexp(float(options["abs_gap"]), block.objective_shift)
        zc, lb, info, hist = solve_benders_block(
            block,
            lp_method=lp_method,
            threads=threads,
            time_limit=left,
            repair_rtol=repair_rtol,
            **options,
        )
        return zc, lb, info, hist

    return _with_unit(
        problem,
        solve_components(
            problem,
            benders_block,
            method="benders",
            rel_gap=float(benders_options.get("rel_gap", 1e-4)),
            abs_gap=float(benders_options.get("abs_gap", 0.0)),
            repair_rtol=repair_rtol,
            time_limit=time_limit,
        ),
    )


def _with_unit(problem: MDPProblem, pm: PerturbationMatrix) -> PerturbationMatrix:
    """Record the distance unit the guarantee is stated in (km for Haversine coordinates;
    other metrics leave it to the caller's data, so the guarantee says "distance unit")."""
    if problem.metric == "haversine":
        pm.info.setdefault("distance_unit", "km")
    return pm
