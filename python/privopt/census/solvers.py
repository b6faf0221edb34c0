"""Post-processing solvers over the C++ kernels: the tree DP (M_H^dp, M_c^dp) and the chain DP
(M_c^ch), with value windows, widening and an optimality certificate (spec 003 §2.3-2.6, §3.4).

Windows. The kernels work on a window of integer values per node. ``window="paper"`` uses the
paper's δ = 3·⌈2λ²⌉ around the noisy value (footnote 2); ``"exact"`` uses [0, G] (exact but only
for small G); an int is a fixed δ; ``"auto"`` (default) starts from a smaller window (around the
noisy value for the tree, around the continuous PAVA solution for the chain) and *certifies*.

Certificate [our resolution of spec 003 §2.6]. Both problems are separable convex programs over
network-type constraints, where a solution with no improving unit move is optimal. If every
node's value lies strictly inside its window (or on 0 / G, bounds of the exact problem too),
every unit move of the exact problem is also a move of the windowed problem, so the windowed
optimum is the exact optimum over [0, G]. When a value touches a window edge the windows are
doubled and the DP re-run (at most ``max_rounds`` times; ``info["certified"]`` says whether the
final answer is certified).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import isotonic_regression

from privopt._core import census as _kernels
from privopt.census.hierarchy import Hierarchy
from privopt.errors import InfeasibleModel, InvalidInput

__all__ = [
    "paper_delta",
    "tree_postprocess",
    "chain_postprocess",
    "chain_order",
    "round_half_up",
    "solve_tree",
    "solve_chain",
]


def paper_delta(scale: float) -> int:
    """δ = 3·⌈2λ²⌉, three times the double-geometric variance (spec 003 §1.4, footnote 2)."""
    return 3 * math.ceil(2.0 * scale * scale)


def round_half_up(x: np.ndarray) -> np.ndarray:
    """floor(x + 1/2) as int64 (spec 003 §3.3 resolution; numpy's round is half-to-even)."""
    return np.floor(np.asarray(x, dtype=np.float64) + 0.5).astype(np.int64)


def _window_bounds(
    center: np.ndarray, delta: np.ndarray | int, G: int
) -> tuple[np.ndarray, np.ndarray]:
    c = np.clip(center, 0, G)
    return np.maximum(c - delta, 0), np.minimum(c + delta, G)


def _touches(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, G: int) -> np.ndarray:
    return ((values <= lo) & (lo > 0)) | ((values >= hi) & (hi < G))


# ------------------------------------------------------------------------------------ tree DP
def _tdp_structure(h: Hierarchy, N: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR of T^dp (spec 003 §2.2): node s·R + r is region r's copy for size s+1; node N·R is
    the dummy root ⊤ whose children are the N copies of the region root."""
    R = h.n_regions
    E = h.child_idx.size
    ptr = (h.child_ptr[:-1][None, :] + (np.arange(N) * E)[:, None]).ravel()
    child_ptr = np.concatenate([ptr, [N * E, N * E + N]]).astype(np.int64)
    child_idx = np.concatenate(
        [(h.child_idx[None, :] + (np.arange(N) * R)[:, None]).ravel(), np.arange(N) * R]
    ).astype(np.int64)
    return child_ptr, child_idx


def solve_tree(
    child_ptr: np.ndarray,
    child_idx: np.ndarray,
    noisy: np.ndarray,
    weight: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    root: int,
    widen: bool = True,
) -> tuple[int, int, int, np.ndarray, int]:
    """Thin call of the C++ tree DP; returns (status, bad_node, cost, values, n_widened)."""
    return _kernels.tree_dp(child_ptr, child_idx, noisy, weight, lo, hi, int(root), bool(widen))


def tree_postprocess(
    hierarchy: Hierarchy,
    noisy: np.ndarray,
    G: int,
    *,
    scale: float,
    window: str | int = "auto",
    max_rounds: int = 8,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Consistent, integral, non-negative, faithful counts closest (L2) to ``noisy``.

    Solves Model 1 (spec 003 §2.1, (H1)-(H4)) by the tree DP over T^dp.

    Parameters
    ----------
    hierarchy : region tree (R regions).
    noisy : (R, N) int64 noisy counts ñ.
    G : public total number of groups.
    scale : noise scale λ (sets the window; not a privacy parameter here).
    window : ``"auto"``, ``"paper"``, ``"exact"`` or an int δ (see module docstring).

    Returns
    -------
    (counts, info): (R, N) int64 counts and a dict (cost, rounds, certified, delta, widened).
    """
    noisy = np.asarray(noisy, dtype=np.int64)
    R, N = noisy.shape
    child_ptr, child_idx = _tdp_structure(hierarchy, N)
    flat = noisy.T.ravel()  # T^dp node s·R + r (size-major)
    n_nodes = flat.size + 1
    noisy_all = np.concatenate([flat, [0]]).astype(np.int64)
    weight = np.ones(n_nodes, dtype=np.int64)
    weight[-1] = 0  # ⊤ carries G exactly, no own cost (spec 003 §2.3)
    delta = _initial_delta(window, scale, G, int(np.diff(hierarchy.child_ptr).max(initial=1)))
    certified = False
    for rounds in range(1, max_rounds + 1):  # noqa: B007 (reported after the loop)
        lo, hi = _window_bounds(flat, delta, G)
        lo_all = np.concatenate([lo, [G]]).astype(np.int64)
        hi_all = np.concatenate([hi, [G]]).astype(np.int64)
        status, bad, cost, values, widened = solve_tree(
            child_ptr, child_idx, noisy_all, weight, lo_all, hi_all, n_nodes - 1
        )
        exact = delta >= G
        if status == 0:
            certified = exact or not np.any(_touches(values[:-1], lo, hi, G))
            if certified:
                break
        elif exact:
            raise InfeasibleModel(f"no consistent release exists (node {bad}); check G = {G}")
        delta = min(2 * delta, G)
    if status != 0:
        raise InfeasibleModel(f"tree DP infeasible after {max_rounds} window doublings")
    info = {
        "cost": int(cost),
        "rounds": rounds,
        "certified": bool(certified),
        "delta": int(delta),
        "widened": int(widened),
        "window": str(window),
    }
    return np.ascontiguousarray(values[:-1].reshape(N, R).T), info


def _initial_delta(window: str | int, scale: float, G: int, max_fanout: int) -> int:
    if isinstance(window, str):
        if window == "paper":
            return min(paper_delta(scale), G)
        if window == "exact":
            return G
        if window == "auto":
            return min(
                paper_delta(scale), max(8, math.ceil(4 * scale * math.sqrt(1 + max_fanout))), G
            )
        raise InvalidInput(f"window must be 'auto', 'paper', 'exact' or an int, got {window!r}")
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise InvalidInput(
            f"window must be 'auto', 'paper', 'exact' or an int >= 1, got {window!r}"
        )
    return min(int(window), G)


# ------------------------------------------------------------------------------------ chain DP
def chain_order(
    hierarchy: Hierarchy, N: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The chain T^ch (spec 003 §3.4): post-order of T^dp without ⊤, size-major.

    Returns (region, size, level, equal_next): chain node i is region ``region[i]`` for size
    ``size[i]`` (0-based) at ``level[i]``; ``equal_next[i]`` marks upward edges (i+1 is i's parent).
    """
    post = hierarchy.postorder()
    R = post.size
    region = np.tile(post, N)
    size = np.repeat(np.arange(N, dtype=np.int64), R)
    level = hierarchy.level[region]
    equal_next = (level[:-1] > level[1:]).astype(np.uint8)
    return region, size, level, equal_next


def level_cumulative(values: np.ndarray, level: np.ndarray, L: int) -> np.ndarray:
    """c_i = Σ_{j≤i, lev(j)=lev(i)} v_j along the chain (spec 003 §3.4)."""
    out = np.empty_like(values)
    for lev in range(L):
        m = level == lev
        out[m] = np.cumsum(values[m])
    return out


def level_decumulate(c: np.ndarray, level: np.ndarray, L: int) -> np.ndarray:
    """Inverse of :func:`level_cumulative` (per-level ⊖ along the chain)."""
    out = np.empty_like(c)
    for lev in range(L):
        m = level == lev
        out[m] = np.diff(c[m], prepend=0)
    return out


def solve_chain(
    noisy: np.ndarray, lo: np.ndarray, hi: np.ndarray, equal_next: np.ndarray
) -> tuple[int, int, int, np.ndarray]:
    """Thin call of the C++ chain DP; returns (status, bad_node, cost, values)."""
    return _kernels.chain_dp(noisy, lo, hi, equal_next)


def chain_pava(noisy: np.ndarray, equal_next: np.ndarray, G: int) -> np.ndarray:
    """Continuous relaxation of Model 3 (spec 003 §3.4 cross-check): equality runs merged into
    weighted blocks, isotonic regression on all blocks but the last (fixed at G), clip to [0, G].
    Returns one float per chain node."""
    starts = np.concatenate([[0], np.flatnonzero(equal_next == 0) + 1])
    weights = np.diff(np.concatenate([starts, [noisy.size]])).astype(np.float64)
    means = np.add.reduceat(noisy.astype(np.float64), starts) / weights
    fit = np.empty_like(means)
    if means.size > 1:
        fit[:-1] = isotonic_regression(means[:-1], weights=weights[:-1]).x
    fit[-1] = G
    fit = np.clip(fit, 0, G)
    return np.repeat(fit, weights.astype(np.int64))


def chain_postprocess(
    hierarchy: Hierarchy,
    noisy_chain: np.ndarray,
    G: int,
    N: int,
    *,
    scale: np.ndarray,
    window: str | int = "auto",
    max_rounds: int = 12,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Model 3 (spec 003 §3.4, (C6)-(C10)) by the exact chain DP, decoded to counts.

    Parameters
    ----------
    noisy_chain : (R·N,) int64 noisy level-cumulative chain values c̃ (chain order).
    scale : (L,) noise scale per level (for ``window="paper"``).

    Returns
    -------
    (counts (R, N) int64, info dict)
    """
    region, size, level, equal_next = chain_order(hierarchy, N)
    c = np.asarray(noisy_chain, dtype=np.int64)
    if window == "auto":
        center = round_half_up(chain_pava(c, equal_next, G))
        delta: Any = 16
    else:
        center = c
        d = _initial_delta(window, 1.0, G, 1)
        delta = (
            np.array([paper_delta(s) for s in scale])[level]
            if window == "paper"
            else np.full(c.size, d)
        )
        delta = np.minimum(delta, G)
    certified = False
    for rounds in range(1, max_rounds + 1):  # noqa: B007 (reported after the loop)
        lo, hi = _window_bounds(center, delta, G)
        lo[-1] = hi[-1] = G  # (C7): the last chain node is ⊤'s size-N root, cumulative = G
        status, bad, cost, values = solve_chain(c, lo, hi, equal_next)
        exact = bool(np.all(np.asarray(delta) >= G))
        if status == 0:
            certified = exact or not np.any(_touches(values[:-1], lo[:-1], hi[:-1], G))
            if certified:
                break
        elif exact:
            raise InfeasibleModel(f"no feasible chain (node {bad}); check G = {G}")
        delta = np.minimum(np.asarray(delta) * 2, G)
    if status != 0:
        raise InfeasibleModel(f"chain DP infeasible after {max_rounds} window doublings")
    n_chain = level_decumulate(values, level, hierarchy.n_levels)
    counts = np.zeros((hierarchy.n_regions, N), dtype=np.int64)
    counts[region, size] = n_chain
    info = {
        "cost": int(cost),
        "rounds": rounds,
        "certified": bool(certified),
        "delta": int(np.max(delta)),
        "window": str(window),
    }
    return counts, info
