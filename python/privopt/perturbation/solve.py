"""Solving a metric-privacy matrix problem exactly: the component loop shared by every method,
the exact LP by row generation, the exponential mechanism, and the ε path.

The mDP graph splits into components (Property 3.1): an isolated record gets its cheapest
output; every other component is solved on its own by a *block solver* (the exact LP here,
Benders decomposition in :mod:`privopt.mdp`) and the rows are concatenated. The release is
verified against every edge, repaired when solver tolerances left violations, and certified
by the summed bounds (:mod:`privopt.certify`).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from scipy.special import log_softmax

from privopt._callers import stacklevel_outside_privopt
from privopt._progress import with_progress_argument
from privopt._validation import (
    check_bool,
    check_instance,
    check_nonnegative,
    check_positive,
    real_array,
)
from privopt.certify import Certificate, certify, proven_relative_gap
from privopt.errors import InvalidInput, SolverLimit, UnprotectedRecordsWarning
from privopt.perturbation.exact_lp import solve_block_lp, solve_block_rowgen
from privopt.perturbation.matrix import PerturbationMatrix, repair, verify_matrix
from privopt.perturbation.problem import MatrixBlock, MDPProblem

__all__ = [
    "BlockSolver",
    "solve_components",
    "solve_exact",
    "solve_epsilon_path",
    "epsilon_path",
    "exponential_mechanism",
]

#: ``block_solver(block, seconds_left) -> (Z, certified lower bound, info, history)`` for one
#: component of the mDP graph (``seconds_left`` None: no limit).
BlockSolver = Callable[
    [MatrixBlock, "float | None"], tuple[np.ndarray, float, dict[str, Any], list[dict[str, Any]]]
]


def exponential_mechanism(problem: MDPProblem) -> PerturbationMatrix:
    """ExpMech baseline (paper Eq. 47): ``Z_ik ∝ exp(−ε d(r_i, o_k) / 2)``.

    Guarantee: ε-mDP for *all* pairs of records w.r.t. d (triangle inequality: the numerator
    and the normaliser each change by at most e^{εd/2}), stronger than the LP mechanism, which
    is constrained only along mDP-graph paths. Computed in log space.
    """
    check_instance("problem", problem, MDPProblem)
    start = time.perf_counter()
    logz = log_softmax(-0.5 * problem.epsilon * problem.output_distances, axis=1)
    z = np.exp(logz)
    loss = float(np.sum(problem.objective * z))
    return PerturbationMatrix(
        z,
        problem.epsilon,
        problem.eta,
        loss,
        method="expmech",
        output_index=problem.output_index,
        info={"time_s": time.perf_counter() - start},
        edges=problem.edges,
    )


def _certificate(
    method: str, loss: float, lower: float, rel_gap: float, abs_gap: float, scale: float
) -> Certificate:
    """The certification rule (docs/certification.md) for a released matrix: its loss against
    the summed safe dual bounds, to ``rel_gap`` (or ``abs_gap``); an uncertified result warns
    once, at the user's line."""
    if loss - lower <= abs_gap:
        rel_gap = max(rel_gap, proven_relative_gap(loss, lower))
    # The whole release is judged by its own loss and the summed bounds: a component that
    # did not prove its own gap (e.g. one of loss 1e-20 against the bound 0) is reported in
    # its entry of summary["components"], and counts here only through what it adds.
    return certify(
        loss,
        lower,
        rel_gap,
        scale=scale,
        what=f"mdp solve(method={method!r})",
        stacklevel=stacklevel_outside_privopt(),
    )


def _warn_isolated(n_isolated: int, n: int, eta: float) -> None:
    """Warn when records have no neighbour within η: (ε, η)-mDP constrains nothing about them,
    so each gets its cheapest output (with the default cost, its own location)."""
    if n_isolated and n > 1:
        warnings.warn(
            f"{n_isolated} of {n} records have no neighbour within eta = {eta:g}: metric DP "
            "constrains nothing about them, so each gets its cheapest output (with the default "
            "cost, its own location). Raise eta to protect them.",
            UnprotectedRecordsWarning,
            stacklevel=stacklevel_outside_privopt(),
        )


#: Objective entries are solved at a scale where the LP's absolute tolerances (~1e-9) are
#: small against them: a block whose largest p_i c_ik lies outside [2^-10, 2^10] is scaled
#: by a power of two (exactly) into [1, 2). At 1e-30 the solver otherwise returns any feasible
#: matrix, and a loss below 1e-12 would pass the certification rule's absolute floor.
_OBJECTIVE_RANGE = (2.0**-10, 2.0**10)
#: Values of a component's ``info`` and Benders ``history`` that are in objective units.
_OBJECTIVE_KEYS = (
    "relaxation_objective",
    "lower_bound",
    "upper_bound",
    "released_loss",
    "certified_lower_bound",
    "solver_lower_bound",
    "lb",
    "ub",
    "best_ub",
)


