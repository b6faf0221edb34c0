"""Per-chunk work of the Dask passes. Imports only numpy and the compiled kernel, so that worker
processes start fast (they unpickle these functions by module path)."""

from __future__ import annotations

import numpy as np

from privopt import _core

__all__ = ["chunk_counts", "chunk_sums", "add_parts"]


def chunk_counts(
    block: np.ndarray, a: float, b: float, beta: float, window: str, tree_arrays, n_slots: int
) -> tuple[np.ndarray, ...]:
    """(size, rank, window, at_most) of one row chunk; see ``_core.cluster.level_counts``."""
    tree = _core.cluster.Tree(*tree_arrays)
    return _core.cluster.level_counts(
        np.ascontiguousarray(block, dtype=np.float64), a, b, beta, window, tree, n_slots, 1
    )


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
