"""An exact oracle for CLR-Geo: the optimum of the model in rational arithmetic.

Built from the definitions (spec 001 Eqs. 19–25), independently of :mod:`privopt.geo.clr`:
per user, a free variable z_ik for every entry with d_ik ≤ r_exp and an exponential entry
``g_ik y_k`` (``g_ik = exp(−ε min(d_ik, r_obf)/2)``, y shared by all users, y ≥ 0) for the
others; rows sum to 1; for every ordered pair of a user's rows with d_ij ≤ γ (every such pair:
no cap) and every column, ``z_ik ≤ e^{ε d_ij} z_jk``. Objective ``Σ_m (1/n_m) Σ_ik ĉ_ik z_ik``.

Each float coefficient is taken as the rational it represents and the LP is solved by a
two-phase simplex with Bland's rule in exact arithmetic (:func:`exact_lp`); its point is checked
for exact feasibility before its value is believed. HiGHS is no oracle here: at ε·d ≈ 20 its
1e-10 feasibility tolerance exceeds the entries the constraints hold up, and its optimum fell
2e-4 (relative) below the true one on instances of objective 1e-5.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

Block = tuple[np.ndarray, np.ndarray, np.ndarray]  # (pair d (n, n), column d (n, K), cost (n, K))
ZERO, ONE = Fraction(0), Fraction(1)


def exact_lp(
    c: Sequence[Fraction],
    a_ub: Sequence[Sequence[Fraction]],
    b_ub: Sequence[Fraction],
    a_eq: Sequence[Sequence[Fraction]],
    b_eq: Sequence[Fraction],
) -> tuple[Fraction, list[Fraction]]:
    """``min c·x`` s.t. ``a_ub x ≤ b_ub`` (``b_ub ≥ 0``), ``a_eq x = b_eq``, ``x ≥ 0``, exactly.

    A dense tableau of Fractions; phase 1 minimises the equality rows' artificials, phase 2 the
    cost; Bland's rule (lowest index enters and leaves) cannot cycle. Returns (value, x);
    raises ValueError for an infeasible or unbounded LP.
    """
    n, m_ub, m_eq = len(c), len(a_ub), len(a_eq)
    m, cols = m_ub + m_eq, n + m_ub + m_eq  # x, then slacks, then artificials
    t = np.full((m, cols + 1), ZERO, dtype=object)  # last column: right-hand side
    for r in range(m_ub):
        if b_ub[r] < 0:
            raise ValueError("exact_lp needs b_ub >= 0 (the slacks are the first basis)")
        t[r, :n], t[r, n + r], t[r, -1] = list(a_ub[r]), ONE, b_ub[r]
    for r in range(m_eq):
        sign = -1 if b_eq[r] < 0 else 1
        t[m_ub + r, :n] = [sign * v for v in a_eq[r]]
        t[m_ub + r, n + m_ub + r], t[m_ub + r, -1] = ONE, sign * b_eq[r]
    basis = list(range(n, n + m))

    def pivot(r: int, j: int) -> None:
        t[r] = t[r] / t[r, j]
        col = t[:, j].copy()
        col[r] = ZERO
        rows = np.flatnonzero(col != 0)
        if rows.size:
            t[rows] -= np.outer(col[rows], t[r])
        basis[r] = j

    def optimise(cost: np.ndarray, allowed: np.ndarray) -> None:
        while True:
            reduced = cost[:cols] - np.array([cost[b] for b in basis], dtype=object) @ t[:, :cols]
            entering = next((j for j in range(cols) if allowed[j] and reduced[j] < 0), None)
            if entering is None:
                return
            rows = [r for r in range(m) if t[r, entering] > 0]
            if not rows:
                raise ValueError("unbounded LP")
            best = min(t[r, -1] / t[r, entering] for r in rows)
            leaving = min(
                (r for r in rows if t[r, -1] / t[r, entering] == best), key=lambda r: basis[r]
            )
            pivot(leaving, entering)

    allowed = np.ones(cols, dtype=bool)
    if m_eq:
        optimise(np.array([ZERO] * (n + m_ub) + [ONE] * m_eq, dtype=object), allowed)
        if any(t[r, -1] != 0 for r in range(m) if basis[r] >= n + m_ub):
            raise ValueError("infeasible LP")
        for r in range(m):  # basic artificials are at 0: pivot them out where possible
            if basis[r] >= n + m_ub:
                j = next((j for j in range(n + m_ub) if t[r, j] != 0), None)
                if j is not None:
                    pivot(r, j)
        allowed[n + m_ub :] = False
    optimise(np.array(list(c) + [ZERO] * (m_ub + m_eq), dtype=object), allowed)
    x = [ZERO] * n
    for r, b in enumerate(basis):
        if b < n:
            x[b] = t[r, -1]
    # Believe the point only if it is exactly feasible.
    assert all(v >= 0 for v in x)
    assert all(
        sum(a * v for a, v in zip(row, x, strict=True)) <= b
        for row, b in zip(a_ub, b_ub, strict=True)
    )
    assert all(
        sum(a * v for a, v in zip(row, x, strict=True)) == b
        for row, b in zip(a_eq, b_eq, strict=True)
    )
    return sum((ci * xi for ci, xi in zip(c, x, strict=True)), ZERO), x


def clr_optimum(
    blocks: list[Block], epsilon: float, gamma: float, r_exp: float, r_obf: float
) -> Fraction:
    """The exact CLR-Geo optimum of the users' ``blocks`` (km, summed over users)."""
    k = blocks[0][1].shape[1]
    n_free = [int((cd <= r_exp).sum()) for _, cd, _ in blocks]
    n_vars = sum(n_free) + k
    y0 = sum(n_free)  # y_k is variable y0 + k
    cost = [ZERO] * n_vars
    a_ub: list[list[Fraction]] = []
    a_eq: list[list[Fraction]] = []
    offset = 0
    for (d, cd, c), nf in zip(blocks, n_free, strict=True):
        n = d.shape[0]
        free = cd <= r_exp
        var = np.full((n, k), -1)
        var[free] = offset + np.arange(nf)
        g = np.exp(-epsilon * np.minimum(cd, r_obf) / 2)
        # entry (i, col) = coefficient × variable: a free z, or g_ik times the shared y_k
        entry = {
            (i, col): (int(var[i, col]), ONE) if free[i, col] else (y0 + col, Fraction(g[i, col]))
            for i in range(n)
            for col in range(k)
        }
        for i in range(n):
            unit = [ZERO] * n_vars
            for col in range(k):
                v, a = entry[i, col]
                unit[v] += a
                cost[v] += a * Fraction(c[i, col]) / n
            a_eq.append(unit)
        for i in range(n):
            for j in range(n):
                if i == j or d[i, j] > gamma:
                    continue
                decay = Fraction(math.exp(-epsilon * d[i, j]))
                for col in range(k):
                    row = [ZERO] * n_vars
                    vi, ai = entry[i, col]
                    vj, aj = entry[j, col]
                    row[vi] += decay * ai  # e^{-εd} z_ik - z_jk <= 0
                    row[vj] -= aj
                    if any(row):
                        a_ub.append(row)
        offset += nf
    b_ub = [ZERO] * len(a_ub)
    for v in range(sum(n_free)):  # z <= 1 (z, y >= 0 is the simplex's own)
        a_ub.append([ONE if u == v else ZERO for u in range(n_vars)])
        b_ub.append(ONE)
    value, _ = exact_lp(cost, a_ub, b_ub, a_eq, [ONE] * len(a_eq))
    return value
