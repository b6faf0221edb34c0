"""The released CLR-Geo matrices: the LP point made exactly (ε, γ)-Geo-Ind at the least cost.

An LP solver satisfies a scaled Geo-Ind row ``e^{−εd} z_ik − z_jk ≤ 0`` only to its tolerance
(~1e-10), so where ε·d ≈ 20 it may leave ``z_jk = 0`` beside ``z_ik ≈ 1``; rows with
ε·d > ``eps_d_cap`` are not in the LP at all. Mixing every user with one partner at one
weight α fixes this while keeping Thm 4.4, but the weight is ``≈ z_ik e^{−εd} / P_jk``: a
partner with little mass far from row j pays ~1e-6 of the objective (LR-Geo-F, Rome K = 300).

So the release first repairs only where needed: it *lifts* the violated free entries
(``z_jk ← max(z_jk, e^{−εd_ij} z_ik)`` over the user's Geo-Ind edges, to a fixed point) and
takes the mass it added from the same row's free entries (scaled by one factor per row). Free
entries are the user's own LP variables: no other user's guarantee involves them, and the
exponential entries ``g_ik y_k`` that Thm 4.4 couples across users are left untouched. What the
lift cannot fix (a free entry above an exponential one, rounding of the row scaling) is left to
:func:`privopt.mdp.result.repair_shared`, now with violations of ~1e-10 instead of ~1, so its
weight drops by orders of magnitude.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privopt.mdp.problem import EdgeList

__all__ = ["lift_free_entries", "release_matrices"]

#: Entries (edges × columns) per vectorised lift step (bounds temporary memory).
_CHUNK_ENTRIES = 2_000_000


def lift_free_entries(
    z: np.ndarray, free: np.ndarray, edges: EdgeList, epsilon: float, *, keep_row_sums: bool = True
) -> np.ndarray:
    """Least raise of the free entries of one user's matrix onto its Geo-Ind constraints.

    Parameters
    ----------
    z : (n, K) the user's matrix (rows = its LR set), entries ≥ 0 after clipping.
    free : (n, K) bool, the entries that may change (the LP's free variables).
    edges : the user's ordered Geo-Ind pairs (local rows, d in km).
    epsilon : ε, km⁻¹.
    keep_row_sums : take each row's added mass from its free entries (one scale factor per
        row); False returns the lift itself.

    Returns
    -------
    (n, K) matrix: on every edge (i, j) and free entry (j, k), ``w_jk ≥ e^{−ε d_ij} w_ik``;
    each row's added mass is taken from its free entries by one scale factor, so row sums
    (and the exponential entries) are unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> e = EdgeList(np.array([0, 1]), np.array([1, 0]), np.array([1.0, 1.0]))
    >>> z = np.array([[1.0, 0.0], [0.0, 1.0]])      # violates e^{ε d} on both rows
    >>> w = lift_free_entries(z, np.ones((2, 2), bool), e, np.log(3.0))
    >>> np.round(w, 3).tolist(), bool(np.all(w[0] <= 3.0 * w[1] * (1 + 1e-12)))
    ([[0.75, 0.25], [0.25, 0.75]], True)
    """
    z = np.clip(np.asarray(z, dtype=np.float64), 0.0, None)
    if len(edges) == 0 or not free.any():
        return z
    order = np.argsort(edges.j, kind="stable")
    src, dst = edges.i[order], edges.j[order]
    decay = np.exp(-epsilon * edges.d[order])
    starts = np.flatnonzero(np.r_[True, dst[1:] != dst[:-1]])
    targets = dst[starts]
    w = z.copy()
    # Only a free entry can rise: columns without one (most of V when K is large) are skipped.
    cols = np.flatnonzero(free[targets].any(axis=0))
    step = max(1, _CHUNK_ENTRIES // len(edges))
    for c0 in range(0, cols.size, step):
        _lift_columns(w, free, cols[c0 : c0 + step], src, starts, targets, decay)
    if not keep_row_sums:
        return w
    added = (w - z).sum(axis=1)
    rows = np.flatnonzero(added > 0)
    if rows.size:
        base = np.where(free[rows], z[rows], 0.0).sum(axis=1)
        lifted = base + added[rows]
        scale = np.divide(base, lifted, out=np.zeros_like(base), where=lifted > 0)
        w[rows] = np.where(free[rows], w[rows] * scale[:, None], w[rows])
    return w


def _lift_columns(
    w: np.ndarray,
    free: np.ndarray,
    cols: np.ndarray,
    src: np.ndarray,
    starts: np.ndarray,
    targets: np.ndarray,
    decay: np.ndarray,
) -> None:
    """Max-product Bellman–Ford on columns ``cols`` of ``w`` (in place): at most n − 1 passes,
    each over the columns that still rose in the previous pass."""
    for _ in range(w.shape[0]):
        if cols.size == 0:
            return
        block = w[np.ix_(targets, cols)]
        reach = np.maximum.reduceat(w[np.ix_(src, cols)] * decay[:, None], starts, axis=0)
        raise_ = free[np.ix_(targets, cols)] & (reach > block)
        if not raise_.any():
            return
        w[np.ix_(targets, cols)] = np.where(raise_, reach, block)
        cols = cols[raise_.any(axis=0)]


def release_matrices(model: Any, raw: list[np.ndarray]) -> tuple[list[np.ndarray], float, dict]:
    """The users' released matrices from the LP point: free-entry lift, then one shared-weight
    mix with the ε/2 ExpMech partner (:func:`privopt.mdp.result.repair_shared`).

    Parameters
    ----------
    model : the :class:`~privopt.geo.clr.ClrModel` solved.
    raw : per user, Z_{N_m} (n_m × K) assembled from the LP point.

    Returns
    -------
    (matrices, α, info): the released matrices, the shared mixing weight and how much the lift
    moved (``lift_mass``: the largest mass added to one row).
    """
    from privopt.mdp.result import repair_shared

    eps = model.params.epsilon
    edges = [model.user_edges(m) for m in range(len(model.blocks))]
    lifted = [
        lift_free_entries(z, b.free, e, eps)
        for z, b, e in zip(raw, model.blocks, edges, strict=True)
    ]
    moved = max(
        float(np.abs(w - np.clip(z, 0.0, None)).sum(axis=1).max())
        for w, z in zip(lifted, raw, strict=True)
    )
    matrices, alpha = repair_shared(lifted, edges, eps, partners=_partners(model))
    return matrices, alpha, {"lift_mass": moved}


def _partners(model: Any) -> list[np.ndarray]:
    """Repair partners: ExpMech at ε/2, ``P_ik ∝ exp(−ε d_ik / 4)`` per row. Its ratios are at
    most e^{ε d_ij / 2} for *every* pair of rows, of one user or of two, so it has slack
    ``(e^{εd} − e^{εd/2}) P_jk`` on each Geo-Ind row and mixing with it keeps ε-Geo-Ind across
    users; it is near each row's location, hence far cheaper than the uniform mechanism."""
    from scipy.special import log_softmax

    eps = model.params.epsilon
    return [np.exp(log_softmax(-eps * u.column_distances / 4.0, axis=1)) for u in model.uploads]
