"""Server side of the cost estimation: the cost reference (CR) table (spec 001 §8).

The server knows the task targets and their prior q; users know their LR sets. The CR table
meets them halfway:

1. V̂, an s-km grid snapped to the roads: every road edge is subdivided into pieces of at most
   s/2 (points interpolated between its ends), the pieces form the fine road graph F, and each
   non-empty s × s cell keeps the F node nearest its centre.
2. Travel costs from the targets: one many-source Dijkstra on F (C++ kernel, threads), giving
   ``tc(v̂, t_j)`` for every V̂ point — |targets| × |V̂| numbers, never |V̂|².
3. ``β_ab = Σ_j q_j |tc(v̂_a, t_j) − tc(v̂_b, t_j)|`` only for the pairs a request names.

The snap of each location v ∈ V to its nearest V̂ point (by road distance) and the correction
terms ``tc(v, v̂)`` (road, default) or ``d(v, v̂)`` (straight line, paper-literal) are public (a
function of the public map and V): :attr:`snap`, :attr:`snap_road_km`, :attr:`snap_line_km`.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from privopt._validation import (
    check_bool,
    check_finite_array,
    check_instance,
    check_int,
    check_positive,
    check_probability_vector,
    numeric_array,
)
from privopt.errors import InvalidInput
from privopt.geo.geography import Geography, check_geography, draw_indices, location_indices
from privopt.geometry import KM_PER_DEGREE_LAT, haversine_pairs_km
from privopt.graphs import Graph
from privopt.perturbation import travel_cost_loss

__all__ = ["CostReferenceTable", "SnapTable", "TravelCosts", "subdivide_roads"]


def subdivide_roads(road: Graph, coords: np.ndarray, spacing_km: float) -> tuple[Graph, np.ndarray]:
    """Split every road edge into ``ceil(length / spacing)`` equal pieces.

    New points lie on the straight segment between the edge's ends (linear interpolation of
    the coordinates); path lengths between original nodes are unchanged.

    Returns
    -------
    (fine graph F, coordinates (n_F, 2)); nodes 0..n-1 of F are the road's nodes.
    """
    csr = sp.triu(road.csr, k=1).tocoo()  # each undirected edge once
    u, v, length = csr.row.astype(np.int64), csr.col.astype(np.int64), csr.data
    pieces = np.maximum(1, np.ceil(length / spacing_km - 1e-9)).astype(np.int64)
    n0 = road.n_nodes
    n_new = int((pieces - 1).sum())
    # Interior points of edge e: ids n0 + offset[e] + 0 .. pieces[e] - 2.
    offset = np.concatenate([[0], np.cumsum(pieces - 1)[:-1]])
    e_of = np.repeat(np.arange(u.size), pieces - 1)
    step = np.arange(n_new) - offset[e_of] + 1  # 1 .. pieces-1
    frac = step / pieces[e_of]
    new_xy = coords[u[e_of]] * (1 - frac)[:, None] + coords[v[e_of]] * frac[:, None]
    # Chain of each edge: u -> p1 -> ... -> p_{pieces-1} -> v, piece a of every edge at once.
    chain_u, chain_v, chain_e = [], [], []
    for a in range(int(pieces.max(initial=1))):
        sel = np.flatnonzero(pieces > a)
        chain_u.append(np.where(a == 0, u[sel], n0 + offset[sel] + a - 1))
        chain_v.append(np.where(a == pieces[sel] - 1, v[sel], n0 + offset[sel] + a))
        chain_e.append(sel)
    cu, cv, ce = np.concatenate(chain_u), np.concatenate(chain_v), np.concatenate(chain_e)
    seg = (length / pieces)[ce]
    fine = Graph.from_edges(n0 + n_new, cu, cv, seg)
    return fine, np.vstack([coords, new_xy])


class CostReferenceTable:
    """The server's CR table on an s-km road grid (spec §8, §4.5).

    Parameters
    ----------
    geography : the map (needs ``road_points``, the road nodes' coordinates).
    targets : int array of V̂ point indices, or an int count drawn uniformly from V̂
        (A4: 20 uniformly random targets). Known to the server only.
    weights : target prior q (default uniform).
    cell_km : s, the cell size (default 0.1 km).
    rng : randomness of the target draw. None (default) draws from the OS CSPRNG: the targets
        are the server's secret (users must not learn them), so an unseeded draw is the one to
        deploy; an int seed (or a numpy Generator, a :class:`privopt.dp.RandomSource`) is
        reproducible, for testing and experiments only. ``seed=`` is its former name
        (deprecated: it warns).
    anchor_locations : an s-cell that holds a location keeps that location as its V̂ point
        (the one nearest the centre if several), instead of the road point nearest its centre.
        Every location is then its own snap (t = 0), so ĉ = c̃ = c̄: CLR-Geo optimises the true
        costs and the relaxed bound is exact. The server learns nothing more: V and the snap
        table are public, so it can recompute every ĉ_ik of V² either way (docs/geo.md).
    threads : C++ threads of the many-source Dijkstra.

    Raises
    ------
    InvalidInput
        A geography without road coordinates, s ≤ 0, bad targets or weights.
    """

    def __init__(
        self,
        geography: Geography,
        targets: Any = 20,
        *,
        weights: Any = None,
        cell_km: float = 0.1,
        rng: Any = None,
        threads: int | None = 1,
        anchor_locations: bool = False,
        seed: int | None = None,
    ) -> None:
        check_geography("geography", geography)
        if seed is not None:
            if rng is not None:
                raise InvalidInput("give rng (or its former name seed), not both")
            warnings.warn(
                "CostReferenceTable(seed=...) is now rng=..., the name of every privopt entry "
                "point's randomness; seed= will be removed",
                DeprecationWarning,
                stacklevel=2,
            )
            rng = seed
        if geography.road_points is None:
            raise InvalidInput("the CR table needs road node coordinates (geography.road_points)")
        start = time.perf_counter()
        self.cell_km = check_positive("cell_km", cell_km)
        self.geography = geography
        if threads is not None:
            threads = check_int("threads", threads, minimum=1)
        fine, xy = subdivide_roads(geography.road, geography.road_points, self.cell_km / 2)
        self.fine_road, self.fine_points = fine, xy
        # V̂ only on the locations' road component: elsewhere travel costs are infinite
        # (a map read from OSM keeps every component among its road points).
        _, labels = fine.components()
        reach = np.flatnonzero(labels == labels[geography.road_nodes[0]])
        check_bool("anchor_locations", anchor_locations)
        self.anchor_locations = anchor_locations
        preferred = None
        if anchor_locations:
            preferred = np.zeros(fine.n_nodes, dtype=bool)
            preferred[geography.road_nodes] = True
            preferred = preferred[reach]
        self.points_index = reach[
            _cell_representatives(xy[reach], self.cell_km, geography.metric, preferred)
        ]
        self.targets = self._targets(targets, rng)
        n_t = self.targets.size
        self.weights = (
            np.full(n_t, 1.0 / n_t)
            if weights is None
            else check_probability_vector("weights", weights)
        )
        if self.weights.shape != (n_t,):
            raise InvalidInput(f"weights must have shape ({n_t},), got {self.weights.shape}")
        target_nodes = self.points_index[self.targets]
        tc = fine.many(target_nodes, threads=threads)  # (n_t, n_F)
        self.tc_points = np.ascontiguousarray(tc[:, self.points_index].T)  # (|V̂|, n_t)
        self.tc_locations = np.ascontiguousarray(tc[:, geography.road_nodes].T)  # (K, n_t)
        self._snap_locations()
        self.build_s = time.perf_counter() - start

    def _targets(self, targets: Any, rng: Any) -> np.ndarray:
        n = self.points_index.size
        if isinstance(targets, (int, np.integer)) and not isinstance(targets, bool):
            t = check_int("targets", targets, minimum=1, maximum=n)
            return draw_indices(n, t, rng)  # None: the OS CSPRNG
        arr = numeric_array("targets", targets)
        if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
            raise InvalidInput(f"targets must be a count or V̂ indices in [0, {n})")
        return location_indices("targets", arr, n)

    def _snap_locations(self) -> None:
        dist, _, src = dijkstra(
            self.fine_road.csr, indices=self.points_index, min_only=True, return_predecessors=True
        )
        nodes = self.geography.road_nodes
        pos = np.full(self.fine_road.n_nodes, -1, dtype=np.int64)
        pos[self.points_index] = np.arange(self.points_index.size)
        #: (K,) V̂ index of each location's nearest V̂ point (road distance).
        self.snap = pos[src[nodes]]
        #: (K,) tc(v, v̂) in km: the road correction of Lemma B.1 (spec §8 caveat).
        self.snap_road_km = dist[nodes]
        loc_xy = self.fine_points[nodes]
        snap_xy = self.fine_points[self.points_index[self.snap]]
        metric = "euclidean" if self.geography.metric == "euclidean" else "haversine"
        #: (K,) straight-line d(v, v̂) in km (the paper-literal correction).
        self.snap_line_km = _pair_distances(loc_xy, snap_xy, metric)

    @property
    def n_points(self) -> int:
        """|V̂|."""
        return int(self.points_index.size)

    @property
    def delta_max(self) -> float:
        """Largest correction term over V (road distance to the snapped point), km."""
        return float(self.snap_road_km.max(initial=0.0))

    def beta(self, rows: Any, cols: Any) -> np.ndarray:
        """β between V̂ points ``rows`` and ``cols`` (indices), shape (r, c), km."""
        a = self.tc_points[location_indices("rows", rows, self.n_points)]
        b = self.tc_points[location_indices("cols", cols, self.n_points)]
        return travel_cost_loss(a, b, self.weights)

    def true_costs(self, rows: Any, cols: Any = None) -> np.ndarray:
        """Exact c̄_ik = Σ_j q_j |tc(v_i, t_j) − tc(v_k, t_j)| between locations (km), shape
        (r, c) (:func:`privopt.perturbation.travel_cost_loss`)."""
        return _location_costs(self.tc_locations, self.weights, rows, cols)


def _pair_distances(a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
    if metric == "euclidean":
        return np.linalg.norm(a - b, axis=1)
    return haversine_pairs_km(a, b)


def _cell_representatives(
    xy: np.ndarray, cell_km: float, metric: str, preferred: np.ndarray | None = None
) -> np.ndarray:
    """Indices of the points nearest the centre of each non-empty s-km cell (sorted); with
    ``preferred`` (bool per point), a cell holding preferred points keeps the one of them
    nearest its centre."""
    if metric == "euclidean":
        y, x = xy[:, 1] - xy[:, 1].min(), xy[:, 0] - xy[:, 0].min()
    else:  # local equirectangular km around the region
        cos0 = math.cos(math.radians(float(xy[:, 0].mean())))
        y = (xy[:, 0] - xy[:, 0].min()) * KM_PER_DEGREE_LAT
        x = (xy[:, 1] - xy[:, 1].min()) * KM_PER_DEGREE_LAT * cos0
    cy, cx = np.floor(y / cell_km), np.floor(x / cell_km)
    cell = cy.astype(np.int64) * (int(cx.max()) + 1) + cx.astype(np.int64)
    off = np.hypot(y - (cy + 0.5) * cell_km, x - (cx + 0.5) * cell_km)
    rank = np.zeros(xy.shape[0]) if preferred is None else (~preferred).astype(np.float64)
    order = np.lexsort((np.arange(xy.shape[0]), off, rank, cell))
    first = np.ones(order.size, dtype=bool)
    first[1:] = cell[order][1:] != cell[order][:-1]
    return np.sort(order[first])


@dataclass(frozen=True)
class SnapTable:
    """Public part of the CR grid: each location's V̂ point and correction terms (km).

    Attributes
    ----------
    snap : (K,) V̂ index of each location.
    road_km : (K,) road distance tc(v, v̂) (the valid correction).
    line_km : (K,) straight-line distance d(v, v̂) (paper-literal correction).
    """

    snap: np.ndarray
    road_km: np.ndarray
    line_km: np.ndarray

    def __post_init__(self) -> None:
        snap = check_finite_array("snap", self.snap, ndim=1, dtype=np.int64)
        road = check_finite_array("road_km", self.road_km, shape=snap.shape)
        line = check_finite_array("line_km", self.line_km, shape=snap.shape)
        if snap.size == 0 or snap.min() < 0 or road.min() < 0 or line.min() < 0:
            raise InvalidInput("a snap table holds (K >= 1,) V̂ indices and distances >= 0")
        object.__setattr__(self, "snap", snap)
        object.__setattr__(self, "road_km", road)
        object.__setattr__(self, "line_km", line)

    @classmethod
    def of(cls, table: Any) -> SnapTable:
        """From a :class:`~privopt.geo.crtable.CostReferenceTable`."""
        check_instance("table", table, CostReferenceTable)
        return cls(table.snap, table.snap_road_km, table.snap_line_km)


class TravelCosts:
    """Exact travel-cost loss c̄ between locations for given targets (no CR table).

    ``c̄_ik = Σ_j q_j |tc(v_i, t_j) − tc(v_k, t_j)|`` (Eq. 5) with tc the road distance;
    :func:`privopt.perturbation.travel_cost_loss` computes it. Used for evaluation (true costs) and
    as
    the clients' exact costs in tests (spec §17 A: targets = every location, uniform).

    Parameters
    ----------
    geography : the map.
    targets : road node ids of the targets (default: every location's node).
    weights : target prior q (default uniform).
    """

    def __init__(self, geography: Geography, targets: Any = None, weights: Any = None) -> None:
        check_geography("geography", geography)
        nodes = (
            geography.road_nodes
            if targets is None
            else location_indices("targets", targets, geography.road.n_nodes)
        )
        if nodes.size == 0:
            raise InvalidInput("targets must name at least one road node")
        self.geography = geography
        self.tc_locations = np.ascontiguousarray(geography.travel_costs(nodes).T)  # (K, n_t)
        n_t = nodes.size
        self.weights = (
            np.full(n_t, 1.0 / n_t)
            if weights is None
            else check_probability_vector("weights", weights)
        )
        if self.weights.shape != (n_t,):
            raise InvalidInput(f"weights must have shape ({n_t},), got {self.weights.shape}")
        if not np.all(np.isfinite(self.tc_locations)):
            raise InvalidInput("targets must lie on the locations' road component (tc is inf)")

    def true_costs(self, rows: Any, cols: Any = None) -> np.ndarray:
        """c̄ between locations ``rows`` and ``cols`` (default all), km, shape (r, c)."""
        return _location_costs(self.tc_locations, self.weights, rows, cols)


def _location_costs(tc: np.ndarray, weights: np.ndarray, rows: Any, cols: Any) -> np.ndarray:
    """c̄ between locations ``rows`` and ``cols`` (None: all) from their (K, n_t) travel
    costs to the targets."""
    k = tc.shape[0]
    a = tc[location_indices("rows", rows, k)]
    b = tc if cols is None else tc[location_indices("cols", cols, k)]
    return travel_cost_loss(a, b, weights)
