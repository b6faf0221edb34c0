"""Which mDP rows the exact LP needs, and which of them a point violates (compiled kernels).

* :func:`closed_edges` — the shortest-path-closed edges of the mDP graph (spec 000 Property
  3.2): an edge (i, j) whose length is matched by a two-hop path i → m → j through shorter
  edges carries a row implied by the rows of that path (the ratio bounds multiply along it), so
  the LP over the remaining edges has the same feasible set. On a grid with η = 2 cells a third
  of the edges go (the straight two-cell ones); such implied rows also make the LP degenerate
  wherever both shorter rows bind.
* :func:`violated_rows` — the rows ``e^{−εd} z_ik − z_jk > tol`` of a point, in the scaled
  form the LP holds them (largest coefficient 1), skipping rows already in the model.
"""

from __future__ import annotations

import numba
import numpy as np

from privopt.perturbation.problem import EdgeList

__all__ = ["closed_edges", "violated_rows"]

#: Relative slack on d_im + d_mj ≤ d_ij: float sums of distances that are equal in exact
#: arithmetic differ by a few units in the last place. The implied row is then weaker than
#: the dropped one by a factor e^{εd·4.4e-16} at most — rounding level (the dropped LP is a
#: relaxation either way, so its bound stays valid).
CLOSURE_SLACK = 2.0**-50


def closed_edges(edges: EdgeList, distances: np.ndarray) -> np.ndarray:
    """Indices of the edges not implied by a two-hop path through shorter edges.

    Parameters
    ----------
    edges : ordered pairs (i, j) with their distances d (the mDP graph of a block).
    distances : (n, n) metric distances of the block's records (the same d on the edges).

    Returns
    -------
    int64 array of indices into ``edges``, increasing.

    Notes
    -----
    Edge (i, j) is dropped when some m has ``d_im < d_ij``, ``d_mj < d_ij`` and
    ``d_im + d_mj ≤ d_ij (1 + 2^-50)``: both shorter pairs are edges (their distance is below
    d_ij ≤ η), and ``z_i ≤ e^{εd_im} z_m ≤ e^{ε(d_im + d_mj)} z_j`` implies its row. Longer
    alternative paths need no search: if i → a → b → j is no longer than d_ij, so is the two-hop
    path i → b → j. Every dropped edge is implied by strictly shorter ones, so the chain of
    implications ends in kept edges. Records at distance 0 are never a middle record (their
    pairs are not shorter on both sides).

    Examples
    --------
    >>> import numpy as np
    >>> from privopt.perturbation import MDPProblem
    >>> prob = MDPProblem(np.array([[0.0], [1.0], [2.0]]), epsilon=1.0, eta=2.0)
    >>> e = prob.edges
    >>> keep = closed_edges(e, prob.distances)
    >>> sorted(zip(e.i[keep].tolist(), e.j[keep].tolist()))   # (0, 2) and (2, 0) are implied
    [(0, 1), (1, 0), (1, 2), (2, 1)]
    """
    n = distances.shape[0]
    order = np.argsort(edges.i, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(edges.i, minlength=n), out=indptr[1:])
    keep = _closed_kernel(
        indptr,
        np.ascontiguousarray(edges.j[order]),
        np.ascontiguousarray(edges.d[order]),
        np.ascontiguousarray(distances, dtype=np.float64),
        np.ascontiguousarray(edges.i),
        np.ascontiguousarray(edges.j),
        np.ascontiguousarray(edges.d, dtype=np.float64),
        1.0 + CLOSURE_SLACK,
    )
    return np.flatnonzero(keep)


@numba.njit(cache=True, nogil=True)
def _closed_kernel(indptr, nbr, nbr_d, dist, ei, ej, ed, slack):  # pragma: no cover - compiled
    keep = np.ones(ei.size, dtype=np.bool_)
    for e in range(ei.size):
        i, j, dij = ei[e], ej[e], ed[e]
        limit = dij * slack
        for a in range(indptr[i], indptr[i + 1]):
            m, dim = nbr[a], nbr_d[a]
            if m == j or not dim < dij:
                continue
            dmj = dist[m, j]
            if dmj < dij and dim + dmj <= limit:
                keep[e] = False
                break
    return keep


def violated_rows(
    z: np.ndarray,
    edges: EdgeList,
    scale: np.ndarray,
    active: np.ndarray,
    tol: float,
) -> np.ndarray:
    """Flat indices ``e·K + k`` of the rows ``scale_e z_ik − z_jk > tol`` not yet ``active``.

    Parameters
    ----------
    z : (n, K) point, C-contiguous.
    edges : the rows' edges (i, j).
    scale : (|E|,) the row scales e^{−εd_e} (so the row's largest coefficient is 1).
    active : (|E|·K,) bool, rows already in the model (skipped).
    tol : violation threshold on the scaled row.

    Returns
    -------
    int64 array, increasing.
    """
    z = np.ascontiguousarray(z, dtype=np.float64)
    args = (z, edges.i, edges.j, scale, active, float(tol))
    count = _violations_kernel(*args, np.zeros(0, dtype=np.int64))
    out = np.empty(count, dtype=np.int64)
    _violations_kernel(*args, out)
    return out


@numba.njit(cache=True, nogil=True)
def _violations_kernel(z, ei, ej, scale, active, tol, out):  # pragma: no cover - compiled
    """Counts the violated inactive rows; also writes them when ``out`` has room."""
    k = z.shape[1]
    fill = out.size > 0
    count = 0
    for e in range(ei.size):
        i, j, s = ei[e], ej[e], scale[e]
        base = e * k
        for kk in range(k):
            if s * z[i, kk] - z[j, kk] > tol and not active[base + kk]:
                if fill:
                    out[count] = base + kk
                count += 1
    return count
