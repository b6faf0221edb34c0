"""Post-processing solvers over the C++ kernels: the tree DP (M_H^dp, M_c^dp) and the chain DP
(M_c^ch), with value windows that widen until the result is certified exact (spec 003 §2.3-2.6,
§3.4).

Windows. The kernels work on a window of integer values per node. ``window`` only picks where
the windows start: ``"paper"`` uses the paper's δ = 3·⌈2λ²⌉ around the noisy value (footnote 2);
``"exact"`` uses [0, G]; an int is the starting half-width δ; ``"auto"`` (default) a smaller δ.
Tree windows are centred on the noisy values, chain windows (except ``"paper"``) on the rounded
continuous optimum of Model 3 (weighted PAVA), next to which the integer optimum lies.

Certificate [our resolution of spec 003 §2.6; see docs/certification.md]. Model 1 is the
minimisation of a laminar convex function of the leaf values on {Σ leaves = G}, an M-convex
function: a solution is optimal as soon as no exchange of one unit between two leaves improves
it. Model 3 is a separable convex function on monotone sequences, an L♮-convex function: a
solution is optimal as soon as no shift of a set of nodes by ±1 improves it (Murota, *Discrete
Convex Analysis*, Thms 6.26 and 7.14). If every node's value lies strictly inside its window (or
on 0 / G, bounds of the exact problem too), every such move of the exact problem is also a move
of the windowed problem, which the DP solves exhaustively in integer arithmetic; so the windowed
optimum is the exact optimum over [0, G]. Otherwise the windows of the nodes on an edge (and of
their ancestors) are doubled and the DP re-run. A doubled window stops at [0, G], where no node can
touch an edge, so the loop ends — certified — after at most ⌈log₂ G⌉ + 1 rounds per node; there
is no round limit. When the windows would need more than ``max_cells`` values in all or
``max_table`` in one node (tree windows are centred on the noisy values, so this happens when
the noise scale λ reaches ~10⁷ while G is larger still), :class:`~privopt.errors.SolverLimit`
is raised instead of returning anything uncertified.

Costs are exact Python integers recomputed from the returned values (never an int64 that could
wrap); the kernels store slopes only and refuse inputs whose slopes could leave int64.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from typing import Any

import numpy as np
from scipy.optimize import isotonic_regression

from privopt._core import census as _kernels
from privopt._progress import progress_bar
from privopt._validation import (
    check_finite_array,
    check_int,
    check_positive,
    finite_result,
    numeric_array,
)
from privopt.census.forest import ForestRunner
from privopt.census.hierarchy import Hierarchy
from privopt.census.squares import squared_distance, sum_of_squares
from privopt.errors import InfeasibleModel, InvalidInput, SolverLimit

__all__ = [
    "DEFAULT_MAX_CELLS",
    "DEFAULT_MAX_TABLE",
    "MAX_ABS_VALUE",
    "paper_delta",
    "tree_postprocess",
    "chain_postprocess",
    "chain_order",
    "check_window",
    "round_half_up",
    "solve_tree",
    "solve_chain",
    "sum_of_squares",
]

#: Window values one DP round may use (tree: internal nodes, ~4 bytes of merge trace each;
#: chain: every node, ~1 ns of work each).
DEFAULT_MAX_CELLS = 1 << 30
#: Values of one node's window (an internal table holds 8 bytes per value while it is live).
DEFAULT_MAX_TABLE = 1 << 27
#: Largest |noisy value| and G the kernels accept (2⁶¹: differences and slopes fit in int64).
MAX_ABS_VALUE = 1 << 61
#: ``window="auto"`` starts a region of fanout k at δ = AUTO_WIDTH·λ·√(1+k) (capped by the
#: paper's δ and G); nodes whose optimum lies farther widen individually.
AUTO_WIDTH = 4.0


@finite_result(cause="a noise scale beyond float64")
def paper_delta(scale: float) -> int:
    """δ = 3·⌈2λ²⌉, three times the double-geometric variance (the census paper's footnote 2)."""
    scale = check_positive("scale", scale)
    return 3 * math.ceil(2.0 * scale * scale)


def round_half_up(x: np.ndarray) -> np.ndarray:
    """floor(x + 1/2) as int64 (spec 003 §3.3 resolution; numpy's round is half-to-even)."""
    return np.floor(np.asarray(x, dtype=np.float64) + 0.5).astype(np.int64)


def _check_range(name: str, arr: np.ndarray, G: int) -> None:
    if G > MAX_ABS_VALUE:
        raise InvalidInput(f"G = {G} is above the largest supported total 2^61")
    # max and min rather than abs: no (R, N) temporary
    if arr.size and max(int(arr.max()), -int(arr.min())) > MAX_ABS_VALUE:
        raise InvalidInput(f"{name} has a value of magnitude above 2^61 (largest supported)")


def _window_bounds(
    center: np.ndarray, delta: np.ndarray | int, G: int
) -> tuple[np.ndarray, np.ndarray]:
    c = np.clip(center, 0, G)
    return np.maximum(c - delta, 0), np.minimum(c + delta, G)


def _touches(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, G: int) -> np.ndarray:
    """Nodes on (or beyond) a window edge that is not a bound of the exact problem."""
    return ((values <= lo) & (lo > 0)) | ((values >= hi) & (hi < G))


def _certified_info(cost: int, rounds: int, delta: np.ndarray | int, window: Any) -> dict:
    """info of a certified DP result: the windowed DP is exhaustive, so cost is its own bound."""
    return {
        "cost": cost,
        "lower_bound": cost,
        "relative_gap": 0.0,
        "status": "optimal",
        "certified": True,
        "rounds": rounds,
        "delta": int(np.max(delta, initial=0)),
        "window": str(window),
    }


def _kernel_error(what: str, exc: Exception) -> Exception:
    if "limit" in str(exc):  # a table above the kernel's size limit (std::length_error)
        return SolverLimit(f"{what}: {exc}")
    if isinstance(exc, OverflowError):
        return InvalidInput(f"{what}: values too large for exact integer arithmetic ({exc})")
    return InvalidInput(f"{what}: {exc}")


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
    max_table: int = DEFAULT_MAX_TABLE,
) -> tuple[int, int, int | None, np.ndarray, int]:
    """Thin call of the C++ tree DP; returns (status, bad_node, cost or None, values,
    n_widened)."""
    return _kernels.tree_dp(
        child_ptr, child_idx, noisy, weight, lo, hi, int(root), bool(widen), max_table
    )


