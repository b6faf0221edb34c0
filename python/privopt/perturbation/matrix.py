"""The released mechanism: :class:`PerturbationMatrix` (sample, verify, repair, save, plot)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from privopt._atomic import atomic_file
from privopt._validation import (
    check_bool,
    check_finite_array,
    check_finite_result,
    check_instance,
    check_int,
    check_nonnegative,
)
from privopt.certify import proven_relative_gap
from privopt.dp import as_random_source
from privopt.dp.categorical import sample_rows
from privopt.errors import InvalidInput, PrivacyViolation
from privopt.geometry import map_km
from privopt.perturbation._scan import mixing_weight, scan_worst
from privopt.perturbation.adversary import (
    InferenceError,
    bayes_inference_error,
    check_distance_table,
    check_prior,
)
from privopt.perturbation.lift import column_lift, lift_free_entries
from privopt.perturbation.problem import EdgeList, MDPProblem
from privopt.release import Guarantee, Release, json_number_back, load
from privopt.report import axes_or_new

__all__ = [
    "PerturbationMatrix",
    "Verification",
    "ViolationScan",
    "repair",
    "repair_shared",
    "restrict_edges",
    "scan_violations",
    "verify_matrix",
]

#: Edges processed per chunk when scanning |E|·K constraints (bounds temporary memory).
_CHUNK_ENTRIES = 4_000_000

#: Decay rate of the repair's lift partner as a fraction of ε (< 1/2 leaves slack; K = N,
#: N = 500: 1/3 -> gap 2.4e-5, 0.25 -> 8.1e-6, 0.15 -> 3.7e-6, 0.1 -> 3.6e-6, 0.45 -> 1.5e-4).
_LIFT_RATE = 0.15


@dataclass(frozen=True)
class Verification:
    """Violations of a perturbation matrix against the mDP LP constraints.

    Attributes
    ----------
    max_relative_violation : max over edges (i, j) and outputs k of
        ``max(0, z_ik − e^{εd_ij} z_jk) / z_ik`` (0 when satisfied; 1 when z_jk = 0 < z_ik).
        A value r means the likelihood ratio exceeds e^{εd} by the factor 1/(1 − r).
    max_absolute_violation : max of ``z_ik − e^{εd_ij} z_jk`` (clipped at 0).
    worst_edge : (i, j, k) of the worst relative violation, or None.
    max_row_sum_error : max_i |Σ_k z_ik − 1|.
    min_entry : smallest entry of Z.
    n_checked : number of constraints scanned, |E|·K.
    n_violated : number of constraints with ``z_ik − e^{εd_ij} z_jk > count_tol``.
    count_tol : the absolute tolerance τ of that count (1e-9).
    """

    max_relative_violation: float
    max_absolute_violation: float
    worst_edge: tuple[int, int, int] | None
    max_row_sum_error: float
    min_entry: float
    n_checked: int = 0
    n_violated: int = 0
    count_tol: float = 1e-9

    @property
    def violation_ratio(self) -> float:
        """n_violated / n_checked (0 when nothing was checked): the GV ratio of the LR-Geo paper
        Eq. 34 over the scanned constraints."""
        return self.n_violated / self.n_checked if self.n_checked else 0.0

    def ok(self, rtol: float = 1e-9, *, row_atol: float = 1e-9) -> bool:
        """True when every mDP ratio holds to relative ``rtol`` and Z is row-stochastic
        (row sums within ``row_atol`` of 1); both tolerances are ``>= 0``."""
        rtol = check_nonnegative("rtol", rtol)
        row_atol = check_nonnegative("row_atol", row_atol)
        return (
            self.max_relative_violation <= rtol
            and self.max_row_sum_error <= row_atol
            and self.min_entry >= 0.0
        )


@dataclass(frozen=True)
class ViolationScan:
    """What one pass over the constraints ``z_ik ≤ e^{εd_ij} z_jk`` found.

    Attributes
    ----------
    max_relative : worst ``max(0, z_ik − e^{εd} z_jk) / z_ik``.
    max_absolute : worst ``max(0, z_ik − e^{εd} z_jk)`` (the GVE maximum, Eq. 35 of the LR-Geo
        paper).
    worst : (i, j, k) of the worst relative violation, or None.
    n_checked : constraints scanned (|E|·K).
    n_violated : constraints with ``z_ik − e^{εd} z_jk > count_tol``.
    values : the violations above ``count_tol`` (the GVE distribution), when collected.
    """

    max_relative: float
    max_absolute: float
    worst: tuple[int, int, int] | None
    n_checked: int
    n_violated: int
    values: np.ndarray | None = None


def scan_violations(
    z: np.ndarray,
    edges: EdgeList,
    epsilon: float,
    *,
    count_tol: float = 1e-9,
    collect: bool = False,
    right: np.ndarray | None = None,
    check_input: bool = True,
) -> ViolationScan:
    """Scan every constraint ``z_ik − e^{ε d_e} z'_jk ≤ 0`` of ``edges`` (vectorised, chunked).

    Parameters
    ----------
    z : (N, K) rows ``i`` of the constraints.
    edges : pairs (i, j) with their distances d (any distance: a neighbour threshold is the
        caller's choice).
    epsilon : ε (1 / distance unit).
    count_tol : a constraint counts as violated when ``z_ik − e^{εd} z'_jk > count_tol``.
    collect : also return the violating values (GVE distribution).
    right : (N', K) rows ``j`` when they come from another matrix (default ``z``), e.g. the
        rows of another user in LR-Geo's cross-user check.
    check_input : validate the arguments (default). privopt's own callers pass False for
        arrays they built themselves (validated once, where they entered).

    Returns
    -------
    ViolationScan

    Raises
    ------
    InvalidInput
        A matrix that is not a finite 2-D real array, edges outside its rows, a bad ε.
    """
    collect = check_bool("collect", collect)
    if check_bool("check_input", check_input):
        z, edges, epsilon, right = _checked_scan_input(z, edges, epsilon, right)
        count_tol = check_nonnegative("count_tol", count_tol)
    zr = z if right is None else right
    if not collect:  # one compiled pass (privopt.perturbation._scan), same arithmetic
        rel, ab, worst, bad = scan_worst(z, edges, epsilon, count_tol, zr)
        return ViolationScan(rel, ab, worst, len(edges) * z.shape[1], bad, None)
    k = z.shape[1]
    worst_rel, worst_abs, where, n_bad = 0.0, 0.0, None, 0
    values: list[np.ndarray] = []
    step = max(1, _CHUNK_ENTRIES // max(k, 1))
    for s in range(0, len(edges), step):
        i, j, d = edges.i[s : s + step], edges.j[s : s + step], edges.d[s : s + step]
        zi = z[i]
        viol = zi - np.exp(epsilon * d)[:, None] * zr[j]
        over = viol > count_tol
        n_bad += int(np.count_nonzero(over))
        if collect and over.any():
            values.append(viol[over])
        np.maximum(viol, 0.0, out=viol)
        if not viol.any():
            continue
        rel = np.divide(viol, zi, out=np.zeros_like(viol), where=zi > 0)
        flat = int(np.argmax(rel))
        if rel.flat[flat] > worst_rel:
            e, kk = divmod(flat, k)
            worst_rel, where = float(rel.flat[flat]), (int(i[e]), int(j[e]), int(kk))
        worst_abs = max(worst_abs, float(viol.max()))
    collected = (np.concatenate(values) if values else np.zeros(0)) if collect else None
    return ViolationScan(worst_rel, worst_abs, where, len(edges) * k, n_bad, collected)


def _checked_scan_input(
    z: Any, edges: Any, epsilon: Any, right: Any
) -> tuple[np.ndarray, EdgeList, float, np.ndarray | None]:
    """The arguments of :func:`scan_violations`, checked once at the public boundary."""
    z = check_finite_array("z", z, ndim=2)
    if right is not None:
        right = check_finite_array("right", right, ndim=2)
        if right.shape[1] != z.shape[1]:
            raise InvalidInput(
                f"right must have the K = {z.shape[1]} columns of z, got shape {right.shape}"
            )
    edges = check_instance("edges", edges, EdgeList).checked(
        max(z.shape[0], 0 if right is None else right.shape[0])
    )
    for field_name, ids, rows in (
        ("i", edges.i, z.shape[0]),
        ("j", edges.j, len(right if right is not None else z)),
    ):
        if ids.size and int(ids.max()) >= rows:
            raise InvalidInput(
                f"edges.{field_name} names row {int(ids.max())}, the matrix has {rows}"
            )
    epsilon = check_nonnegative("epsilon", epsilon)
    edges.check_ratios(epsilon)
    return z, edges, epsilon, right


def verify_matrix(
    z: np.ndarray,
    edges: EdgeList,
    epsilon: float,
    *,
    count_tol: float = 1e-9,
    check_input: bool = True,
) -> Verification:
    """Check Z (N, K) against every mDP constraint of ``edges`` (vectorised, chunked).

    ``check_input=False`` skips the argument checks of :func:`scan_violations` (privopt's own
    callers, for arrays validated where they entered).
    """
    if check_bool("check_input", check_input):
        z, edges, epsilon, _ = _checked_scan_input(z, edges, epsilon, None)
        count_tol = check_nonnegative("count_tol", count_tol)
    scan = scan_violations(z, edges, epsilon, count_tol=count_tol, check_input=False)
    return Verification(
        scan.max_relative,
        scan.max_absolute,
        scan.worst,
        float(np.max(np.abs(z.sum(axis=1) - 1.0))),
        float(z.min()),
        scan.n_checked,
        scan.n_violated,
        count_tol,
    )


def restrict_edges(
    edges: EdgeList, rows: np.ndarray, n_records: int, *, check_input: bool = True
) -> EdgeList:
    """The edges between the records ``rows`` (global ids, distinct), renumbered to positions
    in ``rows`` (the local row numbers of a row-indexed matrix).

    Raises
    ------
    InvalidInput
        ``rows`` not distinct record indices in ``[0, n_records)``, edges outside them.
    """
    if check_bool("check_input", check_input):
        n_records = check_int("n_records", n_records, minimum=0)
        edges = check_instance("edges", edges, EdgeList).checked(n_records)
        rows = np.asarray(rows)
        if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
            raise InvalidInput("rows must be a 1-D int array of record indices")
        if rows.size and (rows.min() < 0 or rows.max() >= n_records):
            raise InvalidInput(f"rows must lie in [0, {n_records})")
        if np.unique(rows).size != rows.size:
            raise InvalidInput("rows must not repeat a record")
    local = np.full(n_records, -1, dtype=np.int64)
    local[rows] = np.arange(rows.size)
    keep = (local[edges.i] >= 0) & (local[edges.j] >= 0)
    return EdgeList(local[edges.i[keep]], local[edges.j[keep]], edges.d[keep])


def _check_stochastic(matrix: Any) -> np.ndarray:
    """A finite (N, K) matrix whose rows are probability distributions (to rounding: 1e-6).

    The tolerance is loose on purpose: solver output and its repair meet it by far (1e-9), while
    any matrix that is not a perturbation matrix at all (unnormalised, negative) is refused.
    """
    z = check_finite_array("matrix", matrix, ndim=2)
    if z.size == 0:
        raise InvalidInput(f"matrix must be a non-empty (N, K) array, got shape {z.shape}")
    if z.min() < -1e-9:
        raise InvalidInput(f"matrix has a negative entry ({float(z.min())!r})")
    err = np.abs(z.sum(axis=1) - 1.0)
    if err.max() > 1e-6:
        i = int(np.argmax(err))
        raise InvalidInput(f"matrix row {i} sums to {float(z[i].sum())!r}, not 1")
    return z


def repair(
    z: np.ndarray,
    edges: EdgeList,
    epsilon: float,
    *,
    rtol: float = 1e-12,
    objective: np.ndarray | None = None,
    check_input: bool = True,
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
       lift at rate ρ = 0.15·ε with rows renormalised
       (:func:`privopt.perturbation.lift.column_lift`;
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

    ``check_input=False`` skips the argument checks (privopt's solvers repair matrices they
    built, against edges of a validated problem).

    Returns
    -------
    (Z', α) — the repaired matrix and the mixing weight (0 when nothing needed repair).
    """
    if check_bool("check_input", check_input):
        z = check_finite_array("z", z, ndim=2)
        edges = check_instance("edges", edges, EdgeList).checked(z.shape[0])
        epsilon = check_nonnegative("epsilon", epsilon)
        edges.check_ratios(epsilon)
    z, sub = _stochastic_equalised(z, edges, epsilon)
    best = _mix(z, edges, sub, epsilon, rtol, objective)
    if best[1] == 0.0:  # nothing violated
        return best
    if objective is not None and epsilon > 0:
        # Step 4: lift Z onto the cone first (exact up to rounding), renormalise, then mix.
        w, _ = column_lift(z, edges, epsilon)
        w /= w.sum(axis=1, keepdims=True)
        lifted = _mix(w, edges, sub, epsilon, rtol, objective)
        if float(np.sum(objective * lifted[0])) < float(np.sum(objective * best[0])):
            best = lifted
    return best


def _checked_shared_input(
    matrices: Any, edges: Any, epsilon: Any
) -> tuple[list[np.ndarray], list[EdgeList], float]:
    """The matrices, edge lists and ε of :func:`repair_shared`, checked at the boundary."""
    if not isinstance(matrices, (list, tuple)) or not isinstance(edges, (list, tuple)):
        raise InvalidInput("matrices and edges must be lists (one edge list per matrix)")
    if len(matrices) != len(edges) or not matrices:
        raise InvalidInput("repair_shared needs one edge list per matrix (and >= 1 matrix)")
    zs = [check_finite_array(f"matrices[{m}]", z, ndim=2) for m, z in enumerate(matrices)]
    es = [
        check_instance(f"edges[{m}]", e, EdgeList).checked(z.shape[0], f"edges[{m}]")
        for m, (z, e) in enumerate(zip(zs, edges, strict=True))
    ]
    epsilon = check_nonnegative("epsilon", epsilon)
    for e in es:
        e.check_ratios(epsilon)
    return zs, es, epsilon


def _stochastic_equalised(
    z: np.ndarray, edges: EdgeList, epsilon: float
) -> tuple[np.ndarray, EdgeList]:
    """Steps 1–2 of :func:`repair`: clip at 0, renormalise rows, and give records joined by
    edges with e^{εd} = 1 (coincident records, or ε = 0) their class's mean row. Returns the
    matrix and the edges with e^{εd} > 1 (the ones that mixing must fix)."""
    z = np.clip(z, 0.0, None)
    z = z / z.sum(axis=1, keepdims=True)
    zero = np.exp(epsilon * edges.d) == 1.0
    if np.any(zero):
        n = z.shape[0]
        g = sp.csr_array((np.ones(int(zero.sum())), (edges.i[zero], edges.j[zero])), shape=(n, n))
        n_comp, lab = connected_components(g, directed=False)
        sums = np.zeros((n_comp, z.shape[1]))
        np.add.at(sums, lab, z)
        z = sums[lab] / np.bincount(lab, minlength=n_comp)[lab, None]
    keep = ~zero
    return z, EdgeList(edges.i[keep], edges.j[keep], edges.d[keep])


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
            if scan_violations(mixed, sub, epsilon, check_input=False).max_relative <= 0.0:
                return mixed, alpha_p
    return (1.0 - alpha_u) * z + alpha_u / k, alpha_u


def _mixing_weight(
    z: np.ndarray, edges: EdgeList, epsilon: float, rtol: float, partner: np.ndarray | None
) -> float:
    """Smallest α with every violated entry of Z fixed by mixing with ``partner``
    (None = the uniform mechanism); 1 where the partner has no slack."""
    return mixing_weight(z, edges, epsilon, rtol, partner)  # one compiled pass


def repair_shared(
    matrices: list[np.ndarray],
    edges: list[EdgeList],
    epsilon: float,
    *,
    rtol: float = 1e-12,
    partners: list[np.ndarray] | None = None,
    free: list[np.ndarray] | None = None,
    check_input: bool = True,
) -> tuple[list[np.ndarray], float]:
    """Repair several matrices with **one** mixing weight α and the uniform partner.

    Each matrix is clipped at 0, its rows renormalised and coincident records' rows averaged
    (steps 1–2 of :func:`repair`), then every matrix becomes
    ``(1 − α) Z_m + α/K`` with the smallest α that fixes the violations of *all* of them
    (step 3 of :func:`repair`, uniform partner). One α for all keeps every ratio that held
    *across* the matrices: if ``a ≤ r·b`` with r ≥ 1 then ``(1−α)a + α/K ≤ r((1−α)b + α/K)``.
    LR-Geo needs this for its users' exponential entries (Thm 4.4), which a
    per-matrix weight or the lift partner would break.

    Parameters
    ----------
    matrices : list of (N_m, K) arrays, the same K for all.
    edges : list of the mDP edges of each matrix (local row numbers).
    epsilon : ε.
    rtol : relative margin aimed for on every repaired constraint.
    partners : optional feasible partners P_m (same shapes, rows summing to 1) to mix with
        instead of the uniform mechanism: ``(1 − α) Z_m + α P_m``. Ratios across matrices are
        kept where both Z and P satisfy them (LR-Geo passes an ExpMech at ε/2, which is
        ε/2-Geo-Ind for all pairs and far cheaper than the uniform mechanism).
    free : optional (N_m, K) bool masks of the entries each matrix may change on its own (no
        ratio across matrices involves them; LR-Geo: the users' free LP variables). Before the
        mix, each matrix's violated free entries are lifted (:func:`privopt.perturbation.lift.
        lift_free_entries`: ``z_jk ← max(z_jk, e^{−εd_ij} z_ik)`` to a fixed point, the added
        mass taken from the row's free entries by one factor), which leaves the other entries,
        and so every cross-matrix ratio among them, untouched. The mix then only fixes what the
        lift cannot (a free entry above a fixed one, the rounding of the row scaling), so α
        drops by orders of magnitude: an LP point violates a row with ε·d ≈ 20 by up to ~1
        (solver tolerance ~1e-10 times e^{εd}), and the mix alone needs
        ``α ≈ z_ik e^{−εd} / P_jk``, ~2e-6 of the objective on LR-Geo-F at Rome K = 300
        against ≤ 1e-6 with the lift first.

    Returns
    -------
    (repaired matrices, α) — α = 0 when nothing needed repair.

    Examples
    --------
    >>> import numpy as np
    >>> e = EdgeList(np.array([0, 1]), np.array([1, 0]), np.array([1.0, 1.0]))
    >>> z = np.array([[1.0, 0.0], [0.0, 1.0]])     # violates e^{ε d} on both rows
    >>> fixed, alpha = repair_shared([z, z.copy()], [e, e], np.log(3.0))
    >>> bool(np.all(fixed[0] <= 3.0 * fixed[0][::-1] + 1e-15)), alpha > 0
    (True, True)
    """
    if check_bool("check_input", check_input):
        matrices, edges, epsilon = _checked_shared_input(matrices, edges, epsilon)
    k = matrices[0].shape[1]
    if any(m.ndim != 2 or m.shape[1] != k for m in matrices):
        raise InvalidInput(f"every matrix must have K = {k} columns")
    if partners is not None and (
        len(partners) != len(matrices)
        or any(p.shape != z.shape for p, z in zip(partners, matrices, strict=True))
    ):
        raise InvalidInput("partners must match the matrices one to one, shape for shape")
    if free is not None:
        if len(free) != len(matrices) or any(
            np.shape(f) != z.shape for f, z in zip(free, matrices, strict=True)
        ):
            raise InvalidInput("free must match the matrices one to one, shape for shape")

        matrices = [
            lift_free_entries(z, np.asarray(f, dtype=bool), e, epsilon)
            for z, f, e in zip(matrices, free, edges, strict=True)
        ]
    clean, alpha = [], 0.0
    for m, (matrix, e) in enumerate(zip(matrices, edges, strict=True)):
        # Coincident records get their mean row: their exponential entries are equal already.
        z, sub = _stochastic_equalised(matrix, e, epsilon)
        clean.append(z)
        partner = None if partners is None else partners[m]
        alpha = max(alpha, _mixing_weight(z, sub, epsilon, rtol, partner))
    alpha = min(1.0, 2.0 * alpha)
    if alpha == 0.0:
        return clean, 0.0
    if partners is None:
        return [(1.0 - alpha) * z + alpha / k for z in clean], alpha
    return [(1.0 - alpha) * z + alpha * p for z, p in zip(clean, partners, strict=True)], alpha


@dataclass(eq=False, repr=False)
class PerturbationMatrix(Release):
    """An ε-mDP perturbation matrix Z (N × K): ``Z[i, k] = Pr[Q(r_i) = o_k]``, as a release.

    Guarantee: for every ordered neighbour pair (d(r_i, r_j) ≤ η) and output k,
    :math:`Z_{ik} ≤ e^{ε d_{ij}} Z_{jk}`; by Property 3.2 this extends to
    :math:`e^{ε D_{ij}}` for graph shortest-path distance D between connected records (not to the
    metric d for far-apart pairs). ExpMech matrices satisfy it for all pairs. LR-Geo's matrices
    state the same inequality as (ε, γ)-Geo-Ind (``kind``), η = γ.

    Attributes
    ----------
    matrix : (N, K) float64, rows sum to 1.
    epsilon, eta : the privacy parameters (ε in 1/distance unit, η in the distance unit).
    expected_loss : Σ_i Σ_k p_i c_ik Z_ik.
    lower_bound : rigorous lower bound on the LP optimum: for method "lp" the safe dual bound
        of the full LP (independent of the solver's optimality claim), for "benders" the
        master's bound; NaN for heuristics.
    method : how it was computed ("lp", "benders", "expmech", "lr-geo", ...).
    output_index : (K,) record index of each output, or None for external output points.
    history : solver history: per-iteration bounds, times, sizes (list of dicts).
    info : the solve's figures: ``status`` and ``relative_gap`` of the certification rule,
        times, iterations, components, repair weight and its utility cost, ...
    row_index : (N,) distinct record indices of the rows when the matrix covers only a subset
        of a problem's records (LR-Geo: a user's block Z_{N_m}, rows = the LR set N_m), or None
        when row i is record i. :meth:`sample`, :meth:`loss` and :meth:`violations` then take
        and check record indices of the whole problem.
    edges : the neighbour pairs among the rows (local row numbers) that the guarantee covers:
        what :meth:`verify` checks the matrix against on its own. None when not known (a
        matrix built by hand; :meth:`violations` takes the problem instead).
    kind : the guarantee's name, ``"epsilon-metric-DP"`` or ``"(epsilon, gamma)-Geo-Ind"``.
    """

    mechanism: ClassVar[str] = "mdp"

    matrix: np.ndarray
    epsilon: float
    eta: float
    expected_loss: float
    lower_bound: float = float("nan")
    method: str = ""
    output_index: np.ndarray | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    row_index: np.ndarray | None = None
    edges: EdgeList | None = None
    kind: str = "epsilon-metric-DP"

    def __post_init__(self) -> None:
        self.matrix = _check_stochastic(self.matrix)
        # The last check before a result is handed out: a loss that overflowed (costs near
        # 1e308) is not an answer. NaN is the documented "no bound" of a heuristic.
        self.expected_loss = float(
            check_finite_result("expected_loss", self.expected_loss, cause="costs near 1e308")
        )
        if not np.isnan(self.lower_bound):
            self.lower_bound = float(check_finite_result("lower_bound", self.lower_bound))
        if self.row_index is not None:
            rows = np.asarray(self.row_index)
            if rows.ndim != 1 or rows.size != self.matrix.shape[0]:
                raise InvalidInput(
                    f"row_index must have shape ({self.matrix.shape[0]},), got {rows.shape}"
                )
            if rows.size and (rows.dtype.kind not in "iu" or rows.min() < 0):
                raise InvalidInput("row_index must hold record indices >= 0")
            if np.unique(rows).size != rows.size:
                raise InvalidInput("row_index must not repeat a record")
            self.row_index = rows.astype(np.int64)
        if self.edges is not None:
            self.edges = check_instance("edges", self.edges, EdgeList).checked(self.n_records)
        if self.kind not in ("epsilon-metric-DP", "(epsilon, gamma)-Geo-Ind"):
            raise InvalidInput(
                f"kind must be 'epsilon-metric-DP' or '(epsilon, gamma)-Geo-Ind', got {self.kind!r}"
            )

    @property
    def n_records(self) -> int:
        """Number of rows (records covered)."""
        return int(self.matrix.shape[0])

    def rows_of(self, records: Any) -> np.ndarray:
        """Row positions of record indices (themselves when there is no ``row_index``).

        Raises
        ------
        InvalidInput
            A record the matrix has no row for.
        """
        idx = np.asarray(records)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise InvalidInput("records must be a 1-D int array of record indices")
        if self.row_index is None:
            if idx.size and (idx.min() < 0 or idx.max() >= self.n_records):
                raise InvalidInput(f"records must lie in [0, {self.n_records})")
            return idx.astype(np.int64)
        order = np.argsort(self.row_index)
        pos = np.searchsorted(self.row_index[order], idx)
        pos = np.minimum(pos, self.row_index.size - 1)
        found = self.row_index[order][pos] == idx
        if not np.all(found):
            raise InvalidInput(
                f"records {idx[~found][:5].tolist()} have no row (row_index covers "
                f"{self.row_index.size} records)"
            )
        return order[pos]

    @property
    def n_outputs(self) -> int:
        """Number of outputs K (columns of the matrix)."""
        return int(self.matrix.shape[1])

    # ---------------------------------------------------------------- the release contract
    @property
    def guarantee(self) -> Guarantee:
        """ε-metric DP (or (ε, γ)-Geo-Ind) over the neighbour pairs within η."""
        radius = "gamma" if self.kind.endswith("Geo-Ind") else "eta"
        unit = str(self.info.get("distance_unit", ""))
        return Guarantee(
            self.kind,
            {"epsilon": float(self.epsilon), radius: float(self.eta)},
            f"any two records within {radius} = {self.eta:g} {unit or 'distance units'} of "
            "each other: the probability of each report differs between them by a factor of "
            "at most e^(epsilon·d), d their distance",
            unit=unit,
        )

    @property
    def status(self) -> str | None:
        """The certification status of the solve (None for a heuristic such as ExpMech)."""
        status = self.info.get("status")
        return None if status is None else str(status)

    @property
    def relative_gap(self) -> float | None:
        """The proven relative gap (the certification rule's), None without a bound."""
        gap = self.info.get("relative_gap")
        if gap is not None:
            return float(gap)
        if np.isnan(self.lower_bound):
            return None
        return proven_relative_gap(self.expected_loss, self.lower_bound)

    @property
    def timings(self) -> dict[str, float]:
        """Seconds: ``total`` of the solve (when recorded)."""
        return {"total": float(self.info["time_s"])} if "time_s" in self.info else {}

    def describe(self) -> str:
        """What was released, in one line."""
        rows = f"{self.n_records:,} records × {self.n_outputs:,} outputs"
        return f"perturbation matrix ({rows}, method {self.method or 'given'})"

    def verify(self) -> PerturbationMatrix:
        """Check every ratio of the guarantee against the stored :attr:`edges` (to a relative
        1e-9) and that every row is a distribution; raise
        :class:`~privopt.errors.PrivacyViolation` if not, else return self."""
        if self.edges is None:
            raise InvalidInput(
                "this matrix stores no neighbour pairs (edges): check it against its problem "
                "with violations(problem)"
            )
        v = verify_matrix(self.matrix, self.edges, self.epsilon, check_input=False)
        if not v.ok(1e-9):
            raise PrivacyViolation(f"perturbation matrix violates its guarantee: {v}")
        return self

    def _summary_fields(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "records": self.n_records,
            "outputs": self.n_outputs,
            "epsilon": self.epsilon,
            "eta": self.eta,
            "expected_loss": self.expected_loss,
            "lower_bound": None if np.isnan(self.lower_bound) else self.lower_bound,
            "neighbour_pairs": None if self.edges is None else len(self.edges),
        }

    def plot(self, ax: Any = None) -> Any:
        """The matrix as an image: rows (true records) against outputs, colour = log10 of the
        probability of reporting that output."""
        ax = axes_or_new(ax, figsize=(5.5, 4.5))
        shown = np.log10(np.maximum(self.matrix, 1e-12))
        image = ax.imshow(shown, aspect="auto", interpolation="nearest", cmap="viridis")
        ax.figure.colorbar(image, ax=ax, label="log10 Pr[report output | true record]")
        ax.set_xlabel("output (reported value), index")
        ax.set_ylabel("true record, index")
        ax.set_title(f"Perturbation matrix, {self.kind}, ε = {self.epsilon:g}")
        return ax

    def _state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        meta = {
            "epsilon": float(self.epsilon),
            "eta": float(self.eta),
            "expected_loss": self.expected_loss,
            "lower_bound": None if np.isnan(self.lower_bound) else self.lower_bound,
            "method": self.method,
            "kind": self.kind,
            "history": json.loads(json.dumps(self.history, default=_json_default)),
            "info": json.loads(json.dumps(self.info, default=_json_default)),
        }
        data: dict[str, Any] = {"matrix": self.matrix}
        if self.output_index is not None:
            data["output_index"] = np.asarray(self.output_index, dtype=np.int64)
        if self.row_index is not None:
            data["row_index"] = self.row_index
        if self.edges is not None:
            data.update(edges_i=self.edges.i, edges_j=self.edges.j, edges_d=self.edges.d)
        return meta, data

    @classmethod
    def _from_state(cls, meta: dict[str, Any], data: dict[str, Any]) -> PerturbationMatrix:
        edges = None
        if "edges_i" in data:
            edges = EdgeList(data["edges_i"], data["edges_j"], data["edges_d"])
        bound = meta.get("lower_bound")
        return cls(
            matrix=data["matrix"],
            epsilon=json_number_back(meta["epsilon"]),
            eta=json_number_back(meta["eta"]),
            expected_loss=json_number_back(meta["expected_loss"]),
            lower_bound=float("nan") if bound is None else float(bound),
            method=str(meta.get("method", "")),
            output_index=data.get("output_index"),
            history=list(meta.get("history", [])),
            info=dict(meta.get("info", {})),
            row_index=data.get("row_index"),
            edges=edges,
            kind=str(meta.get("kind", "epsilon-metric-DP")),
        )

    # ---------------------------------------------------------------- sampling
    def sample(self, record: int, rng: Any = None) -> int:
        """Draw an output index k for the true record ``record``, with probability exactly
        ``matrix[row, k] / Σ_j matrix[row, j]`` (the stored row over its exact sum: stored
        probabilities sum to 1 only up to rounding; an entry ≤ 0 has probability 0).

        The draw is integer arithmetic on uniform random bits
        (:func:`privopt.dp.sample_categorical`), as privopt's DP samplers are: no
        floating-point rounding shifts any output's probability.

        ``rng``: None (default) draws from the operating system's cryptographic source
        (:class:`privopt.dp.SecureSource`), as a real release must; an int seed or a numpy
        Generator make draws reproducible (for tests); "secure" or any
        :class:`privopt.dp.RandomSource` are used as given.
        """
        check_int("record", record, minimum=0)
        return int(self.sample_many(np.array([int(record)]), rng)[0])

    def sample_many(self, records: Any, rng: Any = None) -> np.ndarray:
        """Vectorised :meth:`sample`: a 1-D int array of record indices (n,) → output indices
        (int64, (n,)), independent draws, each exact."""
        rows = self.rows_of(records)
        source = as_random_source("secure" if rng is None else rng)
        return sample_rows(self.matrix, rows, source)

    # ---------------------------------------------------------------- checks
    def loss(self, problem: MDPProblem) -> float:
        """Expected utility loss Σ p_i c_ik Z_ik under ``problem``'s prior and cost (over the
        rows' records)."""
        _check_shape(self, problem)
        obj = problem.objective if self.row_index is None else problem.objective[self.row_index]
        loss = float(np.sum(obj * self.matrix))
        return float(check_finite_result("loss", loss, cause="costs near 1e308"))

    def inference_error(
        self, problem: MDPProblem, prior: Any = None, *, distances: Any = None
    ) -> InferenceError:
        """The Bayes-optimal adversary's view of this release (Shokri et al. 2011): its
        expected distance error when it sees one report and guesses the true record, and the
        probability that the report is the true record's place
        (:mod:`privopt.perturbation.adversary`).

        Parameters
        ----------
        problem : the problem the matrix was computed for (records, outputs, metric).
        prior : (n,) the adversary's prior over this matrix's rows (the records, or those of
            ``row_index``), a probability vector; None (default) for uniform. Pass
            ``problem.prior`` for the prior the mechanism was optimised for.
        distances : optional (n, G) loss table of the adversary: ``d(row i, guess g)`` ≥ 0,
            e.g. travel distances on a road graph (the road-aware adversary), its guess set
            being the G columns. Default: the problem's metric, with every record of the
            problem and every output that is not a record as a candidate guess (records
            first, then the outputs, in the problem's order).

        Returns
        -------
        InferenceError
            ``expected_error`` in the unit of the distances (the metric's: km for Haversine),
            ``true_report_probability`` (reports at distance 0 from the true record), each
            report's probability and the adversary's guess for it.

        Raises
        ------
        InvalidInput
            A matrix whose shape does not fit the problem, a prior that is not a probability
            vector over the rows, a loss table of the wrong shape, negative or infinite (a
            graph metric with unreachable records: evaluate each component on its own).

        Examples
        --------
        >>> import numpy as np
        >>> prob = MDPProblem(np.array([[0.0], [1.0]]), epsilon=1.0, eta=1.0)
        >>> pm = PerturbationMatrix(np.eye(2), 1.0, 1.0, 0.0)
        >>> pm.inference_error(prob).expected_error      # the report is the truth
        0.0
        """
        _check_shape(self, problem)
        rows = np.arange(self.n_records) if self.row_index is None else self.row_index
        p = check_prior(prior, self.n_records)
        same = problem.output_distances[rows] == 0.0
        if distances is None:
            table, loss = _metric_guess_table(problem, self.row_index), "metric"
        else:
            table, loss = check_distance_table("distances", distances, self.n_records), "given"
        return bayes_inference_error(
            self.matrix, p, table, same_place=same, loss=loss, check_input=False
        )

    def violations(
        self, problem: MDPProblem | None = None, *, count_tol: float = 1e-9
    ) -> Verification:
        """Violations of every mDP constraint of ``problem`` (default: the stored
        :attr:`edges`) between the matrix's rows (see :class:`Verification`; ``count_tol`` is
        the tolerance of its violation count)."""
        count_tol = check_nonnegative("count_tol", count_tol)
        if problem is None:
            if self.edges is None:
                raise InvalidInput("this matrix stores no neighbour pairs: pass its problem")
            return verify_matrix(
                self.matrix, self.edges, self.epsilon, count_tol=count_tol, check_input=False
            )
        _check_shape(self, problem)
        edges = problem.edges
        if self.row_index is not None:
            edges = restrict_edges(edges, self.row_index, problem.n_records, check_input=False)
        return verify_matrix(
            self.matrix, edges, problem.epsilon, count_tol=count_tol, check_input=False
        )

    def check(self, problem: MDPProblem, rtol: float = 1e-9) -> None:
        """Raise :class:`PrivacyViolation` unless :meth:`violations` passes at ``rtol``."""
        v = self.violations(problem)
        if not v.ok(rtol):
            raise PrivacyViolation(f"perturbation matrix violates mDP: {v}")

    # ---------------------------------------------------------------- persistence
    def save(self, path: str | Path) -> Path:
        """Write the release: a directory (``release.json`` and ``data.npz``), or one ``.npz``
        file when ``path`` ends in ``.npz`` (the same arrays plus the description as the entry
        ``release_json``). Atomic either way; returns the path written."""
        target = Path(path)
        if target.suffix != ".npz":
            return super().save(target)

        with atomic_file(target) as tmp:
            self._write_npz(tmp)
        return target

    @classmethod
    def load(cls, path: str | Path) -> PerturbationMatrix:
        """Read a matrix written by :meth:`save` (a directory or an ``.npz`` file)."""
        release = load(path)
        if not isinstance(release, cls):
            raise InvalidInput(f"{str(path)!r} holds a {type(release).__name__}, not a matrix")
        return release

    # ---------------------------------------------------------------- plots
    def plot_bounds(self, ax: Any = None) -> Any:
        """Lower/upper bound per Benders iteration (log-scaled gap), from :attr:`history`."""
        ax = axes_or_new(ax, figsize=(6, 3.5))
        it = [h["iteration"] for h in self.history if "lb" in h]
        lb = [h["lb"] for h in self.history if "lb" in h]
        ub = [h.get("best_ub", np.nan) for h in self.history if "lb" in h]
        ax.plot(it, lb, label="lower bound (master)")
        ax.plot(it, ub, label="best upper bound")
        ax.axhline(self.expected_loss, color="k", lw=0.6, ls="--", label="returned loss")
        ax.set_xlabel("Benders iteration")
        ax.set_ylabel("expected loss (distance units)")
        ax.set_title("Proven lower and best upper bound on the loss")
        ax.legend()
        return ax

    def plot_row(self, problem: MDPProblem, record: int, ax: Any = None) -> Any:
        """One row's output distribution on a map (outputs coloured by probability, the true
        record starred). Needs coordinates (records given as points)."""
        check_instance("problem", problem, MDPProblem)
        if problem.points is None:
            raise InvalidInput("plot_row needs a problem with record coordinates")
        check_int("record", record, minimum=0)
        i = int(record)
        row = int(self.rows_of(np.array([i]))[0])
        out_pts = (
            problem.output_points
            if problem.output_index is None
            else problem.points[problem.output_index]
        )
        centre = problem.points.min(axis=0) / 2 + problem.points.max(axis=0) / 2

        def xy(p: Any) -> tuple[np.ndarray, np.ndarray]:
            return map_km(p, problem.metric, origin=centre)

        ax = axes_or_new(ax, figsize=(5.5, 4.5))
        ax.scatter(*xy(problem.points), s=4, c="0.8", label="records")
        sc = ax.scatter(*xy(out_pts), s=18, c=self.matrix[row], cmap="viridis", label="outputs")
        ax.scatter(*xy(problem.points[i : i + 1]), marker="*", s=160, c="r", label="true record")
        ax.figure.colorbar(sc, ax=ax, label=f"probability that record {i} is reported as it")
        haversine = problem.metric == "haversine"
        ax.set_xlabel("km east of the map centre" if haversine else "x (distance units)")
        ax.set_ylabel("km north of the map centre" if haversine else "y (distance units)")
        if problem.points.ndim == 2 and problem.points.shape[1] == 2:
            ax.set_aspect("equal", adjustable="datalim")  # a map: true distances
        ax.set_title(f"Where record {i} is reported (optimal mechanism)")
        # Below the axes, so that the legend never covers an output.
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.15), fontsize=7, ncol=3, frameon=False)
        return ax


