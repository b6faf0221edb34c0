"""Evaluation metrics of LR-Geo (spec 001 §9–11): cost, GV/GVE, Prop. 4.5, ambiguity.

All take plain arrays: the users' matrices ``Z_{N_m}`` (n_m × K), their LR sets (global ids)
and the true cost table c̄ or the metric, so that baselines evaluated on the same rows compare
directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from privopt._validation import (
    check_finite_array,
    check_finite_result,
    check_nonnegative,
    check_positive,
)
from privopt.errors import InvalidInput
from privopt.perturbation.matrix import scan_violations
from privopt.perturbation.problem import EdgeList

__all__ = [
    "expected_cost",
    "real_row_cost",
    "GeoIndViolations",
    "cross_user_violations",
    "prop45_bound",
    "ambiguity_counts",
    "exponential_mass",
]


def _pairs(matrices: Any, others: Any, name: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Validated (matrix, other) pairs: two equally long non-empty lists of finite 2-D
    arrays, each pair of one shape."""
    if not isinstance(matrices, (list, tuple)) or not isinstance(others, (list, tuple)):
        raise InvalidInput(f"matrices and {name} must be lists of arrays")
    if len(matrices) != len(others) or not matrices:
        raise InvalidInput(f"one {name} entry per matrix (and at least one matrix) is needed")
    out = []
    for m, (z, c) in enumerate(zip(matrices, others, strict=True)):
        zz = check_finite_array(f"matrices[{m}]", z, ndim=2)
        cc = check_finite_array(f"{name}[{m}]", c, ndim=2)
        if zz.shape[0] == 0 or cc.shape != zz.shape:
            raise InvalidInput(
                f"matrices[{m}] {zz.shape} and {name}[{m}] {cc.shape} do not match (n_m >= 1)"
            )
        out.append((zz, cc))
    return out


def expected_cost(matrices: list[np.ndarray], costs: list[np.ndarray]) -> float:
    """A9: ``(1/M) Σ_m (1/|N_m|) Σ_{i∈N_m} Σ_k z_ik c̄_ik`` (uniform prior over each LR set),
    with ``costs[m]`` the true c̄ rows of user m (n_m × K), km."""
    pairs = _pairs(matrices, costs, "costs")
    value = float(np.mean([np.sum(z * c) / z.shape[0] for z, c in pairs]))
    return check_finite_result("expected cost", value)


def real_row_cost(matrices: list[np.ndarray], costs: list[np.ndarray]) -> float:
    """``(1/M) Σ_m Σ_k z_{m,k} c̄_{m,k}``: the cost of each user's own row (row 0 of its
    block, v_m itself)."""
    pairs = _pairs(matrices, costs, "costs")
    return check_finite_result("real-row cost", float(np.mean([z[0] @ c[0] for z, c in pairs])))


@dataclass(frozen=True)
class GeoIndViolations:
    """Geo-Ind violations over pairs of LR rows within and across users (Eqs. 34–35).

    Attributes
    ----------
    n_checked, n_violated : constraints scanned and violated (``z_ik − e^{εd} z_jk > tol``).
    n_violated_within, n_violated_across : violations between rows of one user / of two.
    max_gve : largest ``z_ik − e^{εd} z_jk`` (0 when none).
    gve : the violating values (the GVE distribution of Fig. 12).
    all_pairs : whether the γ filter was off (A11, for the Prop. 4.5 comparison).
    max_gve_within, max_gve_across : ``max_gve`` over pairs of rows of one user / of two.
    """

    n_checked: int
    n_violated: int
    n_violated_within: int
    n_violated_across: int
    max_gve: float
    gve: np.ndarray
    all_pairs: bool
    max_gve_within: float = 0.0
    max_gve_across: float = 0.0

    @property
    def gv_ratio(self) -> float:
        """Eq. 34: violated / checked."""
        return self.n_violated / self.n_checked if self.n_checked else 0.0


