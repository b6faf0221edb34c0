"""The paper's big-M MILP, eqs. 22–28 with the spec's resolutions (§1.3, §7.2–7.4).

Boxes ``L ≤ y ≤ x ≤ z ≤ U`` are variable bounds (§7.2), one binary ``v_il`` per unordered pair
(§7.4), four big-M rows per pair and attribute (22)–(25) with ``M^y = max(x_i, x_l) − L``,
``M^z = U − min(x_i, x_l)`` (29–32), and the cardinality rows ``Σ_l v_il ≥ k − 1`` (§7.3;
``==`` on request). Categorical columns enter one-hot with weight ``w_j/|H|`` (§1.5).

Numeric columns are rescaled to ``[0, 1]`` (``(x − L)/(U − L)``, objective factor ``w_j``)
before the model is built: the objective is unchanged, HiGHS never sees values beyond its
infinity (1e20) or big-M constants spanning many orders of magnitude, and ``y, z`` are left
continuous, which does not change the optimum because tight boxes are data values (§1.3).
Classes are read as the connected components of ``v_il = 1``: every component has ≥ k rows
(each row has ≥ k−1 neighbours), and its tight box costs no more than the solver's box.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from privopt.kanon.loss import normalize_labels
from privopt.lp import LinearProgram

__all__ = ["paper_model", "paper_start", "classes_from_pairs", "normalized_columns"]


def normalized_columns(x, lo, hi, coef):
    """``(x − lo)/(hi − lo)`` per column and the matching objective factors ``coef·(hi − lo)``."""
    width = hi - lo
    return (x - lo) / width, coef * width


def _big_m_rows(x, lo, hi, iu, lu):
    """(22)–(25) as COO triplets and row bounds, one block of 4 rows per (pair, attribute)."""
    n, m = x.shape
    nm, p = n * m, len(iu)
    pi = np.repeat(np.arange(p), m)
    jj = np.tile(np.arange(m), p)
    i, ell = iu[pi], lu[pi]
    my = np.maximum(x[i, jj], x[ell, jj]) - lo[jj]  # eq. 29
    mz = hi[jj] - np.minimum(x[i, jj], x[ell, jj])  # eq. 31
    q = len(pi)
    rows, cols, vals, rlo, rhi = [], [], [], [], []
    for b, (off, big) in enumerate([(0, my), (0, my), (nm, mz), (nm, mz)]):
        r = b * q + np.arange(q)
        sign = 1.0 if b % 2 == 0 else -1.0  # (22)/(24): +M v <= M ; (23)/(25): -M v >= -M
        rows += [r, r, r]
        cols += [off + i * m + jj, off + ell * m + jj, 2 * nm + pi]
        vals += [np.ones(q), -np.ones(q), sign * big]
        rlo.append(np.full(q, -np.inf) if sign > 0 else -big)
        rhi.append(big if sign > 0 else np.full(q, np.inf))
    return rows, cols, vals, rlo, rhi, 4 * q, (pi, jj, i, ell)


def _valid_inequalities(x, pairs, r0):
    """Big-M-free cuts implied by (22)–(25) and the box bounds: if v_il = 1 then
    ``y_ij = y_lj ≤ x_lj`` and ``z_ij = z_lj ≥ x_lj``, i.e. ``y_ij + (x_ij − x_lj)⁺ v_il ≤ x_ij``
    and ``z_ij − (x_lj − x_ij)⁺ v_il ≥ x_ij`` for both ends of every pair. They leave the
    optimum unchanged but make the LP bound useful."""
    n, m = x.shape
    nm = n * m
    pi, jj, i, ell = pairs
    rows, cols, vals, rlo, rhi = [], [], [], [], []
    for a, b in ((i, ell), (ell, i)):
        d = x[a, jj] - x[b, jj]
        for off, keep in ((0, d > 0), (nm, d < 0)):
            sel = np.flatnonzero(keep)
            r = r0 + np.arange(len(sel))
            rows += [r, r]
            cols += [off + a[sel] * m + jj[sel], 2 * nm + pi[sel]]
            vals += [np.ones(len(sel)), d[sel]]
            bound = x[a[sel], jj[sel]]
            rlo.append(np.full(len(sel), -np.inf) if off == 0 else bound)
            rhi.append(bound if off == 0 else np.full(len(sel), np.inf))
            r0 += len(sel)
    return rows, cols, vals, rlo, rhi, r0


def paper_model(x, lo, hi, coef, k, *, equality_cardinality=False, strengthen=True):
    """Big-M model (22)–(28) for the rows of ``x`` (n, m') with global bounds ``lo, hi`` (m').

    Variable layout: ``y`` (n·m', row-major), ``z`` (n·m'), then ``v`` (one binary per pair
    i<l in ``np.triu_indices`` order); ``y, z`` continuous. Pass normalized columns (see
    :func:`normalized_columns`) for a well-scaled model.

    Returns
    -------
    lp : :class:`privopt.lp.LinearProgram`; pairs : (iu, lu) the pair index arrays.
    """
    n, m = x.shape
    iu, lu = np.triu_indices(n, 1)
    p = len(iu)
    lp = LinearProgram(
        2 * n * m + p,
        objective=np.concatenate([-np.tile(coef, n), np.tile(coef, n), np.zeros(p)]),
        lower=np.concatenate([np.broadcast_to(lo, (n, m)).ravel(), x.ravel(), np.zeros(p)]),
        upper=np.concatenate([x.ravel(), np.broadcast_to(hi, (n, m)).ravel(), np.ones(p)]),
        integrality=np.concatenate([np.zeros(2 * n * m, dtype=bool), np.ones(p, dtype=bool)]),
    )
    rows, cols, vals, rlo, rhi, r0, pairs = _big_m_rows(x, lo, hi, iu, lu)
    if strengthen:
        extra = _valid_inequalities(x, pairs, r0)
        for acc, more in zip((rows, cols, vals, rlo, rhi), extra[:5], strict=True):
            acc += more  # noqa: PLW2901 - extends the lists in place
        r0 = extra[5]
    # cardinality (26): Σ_{l≠i} v_il >= k-1 (each pair appears in the rows of both ends)
    rows += [r0 + iu, r0 + lu]
    cols += [2 * n * m + np.arange(p)] * 2
    vals += [np.ones(p)] * 2
    rlo.append(np.full(n, k - 1.0))
    rhi.append(np.full(n, k - 1.0 if equality_cardinality else np.inf))
    n_rows = r0 + n
    a = sp.coo_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n_rows, lp.n_vars),
    ).tocsc()
    lp.add_rows(a, lower=np.concatenate(rlo), upper=np.concatenate(rhi))
    return lp, (iu, lu)


def paper_start(x, labels, pairs) -> np.ndarray:
    """MIP start vector of :func:`paper_model` from a partition (tight boxes, v = same class)."""
    lab = normalize_labels(labels)
    c, m = int(lab.max()) + 1, x.shape[1]
    cmin = np.full((c, m), np.inf)
    cmax = np.full((c, m), -np.inf)
    np.minimum.at(cmin, lab, x)
    np.maximum.at(cmax, lab, x)
    iu, lu = pairs
    return np.concatenate(
        [cmin[lab].ravel(), cmax[lab].ravel(), (lab[iu] == lab[lu]).astype(np.float64)]
    )


def classes_from_pairs(solution: np.ndarray, n: int, pairs) -> np.ndarray:
    """Classes (n,) = connected components of the pairs with ``v_il = 1`` in ``solution``."""
    iu, lu = pairs
    v = np.asarray(solution)[-len(iu) :] > 0.5
    graph = sp.coo_array((np.ones(int(v.sum())), (iu[v], lu[v])), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    return normalize_labels(comp)
