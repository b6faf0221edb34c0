"""What a user computes locally (spec 001 §3, §4, §8): LR set, request, estimates, upload.

The client holds the public map (a :class:`~privopt.geo.Geography`) and the public snap table
of the CR grid; its true location never leaves it. Per user:

1. N_m: the locations within graph distance Γ of v_m in the Geo-Ind graph (bounded Dijkstra on
   the C++ kernel, stopping after the L nearest when ``lr_max_size`` is set; v_m first). At
   ``gamma_graph = inf`` the graph is complete, D = d and a metric ball replaces the search.
2. A CR request around v_a, uniform in N_m, of radius max{2Γ, Γ + r_obf} (Prop. 4.3).
3. The estimates ĉ = β + t_i + t_k (Eq. 27, an upper bound) and c̃ = max(0, β − t_i − t_k)
   (Eq. 33, a lower bound), with t the *road* distance to the snapped V̂ point (§8 caveat; the
   straight-line distance with ``haversine_correction``, which is no bound on roads, §17 D).
4. The upload: D_{N_m²}, D_{N_m,V} and Ĉ with global column ids. **Known limitation (A7):**
   the server must know the columns' identities to share y_k, and the rows' distances to
   every column pin them down too, so the upload does not hide N_m from the server.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from privopt._validation import check_instance, check_int, check_nonnegative, check_positive
from privopt.dp import as_random_source
from privopt.errors import InvalidInput
from privopt.geo.crtable import SnapTable
from privopt.geo.geography import Geography, check_geography
from privopt.geo.messages import CRBlock, CRRequest, Upload
from privopt.geo.params import GeoParams, check_params
from privopt.geometry import EARTH_RADIUS_KM, haversine_pairs_km
from privopt.graphs import Graph, Settled

__all__ = ["GeoIndGraph", "LRGeoClient", "UserState"]


class GeoIndGraph:
    """The Geo-Ind graph of V (Def. 3.1): edges between locations within ``gamma`` (km),
    weighted by d; built once per (V, γ_graph), when first needed, and searched per user.

    A metric ball replaces the search, exactly, when the search radius Γ ≤ γ (every j with
    d_mj ≤ Γ is adjacent to m with weight d_mj and no path is shorter than d, so D_mj = d_mj;
    every other j has D_mj ≥ d_mj > Γ), and when γ = inf or bounds the diameter (G complete,
    D = d). The graph is then never built: at γ_graph = 50 km on a 10,000-cell grid it would
    hold ~40 M edges.
    """

    def __init__(self, geography: Geography, gamma: float) -> None:
        check_geography("geography", geography)
        self.geography, self.gamma = geography, check_positive("gamma", gamma, allow_inf=True)
        self._graph: Graph | None = None
        self._complete = not math.isfinite(self.gamma) or self.gamma >= _diameter_bound(geography)
        self._lock = threading.Lock()  # one client may serve many threads

    @property
    def graph(self) -> Graph | None:
        """The graph (built on first use; None when it is complete and D = d)."""
        if self._complete:
            return None
        with self._lock:
            if self._graph is None:
                i, j, d = _pairs_within(self.geography, self.gamma)
                self._graph = Graph.from_edges(self.geography.n_locations, i, j, d)
        return self._graph

    def lr_set(self, m: int, radius: float, max_size: int | None = None) -> Settled:
        """N_m = {j : D_mj ≤ radius}, nearest first (v_m first), at most ``max_size``."""
        m = check_int("m", m, minimum=0, maximum=self.geography.n_locations - 1)
        radius = check_nonnegative("radius", radius, allow_inf=True)
        if max_size is not None:
            max_size = check_int("max_size", max_size, minimum=1)
        if not (self._complete or radius <= self.gamma):
            graph = self.graph
            assert graph is not None
            return graph.distances(m, cutoff=float(radius), max_nodes=max_size)
        d = self.geography.distance_rows([m])[0]
        d[m] = 0.0
        order = np.lexsort((np.arange(d.size), d))
        order = order[d[order] <= radius]
        if max_size is not None:
            order = order[:max_size]
        return Settled(order.astype(np.int64), d[order])


def _diameter_bound(geo: Geography) -> float:
    """An upper bound on max d over V (km): the exact maximum of a metric matrix, else twice
    the eccentricity of the location nearest the coordinates' mean (triangle inequality)."""
    if geo.points is None or geo.metric == "precomputed":
        return float(geo.distance_matrix().max())
    centre = int(np.argmin(np.sum((geo.points - geo.points.mean(axis=0)) ** 2, axis=1)))
    return 2.0 * float(geo.distance_rows([centre]).max())


