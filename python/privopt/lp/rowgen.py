"""Row-and-column generation for large LPs, with a certified bound (``privopt.lp.rowgen``).

An LP too large to pass whole — most rows slack, most columns zero at the optimum — is solved
on a growing model: a *separation oracle* returns the rows the current point violates, a
*pricing oracle* (or the built-in one) the absent columns with negative reduced cost, and the
model is re-solved warm until neither finds anything. The lower bound is the safe dual bound
of the full LP (rows not in the model take multiplier 0, absent columns enter with their
recomputed reduced costs over their bounds), so it holds whatever was left out and whatever
HiGHS's tolerances did; the result says ``"optimal"`` only when it proves ``rel_gap``
(docs/certification.md).

The LP is organised as *blocks* coupled by *shared columns*::

    min  c_sᵀ y + Σ_b c_bᵀ x_b
    s.t. L_b ≤ A_b [x_b; y] ≤ U_b          (block b's rows, given and separated)
         Σ_{j ∈ g} x_b,j = r_g             (block b's simplex groups, optional)
         l_s ≤ y ≤ u_s,  l_b ≤ x_b ≤ u_b

Shared columns ``y`` are always in the model and never priced; a block's rows may use them
(CLR-Geo: each user's block and the shared exponential weights y). One block without shared
columns is a plain LP with lazy rows. *Simplex groups* are rows that make some of a block's
columns a distribution (a perturbation matrix's unit-measure rows): the engine holds them from
the start and keeps them as constraints in the bound (:class:`privopt.lp.bounds.SimplexGroups`),
which is tighter than their multipliers and needs no column upper bound.

:func:`solve_rowgen` runs the loop once. :class:`RowGenSolver` is the same loop as a session
that a client drives further: add rows or columns it found itself (e.g. those an unscaled
re-solve of its own violates), run again warm, read the model's columns and basis, or start a
related model (the same rows with new coefficients, as along a parameter path) from a previous
:class:`RowGenBasis`.

Examples
--------
>>> import numpy as np, scipy.sparse as sp
>>> from privopt.lp.rowgen import RowGenProblem, solve_rowgen
>>> # min x0 + x1 - y  s.t. x0 + y >= 1, x1 + y >= 1 (lazy), y <= 0.5, all >= 0
>>> prob = RowGenProblem(1, shared_cost=[-1.0], shared_upper=[0.5])
>>> rows = sp.csr_array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])  # over [x0, x1 | y]
>>> def separate(x, y):
...     bad = np.flatnonzero(rows @ np.concatenate([x, y]) < 1 - 1e-9)
...     return rows[bad], np.ones(bad.size), np.full(bad.size, np.inf)
>>> _ = prob.add_block([1.0, 1.0], upper=1.0, separate=separate)
>>> res = solve_rowgen(prob, progress=False)
>>> res.status, round(res.objective, 9), round(res.lower_bound, 9)
('optimal', 0.5, 0.5)
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt._progress import postfix_within_step, progress_bar
from privopt._validation import (
    check_bool,
    check_instance,
    check_int,
    check_nonnegative,
    check_positive,
    real_array,
)
from privopt.certify import certify
from privopt.errors import InvalidInput, SolverLimit
from privopt.lp import highs
from privopt.lp._arrays import float_array
from privopt.lp.bounds import SimplexGroups, trusted_safe_dual_bound

__all__ = ["RowGenBasis", "RowGenProblem", "RowGenResult", "RowGenSolver", "solve_rowgen"]

#: ``separate(x_block, y) -> (A, lower, upper)``: rows violated at the point, A over
#: [block columns | shared columns]; an empty A when none.
SeparationOracle = Callable[[np.ndarray, np.ndarray], tuple[Any, Any, Any]]
#: ``price(reduced_costs) -> local column indices`` to add (reduced costs of all the block's
#: columns for the current duals); default: every absent column with a negative one.
PricingOracle = Callable[[np.ndarray], np.ndarray]


@dataclass
class _Block:
    cost: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    offset: int  # first global column
    separate: SeparationOracle | None
    price: PricingOracle | None
    initial_columns: np.ndarray
    name: str
    groups: SimplexGroups | None  # the block's simplex groups, over its own columns


class RowGenProblem:
    """Blocks of columns with lazy rows, coupled by shared columns.

    Parameters
    ----------
    n_shared : number of shared columns y (0 for none).
    shared_cost, shared_lower, shared_upper : (n_shared,) cost and bounds of y (default 0,
        0, +inf). Give every column finite bounds where valid ones are known: a negative
        reduced cost on an infinite bound makes the certified bound −inf.
    """

    def __init__(
        self,
        n_shared: int = 0,
        *,
        shared_cost: Any = 0.0,
        shared_lower: Any = 0.0,
        shared_upper: Any = math.inf,
    ) -> None:
        self.n_shared = _count("n_shared", n_shared)
        self.shared = _columns(
            self.n_shared, shared_cost, shared_lower, shared_upper, prefix="shared_"
        )
        self.blocks: list[_Block] = []
        self._rows: list[tuple[int, sp.csr_array, np.ndarray, np.ndarray]] = []
        self.n_cols = self.n_shared

    def add_block(
        self,
        cost: Any,
        *,
        lower: Any = 0.0,
        upper: Any = math.inf,
        rows: Any = None,
        row_lower: Any = -math.inf,
        row_upper: Any = math.inf,
        separate: SeparationOracle | None = None,
        price: PricingOracle | None = None,
        initial_columns: Any = None,
        simplex_groups: Any = None,
        simplex_rhs: Any = 1.0,
        name: str | None = None,
    ) -> int:
        """Add a block of columns x_b; returns its index.

        Parameters
        ----------
        cost, lower, upper : (n_b,) cost and bounds of the block's columns.
        rows, row_lower, row_upper : rows always in the model, A over [x_b | y]
            (shape (m, n_b + n_shared)), with their bounds.
        separate : separation oracle, or None (no lazy rows).
        price : pricing oracle, or None (the built-in reduced-cost test).
        initial_columns : local indices of the columns in the first model (default: all);
            the columns that the rows mention join with them, and every simplex group gets
            its cheapest column when none of its columns is given.
        simplex_groups : (n_b,) int, optional: the simplex group of each column (−1 for
            none), or a :class:`privopt.lp.bounds.SimplexGroups` over the block's columns
            (``SimplexGroups.blocks(n, K)`` for the rows of an (n, K) matrix, without
            per-column arrays); the rows ``Σ_{j ∈ g} x_j = simplex_rhs[g]`` are part of the
            block, held from the start and kept as constraints in the certified bound. The
            groups' columns must have lower bound 0.
        simplex_rhs : (n_groups,) or scalar right-hand sides ≥ 0 (default 1; ignored when
            ``simplex_groups`` is a ``SimplexGroups``).
        name : label in messages.
        """
        cost, lo, up = _columns(np.size(cost), cost, lower, upper)
        n = cost.size
        for what, oracle in (("separate", separate), ("price", price)):
            if oracle is not None and not callable(oracle):
                raise InvalidInput(
                    f"{what} must be a callable or None, got {type(oracle).__name__}"
                )
        init = np.arange(n) if initial_columns is None else np.asarray(initial_columns, np.int64)
        if init.size and (init.min() < 0 or init.max() >= n):
            raise InvalidInput(f"initial_columns must lie in [0, {n})")
        groups = _simplex_groups(n, lo, simplex_groups, simplex_rhs)
        b = _Block(
            cost,
            lo,
            up,
            self.n_cols,
            separate,
            price,
            init,
            name or f"block {len(self.blocks)}",
            groups,
        )
        self.blocks.append(b)
        self.n_cols += n
        if rows is not None:
            self._add_rows(len(self.blocks) - 1, rows, row_lower, row_upper)
        return len(self.blocks) - 1

    def global_rows(self, k: int, a: Any) -> sp.csr_array:
        """Block ``k``'s rows over [x_b | y] in the global column order [y | x_0 | x_1 ...]."""
        b = self.blocks[k]
        n_b = b.cost.size
        a = _row_matrix(a)
        if a.shape[1] != n_b + self.n_shared:
            raise InvalidInput(
                f"{b.name}: rows must have {n_b + self.n_shared} columns, got {a.shape[1]}"
            )
        col = np.where(a.indices < n_b, a.indices + b.offset, a.indices - n_b)
        return sp.csr_array((a.data, col, a.indptr), shape=(a.shape[0], self.n_cols))

    def _add_rows(self, k: int, a: Any, lower: Any, upper: Any) -> None:
        g = _row_matrix(a)  # made global once every block is known
        self.global_rows(k, g)  # validates the width
        m = g.shape[0]
        self._rows.append(
            (k, g, _row_bounds("row_lower", lower, m), _row_bounds("row_upper", upper, m))
        )

    def cost(self) -> np.ndarray:
        """Costs of all columns: the shared ones first, then each block's."""
        return _joined([self.shared[0]] + [b.cost for b in self.blocks])

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds of all columns, in the order of :meth:`cost` (read-only)."""
        lo = _joined([self.shared[1]] + [b.lower for b in self.blocks])
        up = _joined([self.shared[2]] + [b.upper for b in self.blocks])
        return lo, up

    def simplices(self) -> SimplexGroups | None:
        """Every block's simplex groups over the global columns (None when there are none)."""
        with_groups = [b for b in self.blocks if b.groups is not None]
        if not with_groups:
            return None
        if len(with_groups) == 1:
            b = with_groups[0]
            assert b.groups is not None
            return b.groups.shifted(b.offset, self.n_cols)
        group = np.full(self.n_cols, -1, dtype=np.int64)
        rhs, n_groups = [], 0
        for b in with_groups:
            assert b.groups is not None
            cols = np.arange(b.offset, b.offset + b.cost.size)
            local = b.groups.group_of(np.arange(b.cost.size))
            group[cols] = np.where(local >= 0, local + n_groups, -1)
            rhs.append(b.groups.rhs)
            n_groups += b.groups.rhs.size
        return SimplexGroups(group, np.concatenate(rhs))


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """The parts end to end; one non-empty part is returned as it is (no copy)."""
    filled = [p for p in parts if p.size]
    if len(filled) == 1:
        return filled[0]
    return np.concatenate(parts) if parts else np.zeros(0)


