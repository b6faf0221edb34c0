"""Solvers of :class:`MDPProblem`: exact monolithic LP, Benders decomposition, ExpMech.

One entry point, :func:`solve` (``method=`` "lp" | "benders" | "expmech"), returning a
:class:`PerturbationMatrix` that has been verified (and repaired when solver tolerances left
violations, spec issue item 3).
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np
from scipy.special import log_softmax

from privopt._progress import with_progress_argument
from privopt._validation import check_bool, check_instance, check_positive
from privopt.certify import Certificate, certify, proven_relative_gap
from privopt.errors import InvalidInput, UnprotectedRecordsWarning
from privopt.mdp._exact import (  # noqa: F401 - _safe_lower_bound: tests' oracle
    _safe_lower_bound,
    _solve_block_lp,
    _solve_block_rowgen,
    build_lp,
)
from privopt.mdp.benders import solve_benders_block
from privopt.mdp.problem import MDPProblem
from privopt.mdp.result import PerturbationMatrix, repair, verify_matrix

__all__ = ["solve", "solve_epsilon_path", "exponential_mechanism", "build_lp", "METHODS"]

METHODS = ("lp", "benders", "expmech")


def exponential_mechanism(problem: MDPProblem) -> PerturbationMatrix:
    """ExpMech baseline (paper Eq. 47): ``Z_ik ∝ exp(−ε d(r_i, o_k) / 2)``.

    Guarantee: ε-mDP for *all* pairs of records w.r.t. d (triangle inequality: the numerator
    and the normaliser each change by at most e^{εd/2}), stronger than the LP mechanism, which
    is constrained only along mDP-graph paths (spec §7-14). Computed in log space.
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
        summary={"time_s": time.perf_counter() - start},
    )


