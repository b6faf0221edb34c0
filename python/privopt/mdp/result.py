"""The released mechanism: :class:`PerturbationMatrix` (sample, verify, repair, save, plot)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privopt._validation import check_int
from privopt.errors import InvalidInput, PrivacyViolation
from privopt.mdp.problem import EdgeList, MDPProblem

__all__ = ["PerturbationMatrix", "Verification", "repair"]

#: Edges processed per chunk when scanning |E|·K constraints (bounds temporary memory).
_CHUNK_ENTRIES = 4_000_000

#: Decay rate of the repair's lift partner as a fraction of ε (< 1/2 leaves slack; K = N,
#: N = 500: 1/3 -> gap 2.4e-5, 0.25 -> 8.1e-6, 0.15 -> 3.7e-6, 0.1 -> 3.6e-6, 0.45 -> 1.5e-4).
_LIFT_RATE = 0.15


@dataclass(frozen=True)
class Verification:
    """Worst violations of a perturbation matrix against the mDP LP constraints.

    Attributes
    ----------
    max_relative_violation : max over edges (i, j) and outputs k of
        ``max(0, z_ik − e^{εd_ij} z_jk) / z_ik`` (0 when satisfied; 1 when z_jk = 0 < z_ik).
        A value r means the likelihood ratio exceeds e^{εd} by the factor 1/(1 − r).
    max_absolute_violation : max of ``z_ik − e^{εd_ij} z_jk`` (clipped at 0).
    worst_edge : (i, j, k) of the worst relative violation, or None.
    max_row_sum_error : max_i |Σ_k z_ik − 1|.
    min_entry : smallest entry of Z.
    """

    max_relative_violation: float
    max_absolute_violation: float
    worst_edge: tuple[int, int, int] | None
    max_row_sum_error: float
    min_entry: float

    def ok(self, rtol: float = 1e-9, *, row_atol: float = 1e-9) -> bool:
        """True when every mDP ratio holds to relative ``rtol`` and Z is row-stochastic."""
        return (
            self.max_relative_violation <= rtol
            and self.max_row_sum_error <= row_atol
            and self.min_entry >= 0.0
        )


def _scan(
    z: np.ndarray, edges: EdgeList, epsilon: float
) -> tuple[float, float, tuple[int, int, int] | None]:
    k = z.shape[1]
    worst_rel, worst_abs, where = 0.0, 0.0, None
    step = max(1, _CHUNK_ENTRIES // max(k, 1))
    for s in range(0, len(edges), step):
        i, j, d = edges.i[s : s + step], edges.j[s : s + step], edges.d[s : s + step]
        zi = z[i]
        viol = zi - np.exp(epsilon * d)[:, None] * z[j]
        np.maximum(viol, 0.0, out=viol)
        if not viol.any():
            continue
        rel = np.divide(viol, zi, out=np.zeros_like(viol), where=zi > 0)
        flat = int(np.argmax(rel))
        if rel.flat[flat] > worst_rel:
            e, kk = divmod(flat, k)
            worst_rel, where = float(rel.flat[flat]), (int(i[e]), int(j[e]), int(kk))
        worst_abs = max(worst_abs, float(viol.max()))
    return worst_rel, worst_abs, where


def verify_matrix(z: np.ndarray, edges: EdgeList, epsilon: float) -> Verification:
    """Check Z (N, K) against every mDP constraint of ``edges`` (vectorised, chunked)."""
    rel, ab, where = _scan(z, edges, epsilon)
    return Verification(rel, ab, where, float(np.max(np.abs(z.sum(axis=1) - 1.0))), float(z.min()))


def repair(
    z: np.ndarray,
    edges: EdgeList,
    epsilon: float,
    *,
    rtol: float = 1e-12,
    objective: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """Post-process a nearly feasible Z into one that satisfies every mDP constraint.

    Steps (each keeps what the previous one achieved):

    1. clip negative entries to 0 and renormalise rows to sum 1;
    2. records joined by edges with e^{εd} = 1 (distance 0, or ε = 0) must have equal rows:
       replace each such class's rows by their mean (a mean of rows that each satisfy a ratio
       bound against a third row satisfies it too);
    3. mix with a feasible partner P that has slack on every constraint,
       ``Z' = (1 − α) Z + α P``: for an edge with violation ``v = z_ik − e^{εd} z_jk`` and
       partner slack ``g = e^{εd} P_jk − P_ik > 0`` the mixed violation
       ``(1 − α) v − α g`` is ≤ 0 once ``α ≥ v / (v + g)``; non-violated entries stay
       feasible (both terms ≤ 0). The largest such α (times a safety factor 2 against
       rounding) is applied. Partners: the uniform mechanism ``U = 1/K`` (slack
       ``(e^{εd} − 1)/K``) and, when ``objective`` (N × K, p_i c_ik) is given, also Z's own
       lift at rate ρ = 0.15·ε with rows renormalised (:func:`privopt.mdp.lift.column_lift`;
       lifted ratios are at most e^{ρd} and row sums change by at most e^{ρd}, so its ratios are
       at most e^{2ρd} and its slack at least ``P_jk (e^{εd} − e^{2ρd})``). The partner with
       the smaller loss increase ``α · (loss(P) − loss(Z))`` is used: the lift stays close to
       Z where the uniform mechanism is far from it (K = N = 500, road: certified gap 1.8e-4
       with the uniform partner, 3.7e-6 with the lift; N = 500, K = 100, ε = 10: 7e-8–3e-7
       -> 2e-9–9e-9);
    4. with ``objective``, also: lift Z onto the cone exactly (every column to its least
       mDP-feasible majorant, ``column_lift`` at rate ε), renormalise rows, then mix as in 3;
       the cheaper of the two results is returned. Row generation leaves entries below its
       1e-10 row tolerance unenforced (far from the output); the lift supplies them at the
       exact decay, and the renormalisation only leaves ratio errors of the size of the
       lifted mass (K = N = 500, ε = 10, no polish, certified gap: grid 4.2e-5 -> 2.9e-6,
       road 3.7e-6 -> 7.0e-8).

    Returns
    -------
    (Z', α) — the repaired matrix and the mixing weight (0 when nothing needed repair).
    """
    z = np.clip(z, 0.0, None)
    z = z / z.sum(axis=1, keepdims=True)
    # Edges with e^{εd} = 1 (coincident records, or ε = 0) are equalities: average those classes.
    zero = np.exp(epsilon * edges.d) == 1.0
    if np.any(zero):
        import scipy.sparse as sp
        from scipy.sparse.csgraph import connected_components

        n = z.shape[0]
        g = sp.csr_array((np.ones(int(zero.sum())), (edges.i[zero], edges.j[zero])), shape=(n, n))
        n_comp, lab = connected_components(g, directed=False)
        sums = np.zeros((n_comp, z.shape[1]))
        np.add.at(sums, lab, z)
        z = sums[lab] / np.bincount(lab, minlength=n_comp)[lab, None]
    keep = ~zero
    sub = EdgeList(edges.i[keep], edges.j[keep], edges.d[keep])
    best = _mix(z, edges, sub, epsilon, rtol, objective)
    if best[1] == 0.0:  # nothing violated
        return best
    if objective is not None and epsilon > 0:
        from privopt.mdp.lift import column_lift

        # Step 4: lift Z onto the cone first (exact up to rounding), renormalise, then mix.
        w, _ = column_lift(z, edges, epsilon)
        w /= w.sum(axis=1, keepdims=True)
        lifted = _mix(w, edges, sub, epsilon, rtol, objective)
        if float(np.sum(objective * lifted[0])) < float(np.sum(objective * best[0])):
            best = lifted
    return best


def _mix(
    z: np.ndarray,
    edges: EdgeList,
    sub: EdgeList,
    epsilon: float,
    rtol: float,
    objective: np.ndarray | None,
) -> tuple[np.ndarray, float]:
    """Step 3 of :func:`repair`: ``(1 − α) Z + α P`` with the cheaper partner P; ``sub``
    are the edges with e^{εd} > 1 (the others join records whose rows are already equal; the
    lift partner is built over all ``edges`` so that it keeps those rows equal too)."""
    k = z.shape[1]
    alpha_u = min(1.0, 2.0 * _mixing_weight(z, sub, epsilon, rtol, None))
    if alpha_u == 0.0:
        return z, 0.0
    if objective is not None and epsilon > 0:
        from privopt.mdp.lift import column_lift

        w, _ = column_lift(z, edges, _LIFT_RATE * epsilon)
        partner = w / w.sum(axis=1, keepdims=True)
        alpha_p = min(1.0, 2.0 * _mixing_weight(z, sub, epsilon, rtol, partner))
        base = float(np.sum(objective * z))
        cost_u = alpha_u * (float(np.sum(objective)) / k - base)
        cost_p = alpha_p * (float(np.sum(objective * partner)) - base)
        if cost_p < cost_u:
            mixed = (1.0 - alpha_p) * z + alpha_p * partner
            # Keep the lift only if the mixture passes the exact check (rounding on edges
            # with e^{εd} within 1e-15 of 1 could defeat its slack).
            if _scan(mixed, sub, epsilon)[0] <= 0.0:
                return mixed, alpha_p
    return (1.0 - alpha_u) * z + alpha_u / k, alpha_u


def _mixing_weight(
    z: np.ndarray, edges: EdgeList, epsilon: float, rtol: float, partner: np.ndarray | None
) -> float:
    """Smallest α with every violated entry of Z fixed by mixing with ``partner``
    (None = the uniform mechanism); 1 where the partner has no slack."""
    k = z.shape[1]
    alpha = 0.0
    step = max(1, _CHUNK_ENTRIES // max(k, 1))
    for s in range(0, len(edges), step):
        i, j, d = edges.i[s : s + step], edges.j[s : s + step], edges.d[s : s + step]
        ratio = np.exp(epsilon * d)[:, None]
        # Aim for a margin rtol·z_ik so that the relative check passes after rounding.
        viol = z[i] * (1.0 + rtol) - ratio * z[j]
        bad = viol > 0
        if not bad.any():
            continue
        if partner is None:
            gain = np.broadcast_to((ratio - 1.0) / k, viol.shape)[bad]
        else:
            gain = (ratio * partner[j] - partner[i] * (1.0 + rtol))[bad]
        if np.any(gain <= 0):
            return 1.0
        alpha = max(alpha, float((viol[bad] / (viol[bad] + gain)).max()))
    return alpha


@dataclass
class PerturbationMatrix:
    """An ε-mDP perturbation matrix Z (N × K): ``Z[i, k] = Pr[Q(r_i) = o_k]``.

    Guarantee: for every ordered neighbour pair (d(r_i, r_j) ≤ η) and output k,
    ``Z[i, k] ≤ exp(ε d_ij) Z[j, k]``; by Property 3.2 this extends to
    ``exp(ε D_ij)`` for graph shortest-path distance D between connected records (not to the
    metric d for far-apart pairs). ExpMech matrices satisfy it for all pairs.

    Attributes
    ----------
    matrix : (N, K) float64, rows sum to 1.
    epsilon, eta : the privacy parameters.
    expected_loss : Σ_i Σ_k p_i c_ik Z_ik.
    lower_bound : rigorous lower bound on the LP optimum: for method "lp" the safe dual bound
        of the full LP (independent of the solver's optimality claim), for "benders" the
        master's bound; NaN for heuristics.
    method : how it was computed ("lp", "benders", "expmech").
    output_index : (K,) record index of each output, or None for external output points.
    history : solver history: per-iteration bounds, times, sizes (list of dicts) and a
        ``summary`` dict (times, iterations, repair weight and its utility cost, ...).
    """

    matrix: np.ndarray
    epsilon: float
    eta: float
    expected_loss: float
    lower_bound: float = float("nan")
    method: str = ""
    output_index: np.ndarray | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def n_records(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def n_outputs(self) -> int:
        return int(self.matrix.shape[1])

    @property
    def relative_gap(self) -> float:
        """(expected_loss − lower_bound) / max(1e-300, |expected_loss|) (NaN if no bound)."""
        return (self.expected_loss - self.lower_bound) / max(abs(self.expected_loss), 1e-300)

    # ---------------------------------------------------------------- sampling
    def sample(self, record: int, rng: Any = None) -> int:
        """Draw an output index k for the true record index ``record`` (uses privopt.dp's
        random sources: None, an int seed, a Generator or "secure")."""
        i = check_int("record", record, minimum=0, maximum=self.n_records - 1)
        return int(self.sample_many(np.array([i]), rng)[0])

    def sample_many(self, records: Any, rng: Any = None) -> np.ndarray:
        """Vectorised :meth:`sample` for an int array of record indices → output indices."""
        idx = np.asarray(records)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise InvalidInput("records must be a 1-D int array of record indices")
        if idx.size and (idx.min() < 0 or idx.max() >= self.n_records):
            raise InvalidInput(f"records must lie in [0, {self.n_records})")
        u = _uniforms(idx.size, rng)
        cdf = np.cumsum(self.matrix[idx], axis=1)
        cdf[:, -1] = np.inf  # rows sum to 1 up to rounding: the last output absorbs it
        # First k with cdf_k > u; zero-probability outputs never get chosen (cdf flat there).
        return (cdf <= u[:, None]).sum(axis=1).astype(np.int64)

    # ---------------------------------------------------------------- checks
    def loss(self, problem: MDPProblem) -> float:
        """Expected utility loss Σ p_i c_ik Z_ik under ``problem``'s prior and cost."""
        return float(np.sum(problem.objective * self.matrix))

    def verify(self, problem: MDPProblem) -> Verification:
        """Worst violation of every mDP constraint of ``problem`` (see :class:`Verification`)."""
        _check_shape(self, problem)
        return verify_matrix(self.matrix, problem.edges, problem.epsilon)

    def check(self, problem: MDPProblem, rtol: float = 1e-9) -> None:
        """Raise :class:`PrivacyViolation` unless :meth:`verify` passes at ``rtol``."""
        v = self.verify(problem)
        if not v.ok(rtol):
            raise PrivacyViolation(f"perturbation matrix violates mDP: {v}")

    # ---------------------------------------------------------------- persistence
    def save(self, path: str | Path) -> Path:
        """Write an ``.npz`` with the matrix, parameters, output indices and history (JSON).

        The file is written atomically (temporary file beside it, then renamed): a reader sees
        the previous file or the new one, never a partial one.
        """
        from privopt._atomic import atomic_file

        path = Path(path)
        target = path if path.suffix == ".npz" else path.with_suffix(path.suffix + ".npz")
        with atomic_file(target) as tmp:
            np.savez_compressed(
                tmp,
                matrix=self.matrix,
                epsilon=self.epsilon,
                eta=self.eta,
                expected_loss=self.expected_loss,
                lower_bound=self.lower_bound,
                method=self.method,
                output_index=(
                    np.array([], dtype=np.int64) if self.output_index is None else self.output_index
                ),
                has_output_index=self.output_index is not None,
                history=json.dumps(self.history, default=_json_default),
                summary=json.dumps(self.summary, default=_json_default),
            )
        return target

    @classmethod
    def load(cls, path: str | Path) -> PerturbationMatrix:
        """Read a matrix written by :meth:`save`."""
        with np.load(Path(path), allow_pickle=False) as f:
            return cls(
                matrix=f["matrix"],
                epsilon=float(f["epsilon"]),
                eta=float(f["eta"]),
                expected_loss=float(f["expected_loss"]),
                lower_bound=float(f["lower_bound"]),
                method=str(f["method"]),
                output_index=f["output_index"] if bool(f["has_output_index"]) else None,
                history=json.loads(str(f["history"])),
                summary=json.loads(str(f["summary"])),
            )

    # ---------------------------------------------------------------- plots
    def plot_bounds(self, ax: Any = None) -> Any:
        """Lower/upper bound per Benders iteration (log-scaled gap), from :attr:`history`."""
        from privopt.report import new_figure

        if ax is None:
            _, ax = new_figure(figsize=(6, 3.5))
        it = [h["iteration"] for h in self.history if "lb" in h]
        lb = [h["lb"] for h in self.history if "lb" in h]
        ub = [h.get("best_ub", np.nan) for h in self.history if "lb" in h]
        ax.plot(it, lb, label="lower bound (master)")
        ax.plot(it, ub, label="best upper bound")
        ax.axhline(self.expected_loss, color="k", lw=0.6, ls="--", label="returned loss")
        ax.set_xlabel("iteration")
        ax.set_ylabel("expected loss")
        ax.legend()
        return ax

    def plot_row(self, problem: MDPProblem, record: int, ax: Any = None) -> Any:
        """One row's output distribution on a map (outputs coloured by probability, the true
        record starred). Needs coordinates (records given as points)."""
        from privopt.report import new_figure

        if problem.points is None:
            raise InvalidInput("plot_row needs a problem with record coordinates")
        i = check_int("record", record, minimum=0, maximum=self.n_records - 1)
        out_pts = (
            problem.output_points
            if problem.output_index is None
            else problem.points[problem.output_index]
        )
        xy = (
            (lambda p: (p[:, 1], p[:, 0]))
            if problem.metric == "haversine"
            else (lambda p: (p[:, 0], p[:, 1] if p.shape[1] > 1 else np.zeros(len(p))))
        )
        if ax is None:
            _, ax = new_figure(figsize=(5, 4))
        ax.scatter(*xy(problem.points), s=4, c="0.8", label="records")
        sc = ax.scatter(*xy(out_pts), s=18, c=self.matrix[i], cmap="viridis", label="outputs (Pr)")
        ax.scatter(*xy(problem.points[i : i + 1]), marker="*", s=160, c="r", label="true record")
        ax.figure.colorbar(sc, ax=ax, label=f"Pr[Q(r_{i}) = o_k]")
        if problem.metric == "haversine":
            ax.set_xlabel("longitude")
            ax.set_ylabel("latitude")
        ax.legend(loc="upper right", fontsize=7)
        return ax


def _uniforms(n: int, rng: Any) -> np.ndarray:
    """n uniforms on [0, 1) from privopt.dp's random sources (None, seed, Generator,
    "secure" or a RandomSource), 53 random bits each."""
    from privopt.dp import as_random_source

    return np.asarray(as_random_source(rng).uniform(n), dtype=np.float64).reshape(n)


def _check_shape(pm: PerturbationMatrix, problem: MDPProblem) -> None:
    if pm.matrix.shape != (problem.n_records, problem.n_outputs):
        raise InvalidInput(
            f"matrix shape {pm.matrix.shape} does not match the problem "
            f"({problem.n_records}, {problem.n_outputs})"
        )


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
