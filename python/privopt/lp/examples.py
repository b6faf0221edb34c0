"""Random LPs for tests, the demo and benchmarks (generated, never downloaded).

The block generators return a :class:`~privopt.lp.benders.BendersProblem` (master + K
subproblems; ``problem.to_monolithic()`` gives the equivalent single LP);
:func:`random_packing_lp` returns one :class:`~privopt.lp.LinearProgram` that needs thousands of
simplex iterations.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from privopt._validation import check_int, check_size
from privopt.lp.benders import BendersProblem
from privopt.lp.model import LinearProgram

__all__ = ["random_block_lp", "capacity_expansion_lp", "random_packing_lp"]


def random_block_lp(
    seed: int,
    *,
    n_subproblems: int = 4,
    n_master: int = 20,
    sub_vars: int = 50,
    sub_rows: int = 30,
    density: float = 0.15,
    theta_lower: bool = True,
) -> BendersProblem:
    """A feasible, bounded random two-stage LP with mixed row types.

    Master ``x in [0, 1]^n_master`` with a few random rows; subproblem ``k`` has
    ``y_k in [0, 2]^sub_vars`` and rows ``L_k <= T_k x + W_k y_k <= U_k`` built around a random
    interior point, so the whole LP is feasible; boxes keep it bounded. Costs have both signs.
    With ``theta_lower`` each subproblem gets the valid bound ``theta_k >= sum_j min(0, 2 c_kj)``
    (the box minimum), else ``theta_k`` is unbounded below until its first optimality cut.
    """
    rng = np.random.default_rng(seed)
    K = check_int("n_subproblems", n_subproblems, minimum=1)
    x0 = rng.uniform(0.2, 0.8, n_master)
    master = LinearProgram(n_master, objective=rng.normal(size=n_master), lower=0.0, upper=1.0)
    A0 = sp.random(
        max(1, n_master // 4),
        n_master,
        density=0.3,
        random_state=rng,
        format="csr",
        data_rvs=lambda k: rng.normal(size=k),
    )
    master.add_rows(A0, upper=A0 @ x0 + rng.uniform(0.1, 1.0, A0.shape[0]))
    problem = BendersProblem(master)
    for _ in range(K):
        y0 = rng.uniform(0.2, 1.8, sub_vars)
        c = rng.normal(size=sub_vars)
        sub = LinearProgram(sub_vars, objective=c, lower=0.0, upper=2.0)
        W = sp.random(
            sub_rows,
            sub_vars,
            density=density,
            random_state=rng,
            format="csr",
            data_rvs=lambda k: rng.normal(size=k),
        )
        T = sp.random(
            sub_rows,
            n_master,
            density=density,
            random_state=rng,
            format="csr",
            data_rvs=lambda k: rng.normal(size=k),
        )
        act = W @ y0 + T @ x0
        kind = rng.integers(0, 4, sub_rows)
        lo = np.where(kind == 0, -np.inf, act - rng.uniform(0.0, 0.5, sub_rows))
        up = np.where(kind == 1, np.inf, act + rng.uniform(0.0, 0.5, sub_rows))
        lo[kind == 2] = up[kind == 2] = act[kind == 2]
        sub.add_rows(W, lower=lo, upper=up)
        bound = float(np.minimum(0.0, 2.0 * c).sum()) if theta_lower else -np.inf
        problem.add_subproblem(sub, T, theta_lower=bound)
    return problem


def capacity_expansion_lp(
    seed: int,
    *,
    n_regions: int = 4,
    n_facilities: int = 12,
    facilities_per_region: int = 5,
    customers_per_region: int = 20,
) -> BendersProblem:
    """Two-stage capacity expansion: buy capacity ``x_j`` (master), then serve each region's
    demand from its facilities (subproblem per region).

    Master: ``min f^T x`` with ``0 <= x_j <= cap_j``. Region ``k``: flows ``y_{j,i} >= 0`` from
    its facilities to its customers at cost ``g``; rows ``sum_j y_{j,i} >= d_i`` (demand) and
    ``sum_i y_{j,i} - x_j <= 0`` (capacity, the coupling ``T_k = -I``). Costs are >= 0, so
    ``theta_k >= 0`` is valid, the first master point is ``x = 0`` and every region is then
    infeasible: the instance exercises feasibility cuts. Feasible at ``x = cap`` by construction.
    """
    rng = np.random.default_rng(seed)
    F = check_int("n_facilities", n_facilities, minimum=1)
    per = min(facilities_per_region, F)
    n_cust = customers_per_region
    demands, members = [], []
    for _ in range(n_regions):
        fac = np.sort(rng.choice(F, per, replace=False))
        demands.append(rng.uniform(1.0, 5.0, n_cust))
        members.append(fac)
    # Capacity: each facility can carry the demand of every region it serves (with slack).
    load = np.zeros(F)
    for fac, d in zip(members, demands, strict=False):
        load[fac] = np.maximum(load[fac], d.sum())
    cap = np.where(load > 0, 1.2 * load, 1.0)
    master = LinearProgram(F, objective=rng.uniform(1.0, 3.0, F), lower=0.0, upper=cap)
    problem = BendersProblem(master)
    for fac, d in zip(members, demands, strict=False):
        nv = per * n_cust  # y[j, i] at column j * n_cust + i
        g = rng.uniform(0.5, 4.0, nv)
        sub = LinearProgram(nv, objective=g)
        jj, ii = np.divmod(np.arange(nv), n_cust)
        demand_rows = sp.csr_array((np.ones(nv), (ii, np.arange(nv))), shape=(n_cust, nv))
        cap_rows = sp.csr_array((np.ones(nv), (jj, np.arange(nv))), shape=(per, nv))
        sub.add_rows(demand_rows, lower=d, name="demand")
        sub.add_rows(cap_rows, upper=0.0, name="capacity")
        T = sp.vstack(
            [
                sp.csr_array((n_cust, F)),
                sp.csr_array((-np.ones(per), (np.arange(per), fac)), shape=(per, F)),
            ]
        )
        problem.add_subproblem(sub, T, theta_lower=0.0)
    return problem


def random_packing_lp(n_cols: int, n_rows: int, seed: int = 0) -> LinearProgram:
    """``max pᵀx`` (as ``min −pᵀx``) over ``0 ≤ x ≤ 1`` and ``A x ≤ b``, A sparse (0.5 %
    nonzeros in [0.1, 1]), b in [1, 3]: a packing LP that keeps the simplex busy for thousands of
    iterations at a few thousand columns (used to time interrupts).

    Examples
    --------
    >>> lp = random_packing_lp(200, 100, seed=1)
    >>> lp.n_vars, lp.n_rows
    (200, 100)
    """
    n_cols = check_int("n_cols", n_cols, minimum=1)
    n_rows = check_int("n_rows", n_rows, minimum=1)
    check_size((n_rows, n_cols), "(n_rows, n_cols)")
    rng = np.random.default_rng(seed)
    a = sp.random(n_rows, n_cols, density=0.005, random_state=seed, format="csr")
    a.data = rng.uniform(0.1, 1.0, a.nnz)
    lp = LinearProgram(n_cols, objective=-rng.uniform(0, 1, n_cols), lower=0.0, upper=1.0)
    lp.add_rows(a, lower=-np.inf, upper=rng.uniform(1, 3, n_rows))
    return lp
