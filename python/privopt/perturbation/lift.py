"""Least lift of the columns of a matrix onto the mDP cone (Property 3.2 envelope).

For a column ``z`` (one output k) and a rate ρ, the least ``w ≥ z`` with
``w_i ≥ e^{−ρ d_ji} w_j`` on every mDP edge is ``w_i = max_j e^{−ρ D_ij} z_j`` (D the
shortest-path distance on the mDP graph): a shortest-path problem in −log space with sources j
at label −log z_j and arc lengths ρ·d. Each column is one multi-source Dijkstra over the mDP
graph (a compiled kernel, columns shared out over threads). Used by row generation (which rows
the violations will cascade into) and by the repair (a feasible partner close to Z).

:func:`lift_free_entries` is the same least lift restricted to the entries a matrix may change
on its own (LR-Geo's free LP variables), with each row's added mass taken back from its own free
entries: the first step of :func:`privopt.perturbation.matrix.repair_shared` with ``free=``.

Examples
--------
>>> import numpy as np
>>> from privopt.perturbation import MDPProblem
>>> prob = MDPProblem(np.array([[0.0], [1.0], [2.0]]), epsilon=1.0, eta=1.0)
>>> w, parent = column_lift(np.array([[1.0], [0.0], [0.0]]), prob.edges, 1.0)
>>> np.round(w[:, 0], 6).tolist(), parent[:, 0].tolist()
([1.0, 0.367879, 0.135335], [0, 0, 1])
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from privopt.perturbation.problem import EdgeList

__all__ = ["column_lift", "lift_with_arcs", "lift_free_entries"]

#: Columns per kernel call: bounds the per-call buffers and lets threads share the work.
_COLUMNS_PER_TASK = 64

#: Entries (edges × columns) per vectorised step of :func:`lift_free_entries` (bounds memory).
_CHUNK_ENTRIES = 2_000_000


def column_lift(z: np.ndarray, edges: EdgeList, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """Least lift of every column of ``z`` (N × K, entries ≥ 0) at decay rate ``rate``.

    Parameters
    ----------
    z : (N, K) matrix; negative entries count as 0.
    edges : the mDP graph's ordered pairs (i, j) with distances d (arcs i -> j).
    rate : decay rate ρ ≥ 0 per distance unit (ε for the exact cone).

    Returns
    -------
    (w, parent): ``w`` (N × K) with ``w ≥ z`` and ``w_i ≥ e^{−rate·d_ji} w_j`` on every edge;
    ``parent`` (N × K) the record each entry's value came through (its predecessor on the
    shortest-path tree), ``i`` itself where ``w_ik = z_ik``, −1 where the column is 0 on the
    whole component.
    """
    w, parent, _ = lift_with_arcs(z, edges, rate)
    return w, parent


def lift_with_arcs(
    z: np.ndarray, edges: EdgeList, rate: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`column_lift` that also returns, per entry, the index in ``edges`` of the arc its
    value came along (−1 at sources and unreached entries): row generation adds that arc's
    row ``z_pk ≤ e^{εd} z_ik`` when the lift raises the entry (the cascade)."""
    n, k = z.shape
    order = np.argsort(edges.i, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(edges.i, minlength=n), out=indptr[1:])
    heads = np.ascontiguousarray(edges.j[order], dtype=np.int64)
    arc = np.ascontiguousarray(rate * edges.d[order], dtype=np.float64)
    zt = np.ascontiguousarray(np.clip(z, 0.0, None).T)  # (K, N): one column per kernel row
    dist = np.empty((k, n))
    pred = np.empty((k, n), dtype=np.int64)
    pred_arc = np.empty((k, n), dtype=np.int64)
    tasks = [(s, min(s + _COLUMNS_PER_TASK, k)) for s in range(0, k, _COLUMNS_PER_TASK)]

    def run(task: tuple[int, int]) -> None:
        s, e = task
        _lift_kernel(zt[s:e], indptr, heads, arc, dist[s:e], pred[s:e], pred_arc[s:e])

    workers = min(len(tasks), os.cpu_count() or 1)
    if workers > 1:  # the kernel releases the GIL
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(run, tasks))
    else:
        for t in tasks:
            run(t)
    # exp(−(−log z)) rounds: an entry no arc raised keeps its own value exactly (w ≥ z)
    w = np.where(pred == np.arange(n), zt, np.maximum(np.exp(-dist), zt)).T
    arcs = np.full((k, n), -1, dtype=np.int64)
    reached = pred_arc >= 0
    arcs[reached] = order[pred_arc[reached]]
    return w, pred.T.copy(), arcs.T.copy()