def _metric_guess_table(problem: MDPProblem, rows: np.ndarray | None) -> np.ndarray:
    """(n, G) metric distances from the records ``rows`` (None: all, in order) to every
    candidate guess: all records of the problem, then the outputs that are not records
    (coordinate outputs)."""
    table = problem.distances if rows is None else problem.distances[rows]
    if problem.output_index is None:  # outputs are points of their own: guesses too
        to_outputs = problem.output_distances if rows is None else problem.output_distances[rows]
        table = np.hstack([table, to_outputs])
    n = problem.n_records if rows is None else rows.size
    return check_distance_table("the problem's distances", table, n)


def _check_shape(pm: PerturbationMatrix, problem: Any) -> None:
    """The problem a method was given: an :class:`MDPProblem` whose records and outputs the
    matrix covers (InvalidInput naming what does not fit)."""
    check_instance("problem", problem, MDPProblem)
    if pm.row_index is None:
        want = (problem.n_records, problem.n_outputs)
    else:
        want = (pm.row_index.size, problem.n_outputs)
        if pm.row_index.size and pm.row_index.max() >= problem.n_records:
            raise InvalidInput(
                f"row_index holds record {int(pm.row_index.max())}, the problem has "
                f"{problem.n_records} records"
            )
    if pm.matrix.shape != want:
        raise InvalidInput(f"matrix shape {pm.matrix.shape} does not match the problem {want}")


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