def tree_postprocess(
    hierarchy: Hierarchy,
    noisy: np.ndarray,
    G: int,
    *,
    scale: float | np.ndarray,
    window: str | int = "auto",
    max_cells: int = DEFAULT_MAX_CELLS,
    max_table: int = DEFAULT_MAX_TABLE,
    executor: Executor | None = None,
    n_tasks: int | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Consistent, integral, non-negative, faithful counts closest (L2) to ``noisy``, certified.

    Solves Model 1 of the census paper ((H1)-(H4)) exactly by the tree DP over T^dp.

    Parameters
    ----------
    hierarchy : region tree (R regions).
    noisy : (R, N) integer noisy counts ñ.
    G : public total number of groups.
    scale : noise scale λ, one for all levels or (L,) one per level (sets the starting
        windows; not a privacy parameter here). For noise other than the double geometric,
        the λ of the same variance (2λ² = variance).
    window : ``"auto"``, ``"paper"``, ``"exact"`` or an int δ: the starting windows (see the
        module docstring); every choice ends certified.
    max_cells : the most window values (internal nodes) one DP round may use.
    max_table : the most values of one node's window.
    executor : optional :class:`concurrent.futures.Executor` (or a Dask client's
        ``get_executor()``): the subtrees below a cut level (several per task) are solved as
        tasks on it, the levels above in this process, with the same result, bit for bit, as
        the serial run (:mod:`privopt.census.forest`).
    n_tasks : number of task batches per round on ``executor`` (default 4 per worker).

    Returns
    -------
    (counts, info): (R, N) int64 counts and a dict — ``cost`` (exact int, Σ (counts − ñ)²),
    ``lower_bound`` (= cost: the windowed DP is exhaustive and certified exact), ``relative_gap``
    (0.0), ``status`` (``"optimal"``), ``certified`` (True), ``rounds``, ``delta`` (largest
    window half-width of the final round), ``widened`` (internal windows the kernel replaced by
    their children's range in the final round), ``window``.

    Raises
    ------
    InvalidInput : bad shapes, non-integers, |values| or G above 2⁶¹.
    SolverLimit : the windows would need more than ``max_cells`` values (or ``max_table`` in
        one node).

    Example
    -------
    >>> from privopt.census import Hierarchy
    >>> h = Hierarchy.from_nested({"US": ["GA", "NY"]})
    >>> counts, info = tree_postprocess(h, np.array([[4], [3], [-1]]), 3, scale=1.0)
    >>> counts.ravel().tolist(), info["cost"], info["certified"]
    ([3, 3, 0], 2, True)
    """
    noisy = np.ascontiguousarray(_as_int_matrix("noisy", noisy, hierarchy.n_regions))
    G = _check_G(G)
    level_scale = _level_scales(scale, hierarchy.n_levels)
    if executor is None:  # on an executor each task checks its own rows (its C++ session)
        _check_range("noisy", noisy, G)
    R, N = noisy.shape
    fanout = np.diff(hierarchy.child_ptr)
    internal = fanout > 0
    region_delta = _initial_deltas(window, level_scale, G, fanout, hierarchy.level)
    scale = float(level_scale.max())
    shift = np.zeros((R, N), dtype=np.uint8)  # node (r, s): window half-width δ_r·2^shift
    try:
        runner = ForestRunner(
            hierarchy, noisy, region_delta, shift, G, max_table, executor=executor, n_tasks=n_tasks
        )
    except InvalidInput:
        raise
    except (ValueError, OverflowError) as exc:  # the rows the driver solves itself
        raise _kernel_error("census tree DP", exc) from None
    dirty: set[int] | None = None
    rounds = 0
    with progress_bar(desc="census tree DP", unit="round") as bar:
        while True:
            rounds += 1
            _check_budget(region_delta, shift, internal, G, max_cells, max_table, rounds, scale)
            try:
                run = runner.run(dirty)
            except (ValueError, OverflowError) as exc:
                raise _kernel_error("census tree DP", exc) from None
            bar.update(1)
            if run.status != 0:  # ⊤ cannot reach G inside the windows: widen everything
                if np.all(_half_widths(region_delta, shift, G) >= G):
                    raise InfeasibleModel(f"no consistent release exists; check G = {G}")
                np.minimum(shift + 1, 63, out=shift)
                dirty = None
                bar.set_postfix_str("widening every window", refresh=False)
                continue
            touch = np.flatnonzero(run.touch.ravel())
            bar.set_postfix_str(f"{touch.size} windows touched", refresh=False)
            if touch.size == 0:
                break
            regions, sizes = _with_ancestors(hierarchy, touch // N, touch % N)
            nodes = np.unique(regions * N + sizes)  # double each window once per round
            regions, sizes = nodes // N, nodes % N
            shift[regions, sizes] = np.minimum(shift[regions, sizes] + 1, 63)
            dirty = set(runner.subtree_of[regions].tolist()) - {-1}
    values = run.values  # the runner is done with it: no copy
    # δ of the windows that cost (internal regions; the root when it is the only region).
    rows = internal if internal.any() else slice(None)
    used = _half_widths(region_delta[rows], shift[rows], G)
    cost = squared_distance(values, noisy) if run.cost is None else run.cost
    info = _certified_info(cost, rounds, used, window)
    info["widened"] = run.widened
    return values, info


def _level_scales(scale: Any, n_levels: int) -> np.ndarray:
    """``scale`` as (L,) positive finite values: one number for every level, or one per level."""
    if np.ndim(scale) == 0:
        return np.full(n_levels, check_positive("scale", scale))
    arr = check_finite_array("scale", scale, shape=(n_levels,))
    if np.any(arr <= 0):
        raise InvalidInput(f"scale must be > 0 per level, got {arr.tolist()}")
    return arr


def _half_widths(region_delta: np.ndarray, shift: np.ndarray, G: int) -> np.ndarray:
    """Half-width per node (R, N): δ_r·2^shift, capped at G (as the kernel computes it)."""
    d = region_delta[:, None].astype(np.float64) * np.exp2(shift)
    return np.where(d >= G, np.maximum(region_delta[:, None], G), d).astype(np.int64)


def _check_budget(
    region_delta: np.ndarray,
    shift: np.ndarray,
    internal: np.ndarray,
    G: int,
    max_cells: int,
    max_table: int,
    rounds: int,
    scale: float,
) -> None:
    """SolverLimit when the internal windows (tables and traces) would exceed the limits."""
    d = _half_widths(region_delta[internal], shift[internal], G)
    width = np.minimum(2 * d + 1, G + 1)
    total = int(width.sum())
    biggest = int(width.max(initial=0))
    if total > max_cells or biggest > max_table:
        raise SolverLimit(
            f"census tree DP: after {rounds - 1} widening rounds the windows need {total} "
            f"values ({biggest} in one node), above max_cells = {max_cells} / max_table = "
            f"{max_table} (noise scale {scale:g} against G = {G})"
        )


def _with_ancestors(
    h: Hierarchy, region: np.ndarray, size: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(region, size) index arrays of the given nodes and of all their region ancestors."""
    regions, sizes = [region], [size]
    for _ in range(h.n_levels - 1):
        keep = region > 0
        region, size = h.parent[region[keep]], size[keep]
        regions.append(region)
        sizes.append(size)
    return np.concatenate(regions), np.concatenate(sizes)


def _as_int_matrix(name: str, value: Any, n_rows: int) -> np.ndarray:
    arr = numeric_array(name, value)
    if arr.ndim != 2 or arr.shape[0] != n_rows or arr.shape[1] < 1:
        raise InvalidInput(f"{name} must have shape ({n_rows}, N), got {arr.shape}")
    return _as_int(name, arr)


def _as_int(name: str, arr: np.ndarray) -> np.ndarray:
    """A numeric array (by :func:`privopt._validation.numeric_array`) as int64: integral
    floats pass, fractions, NaN/inf and magnitudes above 2⁶¹ do not."""
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise InvalidInput(f"{name} must hold finite integers")
        if arr.size and float(np.abs(arr).max()) > MAX_ABS_VALUE:
            raise InvalidInput(f"{name} has a value of magnitude above 2^61")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > MAX_ABS_VALUE:
        raise InvalidInput(f"{name} has a value above 2^61")
    return arr.astype(np.int64, copy=False)  # read-only below: no copy of int64 input


def _check_G(G: Any) -> int:
    return check_int("G", G, minimum=0, maximum=MAX_ABS_VALUE)


def check_window(window: Any) -> str | int:
    """``window`` if it is ``"auto"``, ``"paper"``, ``"exact"`` or an int ≥ 1, else InvalidInput."""
    if isinstance(window, str):
        if window not in ("auto", "paper", "exact"):
            raise InvalidInput(f"window must be 'auto', 'paper', 'exact' or an int, got {window!r}")
        return window
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise InvalidInput(
            f"window must be 'auto', 'paper', 'exact' or an int >= 1, got {window!r}"
        )
    return int(window)


def _initial_deltas(
    window: str | int, scale: Any, G: int, fanout: np.ndarray, level: np.ndarray | None = None
) -> np.ndarray:
    """Starting half-width per region (R,), from the noise scale λ: one for every region, or
    (L,) one per level with ``level`` (R,) each region's level.
    ``"auto"`` and an int: [0, G] for the leaves — a leaf is an implicit quadratic, its window
    costs nothing, and a leaf under a wide parent moves by many λ when non-negativity binds —;
    internal regions start at the int, or for ``"auto"`` at AUTO_WIDTH·λ·√(1+k) with k the
    region's fanout (its optimum moves with the sum of its children's noise). ``"paper"`` (δ of
    each region's λ) and ``"exact"`` apply to all nodes."""
    per_level = np.atleast_1d(np.asarray(scale, dtype=np.float64))
    # Each region's row of per_level; the per-λ work runs once per level (a handful), not once
    # per region, and nothing sorts the R regions' scales.
    which = np.zeros(fanout.shape, dtype=np.intp) if level is None else level
    if window in ("paper", "exact"):
        per = [_initial_delta(window, float(s), G, 1) for s in per_level]
        return np.asarray(per, dtype=np.int64)[which]
    if window == "auto":
        lam = per_level[which]
        own = np.maximum(8, np.ceil(AUTO_WIDTH * lam * np.sqrt(1.0 + fanout)))
        paper = np.asarray([float(paper_delta(float(s))) for s in per_level])
        own = np.minimum(own, paper[which])
    else:
        own = np.full(fanout.size, _initial_delta(window, float(per_level.max()), G, 1))
    own = np.where(fanout == 0, G, own)
    return np.maximum(1, np.minimum(own, G)).astype(np.int64)


def _initial_delta(window: str | int, scale: float, G: int, max_fanout: int) -> int:
    """Starting window half-width δ ≥ 1 (capped at G)."""
    window = check_window(window)
    if isinstance(window, str):
        if window == "paper":
            return max(1, min(paper_delta(scale), G))
        if window == "exact":
            return max(1, G)
        if window == "auto":
            return max(
                1,
                min(
                    paper_delta(scale),
                    max(8, math.ceil(AUTO_WIDTH * scale * math.sqrt(1 + max_fanout))),
                    G,
                ),
            )
    return max(1, min(int(window), G))


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
    noisy: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    equal_next: np.ndarray,
    max_cells: int = DEFAULT_MAX_CELLS,
    max_table: int = DEFAULT_MAX_TABLE,
) -> tuple[int, int, int | None, np.ndarray]:
    """Thin call of the C++ chain DP; returns (status, bad_node, cost or None, values)."""
    return _kernels.chain_dp(
        noisy, lo, hi, equal_next, max_table_size=max_table, max_cells=max_cells
    )


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
    max_cells: int = DEFAULT_MAX_CELLS,
    max_table: int = DEFAULT_MAX_TABLE,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Model 3 of the census paper ((C6)-(C10)) by the exact chain DP, certified, decoded to counts.

    Parameters
    ----------
    noisy_chain : (R·N,) integer noisy level-cumulative chain values c̃ (chain order).
    scale : (L,) noise scale per level (for ``window="paper"``).
    window : starting windows (module docstring); every choice ends certified.
    max_cells : the most window values (all chain nodes) one DP round may use.
    max_table : the most values of one node's window.

    Returns
    -------
    (counts (R, N) int64, info dict): ``cost`` (exact int, Σ (ĉ − c̃)² along the chain),
    ``lower_bound`` (= cost), ``relative_gap`` (0.0), ``status`` (``"optimal"``), ``certified``,
    ``rounds``, ``delta`` (largest window half-width of the final round), ``window``.
    """
    region, size, level, equal_next = chain_order(hierarchy, N)
    c = numeric_array("noisy_chain", noisy_chain)
    if c.ndim != 1 or c.size != region.size:
        raise InvalidInput(f"noisy_chain must have shape ({region.size},), got {c.shape}")
    c = _as_int("noisy_chain", c)
    G = _check_G(G)
    scale = check_finite_array("scale", scale, shape=(hierarchy.n_levels,))
    if np.any(scale <= 0):
        raise InvalidInput(f"scale must be > 0 per level, got {scale.tolist()}")
    _check_range("noisy_chain", c, G)
    if window == "paper":  # the paper's windows: around the noisy values
        center = c
        delta = np.array([max(1, paper_delta(s)) for s in scale], dtype=np.int64)[level]
    else:  # around the rounded continuous optimum (PAVA), where the integer optimum lies
        center = round_half_up(chain_pava(c, equal_next, G))
        d = 16 if window == "auto" else _initial_delta(window, 1.0, G, 1)
        delta = np.full(c.size, d, dtype=np.int64)
    delta = np.minimum(delta, max(G, 1))
    rounds = 0
    with progress_bar(desc="census chain DP", unit="round") as bar:
        while True:
            rounds += 1
            bar.update(1)
            lo, hi = _window_bounds(center, delta, G)
            lo[-1] = hi[-1] = G  # (C7): the last chain node is ⊤'s size-N root, cumulative = G
            try:
                status, _, _, values = solve_chain(c, lo, hi, equal_next, max_cells, max_table)
            except (ValueError, OverflowError) as exc:
                if "max_cells" in str(exc) or "limit" in str(exc):
                    raise SolverLimit(
                        f"census chain DP: after {rounds - 1} widening rounds the windows need "
                        f"more than max_cells = {max_cells} values (or max_table = {max_table} in "
                        f"one node) against G = {G}"
                    ) from None
                raise _kernel_error("census chain DP", exc) from None
            exact = bool(np.all(delta >= G))
            if status == 0 and not np.any(_touches(values[:-1], lo[:-1], hi[:-1], G)):
                break
            if status != 0 and exact:
                raise InfeasibleModel(f"no feasible chain; check G = {G}")
            delta = np.minimum(delta * 2, max(G, 1))
    n_chain = level_decumulate(values, level, hierarchy.n_levels)
    counts = np.zeros((hierarchy.n_regions, N), dtype=np.int64)
    counts[region, size] = n_chain
    return counts, _certified_info(sum_of_squares(values - c), rounds, delta, window)
