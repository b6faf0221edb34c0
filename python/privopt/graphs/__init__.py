"""Shortest paths and connected components on weighted graphs (thin wrappers over C++ kernels).

A graph is a square ``scipy.sparse`` matrix ``A`` (n × n): every *stored* entry ``A[u, v] = w``
is an arc u → v of length ``w ≥ 0`` (explicit zeros are arcs of length 0, as in a CSR array).
Distances are computed by the header-only C++ Dijkstra kernel ``privopt/dijkstra.hpp`` with the
GIL released.

- :class:`Graph` validates a graph once and keeps it as CSR arrays in C++: bounded searches
  (:meth:`Graph.distances` with a cutoff and a node limit, :meth:`Graph.ball`) and
  many-source distances on several threads (:meth:`Graph.many`).
- :func:`shortest_paths` is the one-shot form (validates the graph on every call).
"""

from privopt.graphs._csr import connected_components, graph_from_edges, to_csr_arrays
from privopt.graphs._graph import Graph, Settled, shortest_paths

__all__ = [
    "Graph",
    "Settled",
    "shortest_paths",
    "connected_components",
    "graph_from_edges",
    "to_csr_arrays",
]
