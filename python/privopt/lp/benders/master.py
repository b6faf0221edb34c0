"""The master LP: theta columns, cuts made safe for HiGHS, warm and cold re-solves, the certified
(safe dual) bound, lazy master rows.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt.errors import (
    InfeasibleModel,
    InvalidInput,
    NumericalTrouble,
    UnboundedModel,
)
from privopt.lp import highs
from privopt.lp.benders.problem import _INF, BendersProblem, Cut
from privopt.lp.bounds import trusted_safe_dual_bound
from privopt.lp.model import LinearProgram

#: A warm master value more than this (relative) above the safe bound of its own duals is
#: re-solved from scratch (see ``_Master.solve``).
WARM_CHECK_RTOL = 1e-6


def n_theta(problem: BendersProblem, multi_cut: bool) -> int:
    """The master's theta columns: one per subproblem, or one in single-cut mode."""
    return problem.n_subproblems if multi_cut else 1


class _Master:
    """The persistent master model with theta columns; cuts are appended as rows."""

    def __init__(self, problem: BendersProblem, multi_cut: bool, options: Any = ()) -> None:
        self.n_x = problem.n_master
        self.n_theta = n_theta(problem, multi_cut)
        lp = problem.master.copy()
        lower = (
            np.asarray(problem.theta_lower)
            if multi_cut
            else np.array([float(np.sum(problem.theta_lower))])
        )
        self.theta_lower = lower
        self.theta_upper = (
            np.asarray(problem.theta_upper)
            if multi_cut
            else np.array([float(np.sum(problem.theta_upper))])
        )
        self.theta_cols = lp.add_variables(self.n_theta, objective=1.0, lower=lower, name="theta")
        self.lp = lp
        self.cost_x = problem.master.objective
        self._cost = lp.objective
        self.offset = problem.master.offset
        self.is_mip = lp.is_mip
        self.model = lp.to_model(options=options)  # options before the model: see to_model
        self.model.configure(method="simplex", presolve=True)
        # Re-solved warm after every batch of cuts and lazy rows (the caller's
        # highs_options, set afterwards, can choose another pricing).
        self.model.use_devex()
        # The rows as HiGHS holds them, kept on this side for the safe bound (reading them
        # back from HiGHS copied the whole model through Python lists on every solve).
        self._rows = _RowStore(lp.to_csr().to_scipy(), lp.row_lower, lp.row_upper, lp.n_vars)
        self.active = np.isfinite(lower)
        self._apply_theta_bounds()
        self._cold_next = True  # the first solve has no basis
        self.solved_cold = False  # whether the last solve started without a basis
        self.last_safe_bound = -_INF
        self._check_warm = True  # see solve()
        self.n_cold_resolves = 0

    def clean_cut(
        self,
        cols: np.ndarray,
        vals: np.ndarray,
        rhs: float,
        *,
        normalise: bool,
        drop: float = 1e-9,
        big: float = 1e12,
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """A cut ``valsᵀ x[cols] ≥ rhs`` made safe for HiGHS, still valid.

        ``normalise`` (feasibility cuts, no θ) divides it by its largest ``|coefficient|``:
        rays of badly scaled subproblems carry entries of 1e8 and more, and the master's
        absolute feasibility tolerance then means the same thing on every cut. Entries with
        ``|v| ≤ drop``, which HiGHS would silently remove (``small_matrix_value``; removing a
        positive entry of a ``≥`` row would strengthen the cut), are dropped with the
        right-hand side lowered by their largest contribution over the master column box,
        ``max(v·l, v·u)``; an entry whose bound there is infinite is kept, moved away from
        zero (still valid: on ``x ≥ 0`` a larger positive coefficient weakens a ``≥`` row)."""
        cols = np.asarray(cols)
        vals = np.asarray(vals, dtype=np.float64)
        if normalise:
            scale = float(np.abs(vals).max(initial=0.0))
            if scale > 0:
                vals = vals / scale
                rhs = rhs / scale
        if np.abs(vals).max(initial=0.0) > big:
            # Coefficients HiGHS cannot take (duals of nearly degenerate subproblems with
            # badly scaled rows reach 1e15): on the box l ≤ x ≤ u, v·x ≤ C·x + max over the box of
            # (v − C)·x, so capping v at ±C and lowering the right-hand side by that maximum
            # keeps the cut valid (a negative coefficient on x ≥ 0 is capped for free).
            lo_b = self.lp.col_lower[cols]
            up_b = self.lp.col_upper[cols]
            capped = np.clip(vals, -big, big)
            excess = vals - capped
            with np.errstate(invalid="ignore"):
                contrib = np.where(
                    excess > 0, excess * up_b, np.where(excess < 0, excess * lo_b, 0.0)
                )
            if np.isfinite(contrib).all():
                rhs = float(rhs - contrib.sum())
                vals = capped
        small = np.abs(vals) <= drop
        if not small.any():
            return cols, vals, rhs
        lo = self.lp.col_lower[cols[small]]
        up = self.lp.col_upper[cols[small]]
        v = vals[small]
        with np.errstate(invalid="ignore"):
            contrib = np.where(v > 0, v * up, np.where(v < 0, v * lo, 0.0))
        ok = np.isfinite(contrib)
        rhs = float(rhs - contrib[ok].sum())
        keep = ~small
        kept_small = np.flatnonzero(small)[~ok]
        keep[kept_small] = True
        vals = vals.copy()
        # positive entry on x ≥ 0 without an upper bound: a larger coefficient is weaker
        pos = kept_small[(vals[kept_small] > 0) & (self.lp.col_lower[cols[kept_small]] >= 0)]
        vals[pos] = 2 * drop
        return cols[keep], vals[keep], rhs

    def _theta_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        lo = np.where(self.active, self.theta_lower, 0.0)
        up = np.where(self.active, self.theta_upper, 0.0)
        return lo, up

    def _apply_theta_bounds(self) -> None:
        cols = np.arange(self.theta_cols.start, self.theta_cols.stop, dtype=np.int32)
        lo, up = self._theta_bounds()
        self.model.set_col_bounds(cols, lo, up)

    def activate(self, ks: np.ndarray) -> None:
        if ks.size and not self.active[ks].all():
            self.active[ks] = True
            self._apply_theta_bounds()

    def add_cuts(self, rows: list[tuple[np.ndarray, np.ndarray, float, float]]) -> None:
        """Append rows given as (columns, values, lower, upper)."""
        if not rows:
            return
        starts = np.cumsum([0] + [r[0].size for r in rows[:-1]]).astype(np.int32)
        idx = np.concatenate([r[0] for r in rows]).astype(np.int32)
        val = np.concatenate([r[1] for r in rows]).astype(np.float64)
        lo = np.array([r[2] for r in rows], dtype=np.float64)
        up = np.array([r[3] for r in rows], dtype=np.float64)
        indptr = np.append(starts, idx.size)
        self.add_rows(sp.csr_array((val, idx, indptr), shape=(len(rows), self.lp.n_vars)), lo, up)

    def add_rows(self, a: sp.csr_array, lower: np.ndarray, upper: np.ndarray) -> None:
        """Append rows ``lower ≤ a x ≤ upper``, ``a`` CSR over the first ``a.shape[1]``
        columns (the lazy rows span x only): one batch, no per-row Python."""
        if a.shape[1] != self.lp.n_vars:
            a = sp.csr_array((a.data, a.indices, a.indptr), shape=(a.shape[0], self.lp.n_vars))
        # HiGHS rejects the whole batch for one bad row (a coefficient above
        # large_matrix_value = 1e15): add_rows raises rather than lose cuts, which would make
        # the master return the same point forever.
        self.model.add_rows(lower, upper, a)
        self._rows.append(a, lower, upper)

    def discard_basis(self) -> None:
        """Make the next :meth:`solve` start from scratch (no basis, no factorisation)."""
        self.model.cold()
        self._cold_next = True

    def solve(self, time_left: float | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """Solve the master (warm unless :meth:`discard_basis` was called); returns
        ``(x, theta, HiGHS's objective value)`` and sets :attr:`last_safe_bound`.

        A warm value that its own duals do not support (safe bound below it by more than
        :data:`WARM_CHECK_RTOL`) is re-solved from scratch at once: a stale basis can make
        HiGHS report a value above the master's optimum. When the cold value equals the warm
        one, the bound was merely loose (badly scaled cuts) and the check is switched off.
        """
        t0 = time.perf_counter()
        v, obj = self._solve_once(time_left)
        warm = not self.solved_cold
        if (
            warm
            and self._check_warm
            and self.active.all()
            and not self.is_mip
            and obj - self.last_safe_bound > WARM_CHECK_RTOL * max(abs(obj), 1e-12)
        ):
            warm_obj = obj
            self.discard_basis()
            if time_left is not None:
                time_left -= time.perf_counter() - t0
                if time_left <= 0:
                    raise _MasterTimeout("time limit reached")
            v, obj = self._solve_once(time_left)
            self.n_cold_resolves += 1
            self._check_warm = abs(obj - warm_obj) > 1e-9 * max(abs(obj), 1e-12)
        return v[: self.n_x], v[self.n_x :], obj

    def _solve_once(self, time_left: float | None) -> tuple[np.ndarray, float]:
        S = highs.ModelStatus
        self.solved_cold = self._cold_next
        self._cold_next = False
        if time_left is not None:
            self.model.set_option("time_limit", max(time_left, 1e-3))
        # A warm start from the previous basis can derail on badly scaled cut rows
        # (coefficients spanning ten decades and more), and HiGHS's presolve can abort with
        # "Not Set" on such masters although the same LP solves with presolve off: the shared
        # fallbacks retry from scratch.
        st = self.model.run_with_fallbacks(accept=(S.kOptimal, S.kTimeLimit, S.kInfeasible))
        text = self.model.status_text
        if st == S.kTimeLimit:
            raise _MasterTimeout(text)
        if st == S.kOptimal:
            sol = self.model.solution()
            if self.is_mip:
                obj = sol.mip_dual_bound
                self.last_safe_bound = obj
            else:
                obj = sol.objective
                self.last_safe_bound = min(obj, self._safe_bound(sol))
            return sol.x, obj
        if st == S.kInfeasible:
            raise InfeasibleModel(
                "Benders master is infeasible: the problem has no feasible "
                "point (feasibility cuts exclude every master point)",
                status=text,
            )
        if st in (S.kUnbounded, S.kUnboundedOrInfeasible):
            raise UnboundedModel(
                "Benders master is unbounded: give finite theta_lower bounds "
                "(or initial cuts), or the problem itself is unbounded",
                status=text,
            )
        raise NumericalTrouble(f"Benders master solve failed: {text}", status=text)

    def _safe_bound(self, sol: highs.LPSolution, pi: np.ndarray | None = None) -> float:
        """Rigorous lower bound on the master LP from row multipliers ``pi`` (default: the
        solution's duals) — the safe dual bound ``Σ π_i B_i + Σ_j min over [l_j, u_j] of
        d_j x_j`` with ``d = c − Aᵀπ`` recomputed. HiGHS's optimality test runs on its scaled
        model; with cut coefficients up to 1e12 its "optimal" value can lie above the true
        master optimum, i.e. the plain Benders lower bound would exceed the LP optimum. With
        the solver's own duals the safe bound can be loose on such masters; :meth:`certify`
        re-solves with rows scaled to coefficient ≤ 1 for better multipliers. Columns whose
        recomputed reduced cost points to an infinite bound (θ with d < 0, dust) keep the
        solver's reduced cost (0 within tolerance)."""
        A, row_lower, row_upper = self._rows.arrays()
        col_lower, col_upper = self._col_bounds()
        return trusted_safe_dual_bound(
            self._cost,
            A,
            row_lower,
            row_upper,
            col_lower,
            col_upper,
            sol.row_duals if pi is None else pi,
            solver_col_dual=sol.col_duals,
            offset=self.offset,
        )

    def _col_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Column bounds as HiGHS holds them (an inactive theta is fixed at 0)."""
        lo = np.concatenate([self.lp.col_lower[: self.n_x], self._theta_bounds()[0]])
        up = np.concatenate([self.lp.col_upper[: self.n_x], self._theta_bounds()[1]])
        return lo, up

    def certify(self, time_limit: float | None = None) -> float:
        """Safe bound of the current master from better multipliers: the same LP with every
        row divided by its largest |coefficient| is re-solved from the current basis (its
        dual tolerance then bounds what a dual is worth), and its duals, scaled back, go into
        :meth:`_safe_bound` on the original rows (valid whatever the re-solve did). Returns
        −inf when the re-solve fails. MIP masters: the MIP dual bound."""
        if self.is_mip:
            return self.model.solution().mip_dual_bound
        a, row_lower, row_upper = self._rows.arrays()
        if a.shape[0] == 0:
            return -_INF
        rowmax = np.zeros(a.shape[0])
        nz = np.diff(a.indptr) > 0
        rowmax[nz] = np.maximum.reduceat(np.abs(a.data), a.indptr[:-1][nz])
        f = np.where(rowmax > 0, 1.0 / np.where(rowmax > 0, rowmax, 1.0), 1.0)
        # The same LP with scaled rows, passed through the project's LinearProgram.
        col_lower, col_upper = self._col_bounds()
        copy = LinearProgram(
            a.shape[1], objective=self._cost, lower=col_lower, upper=col_upper, offset=self.offset
        )
        # Row i times f_i: a diagonal product's values, without the sparse product.
        scaled_a = sp.csr_array(
            (a.data * np.repeat(f, np.diff(a.indptr)), a.indices, a.indptr), shape=a.shape
        )
        copy.add_rows(scaled_a, lower=row_lower * f, upper=row_upper * f)
        scaled = copy.to_model()
        # Tolerances and threads as the master's; its own time limit (the run's may be used
        # up; a re-solve from an optimal basis is usually quick, but not always).
        for name in (
            "primal_feasibility_tolerance",
            "dual_feasibility_tolerance",
            "threads",
            highs.DUAL_PRICING,
        ):
            scaled.set_option(name, self.model.option(name))
        if time_limit is not None:
            scaled.set_option("time_limit", float(time_limit))
        # The rows are scaled here; HiGHS's own scaling on top made the copy re-price the
        # master's basis: 1,066 pivots (1.2 s) where the rows added since its last solve
        # need 330 (grid N = 1,200, 65,000 rows). Without it the tolerances also apply to
        # these rows as scaled, which is what the multipliers are for.
        scaled.set_option("simplex_scale_strategy", 0)
        scaled.set_basis(self.model.basis())
        if scaled.run_with_fallbacks() != highs.ModelStatus.kOptimal:
            return -_INF
        sol = scaled.solution()
        return self._safe_bound(sol, pi=sol.row_duals * f)


class _RowStore:
    """The master's rows (CSR pieces and bounds), appended as HiGHS gets them and joined on
    demand (cached until the next append)."""

    def __init__(self, a: sp.csr_array, lower: np.ndarray, upper: np.ndarray, n_cols: int) -> None:
        self.n_cols = n_cols
        self._pieces: list[tuple[sp.csr_array, np.ndarray, np.ndarray]] = []
        self._joined: tuple[sp.csr_array, np.ndarray, np.ndarray] | None = None
        self._add(sp.csr_array(a, shape=(a.shape[0], n_cols)), lower, upper)

    def _add(self, a: sp.csr_array, lower: np.ndarray, upper: np.ndarray) -> None:
        self._pieces.append((a, np.asarray(lower, np.float64), np.asarray(upper, np.float64)))
        self._joined = None

    def append(self, a: sp.csr_array, lower: np.ndarray, upper: np.ndarray) -> None:
        """Rows ``lower ≤ a x ≤ upper`` (``a`` CSR over every column)."""
        self._add(a, lower, upper)

    def arrays(self) -> tuple[sp.csr_array, np.ndarray, np.ndarray]:
        """(A as CSR, row lower bounds, row upper bounds) of every row so far."""
        if self._joined is None:
            mats, lows, ups = zip(*self._pieces, strict=True)
            a = sp.csr_array(sp.vstack(mats, format="csr"))
            self._joined = (a, np.concatenate(lows), np.concatenate(ups))
            self._pieces = [self._joined]
        return self._joined


class _LazyRows:
    """Master rows ``lower <= P x <= upper`` held back until a master point violates them
    (row generation on the master: valid rows that are mostly slack at the optimum)."""

    def __init__(self, spec: Any, n_x: int) -> None:
        if isinstance(spec, LinearProgram):
            # The one model description: its rows over (a prefix of) the master's columns.
            if spec.n_vars > n_x:
                raise InvalidInput(
                    f"lazy_rows must have at most {n_x} variables (master variables), "
                    f"got {spec.n_vars}"
                )
            spec = (spec.to_csr().to_scipy(), spec.row_lower, spec.row_upper)
        if not (isinstance(spec, (tuple, list)) and len(spec) == 3):
            raise InvalidInput("lazy_rows must be a LinearProgram or a triple (P, lower, upper)")
        mat, lower, upper = spec
        P = sp.csr_array(mat if sp.issparse(mat) else np.atleast_2d(np.asarray(mat, float)))
        if P.shape[1] > n_x:
            raise InvalidInput(
                f"lazy_rows matrix must have at most {n_x} columns (master "
                f"variables), got shape {P.shape}"
            )
        m = P.shape[0]
        self.P = sp.csr_array((P.data, P.indices, P.indptr), shape=(m, n_x))
        self.lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), (m,)).copy()
        self.upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), (m,)).copy()
        if (
            np.isnan(self.lower).any()
            or np.isnan(self.upper).any()
            or (self.lower > self.upper).any()
        ):
            raise InvalidInput("lazy_rows bounds must satisfy lower <= upper (no NaN)")
        self.active = np.zeros(m, dtype=bool)

    def violated(
        self, x: np.ndarray, tol: float
    ) -> tuple[sp.csr_array, np.ndarray, np.ndarray] | None:
        """Rows violated at ``x`` by more than ``tol`` (absolute), marked active, as
        ``(P rows, lower, upper)``; None when there are none."""
        act = self.P @ x
        bad = np.flatnonzero(((act > self.upper + tol) | (act < self.lower - tol)) & ~self.active)
        if not bad.size:
            return None
        self.active[bad] = True
        return sp.csr_array(self.P[bad]), self.lower[bad], self.upper[bad]


class _MasterTimeout(Exception):
    """The master solve ran into the overall time limit."""


def _prepare_initial_cuts(cuts: Sequence[Any], width: int) -> list[tuple]:
    """The caller's initial cuts as rows (columns, values, lower, upper) over ``width``
    master columns (x, then theta), checked."""
    rows = []
    for i, given in enumerate(cuts):
        cut = given
        if not isinstance(cut, Cut):
            try:
                cut = Cut(*given)
            except TypeError:
                raise InvalidInput(
                    f"initial_cuts[{i}] must be a Cut or (coef, lower, upper)"
                ) from None
            except InvalidInput as exc:
                raise InvalidInput(f"initial_cuts[{i}]: {exc}") from None
        if sp.issparse(cut.coef):
            row = sp.csr_array(cut.coef)
            if row.shape[0] != 1:
                raise InvalidInput(f"initial_cuts[{i}].coef must be a single row")
            cols, vals = row.indices.astype(np.int64), row.data.astype(np.float64)
            n = row.shape[1]
        else:
            dense = np.asarray(cut.coef, dtype=np.float64)
            if dense.ndim != 1:
                raise InvalidInput(f"initial_cuts[{i}].coef must be 1-D")
            cols = np.flatnonzero(dense)
            vals = dense[cols]
            n = dense.size
        if n > width or not np.isfinite(vals).all():
            raise InvalidInput(
                f"initial_cuts[{i}].coef must be finite with at most {width} entries"
            )
        lo, up = float(cut.lower), float(cut.upper)
        if math.isnan(lo) or math.isnan(up) or lo > up:
            raise InvalidInput(f"initial_cuts[{i}] has invalid bounds [{lo}, {up}]")
        rows.append((cols, vals, lo, up))
    return rows