def _count(name: str, n: Any) -> int:
    if not (isinstance(n, (int, np.integer)) and n >= 0):
        raise InvalidInput(f"{name} must be an integer >= 0, got {n!r}")
    return int(n)


def _columns(
    n: int, cost: Any, lower: Any, upper: Any, *, prefix: str = ""
) -> tuple[np.ndarray, ...]:
    """(cost, lower, upper) of n columns; a scalar bound stays a read-only broadcast view
    (no memory per column: a block can have millions of columns)."""
    out = []
    for what, v in (("cost", cost), ("lower", lower), ("upper", upper)):
        raw = real_array(prefix + what, v)
        if raw.shape not in ((), (1,), (n,)):
            raise InvalidInput(
                f"{prefix}{what} must be a number or have shape ({n},), got shape {raw.shape}"
            )
        arr = np.broadcast_to(raw, (n,))
        if what == "cost" or arr.strides != (0,):
            arr = arr.copy()
        if np.isnan(arr).any() or (what == "cost" and not np.isfinite(arr).all()):
            raise InvalidInput(f"column {what} must be {'finite' if what == 'cost' else 'non-NaN'}")
        out.append(arr)
    if (out[1] > out[2]).any():
        raise InvalidInput("column bounds: lower > upper")
    return tuple(out)