def _objective_shift(block: MatrixBlock) -> int:
    """Scale ``block.objective`` by ``2**shift`` so that its largest entry lies in [1, 2) when
    it lies outside :data:`_OBJECTIVE_RANGE`; record and return ``shift`` (0: unchanged)."""
    largest = float(np.max(block.objective)) if block.objective.size else 0.0
    low, high = _OBJECTIVE_RANGE
    if largest == 0.0 or low <= largest <= high:
        return 0
    shift = 1 - math.frexp(largest)[1]
    block.objective = np.ldexp(block.objective, shift)
    block.objective_shift = shift
    return shift


def _unshift(values: dict[str, Any], shift: int) -> None:
    """Put the objective-valued entries of ``values`` back in the problem's units."""
    if shift:
        for key in _OBJECTIVE_KEYS:
            if isinstance(values.get(key), float):
                values[key] = math.ldexp(values[key], -shift)


def solve_components(
    problem: MDPProblem,
    block_solver: BlockSolver,
    *,
    method: str,
    rel_gap: float,
    abs_gap: float = 0.0,
    repair_rtol: float = 1e-9,
    time_limit: float | None = None,
) -> PerturbationMatrix:
    """Solve ``problem`` component by component with ``block_solver`` and release the result.

    Isolated records get their cheapest output (exactly optimal); each other component of the
    mDP graph goes to ``block_solver`` with what is left of ``time_limit``; the concatenated
    matrix is verified against every edge, repaired (:func:`repair`) when a ratio is off by more
    than ``repair_rtol``, and certified against the summed component bounds to ``rel_gap`` (or
    ``abs_gap``). ``method`` names the block solver in the summary and the warning.

    Raises
    ------
    InvalidInput
        ``problem`` not an :class:`MDPProblem`, ``block_solver`` not callable, bad gaps.
    """
    check_instance("problem", problem, MDPProblem)
    if not callable(block_solver):
        raise InvalidInput(f"block_solver must be callable, got {type(block_solver).__name__}")
    if not isinstance(method, str) or not method:
        raise InvalidInput(f"method must be a non-empty string naming the solver, got {method!r}")
    rel_gap = check_nonnegative("rel_gap", rel_gap)
    abs_gap = check_nonnegative("abs_gap", abs_gap)
    repair_rtol = check_nonnegative("repair_rtol", repair_rtol)
    start = time.perf_counter()
    n, k = problem.n_records, problem.n_outputs
    obj = problem.objective
    z = np.zeros((n, k))
    n_comp, labels = problem.components
    sizes = np.bincount(labels, minlength=n_comp)
    lower = 0.0
    history: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    # Isolated records (Property 3.1): the cheapest output, exactly optimal.
    iso = np.flatnonzero(sizes[labels] == 1)
    _warn_isolated(iso.size, n, problem.eta)
    best = np.argmin(obj[iso], axis=1)
    z[iso, best] = 1.0
    lower += float(obj[iso, best].sum())
    for comp in np.flatnonzero(sizes > 1):
        index = np.flatnonzero(labels == comp)
        # time_limit bounds the whole solve: what is left of it goes to each component.
        left = None if time_limit is None else time_limit - (time.perf_counter() - start)
        if left is not None and left <= 0:
            raise SolverLimit(f"mDP {method}: time limit reached", status="limit")
        block = problem.subproblem(index)
        shift = _objective_shift(block)  # a solver in the units of its tolerances
        zc, lb, info, hist = block_solver(block, left)
        for h in hist:
            h["component"] = int(comp)
            _unshift(h, shift)
        history.extend(hist)
        _unshift(info, shift)
        z[index] = zc
        lower += math.ldexp(lb, -shift)
        parts.append({"component": int(comp), **info})
    solve_time = time.perf_counter() - start
    raw_loss = float(np.sum(obj * z))
    check = verify_matrix(z, problem.edges, problem.epsilon, check_input=False)
    alpha = 0.0
    if not check.ok(repair_rtol):
        z, alpha = repair(z, problem.edges, problem.epsilon, objective=obj, check_input=False)
        check = verify_matrix(z, problem.edges, problem.epsilon, check_input=False)
    loss = float(np.sum(obj * z))
    largest = float(np.max(obj)) if obj.size else 0.0
    cert = _certificate(method, loss, lower, rel_gap, abs_gap, largest or 1.0)
    summary = {
        "method": method,
        "status": cert.status,
        "relative_gap": cert.relative_gap,
        "time_s": time.perf_counter() - start,
        "solve_time_s": solve_time,
        "n_components": int(n_comp),
        "n_isolated": int(iso.size),
        "largest_component": int(sizes.max()),
        "components": parts,
        "loss_before_repair": raw_loss,
        # Row generation repairs per component (its bound is certified against the repaired
        # loss); the largest weight used anywhere is reported.
        "repair_alpha": max([alpha] + [p.get("repair_alpha", 0.0) for p in parts]),
        "repair_cost": loss - raw_loss,
        "max_relative_violation": check.max_relative_violation,
        "iterations": int(sum(p.get("iterations", 0) for p in parts)),
        # Benders components that stalled and were solved by exact row generation instead.
        "fallbacks": sum("fallback" in p for p in parts),
    }
    return PerturbationMatrix(
        z,
        problem.epsilon,
        problem.eta,
        loss,
        lower_bound=lower,
        method=method,
        output_index=problem.output_index,
        history=history,
        info=summary,
        edges=problem.edges,
    )


