"""The exact k-anonymity MILP (spec §1.3): solved, then proven optimal or reported with its gap.

Two formulations of the same optimum, both solved with HiGHS through :mod:`privopt.lp`:

``"set_partition"`` (``"auto"``, the default)
    The aggregated set-partition model of :mod:`privopt.kanon.set_partition`: its LP bound by
    column generation with exact pricing (the Lagrangian bound, valid whatever the LP
    tolerances), then the MILP over the groups whose reduced cost can still improve on the
    incumbent, and the proof: an exhaustive reduced-cost search over exact covers
    (:mod:`privopt.kanon.cover_search`), or failing that HiGHS's branch-and-bound bound.
``"paper"``
    The big-M model (22)–(28) of :mod:`privopt.kanon.paper_model`; its lower bound is HiGHS's
    branch-and-bound bound.

Every result carries the certification of :mod:`privopt.certify`: ``status`` is ``"optimal"``
only when its ``lower_bound`` proves ``relative_gap ≤ rel_gap``; otherwise it says why
(``"time_limit"``, ``"restricted"`` when the column set had to be capped, ``"gap_not_closed"``)
and the proven gap is reported. ``proof`` names the bound that closed the gap: ``"lp_bound"``
and ``"exact_search"`` are independent of any solver tolerance, ``"branch_and_bound"`` relies on
HiGHS's node LPs (see ``docs/certification.md``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numba
import numpy as np

from privopt.certify import certify
from privopt.errors import InfeasibleModel, InvalidInput, NumericalTrouble, SolverLimit
from privopt.kanon.cover_search import least_cost_cover
from privopt.kanon.greedy import greedy_search
from privopt.kanon.initial import initial_ksets, initial_solution, split_large_classes
from privopt.kanon.loss import normalize_labels
from privopt.kanon.paper_model import (
    classes_from_pairs,
    normalized_columns,
    paper_model,
    paper_start,
)
from privopt.kanon.pricing import search_groups
from privopt.kanon.problem import KAnonProblem
from privopt.kanon.set_partition import (
    MasterBound,
    RowTypes,
    column_generation,
    master_program,
    node_budget,
)
from privopt.lp import solve

__all__ = ["solve_exact", "solve_rows", "partition_objective", "DEFAULT_REL_GAP"]

#: Relative gap that ``status="optimal"`` certifies by default.
DEFAULT_REL_GAP = 1e-6
#: Nodes of the exhaustive cover search before the proof falls back to branch and bound.
COVER_NODE_LIMIT = 2_000_000
#: Budgets of the exhaustive attempt made before any MILP (groups kept, cover-search nodes).
COVER_FIRST_COLUMNS = 5_000
COVER_FIRST_NODES = 50_000
#: Safety cap on the doubling of the reduced-cost threshold δ (2^64 times its start).
MAX_DELTA_ROUNDS = 64
FORMULATIONS = ("auto", "set_partition", "paper")


@numba.njit(cache=True, nogil=True)
def _class_extents(x, lab, c):  # pragma: no cover - compiled
    """Per class of ``lab`` (n,) with ids 0..c-1: column minima and maxima (c, m') of ``x``
    (n, m'), the class sizes (c,), and whether any class spans more than one point."""
    m = x.shape[1]
    cmin = np.full((c, m), np.inf)
    cmax = np.full((c, m), -np.inf)
    sizes = np.zeros(c, dtype=np.int64)
    for i in range(x.shape[0]):
        g = lab[i]
        sizes[g] += 1
        for j in range(m):
            v = x[i, j]
            if v < cmin[g, j]:
                cmin[g, j] = v
            if v > cmax[g, j]:
                cmax[g, j] = v
    spread = False
    for g in range(c):
        for j in range(m):
            spread = spread or cmax[g, j] > cmin[g, j]
    return cmin, cmax, sizes, spread


def partition_objective(x, coef, labels) -> float:
    """Eq. (34) of a partition (n,) of the rows of ``x`` (n, m') with factors ``coef`` (m').

    The rows of ``x`` are finite (validated by the problem). The sums run in numpy's order over
    classes numbered by first appearance, so that equal partitions give equal bits.
    """
    lab = normalize_labels(labels)
    x = np.ascontiguousarray(x, dtype=np.float64)
    cmin, cmax, sizes, spread = _class_extents(x, lab, int(lab.max()) + 1)
    if not spread:  # every class is one point: numpy's sums below give exactly 0.0
        return 0.0
    return float((sizes * ((cmax - cmin) * coef).sum(axis=1)).sum())


@dataclass
class _Run:
    """State of one solve: deadline, incumbent, bound and the statistics reported in info."""

    x: np.ndarray
    coef: np.ndarray
    k: int
    deadline: float | None
    labels: np.ndarray
    value: float
    lower_bound: float = 0.0  # every loss is >= 0
    bound_source: str = "nonnegative_loss"
    timed_out: bool = False
    restricted: bool = False
    improved: bool = False
    info: dict = field(default_factory=dict)

    def left(self) -> float | None:
        return None if self.deadline is None else max(self.deadline - time.perf_counter(), 1e-3)

    def expired(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def offer(self, labels: np.ndarray | None) -> None:
        """Keep ``labels`` if it is a complete partition better than the incumbent."""
        if labels is None or np.any(labels < 0) or np.bincount(labels).min() < self.k:
            return  # not a partition into classes of >= k rows: never kept
        value = partition_objective(self.x, self.coef, labels)
        if value < self.value:
            self.labels, self.value, self.improved = normalize_labels(labels), value, True

    def raise_bound(self, bound: float, source: str) -> None:
        """Keep the larger lower bound and the name of the argument that proves it."""
        if bound > self.lower_bound:
            self.lower_bound, self.bound_source = bound, source


def _start_labels(n: int, k: int, start_labels) -> np.ndarray:
    """The start as classes of k..2k−1 rows: given classes split along row order, or
    consecutive k-sets of the rows."""
    if start_labels is None:
        start_labels = np.empty(n, dtype=np.int64)
        for c, rows in enumerate(initial_ksets(np.arange(n), k)):
            start_labels[rows] = c
    return split_large_classes(normalize_labels(start_labels), k)


def _solve_kept(run: _Run, types: RowTypes, groups: np.ndarray, rel_gap: float) -> float:
    """MILP over the kept groups (HiGHS); offers its partition, returns its B&B lower bound."""
    if run.expired():
        run.timed_out = True
        return -math.inf
    lp = master_program(types, groups, integer=True)
    key = {tuple(g): i for i, g in enumerate(groups.tolist())}
    counts = np.zeros(len(groups))
    uses: np.ndarray | None = counts
    for g in types.groups_of(run.labels).tolist():
        if tuple(g) not in key:
            uses = None
            break
        counts[key[tuple(g)]] += 1
    try:
        res = solve(
            lp,
            time_limit=run.left(),
            mip_rel_gap=min(1e-7, rel_gap / 10),
            presolve=False,
            threads=1,
            mip_start=uses,
        )
    except InfeasibleModel:
        return math.inf  # no cover from these groups alone
    except SolverLimit as exc:
        run.timed_out = True
        res = exc.best
        if res is None:
            return -math.inf
    run.offer(types.labels(groups, np.asarray(res.x)))
    bound = res.mip_dual_bound
    return float(bound) if np.isfinite(bound) else -math.inf


def _prove(run: _Run, types: RowTypes, bound: MasterBound, kept, covered: bool, bb: float):
    """Raise the lower bound: exhaustive cover search when every improving group is kept,
    else the branch-and-bound bound of the kept MILP combined with the outside threshold."""
    base = float(bound.duals @ types.mult)
    if covered and kept.complete:
        cs = least_cost_cover(
            types.counts(kept.groups),
            kept.reduced_costs,
            types.mult,
            run.value - base,
            node_limit=node_budget(run.deadline, COVER_NODE_LIMIT),
        )
        if cs.columns.size:
            uses = np.bincount(cs.columns, minlength=len(kept.groups))
            run.offer(types.labels(kept.groups, uses))
        if cs.complete:
            run.raise_bound(min(base + cs.value, run.value), "exact_search")
            run.info["cover_search_nodes"] = cs.nodes
            return
        run.info["cover_search_nodes"] = cs.nodes
    if kept.complete:
        outside = base + kept.threshold + (types.max_groups - 1) * min(0.0, bound.min_reduced_cost)
        run.raise_bound(min(outside, bb), "branch_and_bound")


def _needed_threshold(run: _Run, types: RowTypes, bound: MasterBound) -> float:
    """Groups with reduced cost below this can be in a partition better than the incumbent."""
    base = float(bound.duals @ types.mult)
    slack = (types.max_groups - 1) * min(0.0, bound.min_reduced_cost)
    return run.value - base - slack + 1e-9 * max(1.0, abs(run.value))


def _cover_first(run: _Run, types: RowTypes, bound: MasterBound, max_columns: int) -> bool:
    """Small instances (Split & Carry's sub-problems): enumerate every group that could beat
    the start and search the covers exhaustively, with small budgets and no MILP solve.
    Returns True when that proved the optimum."""
    need = _needed_threshold(run, types, bound)
    kept = search_groups(
        types.values,
        types.mult,
        types.coef,
        bound.duals,
        types.k,
        types.max_size,
        threshold=need,
        cap=max_columns,
        node_limit=min(node_budget(run.deadline), 20 * COVER_FIRST_COLUMNS),
    )
    if not kept.complete or kept.threshold < need:
        return False
    base = float(bound.duals @ types.mult)
    cs = least_cost_cover(
        types.counts(kept.groups),
        kept.reduced_costs,
        types.mult,
        run.value - base,
        node_limit=min(node_budget(run.deadline), COVER_FIRST_NODES),
    )
    if cs.columns.size:
        run.offer(types.labels(kept.groups, np.bincount(cs.columns, minlength=len(kept.groups))))
    if cs.complete:
        run.raise_bound(min(base + cs.value, run.value), "exact_search")
        run.info.update(columns_kept=len(kept.groups), cover_search_nodes=cs.nodes)
    return cs.complete


def _reduced_cost_rounds(run: _Run, types: RowTypes, bound: MasterBound, rel_gap, max_columns):
    """MILPs over the groups with rc ≤ δ, δ doubling until they hold every group that could
    beat the incumbent (or the time or column limit is hit). Returns the last search and the
    kept MILP's bound."""
    tol = 1e-9 * max(1.0, abs(run.value))

    def needed() -> float:
        return _needed_threshold(run, types, bound)

    delta = min(needed(), 0.05 * abs(bound.lower_bound) + tol)
    for _ in range(MAX_DELTA_ROUNDS):
        kept = search_groups(
            types.values,
            types.mult,
            types.coef,
            bound.duals,
            types.k,
            types.max_size,
            threshold=min(delta, needed()),
            cap=max_columns,
            node_limit=node_budget(run.deadline),
        )
        bb = _solve_kept(run, types, kept.groups, rel_gap) if len(kept.groups) else math.inf
        covered = kept.complete and kept.threshold >= needed() - tol
        run.restricted = kept.threshold < min(delta, needed()) - tol
        if covered or not kept.complete or run.restricted or run.timed_out or run.expired():
            break
        delta = min(2 * delta + tol, needed())
    return kept, covered, bb


def _solve_set_partition(run: _Run, k: int, rel_gap: float, max_columns: int) -> None:
    if run.value == 0.0:  # nothing beats zero loss (most of Split & Carry's sub-problems)
        return
    types = RowTypes.of(run.x, run.coef, k)
    _pool, bound, stats = column_generation(types, types.groups_of(run.labels), run.deadline)
    run.info.update(stats)
    if bound is None:
        run.timed_out = True
        return
    run.info["lp_bound"] = bound.lower_bound
    run.raise_bound(bound.lower_bound, "lp_bound")
    if certify(run.value, run.lower_bound, rel_gap, warn=False).certified:
        return
    if _cover_first(run, types, bound, min(max_columns, COVER_FIRST_COLUMNS)):
        return
    kept, covered, bb = _reduced_cost_rounds(run, types, bound, rel_gap, max_columns)
    run.info["columns_kept"] = len(kept.groups)
    _prove(run, types, bound, kept, covered, bb)


def _solve_paper(run: _Run, lo, hi, k, equality_cardinality, verbose, rel_gap) -> None:
    xn, cn = normalized_columns(run.x, lo, hi, run.coef)
    lp, pairs = paper_model(
        xn, np.zeros_like(lo), np.ones_like(hi), cn, k, equality_cardinality=equality_cardinality
    )
    start = None if equality_cardinality else paper_start(xn, run.labels, pairs)
    run.info.update(n_vars=lp.n_vars, n_rows=lp.n_rows)
    if equality_cardinality:  # the start need not satisfy Σ v = k−1: no feasible fall-back
        run.value = math.inf
    try:
        res = solve(
            lp,
            time_limit=run.left(),
            mip_start=start,
            verbose=verbose,
            mip_rel_gap=min(1e-4, rel_gap),
        )
    except SolverLimit as exc:
        run.timed_out = True
        res = exc.best
        if res is None:
            return
    run.offer(classes_from_pairs(res.x, len(run.x), pairs))
    if np.isfinite(res.mip_dual_bound):
        run.raise_bound(float(res.mip_dual_bound), "branch_and_bound")


def _certify(run: _Run, rel_gap: float, warn: bool) -> dict:
    """The final status, bound and gap of a run (privopt.certify's rule), warning once."""
    run.timed_out = run.timed_out or run.expired()
    if run.value == 0.0 and run.lower_bound == 0.0 and isinstance(rel_gap, float) and rel_gap >= 0:
        # zero loss is optimal (most of Split & Carry's sub-problems): certify's result, cheaply
        return _certificate_info(run, "optimal", 0.0, 0.0, rel_gap)
    otherwise = (
        "time_limit" if run.timed_out else "restricted" if run.restricted else "gap_not_closed"
    )
    cert = certify(
        run.value,
        min(run.lower_bound, run.value),
        rel_gap,
        otherwise=otherwise,
        what="k-anonymity MILP",
        warn=warn,
        stacklevel=4,
    )
    return _certificate_info(run, cert.status, cert.lower_bound, cert.relative_gap, rel_gap)


def _certificate_info(run: _Run, status: str, lower_bound, relative_gap, rel_gap) -> dict:
    return {
        "status": status,
        "objective": run.value,
        "lower_bound": lower_bound,
        "relative_gap": relative_gap,
        "mip_gap": relative_gap,
        "proof": run.bound_source if status == "optimal" else None,
        "rel_gap": rel_gap,
    }


def solve_rows(
    x,
    lo,
    hi,
    coef,
    integer=None,
    k=None,
    *,
    start_labels=None,
    formulation="auto",
    time_limit=None,
    equality_cardinality=False,
    verbose=False,
    rel_gap=DEFAULT_REL_GAP,
    max_columns=400_000,
    warn=False,
):
    """Solve the MILP on the rows of ``x`` (n, m') with fixed global bounds; used by S&C too.

    Parameters
    ----------
    x : (n, m') MILP columns (numeric plus one-hot), see ``KAnonProblem.milp_columns``.
    lo, hi, coef : (m',) global bounds and objective factors; ``integer`` is accepted for
        compatibility and unused (tight boxes are data values, §1.3).
    k : anonymity parameter; ``n >= k`` required.
    start_labels : (n,) a feasible partition: MIP start, upper bound, and the answer when
        nothing better is found in time (spec §7.9); default consecutive k-sets of the rows.
    formulation : ``"auto"`` / ``"set_partition"`` (column generation, default) or
        ``"paper"`` (big-M, eqs. 22–28).
    time_limit : seconds for the whole solve (all HiGHS calls and searches), None for none.
    equality_cardinality : ``Σ v = k−1`` instead of ``≥`` (paper model only, §7.3).
    rel_gap : relative gap that ``status="optimal"`` must prove.
    max_columns : most groups in one MILP; more are needed only when the LP bound is weak, and
        capping them gives ``status="restricted"`` unless the bound still closes.
    warn : emit one :class:`privopt.certify.UncertifiedResultWarning` when not optimal.

    Returns
    -------
    labels : (n,) partition; info : dict with ``status`` (``"optimal"``, ``"time_limit"``,
    ``"restricted"``, ``"gap_not_closed"``), ``objective`` (of ``labels``), ``lower_bound``,
    ``relative_gap`` (proven; also as ``mip_gap``), ``proof``, ``formulation``,
    ``solve_time`` (s), ``fallback`` (the start was returned unimproved because the solver
    produced nothing in time) and formulation statistics (``lp_bound``, ``cg_iterations``,
    ``n_columns``, ``columns_kept``, ``cover_search_nodes``; ``n_vars``, ``n_rows``).

    Raises
    ------
    InvalidInput : bad arguments, or ``n < k``.
    InfeasibleModel : the model has no solution (only possible with ``equality_cardinality``).
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    if k is None or n < k:
        raise InvalidInput(f"sub-problem has {n} rows < k={k}")
    if formulation not in FORMULATIONS:
        raise InvalidInput(f"formulation must be one of {FORMULATIONS}, got {formulation!r}")
    if equality_cardinality and formulation != "paper":
        raise InvalidInput("equality_cardinality applies to formulation='paper' only")
    t0 = time.perf_counter()
    start = _start_labels(n, k, start_labels)
    run = _Run(
        x,
        np.asarray(coef, dtype=np.float64),
        k,
        None if time_limit is None else t0 + time_limit,
        start,
        partition_objective(x, coef, start),
    )
    try:
        if formulation == "paper":
            _solve_paper(
                run, np.asarray(lo), np.asarray(hi), k, equality_cardinality, verbose, rel_gap
            )
        else:
            _solve_set_partition(run, k, rel_gap, max_columns)
    except NumericalTrouble as exc:  # the start stays valid; say what happened
        run.info["solver_error"] = str(exc)
    if not math.isfinite(run.value) and run.timed_out:
        raise SolverLimit(f"no solution within time_limit={time_limit} s", status="time_limit")
    if not math.isfinite(run.value):
        raise InfeasibleModel(
            f"the paper model with equality cardinality has no solution for n={n}, k={k}"
        )
    info = {**run.info, **_certify(run, rel_gap, warn)}
    info.update(
        formulation="paper" if formulation == "paper" else "set_partition",
        solve_time=time.perf_counter() - t0,
        fallback=run.timed_out and not run.improved,
    )
    return run.labels, info


def solve_exact(
    problem: KAnonProblem,
    *,
    formulation: str = "auto",
    time_limit=None,
    equality_cardinality: bool = False,
    mip_start: bool = True,
    verbose=False,
    rel_gap: float = DEFAULT_REL_GAP,
    max_columns: int = 400_000,
):
    """Exact MILP on the whole table; returns ``(labels, info)`` (see :func:`solve_rows`).

    The start (upper bound, and the answer if time runs out) is the better of the IFS and
    Greedy Search when ``mip_start`` (the paper's start is the IFS, §1.3), else consecutive
    k-sets of the rows. One :class:`privopt.certify.UncertifiedResultWarning` is emitted when
    the result is not proven optimal.
    """
    x, lo, hi, coef, _ = problem.milp_columns()
    start = None
    if mip_start:
        cands = [initial_solution(problem), greedy_search(problem)]
        start = min(cands, key=lambda lab: partition_objective(x, coef, lab))
    return solve_rows(
        x,
        lo,
        hi,
        coef,
        None,
        problem.k,
        start_labels=start,
        formulation=formulation,
        time_limit=time_limit,
        equality_cardinality=equality_cardinality,
        verbose=verbose,
        rel_gap=rel_gap,
        max_columns=max_columns,
        warn=True,
    )
