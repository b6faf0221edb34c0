"""Least lift of the columns of a matrix onto the mDP cone (Property 3.2 envelope).

For a column ``z`` (one output k) and a rate ρ, the least ``w ≥ z`` with
``w_i ≥ e^{−ρ d_ji} w_j`` on every mDP edge is ``w_i = max_j e^{−ρ D_ij} z_j`` (D the
shortest-path distance on the mDP graph): a shortest-path problem in −log space with sources j
at label −log z_j and arc lengths ρ·d. All K columns are solved by one Dijkstra over K copies
of the graph joined by a super source (scipy.sparse.csgraph), in chunks of columns to bound
memory. Used by row generation (which rows the violations will cascade into) and by the
repair (a feasible partner close to Z).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from privopt.mdp.problem import EdgeList

__all__ = ["column_lift"]

#: Arcs per Dijkstra call (K copies of |E| arcs; bounds temporary memory).
_ARCS_PER_CALL = 4_000_000


def column_lift(z: np.ndarray, edges: EdgeList, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """Least lift of every column of ``z`` (N × K, entries ≥ 0) at decay rate ``rate``.

    Returns
    -------
    (w, parent): ``w`` (N × K) with ``w ≥ z`` and ``w_i ≥ e^{−rate·d_ji} w_j`` on every edge;
    ``parent`` (N × K) the record each entry's value came through (its predecessor on the
    shortest-path tree), ``i`` itself where ``w_ik = z_ik``, −1 where the column is 0 on the
    whole component.
    """
    n, k = z.shape
    arc = np.maximum(rate * edges.d, 1e-300)  # explicit arcs even at d = 0
    w = np.empty((n, k))
    parent = np.empty((n, k), dtype=np.int64)
    step = max(1, _ARCS_PER_CALL // max(len(edges), 1))
    for k0 in range(0, k, step):
        kc = min(step, k - k0)
        w[:, k0 : k0 + kc], parent[:, k0 : k0 + kc] = _lift_chunk(
            np.clip(z[:, k0 : k0 + kc], 0.0, None), edges, arc
        )
    return w, parent


def _lift_chunk(z: np.ndarray, edges: EdgeList, arc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy.sparse.csgraph import dijkstra

    n, kc = z.shape
    copies = n * np.arange(kc, dtype=np.int64)[:, None]
    zt = z.T  # (kc, n): node k·n + i is entry (i, k)
    kk, ii = np.nonzero(zt > 0.0)
    source = n * kc
    g = sp.csr_array(
        (
            np.concatenate(
                [
                    np.broadcast_to(arc, (kc, arc.size)).ravel(),
                    np.maximum(-np.log(zt[kk, ii]), 1e-300),
                ]
            ),
            (
                np.concatenate([(edges.i[None, :] + copies).ravel(), np.full(kk.size, source)]),
                np.concatenate([(edges.j[None, :] + copies).ravel(), kk * n + ii]),
            ),
        ),
        shape=(source + 1, source + 1),
    )
    dist, pred = dijkstra(g, indices=source, return_predecessors=True)
    w = np.exp(-dist[:-1]).reshape(kc, n).T
    pred = pred[:-1].reshape(kc, n)
    node = np.arange(n)[None, :]
    parent = np.where(pred == source, node, np.where(pred >= 0, pred - copies, -1))
    return w, parent.T
