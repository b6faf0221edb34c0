"""The Benders loop (spec 000 §3.4): solve the master, separate at its point (or an in-out
point), add cuts, keep the incumbent, stop when the certified bound proves the gap.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np

from privopt._progress import postfix_within_step, progress_bar
from privopt._validation import (
    check_bool,
    check_executor,
    check_int,
    check_nonnegative,
    check_positive,
)
from privopt.errors import (
    InvalidInput,
    NumericalTrouble,
    SolverLimit,
    UnboundedModel,
)
from privopt.lp.benders.master import (
    _LazyRows,
    _Master,
    _MasterTimeout,
    _prepare_initial_cuts,
    n_theta,
)
from privopt.lp.benders.problem import _INF, BendersProblem, _SubData
from privopt.lp.benders.result import BendersIteration, BendersResult
from privopt.lp.benders.stabilisation import InOut
from privopt.lp.benders.subproblems import _Dispatcher, _Outcome, _PendingRound

__all__ = ["solve_benders"]

#: Rounds in a row that may return the previous master point (to 1e-12) before the run counts
#: as stalled: in-out separation legitimately repeats a point once (it then separates at the
#: master point itself).
STUCK_ROUNDS = 3


def solve_benders(
    problem: BendersProblem,
    *,
    rel_gap: float = 1e-4,
    max_iterations: int = 500,
    time_limit: float | None = None,
    executor: Executor | None = None,
    progress: bool | str | None = None,
    initial_cuts: Sequence[Any] | None = None,
    multi_cut: bool = True,
    cut_tolerance: float = 1e-9,
    keep_solutions: bool = True,
    raise_on_limit: bool = False,
    abs_gap: float = 0.0,
    gap_floor: float = 1.0,
    lazy_rows: Any = None,
    lazy_tolerance: float = 1e-10,
    highs_options: dict[str, Any] | None = None,
    core_point: np.ndarray | None = None,
    in_out: float = 0.5,
    stall_in_out: float | None = None,
    retries: int = 2,
    core_round: bool = True,
) -> BendersResult:
    """Solve a :class:`BendersProblem` by Benders decomposition.

    Parameters
    ----------
    problem : master + subproblems.
    rel_gap : stop when ``(UB - LB) / max(gap_floor, |UB|) <= rel_gap``.
    max_iterations : maximal number of master solves.
    time_limit : seconds of wall clock: every HiGHS call (master, each subproblem, the
        certification re-solve) gets the time left, subproblems are not started past it,
        and the run ends with status ``"time_limit"`` and the bounds proven so far; it
        overruns the limit by at most one HiGHS call's reaction time.
    executor : a :class:`concurrent.futures.Executor` for the subproblems (serial if None);
        see the module docstring for how data is shipped per executor kind.
    progress : ``True`` shows a tqdm bar on stderr with the bounds and gap, ``False`` none,
        ``"auto"`` or ``None`` (default) one on a terminal once the run has lasted 2 s, or
        as an enclosing :func:`privopt._progress.progress_scope` says (the CLI's).
    initial_cuts : master rows added before the first iteration: :class:`Cut` objects or
        ``(coef, lower, upper)`` tuples over ``(x, theta)``. A cut with a nonzero on ``theta_k``
        counts as bounding it.
    multi_cut : one ``theta`` and one optimality cut per subproblem (default); ``False``
        aggregates them into a single ``theta`` and cut per iteration.
    cut_tolerance : an optimality cut is added when ``theta_k < phi_k - tol * max(1, |phi_k|)``.
    keep_solutions : return the subproblem solutions of the incumbent.
    raise_on_limit : raise :class:`~privopt.errors.SolverLimit` (``best`` = the result) when a
        limit stops the run before the gap is reached, instead of returning the result.
    abs_gap : also stop when ``UB - LB <= abs_gap`` (e.g. 0.01, absolute).
    gap_floor : the relative gap is ``(UB - LB) / max(gap_floor, |UB|)``; the default 1 makes
        it absolute for objectives below 1, a tiny floor (e.g. 1e-300) makes it truly relative
        (for objectives of order 1e-4 and below).
    lazy_rows : a :class:`~privopt.lp.LinearProgram` over (a prefix of) the master variables
        whose rows are used (objective and bounds ignored), or ``(P, lower, upper)`` with ``P``
        of shape (m, <= n_master): valid master rows
        added only once a master point violates them by more than ``lazy_tolerance`` (the
        master is re-solved, warm, until none is violated). For large families of valid
        inequalities that are mostly slack at the optimum (e.g. the rows among master
        variables of a decomposed LP, or valid path inequalities). Exact: subproblems only
        ever see points satisfying all rows.
    lazy_tolerance : absolute violation above which a lazy row is added.
    highs_options : extra HiGHS options for the master and every subproblem, e.g.
        ``{"primal_feasibility_tolerance": 1e-9}`` when coefficients span many decades.
    core_point : a master point at which every subproblem is feasible (and that satisfies the
        master rows), e.g. a known feasible solution. Enables the in-out separation
        (Ben-Ameur & Neto 2007; Fischetti, Ljubić & Sinnl 2017): subproblems are solved at
        ``x_sep = in_out·x̄ + (1 − in_out)·core`` instead of the master point x̄. A
        feasibility cut at x_sep also cuts x̄ off (the feasible set is convex and contains the
        core); a fully feasible x_sep is an upper bound and becomes the new core. When the
        cuts at x_sep do not cut x̄ off, the next round separates at x̄ itself.
    in_out : the weight of the master point in x_sep, in (0, 1].
    core_round : with a ``core_point``: the first iteration also solves every subproblem at
        the core point itself, set going *before* the first master solve, so that on an
        executor it runs while the master is solved. Its optimality cuts (one per
        subproblem, kept whether or not they separate the first master point) bound every
        ``theta_k`` from the second master on, its value is a first incumbent (a run stopped
        by its time limit after the core round keeps it), and the first round at the master's
        point then starts warm from the core's bases instead of from scratch. The cuts of
        both rounds enter the master together after the first round, so the iterates do
        not depend on which of the two finished first (serial and parallel runs agree).
    retries : a subproblem task lost with its worker (Dask: ``retries=`` of the task, then
        resubmission with the data itself; other executors: resubmission) is retried this
        many times, then :class:`~privopt.errors.SolverError` names the subproblem. Tasks are
        pure (the same point gives the same cut), so a retry changes nothing in the result.
    stall_in_out : with a ``core_point`` and ``in_out=1``: the in-out weight switched to when
        the classical iteration stalls, i.e. no cut separates x̄ once made safe for HiGHS
        (on badly scaled subproblems degenerate duals reach 1e12; capped, their cut no
        longer binds and the master returns the same point). None: stop.

    Returns
    -------
    BendersResult

    Raises
    ------
    InvalidInput, InfeasibleModel (the whole problem is infeasible), UnboundedModel,
    NumericalTrouble, SolverLimit (no feasible point within the limits, or ``raise_on_limit``).
    """
    raise_on_limit = check_bool("raise_on_limit", raise_on_limit)
    settings = _Settings.checked(
        problem,
        rel_gap=rel_gap,
        abs_gap=abs_gap,
        gap_floor=gap_floor,
        max_iterations=max_iterations,
        time_limit=time_limit,
        retries=retries,
        executor=executor,
        cut_tolerance=cut_tolerance,
        multi_cut=multi_cut,
        keep_solutions=keep_solutions,
        lazy_tolerance=lazy_tolerance,
        options=tuple((highs_options or {}).items()),
        core_round=core_round,
    )
    stabiliser = _in_out(problem, core_point, in_out, stall_in_out)
    run = _Run(problem, settings, initial_cuts, lazy_rows, stabiliser, executor, progress)
    try:
        status = run.iterate()
    finally:
        run.close()
    return run.result(status, raise_on_limit)


@dataclass(frozen=True)
class _Settings:
    """The validated scalar options of a run."""

    rel_gap: float
    abs_gap: float
    gap_floor: float
    max_iterations: int
    time_limit: float | None
    retries: int
    cut_tolerance: float
    multi_cut: bool
    keep_solutions: bool
    lazy_tolerance: float
    options: tuple[tuple[str, Any], ...]
    core_round: bool

    @classmethod
    def checked(cls, problem: Any, *, executor: Any, **kw: Any) -> _Settings:
        if not isinstance(problem, BendersProblem):
            raise InvalidInput(f"problem must be a BendersProblem, got {type(problem).__name__}")
        if problem.n_subproblems == 0:
            raise InvalidInput("problem has no subproblems")
        check_executor(executor)
        for name in ("rel_gap", "abs_gap"):
            kw[name] = check_nonnegative(name, kw[name])
        kw["gap_floor"] = check_positive("gap_floor", kw["gap_floor"])
        for name in ("multi_cut", "keep_solutions", "core_round"):
            kw[name] = check_bool(name, kw[name])
        kw["max_iterations"] = check_int("max_iterations", kw["max_iterations"], minimum=1)
        kw["retries"] = check_int("retries", kw["retries"], minimum=0)
        if kw["time_limit"] is not None:
            kw["time_limit"] = check_positive("time_limit", kw["time_limit"], allow_inf=True)
        return cls(**kw)

    def proven(self, bound: float, ub: float) -> bool:
        """The certification rule: the safe ``bound`` proves ``ub`` to rel_gap or abs_gap."""
        return _proven(bound, ub, self.rel_gap, self.abs_gap, self.gap_floor)

    def closing(self, lb: float, ub: float) -> bool:
        """Whether HiGHS's master value ``lb`` says the gap is closed (time to certify)."""
        return _gap(lb, ub, self.gap_floor) <= self.rel_gap or ub - lb <= self.abs_gap


def _in_out(
    problem: BendersProblem, core_point: Any, in_out: float, stall_in_out: float | None
) -> InOut:
    if core_point is None:
        return InOut(None)
    core = np.asarray(core_point, dtype=np.float64).ravel()
    if core.size != problem.n_master or not np.isfinite(core).all():
        raise InvalidInput(f"core_point must be {problem.n_master} finite numbers")
    stall = None if stall_in_out is None else float(stall_in_out)
    return InOut(core, float(in_out), stall)


class _Clock:
    """Wall clock of a run against its time limit."""

    def __init__(self, limit: float | None) -> None:
        self.start = time.perf_counter()
        self.limit = limit

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float | None:
        """Seconds left; raises :class:`_MasterTimeout` when none are."""
        if self.limit is None:
            return None
        left = self.limit - self.elapsed()
        if left <= 0:
            # HiGHS checks its limit only every so many iterations: a master re-solve of a
            # few pivots ignores a 1 ms limit, so the lazy-row loop would run on past
            # time_limit.
            raise _MasterTimeout("time limit reached")
        return left

    @property
    def deadline(self) -> float | None:
        """The ``time.perf_counter()`` value at which the limit is reached."""
        return None if self.limit is None else self.start + self.limit

    def remaining(self) -> float | None:
        """Seconds left (<= 0 once expired), None without a limit."""
        return None if self.limit is None else self.limit - self.elapsed()

    def expired(self) -> bool:
        return self.limit is not None and self.elapsed() >= self.limit


@dataclass
class _Incumbent:
    """The best fully feasible master point seen: its objective, x and subproblem solutions."""

    ub: float = _INF
    x: np.ndarray | None = None
    y: list[np.ndarray] | None = None

    def offer(self, value: float, x: np.ndarray, results: list[_Outcome], keep: bool) -> None:
        if value < self.ub:
            self.ub, self.x = value, x.copy()
            self.y = [cast(np.ndarray, r.y) for r in results] if keep else None


@dataclass
class _Round:
    """One round of subproblem solves at ``x_sep`` and the cuts it produced."""

    x_sep: np.ndarray
    results: list[_Outcome]
    cuts: list[tuple]
    n_opt: int
    n_feas: int
    iterate_ub: float  # c^T x_sep + Σ phi_k, inf when some subproblem is infeasible
    newly: np.ndarray  # theta indices that became bounded
    sub_time: float


class _Run:
    """One Benders run: master, subproblem dispatcher, stabilisation, incumbent, history."""

    def __init__(
        self,
        problem: BendersProblem,
        s: _Settings,
        initial_cuts: Sequence[Any] | None,
        lazy_rows: Any,
        stabiliser: InOut,
        executor: Executor | None,
        progress: Any,
    ) -> None:
        self.s, self.problem, self.stab = s, problem, stabiliser
        self.clock = _Clock(s.time_limit)
        # The caller's rows are checked before any work is sent out.
        width = problem.n_master + n_theta(problem, s.multi_cut)
        cuts = _prepare_initial_cuts(initial_cuts, width) if initial_cuts else []
        self.lazy = None if lazy_rows is None else _LazyRows(lazy_rows, problem.n_master)
        self.subs = (
            [replace(d, options=s.options) for d in problem._subs] if s.options else problem._subs
        )
        self.dispatcher = _Dispatcher(self.subs, executor, s.retries, problem.names)
        # The core round's tasks go out before the master is built: on a cluster they run
        # while the driver builds the master (a model of every pool row so far) and solves it.
        t0 = time.perf_counter()
        self.pending_core = self.start_core_round()
        try:
            self.master = _new_master(problem, s, cuts)
        except BaseException:
            if self.pending_core is not None:
                self.pending_core.cancel()
            self.dispatcher.close()
            raise
        self.build_time = time.perf_counter() - t0  # counted as the first master's time
        self.bar = _progress_bar(progress, s.max_iterations)
        self.history: list[BendersIteration] = []
        self.incumbent = _Incumbent()
        self.lb, self.safe_lb = -_INF, -_INF
        self.n_cuts = 0
        self.cold_retried = False
        self.last_x: np.ndarray | None = None
        self.repeats = 0  # consecutive rounds whose master point equals the previous one

    def iterate(self) -> str:
        """The loop of spec 000 §3.4; returns the status it ended with."""
        for it in range(1, self.s.max_iterations + 1):
            t0 = time.perf_counter()
            core, self.pending_core = self.pending_core, None
            try:
                x, theta = self.master_point()
                master_time = time.perf_counter() - t0 + (self.build_time if it == 1 else 0.0)
                first = None if core is None else self.collect_core_round(core, x)
                if first is not None:  # offered now: a time limit in the next round keeps it
                    self.offer(first)
                rnd = self.separate(x, theta)
            except (_MasterTimeout, _RoundTimeout):
                if core is not None:
                    core.cancel()
                return "time_limit"
            retry = self.stab.after_round(
                rnd.x_sep, feasible=math.isfinite(rnd.iterate_ub), separated=bool(rnd.cuts)
            )
            rounds = [rnd] if first is None else [first, rnd]
            for r in rounds:
                self.master.add_cuts(r.cuts)
                self.master.activate(r.newly)
                self.n_cuts += len(r.cuts)
            self.offer(rnd)
            self.cold_retried = self.cold_retried and not rnd.cuts  # one cold re-solve per stall
            self.record(it, rounds, master_time)
            stuck = self.same_point(x)
            status = self.stop_rule(stalled=(not rnd.cuts and not retry) or stuck)
            if status is not None:
                return status
        return "iteration_limit"

    def offer(self, rnd: _Round) -> None:
        """The round's point as the incumbent if it is fully feasible and better."""
        if math.isfinite(rnd.iterate_ub):
            self.incumbent.offer(rnd.iterate_ub, rnd.x_sep, rnd.results, self.s.keep_solutions)

    def start_core_round(self) -> _PendingRound | None:
        """The round at the core point (``core_round``), set going before the first master
        solve; None without a core or with the option off."""
        core = self.stab.core
        if core is None or not self.s.core_round:
            return None
        xs = [core[d.t_cols] for d in self.subs]
        return self.dispatcher.start(xs, self.s.keep_solutions, self.clock.deadline)

    def collect_core_round(self, pending: _PendingRound, x: np.ndarray) -> _Round:
        """The core round's outcomes and cuts. Every optimality cut is kept, whether or not
        it separates the master point ``x``: they are valid everywhere, tight at the core,
        and one row per subproblem."""
        assert self.stab.core is not None  # a core round exists only with a core
        t1 = time.perf_counter()
        results = pending.collect(self._round_progress("core round"))
        unbounded = np.full(len(self.master.active), -_INF)
        return self.cuts_of(results, self.stab.core.copy(), x, unbounded, time.perf_counter() - t1)

    def same_point(self, x: np.ndarray) -> bool:
        """Whether the master has returned the same point :data:`STUCK_ROUNDS` times in a row
        although every round added cuts: cuts that separate only at the tolerance level (one
        feasibility cut per round at the in-out point, round after round at the same gap
        until the time limit). The run is then stalled."""
        if self.last_x is not None and np.allclose(x, self.last_x, rtol=0.0, atol=1e-12):
            self.repeats += 1
        else:
            self.repeats = 0
        self.last_x = x.copy()
        return self.repeats >= STUCK_ROUNDS

    def master_point(self) -> tuple[np.ndarray, np.ndarray]:
        """Solve the master, adding violated lazy rows until none is; updates the bounds."""
        with self._master_progress():
            x, theta, obj = self.master.solve(self.clock.left())
            while self.lazy is not None:
                rows = self.lazy.violated(x, self.s.lazy_tolerance)
                if rows is None:
                    break
                self.master.add_rows(*rows)
                x, theta, obj = self.master.solve(self.clock.left())
        if self.lb_valid:
            # HiGHS's value of this master only decides when certification is tried (a warm
            # re-solve can report a value above the master's optimum).
            self.lb = obj
            self.safe_lb = max(self.safe_lb, self.master.last_safe_bound)
        return x, theta

    @property
    def lb_valid(self) -> bool:
        """The master bounds the problem once every theta_k is bounded."""
        return bool(self.master.active.all())

    def separate(self, x: np.ndarray, theta: np.ndarray) -> _Round:
        """Solve every subproblem at the separation point and build the cuts."""
        t1 = time.perf_counter()
        x_sep = self.stab.separation_point(x)
        results = self.dispatcher.solve_all(
            [x_sep[d.t_cols] for d in self.subs],
            self.s.keep_solutions,
            self.clock.deadline,
            solved=self._round_progress(),
        )
        return self.cuts_of(results, x_sep, x, theta, time.perf_counter() - t1)

    def cuts_of(
        self,
        results: list[_Outcome],
        x_sep: np.ndarray,
        x: np.ndarray,
        theta: np.ndarray,
        sub_time: float,
    ) -> _Round:
        """The round of ``results`` (solved at ``x_sep``): the cuts that separate the master
        point ``x``, ``theta``, and the value at ``x_sep``."""
        if any(r.kind == "time_limit" for r in results):
            # An incomplete round gives no upper bound; the run stops with what it proved.
            raise _RoundTimeout("time limit reached during the subproblem round")
        cuts, n_opt, n_feas, phi_sum, newly = _make_cuts(
            results,
            self.subs,
            self.master,
            theta,
            self.s.cut_tolerance,
            self.s.multi_cut,
            self.problem.names,
            x,
        )
        iterate_ub = phi_sum
        if math.isfinite(phi_sum):
            iterate_ub += float(self.master.cost_x @ x_sep) + self.master.offset
        return _Round(x_sep, results, cuts, n_opt, n_feas, iterate_ub, newly, sub_time)

    def stop_rule(self, *, stalled: bool) -> str | None:
        """The status to stop with, or None to go on. Only the safe bound may prove the gap:
        when HiGHS's value closes it (or no cut separates) but the bound does not, the master
        is re-solved from scratch once (a stale warm basis can report a value well above the
        master's optimum) and the run goes on from the true master point."""
        ub = self.incumbent.ub
        if (self.s.closing(self.lb, ub) or stalled) and self.lb_valid:
            if not self.s.proven(self.safe_lb, ub):
                self.certify()
            if self.s.proven(self.safe_lb, ub):
                return "optimal"
            if not (self.master.solved_cold or self.cold_retried):
                self.master.discard_basis()
                self.cold_retried = True
                return None
            return "gap_not_closed"
        if stalled:
            return "gap_not_closed"
        return "time_limit" if self.clock.expired() else None

    def certify(self) -> None:
        """Raise the safe bound by :meth:`_Master.certify`, within the time left (an
        unbounded certification re-solve can overrun the run's limit by half of it)."""
        left = self.clock.remaining()
        if left is None or left > 1e-3:
            self.safe_lb = max(self.safe_lb, self.master.certify(left))

    def record(self, it: int, rounds: list[_Round], master_time: float) -> None:
        """The iteration's history entry from its rounds (the last is at the master's point;
        a first one at the core point adds its cuts, time and solves)."""
        gap = _gap(self.lb, self.incumbent.ub, self.s.gap_floor)
        results = [r for rnd in rounds for r in rnd.results]
        self.history.append(
            BendersIteration(
                it,
                self.lb if self.lb_valid else -_INF,
                self.incumbent.ub,
                rounds[-1].iterate_ub,
                gap,
                sum(len(r.cuts) for r in rounds),
                sum(r.n_opt for r in rounds),
                sum(r.n_feas for r in rounds),
                master_time,
                sum(r.sub_time for r in rounds),
                float(sum(r.seconds for r in results)),
                int(sum(r.cold for r in results)),
            )
        )
        # refresh=False: an explicit refresh would show the bar before tqdm's delay
        self.bar.set_postfix(
            lb=f"{self.lb:.6g}", ub=f"{self.incumbent.ub:.6g}", gap=f"{gap:.2e}", refresh=False
        )
        self.bar.update(1)

    @contextlib.contextmanager
    def _master_progress(self) -> Iterator[None]:
        """The bar's text while the master is solved ("master, 61,385 rows: 12,000 LP
        iterations, 20 s", refreshed at most every ``TEXT_REFRESH_S``): the first master,
        re-solved as lazy rows come in, can take longer than the first round. Nothing is
        subscribed when the bar is off."""
        if self.bar.disable:
            yield
            return
        count = [0]
        model = self.master.model
        update = postfix_within_step(
            self.bar,
            lambda seconds: (
                f"round {self.bar.n + 1}: master, {model.n_rows:,} rows: "
                f"{count[0]:,} LP iterations, {seconds:.0f} s"
            ),
        )

        def show(iterations: int, _seconds: float) -> None:
            count[0] = iterations
            update()

        with model.lp_progress(show):
            yield

    def _round_progress(self, label: str | None = None) -> Callable[[int], None] | None:
        """The bar's text while a round's subproblems solve ("subproblems 3/8", refreshed at
        most every ``TEXT_REFRESH_S``): a first, cold round can take minutes. None when
        the bar is off."""
        if self.bar.disable:
            return None
        total, count = len(self.subs), [0]
        update = postfix_within_step(
            self.bar,
            lambda _s: (
                f"{label or f'round {self.bar.n + 1}'}: subproblems {count[0]}/{total}"
                if count[0] < total
                else None
            ),
        )

        def solved(n: int) -> None:
            count[0] = n
            update()

        return solved

    def close(self) -> None:
        self.dispatcher.close()
        self.bar.close()

    def result(self, status: str, raise_on_limit: bool) -> BendersResult:
        """The result (raising :class:`SolverLimit` as documented)."""
        # Not once the time is up: HiGHS reads its limit only after the re-solve's first
        # factorisation, which can take seconds.
        if status not in ("optimal", "time_limit") and self.lb_valid:
            # The rigorous bound once more from the final master with better multipliers
            # (rows scaled to coefficient ≤ 1; masters can carry cut coefficients up to
            # 1e12). If it proves the gap, the run is certified after all.
            self.certify()
            if status == "gap_not_closed" and self.s.proven(self.safe_lb, self.incumbent.ub):
                status = "optimal"
        inc = self.incumbent
        result = BendersResult(
            x_master=inc.x if inc.x is not None else np.full(self.problem.n_master, np.nan),
            objective=inc.ub,
            lower_bound=self.safe_lb,
            upper_bound=inc.ub,
            gap=max(0.0, _gap(self.safe_lb, inc.ub, self.s.gap_floor)),
            status=status,
            iterations=len(self.history),
            history=self.history,
            sub_solutions=inc.y,
            solve_time=self.clock.elapsed(),
            n_cuts=self.n_cuts,
            executor_mode=self.dispatcher.mode,
            n_lazy_rows=0 if self.lazy is None else int(self.lazy.active.sum()),
            solver_lower_bound=self.lb,
        )
        if inc.x is None:
            raise SolverLimit(
                f"Benders stopped ({status}) after {len(self.history)} iterations without "
                f"a feasible master point",
                status=status,
                best=result,
            )
        if raise_on_limit and status != "optimal":
            raise SolverLimit(
                f"Benders stopped ({status}) with gap {result.gap:.3g}", status=status, best=result
            )
        return result


class _RoundTimeout(Exception):
    """A subproblem round ran into the overall time limit."""


def _new_master(problem: BendersProblem, s: _Settings, cuts: list[tuple]) -> _Master:
    """The master with its options and the caller's initial cuts (checked rows)."""
    master = _Master(problem, s.multi_cut, s.options)
    master.model.set_options(s.options)  # again after the method's own configuration
    if master.is_mip:
        # An integer master's LB is its MIP dual bound: solve it to well inside rel_gap.
        master.model.configure(method="simplex", mip_rel_gap=min(1e-4, 0.1 * s.rel_gap))
    if cuts:
        master.add_cuts(cuts)
        touched = np.unique(np.concatenate([r[0] for r in cuts])) - master.n_x
        master.activate(touched[touched >= 0])
    return master


def _proven(bound: float, ub: float, rel_gap: float, abs_gap: float, floor: float) -> bool:
    """The certification rule: the safe ``bound`` proves ``ub`` to ``rel_gap`` or ``abs_gap``."""
    if not (math.isfinite(bound) and math.isfinite(ub)):
        return False
    return ub - bound <= abs_gap or _gap(bound, ub, floor) <= rel_gap


def _gap(lb: float, ub: float, floor: float = 1.0) -> float:
    if not (math.isfinite(lb) and math.isfinite(ub)):
        return _INF
    return (ub - lb) / max(floor, abs(ub))


def _make_cuts(
    results: list[_Outcome],
    subs: Sequence[_SubData],
    master: _Master,
    theta: np.ndarray,
    tol: float,
    multi_cut: bool,
    names: list[str],
    x_master: np.ndarray,
):
    """Cut rows (cols, vals, lower, upper) from the subproblem outcomes; also the sum of the
    phi_k (inf if some subproblem is infeasible) and the theta indices that become bounded."""
    cuts: list[tuple] = []
    n_opt = n_feas = 0
    phi_sum = 0.0
    all_feasible = True
    agg_alpha, agg_cols, agg_vals, agg_at_x = 0.0, [], [], 0.0
    theta0 = master.theta_cols.start
    newly: list[int] = []
    for k, (res, d) in enumerate(zip(results, subs, strict=False)):
        kind = res.kind
        if kind == "optimal":
            phi, alpha, beta = res.phi, res.rhs, res.beta
            assert beta is not None  # an optimal outcome carries its cut
            phi_sum += phi
            if multi_cut:
                # the cut's value at the master point (= phi when solved there; in-out
                # separation solves at another point)
                at_x = alpha - float(beta @ x_master[d.t_cols])
                if (not master.active[k]) or theta[k] < at_x - tol * max(1.0, abs(at_x)):
                    cols, vals, alpha = master.clean_cut(d.t_cols, beta, alpha, normalise=False)
                    safe_at_x = alpha - float(vals @ x_master[cols])
                    # A cut that cleaning made slack at x̄ would return the same point.
                    if master.active[k] and theta[k] >= safe_at_x - tol * max(1.0, abs(at_x)):
                        continue
                    cuts.append((np.append(cols, theta0 + k), np.append(vals, 1.0), alpha, _INF))
                    n_opt += 1
                    newly.append(k)
            else:
                agg_alpha += alpha
                agg_at_x -= float(beta @ x_master[d.t_cols])
                agg_cols.append(d.t_cols)
                agg_vals.append(beta)
        elif kind == "infeasible":
            all_feasible = False
            assert res.beta is not None  # an infeasible outcome carries its ray
            cuts.append((*master.clean_cut(d.t_cols, res.beta, res.rhs, normalise=True), _INF))
            n_feas += 1
        elif kind == "unbounded":
            raise UnboundedModel(
                f"subproblem {names[k]} is unbounded at a master point: the "
                f"whole problem is unbounded (or theta_lower is wrong)"
            )
        else:
            raise NumericalTrouble(
                f"subproblem {names[k]} failed: {res.message}", status=res.message
            )
    if not multi_cut and all_feasible:
        at_x = agg_alpha + agg_at_x
        if (not master.active[0]) or theta[0] < at_x - tol * max(1.0, abs(at_x)):
            cols = np.concatenate(agg_cols) if agg_cols else np.zeros(0, np.int64)
            vals = np.concatenate(agg_vals) if agg_vals else np.zeros(0)
            ucols, inv = np.unique(cols, return_inverse=True)
            uvals = np.bincount(inv, weights=vals, minlength=ucols.size)
            ucols, uvals, agg_alpha = master.clean_cut(ucols, uvals, agg_alpha, normalise=False)
            cuts.append((np.append(ucols, theta0), np.append(uvals, 1.0), agg_alpha, _INF))
            n_opt += 1
            newly.append(0)
    iterate = phi_sum if all_feasible else _INF
    return cuts, n_opt, n_feas, iterate, np.array(newly, dtype=np.int64)


def _progress_bar(progress: bool | str | None, total: int) -> Any:
    return progress_bar(progress, total=total, desc="Benders", unit="it")