def _row_bounds(name: str, v: Any, m: int) -> np.ndarray:
    """Row bounds: a number or ``m`` numbers, ±inf allowed, NaN refused."""
    raw = float_array(name, v)
    if raw.shape not in ((), (1,), (m,)):
        raise InvalidInput(f"{name} must be a number or have shape ({m},), got shape {raw.shape}")
    if np.isnan(raw).any():
        raise InvalidInput(f"{name} must not be NaN")
    return np.broadcast_to(raw, (m,)).copy()


def _no_block() -> int:
    raise InvalidInput("the problem has no blocks")


def _row_matrix(a: Any) -> sp.csr_array:
    """Rows given as a scipy sparse matrix or dense numbers, as a float64 CSR array."""
    if not sp.issparse(a):
        a = real_array("rows", a)
        if a.ndim != 2:
            raise InvalidInput(f"rows must be a 2-D matrix, got {a.ndim} dimension(s)")
    elif a.dtype.kind not in "iuf":
        raise InvalidInput(f"rows must hold real numbers, got dtype {a.dtype}")
    return sp.csr_array(a, dtype=np.float64)


def _simplex_groups(n: int, lower: np.ndarray, groups: Any, rhs: Any) -> SimplexGroups | None:
    if groups is None:
        return None
    if isinstance(groups, SimplexGroups):
        out = groups
        if out.n_cols != n:
            raise InvalidInput(f"simplex_groups must cover the block's {n} columns")
    else:
        g = np.asarray(groups)
        if g.shape != (n,) or not np.issubdtype(g.dtype, np.integer):
            raise InvalidInput(f"simplex_groups must be {n} integers (one per column)")
        n_groups = int(g.max(initial=-1)) + 1
        out = SimplexGroups(g, np.broadcast_to(np.asarray(rhs, np.float64), (n_groups,)))
    if not out.members_have_lower_zero(lower):
        raise InvalidInput("columns in a simplex group must have lower bound 0")
    return out


