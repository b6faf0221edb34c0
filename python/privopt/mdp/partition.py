"""Secret-dataset partitioners (spec 000 §2.2–2.4): k-m-DV (default), k-m-rec, k-m-adj, BSC,
and the boundary / internal record classification (Def. 3.2)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.cluster.vq import kmeans2
from scipy.linalg import eigh

from privopt._validation import check_int
from privopt.errors import InvalidInput
from privopt.graphs import connected_components
from privopt.perturbation.problem import MatrixBlock

__all__ = ["PARTITIONERS", "partition", "Partition", "classify", "mp_component_sizes"]

PARTITIONERS = ("k-m-dv", "k-m-rec", "k-m-adj", "bsc")


def _kmeans(data: np.ndarray, m: int, seed: int, n_init: int) -> np.ndarray:
    """Lloyd k-means (squared Euclidean, k-means++ seeding), best of ``n_init`` runs (spec §2.2
    resolution: the authors' MATLAB ``kmeans`` minimises the squared objective)."""
    if m >= data.shape[0]:
        return np.arange(data.shape[0])
    best, best_inertia = None, np.inf
    rng = np.random.default_rng(seed)
    for _ in range(n_init):
        centres, labels = _kmeans2_quiet(data, m, rng)
        inertia = float(np.sum((data - centres[labels]) ** 2))
        if inertia < best_inertia:
            best, best_inertia = labels, inertia
    assert best is not None  # n_init >= 1 runs, each with a finite inertia
    return best


def _kmeans2_quiet(data: np.ndarray, m: int, rng: np.random.Generator):
    with warnings.catch_warnings():
        # An empty cluster only leaves fewer subsets; labels are compacted afterwards.
        warnings.simplefilter("ignore")
        return kmeans2(data, m, minit="++", seed=rng, iter=50)


def partition(
    block: MatrixBlock, m: int = 25, method: str = "k-m-dv", *, seed: int = 0, n_init: int = 1
) -> np.ndarray:
    """Labels (n,) in 0..M'-1 (M' ≤ m, empty clusters dropped) of the block's records.

    Parameters
    ----------
    m : number of subsets M (paper default 25).
    method : "k-m-dv" (k-means on rows of the distance matrix, Eq. 18), "k-m-rec" (k-means on
        the coordinates, Eq. 40), "k-m-adj" (on adjacency rows, Eq. 41–42), "bsc" (balanced
        spectral clustering: unnormalised Laplacian, M smallest eigenvectors, Eq. 43–46).
    seed, n_init : k-means seeding (paper code: one run, seed 0).
    """
    m = check_int("m", m, minimum=1)
    if method not in PARTITIONERS:
        raise InvalidInput(f"partitioner must be one of {PARTITIONERS}, got {method!r}")
    n = block.n
    if m == 1 or n == 1:
        return np.zeros(n, dtype=np.int64)
    if method == "k-m-dv":
        d = block.distances
        finite = np.isfinite(d)
        data = np.where(finite, d, 2 * d[finite].max() if finite.any() else 1.0)
    elif method == "k-m-rec":
        if block.points is None:
            raise InvalidInput("partitioner 'k-m-rec' needs record coordinates")
        data = block.points
    else:
        adj = np.zeros((n, n))
        adj[block.edges.i, block.edges.j] = 1.0
        if method == "k-m-adj":
            data = adj
        else:
            lap = np.diag(adj.sum(axis=1)) - adj
            _, vecs = eigh(lap, subset_by_index=[0, min(m, n) - 1])
            data = vecs
    labels = _kmeans(np.ascontiguousarray(data, dtype=np.float64), m, seed, n_init)
    _, compact = np.unique(labels, return_inverse=True)
    return compact.astype(np.int64)


@dataclass
class Partition:
    """Subsets with their boundary (𝒴_l) and internal (𝒳_l) records (Def. 3.2).

    Attributes
    ----------
    labels : (n,) subset of each record.
    boundary : (n,) bool, True for records with a neighbour in another subset.
    internal : list over subsets of int arrays (sorted) of internal records 𝒳_l.
    boundary_sets : list over subsets of int arrays of boundary records 𝒴_l.
    """

    labels: np.ndarray
    boundary: np.ndarray
    internal: list[np.ndarray]
    boundary_sets: list[np.ndarray]

    @property
    def n_subsets(self) -> int:
        """Number of subsets (subproblems) of the partition."""
        return len(self.internal)

    def sizes(self) -> dict[str, Any]:
        """Table 1/2-style sizes (spec §7-12): mean over subsets with 𝒳_l ≠ ∅, mean over all,
        max of |𝒳_l|, and the number of boundary records."""
        x = np.array([a.size for a in self.internal])
        nz = x[x > 0]
        return {
            "subsets": int(x.size),
            "subsets_with_internal": int(nz.size),
            "mean_internal_nonempty": float(nz.mean()) if nz.size else 0.0,
            "mean_internal_all": float(x.mean()),
            "max_internal": int(x.max()),
            "boundary_records": int(self.boundary.sum()),
        }


def mp_component_sizes(block: MatrixBlock, part: Partition) -> np.ndarray:
    """Sizes of the master-program components (paper Table 2, spec §5.3): connected components
    of the graph on the boundary records whose edges join different subsets, size > 1 only.
    A size metric, not a decomposition of the master (spec §7-10)."""
    e = block.edges
    cross = part.labels[e.i] != part.labels[e.j]
    g = sp.csr_array(
        (np.ones(int(cross.sum())), (e.i[cross], e.j[cross])), shape=(block.n, block.n)
    )
    _, comp = connected_components(g)
    sizes = np.bincount(comp[part.boundary]) if part.boundary.any() else np.zeros(0, np.int64)
    return sizes[sizes > 1]


def classify(block: MatrixBlock, labels: np.ndarray) -> Partition:
    """Boundary/internal records of a labelled block (spec §2.4)."""
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (block.n,):
        raise InvalidInput(f"labels must have shape ({block.n},), got {labels.shape}")
    e = block.edges
    boundary = np.zeros(block.n, dtype=bool)
    cross = labels[e.i] != labels[e.j]
    boundary[e.i[cross]] = True
    m = int(labels.max()) + 1
    internal = [np.flatnonzero((labels == sub) & ~boundary) for sub in range(m)]
    bsets = [np.flatnonzero((labels == sub) & boundary) for sub in range(m)]
    return Partition(labels, boundary, internal, bsets)
