"""Per-chunk work of the Dask passes. Imports only numpy and the compiled kernel, so that worker
processes start fast (they unpickle these functions by module path)."""

from __future__ import annotations

import numpy as np

from privopt import _core

__all__ = ["chunk_codes", "chunk_level_cells", "chunk_sums", "add_parts"]


def chunk_codes(block: np.ndarray, a: float, b: float, beta: float, window: str) -> np.ndarray:
    """Cell codes of one row chunk; see ``_core.cluster.cell_codes``."""
    return _core.cluster.cell_codes(
        np.ascontiguousarray(block, dtype=np.float64), a, b, beta, window, 1
    )


def chunk_level_cells(
    block: np.ndarray, a: float, b: float, beta: float, window: str, tree_arrays, n_slots: int
) -> tuple[np.ndarray]:
    """The cell histogram of one chunk of codes (a 1-tuple, for :func:`add_parts`); see
    ``_core.cluster.level_cells_codes``."""
    tree = _core.cluster.Tree(*tree_arrays)
    codes = np.ascontiguousarray(block)
    return (_core.cluster.level_cells_codes(codes, a, b, beta, window, tree, n_slots, 1),)


def chunk_sums(
    block: np.ndarray, a: float, b: float, tree_arrays, n_slots: int, scale: float = 1.0
):
    """(sums, sizes) of one row chunk; see ``_core.cluster.slot_sums``."""
    tree = _core.cluster.Tree(*tree_arrays)
    return _core.cluster.slot_sums(
        np.ascontiguousarray(block, dtype=np.float64), a, b, tree, n_slots, scale
    )


def add_parts(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """Element-wise sum of a list of equally shaped tuples of arrays."""
    out = [np.array(p, copy=True) for p in parts[0]]
    for part in parts[1:]:
        for acc, p in zip(out, part, strict=True):
            acc += p
    return tuple(out)