@dataclass
class RowGenBasis:
    """A final simplex basis of a row-generation model, to start a related one from.

    Attributes
    ----------
    columns : (n_model_cols,) global column ids in model order.
    highs_basis : HiGHS's basis object (its row statuses in model row order: the simplex
        rows, then the block rows in the order they entered).
    """

    columns: np.ndarray
    highs_basis: Any


@dataclass
class RowGenResult:
    """Outcome of :func:`solve_rowgen` / :meth:`RowGenSolver.run`.

    Attributes
    ----------
    x : list of (n_b,) solutions, one per block (absent columns are 0).
    y : (n_shared,) shared columns.
    objective : objective value of the final model's solution.
    lower_bound : certified lower bound on the full LP (safe dual bound over all rows and
        columns, absent ones included, with the simplex groups kept as constraints).
    relative_gap : proven ``(objective − lower_bound) / max(|objective|, 1e-12)``.
    status : ``"optimal"`` (the bound proves ``rel_gap``) or ``"gap_not_closed"``.
    rounds : per round: rows, columns, objective, rows added, columns priced, solver
        iterations, solve and round seconds.
    n_rows, n_cols : size of the final model (the full LP has ``n_cols_full`` columns).
    row_duals : (n_rows,) the final solve's row duals (HiGHS signs), in model row order.
    """

    x: list[np.ndarray]
    y: np.ndarray
    objective: float
    lower_bound: float
    relative_gap: float
    status: str
    rounds: list[dict[str, Any]] = field(default_factory=list)
    n_rows: int = 0
    n_cols: int = 0
    n_cols_full: int = 0
    row_duals: np.ndarray | None = None


class _RowStore:
    """The model's rows over the global columns, appended as HiGHS gets them and joined on
    demand (cached until the next append)."""

    def __init__(self, n_cols: int) -> None:
        self.n_cols = n_cols
        self.pieces: list[tuple[sp.csr_array, np.ndarray, np.ndarray]] = []

    def append(self, a: sp.csr_array, lower: np.ndarray, upper: np.ndarray) -> None:
        self.pieces.append((a, lower, upper))

    def arrays(self, m: int) -> tuple[sp.csr_array, np.ndarray, np.ndarray]:
        """The first ``m`` rows: (A, lower, upper)."""
        if not self.pieces:
            return sp.csr_array((0, self.n_cols)), np.zeros(0), np.zeros(0)
        if len(self.pieces) > 1:
            mats, lows, ups = zip(*self.pieces, strict=True)
            joined = sp.csr_array(sp.vstack(mats, format="csr"))
            self.pieces = [(joined, np.concatenate(lows), np.concatenate(ups))]
        a, lo, up = self.pieces[0]
        return (a[:m], lo[:m], up[:m]) if m < a.shape[0] else (a, lo, up)


