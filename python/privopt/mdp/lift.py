"""Least lift of the columns of a matrix onto the mDP cone (Property 3.2 envelope).

For a column ``z`` (one output k) and a rate ρ, the least ``w ≥ z`` with
``w_i ≥ e^{−ρ d_ji} w_j`` on every mDP edge is ``w_i = max_j e^{−ρ D_ij} z_j`` (D the
shortest-path distance on the mDP graph): a shortest-path problem in −log space with sources j
at label −log z_j and arc lengths ρ·d. Each column is one multi-source Dijkstra over the mDP
graph (a compiled kernel, columns shared out over threads). Used by row generation (which rows
the violations will cascade into) and by the repair (a feasible partner close to Z).

Examples
--------
>>> import numpy as np
>>> from privopt.mdp import MDPProblem
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

from privopt.mdp.problem import EdgeList

__all__ = ["column_lift", "lift_with_arcs"]

#: Columns per kernel call: bounds the per-call buffers and lets threads share the work.
_COLUMNS_PER_TASK = 64


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
