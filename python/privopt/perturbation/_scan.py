"""Compiled passes over every mDP constraint ``z_ik ≤ e^{εd_ij} z'_jk`` of a matrix.

The verification scan and the repair's mixing weight visit |E|·K constraints: 64 M on a
complete graph of 400 locations with K = 400. As numpy expressions each pass materialises
several |E|×K temporaries; these kernels make one pass without temporaries, with the same
floating-point operations (so the same results) as the expressions they replace in
:mod:`privopt.perturbation.matrix`.
"""

from __future__ import annotations

import numba
import numpy as np

from privopt.perturbation.problem import EdgeList

__all__ = ["scan_worst", "mixing_weight"]


def scan_worst(
    z: np.ndarray, edges: EdgeList, epsilon: float, count_tol: float, right: np.ndarray
) -> tuple[float, float, tuple[int, int, int] | None, int]:
    """Worst relative violation ``max(0, z_ik − e^{εd} r_jk) / z_ik`` (first one in edge,
    output order), worst absolute violation, the worst relative one's (i, j, k) or None, and
    the number of constraints violated by more than ``count_tol``; ``right`` holds the rows j
    (``z`` itself unless they come from another matrix)."""
    ratio = np.exp(epsilon * edges.d)
    rel, ab, e, kk, n_bad = _scan_kernel(
        np.ascontiguousarray(z, dtype=np.float64),
        np.ascontiguousarray(right, dtype=np.float64),
        edges.i,
        edges.j,
        ratio,
        float(count_tol),
    )
    where = None if e < 0 else (int(edges.i[e]), int(edges.j[e]), int(kk))
    return float(rel), float(ab), where, int(n_bad)


@numba.njit(cache=True, nogil=True)
def _scan_kernel(z, zr, ei, ej, ratio, count_tol):  # pragma: no cover - compiled
    k = z.shape[1]
    worst_rel, worst_abs, where_e, where_k, n_bad = 0.0, 0.0, -1, -1, 0
    for e in range(ei.size):
        i, j, r = ei[e], ej[e], ratio[e]
        for kk in range(k):
            zi = z[i, kk]
            viol = zi - r * zr[j, kk]
            if viol > count_tol:
                n_bad += 1
            if viol > 0.0:
                worst_abs = max(worst_abs, viol)
                if zi > 0.0 and viol / zi > worst_rel:
                    worst_rel, where_e, where_k = viol / zi, e, kk
    return worst_rel, worst_abs, where_e, where_k, n_bad


def mixing_weight(
    z: np.ndarray, edges: EdgeList, epsilon: float, rtol: float, partner: np.ndarray | None
) -> float:
    """Smallest α with every entry violated by ``z_ik (1 + rtol) − e^{εd} z_jk > 0`` fixed in
    ``(1 − α) Z + α P``: ``max v / (v + g)`` with the partner's slack
    ``g = e^{εd} P_jk − P_ik (1 + rtol)`` (``(e^{εd} − 1) / K`` for the uniform partner,
    ``partner=None``); 1 where a violated entry's partner has no slack."""
    ratio = np.exp(epsilon * edges.d)
    uniform = partner is None
    p = np.zeros((1, 1)) if partner is None else np.ascontiguousarray(partner, dtype=np.float64)
    return float(
        _mixing_kernel(
            np.ascontiguousarray(z, dtype=np.float64),
            edges.i,
            edges.j,
            ratio,
            float(rtol),
            p,
            uniform,
        )
    )


@numba.njit(cache=True, nogil=True)
def _mixing_kernel(z, ei, ej, ratio, rtol, p, uniform):  # pragma: no cover - compiled
    k = z.shape[1]
    alpha = 0.0
    for e in range(ei.size):
        i, j, r = ei[e], ej[e], ratio[e]
        for kk in range(k):
            # aim for a margin rtol·z_ik, so that the relative check passes after rounding
            viol = z[i, kk] * (1.0 + rtol) - r * z[j, kk]
            if viol > 0.0:
                gain = (r - 1.0) / k if uniform else r * p[j, kk] - p[i, kk] * (1.0 + rtol)
                if gain <= 0.0:
                    return 1.0
                alpha = max(alpha, viol / (viol + gain))
    return alpha
