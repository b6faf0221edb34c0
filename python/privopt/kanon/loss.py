"""Information loss of a partition: the paper's objective (eq. 34) and NCP/GCP (Def. 8–9).

Every algorithm returns a partition (a class id per row); boxes and losses are then computed here
from the *tight* box of each class (spec §1.3: tight bounds never increase the loss), so that
all methods are measured by the same code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from privopt._validation import check_finite_result, check_instance, check_labels
from privopt.kanon.problem import KAnonProblem

__all__ = ["ClassBoxes", "LossBreakdown", "class_boxes", "information_loss", "normalize_labels"]


#: Widest id range (max − min + 1), per row plus a constant, that is renumbered with a lookup
#: table; wider ranges are sorted instead.
TABLE_SPAN_PER_ROW = 4
TABLE_SPAN_EXTRA = 64


@numba.njit(cache=True, nogil=True)
def _first_appearance_ranks(labels):  # pragma: no cover - compiled
    """(ok, ranks): ids 0..c-1 by first appearance through a table over [min, max]; ok is False
    (and ranks unset) when that range is wider than the table allows."""
    n = labels.shape[0]
    out = np.empty(n, dtype=np.int64)
    if n == 0:
        return True, out
    lo = labels[0]
    hi = labels[0]
    for i in range(n):
        lo = min(lo, labels[i])
        hi = max(hi, labels[i])
    width = hi - lo  # wraps below zero when the true range exceeds int64
    if width < 0 or width >= TABLE_SPAN_PER_ROW * n + TABLE_SPAN_EXTRA:
        return False, out
    rank = np.full(width + 1, -1, dtype=np.int64)
    c = 0
    for i in range(n):
        v = labels[i] - lo
        if rank[v] < 0:
            rank[v] = c
            c += 1
        out[i] = rank[v]
    return True, out


def _is_table_int(labels: np.ndarray) -> bool:
    """Integer ids that int64 holds exactly."""
    return labels.dtype.kind == "i" or (labels.dtype.kind == "u" and labels.dtype.itemsize < 8)


def normalize_labels(labels: np.ndarray) -> np.ndarray:
    """Renumber class ids 0..c-1 in order of first appearance (row order).

    Examples
    --------
    >>> normalize_labels(np.array([7, 2, 7, 5, 2])).tolist()
    [0, 1, 0, 2, 1]
    """
    labels = np.asarray(labels)
    if _is_table_int(labels):  # Split & Carry's many tiny sub-problems: no sort
        ok, ranks = _first_appearance_ranks(labels.ravel().astype(np.int64, copy=False))
        if ok:
            return ranks
    return normalize_labels_by_sorting(labels)


def normalize_labels_by_sorting(labels: np.ndarray) -> np.ndarray:
    """:func:`normalize_labels` for any ids that sort (floats, wide int64 ranges): via
    ``np.unique``; also the reference the table path is tested against."""
    labels = np.asarray(labels)
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inv.ravel()]


@dataclass(frozen=True)
class ClassBoxes:
    """Tight generalization of every row.

    Attributes
    ----------
    labels : (n,) int64, class id per row (0..c-1 by first appearance).
    lo, hi : (n, m) float64, box ``[y_ij, z_ij]`` per cell (codes for categorical columns).
    n_distinct : (n, m) int64, number of distinct values of attribute j in row i's class.
    sizes : (c,) int64, size of each class.
    """

    labels: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n_distinct: np.ndarray
    sizes: np.ndarray


def class_boxes(problem: KAnonProblem, labels: np.ndarray) -> ClassBoxes:
    """Tight boxes and distinct-value counts of the partition ``labels`` (n,)."""
    check_instance("problem", problem, KAnonProblem)
    lab = normalize_labels(check_labels("labels", labels, problem.n))
    _n, m = problem.x.shape
    c = int(lab.max()) + 1
    order = np.argsort(lab, kind="stable")
    starts = np.searchsorted(lab[order], np.arange(c))
    xs = problem.x[order]
    cmin = np.minimum.reduceat(xs, starts, axis=0)
    cmax = np.maximum.reduceat(xs, starts, axis=0)
    ndist = np.zeros((c, m), dtype=np.int64)
    for j in np.flatnonzero(problem.categorical):
        h = len(problem.labels[j])
        present = np.zeros((c, h), dtype=bool)
        present[lab, problem.x[:, j].astype(np.int64)] = True
        ndist[:, j] = present.sum(axis=1)
    sizes = np.bincount(lab, minlength=c)
    return ClassBoxes(labels=lab, lo=cmin[lab], hi=cmax[lab], n_distinct=ndist[lab], sizes=sizes)


@dataclass(frozen=True)
class LossBreakdown:
    """Information loss of an anonymization.

    Attributes
    ----------
    objective : float
        Eq. (34) in the user's weights: ``Σ_i Σ_j w_j D_ij`` with ``D_ij = (z-y)/(U-L)`` for
        numeric columns and, for categorical ones (one-hot split), ``c/|H|`` when the class
        holds c ≥ 2 distinct values, else 0.
    gcp : float
        ``Σ_i GCP(x'_i) = Σ_i Σ_j NCP_ij`` (Def. 9, unweighted as in the paper's benchmarks);
        categorical NCP is ``(c-1)/(|dom_j|-1)`` (or ``/|dom_j|``, see the problem).
    weighted_gcp : float
        ``Σ_i Σ_j w_j NCP_ij``, the quantity Greedy Search minimizes.
    per_attribute : (m,) float64
        ``Σ_i w_j D_ij`` per attribute (eq. 33 weighted); sums to ``objective``.
    ncp_per_attribute : (m,) float64
        ``Σ_i NCP_ij`` per attribute; sums to ``gcp``.
    """

    objective: float
    gcp: float
    weighted_gcp: float
    per_attribute: np.ndarray
    ncp_per_attribute: np.ndarray


def cell_losses(problem: KAnonProblem, boxes: ClassBoxes) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell ``D_ij`` (objective) and ``NCP_ij`` (GCP) matrices, both (n, m)."""
    d = (boxes.hi - boxes.lo) / problem.ranges
    ncp = d.copy()
    cat = problem.categorical
    if cat.any():
        cnt = boxes.n_distinct[:, cat].astype(np.float64)
        h = problem.domain_sizes[cat].astype(np.float64)
        d[:, cat] = np.where(cnt >= 2, cnt / h, 0.0)
        ncp[:, cat] = (cnt - 1.0) / problem.cat_denominator[cat]
    return d, ncp


def information_loss(problem: KAnonProblem, labels_or_boxes) -> LossBreakdown:
    """Loss of a partition (class id per row) or of precomputed :class:`ClassBoxes`."""
    boxes = (
        labels_or_boxes
        if isinstance(labels_or_boxes, ClassBoxes)
        else class_boxes(problem, labels_or_boxes)
    )
    d, ncp = cell_losses(problem, boxes)
    per_attr = problem.weights * d.sum(axis=0)
    ncp_attr = ncp.sum(axis=0)
    cause = "the problem's ranges or weights (build it with build_problem)"
    return LossBreakdown(
        objective=check_finite_result("objective", float(per_attr.sum()), cause=cause),
        gcp=check_finite_result("gcp", float(ncp_attr.sum()), cause=cause),
        weighted_gcp=check_finite_result(
            "weighted_gcp", float((problem.weights * ncp_attr).sum()), cause=cause
        ),
        per_attribute=check_finite_result("per_attribute", per_attr, cause=cause),
        ncp_per_attribute=check_finite_result("ncp_per_attribute", ncp_attr, cause=cause),
    )