class RowGenSolver:
    """Row and column generation on a :class:`RowGenProblem`, as a session.

    Parameters
    ----------
    problem : the blocks, shared columns, simplex groups and oracles.
    method, threads, highs_options : HiGHS settings (see :mod:`privopt.lp.highs`).
    feasible : the LP is known feasible and bounded (every restricted model too): an
        "infeasible" or "unbounded" verdict is then a numerical failure, retried with the
        fallbacks of :func:`privopt.lp.highs.run_with_fallbacks` instead of raised.
    basis : a :class:`RowGenBasis` of a related model to start from: its columns join the
        first model, their statuses are mapped by column id and the row statuses by position
        (the client passes the earlier model's rows, in order, as the blocks' rows); new rows
        enter basic and new columns nonbasic at their lower bound.
    """

    def __init__(
        self,
        problem: RowGenProblem,
        *,
        method: str = "simplex",
        threads: int | None = None,
        highs_options: dict[str, Any] | None = None,
        feasible: bool = False,
        basis: RowGenBasis | None = None,
    ) -> None:
        if not isinstance(problem, RowGenProblem):
            raise InvalidInput(f"problem must be a RowGenProblem, got {type(problem).__name__}")
        if basis is not None:
            check_instance("basis", basis, RowGenBasis)
        self.problem = problem
        self.c = problem.cost()
        self.lo, self.up = problem.bounds()
        self.simplices = problem.simplices()
        self.pos = np.full(problem.n_cols, -1, dtype=np.int64)
        self.cols = np.zeros(0, dtype=np.int64)
        self.rows = _RowStore(problem.n_cols)
        self.rounds: list[dict[str, Any]] = []
        self.n_simplex_rows = 0  # the simplex groups' rows, first in the model
        self.feasible = check_bool("feasible", feasible)
        self.model = highs.Model.configured(
            method=method, threads=threads, options=highs_options or {}
        )
        self.model.load(np.zeros(0), sp.csc_array((0, 0)), np.zeros(0), np.zeros(0))
        self._start(basis)

    # ------------------------------------------------------------------ the model
    def _start(self, basis: RowGenBasis | None) -> None:
        prob = self.problem
        start = [np.arange(prob.n_shared)]
        start += [b.offset + b.initial_columns for b in prob.blocks]
        if self.simplices is not None:
            start.append(self._group_representatives(np.concatenate(start)))
        if basis is not None:
            start.append(np.asarray(basis.columns, dtype=np.int64))
        self._add_columns(np.concatenate(start))
        self._add_simplex_rows()
        for k, a, lo, up in prob._rows:
            self._add_rows(prob.global_rows(k, a), lo, up)
        if basis is not None:
            self._set_basis(basis)

    def _group_representatives(self, given: np.ndarray) -> np.ndarray:
        """The cheapest column of every simplex group none of whose columns is in ``given``
        (a group row without a column in the model would make it infeasible)."""
        assert self.simplices is not None
        g = self.simplices
        covered = np.zeros(g.rhs.size, dtype=bool)
        in_group = g.group_of(given)
        covered[in_group[in_group >= 0]] = True
        if covered.all():
            return np.zeros(0, dtype=np.int64)
        return g.cheapest(self.c)[~covered]

    def _add_simplex_rows(self) -> None:
        """One row per simplex group, first in the model (their duals are the groups')."""
        if self.simplices is None:
            return
        g = self.simplices
        grp = g.group_of(self.cols)
        present = self.cols[grp >= 0]
        grp = grp[grp >= 0]
        order = np.argsort(grp, kind="stable")
        a = sp.csr_array(
            (
                np.ones(present.size),
                self.pos[present[order]],
                np.searchsorted(grp[order], np.arange(g.rhs.size + 1)),
            ),
            shape=(g.rhs.size, self.cols.size),
        )
        self.model.add_rows(g.rhs, g.rhs, a)
        self.n_simplex_rows = g.rhs.size

    def _add_columns(self, glob: np.ndarray) -> np.ndarray:
        """Add the absent ones among ``glob``; returns the new ones. An absent column is in
        no model row but its simplex group's (every row mentions only model columns)."""
        glob = np.asarray(glob, dtype=np.int64)
        new = np.unique(glob[self.pos[glob] < 0])
        if not new.size:
            return new
        self.pos[new] = self.cols.size + np.arange(new.size)
        self.cols = np.concatenate([self.cols, new])
        m = self.model.n_rows
        if self.simplices is not None and self.n_simplex_rows:
            grp = self.simplices.group_of(new)
            inside = np.flatnonzero(grp >= 0)
            entries = sp.csc_array(
                (np.ones(inside.size), (grp[inside], inside)), shape=(m, new.size)
            )
        else:
            entries = sp.csc_array((m, new.size))
        self.model.add_cols(self.c[new], self.lo[new], self.up[new], entries)
        return new

    def _add_rows(self, g: sp.csr_array, lo: np.ndarray, up: np.ndarray) -> None:
        if not g.shape[0]:
            return
        self._add_columns(np.unique(g.indices).astype(np.int64))
        self.rows.append(g, lo, up)
        local = sp.csr_array(
            (g.data, self.pos[g.indices], g.indptr), shape=(g.shape[0], self.cols.size)
        )
        self.model.add_rows(lo, up, local)

    def _set_basis(self, basis: RowGenBasis) -> None:
        # A basis that does not fit (not of an earlier form of this model) is left out: the
        # first solve then starts from scratch.
        self.model.set_basis(basis.highs_basis, columns=self.pos[np.asarray(basis.columns)])

    # ------------------------------------------------------------------ client access
    @property
    def columns(self) -> np.ndarray:
        """Global column ids in model order."""
        return self.cols

    def basis(self) -> RowGenBasis:
        """The model's current basis, with its columns (to start a related model from)."""
        return RowGenBasis(self.cols.copy(), self.model.basis())

    def add_rows(self, block: int, a: Any, lower: Any, upper: Any) -> None:
        """Add rows ``lower ≤ a [x_b; y] ≤ upper`` of block ``block`` to the model (rows the
        client found itself); the columns they mention join the model."""
        g = self.problem.global_rows(self._block_index(block), a)
        m = g.shape[0]
        self._add_rows(g, _row_bounds("lower", lower, m), _row_bounds("upper", upper, m))

    def add_columns(self, block: int, local: Any) -> None:
        """Add block ``block``'s columns ``local`` (local indices) to the model."""
        b = self.problem.blocks[self._block_index(block)]
        local = real_array("local", local, np.int64)
        if local.size and (local.min() < 0 or local.max() >= b.cost.size):
            raise InvalidInput(f"{b.name}: column indices must lie in [0, {b.cost.size})")
        self._add_columns(b.offset + local)

    def _block_index(self, block: Any) -> int:
        n = len(self.problem.blocks)
        return check_int("block", block, minimum=0, maximum=n - 1) if n else _no_block()

    def point(self, x_model: np.ndarray) -> np.ndarray:
        """A model solution as the full column vector (absent columns 0).

        ``x_model`` may come from an earlier solve than the model's current columns (a time
        limit hit in the round after pricing added some): columns are only ever appended, so
        its entries are those of the first ``x_model.size`` columns and the rest are 0."""
        x = np.zeros(self.problem.n_cols)
        x[self.cols[: x_model.size]] = x_model
        return x

    # ------------------------------------------------------------------ the loop
    def run(
        self,
        *,
        rel_gap: float = 1e-6,
        max_rounds: int = 10_000,
        time_limit: float | None = None,
        progress: Any = "auto",
        desc: str = "row generation",
        warn: bool = True,
    ) -> RowGenResult:
        """Solve, separate and price until neither adds anything; then certify.

        Each round solves the model (warm after the first, dual simplex with Devex pricing:
        HiGHS otherwise recomputes steepest-edge weights for every row after ``addRows``),
        asks every block's separation oracle for violated rows and the pricing for columns
        with negative reduced cost. The certified bound (safe dual bound of the full LP) and
        the certification rule decide the status; an uncertified result warns once (unless
        ``warn`` is False). Calling it again continues warm, e.g. after :meth:`add_rows`.

        Raises
        ------
        SolverLimit
            ``max_rounds`` or ``time_limit`` (seconds of this call) reached; ``best`` holds
            the last solved round's result, its bound certified.
        """
        warn = check_bool("warn", warn)
        rel_gap = check_nonnegative("rel_gap", rel_gap)
        max_rounds = check_int("max_rounds", max_rounds, minimum=1)
        if time_limit is not None:
            time_limit = check_positive("time_limit", time_limit, allow_inf=True)
        start = time.perf_counter()
        sol: highs.LPSolution | None = None
        with progress_bar(progress, desc=desc, unit="round") as bar:
            for _ in range(max_rounds):
                try:
                    self._time_left(start, time_limit)
                    t0 = time.perf_counter()
                    with self._within_round(bar):
                        sol = self.model.solve(what=desc, feasible=self.feasible)
                except SolverLimit as exc:
                    raise self._limit(str(exc), sol, rel_gap) from None
                added, priced = self._extend(sol)
                self._record(sol, added, priced, time.perf_counter() - t0, bar)
                if not (added or priced):
                    return self._finish(sol, rel_gap, warn=warn)
                # warm re-solves from here on (see the docstring)
                self.model.use_devex()
        raise self._limit(f"{desc}: {max_rounds} rounds with rows still violated", sol, rel_gap)

    @contextlib.contextmanager
    def _within_round(self, bar: Any) -> Iterator[None]:
        """While one round's LP solves, the bar's text shows its simplex iterations and
        seconds (refreshed at most every ``TEXT_REFRESH_S``): a first round can take
        minutes. Nothing is subscribed when the bar is off."""
        if bar.disable:
            yield
            return
        done, count = f"rows {self.model.n_rows:,}", [0]
        update = postfix_within_step(
            bar,
            lambda seconds: (
                f"{done}, round {bar.n + 1}: {count[0]:,} LP iterations, {seconds:.0f} s"
            ),
        )

        def show(iterations: int, _seconds: float) -> None:
            count[0] = iterations
            update()

        with self.model.lp_progress(show):
            yield

    def _time_left(self, start: float, time_limit: float | None) -> None:
        if time_limit is None:
            return
        left = time_limit - (time.perf_counter() - start)
        if left <= 0:
            raise SolverLimit("time limit reached", status="limit")
        self.model.set_option("time_limit", float(left))

    def _limit(self, message: str, sol: highs.LPSolution | None, rel_gap: float) -> SolverLimit:
        best = None if sol is None else self._finish(sol, rel_gap, warn=False)
        return SolverLimit(message, status="limit", best=best)

    def _extend(self, sol: highs.LPSolution) -> tuple[int, int]:
        """Rows the oracles find at the solution, and columns the pricing finds for its
        duals (both from the same solve); returns their numbers."""
        solved_cols = self.cols[: sol.x.size]  # the model's columns at that solve
        added = self._separate(self.point(sol.x))
        priced = self._price(sol.row_duals, sol.col_duals, solved_cols)
        return added, priced

    def _separate(self, x: np.ndarray) -> int:
        prob, added = self.problem, 0
        y = x[: prob.n_shared]
        for k, b in enumerate(prob.blocks):
            if b.separate is None:
                continue
            a, lo, up = b.separate(x[b.offset : b.offset + b.cost.size], y)
            g = prob.global_rows(k, a)
            m = g.shape[0]
            if m:
                self._add_rows(g, _row_bounds("lower", lo, m), _row_bounds("upper", up, m))
                added += m
        return added

    def _reduced_costs(
        self, duals: np.ndarray, col_duals: np.ndarray, solved_cols: np.ndarray
    ) -> np.ndarray:
        """Reduced costs of every column at a solve whose model held ``solved_cols``: HiGHS's
        for those, and for any other column (in no row of that model but its simplex
        group's) its cost less the group's dual."""
        reduced = self.c.copy()
        if self.simplices is not None and self.n_simplex_rows:
            self.simplices.subtract(reduced, duals[: self.n_simplex_rows])
        reduced[solved_cols] = col_duals
        return reduced

    def _price(self, duals: np.ndarray, col_duals: np.ndarray, solved_cols: np.ndarray) -> int:
        """Add the absent columns the pricing oracles (or negative reduced costs) ask for."""
        prob = self.problem
        if self.cols.size == prob.n_cols and all(b.price is None for b in prob.blocks):
            return 0
        reduced = self._reduced_costs(duals, col_duals, solved_cols)
        want = []
        for b in prob.blocks:
            sl = slice(b.offset, b.offset + b.cost.size)
            if b.price is not None:
                local = np.asarray(b.price(reduced[sl]), dtype=np.int64)
            else:
                # a column at its lower bound improves the objective iff its reduced cost < 0
                local = np.flatnonzero(reduced[sl] < 0.0)
            want.append(b.offset + local)
        glob = np.concatenate(want) if want else np.zeros(0, dtype=np.int64)
        return int(self._add_columns(glob).size)

    def _record(
        self, sol: highs.LPSolution, added: int, priced: int, seconds: float, bar: Any
    ) -> None:
        self.rounds.append(
            {
                "round": len(self.rounds),
                "rows": self.model.n_rows,
                "cols": self.model.n_cols,
                "objective": sol.objective,
                "added": added,
                "priced": priced,
                "iterations": sol.iterations,
                "solve_s": sol.solve_time,
                "seconds": seconds,
            }
        )
        bar.set_postfix_str(
            f"rows {self.model.n_rows:,}, +{added:,} rows, +{priced:,} columns", refresh=False
        )
        bar.update(1)

    def certified_bound(self, row_duals: np.ndarray) -> float:
        """Safe dual bound of the full LP from multipliers of the model's rows (in model row
        order; rows beyond them take multiplier 0): the simplex groups are kept as
        constraints, and the bound with every multiplier 0 is taken where it is larger (it
        wins where the duals certify nothing)."""
        row_duals = float_array("row_duals", row_duals)
        if row_duals.ndim != 1 or not self.n_simplex_rows <= row_duals.size <= self.model.n_rows:
            raise InvalidInput(
                f"row_duals must be a vector of {self.n_simplex_rows} to {self.model.n_rows} "
                f"multipliers (the model's rows at a solve), got shape {row_duals.shape}"
            )
        m = row_duals.size - self.n_simplex_rows  # rows added after the solve take 0
        a, lo, up = self.rows.arrays(m)
        duals = row_duals[self.n_simplex_rows :]
        args = (self.c, a, lo, up, self.lo, self.up)
        bound = trusted_safe_dual_bound(*args, duals, simplices=self.simplices)
        if self.simplices is not None:
            zero = trusted_safe_dual_bound(*args, 0.0 * duals, simplices=self.simplices)
            bound = max(bound, zero)
        return bound

    def _finish(self, sol: highs.LPSolution, rel_gap: float, *, warn: bool) -> RowGenResult:
        """Result with the certified bound of the full LP from the model's duals."""
        prob = self.problem
        x = self.point(sol.x)
        bound = self.certified_bound(sol.row_duals)
        value = float(self.c @ x)
        cert = certify(value, bound, rel_gap, what="row generation", warn=warn, stacklevel=5)
        return RowGenResult(
            [x[b.offset : b.offset + b.cost.size] for b in prob.blocks],
            x[: prob.n_shared],
            value,
            bound,
            cert.relative_gap,
            cert.status,
            list(self.rounds),
            self.model.n_rows,
            self.model.n_cols,
            prob.n_cols,
            sol.row_duals,
        )


def solve_rowgen(
    problem: RowGenProblem,
    *,
    rel_gap: float = 1e-6,
    max_rounds: int = 10_000,
    time_limit: float | None = None,
    method: str = "simplex",
    threads: int | None = None,
    highs_options: dict[str, Any] | None = None,
    progress: Any = "auto",
) -> RowGenResult:
    """Solve a :class:`RowGenProblem` by row and column generation (:meth:`RowGenSolver.run`).

    Parameters
    ----------
    problem : the blocks, shared columns and oracles.
    rel_gap : relative gap the bound must prove for ``status="optimal"``.
    max_rounds, time_limit : limits; reaching one raises :class:`SolverLimit` with the last
        round's result (its bound still certified) in ``best``.
    method, threads, highs_options : HiGHS settings (see :mod:`privopt.lp.highs`).
    progress : bar on stderr (True / False / "auto").

    Returns
    -------
    RowGenResult
    """
    solver = RowGenSolver(problem, method=method, threads=threads, highs_options=highs_options)
    return solver.run(
        rel_gap=rel_gap, max_rounds=max_rounds, time_limit=time_limit, progress=progress
    )
