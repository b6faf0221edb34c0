"""Vectorised LP/MILP model building over HiGHS.

A :class:`LinearProgram` is a list of *column blocks* (:meth:`LinearProgram.add_variables`) and
*row blocks* (:meth:`LinearProgram.add_rows`). Row blocks are given as scipy.sparse matrices,
dense arrays or ``(rows, cols, vals)`` triples; each block is validated and stored once in
canonical CSR form (rows are what a block adds). :func:`merge_row_blocks` turns all blocks into
one CSC matrix by a stable two-pass counting sort (Numba kernels, no Python loop per row or
column); the NumPy/SciPy version :func:`merge_row_blocks_reference` is kept as the test oracle
and used for small models (no compile cost). The merged arrays go to HiGHS through the array
overload of HiGHS's ``passModel`` (:func:`privopt.lp.highs.pass_model`: numpy buffers read as
pointers; filling a ``HighsLp`` converts every entry through a Python sequence and was ~10x
slower on 10^6 nonzeros).

Row constraints read ``lower <= A x <= upper``; column bounds ``lower <= x <= upper``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from privopt._validation import check_int, check_real, numeric_array, real_array
from privopt.errors import InvalidInput
from privopt.lp import highs

__all__ = [
    "LinearProgram",
    "RowBlock",
    "merge_row_blocks",
    "concatenate_row_blocks",
    "CscArrays",
    "CsrArrays",
]

_INF = math.inf


@dataclass(frozen=True)
class RowBlock:
    """One block of rows, stored in canonical CSR form over its own columns.

    ``col_map`` maps the block's local column ``j`` to model column ``col_map[j]`` (unique).
    """

    row_start: int
    n_rows: int
    indptr: np.ndarray  # (n_rows + 1,) int64
    indices: np.ndarray  # (nnz,) int32, local column indices, no duplicates within a row
    data: np.ndarray  # (nnz,) float64
    col_map: np.ndarray  # (n_local_cols,) int64
    lower: np.ndarray  # (n_rows,) float64
    upper: np.ndarray  # (n_rows,) float64
    name: str | None = None
    col_offset: int = -1  # >= 0 when col_map is the contiguous range col_offset + arange


@dataclass(frozen=True)
class _CompressedArrays:
    """A compressed sparse matrix as the three arrays HiGHS takes."""

    n_rows: int
    n_cols: int
    start: np.ndarray  # int32
    index: np.ndarray  # int32
    value: np.ndarray  # float64

    @property
    def nnz(self) -> int:
        return int(self.value.size)


class CscArrays(_CompressedArrays):
    """Column-wise arrays: ``start`` has ``n_cols + 1`` entries, row indices sorted per column."""

    def to_scipy(self) -> sp.csc_array:
        """The same matrix as a scipy CSC array (shares the arrays)."""
        return sp.csc_array((self.value, self.index, self.start), shape=(self.n_rows, self.n_cols))


class CsrArrays(_CompressedArrays):
    """Row-wise arrays: ``start`` has ``n_rows + 1`` entries; column indices within a row are
    unique but not necessarily sorted."""

    def to_scipy(self) -> sp.csr_array:
        """The same matrix as a scipy CSR array (shares the arrays)."""
        return sp.csr_array((self.value, self.index, self.start), shape=(self.n_rows, self.n_cols))


def _bound_vector(name: str, value: Any, n: int, *, default: float) -> np.ndarray:
    """A length-``n`` float64 vector from a scalar or array; NaN rejected, ±inf allowed."""
    if value is None:
        value = default
    arr = real_array(name, value)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    elif arr.shape != (n,):
        raise InvalidInput(f"{name} must be a scalar or have shape ({n},), got {arr.shape}")
    else:
        arr = arr.copy()
    if np.isnan(arr).any():
        raise InvalidInput(f"{name} contains NaN at index {int(np.flatnonzero(np.isnan(arr))[0])}")
    return arr


def _finite_vector(name: str, value: Any, n: int, *, default: float) -> np.ndarray:
    arr = _bound_vector(name, value, n, default=default)
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise InvalidInput(f"{name} must be finite, got {arr[bad]} at index {bad}")
    return arr


def _check_bounds_order(what: str, lower: np.ndarray, upper: np.ndarray) -> None:
    bad = np.flatnonzero(lower > upper)
    if bad.size:
        i = int(bad[0])
        raise InvalidInput(f"{what}: lower > upper at index {i} ({lower[i]} > {upper[i]})")
    bad = np.flatnonzero((lower == _INF) | (upper == -_INF))
    if bad.size:
        raise InvalidInput(f"{what}: lower = +inf or upper = -inf at index {int(bad[0])}")


def _integrality_vector(value: Any, n: int) -> np.ndarray:
    if value is None or value is False:
        return np.zeros(n, dtype=bool)
    if value is True:
        return np.ones(n, dtype=bool)
    arr = np.asarray(value)
    if arr.shape != (n,) or arr.dtype.kind not in "biu":
        raise InvalidInput(
            f"integrality must be a bool or a bool array of shape ({n},), "
            f"got dtype {arr.dtype} shape {arr.shape}"
        )
    if arr.dtype.kind != "b" and not np.isin(arr, (0, 1)).all():
        raise InvalidInput("integrality entries must be 0/1 or bool")
    return arr.astype(bool)


def _block_to_csc(A: Any, n_rows: int | None, width: int) -> sp.csc_array:
    """Convert a row block given as sparse/dense/triple to a canonical CSC array (m × width)."""
    return sp.csc_array(_block_to_csr(A, n_rows, width))


def _block_to_csr(A: Any, n_rows: int | None, width: int) -> sp.csr_array:
    """Convert a row block given as sparse/dense/triple to a canonical CSR array (m × w)."""
    if isinstance(A, tuple):
        mat = _triple_to_csr(A, n_rows, width)
    elif sp.issparse(A):
        if A.ndim != 2:
            raise InvalidInput(f"A must be 2-dimensional, got shape {A.shape}")
        mat = A if A.format == "csr" else A.tocsr()
        if not isinstance(mat, sp.csr_array):
            mat = sp.csr_array(mat)
        numeric_array("A", mat.data)  # a bool or complex sparse matrix is not cast
    else:
        dense = real_array("A", A)
        if dense.ndim != 2:
            raise InvalidInput(f"A must be 2-dimensional, got shape {dense.shape}")
        mat = sp.csr_array(dense)
    if n_rows is not None and mat.shape[0] != n_rows:
        raise InvalidInput(f"A has {mat.shape[0]} rows but n_rows={n_rows}")
    if mat.dtype != np.float64:
        mat = mat.astype(np.float64)
    if not mat.has_canonical_format:
        mat = mat.copy()  # never sort or sum the caller's arrays in place
        mat.sum_duplicates()
    if mat.data.size and not np.isfinite(mat.data).all():
        raise InvalidInput("A contains a non-finite coefficient (NaN or inf)")
    return mat


def _triple_to_csr(A: tuple, n_rows: int | None, width: int) -> sp.csr_array:
    """A ``(rows, cols, vals)`` triple as a CSR array (n_rows × width), checked."""
    if len(A) != 3:
        raise InvalidInput("A as a tuple must be (rows, cols, vals)")
    if n_rows is None:
        raise InvalidInput("n_rows= is required when A is a (rows, cols, vals) triple")
    m = check_int("n_rows", n_rows, minimum=0)
    rows, cols = np.asarray(A[0]), np.asarray(A[1])
    vals = real_array("A vals", A[2])
    if (
        rows.ndim != 1
        or cols.ndim != 1
        or vals.ndim != 1
        or not rows.size == cols.size == vals.size
    ):
        raise InvalidInput(
            f"A triple arrays must be 1-D of equal length, got shapes "
            f"{rows.shape}, {cols.shape}, {vals.shape}"
        )
    for nm, idx, hi in (("rows", rows, m), ("cols", cols, width)):
        if idx.size and idx.dtype.kind not in "iu":
            raise InvalidInput(f"A {nm} indices must be integers, got dtype {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= hi):
            raise InvalidInput(
                f"A {nm} indices must lie in [0, {hi}), got range [{idx.min()}, {idx.max()}]"
            )
    if rows.size and bool(np.all(rows[1:] >= rows[:-1])):
        # Already in row order (the usual way rows are generated): CSR without a sort.
        indptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:])
        idx_t = np.int32 if width < 2**31 else np.int64
        return sp.csr_array((vals, cols.astype(idx_t, copy=False), indptr), shape=(m, width))
    # coo -> csr is a counting sort by row; duplicate (row, col) entries are summed.
    return sp.coo_array((vals, (rows, cols)), shape=(m, width)).tocsr()


def _block_column_counts(b: RowBlock, n_cols: int) -> tuple[int, np.ndarray]:
    """(first model column, entries per column from there) of one block."""
    if b.col_offset >= 0:
        return b.col_offset, np.bincount(b.indices, minlength=b.col_map.size)
    return 0, np.bincount(b.col_map[b.indices], minlength=n_cols)


def _count_columns(blocks: Sequence[RowBlock], n_cols: int) -> np.ndarray:
    return np.cumsum(_group_counts([blocks], n_cols)[0])


def _group_counts(groups: Sequence[Sequence[RowBlock]], n_cols: int) -> list[np.ndarray]:
    """Per group of blocks: entries per model column, as an (n_cols + 1,) array whose entry
    ``j + 1`` counts column ``j`` (so that ``cumsum`` of the sum gives CSC starts)."""
    out = []
    for group in groups:
        counts = np.zeros(n_cols + 1, dtype=np.int64)
        for b in group:
            if b.data.size:
                first, cnt = _block_column_counts(b, n_cols)
                counts[1 + first : 1 + first + cnt.size] += cnt
        out.append(counts)
    return out


def _split_balanced(sizes: np.ndarray, parts: int) -> list[int]:
    """Cut points splitting consecutive items of the given sizes into ``parts`` runs of about
    equal total size (returns ``parts + 1`` indices from 0 to len(sizes))."""
    cum = np.concatenate([[0], np.cumsum(sizes)])
    cuts = np.searchsorted(cum, np.linspace(0, cum[-1], parts + 1)[1:-1])
    return [0] + [int(c) for c in cuts] + [len(sizes)]


#: Below this many nonzeros the NumPy merge is used: Numba's one-off compile is not worth it.
NUMBA_MIN_NNZ = 200_000


# The kernels compile on their first call (and are cached on disk), not at import.
@numba.njit(cache=True, nogil=True)
def _to_buckets(
    indptr, indices, data, col_map, col_offset, row_start, shift, bfill, b_row, b_col, b_val
):
    # Pass 1: stable distribution of a CSR block's entries into column chunks of
    # 2**shift columns (few output streams: cache friendly).
    for i in range(indptr.size - 1):
        r = row_start + i
        for e in range(indptr[i], indptr[i + 1]):
            if col_offset >= 0:  # noqa: SIM108 - one branch per entry in a hot loop
                j = col_offset + indices[e]
            else:
                j = col_map[indices[e]]
            k = j >> shift
            p = bfill[k]
            b_row[p] = r
            b_col[p] = j
            b_val[p] = data[e]
            bfill[k] = p + 1


@numba.njit(cache=True, nogil=True)
def _from_buckets(b_row, b_col, b_val, fill, out_index, out_value):
    # Pass 2: chunk by chunk, each entry to the next free slot of its column; the
    # written window is one chunk's columns, which stays in cache.
    for p in range(b_row.size):
        j = b_col[p]
        pos = fill[j]
        out_index[pos] = b_row[p]
        out_value[pos] = b_val[p]
        fill[j] = pos + 1


def merge_row_blocks(
    blocks: Sequence[RowBlock],
    n_rows: int,
    n_cols: int,
    *,
    use_numba: bool | None = None,
    threads: int | None = None,
) -> CscArrays:
    """Merge CSR row blocks into one CSC matrix: a stable counting sort by model column.

    A direct scatter of 10^6 entries to their columns is dominated by cache misses, so the sort
    runs in two passes (a cache-conscious radix sort): entries are first distributed, in row
    order, into chunks of ``2**shift`` consecutive columns (~16k entries per chunk), then each
    chunk is scattered into its (cache-resident) window of the output. Both passes are stable,
    so row indices stay sorted within every column (canonical CSC).

    With ``threads > 1`` (default 1: on the project's shared 2-core machine a second thread did
    not pay off) the blocks are cut into consecutive groups, each group fills its own slice of
    every chunk (offsets from per-group column counts), and pass 2 splits the chunks; the
    kernels release the GIL. ``use_numba=None`` uses the compiled kernels from
    :data:`NUMBA_MIN_NNZ` nonzeros on, else :func:`merge_row_blocks_reference`.
    """
    blocks = [b for b in blocks if b.data.size]
    nnz_blocks = np.array([b.data.size for b in blocks], dtype=np.int64)
    nnz = int(nnz_blocks.sum())
    if nnz > np.iinfo(np.int32).max:
        raise InvalidInput(f"the model has {nnz} nonzeros, more than HiGHS's 32-bit index limit")
    if use_numba is None:
        use_numba = nnz >= NUMBA_MIN_NNZ
    if not use_numba or nnz == 0:
        return merge_row_blocks_reference(blocks, n_rows, n_cols)
    threads = max(1, min(int(threads or 1), len(blocks)))
    cuts = _split_balanced(nnz_blocks, threads)
    groups = [blocks[a:b] for a, b in itertools.pairwise(cuts)]
    group_counts = _group_counts(groups, n_cols)
    start = np.cumsum(np.sum(group_counts, axis=0))
    per_col = nnz / max(n_cols, 1)
    shift = int(max(4, min(30, np.floor(np.log2(max(16384 / per_col, 1.0))))))
    chunk_cols = np.arange(0, n_cols, 1 << shift)
    chunk_starts = start[chunk_cols]  # first CSC position of every chunk of 2**shift columns
    b_row = np.empty(nnz, dtype=np.int32)
    b_col = np.empty(nnz, dtype=np.int32)
    b_val = np.empty(nnz, dtype=np.float64)
    bfills, offset = [], chunk_starts.copy()
    for counts in group_counts:  # group g starts after the earlier groups inside each chunk
        bfills.append(offset.copy())
        offset += np.add.reduceat(counts[1:], chunk_cols)

    def pass1(g: int) -> None:
        for b in groups[g]:
            _to_buckets(
                b.indptr,
                b.indices,
                b.data,
                b.col_map,
                np.int64(b.col_offset),
                np.int64(b.row_start),
                np.int64(shift),
                bfills[g],
                b_row,
                b_col,
                b_val,
            )

    index = np.empty(nnz, dtype=np.int32)
    value = np.empty(nnz, dtype=np.float64)
    fill = start[:-1].copy()
    chunk_sizes = np.diff(np.append(chunk_starts, nnz))
    ccuts = _split_balanced(chunk_sizes, threads)
    bounds = [int(chunk_starts[c]) if c < chunk_starts.size else nnz for c in ccuts]

    def pass2(t: int) -> None:
        lo, hi = bounds[t], bounds[t + 1]
        _from_buckets(b_row[lo:hi], b_col[lo:hi], b_val[lo:hi], fill, index, value)

    if threads == 1:
        pass1(0)
        pass2(0)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(pass1, range(threads)))
            list(pool.map(pass2, range(threads)))
    return CscArrays(n_rows, n_cols, start.astype(np.int32), index, value)


def concatenate_row_blocks(blocks: Sequence[RowBlock], n_rows: int, n_cols: int) -> CsrArrays:
    """Stack CSR row blocks into one row-wise matrix with model column indices.

    No sort is needed: rows stay in block order and each block's local columns are mapped
    through its ``col_map`` (an offset when contiguous). This is what :meth:`LinearProgram.pass_to`
    hands to HiGHS, whose C++ transpose to column-wise storage inside ``passModel`` is faster than
    a CSC merge in Python (see ``bench/lp_assembly.py``).
    """
    nnz = sum(b.data.size for b in blocks)
    if nnz > np.iinfo(np.int32).max:
        raise InvalidInput(f"the model has {nnz} nonzeros, more than HiGHS's 32-bit index limit")
    start = np.empty(n_rows + 1, dtype=np.int32)
    index = np.empty(nnz, dtype=np.int32)
    value = np.empty(nnz, dtype=np.float64)
    pos = 0
    for b in blocks:
        k = b.data.size
        start[b.row_start : b.row_start + b.n_rows] = b.indptr[:-1] + pos
        if k:
            if b.col_offset >= 0:
                np.add(
                    b.indices,
                    b.col_offset,
                    out=index[pos : pos + k],
                    dtype=np.int32,
                    casting="unsafe",
                )
            else:
                np.take(b.col_map, b.indices, out=index[pos : pos + k], mode="clip")
            value[pos : pos + k] = b.data
        pos += k
    start[n_rows] = pos
    return CsrArrays(n_rows, n_cols, start, index, value)


def merge_row_blocks_reference(
    blocks: Sequence[RowBlock], n_rows: int, n_cols: int, *, start: np.ndarray | None = None
) -> CscArrays:
    """Pure NumPy/SciPy version of :func:`merge_row_blocks` (test oracle, and the path for
    small models): each block to CSC, then a vectorised scatter of whole columns."""
    if start is None:
        start = _count_columns(blocks, n_cols)
    nnz = int(start[-1])
    index = np.empty(nnz, dtype=np.int32)
    value = np.empty(nnz, dtype=np.float64)
    fill = start[:-1].copy()
    for b in blocks:
        if not b.data.size:
            continue
        csc = sp.csr_array(
            (b.data, b.indices, b.indptr), shape=(b.n_rows, b.col_map.size)
        ).tocsc()  # sorted rows per column
        cnt = np.diff(csc.indptr)
        shift = fill[b.col_map] - csc.indptr[:-1]
        dest = np.repeat(shift, cnt) + np.arange(csc.data.size, dtype=np.int64)
        index[dest] = csc.indices + b.row_start
        value[dest] = csc.data
        fill[b.col_map] += cnt
    return CscArrays(n_rows, n_cols, start.astype(np.int32), index, value)


class LinearProgram:
    """A linear (or mixed-integer linear) program ``min/max c^T x + offset`` subject to
    ``row_lower <= A x <= row_upper`` and ``lower <= x <= upper``.

    Parameters
    ----------
    n_vars : number of variables of the first column block (may be 0; more via
        :meth:`add_variables`).
    objective : cost vector c, shape (n_vars,) or scalar; default 0.
    lower, upper : column bounds, shape (n_vars,) or scalars; ±inf allowed. Default [0, inf).
    integrality : bool array (n_vars,) (or a bool for all); True marks an integer variable.
        Integrality is part of the one model description (a MILP is a LinearProgram with
        integer columns; ``add_variables(..., integrality=)`` likewise), passed to HiGHS by
        :meth:`pass_to`, solved by :func:`privopt.lp.solve` and kept by :meth:`copy`.
    sense : ``"min"`` or ``"max"``.
    names : optional variable names, length n_vars (kept for reports; not passed to HiGHS).
    offset : constant added to the objective.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from privopt.lp import LinearProgram, solve
    >>> lp = LinearProgram(2, objective=[-1.0, -2.0])
    >>> rows = lp.add_rows(sp.csr_array([[1.0, 1.0], [1.0, 3.0]]), upper=[4.0, 6.0])
    >>> res = solve(lp)
    >>> round(res.objective, 6), np.round(res.x, 6).tolist()
    (-5.0, [3.0, 1.0])
    """

    def __init__(
        self,
        n_vars: int = 0,
        *,
        objective: Any = None,
        lower: Any = 0.0,
        upper: Any = _INF,
        integrality: Any = None,
        sense: str = "min",
        names: Sequence[str] | None = None,
        offset: float = 0.0,
    ) -> None:
        if sense not in ("min", "max"):
            raise InvalidInput(f"sense must be 'min' or 'max', got {sense!r}")
        self.sense = sense
        self.offset = check_real("offset", offset)
        # Column blocks are kept as a list and concatenated once, on first use (no O(n^2)
        # regrowth when many blocks are added).
        self._col_chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._cols_cache: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._n_vars = 0
        self._names: list[str] | None = [] if names is not None else None
        self._blocks: list[RowBlock] = []
        self._n_rows = 0
        self.col_blocks: dict[str, slice] = {}
        self.row_blocks: dict[str, slice] = {}
        self._csc_cache: CscArrays | None = None
        n = check_int("n_vars", n_vars, minimum=0)
        self.add_variables(
            n,
            objective=0.0 if objective is None else objective,
            lower=lower,
            upper=upper,
            integrality=integrality,
            names=names,
        )

    # ------------------------------------------------------------------ sizes
    @property
    def n_vars(self) -> int:
        """Number of columns (variables)."""
        return self._n_vars

    def _columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        cols = self._cols_cache
        if cols is None:
            if self._col_chunks:
                parts = list(zip(*self._col_chunks, strict=False))
                cost, lower, upper, integ = (np.concatenate(p) for p in parts)
                cols = (cost, lower, upper, integ)
            else:
                cols = (np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0, bool))
            self._cols_cache = cols
            self._col_chunks = [cols]
        return cols

    @property
    def _cost(self) -> np.ndarray:
        return self._columns()[0]

    @property
    def _lower(self) -> np.ndarray:
        return self._columns()[1]

    @property
    def _upper(self) -> np.ndarray:
        return self._columns()[2]

    @property
    def _integrality(self) -> np.ndarray:
        return self._columns()[3]

    @property
    def n_rows(self) -> int:
        """Number of rows (constraints)."""
        return self._n_rows

    @property
    def nnz(self) -> int:
        """Number of stored nonzeros over all row blocks."""
        return int(sum(b.data.size for b in self._blocks))

    @property
    def is_mip(self) -> bool:
        """Whether any variable is integer."""
        return bool(self._integrality.any())

    @property
    def objective(self) -> np.ndarray:
        """Cost vector, shape (n_vars,) (a copy)."""
        return self._cost.copy()

    @property
    def col_lower(self) -> np.ndarray:
        """Column lower bounds (n_vars,), a copy."""
        return self._lower.copy()

    @property
    def col_upper(self) -> np.ndarray:
        """Column upper bounds (n_vars,), a copy."""
        return self._upper.copy()

    @property
    def integrality(self) -> np.ndarray:
        """Integrality flags (n_vars,) bool, a copy."""
        return self._integrality.copy()

    @property
    def row_lower(self) -> np.ndarray:
        """Row lower bounds (n_rows,), concatenated over the row blocks."""
        if not self._blocks:
            return np.zeros(0)
        return np.concatenate([b.lower for b in self._blocks])

    @property
    def row_upper(self) -> np.ndarray:
        """Row upper bounds (n_rows,), concatenated over the row blocks."""
        if not self._blocks:
            return np.zeros(0)
        return np.concatenate([b.upper for b in self._blocks])

    @property
    def names(self) -> list[str] | None:
        """Variable names, or None when the model has none."""
        return None if self._names is None else list(self._names)

    # ---------------------------------------------------------------- building
    def add_variables(
        self,
        n: int,
        *,
        objective: Any = 0.0,
        lower: Any = 0.0,
        upper: Any = _INF,
        integrality: Any = False,
        names: Sequence[str] | None = None,
        name: str | None = None,
    ) -> slice:
        """Append a block of ``n`` variables; returns their column slice.

        ``objective``, ``lower``, ``upper`` are scalars or arrays of shape (n,); ``integrality``
        a bool or bool array (n,). ``name`` labels the block in :attr:`col_blocks`.
        """
        n = check_int("n", n, minimum=0)
        cost = _finite_vector("objective", objective, n, default=0.0)
        lo = _bound_vector("lower", lower, n, default=0.0)
        up = _bound_vector("upper", upper, n, default=_INF)
        _check_bounds_order("variable bounds", lo, up)
        integ = _integrality_vector(integrality, n)
        if names is not None:
            names = list(names)
            if len(names) != n:
                raise InvalidInput(f"names must have length {n}, got {len(names)}")
        start = self.n_vars
        self._col_chunks.append((cost, lo, up, integ))
        self._cols_cache = None
        self._n_vars += n
        if self._names is not None or names is not None:
            if self._names is None:
                self._names = [f"x{i}" for i in range(start)]
            self._names += (
                names if names is not None else [f"x{i}" for i in range(start, start + n)]
            )
        sl = slice(start, start + n)
        if name is not None:
            self.col_blocks[name] = sl
        self._csc_cache = None
        return sl

    def add_rows(
        self,
        A: Any,
        *,
        lower: Any = -_INF,
        upper: Any = _INF,
        name: str | None = None,
        n_rows: int | None = None,
        columns: slice | np.ndarray | None = None,
    ) -> slice:
        """Append a block of rows ``lower <= A x <= upper``; returns their row slice.

        Parameters
        ----------
        A : scipy.sparse matrix/array or dense 2-D array of shape (m, w), or a triple
            ``(rows, cols, vals)`` of equal-length 1-D arrays with ``n_rows=m``; duplicate
            ``(row, col)`` entries are summed. Without ``columns``, column ``j`` of A is model
            column ``j`` and ``w <= n_vars`` (missing columns are zero).
        lower, upper : row bounds, scalars or arrays of shape (m,); ±inf allowed.
        name : label of the block in :attr:`row_blocks`.
        n_rows : number of rows m (required for a triple, checked otherwise).
        columns : optional model columns of A's columns: a slice or an int array of length w
            (unique), e.g. the slice returned by :meth:`add_variables`.
        """
        if columns is None:
            col_map = None
            width = self.n_vars
        elif isinstance(columns, slice):
            rng = range(self.n_vars)[columns]
            col_map = np.arange(rng.start, rng.stop, rng.step, dtype=np.int64)
            width = col_map.size
        else:
            col_map = np.asarray(columns)
            if col_map.ndim != 1 or (col_map.size and col_map.dtype.kind not in "iu"):
                raise InvalidInput("columns must be a slice or a 1-D integer array")
            col_map = col_map.astype(np.int64)
            if col_map.size and (col_map.min() < 0 or col_map.max() >= self.n_vars):
                raise InvalidInput(f"columns must lie in [0, {self.n_vars})")
            if np.unique(col_map).size != col_map.size:
                raise InvalidInput("columns must not repeat a column")
            width = col_map.size
        mat = _block_to_csr(A, n_rows, width)
        if not isinstance(A, tuple) and (
            mat.shape[1] > width or (col_map is not None and mat.shape[1] != width)
        ):
            raise InvalidInput(
                f"A has {mat.shape[1]} columns, expected "
                f"{'at most ' if col_map is None else ''}{width}"
            )
        m = mat.shape[0]
        lo = _bound_vector("lower", lower, m, default=-_INF)
        up = _bound_vector("upper", upper, m, default=_INF)
        _check_bounds_order("row bounds", lo, up)
        if col_map is None:
            col_map = np.arange(mat.shape[1], dtype=np.int64)
        contiguous = col_map.size == 0 or (
            col_map[-1] - col_map[0] == col_map.size - 1 and bool(np.all(np.diff(col_map) == 1))
        )
        col_offset = int(col_map[0]) if contiguous and col_map.size else (0 if contiguous else -1)
        indices = mat.indices if mat.indices.dtype == np.int32 else mat.indices.astype(np.int32)
        block = RowBlock(
            self._n_rows,
            m,
            mat.indptr.astype(np.int64, copy=False),
            indices,
            mat.data,
            col_map,
            lo,
            up,
            name,
            col_offset,
        )
        self._blocks.append(block)
        sl = slice(self._n_rows, self._n_rows + m)
        self._n_rows += m
        if name is not None:
            self.row_blocks[name] = sl
        self._csc_cache = None
        return sl

    # -------------------------------------------------------------- assembling
    def to_csc(self, *, threads: int | None = None) -> CscArrays:
        """The constraint matrix as merged CSC arrays (cached until the model changes);
        ``threads`` as in :func:`merge_row_blocks`."""
        if self._csc_cache is None:
            self._csc_cache = merge_row_blocks(
                self._blocks, self._n_rows, self.n_vars, threads=threads
            )
        return self._csc_cache

    def to_csr(self) -> CsrArrays:
        """The constraint matrix as row-wise arrays (not cached: a concatenation, no sort)."""
        return concatenate_row_blocks(self._blocks, self._n_rows, self.n_vars)

    def matrix(self) -> sp.csc_array:
        """The constraint matrix A, shape (n_rows, n_vars), as a scipy CSC array."""
        return self.to_csc().to_scipy()

    def pass_to(self, target: Any) -> None:
        """Load the model into ``target``, a :class:`~privopt.lp.highs.Model` or a
        ``highspy.Highs``, replacing its model.

        Without cached CSC arrays the rows are passed row-wise (a concatenation of the blocks)
        and HiGHS transposes them in C++; with a cache (after :meth:`to_csc`/:meth:`matrix`)
        the column-wise arrays are passed as they are.
        """
        csc = self._csc_cache
        arrays: CscArrays | CsrArrays = self.to_csr() if csc is None else csc
        highs.pass_model(
            target,
            n_cols=self.n_vars,
            n_rows=self.n_rows,
            nnz=arrays.nnz,
            rowwise=csc is None,
            start=arrays.start,
            index=arrays.index,
            value=arrays.value,
            cost=self._cost,
            col_lower=self._lower,
            col_upper=self._upper,
            row_lower=self.row_lower,
            row_upper=self.row_upper,
            # HiGHS reads n_vars integrality entries even for an LP: always pass a full array
            # (all zeros = kContinuous keeps it an LP).
            integrality=self._integrality.astype(np.int32),
            offset=self.offset,
            maximize=self.sense == "max",
        )

    def to_model(self, *, verbose: bool = False, options: Any = ()) -> highs.Model:
        """A fresh :class:`~privopt.lp.highs.Model` holding this model, with HiGHS's default
        settings, output silenced unless ``verbose``.

        ``options`` (pairs or a dict) are set before the model is passed: some act only then
        (``small_matrix_value``: HiGHS drops smaller entries as it takes the matrix)."""
        model = highs.Model(verbose=verbose, options=options)
        self.pass_to(model)
        return model

    def to_highs(self, *, verbose: bool = False, options: Any = ()) -> Any:
        """A fresh ``highspy.Highs`` holding this model, for highspy's own API (privopt's
        solvers use :meth:`to_model`); ``verbose`` and ``options`` as there."""
        h = highs.new_instance(verbose=verbose, options=options)
        self.pass_to(h)
        return h

    def to_highs_lp(self) -> Any:
        """The model as a ``highspy.HighsLp`` (filled field by field: convenient for HiGHS's
        own tools, but ~10x slower than :meth:`pass_to` on large models)."""
        csc = self.to_csc()
        return highs.highs_lp(
            cost=self._cost,
            col_lower=self._lower,
            col_upper=self._upper,
            row_lower=self.row_lower,
            row_upper=self.row_upper,
            start=csc.start,
            index=csc.index,
            value=csc.value,
            offset=self.offset,
            maximize=self.sense == "max",
            integrality=self._integrality if self.is_mip else None,
        )

    def with_objective(self, objective: Any) -> LinearProgram:
        """A copy with another cost vector (shape (n_vars,))."""
        new = self.copy()
        cost = _finite_vector("objective", objective, self.n_vars, default=0.0)
        _, lo, up, integ = self._columns()
        new._col_chunks = [(cost, lo, up, integ)]
        new._cols_cache = None
        return new

    def copy(self) -> LinearProgram:
        """A copy sharing the (immutable) row and column blocks."""
        self._columns()
        new = LinearProgram.__new__(LinearProgram)
        new.__dict__.update(self.__dict__)
        new._col_chunks = list(self._col_chunks)
        new._blocks = list(self._blocks)
        new.col_blocks = dict(self.col_blocks)
        new.row_blocks = dict(self.row_blocks)
        new._names = None if self._names is None else list(self._names)
        return new

    def __getstate__(self) -> dict[str, Any]:
        # The merged CSC arrays are derived data: do not ship them to workers with the blocks.
        state = self.__dict__.copy()
        state["_csc_cache"] = None
        return state

    def __repr__(self) -> str:
        kind = "MILP" if self.is_mip else "LP"
        return (
            f"LinearProgram({kind}, sense={self.sense!r}, n_vars={self.n_vars}, "
            f"n_rows={self.n_rows}, nnz={self.nnz})"
        )
