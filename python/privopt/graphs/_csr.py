"""Graphs as validated CSR arrays: checks, symmetrisation, edge lists, components.

The layer below :class:`~privopt.graphs.Graph`, which stores what these functions return.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from privopt._validation import check_bool, check_finite_array, check_int, numeric_array
from privopt.errors import InvalidInput

__all__ = [
    "as_square_csr",
    "symmetrised",
    "connected_components",
    "graph_from_edges",
    "to_csr_arrays",
    "check_length_total",
]


#: Largest total of the arc lengths accepted. Dijkstra adds lengths along a path, and a
#: shortest path uses each arc at most once, so every distance is at most the total; half the
#: float64 range leaves room for the rounding of those sums. Beyond it a sum could overflow to
#: inf, which reads as "unreachable".
MAX_TOTAL_LENGTH = np.finfo(np.float64).max / 2


def check_length_total(name: str, lengths: np.ndarray) -> None:
    """Refuse finite, non-negative arc ``lengths`` whose total exceeds
    :data:`MAX_TOTAL_LENGTH` (a path sum could overflow to inf)."""
    with np.errstate(over="ignore"):
        total = float(np.sum(lengths))
    if not total <= MAX_TOTAL_LENGTH:
        raise InvalidInput(
            f"{name}: the arc lengths add up to more than {MAX_TOTAL_LENGTH:.3g} (half the "
            "float64 range), so a shortest-path length could overflow to inf and a reachable "
            "node would read as unreachable; express the lengths in a larger unit"
        )


def as_square_csr(graph: Any, name: str = "graph") -> sp.csr_array:
    """``graph`` as a float64 CSR array after every check of a graph (square, n ≥ 1, lengths
    finite, >= 0 and with a total that cannot overflow); InvalidInput names what is wrong."""
    if not (sp.issparse(graph) or isinstance(graph, np.ndarray)):
        raise InvalidInput(
            f"{name} must be a scipy.sparse matrix or a 2-D numpy array, got {type(graph).__name__}"
        )
    if isinstance(graph, np.ndarray):
        # Dense input follows scipy.sparse.csgraph: zero entries are "no arc".
        graph = sp.csr_array(numeric_array(name, graph))
    if graph.ndim != 2 or graph.shape[0] != graph.shape[1]:
        raise InvalidInput(f"{name} must be square (n × n), got shape {graph.shape}")
    if graph.shape[0] == 0:
        raise InvalidInput(f"{name} is empty (0 nodes)")
    csr = sp.csr_array(graph)
    numeric_array(f"{name} arc lengths", csr.data)  # bool or complex lengths are not cast
    csr = sp.csr_array(csr, dtype=np.float64)
    data = csr.data
    if data.size:
        bad = ~np.isfinite(data) | (data < 0)
        if np.any(bad):
            pos = int(np.flatnonzero(bad)[0])
            row = int(np.searchsorted(csr.indptr, pos, side="right") - 1)
            raise InvalidInput(
                f"{name} has an invalid arc length (NaN, infinite or negative) on arc "
                f"({row}, {int(csr.indices[pos])}); lengths must be finite and >= 0"
            )
        check_length_total(name, data)
    return csr


def to_csr_arrays(
    graph: Any, *, directed: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated ``(indptr, indices, weights)`` int64/int64/float64 arrays of ``graph``.

    With ``directed=False`` every arc is usable in both directions (as in
    ``scipy.sparse.csgraph``): the arrays hold ``A`` and ``Aᵀ`` side by side.
    """
    csr = as_square_csr(graph)
    if not check_bool("directed", directed):
        csr = symmetrised(csr)
    return (
        csr.indptr.astype(np.int64),
        csr.indices.astype(np.int64),
        np.ascontiguousarray(csr.data, dtype=np.float64),
    )


def symmetrised(csr: sp.csr_array) -> sp.csr_array:
    """``csr`` with every arc also stored reversed (undirected search on a directed store)."""
    # Keep both directions as parallel arcs (no summing of duplicates): Dijkstra takes the
    # shorter one, which is scipy's undirected semantics.
    coo = csr.tocoo()
    rows = np.concatenate([coo.row, coo.col])
    cols = np.concatenate([coo.col, coo.row])
    vals = np.concatenate([coo.data, coo.data])
    order = np.lexsort((cols, rows))
    n = csr.shape[0]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, rows + 1, 1)
    np.cumsum(indptr, out=indptr)
    out = sp.csr_array((vals[order], cols[order].astype(np.int64), indptr), shape=csr.shape)
    return out


def connected_components(graph: Any, *, directed: bool = False) -> tuple[int, np.ndarray]:
    """Connected components of ``graph`` (weakly connected when ``directed`` is False).

    Returns
    -------
    (n_components, labels) with labels an int64 array of shape (n,), numbered 0.. in order of
    each component's smallest node.
    """
    csr = as_square_csr(graph)
    directed = check_bool("directed", directed)
    n_comp, labels = csgraph.connected_components(
        csr, directed=directed, connection="weak" if not directed else "strong"
    )
    # Renumber by first occurrence so that labels are deterministic and ordered.
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first)
    remap = np.empty(n_comp, dtype=np.int64)
    remap[order] = np.arange(n_comp)
    return int(n_comp), remap[labels]


def graph_from_edges(
    n_nodes: int, u: Any, v: Any, length: Any, *, directed: bool = False
) -> sp.csr_array:
    """Sparse n × n graph from edge lists (u[e], v[e], length[e]); parallel edges keep the
    shortest; undirected graphs get both directions."""
    n = check_int("n_nodes", n_nodes, minimum=1)
    directed = check_bool("directed", directed)
    u = check_finite_array("u", u, ndim=1, dtype=np.int64)
    v = check_finite_array("v", v, shape=(u.size,), dtype=np.int64)
    w = check_finite_array("length", length, shape=(u.size,))
    if u.size and (min(u.min(), v.min()) < 0 or max(u.max(), v.max()) >= n):
        raise InvalidInput(f"edge endpoints must lie in [0, {n})")
    if np.any(w < 0):
        raise InvalidInput("length must be >= 0")
    check_length_total("length", w)
    if not directed:
        u, v, w = np.concatenate([u, v]), np.concatenate([v, u]), np.concatenate([w, w])
    # Keep the shortest of parallel arcs: sort by (u, v, w) and take the first of each pair.
    order = np.lexsort((w, v, u))
    u, v, w = u[order], v[order], w[order]
    keep = np.ones(u.size, dtype=bool)
    keep[1:] = (u[1:] != u[:-1]) | (v[1:] != v[:-1])
    u, v, w = u[keep], v[keep], w[keep]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, u + 1, 1)
    np.cumsum(indptr, out=indptr)
    return sp.csr_array((w, v, indptr), shape=(n, n))
