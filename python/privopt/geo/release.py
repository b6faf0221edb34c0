"""The released CLR-Geo matrices: the LP point made exactly (ε, γ)-Geo-Ind at the least cost.

An LP solver satisfies a scaled Geo-Ind row ``e^{−εd} z_ik − z_jk ≤ 0`` only to its tolerance
(~1e-10), so where ε·d ≈ 20 it may leave ``z_jk = 0`` beside ``z_ik ≈ 1``; rows with
ε·d > ``eps_d_cap`` are not in the LP at all. Mixing every user with one partner at one
weight α fixes this while keeping Thm 4.4, but the weight is ``≈ z_ik e^{−εd} / P_jk``: a
partner with little mass far from row j pays ~1e-6 of the objective (LR-Geo-F, Rome K = 300).

So the release first repairs only where needed: :func:`privopt.perturbation.matrix.repair_shared`
with
``free=`` (each user's free-entry mask) *lifts* the violated free entries
(``z_jk ← max(z_jk, e^{−εd_ij} z_ik)`` over the user's Geo-Ind edges, to a fixed point) and
takes the mass it added from the same row's free entries (scaled by one factor per row). Free
entries are the user's own LP variables: no other user's guarantee involves them, and the
exponential entries ``g_ik y_k`` that Thm 4.4 couples across users are left untouched. What the
lift cannot fix (a free entry above an exponential one, rounding of the row scaling) is left to
the shared-weight mix, now with violations of ~1e-10 instead of ~1, so its weight drops by
orders of magnitude.

The mix leaves the CLR-Geo model (the partner's far entries are not of the form ``g_ik y_k``),
so the model's lower bound alone does not bound the released cost: :func:`release_lower_bound`
turns it into one that bounds both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import log_softmax

from privopt.perturbation.matrix import repair_shared

__all__ = ["ReleasedMatrices", "release_matrices", "release_lower_bound"]


@dataclass(frozen=True)
class ReleasedMatrices:
    """The repaired user matrices and what the repair did.

    Attributes
    ----------
    matrices : per user, Z_{N_m} (n_m × K), row-stochastic and (ε, γ)-Geo-Ind.
    alpha : the shared mixing weight α ∈ [0, 1] (0: the lift alone sufficed).
    partner_objective : the CLR-Geo objective of the partners mixed in (km, summed over users).
    """

    matrices: list[np.ndarray]
    alpha: float
    partner_objective: float


def release_matrices(model: Any, raw: list[np.ndarray]) -> ReleasedMatrices:
    """The users' released matrices from the LP point: the free-entry lift, then
    one
    shared-weight mix with the ε/2 ExpMech partner
    (:func:`privopt.perturbation.matrix.repair_shared`
    with ``free=`` and ``partners=``).

    Parameters
    ----------
    model : the :class:`~privopt.geo.clr.ClrModel` solved.
    raw : per user, Z_{N_m} (n_m × K) assembled from the LP point.
    """
    edges = [model.user_edges(m) for m in range(len(model.blocks))]
    partners = _partners(model)
    matrices, alpha = repair_shared(
        raw,
        edges,
        model.params.epsilon,
        partners=partners,
        free=[b.free for b in model.blocks],
        check_input=False,  # the model's own matrices and edges
    )
    return ReleasedMatrices(matrices, alpha, model.objective(partners))


def release_lower_bound(model_bound: float, released: ReleasedMatrices, objective: float) -> float:
    """A lower bound that holds for the CLR-Geo model *and* for the matrices released.

    ``model_bound`` (a safe dual bound of the LP solved, which has at most the model's rows)
    bounds every matrix of the model. The release ``(1 − α) C + α P`` — C the lifted LP point,
    which lies in the LP's feasible set up to its tolerance, P the partner — costs at least
    ``(1 − α)·model_bound + α·cost(P)``, which can be *below* ``model_bound`` when the partner is
    cheaper than the model's optimum. The smaller of the two bounds both; taking the minimum
    with the released objective as well absorbs C's tolerance-level infeasibility (a few ulps),
    so that ``objective ≥ lower_bound`` holds by construction. Every value in the minimum that is
    not itself a proven bound is at least ``objective``, so the result is still a proven lower
    bound on the model's optimum, and the certification rule applied to it proves the gap of
    what is released.
    """
    if not math.isfinite(model_bound):
        return model_bound
    mixed = (1.0 - released.alpha) * model_bound + released.alpha * released.partner_objective
    return min(model_bound, mixed, objective)


def _partners(model: Any) -> list[np.ndarray]:
    """Repair partners: ExpMech at ε/2, ``P_ik ∝ exp(−ε d_ik / 4)`` per row. Its ratios are at
    most e^{ε d_ij / 2} for *every* pair of rows, of one user or of two, so it has slack
    ``(e^{εd} − e^{εd/2}) P_jk`` on each Geo-Ind row and mixing with it keeps ε-Geo-Ind across
    users; it is near each row's location, hence far cheaper than the uniform mechanism."""
    eps = model.params.epsilon
    return [np.exp(log_softmax(-eps * u.column_distances / 4.0, axis=1)) for u in model.uploads]