def _pairs_within(geo: Geography, gamma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unordered pairs (i < j) with d_ij ≤ γ, by a k-d tree on coordinates when there are
    some (exact distances recomputed), else by thresholding the metric matrix."""
    if geo.points is None or geo.metric == "precomputed":
        d = geo.distance_matrix()
        i, j = np.nonzero(np.triu(d <= gamma, k=1))
        return i, j, d[i, j]

    if geo.metric == "euclidean":
        xyz, r = geo.points, gamma
    else:  # chord length on the unit sphere is monotone in the great-circle distance
        lat, lon = np.radians(geo.points[:, 0]), np.radians(geo.points[:, 1])
        xyz = np.column_stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])
        r = 2 * math.sin(min(gamma / (2 * EARTH_RADIUS_KM), math.pi / 2)) * (1 + 1e-9)
    pairs = cKDTree(xyz).query_pairs(r, output_type="ndarray")
    i, j = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
    if geo.metric == "euclidean":
        d = np.linalg.norm(geo.points[i] - geo.points[j], axis=1)
    else:
        d = haversine_pairs_km(geo.points[i], geo.points[j])
    keep = d <= gamma
    return i[keep], j[keep], d[keep]


@dataclass
class UserState:
    """A user's private state between the request and the reply (never sent)."""

    location: int
    #: (n,) global ids in increasing order: the upload's rows follow it, so their order says
    #: nothing of which one is v_m (Dijkstra's order put v_m first)
    lr_set: np.ndarray
    lr_graph_distances: np.ndarray  # (n,) D_{m, ·}, aligned with lr_set
    request: CRRequest
    cost_upper: np.ndarray | None = None  # (n, K) ĉ
    cost_lower: np.ndarray | None = None  # (n, K) c̃


class LRGeoClient:
    """The user side of LR-Geo on a public map.

    Parameters
    ----------
    geography : the public map (V, d, roads).
    params : the public parameters.
    snaps : the public snap table of the server's CR grid (:meth:`SnapTable.of`).
    request_rows : "lr" (request β only for the LR rows: fast, shows N_m to the server) or
        "circle" (for every location in the request circle: the server learns only that v_m is
        within Γ of v_a, Prop. 4.3, at |V ∩ circle| / |N_m| times the work).
    """

    def __init__(
        self, geography: Geography, params: GeoParams, snaps: SnapTable, *, request_rows: str = "lr"
    ) -> None:
        check_geography("geography", geography)
        check_params("params", params)
        check_instance("snaps", snaps, SnapTable)
        if snaps.snap.size != geography.n_locations:
            raise InvalidInput(
                f"snaps must have one entry per location ({geography.n_locations}), "
                f"got {snaps.snap.size}"
            )
        if request_rows not in ("lr", "circle"):
            raise InvalidInput(f"request_rows must be 'lr' or 'circle', got {request_rows!r}")
        self.geography, self.params, self.snaps = geography, params, snaps
        self.request_rows = request_rows
        self.geoind = GeoIndGraph(geography, params.graph_threshold)

    def start(self, location: int, rng: Any = None) -> UserState:
        """LR set and CR request of a user at ``location`` (v_a drawn from ``rng``; None: the
        OS CSPRNG)."""
        m = check_int("location", location, minimum=0, maximum=self.geography.n_locations - 1)
        p = self.params
        lr = self.geoind.lr_set(m, p.lr_radius, p.lr_max_size)
        source = as_random_source("secure" if rng is None else rng)
        a = int(lr.nodes[source.integers(lr.nodes.size)])
        if self.request_rows == "lr":
            rows = lr.nodes
        else:
            rows = np.flatnonzero(self.geography.distance_rows([a])[0] <= p.request_radius)
        req = CRRequest(
            a, p.request_radius, np.unique(self.snaps.snap[rows]), np.unique(self.snaps.snap)
        )
        order = np.argsort(lr.nodes)
        return UserState(m, lr.nodes[order], lr.distances[order], req)

    def estimate(self, state: UserState, block: CRBlock) -> None:
        """ĉ and c̃ for N_m × V from the server's CR block (Eqs. 27, 33)."""
        check_instance("state", state, UserState)
        check_instance("block", block, CRBlock)
        s = self.snaps
        corr = s.line_km if self.params.haversine_correction else s.road_km
        ri = _positions(block.rows, s.snap[state.lr_set], "rows")
        ci = _positions(block.cols, s.snap, "cols")
        beta = block.beta[np.ix_(ri, ci)]
        t = corr[state.lr_set][:, None] + corr[None, :]
        state.cost_upper = beta + t
        state.cost_lower = np.maximum(beta - t, 0.0)

    def upload(self, state: UserState, user: str = "user") -> Upload:
        """The upload message (distances and ĉ; rows = N_m in increasing location order, so
        that two users with the same LR set upload the same rows whichever of them is their true
        location; columns = all of V)."""
        check_instance("state", state, UserState)
        check_instance("user", user, str)
        if state.cost_upper is None:
            raise InvalidInput("estimate() must run before upload()")
        rows = state.lr_set
        return Upload(
            user,
            self.geography.distance_rows(rows, rows),
            self.geography.distance_rows(rows),
            state.cost_upper,
            np.arange(self.geography.n_locations),
        )


def _positions(available: np.ndarray, wanted: np.ndarray, what: str) -> np.ndarray:
    order = np.argsort(available)
    pos = np.searchsorted(available[order], wanted)
    pos = np.minimum(pos, max(available.size - 1, 0))
    if available.size == 0 or not np.all(available[order][pos] == wanted):
        raise InvalidInput(f"the CR block lacks {what} the user needs")
    return order[pos]