@with_progress_argument
def solve_exact(
    problem: MDPProblem,
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
    _warm: dict[int, dict[str, Any]] | None = None,
) -> PerturbationMatrix:
    """The optimal ε-mDP perturbation matrix of ``problem`` by the exact LP, certified.

    Each component of the mDP graph is solved by lazy row (and column) generation with a
    rigorous safe dual bound (``row_generation=True``, :func:`privopt.perturbation.exact_lp.
    solve_block_rowgen`) or as one LP with every row (``False``, "plain HiGHS"); see
    :func:`privopt.mdp.solve` (method ``"lp"``) for every option. ``polish_gap`` is also the
    gap that ``status="optimal"`` proves.
    """
    check_instance("problem", problem, MDPProblem)
    row_generation = check_bool("row_generation", row_generation)
    if time_limit is not None:
        time_limit = check_positive("time_limit", time_limit, allow_inf=True)

    def block_solver(
        block: MatrixBlock, left: float | None
    ) -> tuple[np.ndarray, float, dict[str, Any], list[dict[str, Any]]]:
        if not row_generation:
            zc, value, info = solve_block_lp(
                block, lp_method=lp_method, threads=threads, time_limit=time_limit
            )
            return zc, value, info, []
        warm = None if _warm is None else _warm.setdefault(int(block.index[0]), {})
        zc, value, info = solve_block_rowgen(
            block,
            lp_method=lp_method,
            threads=threads,
            time_limit=time_limit,
            warm=warm,
            initial_rows=initial_rows,
            columns=columns,
            polish=polish,
            target_gap=polish_gap,
        )
        return zc, value, info, []

    return solve_components(
        problem, block_solver, method="lp", rel_gap=polish_gap, repair_rtol=repair_rtol
    )


def solve_epsilon_path(
    problem: MDPProblem, epsilons: Any, *, warm_start: bool = True, **options: Any
) -> list[PerturbationMatrix]:
    """Optimal matrices for several ε on the same records, outputs, cost and η (method "lp",
    row generation), each solve warm-started from the previous one (beyond the paper).

    Neighbouring ε have nearly the same binding mDP rows and optimal basis: the next solve
    starts from the previous ε's active rows and final simplex basis (the coefficients
    e^{εd} change, the structure does not). ``warm_start=False`` solves each ε from scratch.

    Parameters
    ----------
    problem : the records, outputs, cost, prior and η; its own ε is ignored.
    epsilons : iterable of ε ≥ 0 (solved in the given order; sorted order warms best).
    options : passed to :func:`solve_exact` (``lp_method``, ``threads``, ``time_limit``,
        ``repair_rtol``).

    Returns
    -------
    list of :class:`PerturbationMatrix`, one per ε, each verified like :func:`solve_exact`'s.
    """
    return list(epsilon_path(problem, epsilons, warm_start=warm_start, **options))


def epsilon_path(
    problem: MDPProblem, epsilons: Any, *, warm_start: bool = True, **options: Any
) -> Iterator[PerturbationMatrix]:
    """:func:`solve_epsilon_path` one ε at a time: an iterator that solves the next ε when
    asked for it (for a caller that evaluates or reports each matrix as it comes). The
    arguments are checked at once, before the first solve.

    Raises
    ------
    InvalidInput
        A problem that is not an :class:`MDPProblem`, no ε, an ε that is not a real ≥ 0, a
        ``warm_start`` that is not a bool.
    """
    check_instance("problem", problem, MDPProblem)
    eps_list = [
        check_nonnegative("epsilons", e) for e in np.atleast_1d(real_array("epsilons", epsilons))
    ]
    if not eps_list:
        raise InvalidInput("epsilons must not be empty")
    warm: dict[int, dict[str, Any]] | None = {} if check_bool("warm_start", warm_start) else None
    return _solve_path(problem, eps_list, warm, options)


def _solve_path(
    problem: MDPProblem,
    eps_list: list[float],
    warm: dict[int, dict[str, Any]] | None,
    options: dict[str, Any],
) -> Iterator[PerturbationMatrix]:
    for eps in eps_list:
        yield solve_exact(problem.with_epsilon(eps), _warm=warm, **options)
