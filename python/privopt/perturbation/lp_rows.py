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
    rows = np.arange(m * k, dtype=np.int64)
    ci = (base_i[:, None] + kk[None, :]).ravel()
    cj = (base_j[:, None] + kk[None, :]).ravel()
    ratio = np.repeat(np.exp(epsilon * edges.d), k)
    keep_i = np.repeat(base_i >= 0, k)
    keep_j = np.repeat(base_j >= 0, k)
    r = np.concatenate([rows[keep_i], rows[keep_j]])
    c = np.concatenate([ci[keep_i], cj[keep_j]])
    v = np.concatenate([np.ones(int(keep_i.sum())), -ratio[keep_j]])
    ncol = n_records * k if n_cols is None else n_cols
    return sp.csr_array((v, (r, c)), shape=(m * k, ncol))


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
