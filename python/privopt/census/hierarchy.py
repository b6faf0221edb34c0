"""Region hierarchies and group-size counts (spec 003 §1.1-1.2).

A :class:`Hierarchy` is a rooted tree of regions with all leaves at the same depth L (the
paper's assumption, spec 003 §1.2). Unequal depths are rejected with a clear error, or, with
``pad_leaves=True``, supported by extending each shallow leaf with single-child copies (a single
child always equals its parent, so the model and its guarantees are unchanged). Regions are
stored in breadth-first order (root first, then level by level, children contiguous and in
declared order), so that "level ℓ" is a contiguous slice of region indices.

:class:`CensusCounts` holds the private input: ``n[r, s-1]`` = number of groups (households) of
size ``s`` in region ``r`` (s = 1..N), consistent over the hierarchy, with the public total G.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privopt import _optional
from privopt._validation import check_bool, check_finite_array, check_int, numeric_array
from privopt.errors import InvalidInput

__all__ = ["Hierarchy", "CensusCounts", "cumulate", "decumulate"]


#: Largest count and total G accepted (2⁶¹: the DP kernels' exact integer range).
MAX_COUNT = 1 << 61


def _count_array(name: str, value: Any) -> np.ndarray:
    """An int64 array of counts: integral, finite, |value| ≤ 2⁶¹ (no truncation or wrap)."""
    raw = value if isinstance(value, np.ndarray) else None
    if raw is not None and raw.dtype.kind == "u" and raw.size and int(raw.max()) > MAX_COUNT:
        bad = tuple(np.argwhere(raw > MAX_COUNT)[0].tolist())
        raise InvalidInput(f"{name} has a value above 2^61 at index {bad}")
    if raw is not None and raw.dtype.kind == "f" and raw.size:
        if not np.all(np.isfinite(raw)):
            bad = tuple(np.argwhere(~np.isfinite(raw))[0].tolist())
            raise InvalidInput(f"{name} must hold integers, got NaN or inf at index {bad}")
        big = np.abs(raw) > MAX_COUNT
        if np.any(big & np.isfinite(raw)):
            bad = tuple(np.argwhere(big & np.isfinite(raw))[0].tolist())
            raise InvalidInput(f"{name} has a value above 2^61 at index {bad}")
    return check_finite_array(name, value, dtype=np.int64)


def _first_row(records: Any, column: str, group: Any) -> int:
    """Row position of the first record of ``group``: messages point at a row, never at a
    group id (which is data)."""
    return int(np.argmax((records[column] == group).to_numpy()))


def cumulate(n: np.ndarray) -> np.ndarray:
    """⊕ (spec 003 §3.1): cumulative counts ``c_s = Σ_{k≤s} n_k`` along the last axis."""
    return np.cumsum(check_finite_array("n", n, dtype=np.int64), axis=-1)


def decumulate(c: np.ndarray) -> np.ndarray:
    """⊖ (spec 003 §3.1): ``n_1 = c_1``, ``n_s = c_s − c_{s−1}`` along the last axis."""
    return np.diff(check_finite_array("c", c, dtype=np.int64), axis=-1, prepend=0)


def _path(row: Sequence[Any]) -> list[Any]:
    """A row of region columns up to its first missing value."""
    pd = _optional.pandas()

    out = []
    for v in row:
        if pd.isna(v):
            break
        out.append(v)
    return out


def _pad(
    parent: np.ndarray, names: np.ndarray, depth: np.ndarray, leaves: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Parent and name arrays with every shallow leaf extended by single-child copies."""
    bottom = int(depth.max())
    new_parent, new_names = list(parent), list(names)
    for leaf in np.flatnonzero(leaves & (depth < bottom)):
        above, name = int(leaf), str(names[leaf])
        last = name.rsplit("/", 1)[-1]
        for _ in range(bottom - int(depth[leaf])):
            name = f"{name}/{last}"
            new_parent.append(above)
            new_names.append(name)
            above = len(new_parent) - 1
    return np.asarray(new_parent, dtype=np.int64), np.asarray(new_names, dtype=object)


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A region tree in breadth-first order (build it with the ``from_*`` constructors).

    Attributes
    ----------
    parent : (R,) int64, parent region index, -1 for the root (index 0).
    names : (R,) object array of region names (unique).
    level : (R,) int64, 0 for the root … L-1 for the leaves (the paper's ℓ is ``level + 1``).
    level_names : tuple of L level names (e.g. ``("nation", "state", "county")``).
    child_ptr, child_idx : CSR children lists (children of r are
        ``child_idx[child_ptr[r]:child_ptr[r+1]]``, in declared order).
    """

    parent: np.ndarray
    names: np.ndarray
    level: np.ndarray
    level_names: tuple[str, ...]
    child_ptr: np.ndarray = field(repr=False)
    child_idx: np.ndarray = field(repr=False)

    # ----------------------------------------------------------------- constructors
    @classmethod
    def from_parents(
        cls,
        parent: Sequence[int] | np.ndarray,
        names: Sequence[Any] | np.ndarray | None = None,
        level_names: Sequence[str] | None = None,
        *,
        pad_leaves: bool = False,
    ) -> Hierarchy:
        """Build from a parent array (``parent[i] = -1`` for the single root).

        Parameters
        ----------
        parent : (R,) integers; region i's parent index, -1 for the root.
        names : optional (R,) unique region names (default: ``"0"``, ``"1"``, …).
        level_names : optional L names of the levels.
        pad_leaves : support leaves at different depths by extending each shallow leaf with a
            chain of single-child copies down to the deepest level (a city-state that is its
            own county). The copy of region ``"DC"`` one level down is named ``"DC/DC"``. Counts
            are then given for the padded leaves (``hierarchy.leaves``); the model is unchanged,
            since a single child always equals its parent.

        Raises
        ------
        InvalidInput
            No or several roots, an index out of range, a cycle, leaves at different depths
            (unless ``pad_leaves``), duplicate names.

        Example
        -------
        >>> h = Hierarchy.from_parents([-1, 0, 0, 1], ["US", "VA", "DC", "VA-1"], pad_leaves=True)
        >>> h.names.tolist(), h.level_sizes.tolist()
        (['US', 'VA', 'DC', 'VA-1', 'DC/DC'], [1, 2, 2])
        """
        pad_leaves = check_bool("pad_leaves", pad_leaves)
        par, root = _checked_parents(parent)
        R = par.size
        names_arr = _checked_names(names, R)
        bfs, depth, counts = _breadth_first(par, root)
        leaves = counts == 0
        leaf_depths = np.unique(depth[leaves])
        if leaf_depths.size != 1 and pad_leaves:
            return cls.from_parents(*_pad(par, names_arr, depth, leaves), level_names)
        if leaf_depths.size != 1:
            raise InvalidInput(
                f"all leaves must be at the same depth (spec 003 §1.2); found leaf depths "
                f"{leaf_depths.tolist()}: pad shorter branches with single-child regions "
                f"(pad_leaves=True does it)"
            )
        level_names = _checked_level_names(level_names, int(leaf_depths[0]) + 1)
        perm = np.asarray(bfs, dtype=np.int64)  # new index -> old index
        inv = np.empty(R, dtype=np.int64)
        inv[perm] = np.arange(R)
        new_parent = np.where(par[perm] >= 0, inv[np.maximum(par[perm], 0)], -1)
        new_counts = counts[perm]
        new_ptr = np.concatenate([[0], np.cumsum(new_counts)]).astype(np.int64)
        # In BFS order the children of r are exactly the regions with parent r, contiguous.
        child_idx = np.arange(1, R, dtype=np.int64)
        return cls(new_parent, names_arr[perm], depth[perm], level_names, new_ptr, child_idx)

    @classmethod
    def from_nested(
        cls,
        tree: Mapping[str, Any],
        level_names: Sequence[str] | None = None,
        *,
        pad_leaves: bool = False,
    ) -> Hierarchy:
        """Build from a nested mapping ``{root: {child: {...}, ...}}``; a leaf's value is an empty
        mapping or None, and a list of names is a shorthand for leaves. ``pad_leaves`` as in
        :meth:`from_parents`.

        Example
        -------
        >>> Hierarchy.from_nested({"US": ["GA", "NY"]}).names.tolist()
        ['US', 'GA', 'NY']
        """
        if not isinstance(tree, Mapping) or len(tree) != 1:
            raise InvalidInput("tree must be a mapping with exactly one root key")
        names: list[str] = []
        parent: list[int] = []
        stack: list[tuple[Any, Any, int]] = [(k, v, -1) for k, v in tree.items()]
        while stack:
            name, sub, par = stack.pop(0)
            idx = len(names)
            names.append(name)
            parent.append(par)
            if sub is None:
                continue
            if isinstance(sub, Mapping):
                stack.extend((k, v, idx) for k, v in sub.items())
            elif isinstance(sub, (list, tuple)):
                stack.extend((k, None, idx) for k in sub)
            else:
                raise InvalidInput(f"tree: children of {name!r} must be a mapping or list")
        return cls.from_parents(parent, names, level_names, pad_leaves=pad_leaves)

    @classmethod
    def from_frame(
        cls,
        frame: Any,
        level_columns: Sequence[str],
        root_name: str = "root",
        *,
        pad_leaves: bool = False,
    ) -> Hierarchy:
        """Build from a DataFrame with one column per level below the root (e.g. state, county);
        each distinct row path is a leaf. Region names are the paths joined by ``"/"``. With
        ``pad_leaves``, a path may end early (missing values in its last columns, e.g. a state
        without counties) and is padded as in :meth:`from_parents`."""
        cols = list(level_columns)
        pad_leaves = check_bool("pad_leaves", pad_leaves)
        if not cols:
            raise InvalidInput("level_columns must name at least one column")
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise InvalidInput(f"level_columns not in the frame: {missing}")
        if len(frame) == 0:
            raise InvalidInput("the frame has no rows: a hierarchy needs at least one region path")
        paths = frame[cols].drop_duplicates()
        na = paths.isna().to_numpy()
        if na.any() and not pad_leaves:
            raise InvalidInput(
                "level_columns contain missing values (pad_leaves=True accepts paths that end "
                "early)"
            )
        if np.any(na[:, 0]) or np.any(na[:, :-1] & ~na[:, 1:]):
            raise InvalidInput(
                "level_columns: a path must start with a value and may only end "
                "early (a missing value followed by a value)"
            )
        names = [root_name]
        parent = [-1]
        index = {(): 0}
        for row in paths.itertuples(index=False):
            key: tuple = ()
            for v in _path(row):
                child = (*key, v)
                if child not in index:
                    index[child] = len(names)
                    names.append("/".join(str(x) for x in child))
                    parent.append(index[key])
                key = child
        return cls.from_parents(parent, names, [root_name, *cols], pad_leaves=pad_leaves)

    # ----------------------------------------------------------------- properties
    @functools.cached_property
    def fingerprint(self) -> str:
        """SHA-256 (hex) of the tree: parents, region names and level names.

        Example
        -------
        >>> a = Hierarchy.from_nested({"US": ["GA", "NY"]})
        >>> a.fingerprint == Hierarchy.from_nested({"US": ["GA", "NY"]}).fingerprint
        True
        >>> a.fingerprint == Hierarchy.from_nested({"US": ["GA", "VA"]}).fingerprint
        False
        """
        digest = hashlib.sha256(np.ascontiguousarray(self.parent, dtype=np.int64).tobytes())
        for part in (self.names, self.level_names):
            text = "\x1f".join(map(str, part))
            digest.update(len(text).to_bytes(8, "little"))
            digest.update(text.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    @property
    def n_regions(self) -> int:
        """Number of regions R over all levels (the root included)."""
        return int(self.parent.size)

    @property
    def n_levels(self) -> int:
        """L, the number of levels (root level included)."""
        return len(self.level_names)

    def level_slice(self, lev: int) -> slice:
        """Regions of level ``lev`` (0 = root) as a contiguous slice."""
        idx = np.flatnonzero(self.level == lev)
        return slice(int(idx[0]), int(idx[-1]) + 1)

    @property
    def level_sizes(self) -> np.ndarray:
        """|R_ℓ| per level, shape (L,)."""
        return np.bincount(self.level, minlength=self.n_levels)

    @property
    def leaves(self) -> slice:
        """Index range of the leaf level in the level-ordered region arrays."""
        return self.level_slice(self.n_levels - 1)

    def index(self, name: Any) -> int:
        """Position of the region called ``name``; InvalidInput when there is none."""
        hits = np.flatnonzero(self.names == name)
        if hits.size == 0:
            raise InvalidInput(f"no region named {name!r}")
        return int(hits[0])

    def leaf_positions(self, paths: Any) -> np.ndarray:
        """Position in :attr:`leaves` of each row of a DataFrame of region columns (top level
        first, as given to :meth:`from_frame`); a path that ends early (missing values) maps
        to its padded copy. Raises InvalidInput for a path that is not a leaf."""
        pos = {n: i for i, n in enumerate(self.names[self.leaves])}

        def one(row: Sequence[Any]) -> int:
            name = "/".join(str(x) for x in _path(row))
            last = name.rsplit("/", 1)[-1]
            for _ in range(self.n_levels):
                if name in pos:
                    return pos[name]
                name = f"{name}/{last}"  # padded copy (from_parents(pad_leaves=True))
            raise InvalidInput(f"region path {'/'.join(map(str, _path(row)))!r} is not a leaf")

        return np.fromiter(
            (one(r) for r in paths.itertuples(index=False)), dtype=np.int64, count=len(paths)
        )

    def aggregate(self, leaf_values: np.ndarray) -> np.ndarray:
        """Sum leaf rows up the tree: (n_leaves, ...) -> (R, ...) consistent table."""
        out = np.zeros((self.n_regions, *leaf_values.shape[1:]), dtype=leaf_values.dtype)
        out[self.leaves] = leaf_values
        for lev in range(self.n_levels - 1, 0, -1):
            sl = self.level_slice(lev)
            np.add.at(out, self.parent[sl], out[sl])
        return out

    def postorder(self) -> np.ndarray:
        """Regions in post-order (children in declared order, then the parent; spec 003 §3.4)."""
        out: list[int] = []
        stack = [(0, False)]
        while stack:
            r, done = stack.pop()
            if done:
                out.append(r)
                continue
            stack.append((r, True))
            kids = self.child_idx[self.child_ptr[r] : self.child_ptr[r + 1]]
            stack.extend((int(c), False) for c in kids[::-1])
        return np.asarray(out, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class CensusCounts:
    """Private group-size counts over a hierarchy.

    Attributes
    ----------
    hierarchy : the region tree.
    counts : (R, N) int64, ``counts[r, s-1]`` = groups of size s in region r; consistent.
    """

    hierarchy: Hierarchy
    counts: np.ndarray

    @classmethod
    def from_leaf_counts(
        cls, hierarchy: Hierarchy, leaf_counts: Any, *, G: int | None = None
    ) -> CensusCounts:
        """Counts given for the leaves, in ``hierarchy.leaves`` order, shape (n_leaves, N);
        the other levels are sums. ``G``, when given, must equal the total (else InvalidInput)."""
        if not isinstance(hierarchy, Hierarchy):
            raise InvalidInput(f"hierarchy must be a Hierarchy, got {type(hierarchy).__name__}")
        arr = _count_array("leaf_counts", leaf_counts)
        n_leaves = hierarchy.leaves.stop - hierarchy.leaves.start
        if arr.ndim != 2 or arr.shape[0] != n_leaves or arr.shape[1] < 1:
            raise InvalidInput(f"leaf_counts must have shape ({n_leaves}, N), got {arr.shape}")
        if np.any(arr < 0):
            i, s = np.argwhere(arr < 0)[0]
            raise InvalidInput(f"leaf_counts[{i}, {s}] is negative")
        # float sum: exact enough to compare with 2^61, and never wraps.
        if float(arr.sum(dtype=np.float64)) > MAX_COUNT:
            raise InvalidInput("leaf_counts sum to more than 2^61 groups")
        out = cls(hierarchy, hierarchy.aggregate(arr))
        if G is not None and check_int("G", G, minimum=0) != out.G:
            raise InvalidInput(f"G = {G} does not match the total number of groups {out.G}")
        return out

    @classmethod
    def from_region_counts(cls, hierarchy: Hierarchy, counts: Any) -> CensusCounts:
        """A full (R, N) table; must already be consistent (parents = sums of children)."""
        arr = _count_array("counts", counts)
        if arr.ndim != 2 or arr.shape[0] != hierarchy.n_regions:
            raise InvalidInput(
                f"counts must have shape ({hierarchy.n_regions}, N), got {arr.shape}"
            )
        out = cls.from_leaf_counts(hierarchy, arr[hierarchy.leaves])
        if not np.array_equal(out.counts, arr):
            r = int(np.flatnonzero(np.any(out.counts != arr, axis=1))[0])
            raise InvalidInput(
                f"counts are not consistent: region {hierarchy.names[r]!r} is not "
                f"the sum of its children"
            )
        return out

    @classmethod
    def from_records(
        cls,
        records: Any,
        level_columns: Sequence[str],
        group_column: str | Sequence[str],
        *,
        max_size: int | None = None,
        root_name: str = "root",
        pad_leaves: bool = False,
    ) -> CensusCounts:
        """Count groups from individual records (spec 003 §1.1, z ≡ 1).

        Parameters
        ----------
        records : pandas DataFrame, one row per individual.
        level_columns : region columns from the top level below the root down to the leaf.
        group_column : group (household/unit) id column; a group's size is its row count. A list
            of columns makes each distinct combination *within a leaf* a group — a
            "count of counts" (e.g. ``["sex", "age"]``: how many sex × age cells of each size
            every region has, Kuo et al., spec 003 §4).
        max_size : N; default the largest group size. Larger groups raise InvalidInput.
        pad_leaves : accept region paths that end early (missing values in the last region
            columns), see :meth:`Hierarchy.from_frame`.

        Example
        -------
        >>> import pandas as pd
        >>> rec = pd.DataFrame({"state": ["GA", "GA", "NY"], "hh": ["a", "a", "b"]})
        >>> CensusCounts.from_records(rec, ["state"], "hh").counts.tolist()
        [[1, 1], [0, 1], [1, 0]]
        """
        if not hasattr(records, "columns") or not hasattr(records, "groupby"):
            raise InvalidInput(f"records must be a pandas DataFrame, got {type(records).__name__}")
        cols = list(level_columns)
        gcols = [group_column] if isinstance(group_column, str) else list(group_column)
        missing = [g for g in gcols if g not in records.columns]
        if not gcols or missing:
            raise InvalidInput(
                f"group_column {missing or group_column!r} is not a column of records"
            )
        missing_id = records[gcols].isna().any(axis=1).to_numpy()
        if missing_id.any():
            raise InvalidInput(
                f"group_column: the record at row position {int(np.argmax(missing_id))} has a "
                "missing group id; every individual must belong to a group"
            )
        hierarchy = Hierarchy.from_frame(records, level_columns, root_name, pad_leaves=pad_leaves)
        if len(gcols) > 1:  # a group = one combination of the group columns inside one leaf
            keys = [c for c in cols if c not in gcols] + gcols
            records = records.assign(_privopt_group=records.groupby(keys, sort=False).ngroup())
            group_column = "_privopt_group"
        else:
            group_column = gcols[0]
        per_group = records.groupby(group_column, sort=False)
        n_paths = per_group[cols].nunique(dropna=False)
        if (n_paths > 1).any().any():
            g = n_paths.index[(n_paths > 1).any(axis=1)][0]
            raise InvalidInput(
                f"the group of the record at row position {_first_row(records, group_column, g)} "
                "spans several regions; each group must live in one leaf"
            )
        sizes = per_group.size()
        first = per_group[cols].first()
        N = int(sizes.max()) if max_size is None else check_int("max_size", max_size, minimum=1)
        if sizes.max() > N:
            raise InvalidInput(
                f"the group of the record at row position "
                f"{_first_row(records, group_column, sizes.idxmax())} is larger than "
                f"max_size = {N}"
            )
        leaf_sl = hierarchy.leaves
        leaf_i = hierarchy.leaf_positions(first)
        leaf = np.zeros((leaf_sl.stop - leaf_sl.start, N), dtype=np.int64)
        np.add.at(leaf, (leaf_i, sizes.to_numpy() - 1), 1)
        return cls(hierarchy, hierarchy.aggregate(leaf))

    @property
    def G(self) -> int:
        """Public total number of groups."""
        return int(self.counts[0].sum())

    @property
    def N(self) -> int:
        """Largest group size (sizes are 1..N)."""
        return int(self.counts.shape[1])


def _checked_parents(parent: Sequence[int] | np.ndarray) -> tuple[np.ndarray, int]:
    """(parent as int64 (R,), index of the root); InvalidInput unless there is exactly one root
    and every other entry is another region's index."""
    par = numeric_array("parent", parent)
    if par.ndim != 1 or par.size == 0 or par.dtype.kind not in "iu":
        raise InvalidInput(
            f"parent must be a non-empty 1-D integer array, got dtype {par.dtype} shape {par.shape}"
        )
    par = par.astype(np.int64)
    R = par.size
    roots = np.flatnonzero(par == -1)
    if roots.size != 1:
        raise InvalidInput(f"parent must have exactly one root (entry -1), found {roots.size}")
    bad = np.flatnonzero((par < -1) | (par >= R) | (par == np.arange(R)))
    if bad.size:
        raise InvalidInput(f"parent[{bad[0]}] = {par[bad[0]]} is not a valid region index")
    return par, int(roots[0])


def _checked_names(names: Sequence[Any] | np.ndarray | None, R: int) -> np.ndarray:
    """R unique region names as an object array (default ``"0"``, ``"1"``, …)."""
    if names is None:
        return np.array([str(i) for i in range(R)], dtype=object)
    names_arr = np.empty(R, dtype=object)
    names_list = list(names)
    if len(names_list) != R:
        raise InvalidInput(f"names must have {R} entries, got {len(names_list)}")
    names_arr[:] = names_list
    if len(set(names_list)) != R:
        raise InvalidInput("names must be unique")
    return names_arr


def _breadth_first(par: np.ndarray, root: int) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(regions in breadth-first order, depth (R,), number of children (R,)); children are
    visited in their declared order. InvalidInput on a cycle or a region not below the root."""
    R = par.size
    order = np.argsort(par, kind="stable")
    counts = np.bincount(par[par >= 0], minlength=R)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    kids = order[1:]  # sorted by parent, stable: declared order (the root sorts first)
    bfs = [root]
    depth = np.full(R, -1, dtype=np.int64)
    depth[root] = 0
    frontier = np.array([root])
    while frontier.size and len(bfs) <= R:
        nxt = np.concatenate([kids[ptr[p] : ptr[p + 1]] for p in frontier]).astype(np.int64)
        if nxt.size:
            depth[nxt] = depth[frontier[0]] + 1
            bfs.extend(nxt.tolist())
        frontier = nxt
    if len(bfs) != R:
        unreached = np.flatnonzero(depth < 0)
        raise InvalidInput(
            f"parent has a cycle or a region not below the root "
            f"(region {unreached[0]} is unreachable)"
        )
    return bfs, depth, counts


def _checked_level_names(level_names: Sequence[str] | None, L: int) -> tuple[str, ...]:
    """L level names as strings (default ``level1`` … ``levelL``)."""
    if level_names is None:
        return tuple(f"level{i + 1}" for i in range(L))
    if isinstance(level_names, str):
        raise InvalidInput(
            f"level_names must be a sequence of names, not the string {level_names!r}"
        )
    names = tuple(str(x) for x in level_names)
    if len(names) != L:
        raise InvalidInput(f"level_names must have {L} entries, got {len(names)}")
    return names