def _certificate(
    method: str,
    loss: float,
    lower: float,
    polish_gap: float,
    benders_options: dict[str, Any],
    scale: float,
) -> Certificate:
    """The certification rule (docs/certification.md) for a released matrix: its loss against
    the summed safe dual bounds. The target is ``rel_gap`` (or ``abs_gap``) for Benders and
    ``polish_gap`` for the LP; an uncertified result warns once."""
    if method == "benders":
        rel_gap = float(benders_options.get("rel_gap", 1e-4))
        abs_gap = float(benders_options.get("abs_gap", 0.0))
    else:
        rel_gap, abs_gap = polish_gap, 0.0
    if loss - lower <= abs_gap:
        rel_gap = max(rel_gap, proven_relative_gap(loss, lower))
    # The whole release is judged by its own loss and the summed bounds: a component that
    # did not prove its own gap (e.g. one of loss 1e-20 against the bound 0) is reported in
    # its entry of summary["components"], and counts here only through what it adds.
    return certify(
        loss, lower, rel_gap, scale=scale, what=f"mdp solve(method={method!r})", stacklevel=4
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
    options : passed to :func:`solve` (``lp_method``, ``threads``, ``time_limit``,
        ``repair_rtol``).

    Returns
    -------
    list of :class:`PerturbationMatrix`, one per ε, each verified like :func:`solve`'s.
    """
    import copy

    from privopt._validation import check_nonnegative, real_array

    eps_list = [
        check_nonnegative("epsilons", e) for e in np.atleast_1d(real_array("epsilons", epsilons))
    ]
    if not eps_list:
        raise InvalidInput("epsilons must not be empty")
    warm: dict[int, dict[str, Any]] | None = {} if check_bool("warm_start", warm_start) else None
    out = []
    for eps in eps_list:
        prob = copy.copy(problem)
        prob.epsilon = eps  # edges and components depend on η only
        out.append(solve(prob, "lp", _warm=warm, **options))
    return out


def _check_benders_options(method: str, options: dict[str, Any]) -> None:
    """Unknown keywords are refused, never ignored: a typo must not change the solve silently."""
    if not options:
        return
    valid: list[str] = []
    if method == "benders":
        import inspect

        from privopt.mdp.benders import solve_benders_block

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


def _warn_isolated(n_isolated: int, n: int, eta: float) -> None:
    """Warn when records have no neighbour within η: (ε, η)-mDP constrains nothing about them,
    so each gets its cheapest output (with the default cost, its own location)."""
    if n_isolated and n > 1:
        warnings.warn(
            f"{n_isolated} of {n} records have no neighbour within eta = {eta:g}: metric DP "
            "constrains nothing about them, so each gets its cheapest output (with the default "
            "cost, its own location). Raise eta to protect them.",
            UnprotectedRecordsWarning,
            stacklevel=3,
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


def _objective_shift(block: Any) -> int:
    """Scale ``block.objective`` by ``2**shift`` so that its largest entry lies in [1, 2) when
    it lies outside :data:`_OBJECTIVE_RANGE`; return ``shift`` (0: unchanged)."""
    largest = float(np.max(block.objective)) if block.objective.size else 0.0
    low, high = _OBJECTIVE_RANGE
    if largest == 0.0 or low <= largest <= high:
        return 0
    shift = 1 - math.frexp(largest)[1]
    block.objective = np.ldexp(block.objective, shift)
    return shift


def _unshift(values: dict[str, Any], shift: int) -> None:
    """Put the objective-valued entries of ``values`` back in the problem's units."""
    if shift:
        for key in _OBJECTIVE_KEYS:
            if isinstance(values.get(key), float):
                values[key] = math.ldexp(values[key], -shift)


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
    _warm: dict[int, dict[str, Any]] | None = None,
    **benders_options: Any,
) -> PerturbationMatrix:
    """Optimal (or baseline) ε-mDP perturbation matrix for ``problem``.

    Parameters
    ----------
    problem : the :class:`MDPProblem`.
    method : "lp" (exact monolithic LP with HiGHS), "benders" (spec §2–3 decomposition,
        see :func:`privopt.mdp.benders.solve_benders_block` for ``benders_options``;
        it runs on :func:`privopt.lp.benders.solve_benders`) or
        "expmech" (Eq. 47 baseline).
    lp_method : HiGHS algorithm for LPs: "choose", "simplex", "ipm", "pdlp".
    row_generation : for ``method="lp"``: solve by lazy mDP-row generation (default; exact,
        see :func:`_solve_block_rowgen`) or pass all |E|·K rows to HiGHS at once (``False``,
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
        when solver tolerances leave larger violations, :func:`privopt.mdp.result.repair`
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
        return exponential_mechanism(problem)
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
        block = problem.subproblem(index)
        shift = _objective_shift(block)
        block_options = dict(benders_options)
        if shift and "abs_gap" in block_options:
            block_options["abs_gap"] = math.ldexp(float(block_options["abs_gap"]), shift)
        if method == "lp" and row_generation:
            warm = None if _warm is None else _warm.setdefault(int(comp), {})
            zc, value, info = _solve_block_rowgen(
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
            lb = value
        elif method == "lp":
            zc, value, info = _solve_block_lp(
                block, lp_method=lp_method, threads=threads, time_limit=time_limit
            )
            lb = value
        else:
            # time_limit bounds the whole solve: what is left of it goes to each component.
            left = None if time_limit is None else time_limit - (time.perf_counter() - start)
            if left is not None and left <= 0:
                from privopt.errors import SolverLimit

                raise SolverLimit("mDP Benders: time limit reached", status="limit")
            zc, lb, info, hist = solve_benders_block(
                block,
                lp_method=lp_method,
                threads=threads,
                time_limit=left,
                repair_rtol=repair_rtol,
                **block_options,
            )
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
    check = verify_matrix(z, problem.edges, problem.epsilon)
    alpha = 0.0
    if not check.ok(repair_rtol):
        z, alpha = repair(z, problem.edges, problem.epsilon, objective=obj)
        check = verify_matrix(z, problem.edges, problem.epsilon)
    loss = float(np.sum(obj * z))
    largest = float(np.max(obj)) if obj.size else 0.0
    cert = _certificate(method, loss, lower, polish_gap, benders_options, largest or 1.0)
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
        summary=summary,
    )