def cross_user_violations(
    matrices: list[np.ndarray],
    lr_sets: list[np.ndarray],
    distances: Any,
    epsilon: float,
    gamma: float,
    *,
    tol: float = 1e-9,
    all_pairs: bool = False,
) -> GeoIndViolations:
    """Scan ``z_ik ≤ e^{ε d_ij} z_jk`` over all ordered pairs of LR rows (m, i) ≠ (n, j),
    within and across users, with ``d_ij ≤ γ`` (or every pair with ``all_pairs``), all columns.

    ``distances(a, b)`` returns d between global location ids a (r,) and b (c,) as (r, c).
    """
    mats = [z for z, _ in _pairs(matrices, matrices, "matrices")]
    if not isinstance(lr_sets, (list, tuple)) or len(lr_sets) != len(mats):
        raise InvalidInput("lr_sets must be a list with one LR set per matrix")
    sets = [
        check_finite_array(f"lr_sets[{m}]", x, shape=(z.shape[0],), dtype=np.int64)
        for m, (x, z) in enumerate(zip(lr_sets, mats, strict=True))
    ]
    if not callable(distances):
        raise InvalidInput(f"distances must be callable, got {type(distances).__name__}")
    epsilon = check_positive("epsilon", epsilon)
    gamma = check_positive("gamma", gamma, allow_inf=True)
    tol = check_nonnegative("tol", tol)
    stacked = np.vstack(mats)
    loc = np.concatenate(sets)
    owner = np.repeat(np.arange(len(mats)), [z.shape[0] for z in mats])
    d = distances(loc, loc)
    mask = ~np.eye(loc.size, dtype=bool)
    if not all_pairs:
        mask &= d <= gamma
    a, b = np.nonzero(mask)
    same = owner[a] == owner[b]
    scans = [
        scan_violations(
            stacked, EdgeList(a[s], b[s], d[a[s], b[s]]), epsilon, count_tol=tol, collect=True
        )
        for s in (same, ~same)
    ]
    parts = [np.zeros(0) if s.values is None else s.values for s in scans]
    values = np.concatenate(parts)
    return GeoIndViolations(
        scans[0].n_checked + scans[1].n_checked,
        scans[0].n_violated + scans[1].n_violated,
        scans[0].n_violated,
        scans[1].n_violated,
        float(values.max(initial=0.0)),
        values,
        all_pairs,
        float(parts[0].max(initial=0.0)),
        float(parts[1].max(initial=0.0)),
    )


def prop45_bound(column_distances: list[np.ndarray], r_exp: float) -> float:
    """Prop. 4.5 (30): upper bound on the fraction of Geo-Ind constraints over all ordered pairs
    of LR rows (no γ filter) that the exponential entries do not guarantee.

    ``column_distances[m]`` is D_{N_m,V} (n_m × K); A_i = {k : d_ik > r_exp}. Rigorous only at
    γ = ∞ (LR-Geo-F), where every within-user pair satisfies Geo-Ind (spec §9 caveat).
    """
    r_exp = check_nonnegative("r_exp", r_exp)
    if not isinstance(column_distances, (list, tuple)) or not column_distances:
        raise InvalidInput("column_distances must be a non-empty list of (n_m, K) arrays")
    cds = [
        check_finite_array(f"column_distances[{m}]", cd, ndim=2)
        for m, cd in enumerate(column_distances)
    ]
    if any(cd.shape[1] != cds[0].shape[1] for cd in cds):
        raise InvalidInput("every column_distances entry must have the same K columns")
    q = [(cd > r_exp).astype(np.float64) for cd in cds]
    k = q[0].shape[1]
    sizes = np.array([x.shape[0] for x in q], dtype=np.float64)
    total = sizes.sum()
    cross = sum(float(np.sum(q[n] @ q[m].T)) for n in range(len(q)) for m in range(n + 1, len(q)))
    num = 2 * cross + float(np.sum(sizes**2 - sizes)) * k
    den = total * (total - 1) * k
    return 1.0 - num / den if den > 0 else 0.0


def ambiguity_counts(
    uploaded: np.ndarray, candidates: np.ndarray, delta_max: float, *, interval: str = "exact"
) -> np.ndarray:
    """§10: for each uploaded coefficient ĉ, how many candidate β lie in the interval the
    server can infer: ``[ĉ − 2δ_max, ĉ]`` (``"exact"``, A13) or ``[ĉ − δ_max, ĉ + δ_max]``
    (``"paper"``). ``candidates`` are the CR-table β values the server could have matched."""
    if interval not in ("exact", "paper"):
        raise InvalidInput(f"interval must be 'exact' or 'paper', got {interval!r}")
    delta_max = check_nonnegative("delta_max", delta_max)
    beta = np.sort(np.ravel(check_finite_array("candidates", candidates)))
    c = np.ravel(check_finite_array("uploaded", uploaded))
    lo, hi = (c - 2 * delta_max, c) if interval == "exact" else (c - delta_max, c + delta_max)
    return np.searchsorted(beta, hi, side="right") - np.searchsorted(beta, lo, side="left")


def exponential_mass(
    matrices: list[np.ndarray], column_distances: list[np.ndarray], r_exp: float
) -> np.ndarray:
    """Per LR row, the probability mass on exponential entries (d_ik > r_exp), stacked."""
    r_exp = check_nonnegative("r_exp", r_exp)
    pairs = _pairs(matrices, column_distances, "column_distances")
    return np.concatenate([np.where(cd > r_exp, z, 0.0).sum(axis=1) for z, cd in pairs])
