"""Vectorised construction of the monolithic mDP LP (spec 000 §1.3), no loop per constraint."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from privopt.perturbation.problem import EdgeList

__all__ = ["mdp_rows", "unit_rows"]


def mdp_rows(
    edges: EdgeList,
    epsilon: float,
    n_records: int,
    k: int,
    *,
    col_of: np.ndarray | None = None,
    n_cols: int | None = None,
) -> sp.csr_array:
    """Rows ``z_ik - exp(ε d_ij) z_jk ≤ 0`` for every edge and output, row index ``e·K + k``.

    Variables are ``z`` flattened row-major (column ``i·K + k``) unless ``col_of`` maps a record
    to its first column (−1 for records that are not variables, whose terms are dropped).
    Rows are left unscaled on purpose: HiGHS's feasibility tolerance then bounds the absolute
    error on z_ik (a row divided by exp(εd) would allow errors of exp(εd)·tol, spec §7-8).
    """
    m = len(edges)
    kk = np.arange(k, dtype=np.int64)
    base_i = (edges.i * k) if col_of is None else col_of[edges.i]
    base_j = (edges.j * k) if col_of is None else col_of[edges.j]
    ncol = n_records * k if n_cols is None else n_cols
    # Built as CSR directly (no COO sort of 2·m·K entries): row e·K + k holds at most two
    # entries, z_ik (1) and z_jk (−exp(εd)), in column order.
    keep_i, keep_j = base_i >= 0, base_j >= 0
    counts = np.repeat(keep_i.astype(np.int64) + keep_j, k)
    indptr = np.zeros(m * k + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    ci = (base_i[:, None] + kk[None, :]).ravel()
    cj = (base_j[:, None] + kk[None, :]).ravel()
    has_i, has_j = np.repeat(keep_i, k), np.repeat(keep_j, k)
    j_first = np.repeat(keep_i & keep_j & (base_j < base_i), k)
    # The position of each row's i and j entry within the row.
    pos_i = indptr[:-1] + j_first
    pos_j = indptr[:-1] + (has_i & ~j_first)
    indices = np.empty(int(indptr[-1]), dtype=np.int64)
    data = np.empty(int(indptr[-1]))
    indices[pos_i[has_i]] = ci[has_i]
    data[pos_i[has_i]] = 1.0
    indices[pos_j[has_j]] = cj[has_j]
    data[pos_j[has_j]] = -np.repeat(np.exp(epsilon * edges.d), k)[has_j]
    # 32-bit indices where they fit, as SciPy's own conversion picks: the LP assembly and
    # HiGHS take int32, and casting 64-bit indices down costs more than the build.
    fits = max(ncol, int(indptr[-1])) <= np.iinfo(np.int32).max
    if fits:
        indices, indptr = indices.astype(np.int32), indptr.astype(np.int32)
    return sp.csr_array((data, indices, indptr), shape=(m * k, ncol))


def unit_rows(n_records: int, k: int) -> sp.csr_array:
    """Unit-measure rows ``Σ_k z_ik = 1`` (one per record) as an (N, N·K) matrix."""
    return sp.csr_array(
        sp.kron(sp.identity(n_records, format="csr"), np.ones((1, k)), format="csr")
    )


def mdp_rows_subset(
    edges: EdgeList, epsilon: float, k: int, rows: np.ndarray, n_cols: int
) -> sp.csr_array:
    """The mDP rows with flat indices ``rows`` (row ``e·K + k``) as a (len(rows), n_cols) CSR
    matrix, variables row-major; used by lazy row generation."""
    e, kk = np.divmod(rows, k)
    r = np.repeat(np.arange(rows.size, dtype=np.int64), 2)
    c = np.empty(2 * rows.size, dtype=np.int64)
    c[0::2] = edges.i[e] * k + kk
    c[1::2] = edges.j[e] * k + kk
    v = np.empty(2 * rows.size)
    v[0::2] = 1.0
    v[1::2] = -np.exp(epsilon * edges.d[e])
    return sp.csr_array((v, (r, c)), shape=(rows.size, n_cols))
