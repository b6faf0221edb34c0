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
         l_s ≤ y ≤ u_s,  l_b ≤ x_b ≤ u_b

Shared columns ``y`` are always in the model and never priced; a block's rows may use them
(CLR-Geo: each user's block and the shared exponential weights y). One block without shared
columns is a plain LP with lazy rows.

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

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt.certify import certify
from privopt.errors import InvalidInput, SolverLimit
from privopt.lp import highs

__all__ = ["RowGenProblem", "RowGenResult", "solve_rowgen"]

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
        self.shared = _columns(self.n_shared, shared_cost, shared_lower, shared_upper)
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
            the columns that the rows mention join with them.
        name : label in messages.
        """
        cost, lo, up = _columns(np.size(cost), cost, lower, upper)
        n = cost.size
        init = np.arange(n) if initial_columns is None else np.asarray(initial_columns, np.int64)
        if init.size and (init.min() < 0 or init.max() >= n):
            raise InvalidInput(f"initial_columns must lie in [0, {n})")
        b = _Block(
            cost, lo, up, self.n_cols, separate, price, init, name or f"block {len(self.blocks)}"
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
        a = sp.csr_array(a, dtype=np.float64)
        if a.shape[1] != n_b + self.n_shared:
            raise InvalidInput(
                f"{b.name}: rows must have {n_b + self.n_shared} columns, got {a.shape[1]}"
            )
        col = np.where(a.indices < n_b, a.indices + b.offset, a.indices - n_b)
        return sp.csr_array((a.data, col, a.indptr), shape=(a.shape[0], self.n_cols))

    def _add_rows(self, k: int, a: Any, lower: Any, upper: Any) -> None:
        g = sp.csr_array(a, dtype=np.float64)  # made global once every block is known
        self.global_rows(k, g)  # validates the width
        m = g.shape[0]
        lo = np.broadcast_to(np.asarray(lower, np.float64), (m,)).copy()
        up = np.broadcast_to(np.asarray(upper, np.float64), (m,)).copy()
        self._rows.append((k, g, lo, up))

    def cost(self) -> np.ndarray:
        """Costs of all columns: the shared ones first, then each block's."""
        return np.concatenate([self.shared[0]] + [b.cost for b in self.blocks])

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds of all columns, in the order of :meth:`cost`."""
        lo = np.concatenate([self.shared[1]] + [b.lower for b in self.blocks])
        up = np.concatenate([self.shared[2]] + [b.upper for b in self.blocks])
        return lo, up


def _count(name: str, n: Any) -> int:
    if not (isinstance(n, (int, np.integer)) and n >= 0):
        raise InvalidInput(f"{name} must be an integer >= 0, got {n!r}")
    return int(n)


def _columns(n: int, cost: Any, lower: Any, upper: Any) -> tuple[np.ndarray, ...]:
    out = []
    for what, v in (("cost", cost), ("lower", lower), ("upper", upper)):
        arr = np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)).copy()
        if np.isnan(arr).any() or (what == "cost" and not np.isfinite(arr).all()):
            raise InvalidInput(f"column {what} must be {'finite' if what == 'cost' else 'non-NaN'}")
        out.append(arr)
    if (out[1] > out[2]).any():
        raise InvalidInput("column bounds: lower > upper")
    return tuple(out)


@dataclass
class RowGenResult:
    """Outcome of :func:`solve_rowgen`.

    Attributes
    ----------
    x : list of (n_b,) solutions, one per block (absent columns are 0).
    y : (n_shared,) shared columns.
    objective : objective value of the final model's solution.
    lower_bound : certified lower bound on the full LP (safe dual bound over all rows and
        columns, absent ones included).
    relative_gap : proven ``(objective − lower_bound) / max(|objective|, 1e-12)``.
    status : ``"optimal"`` (the bound proves ``rel_gap``) or ``"gap_not_closed"``.
    rounds : per round: rows, columns, objective, rows added, columns priced, seconds.
    n_rows, n_cols : size of the final model (the full LP has ``n_cols_full`` columns).
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


class _State:
    """The live model: global column set, stored rows (global columns) and the HiGHS handle."""

    def __init__(self, prob: RowGenProblem, method: str, threads: int | None) -> None:
        self.prob = prob
        self.c = prob.cost()
        self.lo, self.up = prob.bounds()
        self.pos = np.full(prob.n_cols, -1, dtype=np.int64)
        self.cols = np.zeros(0, dtype=np.int64)
        self.rows: list[sp.csr_array] = []
        self.row_lo: list[np.ndarray] = []
        self.row_up: list[np.ndarray] = []
        self.row_block: list[np.ndarray] = []
        self.model = highs.Model(highs.new_highs(method=method, threads=threads))
        highs.pass_arrays(self.model.h, np.zeros(0), sp.csc_array((0, 0)), np.zeros(0), np.zeros(0))
        start = [np.arange(prob.n_shared)]
        start += [b.offset + b.initial_columns for b in prob.blocks]
        self.add_columns(np.concatenate(start))
        for k, a, lo, up in prob._rows:
            self.add_rows(k, prob.global_rows(k, a), lo, up)

    def add_columns(self, glob: np.ndarray) -> None:
        new = np.unique(glob[self.pos[glob] < 0])
        if not new.size:
            return
        self.pos[new] = self.cols.size + np.arange(new.size)
        self.cols = np.concatenate([self.cols, new])
        m = self.model.n_rows
        entries = (
            sp.csc_array(sp.vstack(self.rows, format="csr")[:, new])
            if m
            else sp.csc_array((0, new.size))
        )
        self.model.add_cols(self.c[new], self.lo[new], self.up[new], entries)

    def add_rows(self, k: int, g: sp.csr_array, lo: np.ndarray, up: np.ndarray) -> None:
        if not g.shape[0]:
            return
        self.add_columns(np.unique(g.indices).astype(np.int64))
        self.rows.append(g)
        self.row_lo.append(lo)
        self.row_up.append(up)
        self.row_block.append(np.full(g.shape[0], k))
        local = sp.csr_array(
            (g.data, self.pos[g.indices], g.indptr), shape=(g.shape[0], self.cols.size)
        )
        self.model.add_rows(lo, up, local)

    def all_rows(self) -> tuple[sp.csr_array, np.ndarray, np.ndarray]:
        if not self.rows:
            return sp.csr_array((0, self.prob.n_cols)), np.zeros(0), np.zeros(0)
        return (
            sp.vstack(self.rows, format="csr"),
            np.concatenate(self.row_lo),
            np.concatenate(self.row_up),
        )

    def point(self, x_model: np.ndarray) -> np.ndarray:
        x = np.zeros(self.prob.n_cols)
        x[self.cols] = x_model
        return x


def _separate(state: _State, x: np.ndarray) -> int:
    prob, added = state.prob, 0
    y = x[: prob.n_shared]
    for k, b in enumerate(prob.blocks):
        if b.separate is None:
            continue
        a, lo, up = b.separate(x[b.offset : b.offset + b.cost.size], y)
        g = prob.global_rows(k, a)
        m = g.shape[0]
        if m:
            state.add_rows(
                k,
                g,
                np.broadcast_to(np.asarray(lo, np.float64), (m,)).copy(),
                np.broadcast_to(np.asarray(up, np.float64), (m,)).copy(),
            )
            added += m
    return added


def _price(state: _State, a: sp.csr_array, duals: np.ndarray) -> int:
    """Add the absent columns the pricing oracles (or negative reduced costs) ask for."""
    prob = state.prob
    reduced = state.c - a.T @ duals
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
    glob = glob[state.pos[glob] < 0]
    state.add_columns(glob)
    return int(np.unique(glob).size)


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
    """Solve a :class:`RowGenProblem` by row and column generation.

    Each round solves the model (warm after the first, dual simplex with Devex pricing: HiGHS
    otherwise recomputes steepest-edge weights for every row after ``addRows``), asks every
    block's separation oracle for violated rows and the pricing for columns, and stops when
    neither adds anything. Then the certified bound (safe dual bound of the full LP) and the
    certification rule decide the status; an uncertified result warns once.

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
    from privopt._progress import progress_bar

    start = time.perf_counter()
    state = _State(problem, method, threads)
    highs.set_options(state.model.h, highs_options or {})
    rounds: list[dict[str, Any]] = []
    with progress_bar(progress, desc="row generation", unit="round") as bar:
        for r in range(max_rounds):
            t0 = time.perf_counter()
            sol = state.model.solve(what="row-generation LP")
            x = state.point(sol.x)
            a, _, _ = state.all_rows()
            added = _separate(state, x)
            priced = _price(state, a, sol.row_duals) if not added else 0
            rounds.append(
                {
                    "round": r,
                    "rows": state.model.n_rows,
                    "cols": state.model.n_cols,
                    "objective": sol.objective,
                    "added": added,
                    "priced": priced,
                    "seconds": time.perf_counter() - t0,
                }
            )
            bar.update(1)
            if not (added or priced):
                return _finish(state, sol, x, rounds, rel_gap)
            # warm re-solves from here on (see the docstring)
            state.model.set_option("simplex_dual_edge_weight_strategy", 1)
            if time_limit is not None and time.perf_counter() - start > time_limit:
                break
            if time_limit is not None:
                left = max(time_limit - (time.perf_counter() - start), 1e-3)
                state.model.set_option("time_limit", float(left))
    best = _finish(state, sol, x, rounds, rel_gap, warn=False)
    raise SolverLimit(
        f"row generation stopped after {len(rounds)} rounds with rows still violated",
        status="limit",
        best=best,
    )


def _finish(
    state: _State,
    sol: highs.LPSolution,
    x: np.ndarray,
    rounds: list[dict[str, Any]],
    rel_gap: float,
    warn: bool = True,
) -> RowGenResult:
    """Result with the safe dual bound of the full LP from the model's duals."""
    prob = state.prob
    a, lo, up = state.all_rows()
    m = sol.row_duals.size  # rows added after this solve (at a limit) take multiplier 0
    a, lo, up = a[:m], lo[:m], up[:m]
    bound = highs.safe_dual_bound(state.c, a, lo, up, state.lo, state.up, sol.row_duals)
    value = float(state.c @ x)
    cert = certify(value, bound, rel_gap, what="row generation", warn=warn, stacklevel=4)
    return RowGenResult(
        [x[b.offset : b.offset + b.cost.size] for b in prob.blocks],
        x[: prob.n_shared],
        value,
        bound,
        cert.relative_gap,
        cert.status,
        rounds,
        state.model.n_rows,
        state.model.n_cols,
        prob.n_cols,
    )
