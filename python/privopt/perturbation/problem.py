"""The metric-DP perturbation-matrix problem (spec 000 §1): records, metric, prior, outputs,
utility loss, ε and η, with the mDP graph and its components (Property 3.1)."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt._validation import (
    MAX_EXP_ARGUMENT,
    check_exp_argument,
    check_finite_array,
    check_finite_result,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability_vector,
    numeric_array,
)
from privopt.errors import InvalidInput
from privopt.graphs import connected_components, shortest_paths
from privopt.perturbation._travel_cost import weighted_l1
from privopt.perturbation.metrics import METRICS, check_points, pairwise

__all__ = ["MDPProblem", "EdgeList", "travel_cost_loss"]

#: HiGHS treats an objective coefficient of magnitude >= 1e20 as infinite (option
#: ``infinite_cost``): an LP objective that large would be solved as a different problem.
LP_INFINITE_COST = 1e20


@dataclass(frozen=True)
class EdgeList:
    """Ordered neighbour pairs (i, j), i ≠ j, d(r_i, r_j) ≤ η (both directions).

    Attributes
    ----------
    i, j : int64 arrays of shape (|E|,), record indices.
    d : float64 array of shape (|E|,), the metric distance d_ij (units of the metric, e.g. km).
    """

    i: np.ndarray
    j: np.ndarray
    d: np.ndarray

    def __len__(self) -> int:
        return int(self.i.size)

    def check_ratios(self, epsilon: float) -> None:
        """Refuse an ε (in 1/distance unit) whose ratio e^{ε d} overflows float64 on an edge:
        the constraint ``z_ik ≤ e^{ε d} z_jk`` could then be neither repaired nor checked."""
        if self.d.size:
            check_exp_argument(
                epsilon * float(np.max(self.d)),
                "epsilon * d",
                f"use a smaller epsilon (now {epsilon:g})",
                where=" of an edge",
                show_value=False,  # it would reveal a distance between records
            )

    def checked(self, n_records: int, name: str = "edges") -> EdgeList:
        """These edges as int64 / float64 arrays, checked against ``n_records`` records.

        For an ``EdgeList`` a caller built (privopt's own are right by construction): ``i``,
        ``j`` and ``d`` must be 1-D of one length, ``i`` and ``j`` integers in
        ``[0, n_records)`` with ``i ≠ j``, and ``d`` finite and ``>= 0``.

        Raises
        ------
        InvalidInput
            Naming the field and the first offending entry.
        """
        i = check_finite_array(f"{name}.i", self.i, ndim=1, dtype=np.int64)
        j = check_finite_array(f"{name}.j", self.j, ndim=1, dtype=np.int64)
        d = check_finite_array(f"{name}.d", self.d, ndim=1)
        if not i.size == j.size == d.size:
            raise InvalidInput(
                f"{name}.i, .j and .d must have one length, got {i.size}, {j.size}, {d.size}"
            )
        for field_name, ids in ((f"{name}.i", i), (f"{name}.j", j)):
            bad = np.flatnonzero((ids < 0) | (ids >= n_records))
            if bad.size:
                raise InvalidInput(
                    f"{field_name}[{int(bad[0])}] = {int(ids[bad[0]])} is not a record index "
                    f"in [0, {n_records})"
                )
        for text, bad in (("i == j", np.flatnonzero(i == j)), ("d < 0", np.flatnonzero(d < 0))):
            if bad.size:
                raise InvalidInput(f"{name} entry {int(bad[0])} has {text}")
        return EdgeList(i, j, d)


class MDPProblem:
    """Optimal ε-mDP perturbation matrix problem.

    Minimise :math:`\\sum_i \\sum_k p_i c_{ik} z_{ik}` over row-stochastic :math:`Z` (N × K) subject
    to :math:`z_{ik} ≤ e^{ε d_{ij}} z_{jk}` for every ordered neighbour pair :math:`d_{ij} ≤ η`.

    Parameters
    ----------
    records : array
        ``metric="euclidean"``: coordinates (N, d) (any unit; ε is per that unit).
        ``metric="haversine"``: (N, 2) **(lat, lon)** in degrees; distances in km, ε per km.
        ``metric="precomputed"``: the symmetric (N, N) distance matrix itself.
        ``metric="graph"``: int node ids (N,) of the records in ``graph``.
    epsilon : float
        ε ≥ 0 in 1/(distance unit). ε = 0 forces identical rows within a component.
    eta : float
        Neighbour threshold η > 0 (distance unit); pairs with ``d ≤ η`` are constrained.
    metric : {"euclidean", "haversine", "precomputed", "graph"}
    graph : scipy.sparse matrix (n_nodes, n_nodes), optional
        Weighted (e.g. road) graph for ``metric="graph"``; d = shortest-path length (undirected).
    prior : array (N,), optional
        Prior p (probability vector); default uniform 1/N.
    outputs : None, int, int array (K,), or float array (K, d), optional
        Output set O: ``None`` = all records (K = N); an int K = K records drawn without
        replacement with ``seed`` (sorted); an int array = indices of records; a float array =
        output coordinates (coordinate metrics only).
    cost : array (N, K), optional
        Utility loss c_ik ≥ 0; default the distance d(r_i, o_k) (the paper uses c = p·d).
    seed : int, optional
        Seed for drawing ``outputs`` when it is an int.
    output_distances : array (N, K), optional
        Distances d(r_i, o_k) ≥ 0 from each record to outputs that are not records, for maps
        known only by a metric matrix (``outputs`` must then be None). Used wherever output
        distances are (the default cost, the exponential mechanism).

    Raises
    ------
    InvalidInput
        NaN/inf or complex coordinates, ε < 0, η ≤ 0, K = 0 or K > N for a subset, shape
        mismatches, negative costs, a non-symmetric precomputed matrix, records out of the
        graph; a graph metric with records that cannot reach every output (a disconnected
        graph) unless a finite ``cost`` is given, naming the components; distances that
        overflow float64 or an objective ``p_i c_ik`` ≥ 1e20 (the LP solver's infinity).
        Euclidean distances are computed on coordinates scaled by a power of two, so
        coordinates near 1e±300 give their exact distances.

    Examples
    --------
    >>> import numpy as np
    >>> prob = MDPProblem(np.array([[0.0], [1.0]]), epsilon=1.0, eta=1.0)
    >>> prob.n_records, prob.n_outputs, len(prob.edges)
    (2, 2, 2)
    """

    def __init__(
        self,
        records: Any,
        *,
        epsilon: float,
        eta: float,
        metric: str = "euclidean",
        graph: Any = None,
        prior: Any = None,
        outputs: Any = None,
        cost: Any = None,
        seed: int | None = None,
        output_distances: Any = None,
    ) -> None:
        if metric not in METRICS:
            raise InvalidInput(f"metric must be one of {METRICS}, got {metric!r}")
        self.metric = metric
        self._edges: EdgeList | None = None
        self._components: tuple[int, np.ndarray] | None = None
        self.epsilon = check_nonnegative("epsilon", epsilon)
        self.eta = check_positive("eta", eta, allow_inf=True)
        self.points: np.ndarray | None = None
        self.output_points: np.ndarray | None = None
        self.distances = self._record_distances(records, graph)
        self._check_ratio_range()
        n = self.distances.shape[0]
        self.prior = (
            np.full(n, 1.0 / n) if prior is None else check_probability_vector("prior", prior)
        )
        if self.prior.shape != (n,):
            raise InvalidInput(f"prior must have shape ({n},), got {self.prior.shape}")
        if output_distances is None:
            self.output_index, self.output_distances = self._outputs(outputs, seed)
        else:
            self.output_index, self.output_distances = None, _output_table(output_distances, n)
            if outputs is not None:
                raise InvalidInput("pass outputs or output_distances, not both")
        k = self.output_distances.shape[1]
        if cost is None:
            self._check_outputs_reachable()
            self.cost = self.output_distances
        else:
            self.cost = check_finite_array("cost", cost, shape=(n, k))
            if np.any(self.cost < 0):
                raise InvalidInput("cost must be >= 0 (utility loss)")
        self._check_objective_range()

    # ------------------------------------------------------------------ construction helpers
    def _record_distances(self, records: Any, graph: Any) -> np.ndarray:
        if self.metric == "precomputed":
            d = check_finite_array("records (distance matrix)", records, ndim=2)
            if d.shape[0] != d.shape[1] or d.shape[0] == 0:
                raise InvalidInput(
                    f"a precomputed distance matrix must be square (N, N) with "
                    f"N >= 1, got shape {d.shape}"
                )
            if np.any(d < 0) or np.any(np.diag(d) != 0):
                raise InvalidInput(
                    "a precomputed distance matrix must be >= 0 with a zero diagonal"
                )
            if not np.allclose(d, d.T, rtol=1e-12, atol=0):
                raise InvalidInput("a precomputed distance matrix must be symmetric")
            return np.ascontiguousarray(np.minimum(d, d.T))
        if self.metric == "graph":
            if graph is None:
                raise InvalidInput("metric='graph' needs graph= (a sparse weighted graph)")
            nodes = numeric_array("records", records)
            if nodes.ndim != 1 or nodes.size == 0 or nodes.dtype.kind not in "iu":
                raise InvalidInput(
                    "records must be a non-empty 1-D int array of graph node "
                    f"ids for metric='graph', got {nodes.dtype} {nodes.shape}"
                )
            self.graph_nodes = nodes.astype(np.int64)
            self._road_graph = graph
            d = shortest_paths(graph, self.graph_nodes, directed=False)[:, self.graph_nodes]
            if not np.all(np.isfinite(d)):
                # Unreachable pairs are simply never neighbours.
                d = np.where(np.isfinite(d), d, np.inf)
            return np.minimum(d, d.T)
        if graph is not None:
            raise InvalidInput("graph= is only used with metric='graph'")
        self.points = check_points("records", records, self.metric)
        return self._pairwise(self.points, self.points, "records")

    def _pairwise(self, a: np.ndarray, b: np.ndarray, name: str) -> np.ndarray:
        """Coordinate distances, computed on copies scaled by a power of two.

        The scaling is exact, so ordinary coordinates give the same bits as without it, while
        coordinates near 1e300 (whose squared differences overflow) or 1e-300 (whose squares
        underflow to 0, making distinct records coincide) keep their true distances.
        """
        largest = max(float(np.max(np.abs(a))), float(np.max(np.abs(b))))
        exponent = math.frexp(largest)[1] if self.metric == "euclidean" and largest > 0 else 0
        if exponent == 0:
            d = pairwise(a, b, self.metric)
        else:
            d = pairwise(np.ldexp(a, -exponent), np.ldexp(b, -exponent), self.metric)
            with np.errstate(over="ignore"):
                d = np.ldexp(d, exponent)
        if not np.all(np.isfinite(d)):
            raise InvalidInput(
                f"{name}: distances overflow float64 (coordinates near the float64 limit); "
                "express the coordinates in a larger unit (and epsilon, eta per that unit)"
            )
        return d

    def _check_ratio_range(self) -> None:
        """Every constraint's ratio e^{ε d_ij} (d_ij ≤ η) must be a finite float64."""
        if self.epsilon * self.eta <= MAX_EXP_ARGUMENT:
            return
        d = self.distances
        largest = float(np.max(d, where=(d <= self.eta) & np.isfinite(d), initial=0.0))
        check_exp_argument(
            self.epsilon * largest,
            "epsilon * d",
            f"use a smaller epsilon (now {self.epsilon:g}) or eta",
            where=" of a neighbour pair (d <= eta)",
            show_value=False,  # it would reveal a distance between records
        )

    def _check_outputs_reachable(self) -> None:
        """A graph metric whose records cannot reach every output has an infinite default cost:
        refuse it, naming the graph components, rather than return an infinite loss."""
        unreachable = ~np.isfinite(self.output_distances)
        if not np.any(unreachable):
            return
        n_comp, labels = connected_components(self._road_graph)
        record_comp = labels[self.graph_nodes]
        groups = {int(c): np.flatnonzero(record_comp == c) for c in np.unique(record_comp)}
        shown = "; ".join(
            f"component {c}: records {_short_list(idx)}" for c, idx in list(groups.items())[:5]
        )
        raise InvalidInput(
            f"graph is disconnected ({n_comp} components): {int(unreachable.sum())} "
            f"(record, output) pairs have no path, so the default cost (the distance) is infinite. "
            f"Records by component: {shown}{' ...' if len(groups) > 5 else ''}. Solve each "
            "component as its own MDPProblem (its records and outputs), or pass a finite cost="
        )

    def _check_objective_range(self) -> None:
        largest = float(np.max(self.prior[:, None] * self.cost)) if self.cost.size else 0.0
        if largest >= LP_INFINITE_COST:
            raise InvalidInput(
                f"cost: the LP objective p_i*c_ik reaches {LP_INFINITE_COST:g} or more, which "
                "the LP solver treats as infinite; express the "
                "distances (or cost) in a larger unit (and epsilon, eta per that unit)"
            )

    def _outputs(self, outputs: Any, seed: int | None) -> tuple[np.ndarray | None, np.ndarray]:
        n = self.distances.shape[0]
        if outputs is None:
            return np.arange(n), self.distances
        if isinstance(outputs, (int, np.integer)) and not isinstance(outputs, bool):
            k = check_int("outputs (K)", outputs, minimum=1, maximum=n)
            idx = np.sort(np.random.default_rng(seed).choice(n, k, replace=False))
            return idx, self.distances[:, idx]
        arr = numeric_array("outputs", outputs)
        if arr.ndim == 1 and arr.dtype.kind in "iu":
            if arr.size == 0:
                raise InvalidInput("outputs must not be empty (K = 0)")
            if arr.min() < 0 or arr.max() >= n:
                raise InvalidInput(f"outputs indices must lie in [0, {n})")
            if np.unique(arr).size != arr.size:
                raise InvalidInput("outputs indices must be distinct")
            return arr.astype(np.int64), self.distances[:, arr]
        if self.points is None:
            raise InvalidInput(
                "output coordinates need a coordinate metric ('euclidean' or "
                "'haversine'); pass record indices instead"
            )
        pts = check_points("outputs", outputs, self.metric)
        if pts.shape[1] != self.points.shape[1]:
            raise InvalidInput(
                f"outputs must have {self.points.shape[1]} coordinates, got shape {pts.shape}"
            )
        self.output_points = pts
        return None, self._pairwise(self.points, pts, "outputs")

    # ------------------------------------------------------------------ derived quantities
    @property
    def n_records(self) -> int:
        """N, the number of secret records."""
        return int(self.distances.shape[0])

    @property
    def n_outputs(self) -> int:
        """K, the number of outputs."""
        return int(self.output_distances.shape[1])

    @property
    def objective(self) -> np.ndarray:
        """LP objective coefficients p_i c_ik, shape (N, K)."""
        return self.prior[:, None] * self.cost

    @property
    def edges(self) -> EdgeList:
        """Ordered neighbour pairs of the mDP graph (both directions; d ≤ η inclusive)."""
        if self._edges is None:
            mask = self.distances <= self.eta
            np.fill_diagonal(mask, False)
            i, j = np.nonzero(mask)
            self._edges = EdgeList(
                i.astype(np.int64), j.astype(np.int64), self.distances[i, j].astype(np.float64)
            )
        return self._edges

    def mdp_graph(self) -> sp.csr_array:
        """The mDP graph 𝒢 as a sparse (N, N) matrix of edge lengths d_ij (explicit zeros kept
        for coincident records)."""
        e = self.edges
        n = self.n_records
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(indptr, e.i + 1, 1)
        np.cumsum(indptr, out=indptr)
        return sp.csr_array((e.d, e.j, indptr), shape=(n, n))

    @property
    def components(self) -> tuple[int, np.ndarray]:
        """(number of components, labels (N,)) of the mDP graph (Property 3.1)."""
        if self._components is None:
            self._components = connected_components(self.mdp_graph())
        return self._components

    def graph_distances(self, sources: Any = None, *, cutoff: float = math.inf) -> np.ndarray:
        """Shortest-path distances D on the mDP graph (Property 3.2), via the C++ Dijkstra
        kernel; shape (len(sources), N), ``inf`` between components or beyond ``cutoff``."""
        return shortest_paths(self.mdp_graph(), sources, cutoff=cutoff)

    def with_epsilon(self, epsilon: float) -> MDPProblem:
        """The same records, outputs, prior, cost and η with ε = ``epsilon`` (1/distance unit):
        the distances and neighbour pairs, which depend on η only, are shared, not recomputed.

        Raises
        ------
        InvalidInput
            ε not a real ≥ 0, or one whose ratio e^{ε d} overflows float64 on a neighbour pair.
        """
        other = copy.copy(self)
        other.epsilon = check_nonnegative("epsilon", epsilon)
        other._check_ratio_range()
        return other

    def subproblem(self, index: np.ndarray) -> MatrixBlock:
        """The LP data restricted to records ``index`` (all K outputs kept)."""
        return MatrixBlock.from_problem(self, np.asarray(index, dtype=np.int64))

    def __repr__(self) -> str:
        return (
            f"MDPProblem(N={self.n_records}, K={self.n_outputs}, metric={self.metric!r}, "
            f"epsilon={self.epsilon:g}, eta={self.eta:g}, |E|={len(self.edges)})"
        )


@dataclass
class MatrixBlock:
    """LP data of a set of records (a component): local edges, objective, distances."""

    index: np.ndarray  # (n,) global record indices
    objective: np.ndarray  # (n, K) p_i c_ik
    edges: EdgeList  # local indices
    epsilon: float
    distances: np.ndarray  # (n, n) metric distances (for partitioners)
    points: np.ndarray | None  # (n, d) coordinates when available
    cost: np.ndarray | None = None  # (n, K) utility loss c_ik (before the prior)
    #: the objective is p_i c_ik · 2**objective_shift (solve_components scales tiny or huge ones)
    objective_shift: int = 0

    @classmethod
    def from_problem(cls, prob: MDPProblem, index: np.ndarray) -> MatrixBlock:
        d = prob.distances[np.ix_(index, index)]
        mask = d <= prob.eta
        np.fill_diagonal(mask, False)
        i, j = np.nonzero(mask)
        pts = None if prob.points is None else prob.points[index]
        return cls(
            index,
            prob.objective[index],
            EdgeList(i.astype(np.int64), j.astype(np.int64), d[i, j]),
            prob.epsilon,
            d,
            pts,
            prob.cost[index],
        )

    @property
    def n(self) -> int:
        return int(self.index.size)

    def graph(self) -> sp.csr_array:
        """The block's mDP graph (n, n) with edge lengths d_ij (explicit zeros kept)."""
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.add.at(indptr, self.edges.i + 1, 1)
        np.cumsum(indptr, out=indptr)
        return sp.csr_array((self.edges.d, self.edges.j, indptr), shape=(self.n, self.n))

    @property
    def k(self) -> int:
        return int(self.objective.shape[1])


def _short_list(index: np.ndarray, limit: int = 8) -> str:
    head = ", ".join(str(int(i)) for i in index[:limit])
    return f"[{head}{', ...' if index.size > limit else ''}] ({index.size})"


def travel_cost_loss(record_to_dest: Any, output_to_dest: Any, weights: Any = None) -> np.ndarray:
    """The paper's travel-cost utility loss (Eq. 48):
    ``c_ik = Σ_dest p_dest · |pd(r_i, dest) − pd(o_k, dest)|``.

    One compiled pass, no (N, K, n_dest) temporary. LR-Geo computes its c̄ (Eq. 5 of the LR-Geo
    paper) and the CR table's β with it too.

    Parameters
    ----------
    record_to_dest : (N, n_dest) path distances from each record to each destination (km).
    output_to_dest : (K, n_dest) path distances from each output to each destination.
    weights : (n_dest,) destination probabilities p_dest (default uniform).

    Returns
    -------
    (N, K) float64 cost table, to pass as ``MDPProblem(..., cost=...)``.

    Raises
    ------
    InvalidInput
        Non-finite, complex or mis-shaped distances, or bad weights.
    NumericalTrouble
        A cost overflows float64 (path distances near 1e308).
    """
    a = check_finite_array("record_to_dest", record_to_dest, ndim=2)
    b = check_finite_array("output_to_dest", output_to_dest, shape=(None, a.shape[1]))
    if a.shape[1] == 0:
        raise InvalidInput("record_to_dest must have at least one destination column")
    w = (
        np.full(a.shape[1], 1.0 / a.shape[1])
        if weights is None
        else check_probability_vector("weights", weights)
    )
    if w.shape != (a.shape[1],):
        raise InvalidInput(f"weights must have shape ({a.shape[1]},), got {w.shape}")
    out = weighted_l1(a, b, w)  # one compiled pass (privopt.perturbation._travel_cost)
    return check_finite_result("travel_cost_loss", out, cause="path distances near 1e308")


def _output_table(output_distances: Any, n: int) -> np.ndarray:
    """A validated (N, K) table of record-to-output distances (finite, ≥ 0, K ≥ 1)."""
    d = check_finite_array("output_distances", output_distances, ndim=2)
    if d.shape[0] != n or d.shape[1] == 0:
        raise InvalidInput(f"output_distances must have shape ({n}, K >= 1), got {d.shape}")
    if np.any(d < 0):
        raise InvalidInput("output_distances must be >= 0")
    return np.ascontiguousarray(d)
