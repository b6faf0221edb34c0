"""Solvers of CLR-Geo: Benders decomposition (one subproblem per user) and the monolithic LP.

Both return a :class:`ClrSolution` whose user matrices are repaired with **one** mixing weight
(:func:`privopt.perturbation.matrix.repair_shared`, which keeps Thm 4.4 across users) and whose
optimality
is stated by the certification rule (:mod:`privopt.certify`): the lower bound is a safe dual
bound (of the whole LP, or of the Benders master), never the solver's own claim.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privopt._progress import check_progress
from privopt._validation import (
    check_executor,
    check_finite_result,
    check_instance,
    check_int,
    check_nonnegative,
    check_positive,
)
from privopt.certify import certify
from privopt.errors import InvalidInput, NumericalTrouble, SolverLimit
from privopt.geo.clr import ClrModel
from privopt.geo.params import GEO_REL_GAP
from privopt.geo.release import release_lower_bound, release_matrices
from privopt.geo.rowgen import solve_rowgen_clr
from privopt.lp import BendersProblem, LinearProgram, safe_dual_bound, solve, solve_benders

__all__ = [
    "ClrSolution",
    "solve_clr",
    "CLR_METHODS",
    "ROWGEN_ROW_RATIO",
    "AUTO_BENDERS_ITERATIONS",
]

CLR_METHODS = ("auto", "benders", "lp", "rowgen")

#: "auto" uses row generation above this many Geo-Ind rows per free variable (measured: 15
#: per variable for LR-Geo-F, where lazy rows win 4×; 1–2 at γ = 0.5 km, where Benders wins).
ROWGEN_ROW_RATIO = 8.0

#: Benders iterations "auto" allows before it answers with the monolithic LP. Rome, M = 4:
#: Benders needs 2 iterations at r_exp = 4 km (y* = 0), where it beats the LP 4× at
#: K = 1,331; once the coupling is active it needs 23–24 (r_exp = 1 km, ε = 1–2 km⁻¹), where the
#: LP is as fast (K = 400: 11 against 14 ms per user), or finds no feasible master point within
#: 500 (ε = 10 km⁻¹: 1.9 s at K = 400 before the LP's 0.05 s; K = 1,331 with a cap of 100:
#: 1.07 ± 0.77 s per run).
AUTO_BENDERS_ITERATIONS = 20

#: HiGHS options of every CLR-Geo solve (see _solve_monolithic). ``small_matrix_value``: a
#: Geo-Ind row divided by e^{εd} keeps coefficients down to e^{−eps_d_cap} = 1.4e-11, and
#: HiGHS drops entries below its default 1e-9 — the row ``e^{−εd} z_ik − g̃ ỹ_k ≤ 0`` then
#: reads ``ỹ_k ≥ 0``, the LP point violates it by up to z_ik, and the repair's weight rose to
#: 5e-7 (LR-Geo-F, Rome K = 200, r_exp = 1 km: gap 1.3e-6 on seeds 2, 6, 10; 0 of 20 after).
_TIGHT = {
    "primal_feasibility_tolerance": 1e-10,
    "dual_feasibility_tolerance": 1e-10,
    "small_matrix_value": 1e-12,
}


@dataclass
class ClrSolution:
    """A solved CLR-Geo instance.

    Attributes
    ----------
    matrices : per user, Z_{N_m} of shape (n_m, K), row-stochastic, repaired.
    y_tilde : (K,) the rescaled shared variables ỹ (y = ỹ·e^{ε r_exp/2}).
    objective : the released matrices' CLR-Geo objective, a **sum over users** of each user's
        expected estimated cost: Σ_m (1/n_m) Σ_ik ĉ_ik z_ik (km; the LP's objective, Eq. 23).
        :attr:`objective_per_user` is the mean over users.
    lower_bound : proven lower bound, summed over users like ``objective``, on the cost of
        every matrix set of the CLR-Geo model and of the matrices released
        (:func:`privopt.geo.release.release_lower_bound`): ``objective ≥ lower_bound`` always.
        ``info["model_lower_bound"]`` is the LP's own safe dual bound.
    status : "optimal" when the certification rule proves ``rel_gap`` for the released
        matrices, else why not.
    relative_gap : proven relative gap (objective − lower_bound) / objective, ≥ 0.
    method : "benders", "rowgen" or "lp" (the solver that produced it).
    info : sizes, times, iterations, repair weight, solver details.
    """

    matrices: list[np.ndarray]
    y_tilde: np.ndarray
    objective: float
    lower_bound: float
    status: str
    relative_gap: float
    method: str
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_users(self) -> int:
        """Number of users M."""
        return len(self.matrices)

    @property
    def objective_per_user(self) -> float:
        """``objective / M``: the mean over users of each user's expected estimated cost (km)."""
        return self.objective / self.n_users


def solve_clr(
    model: ClrModel,
    method: str = "auto",
    *,
    rel_gap: float = GEO_REL_GAP,
    abs_gap: float = 0.0,
    executor: Executor | None = None,
    time_limit: float | None = None,
    max_iterations: int = 500,
    progress: bool | str | None = "auto",
) -> ClrSolution:
    """Solve CLR-Geo (Eqs. 20–25).

    Parameters
    ----------
    model : from :func:`privopt.geo.build_model`.
    method : "benders" (multi-cut Benders on :func:`privopt.lp.benders.solve_benders`, one
        subproblem per user, Appendix C), "rowgen" (one LP with lazy Geo-Ind rows and ỹ as
        shared columns on :mod:`privopt.lp.rowgen`, :mod:`privopt.geo.rowgen`), "lp" (the
        monolithic LP with HiGHS) or "auto" (default): the faster one measured for the
        instance's shape (bench/geo_bench.py --table solvers, Rome grid, M = 4): row
        generation when the model has more than :data:`ROWGEN_ROW_RATIO` Geo-Ind rows per free
        variable (LR-Geo-F at K = 400: 15 per variable, row generation 44 ms per user, Benders
        185, LP 168), else Benders (the paper's r_exp = 4 km, y* = 0: 2 iterations, 39 ms per
        user at K = 1,331 against 172 for row generation and 175 for the LP) with at most
        :data:`AUTO_BENDERS_ITERATIONS` iterations, falling back to the monolithic LP when
        Benders ends without a feasible point or short of its gap, or a subproblem fails
        numerically (r_exp = 1 km, ε = 10 km⁻¹: no feasible master point in 500 iterations;
        the LP takes 15 ms per user).
    rel_gap : requested relative gap; Benders stops at it, and the certification rule checks it.
    abs_gap : Benders also stops when UB − LB ≤ abs_gap (the paper's ξ_BD = 0.01 km).
    executor : a :class:`concurrent.futures.Executor` for the Benders subproblems (threads,
        processes or Dask); serial when None.
    time_limit : seconds for the whole solve.
    max_iterations : Benders iteration limit.
    progress : ``"auto"`` (default: a bar on stderr when it is a terminal and the solve has
        lasted 2 s, or as the command line says), ``True`` or ``False``
        (:mod:`privopt._progress`): Benders iterations with their bounds and gap.

    Returns
    -------
    ClrSolution
        Every matrix, ỹ and the objective finite (else :class:`~privopt.errors.NumericalTrouble`);
        ``lower_bound`` finite or ``-inf`` (none proven, ``relative_gap`` then ``inf``).

    Raises
    ------
    InvalidInput
        A model that is not a :class:`ClrModel`, an unknown method, bad gaps or limits.
    """
    check_instance("model", model, ClrModel)
    if not isinstance(method, str) or method not in CLR_METHODS:
        raise InvalidInput(f"method must be one of {CLR_METHODS}, got {method!r}")
    rel_gap = check_nonnegative("rel_gap", rel_gap)
    abs_gap = check_nonnegative("abs_gap", abs_gap)
    if time_limit is not None:
        time_limit = check_positive("time_limit", time_limit, allow_inf=True)
        time_limit = None if math.isinf(time_limit) else time_limit
    max_iterations = check_int("max_iterations", max_iterations, minimum=1)
    progress = check_progress(progress)
    check_executor(executor)
    start = time.perf_counter()
    if method == "auto" and model.info["geo_rows"] > ROWGEN_ROW_RATIO * max(
        1, model.info["free_variables"]
    ):
        method = "rowgen"
    if method == "lp":
        z_free, y, lower, info = _solve_monolithic(model, time_limit)
    elif method == "rowgen":
        z_free, y, lower, info = solve_rowgen_clr(
            model, rel_gap=rel_gap, time_limit=time_limit, highs_options=_TIGHT, progress=progress
        )
    else:
        z_free, y, lower, info, method = _benders_or_lp(
            model,
            method == "auto",
            rel_gap,
            abs_gap,
            executor,
            time_limit,
            max_iterations,
            progress,
            start,
        )
    raw = [b.assemble(z, y) for b, z in zip(model.blocks, z_free, strict=True)]
    released = release_matrices(model, raw)
    matrices = released.matrices
    _check_finite(matrices, y, lower)
    objective = check_finite_result("CLR-Geo objective", model.objective(matrices))
    # The bound describes what is returned: objective >= bound by construction (release.py).
    bound = release_lower_bound(lower, released, objective)
    largest = max(float(np.max(u.cost, initial=0.0)) for u in model.uploads)
    cert = certify(
        objective, bound, rel_gap, scale=largest or 1.0, what=f"CLR-Geo ({method})", stacklevel=3
    )
    info.update(
        model.info,
        time_s=time.perf_counter() - start,
        model_lower_bound=lower,
        objective_before_repair=model.objective(raw),
        repair_alpha=released.alpha,
        y_norm=float(np.linalg.norm(y) * model.y_scale()),
        y_tilde_max=float(y.max(initial=0.0)),
    )
    return ClrSolution(matrices, y, objective, bound, cert.status, cert.relative_gap, method, info)


def _benders_or_lp(
    model: ClrModel,
    auto: bool,
    rel_gap: float,
    abs_gap: float,
    executor: Executor | None,
    time_limit: float | None,
    max_iterations: int,
    progress: bool | str,
    start: float,
) -> tuple[list[np.ndarray], np.ndarray, float, dict[str, Any], str]:
    """Benders; under "auto" at most :data:`AUTO_BENDERS_ITERATIONS` iterations, then the
    monolithic LP when Benders found no feasible master point, failed numerically or stopped
    short of its gap (a time limit is reported as such)."""
    iterations = min(max_iterations, AUTO_BENDERS_ITERATIONS) if auto else max_iterations
    try:
        z_free, y, lower, info = _solve_benders(
            model, rel_gap, abs_gap, executor, time_limit, iterations, progress
        )
        if not auto or info["benders_status"] in ("optimal", "time_limit"):
            return z_free, y, lower, info, "benders"
        reason = f"Benders ended {info['benders_status']} after {info['iterations']} iterations"
    except (SolverLimit, NumericalTrouble) as exc:
        # Rome K = 400, ε = 10, r_exp = 1 km: no feasible master point within 500 iterations,
        # or a Farkas ray that HiGHS could not confirm.
        if not auto or _has_feasible_point(exc):
            raise
        reason = str(exc)
    left = None if time_limit is None else max(1.0, time_limit - (time.perf_counter() - start))
    z_free, y, lower, info = _solve_monolithic(model, left)
    info["fallback"] = f"monolithic LP after Benders: {reason}"
    return z_free, y, lower, info, "lp"


def _has_feasible_point(exc: Exception) -> bool:
    """Whether a Benders limit left a feasible point (an incumbent with a finite upper bound);
    the engine attaches its result as ``best`` either way."""
    best = getattr(exc, "best", None)
    return best is not None and math.isfinite(getattr(best, "upper_bound", math.inf))


def _check_finite(matrices: list[np.ndarray], y: np.ndarray, lower: float) -> None:
    """A result is finite or the call raises: never a silent NaN (the lower bound may be −inf,
    "none proven", by the certification rule)."""
    for m, z in enumerate(matrices):
        check_finite_result(f"user {m}'s matrix", z, cause="the CLR-Geo solver")
    check_finite_result("ỹ", y, cause="the CLR-Geo solver")
    if lower != -math.inf:
        check_finite_result("CLR-Geo lower bound", lower, cause="the safe dual bound")


def _solve_monolithic(
    model: ClrModel, time_limit: float | None
) -> tuple[list[np.ndarray], np.ndarray, float, dict[str, Any]]:
    t0 = time.perf_counter()
    lp = model.monolithic()
    build = time.perf_counter() - t0
    # Tight tolerances: the safe bound pays every dual infeasibility times the column's bound
    # (1e-7 over 10^5 columns is 1e-2, more than the costs at ε = 10 km⁻¹). They reach HiGHS
    # before the matrix (it applies small_matrix_value as it takes it); a run without a
    # verdict is retried with the fallbacks.
    res = solve(lp, method="simplex", time_limit=time_limit, highs_options=_TIGHT, fallbacks=True)
    lower = safe_dual_bound(
        lp.objective,
        lp.matrix(),
        lp.row_lower,
        lp.row_upper,
        lp.col_lower,
        lp.col_upper,
        res.row_duals,
    )
    z_free, y = model.split(res.x)
    info = {
        "build_s": build,
        "solve_s": res.solve_time,
        "rows": lp.n_rows,
        "vars": lp.n_vars,
        "iterations": res.iterations,
        "lp_objective": res.objective,
    }
    return z_free, y, lower, info


def _solve_benders(
    model: ClrModel,
    rel_gap: float,
    abs_gap: float,
    executor: Executor | None,
    time_limit: float | None,
    max_iterations: int,
    progress: bool | str,
) -> tuple[list[np.ndarray], np.ndarray, float, dict[str, Any]]:
    master = LinearProgram(model.n_columns, objective=model.alpha, lower=0.0, upper=model.y_upper)
    prob = BendersProblem(master)
    for m, b in enumerate(model.blocks):
        sub = LinearProgram(b.n_free, objective=b.cost_free, lower=0.0, upper=1.0)
        sub.add_rows(b.w, lower=b.lower, upper=b.upper)
        prob.add_subproblem(sub, b.t, theta_lower=0.0, name=f"user{m}")
    res = solve_benders(
        prob,
        rel_gap=rel_gap,
        abs_gap=abs_gap,
        gap_floor=1e-300,
        max_iterations=max_iterations,
        time_limit=time_limit,
        executor=executor,
        progress=progress,
        highs_options=_TIGHT,
    )
    if res.sub_solutions is None:  # pragma: no cover - keep_solutions is on by default
        raise InvalidInput("Benders returned no subproblem solutions")
    lower = res.certified_lower_bound
    if not math.isfinite(lower):
        lower = -math.inf
    info = {
        "iterations": res.iterations,
        "benders_status": res.status,
        "benders_upper_bound": res.upper_bound,
        "benders_lower_bound": res.lower_bound,
        "cuts": res.n_cuts,
        "executor": res.executor_mode,
        "history": [
            {"iteration": h.iteration, "lb": h.lb, "ub": h.ub, "gap": h.gap} for h in res.history
        ],
    }
    return list(res.sub_solutions), np.asarray(res.x_master), lower, info
