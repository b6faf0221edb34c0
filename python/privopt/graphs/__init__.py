"""Shortest paths and connected components on weighted graphs (thin wrappers over C++ kernels).

A graph is a square ``scipy.sparse`` matrix ``A`` (n × n): every *stored* entry ``A[u, v] = w``
is an arc u → v of length ``w ≥ 0`` (explicit zeros are arcs of length 0, as in a CSR array).
Distances are computed by the header-only C++ Dijkstra kernel ``privopt/dijkstra.hpp``
(bound as :func:`privopt._core.graphs.shortest_paths`, GIL released).
"""

from privopt.graphs._paths import (
    connected_components,
    graph_from_edges,
    shortest_paths,
    to_csr_arrays,
)

__all__ = ["shortest_paths", "connected_components", "graph_from_edges", "to_csr_arrays"]
