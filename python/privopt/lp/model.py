"""Vectorised LP/MILP model building over HiGHS.

A :class:`LinearProgram` is a list of *column blocks* (:meth:`LinearProgram.add_variables`) and
*row blocks* (:meth:`LinearProgram.add_rows`). Row blocks are given as scipy.sparse matrices,
dense arrays or ``(rows, cols, vals)`` triples; each block is converted once to CSC and all
blocks are merged into one CSC matrix by a vectorised scatter (:func:`merge_row_blocks`), with no
Python loop per row or column. The merged arrays go to HiGHS through the array overload of
``Highs.passModel`` (numpy buffers passed as pointers; the ``HighsLp`` attribute route converts
every entry through a Python sequence and is ~10x slower on 10^6 nonzeros).

Row constraints read ``lower <= A x <= upper``; column bounds ``lower <= x <= upper``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt._validation import check_int
from privopt.errors import InvalidInput

__all__ = ["LinearProgram", "RowBlock", "merge_row_blocks", "CscArrays"]

_INF = math.inf


@dataclass(frozen=True)
class RowBlock:
    """One block of rows, stored in CSC form over its own columns.

    ``col_map`` maps the block's local column ``j`` to model column ``col_map[j]`` (unique).
    """

    row_start: int
    n_rows: int
    indptr: np.ndarray  # (len(col_map) + 1,) int64
    indices: np.ndarray  # (nnz,) int32, local row indices, sorted within each column
    data: np.ndarray  # (nnz,) float64
    col_map: np.ndarray  # (n_local_cols,) int64
    lower: np.ndarray  # (n_rows,) float64
    upper: np.ndarray  # (n_rows,) float64
    name: str | None = None


@dataclass(frozen=True)
class CscArrays:
    """A CSC matrix as the three arrays HiGHS takes (``start`` has ``n_cols + 1`` entries)."""

    n_rows: int
    n_cols: int
    start: np.ndarray  # int32
    index: np.ndarray  # int32
    value: np.ndarray  # float64

    @property
    def nnz(self) -> int:
        return int(self.value.size)

    def to_scipy(self) -> sp.csc_array:
        return sp.csc_array((self.value, self.index, self.start), shape=(self.n_rows, self.n_cols))


def _bound_vector(name: str, value: Any, n: int, *, default: float) -> np.ndarray:
    """A length-``n`` float64 vector from a scalar or array; NaN rejected, ±inf allowed."""
    if value is None:
        value = default
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInput(f"{name} must be a number or a numeric array") from None
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
        raise InvalidInput(f"{name} must be finite, index {int(np.flatnonzero(~np.isfinite(arr))[0])}")
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
        raise InvalidInput(f"integrality must be a bool or a bool array of shape ({n},), "
                           f"got dtype {arr.dtype} shape {arr.shape}")
    if arr.dtype.kind != "b" and not np.isin(arr, (0, 1)).all():
        raise InvalidInput("integrality entries must be 0/1 or bool")
    return arr.astype(bool)


def _block_to_csc(A: Any, n_rows: int | None, width: int) -> sp.csc_array:
    """Convert a row block given as sparse/dense/triple to a canonical CSC array (m × width)."""
    if isinstance(A, tuple):
        if len(A) != 3:
            raise InvalidInput("A as a tuple must be (rows, cols, vals)")
        if n_rows is None:
            raise InvalidInput("n_rows= is required when A is a (rows, cols, vals) triple")
        m = check_int("n_rows", n_rows, minimum=0)
        rows = np.asarray(A[0])
        cols = np.asarray(A[1])
        vals = np.asarray(A[2], dtype=np.float64)
        if rows.ndim != 1 or cols.ndim != 1 or vals.ndim != 1 or not (
                rows.size == cols.size == vals.size):
            raise InvalidInput(f"A triple arrays must be 1-D of equal length, got shapes "
                               f"{rows.shape}, {cols.shape}, {vals.shape}")
        for nm, idx, hi in (("rows", rows, m), ("cols", cols, width)):
            if idx.size == 0:
                continue
            if idx.dtype.kind not in "iu":
                raise InvalidInput(f"A {nm} indices must be integers, got dtype {idx.dtype}")
            if idx.min() < 0 or idx.max() >= hi:
                raise InvalidInput(f"A {nm} indices must lie in [0, {hi}), got range "
                                   f"[{idx.min()}, {idx.max()}]")
        # coo -> csc is a stable counting sort by column and sums duplicate (row, col) entries.
        mat = sp.coo_array((vals, (rows, cols)), shape=(m, width)).tocsc()
    elif sp.issparse(A):
        if A.ndim != 2:
            raise InvalidInput(f"A must be 2-dimensional, got shape {A.shape}")
        mat = sp.csc_array(A)
    else:
        try:
            dense = np.asarray(A, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidInput(f"A must be a scipy.sparse matrix, a 2-D array or a (rows, cols, "
                               f"vals) triple, got {type(A).__name__}") from None
        if dense.ndim != 2:
            raise InvalidInput(f"A must be 2-dimensional, got shape {dense.shape}")
        mat = sp.csc_array(dense)
    if n_rows is not None and mat.shape[0] != n_rows:
        raise InvalidInput(f"A has {mat.shape[0]} rows but n_rows={n_rows}")
    if mat.dtype != np.float64:
        mat = mat.astype(np.float64)
    if not mat.has_canonical_format:
        mat.sum_duplicates()
    if mat.data.size and not np.isfinite(mat.data).all():
        raise InvalidInput("A contains a non-finite coefficient (NaN or inf)")
    return mat


def merge_row_blocks(blocks: Sequence[RowBlock], n_rows: int, n_cols: int) -> CscArrays:
    """Merge row blocks into one CSC matrix by a vectorised scatter.

    Each block's entries are already in column order, so block ``b``'s entry ``e`` of local
    column ``j`` lands at ``start[col_map[j]] + (entries of earlier blocks in that column) +
    (e - indptr_b[j])``: one ``np.repeat`` and two scatters per block, with destinations
    increasing inside each column (cache friendly). Row indices stay sorted within a column
    because blocks are visited in row order.
    """
    counts = np.zeros(n_cols + 1, dtype=np.int64)
    per_block = []
    for b in blocks:
        cnt = np.diff(b.indptr)
        counts[b.col_map + 1] += cnt  # col_map is unique, so plain fancy += is exact
        per_block.append(cnt)
    start = np.cumsum(counts)
    nnz = int(start[-1])
    if nnz > np.iinfo(np.int32).max:
        raise InvalidInput(f"the model has {nnz} nonzeros, more than HiGHS's 32-bit index limit")
    index = np.empty(nnz, dtype=np.int32)
    value = np.empty(nnz, dtype=np.float64)
    fill = start[:-1].copy()
    for b, cnt in zip(blocks, per_block):
        k = b.data.size
        if k == 0:
            continue
        shift = fill[b.col_map] - b.indptr[:-1]
        dest = np.repeat(shift, cnt)
        dest += np.arange(k, dtype=np.int64)
        if b.row_start:
            index[dest] = b.indices + np.int32(b.row_start)
        else:
            index[dest] = b.indices
        value[dest] = b.data
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

    def __init__(self, n_vars: int = 0, *, objective: Any = None, lower: Any = 0.0,
                 upper: Any = _INF, integrality: Any = None, sense: str = "min",
                 names: Sequence[str] | None = None, offset: float = 0.0) -> None:
        if sense not in ("min", "max"):
            raise InvalidInput(f"sense must be 'min' or 'max', got {sense!r}")
        self.sense = sense
        off = float(offset)
        if not math.isfinite(off):
            raise InvalidInput(f"offset must be finite, got {offset!r}")
        self.offset = off
        self._cost = np.zeros(0)
        self._lower = np.zeros(0)
        self._upper = np.zeros(0)
        self._integrality = np.zeros(0, dtype=bool)
        self._names: list[str] | None = [] if names is not None else None
        self._blocks: list[RowBlock] = []
        self._n_rows = 0
        self.col_blocks: dict[str, slice] = {}
        self.row_blocks: dict[str, slice] = {}
        self._csc_cache: CscArrays | None = None
        n = check_int("n_vars", n_vars, minimum=0)
        self.add_variables(n, objective=0.0 if objective is None else objective, lower=lower,
                           upper=upper, integrality=integrality, names=names)

    # ------------------------------------------------------------------ sizes
    @property
    def n_vars(self) -> int:
        """Number of columns (variables)."""
        return int(self._cost.size)

    @property
    def n_rows(self) -> int:
        """Number of rows (constraints)."""
        return self._n_rows

    @property
    def nnz(self) -> int:
        return int(sum(b.data.size for b in self._blocks))

    @property
    def is_mip(self) -> bool:
        return bool(self._integrality.any())

    @property
    def objective(self) -> np.ndarray:
        """Cost vector, shape (n_vars,) (a copy)."""
        return self._cost.copy()

    @property
    def col_lower(self) -> np.ndarray:
        return self._lower.copy()

    @property
    def col_upper(self) -> np.ndarray:
        return self._upper.copy()

    @property
    def integrality(self) -> np.ndarray:
        return self._integrality.copy()

    @property
    def row_lower(self) -> np.ndarray:
        if not self._blocks:
            return np.zeros(0)
        return np.concatenate([b.lower for b in self._blocks])

    @property
    def row_upper(self) -> np.ndarray:
        if not self._blocks:
            return np.zeros(0)
        return np.concatenate([b.upper for b in self._blocks])

    @property
    def names(self) -> list[str] | None:
        return None if self._names is None else list(self._names)

    # ---------------------------------------------------------------- building
    def add_variables(self, n: int, *, objective: Any = 0.0, lower: Any = 0.0, upper: Any = _INF,
                      integrality: Any = False, names: Sequence[str] | None = None,
                      name: str | None = None) -> slice:
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
        self._cost = np.concatenate([self._cost, cost])
        self._lower = np.concatenate([self._lower, lo])
        self._upper = np.concatenate([self._upper, up])
        self._integrality = np.concatenate([self._integrality, integ])
        if self._names is not None or names is not None:
            if self._names is None:
                self._names = [f"x{i}" for i in range(start)]
            self._names += names if names is not None else [f"x{i}" for i in range(start, start + n)]
        sl = slice(start, start + n)
        if name is not None:
            self.col_blocks[name] = sl
        self._csc_cache = None
        return sl

    def add_rows(self, A: Any, *, lower: Any = -_INF, upper: Any = _INF, name: str | None = None,
                 n_rows: int | None = None, columns: slice | np.ndarray | None = None) -> slice:
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
        mat = _block_to_csc(A, n_rows, width)
        if not isinstance(A, tuple):
            if mat.shape[1] > width or (col_map is not None and mat.shape[1] != width):
                raise InvalidInput(
                    f"A has {mat.shape[1]} columns, expected "
                    f"{'at most ' if col_map is None else ''}{width}")
        m = mat.shape[0]
        lo = _bound_vector("lower", lower, m, default=-_INF)
        up = _bound_vector("upper", upper, m, default=_INF)
        _check_bounds_order("row bounds", lo, up)
        if col_map is None:
            col_map = np.arange(mat.shape[1], dtype=np.int64)
        indices = mat.indices if mat.indices.dtype == np.int32 else mat.indices.astype(np.int32)
        block = RowBlock(self._n_rows, m, mat.indptr.astype(np.int64, copy=False), indices,
                         mat.data, col_map, lo, up, name)
        self._blocks.append(block)
        sl = slice(self._n_rows, self._n_rows + m)
        self._n_rows += m
        if name is not None:
            self.row_blocks[name] = sl
        self._csc_cache = None
        return sl

    # -------------------------------------------------------------- assembling
    def to_csc(self) -> CscArrays:
        """The constraint matrix as merged CSC arrays (cached until the model changes)."""
        if self._csc_cache is None:
            self._csc_cache = merge_row_blocks(self._blocks, self._n_rows, self.n_vars)
        return self._csc_cache

    def matrix(self) -> sp.csc_array:
        """The constraint matrix A, shape (n_rows, n_vars), as a scipy CSC array."""
        return self.to_csc().to_scipy()

    def pass_to(self, h: Any) -> None:
        """Pass the model into an existing ``highspy.Highs`` (replacing its model)."""
        import highspy

        csc = self.to_csc()
        sense = highspy.ObjSense.kMaximize if self.sense == "max" else highspy.ObjSense.kMinimize
        status = h.passModel(
            self.n_vars, self.n_rows, csc.nnz, int(highspy.MatrixFormat.kColwise), int(sense),
            self.offset, self._cost, self._lower, self._upper, self.row_lower, self.row_upper,
            csc.start, csc.index, csc.value,
            # HiGHS reads n_vars integrality entries even for an LP: always pass a full array
            # (all zeros = kContinuous keeps it an LP).
            self._integrality.astype(np.int32))
        if status == highspy.HighsStatus.kError:
            raise InvalidInput("HiGHS rejected the model in passModel (see its log with verbose)")

    def to_highs(self, *, verbose: bool = False) -> Any:
        """A fresh ``highspy.Highs`` holding this model, output silenced unless ``verbose``."""
        import highspy

        h = highspy.Highs()
        h.setOptionValue("output_flag", bool(verbose))
        self.pass_to(h)
        return h

    def copy(self) -> LinearProgram:
        """A copy sharing the (immutable) row blocks."""
        new = LinearProgram.__new__(LinearProgram)
        new.__dict__.update(self.__dict__)
        new._blocks = list(self._blocks)
        new.col_blocks = dict(self.col_blocks)
        new.row_blocks = dict(self.row_blocks)
        new._names = None if self._names is None else list(self._names)
        return new

    def __repr__(self) -> str:
        kind = "MILP" if self.is_mip else "LP"
        return (f"LinearProgram({kind}, sense={self.sense!r}, n_vars={self.n_vars}, "
                f"n_rows={self.n_rows}, nnz={self.nnz})")
