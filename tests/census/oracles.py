"""Solver-independent oracles for the census post-processings: exhaustive enumeration of Models 1
and 3 on small G, and local-optimality checks (no improving unit move) that prove optimality by
discrete convexity (M-convexity of Model 1, L♮-convexity of Model 3) without calling a DP.

Everything here is plain numpy / itertools with exact Python-int costs.
"""

from __future__ import annotations

import itertools

import numpy as np
from privopt.census import Hierarchy
from privopt.census.solvers import chain_order
from scipy.optimize import isotonic_regression


def exact_cost(values: np.ndarray, noisy: np.ndarray) -> int:
    """Σ (values − noisy)² in Python ints (no int64 wrap-around)."""
    d = np.asarray(values, dtype=object) - np.asarray(noisy, dtype=object)
    return int((d * d).sum())


# ------------------------------------------------------------------------------------ Model 1
def tree_brute_force(h: Hierarchy, noisy: np.ndarray, G: int) -> int:
    """min Σ_{r,s} (x − ñ)² over consistent non-negative integer tables with every level summing
    to G, by enumerating every way to put G groups into the leaf cells."""
    _R, N = noisy.shape
    n_leaves = h.leaves.stop - h.leaves.start
    cells = n_leaves * N
    best = None
    for combo in itertools.combinations_with_replacement(range(cells), G):
        leaf = np.bincount(np.asarray(combo, dtype=np.int64), minlength=cells).reshape(n_leaves, N)
        cost = exact_cost(h.aggregate(leaf), noisy)
        best = cost if best is None or cost < best else best
    return best


def tree_improving_move(h: Hierarchy, noisy: np.ndarray, counts: np.ndarray) -> tuple | None:
    """An exchange of one group between two leaf cells (leaf region, size) that lowers
    Σ (x − ñ)², or None. Model 1 is M-convex in the leaf cells, so None proves optimality.

    Moving one unit into leaf cell i changes each region on i's path by +1 (cost 2d + 1), out of
    j by −1 (cost −2d + 1); regions on both paths (same size, above the lowest common ancestor)
    do not change."""
    _R, N = noisy.shape
    d = np.asarray(counts, dtype=np.int64) - np.asarray(noisy, dtype=np.int64)
    leaves = np.arange(h.leaves.start, h.leaves.stop)
    paths = []
    for leaf in leaves:
        path, r = [], int(leaf)
        while r >= 0:
            path.append(r)
            r = int(h.parent[r])
        paths.append(path)
    gain_in, gain_out = {}, {}
    for li, path in enumerate(paths):
        for s in range(N):
            gain_in[li, s] = sum(2 * int(d[r, s]) + 1 for r in path)
            gain_out[li, s] = sum(-2 * int(d[r, s]) + 1 for r in path)
    for (li, si), (lj, sj) in itertools.permutations(gain_in, 2):
        if counts[leaves[lj], sj] < 1:
            continue
        common = len(set(paths[li]) & set(paths[lj])) if si == sj else 0
        delta = gain_in[li, si] + gain_out[lj, sj] - 2 * common
        if delta < 0:
            return (int(leaves[li]), si), (int(leaves[lj]), sj), delta
    return None


# ------------------------------------------------------------------------------------ Model 3
def chain_blocks(equal_next: np.ndarray) -> np.ndarray:
    """Block id of every chain node: runs joined by equality edges."""
    return np.concatenate([[0], np.cumsum(np.asarray(equal_next) == 0)])


def chain_brute_force(c: np.ndarray, equal_next: np.ndarray, G: int) -> int:
    """min Σ (x − c̃)² over integer chains with x non-decreasing, equal across equality edges,
    in [0, G] and ending at G, by enumerating the block values."""
    block = chain_blocks(equal_next)
    B = int(block[-1]) + 1
    best = None
    for head in itertools.combinations_with_replacement(range(G + 1), B - 1):
        x = np.asarray([*list(head), G], dtype=np.int64)[block]
        cost = exact_cost(x, c)
        best = cost if best is None or cost < best else best
    return best


def chain_improving_move(
    c: np.ndarray, equal_next: np.ndarray, x: np.ndarray, G: int
) -> tuple | None:
    """A set of blocks whose shift by +1 or −1 keeps the chain feasible and lowers the cost, or
    None. Model 3 is L♮-convex, so None proves optimality.

    A shift of set S by +1 stays monotone iff, within each maximal group of consecutive blocks
    of equal value, S takes a suffix (a prefix for −1); the last block (fixed to G) never
    moves, nor do blocks at G (+1) or at 0 (−1). Groups are independent, so the best move is the
    most negative suffix / prefix sum per group."""
    block = chain_blocks(equal_next)
    B = int(block[-1]) + 1
    xb = np.zeros(B, dtype=np.int64)
    xb[block] = x
    d = np.asarray(x, dtype=object) - np.asarray(c, dtype=object)
    up = [0] * B
    down = [0] * B
    for i, b in enumerate(block):
        up[b] += 2 * d[i] + 1
        down[b] += -2 * d[i] + 1
    movable = list(range(B - 1))  # the last block is fixed to G
    groups = [list(g) for _, g in itertools.groupby(movable, key=lambda b: xb[b])]
    for g in groups:
        if xb[g[0]] < G:
            for k in range(len(g)):  # suffix g[k:], +1
                total = sum(up[b] for b in g[k:])
                if total < 0:
                    return ("+1", g[k:], total)
        if xb[g[0]] > 0:
            for k in range(1, len(g) + 1):  # prefix g[:k], −1
                total = sum(down[b] for b in g[:k])
                if total < 0:
                    return ("-1", g[:k], total)
    return None


def chain_of(h: Hierarchy, counts: np.ndarray) -> np.ndarray:
    """The level-wise cumulative chain (spec 003 §3.4) of a counts table, recomputed here."""
    region, size, level, _ = chain_order(h, counts.shape[1])
    values = counts[region, size]
    out = np.empty_like(values)
    for lev in range(h.n_levels):
        m = level == lev
        out[m] = np.cumsum(values[m])
    return out


def m_c_dp_target(noisy_cumulative: np.ndarray, G: int) -> np.ndarray:
    """M_c^dp's step-3 input n̄ (spec 003 §3.3), recomputed with scipy's isotonic regression:
    per region, isotonic fit of c̃, clipped to [0, G], rounded half up, ⊖."""
    iso = np.vstack([isotonic_regression(row.astype(float)).x for row in noisy_cumulative])
    rounded = np.floor(np.clip(iso, 0, G) + 0.5).astype(np.int64)
    return np.diff(rounded, axis=1, prepend=0)
