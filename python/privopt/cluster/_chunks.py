"""Per-chunk work of the Dask passes. Imports only numpy and the compiled kernel, so that worker
processes start fast (they unpickle these functions by module path)."""

from __future__ import annotations

import io

import numpy as np

from privopt import _core

__all__ = [
    "prepare_column",
    "sorted_column",
    "column_piece",
    "add_piece_gaps",
    "chunk_summary",
    "chunk_codes",
    "chunk_level_step",
    "chunk_sums",
    "chunk_label_lines",
    "add_parts",
]


def prepare_column(col: np.ndarray, a: float, b: float) -> np.ndarray:
    """Clip a column to [a, b] and sort it, both in place; returns it."""
    np.clip(col, a, b, out=col)
    col.sort()
    return col


def sorted_column(pieces: list[np.ndarray], a: float, b: float) -> np.ndarray:
    """One column of the data, clipped to [a, b] and sorted, from its row chunks' pieces.

    Parameters
    ----------
    pieces : the column's values of each row chunk, in row order; 1-D float64 arrays.
    a, b : the public bounds, in the units of the data.

    Returns
    -------
    (n,) float64, a new array (the pieces are never changed: they may be cached chunks). The
    values and the operations are those of the driver's own column sort, so the column is the
    same bit for bit wherever it is sorted.
    """
    return prepare_column(np.concatenate(pieces), a, b)


def column_piece(column: np.ndarray, start: int, stop: int) -> np.ndarray:
    """``column[start:stop]`` of a sorted column held by a worker, (stop − start,): what one
    range of the gap sums needs of it (a view; the worker sends only these values)."""
    return column[start:stop]


def add_piece_gaps(acc: np.ndarray | None, pieces: list[np.ndarray]) -> np.ndarray:
    """A range of the gap sums: a copy of ``acc`` (zeros when None), (m − 1,), plus the gaps
    of each piece (m,) of a sorted column, in the order given.

    Each element gets the same difference then the same sum as in the driver's pass over
    whole columns (``_core.cluster.add_gaps``), so ranges added over columns in column order
    are those sums bit for bit. ``acc`` is copied, never changed: it may be a stored result
    that a retried task reads again.
    """
    out = np.zeros(pieces[0].size - 1) if acc is None else acc.copy()
    for piece in pieces:
        _core.cluster.add_gaps(np.ascontiguousarray(piece), out)
    return out


def chunk_summary(block: np.ndarray) -> tuple[bool, float, float]:
    """(every value finite, min, max) of one chunk (min/max ignore nothing: NaN propagates)."""
    if block.size == 0:
        return True, np.inf, -np.inf
    return bool(np.isfinite(block).all()), float(block.min()), float(block.max())


def chunk_codes(block: np.ndarray, a: float, b: float, beta: float, window: str) -> np.ndarray:
    """Cell codes of one row chunk; see ``_core.cluster.cell_codes``."""
    return _core.cluster.cell_codes(
        np.ascontiguousarray(block, dtype=np.float64), a, b, beta, window, 1
    )


def chunk_level_step(
    codes: np.ndarray,
    nodes: np.ndarray | None,
    a: float,
    b: float,
    beta: float,
    window: str,
    tree_arrays,
    n_slots: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One chunk of a level pass: (the chunk's new tips, its cell histogram). ``nodes`` are the
    tips of the previous pass (None: all at the root); they are copied, never changed in place,
    so a persisted input stays valid. See ``_core.cluster.level_cells_nodes``."""
    tree = _core.cluster.Tree(*tree_arrays)
    n_nodes = len(tree_arrays[0])
    dtype = np.uint16 if n_nodes <= 1 << 16 else np.uint32
    tips = np.zeros(len(codes), dtype=dtype) if nodes is None else nodes.astype(dtype, copy=True)
    cells = _core.cluster.level_cells_nodes(
        np.ascontiguousarray(codes), tips, a, b, beta, window, tree, n_slots, 1
    )
    return tips, cells


def chunk_sums(
    block: np.ndarray, a: float, b: float, tree_arrays, n_slots: int, scale: float = 1.0
):
    """(sums, sizes) of one row chunk; see ``_core.cluster.slot_sums``."""
    tree = _core.cluster.Tree(*tree_arrays)
    return _core.cluster.slot_sums(
        np.ascontiguousarray(block, dtype=np.float64), a, b, tree, n_slots, scale
    )


def chunk_label_lines(labels: np.ndarray) -> bytes:
    """One chunk's labels as lines of text, one integer per line: the bytes that
    ``numpy.savetxt(file, labels, fmt="%d")`` writes (formatting is the slow part of writing
    labels, so a worker does it for its chunk and the writer only copies bytes)."""
    out = io.BytesIO()
    np.savetxt(out, labels, fmt="%d")
    return out.getvalue()


def add_parts(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """Element-wise sum of a list of equally shaped tuples of arrays."""
    out = [np.array(p, copy=True) for p in parts[0]]
    for part in parts[1:]:
        for acc, p in zip(out, part, strict=True):
            acc += p  # noqa: PLW2901 - in-place add into out's arrays
    return tuple(out)
