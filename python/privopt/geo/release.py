"""The released CLR-Geo matrices: the LP point made exactly (ε, γ)-Geo-Ind at the least cost.

An LP solver satisfies a scaled Geo-Ind row ``e^{−εd} z_ik − z_jk ≤ 0`` only to its tolerance
(~1e-10), so where ε·d ≈ 20 it may leave ``z_jk = 0`` beside ``z_ik ≈ 1``; rows with
ε·d > ``eps_d_cap`` are not in the LP at all. Mixing every user with one partner at one
weight α fixes this while keeping Thm 4.4, but the weight is ``≈ z_ik e^{−εd} / P_jk``: a
partner with little mass far from row j pays ~1e-6 of the objective (LR-Geo-F, Rome K = 300).

So the release first repairs only where needed: :func:`privopt.mdp.result.repair_shared` with
``free=`` (each user's free-entry mask) *lifts* the violated free entries
(``z_jk ← max(z_jk, e^{−εd_ij} z_ik)`` over the user's Geo-Ind edges, to a fixed point) and
takes the mass it added from the same row's free entries (scaled by one factor per row). Free
entries are the user's own LP variables: no other user's guarantee involves them, and the
exponential entries ``g_ik y_k`` that Thm 4.4 couples across users are left untouched. What the
lift cannot fix (a free entry above an exponential one, rounding of the row scaling) is left to
the shared-weight mix, now with violations of ~1e-10 instead of ~1, so its weight drops by
orders of magnitude.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["release_matrices"]


def release_matrices(model: Any, raw: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
    """The users' released matrices from the LP point: the free-entry lift, then one
    shared-weight mix with the ε/2 ExpMech partner (:func:`privopt.mdp.result.repair_shared`
    with ``free=`` and ``partners=``).

    Parameters
    ----------
    model : the :class:`~privopt.geo.clr.ClrModel` solved.
    raw : per user, Z_{N_m} (n_m × K) assembled from the LP point.

    Returns
    -------
    (matrices, α): the released matrices and the shared mixing weight.
    """
    from privopt.mdp.result import repair_shared

    edges = [model.user_edges(m) for m in range(len(model.blocks))]
    return repair_shared(
        raw,
        edges,
        model.params.epsilon,
        partners=_partners(model),
        free=[b.free for b in model.blocks],
    )


def _partners(model: Any) -> list[np.ndarray]:
    """Repair partners: ExpMech at ε/2, ``P_ik ∝ exp(−ε d_ik / 4)`` per row. Its ratios are at
    most e^{ε d_ij / 2} for *every* pair of rows, of one user or of two, so it has slack
    ``(e^{εd} − e^{εd/2}) P_jk`` on each Geo-Ind row and mixing with it keeps ε-Geo-Ind across
    users; it is near each row's location, hence far cheaper than the uniform mechanism."""
    from scipy.special import log_softmax

    eps = model.params.epsilon
    return [np.exp(log_softmax(-eps * u.column_distances / 4.0, axis=1)) for u in model.uploads]
