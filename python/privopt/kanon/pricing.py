"""Exact search over candidate groups by reduced cost (pricing of the set-partition model).

A *group* is a multiset of row types (identical rows) of size k..2k−1; its cost is
``|G|·Σ_j coef_j·span_j(G)`` (spec §1.3). Given row duals ``π`` (one per type), its reduced cost
is ``rc(G) = cost(G) − Σ_{t∈G} π_t = Σ_{i∈G} (span(G) − π_{t(i)})``. The search enumerates
groups as non-decreasing type sequences and prunes a partial group ``P`` with the bound

    rc(G) ≥ Σ_{i∈P} (span(P) − π_i) + Σ_{t∈G∖P} (span(P ∪ {t}) − π_t),

valid because spans only grow as members are added; the second sum is bounded below by the
``r`` smallest candidate terms over the admissible numbers ``r`` of further members. The search
is exact: it keeps the ``cap`` groups of least reduced cost among those with ``rc ≤ θ`` and
reports the final threshold, below which *every* group was kept. That gives new columns for
column generation, the minimum reduced cost over all groups (for the Lagrangian lower bound),
and the reduced-cost filtered column sets of the exact MILP, without materializing the
exponentially many groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

__all__ = ["GroupSearch", "search_groups"]


@numba.njit(cache=True, nogil=True)
def _extension_bound(xt, mult, cnt, coef, pi, mn, mx, s, base, first, smin, smax, vals, avail):
    """Lower bound on rc over every group that extends the partial group of size ``s``."""
    n_types, m = xt.shape
    n_c = 0
    for t in range(first, n_types):
        a = mult[t] - cnt[t]
        if a <= 0:
            continue
        sp = 0.0
        for j in range(m):
            v = xt[t, j]
            hi = mx[j] if mx[j] > v else v
            lo = mn[j] if mn[j] < v else v
            sp += coef[j] * (hi - lo)
        vals[n_c] = sp - pi[t]
        avail[n_c] = a
        n_c += 1
    order = np.argsort(vals[:n_c])
    need = smin - s if smin > s else 0
    room = smax - s
    total = base
    taken = 0
    for q in range(n_c):
        v = vals[order[q]]
        if taken >= room or (taken >= need and v >= 0.0):
            break
        use = min(avail[order[q]], room - taken)
        if v >= 0.0:  # a non-negative term is charged only for the members still required
            use = min(use, need - taken)
        total += use * v
        taken += use
    return total if taken >= need else np.inf


@numba.njit(cache=True, nogil=True)
def _keep(out, out_rc, n_out, elem, d, rc):
    """Store a group in slot ``n_out`` (grown by doubling); returns the (possibly new) arrays."""
    if n_out == out.shape[0]:
        out2 = np.full((2 * out.shape[0], out.shape[1]), -1, dtype=np.int64)
        out2[:n_out] = out[:n_out]
        rc2 = np.empty(2 * out.shape[0])
        rc2[:n_out] = out_rc[:n_out]
        out, out_rc = out2, rc2
    out[n_out, :] = -1
    out[n_out, :d] = elem[:d]
    out_rc[n_out] = rc
    return out, out_rc


# One jitted depth-first search: helpers would be calls in its innermost loop.
@numba.njit(cache=True, nogil=True)
def _search(xt, mult, coef, pi, smin, smax, theta, cap, node_limit):  # noqa: PLR0915  # pragma: no cover
    n_types, m = xt.shape
    out = np.full((min(cap, 1024), smax), -1, dtype=np.int64)
    out_rc = np.empty(out.shape[0])
    n_out = 0
    mn = np.full((smax + 1, m), np.inf)
    mx = np.full((smax + 1, m), -np.inf)
    span = np.zeros(smax + 1)
    sumpi = np.zeros(smax + 1)
    elem = np.full(smax + 1, -1, dtype=np.int64)
    cand = np.zeros(smax + 1, dtype=np.int64)
    cnt = np.zeros(n_types, dtype=np.int64)
    vals = np.empty(n_types)
    avail = np.empty(n_types, dtype=np.int64)
    worst = 0
    nodes = 0
    d = 0
    entering = True
    while d >= 0:
        if entering:
            entering = False
            nodes += 1
            if nodes > node_limit:
                return out[:n_out], out_rc[:n_out], theta, False, nodes
            first = elem[d - 1] if d > 0 else 0
            base = d * span[d] - sumpi[d]
            bound = _extension_bound(
                xt, mult, cnt, coef, pi, mn[d], mx[d], d, base, first, smin, smax, vals, avail
            )
            cand[d] = n_types  # pruned unless the bound admits the subtree
            if bound <= theta:
                cand[d] = first if d < smax else n_types
                if d >= smin and base <= theta:
                    if n_out < cap:
                        out, out_rc = _keep(out, out_rc, n_out, elem, d, base)
                        n_out += 1
                        if n_out == cap:
                            worst = int(np.argmax(out_rc[:n_out]))
                            theta = min(theta, out_rc[worst])
                    else:  # full: replace the worst kept group, tighten the threshold
                        out, out_rc = _keep(out, out_rc, worst, elem, d, base)
                        worst = int(np.argmax(out_rc[:n_out]))
                        theta = min(theta, out_rc[worst])
        t = cand[d]
        while t < n_types and cnt[t] >= mult[t]:
            t += 1
        if t >= n_types:  # subtree done: back up
            if d > 0:
                cnt[elem[d - 1]] -= 1
            d -= 1
            continue
        cand[d] = t + 1
        elem[d] = t
        cnt[t] += 1
        sp = 0.0
        for j in range(m):
            v = xt[t, j]
            hi = mx[d, j] if mx[d, j] > v else v
            lo = mn[d, j] if mn[d, j] < v else v
            mx[d + 1, j] = hi
            mn[d + 1, j] = lo
            sp += coef[j] * (hi - lo)
        span[d + 1] = sp
        sumpi[d + 1] = sumpi[d] + pi[t]
        d += 1
        entering = True
    return out[:n_out], out_rc[:n_out], theta, True, nodes


@dataclass(frozen=True)
class GroupSearch:
    """Outcome of :func:`search_groups`.

    Attributes
    ----------
    groups : (g, max_size) int64
        Row types of each group kept (non-decreasing, −1 padded).
    reduced_costs : (g,) float64
        ``rc`` of each kept group for the duals searched with.
    threshold : float
        Every group with ``rc < threshold`` is kept (when ``complete``); equals the requested
        threshold unless the store of ``cap`` groups filled up, which lowers it.
    complete : bool
        The search ran to the end (no node limit hit).
    nodes : int
        Search nodes visited.
    """

    groups: np.ndarray
    reduced_costs: np.ndarray
    threshold: float
    complete: bool
    nodes: int

    @property
    def min_reduced_cost(self) -> float:
        """Least rc over *all* groups (complete search), or the threshold when none is below it."""
        return float(min(self.reduced_costs.min(initial=np.inf), self.threshold))


def search_groups(
    values: np.ndarray,
    mult: np.ndarray,
    coef: np.ndarray,
    duals: np.ndarray,
    k: int,
    max_size: int,
    *,
    threshold: float,
    cap: int,
    node_limit: int = 10**12,
) -> GroupSearch:
    """The ``cap`` groups of least reduced cost among those with ``rc ≤ threshold``.

    Parameters
    ----------
    values : (T, m') distinct row values (MILP columns); mult : (T,) rows of each type.
    coef : (m',) objective factor per column; duals : (T,) row duals ``π``.
    k, max_size : groups have ``k..max_size`` rows (``max_size = min(2k−1, n)``).
    threshold : report groups with ``rc ≤ threshold`` (``inf``: every group).
    cap : at most this many groups are kept.
    node_limit : stop after this many search nodes (``complete`` is then False).

    Returns
    -------
    GroupSearch

    Examples
    --------
    >>> import numpy as np
    >>> vals = np.array([[0.0], [1.0], [3.0]])
    >>> res = search_groups(vals, np.array([1, 1, 1]), np.array([1.0]), np.zeros(3), 2, 3,
    ...                     threshold=np.inf, cap=10)
    >>> sorted(zip(res.groups.tolist(), res.reduced_costs.tolist()))
    [([0, 1, -1], 2.0), ([0, 1, 2], 9.0), ([0, 2, -1], 6.0), ([1, 2, -1], 4.0)]
    """
    groups, rc, theta, complete, nodes = _search(
        np.ascontiguousarray(values, dtype=np.float64),
        np.ascontiguousarray(mult, dtype=np.int64),
        np.ascontiguousarray(coef, dtype=np.float64),
        np.ascontiguousarray(duals, dtype=np.float64),
        int(k),
        int(max_size),
        float(threshold),
        int(max(cap, 1)),
        int(node_limit),
    )
    return GroupSearch(groups, rc, float(theta), bool(complete), int(nodes))