@numba.njit(cache=True, nogil=True)
def _lift_kernel(zt, indptr, heads, arc, dist, pred, pred_arc):  # pragma: no cover - compiled
    """Multi-source Dijkstra per row of ``zt`` (a column of Z) in −log space: sources at label
    −log z_i, arcs ``heads`` with lengths ``arc`` in CSR order. Writes the labels, the
    predecessor record (the node itself at a source, −1 unreached) and the CSR arc used."""
    kc, n = zt.shape
    cap = heads.size + n
    key = np.empty(cap)
    node = np.empty(cap, dtype=np.int64)
    done = np.zeros(n, dtype=np.bool_)
    for c in range(kc):
        size = 0
        for i in range(n):
            done[i] = False
            pred_arc[c, i] = -1
            if zt[c, i] > 0.0:
                dist[c, i] = -math.log(zt[c, i])
                pred[c, i] = i
                size = _push(key, node, size, dist[c, i], i)
            else:
                dist[c, i] = math.inf
                pred[c, i] = -1
        while size > 0:
            du, u = key[0], node[0]
            size = _pop(key, node, size)
            if done[u] or du > dist[c, u]:
                continue
            done[u] = True
            for a in range(indptr[u], indptr[u + 1]):
                v = heads[a]
                nd = du + arc[a]
                if nd < dist[c, v]:
                    dist[c, v] = nd
                    pred[c, v] = u
                    pred_arc[c, v] = a
                    size = _push(key, node, size, nd, v)


@numba.njit(cache=True, nogil=True, inline="always")
def _push(key, node, size, k, v):  # pragma: no cover - compiled
    """Binary min-heap insert; returns the new size."""
    pos = size
    while pos > 0:
        parent = (pos - 1) >> 1
        if key[parent] <= k:
            break
        key[pos], node[pos] = key[parent], node[parent]
        pos = parent
    key[pos], node[pos] = k, v
    return size + 1


@numba.njit(cache=True, nogil=True, inline="always")
def _pop(key, node, size):  # pragma: no cover - compiled
    """Remove the heap's minimum; returns the new size."""
    size -= 1
    k, v = key[size], node[size]
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and key[child + 1] < key[child]:
            child += 1
        if key[child] >= k:
            break
        key[pos], node[pos] = key[child], node[child]
        pos = child
    if size > 0:
        key[pos], node[pos] = k, v
    return size


def lift_free_entries(
    z: np.ndarray, free: np.ndarray, edges: EdgeList, epsilon: float, *, keep_row_sums: bool = True
) -> np.ndarray:
    """Least raise of the free entries of a matrix onto its mDP (Geo-Ind) constraints.

    ``w_jk ← max(w_jk, e^{−ε d_ij} w_ik)`` over the edges (i, j) whose target entry (j, k) is
    free, to a fixed point (a max-product Bellman–Ford per column; with every entry free it is
    :func:`column_lift`), then each row's added mass is taken from its free entries by one scale
    factor. Entries that are not free never move.

    Parameters
    ----------
    z : (n, K) matrix, entries ≥ 0 after clipping.
    free : (n, K) bool, the entries that may change.
    edges : the ordered mDP pairs (rows, distance d).
    epsilon : ε (per unit of d).
    keep_row_sums : take each row's added mass from its free entries (one scale factor per
        row); False returns the lift itself.

    Returns
    -------
    (n, K) matrix: on every edge (i, j) and free entry (j, k), ``w_jk ≥ e^{−ε d_ij} w_ik``;
    each row's added mass is taken from its free entries by one scale factor, so row sums
    (and the exponential entries) are unchanged.

    Examples
    --------
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
