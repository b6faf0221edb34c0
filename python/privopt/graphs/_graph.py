"""A prepared weighted graph: validated and stored as CSR once, searched many times."""

from __future__ import annotations

import math
import os
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from privopt._core import graphs as kernels
from privopt._validation import check_bool, check_int, check_nonnegative, numeric_array
from privopt.errors import InvalidInput
from privopt.graphs._csr import as_square_csr, connected_components, graph_from_edges, symmetrised

__all__ = ["Graph", "Settled", "shortest_paths"]


class Settled(NamedTuple):
    """Nodes settled by a bounded Dijkstra search, in settled order.

    Attributes
    ----------
    nodes : int64 array, shape (s,)
        Node ids in order of non-decreasing distance from the source (ties: smaller id
        first); ``nodes[0]`` is the source.
    distances : float64 array, shape (s,)
        Their shortest-path distances from the source (same unit as the arc lengths).
    """

    nodes: np.ndarray
    distances: np.ndarray


#: ``Settled`` from the kernel's (nodes, distances) pair, without argument unpacking.
_settled = Settled._make


def _check_cutoff(name: str, value: Any) -> float:
    """A search radius: a real number >= 0, ``inf`` for none."""
    return check_nonnegative(name, value, allow_inf=True)


class Graph:
    """A weighted graph validated once and kept as CSR arrays in the C++ kernel.

    Every search runs the header-only C++ Dijkstra (``privopt/dijkstra.hpp``) on the stored
    arrays with the GIL released: nothing is re-validated or re-symmetrised per call, which
    makes a call cost the search plus a few microseconds (``bench/test_graphs.py``).

    Parameters
    ----------
    adjacency : scipy.sparse matrix or 2-D ndarray, shape (n, n)
        Arc lengths ``A[u, v] = w >= 0`` (any unit, e.g. km). Every stored entry of a sparse
        matrix is an arc (explicit zeros are arcs of length 0); dense zeros mean "no arc".
    directed : bool
        ``False`` (default) lets every arc be travelled both ways (scipy's undirected semantics:
        of two opposite arcs the shorter counts).

    Raises
    ------
    InvalidInput
        Non-square or empty matrix, negative / NaN / infinite lengths.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> g = Graph(sp.csr_array(([1.0, 2.0, 4.0], ([0, 1, 0], [1, 2, 2])), shape=(3, 3)))
    >>> g.distances(2)
    Settled(nodes=array([2, 1, 0]), distances=array([0., 2., 3.]))
    >>> g.distances(0, max_nodes=2).nodes.tolist()
    [0, 1]
    >>> g.many([0, 2]).tolist()
    [[0.0, 1.0, 3.0], [3.0, 2.0, 0.0]]
    """

    def __init__(self, adjacency: Any, *, directed: bool = False) -> None:
        csr = as_square_csr(adjacency)
        directed = check_bool("directed", directed)
        if not directed:
            csr = symmetrised(csr)
        self._init_arrays(csr.indptr, csr.indices, csr.data, directed)

    def _init_arrays(
        self, indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray, directed: bool
    ) -> None:
        self.directed = directed
        self._indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self._indices = np.ascontiguousarray(indices, dtype=np.int64)
        self._weights = np.ascontiguousarray(weights, dtype=np.float64)
        for a in (self._indptr, self._indices, self._weights):
            a.setflags(write=False)
        try:
            self._kernel = kernels.PreparedGraph(self._indptr, self._indices, self._weights)
        except ValueError as exc:  # the kernel's own check (reached only through from_csr)
            raise InvalidInput(f"graph: {exc}") from None
        self.n_nodes = int(self._kernel.n_nodes)

    @classmethod
    def from_edges(
        cls, n_nodes: int, u: Any, v: Any, length: Any, *, directed: bool = False
    ) -> Graph:
        """Graph from edge lists ``(u[e], v[e], length[e])`` (parallel edges keep the shortest);
        see :func:`privopt.graphs.graph_from_edges`."""
        # graph_from_edges already stores both directions of an undirected edge.
        csr = graph_from_edges(n_nodes, u, v, length, directed=directed)
        g = cls.__new__(cls)
        g._init_arrays(csr.indptr, csr.indices, csr.data, bool(directed))
        return g

    @classmethod
    def from_csr_arrays(
        cls, indptr: Any, indices: Any, weights: Any, *, directed: bool = False
    ) -> Graph:
        """The graph whose stored arcs are exactly ``(indptr, indices, weights)``, as
        :attr:`csr` holds them (an undirected graph stores both directions of every edge): a
        saved graph comes back with the same arcs, in the same order.

        Parameters
        ----------
        indptr : int array (n + 1,), non-decreasing from 0 to the number of arcs.
        indices : int array (arcs,), the head node of each arc, in ``[0, n)``.
        weights : float array (arcs,), arc lengths ``>= 0``, finite.
        directed : whether the arcs are one-way (the flag of the graph saved).

        Raises
        ------
        InvalidInput
            Arrays that are not a CSR matrix of n ≥ 1 nodes, bad lengths (as the constructor).
        """
        directed = check_bool("directed", directed)
        ptr = _index_array("indptr", indptr)
        heads = _index_array("indices", indices)
        lengths = numeric_array("weights", weights)
        n = ptr.size - 1
        if n < 1 or ptr[0] != 0 or np.any(np.diff(ptr) < 0) or ptr[-1] != heads.size:
            raise InvalidInput(
                "indptr must rise from 0 to the number of arcs, one entry per node plus one"
            )
        if lengths.shape != heads.shape:
            raise InvalidInput(
                f"weights must have one length per arc ({heads.size}), got shape {lengths.shape}"
            )
        if heads.size and (heads.min() < 0 or heads.max() >= n):
            raise InvalidInput(f"indices must name nodes in [0, {n})")
        csr = as_square_csr(sp.csr_array((lengths, heads, ptr), shape=(n, n)))
        g = cls.__new__(cls)
        g._init_arrays(csr.indptr, csr.indices, csr.data, directed)
        return g

    @property
    def n_arcs(self) -> int:
        """Number of stored arcs (an undirected edge counts twice)."""
        return int(self._kernel.n_arcs)

    @property
    def csr(self) -> sp.csr_array:
        """The stored arcs as a read-only scipy CSR array (both directions when undirected)."""
        return sp.csr_array(
            (self._weights, self._indices, self._indptr), shape=(self.n_nodes, self.n_nodes)
        )

    def _sources(self, sources: Any) -> np.ndarray:
        """``sources`` as a 1-D int64 array of node ids in ``[0, n)``."""
        arr = numeric_array("sources", sources)
        if arr.ndim != 1:
            raise InvalidInput(f"sources must be a 1-D array, got shape {arr.shape}")
        if arr.size and arr.dtype.kind not in "iu":
            raise InvalidInput(f"sources must be integer node ids, got dtype {arr.dtype}")
        src = arr.astype(np.int64)
        if src.size and (src.min() < 0 or src.max() >= self.n_nodes):
            bad = src[(src < 0) | (src >= self.n_nodes)][0]
            raise InvalidInput(f"sources contains node {int(bad)} outside [0, {self.n_nodes})")
        return src

    def _source(self, name: str, value: Any) -> int:
        return check_int(name, value, minimum=0, maximum=self.n_nodes - 1)

    def distances(
        self, source: int, *, cutoff: float = math.inf, max_nodes: int | None = None
    ) -> Settled:
        """Bounded Dijkstra from ``source``: the nodes it settles, in order, with distances.

        Parameters
        ----------
        source : int
            Node id in ``[0, n)``.
        cutoff : float
            Settle only nodes within this distance (inclusive); ``inf`` for no limit.
        max_nodes : int, optional
            Stop after this many settled nodes (the source included): the ``L`` nearest.

        Returns
        -------
        Settled
            ``(nodes, distances)``, both of shape (s,), s ≤ ``max_nodes``.
        """
        # Fast path for the common, valid call (this runs once per user per request).
        if type(source) is not int or not 0 <= source < self.n_nodes:
            source = self._source("source", source)
        if type(cutoff) is not float or not cutoff >= 0:
            cutoff = _check_cutoff("cutoff", cutoff)
        if max_nodes is None:
            limit = -1
        elif type(max_nodes) is int and max_nodes >= 0:
            limit = max_nodes
        else:
            limit = check_int("max_nodes", max_nodes, minimum=0)
        return _settled(self._kernel.settled(source, cutoff, limit))

    def ball(self, center: int, radius: float) -> Settled:
        """The nodes within graph distance ``radius`` of ``center`` (inclusive), nearest first:
        ``distances(center, cutoff=radius)``."""
        return self.distances(center, cutoff=_check_cutoff("radius", radius))

    def many(
        self, sources: Any = None, *, cutoff: float = math.inf, threads: int | None = 1
    ) -> np.ndarray:
        """Distances from many sources to every node (one Dijkstra per source, in parallel).

        Parameters
        ----------
        sources : 1-D int array of shape (s,), optional
            Source nodes; default all nodes.
        cutoff : float
            Entries farther than this read ``inf``.
        threads : int or None
            C++ threads (``None``: one per CPU); rows are independent, so the result does not
            depend on it.

        Returns
        -------
        ndarray of float64, shape (s, n); ``inf`` where unreachable or beyond ``cutoff``.
        """
        src = np.arange(self.n_nodes, dtype=np.int64) if sources is None else self._sources(sources)
        cut = _check_cutoff("cutoff", cutoff)
        n_threads = (
            os.cpu_count() or 1 if threads is None else check_int("threads", threads, minimum=1)
        )
        return self._kernel.many(src, cut, n_threads)

    def components(self) -> tuple[int, np.ndarray]:
        """(number of connected components, labels (n,)); weakly connected when directed."""
        return connected_components(self.csr, directed=False)

    def kernel_seconds(
        self,
        sources: Any,
        *,
        cutoff: float = math.inf,
        max_nodes: int | None = None,
        reps: int = 1000,
    ) -> float:
        """Mean seconds per search of the C++ kernel alone, cycling through ``sources``
        (the baseline against which benchmarks measure the per-call overhead)."""
        src = self._sources(sources)
        limit = -1 if max_nodes is None else check_int("max_nodes", max_nodes, minimum=0)
        return float(
            self._kernel.kernel_seconds(
                src, _check_cutoff("cutoff", cutoff), limit, check_int("reps", reps, minimum=1)
            )
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its CSR arrays (the C++ object is rebuilt on load), for process executors.
        return (_from_arrays, (self._indptr, self._indices, self._weights, self.directed))

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return f"Graph(n_nodes={self.n_nodes}, n_arcs={self.n_arcs}, {kind})"


def shortest_paths(
    graph: Any, sources: Any = None, *, directed: bool = True, cutoff: float = math.inf
) -> np.ndarray:
    """Shortest-path distances from each source to every node (Dijkstra, C++ kernel).

    A one-shot wrapper of :class:`privopt.graphs.Graph`: it validates (and, undirected,
    symmetrises) ``graph`` on every call; to search one graph many times, build a ``Graph``
    once.

    Parameters
    ----------
    graph : scipy.sparse matrix or 2-D ndarray, shape (n, n)
        Arc lengths (any unit, e.g. km); every stored entry of a sparse matrix is an arc
        (explicit zeros are arcs of length 0); for dense input zeros mean "no arc".
    sources : int or 1-D int array of shape (s,), optional
        Source nodes in ``[0, n)``; default all nodes.
    directed : bool
        ``False`` lets every arc be travelled both ways.
    cutoff : float
        Stop each search beyond this length; farther nodes get ``inf``.

    Returns
    -------
    ndarray of float64, shape (s, n) (or (n,) for a scalar source); ``inf`` where unreachable.

    Raises
    ------
    InvalidInput
        Non-square or empty graph, negative/NaN/inf lengths, sources out of range,
        negative or NaN cutoff.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> g = sp.csr_array(([1.0, 2.0], ([0, 1], [1, 2])), shape=(3, 3))
    >>> shortest_paths(g, 0).tolist()
    [0.0, 1.0, 3.0]
    """
    g = Graph(graph, directed=directed)
    if sources is not None and np.ndim(sources) == 0:
        s = check_int("sources", sources, minimum=0, maximum=g.n_nodes - 1)
        return g.many(np.array([s], dtype=np.int64), cutoff=cutoff)[0]
    return g.many(sources, cutoff=cutoff)


def _index_array(name: str, value: Any) -> np.ndarray:
    """A 1-D int64 array of indices (a CSR array of :meth:`Graph.from_csr_arrays`)."""
    arr = numeric_array(name, value)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise InvalidInput(
            f"{name} must be a 1-D int array, got dtype {arr.dtype}, shape {arr.shape}"
        )
    return arr.astype(np.int64)


def _from_arrays(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray, directed: bool):
    g = Graph.__new__(Graph)
    g._init_arrays(indptr, indices, weights, directed)
    return g
