"""Locations, the privacy metric and the road network of LR-Geo (spec 001 §1, §12).

A :class:`Geography` holds the K discrete locations V (coordinates, or only a metric matrix),
the Geo-Ind metric d (Haversine km, Euclidean, or any metric matrix) and a road network — a
:class:`privopt.graphs.Graph` whose nodes include the locations — for travel costs tc.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from privopt._inputs import read_numeric_csv
from privopt._validation import (
    check_finite_array,
    check_instance,
    check_int,
    check_positive,
    check_size,
    numeric_array,
)
from privopt.dp import as_random_source
from privopt.errors import InvalidInput
from privopt.geometry import (
    KM_PER_DEGREE_LAT,
    check_metric_matrix,
    check_points,
    haversine_pairs_km,
    offset_latlon,
    pairwise,
)
from privopt.graphs import Graph

__all__ = [
    "Geography",
    "load_rome_grid",
    "grid_geography",
    "load_osm_pbf",
    "ROME_SW",
    "draw_indices",
    "check_geography",
]

#: South-west corner of the Rome bounding box (lat, lon), spec 001 §12.
ROME_SW = (41.66, 12.24)


class Geography:
    """The location set V with its Geo-Ind metric and road network.

    Parameters
    ----------
    road : Graph
        Road network (undirected), arc lengths in km; travel cost tc = shortest-path length.
    road_nodes : int array (K,)
        The road node of each location (distinct).
    points : array (K, 2), optional
        Coordinates: ``(lat, lon)`` degrees for ``metric="haversine"``, planar km for
        ``"euclidean"``; not needed for ``"precomputed"``.
    metric : {"haversine", "euclidean", "precomputed"}
    distances : array (K, K), optional
        The metric matrix d (km) for ``metric="precomputed"`` (any metric, spec §17 A).
    road_points : array (n_road, 2), optional
        Coordinates of every road node (same convention as ``points``), for the CR table's
        road subdivision and for maps.
    name : label for reports.

    Raises
    ------
    InvalidInput
        NaN coordinates, a non-metric matrix, road nodes out of range or repeated, locations
        in different components of the road network (travel costs would be infinite).
    """

    def __init__(
        self,
        *,
        road: Graph,
        road_nodes: Any,
        points: Any = None,
        metric: str = "haversine",
        distances: Any = None,
        road_points: Any = None,
        name: str = "",
    ) -> None:
        if not isinstance(road, Graph):
            raise InvalidInput(f"road must be a privopt.graphs.Graph, got {type(road).__name__}")
        if metric not in ("haversine", "euclidean", "precomputed"):
            raise InvalidInput(
                f"metric must be haversine, euclidean or precomputed, got {metric!r}"
            )
        self.road, self.metric, self.name = road, metric, name
        nodes = numeric_array("road_nodes", road_nodes)
        if nodes.ndim != 1 or nodes.size == 0 or nodes.dtype.kind not in "iu":
            raise InvalidInput("road_nodes must be a non-empty 1-D int array")
        if nodes.min() < 0 or nodes.max() >= road.n_nodes or np.unique(nodes).size != nodes.size:
            raise InvalidInput(
                f"road_nodes must be distinct nodes of the road graph [0, {road.n_nodes})"
            )
        self.road_nodes = nodes.astype(np.int64)
        k = nodes.size
        self.points: np.ndarray | None = None
        self._distances: np.ndarray | None = None
        if metric == "precomputed":
            if distances is None:
                raise InvalidInput("metric='precomputed' needs distances= (a K × K metric matrix)")
            self._distances = check_metric_matrix("distances", distances)
            if self._distances.shape[0] != k:
                raise InvalidInput(f"distances must be ({k}, {k}), got {self._distances.shape}")
            if points is not None:
                self.points = check_finite_array("points", points, shape=(k, None))
        else:
            self.points = check_points("points", points, metric)
            if self.points.shape[0] != k:
                raise InvalidInput(
                    f"points must have {k} rows (one per location), got {self.points.shape[0]}"
                )
        self.road_points = (
            None
            if road_points is None
            else check_finite_array("road_points", road_points, shape=(road.n_nodes, None))
        )
        self._check_connected()

    def _check_connected(self) -> None:
        _, labels = self.road.components()
        comps = np.unique(labels[self.road_nodes])
        if comps.size > 1:
            raise InvalidInput(
                f"the road graph is disconnected: the {self.n_locations} locations lie in "
                f"{comps.size} components, so some travel costs are infinite"
            )

    @property
    def n_locations(self) -> int:
        """K, the number of locations."""
        return int(self.road_nodes.size)

    def distance_rows(self, rows: Any, cols: Any = None) -> np.ndarray:
        """d between locations ``rows`` and ``cols`` (default all of V), km, shape (r, c)."""
        r = location_indices("rows", rows, self.n_locations)
        c = None if cols is None else location_indices("cols", cols, self.n_locations)
        if self._distances is not None:
            return self._distances[r] if c is None else self._distances[np.ix_(r, c)]
        assert self.points is not None
        other = self.points if c is None else self.points[c]
        # The map's own points, checked when it was built: not checked again per call.
        return pairwise(self.points[r], other, self.metric, check_input=False)

    def distance_matrix(self) -> np.ndarray:
        """The full K × K metric matrix d (cached)."""
        if self._distances is None:
            self._distances = self.distance_rows(np.arange(self.n_locations))
        return self._distances

    def travel_costs(self, sources: Any, *, threads: int | None = 1) -> np.ndarray:
        """Road distances tc (km) from road nodes ``sources`` to every location, (s, K)."""
        nodes = location_indices("sources", sources, self.road.n_nodes)
        return self.road.many(nodes, threads=threads)[:, self.road_nodes]

    def sample(self, k: int, *, seed: int | None = 0) -> Geography:
        """K locations drawn uniformly without replacement (sorted), on the same road network
        (A6: the seeded K-cell samples of the experiments; :func:`draw_indices`: an int seed
        is reproducible, None draws from the OS CSPRNG)."""
        kk = check_int("K", k)
        if not 1 <= kk <= self.n_locations:
            raise InvalidInput(
                f"K (the number of locations to sample) must lie in [1, |V| = "
                f"{self.n_locations}], got K = {kk}"
            )
        return self.subset(draw_indices(self.n_locations, kk, seed, name="seed"))

    def subset(self, index: Any) -> Geography:
        """The locations ``index`` (distinct), on the same road network."""
        idx = location_indices("index", index, self.n_locations)
        if np.unique(idx).size != idx.size or idx.size == 0:
            raise InvalidInput("index must name distinct locations (at least one)")
        return Geography(
            road=self.road,
            road_nodes=self.road_nodes[idx],
            points=None if self.points is None else self.points[idx],
            metric=self.metric,
            distances=None if self._distances is None else self._distances[np.ix_(idx, idx)],
            road_points=self.road_points,
            name=f"{self.name} (K={idx.size})",
        )

    def locate(self, point: Any) -> int:
        """Index of the location nearest to ``point`` (coordinates in this geography's
        convention); raises InvalidInput when it lies farther than the map's extent."""
        if self.points is None or self.metric == "precomputed":
            raise InvalidInput("locate needs a geography with coordinates")
        p = check_points("point", np.atleast_2d(numeric_array("point", point)), self.metric)
        d = pairwise(p, self.points, self.metric, check_input=False)[0]  # p checked above
        span = float(pairwise(self.points[:1], self.points, self.metric, check_input=False).max())
        best = int(np.argmin(d))
        if d[best] > max(span, 1e-9):
            raise InvalidInput(
                "point lies outside the map: it is farther from every location than the map is wide"
            )
        return best

    def fingerprint(self) -> str:
        """SHA-256 (hex) of what a client computes with: the metric and the coordinates (or the
        metric matrix). A client checks it against the server's so that both use one map."""
        h = hashlib.sha256(f"{self.metric}:{self.n_locations}:".encode())
        data = self.distance_matrix() if self.metric == "precomputed" else self.points
        h.update(np.ascontiguousarray(data, dtype=np.float64).tobytes())
        return h.hexdigest()

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(JSON-safe description, arrays) of the map, all public: the road graph as its CSR
        arrays, the road nodes of the locations, and the coordinates or the metric matrix (what
        a saved LR-Geo release needs to check and evaluate its matrices on its own)."""
        csr = self.road.csr
        meta = {"metric": self.metric, "name": self.name, "directed": self.road.directed}
        data = {
            "road_indptr": np.asarray(csr.indptr, dtype=np.int64),
            "road_indices": np.asarray(csr.indices, dtype=np.int64),
            "road_weights": np.asarray(csr.data, dtype=np.float64),
            "road_nodes": self.road_nodes,
        }
        if self.points is not None:
            data["points"] = self.points
        if self.metric == "precomputed":
            data["distances"] = self.distance_matrix()
        if self.road_points is not None:
            data["road_points"] = self.road_points
        return meta, data

    @classmethod
    def _from_state(cls, meta: dict[str, Any], data: dict[str, np.ndarray]) -> Geography:
        """The map from :meth:`_state`'s output (validated again, as a new map is)."""
        missing = [
            name
            for name in ("road_indptr", "road_indices", "road_weights", "road_nodes")
            if name not in data
        ]
        if missing or not isinstance(meta, dict):
            raise InvalidInput(f"the saved map lacks {missing or 'its description'}")
        road = Graph.from_csr_arrays(
            data["road_indptr"],
            data["road_indices"],
            data["road_weights"],
            directed=meta.get("directed", False),
        )
        name = meta.get("name", "")
        return cls(
            road=road,
            road_nodes=data["road_nodes"],
            points=data.get("points"),
            metric=meta.get("metric", ""),
            distances=data.get("distances"),
            road_points=data.get("road_points"),
            name=name if isinstance(name, str) else "",
        )

    def __repr__(self) -> str:
        return (
            f"Geography({self.name!r}, K={self.n_locations}, metric={self.metric!r}, "
            f"road={self.road!r})"
        )


def location_indices(name: str, value: Any, n: int) -> np.ndarray:
    """``value`` as a 1-D int64 array of indices in [0, n); InvalidInput names ``name``."""
    idx = check_finite_array(name, np.atleast_1d(value), ndim=1, dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = int(idx[(idx < 0) | (idx >= n)][0])
        raise InvalidInput(f"{name} must be indices in [0, {n}), got {bad}")
    return idx


def draw_indices(n: int, k: int, rng: Any, *, name: str = "rng") -> np.ndarray:
    """``k`` of ``range(n)`` uniformly without replacement, sorted.

    An int ``rng`` (a seed) is reproducible, for testing and experiments
    (``numpy.random.default_rng``); None or ``"secure"`` draws from the OS CSPRNG
    (:class:`privopt.dp.randomness.SecureSource`), as every unseeded draw in privopt; a numpy
    Generator or a :class:`privopt.dp.RandomSource` is used as given. ``name`` is the argument
    named in an error.
    """
    n, k = check_int("n", n, minimum=0), check_int("k", k, minimum=0)
    if k > n:
        raise InvalidInput(f"cannot draw {k} of {n} without replacement")
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        s = check_int(name, rng, minimum=0)
        return np.sort(np.random.default_rng(s).choice(n, k, replace=False)).astype(np.int64)
    try:
        source = as_random_source("secure" if rng is None else rng)
    except InvalidInput as err:
        raise InvalidInput(f"{name}: {err}") from None
    keys = source.random_words(n)  # a uniform random order (ties: ~n²/2⁶⁴)
    return np.sort(np.argsort(keys, kind="stable")[:k]).astype(np.int64)


def check_geography(name: str, value: Any) -> Geography:
    """``value`` if it is a :class:`Geography`, else InvalidInput naming ``name``."""
    return check_instance(name, value, Geography)


def _numeric_columns(path: Path, width: int, columns: tuple[int, ...]) -> np.ndarray:
    _, values = read_numeric_csv(path, "--rome file")
    if values.shape[1] != width:
        raise InvalidInput(f"{path} must have {width} columns, got {values.shape[1]}")
    return values[:, list(columns)]


def load_rome_grid(directory: str | Path) -> Geography:
    """The LR-Geo Rome grid: 1,331 cells (each a road node) and 4,764 road edges (km).

    Parameters
    ----------
    directory : folder with ``reget_rome_cell_node40x40.csv`` (osmid, grid_index, y = lat,
        x = lon) and ``reget_rome_cost_thrhold_2.csv`` (u_index, u, v_index, v, length km), e.g.
        ``shared/data/rome``.

    Returns
    -------
    Geography with Haversine metric; location i is road node i.
    """
    d = _path("directory", directory)
    nodes_file, edges_file = (
        d / "reget_rome_cell_node40x40.csv",
        d / "reget_rome_cost_thrhold_2.csv",
    )
    for f in (nodes_file, edges_file):
        if not os.path.lexists(f):  # anything else there (a link loop, a pipe) is named below
            raise InvalidInput(f"{f} is missing (expected the LR-Geo Rome grid files in {d})")
    # Read through the shared checked reader: a garbled, ragged or NaN file is one clear error.
    cells = _numeric_columns(nodes_file, 4, (1, 2, 3))
    grid_index = cells[:, 0].astype(np.int64)
    latlon = cells[:, 1:3]
    edges = _numeric_columns(edges_file, 5, (0, 2, 4))
    pos = {int(g): i for i, g in enumerate(grid_index)}
    try:
        u = np.array([pos[int(g)] for g in edges[:, 0]], dtype=np.int64)
        v = np.array([pos[int(g)] for g in edges[:, 1]], dtype=np.int64)
    except KeyError as exc:
        raise InvalidInput(
            f"edge endpoint grid_index {exc.args[0]} is not a cell of {nodes_file}"
        ) from None
    road = Graph.from_edges(latlon.shape[0], u, v, edges[:, 2])
    return Geography(
        road=road,
        road_nodes=np.arange(latlon.shape[0]),
        points=latlon,
        metric="haversine",
        road_points=latlon,
        name="Rome 40x40 grid",
    )


def grid_geography(
    rows: int,
    cols: int,
    cell_km: float = 1.0,
    *,
    metric: str = "euclidean",
    origin: tuple[float, float] = ROME_SW,
    road_factor: float = 1.0,
) -> Geography:
    """A generated ``rows × cols`` grid of locations with a 4-neighbour road grid.

    Location ``cols·r + c`` sits at column c, row r. With ``metric="euclidean"`` its
    coordinates are ``(c, r)·cell_km`` (km) and each road edge is ``cell_km·road_factor`` long,
    so tc is the Manhattan distance times ``road_factor`` (spec 001 §17 A at factor 1). With
    ``"haversine"`` the grid is laid out in km east/north of ``origin`` (lat, lon) and each road
    edge is the Haversine length of its ends times ``road_factor``.

    Examples
    --------
    >>> g = grid_geography(5, 5)
    >>> g.n_locations, float(g.distance_rows([6])[0, 7]), float(g.travel_costs([6])[0, 24])
    (25, 1.0, 6.0)
    """
    r = check_int("rows", rows, minimum=1)
    c = check_int("cols", cols, minimum=1)
    check_size((r, c), "(rows, cols)")
    s = check_positive("cell_km", cell_km)
    f = check_positive("road_factor", road_factor)
    if f < 1.0:
        raise InvalidInput(
            f"road_factor must be >= 1 (roads are no shorter than d), got {road_factor}"
        )
    origin_ = check_points("origin", np.atleast_2d(origin), "haversine")[0]
    yy, xx = np.meshgrid(np.arange(r) * s, np.arange(c) * s, indexing="ij")
    planar = np.column_stack([xx.ravel(), yy.ravel()])
    idx = np.arange(r * c).reshape(r, c)
    u = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    v = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    if metric == "euclidean":
        points = planar
    elif metric == "haversine":
        base = np.tile(origin_, (r * c, 1))
        points = offset_latlon(base, planar[:, 0], planar[:, 1])
    else:
        raise InvalidInput(f"metric must be 'euclidean' or 'haversine', got {metric!r}")

    base_len = (
        np.full(u.size, s) if metric == "euclidean" else haversine_pairs_km(points[u], points[v])
    )
    road = Graph.from_edges(r * c, u, v, base_len * f)
    return Geography(
        road=road,
        road_nodes=np.arange(r * c),
        points=points,
        metric=metric,
        road_points=points,
        name=f"{r}x{c} grid ({s:g} km)",
    )


def load_osm_pbf(
    path: str | Path, *, cell_km: float = 0.5, network_type: str = "driving"
) -> Geography:
    """Locations from a local OpenStreetMap PBF file, read by pyrosm (extra ``privopt[osm]``).

    The largest connected road component is kept; the locations are the road nodes nearest
    to the centres of a ``cell_km`` grid over it (one per non-empty cell, as the Rome grid).

    Raises
    ------
    InvalidInput
        pyrosm is not installed, or the file has no road network.
    """
    try:
        from pyrosm import OSM
    except ImportError:  # pragma: no cover - depends on the optional extra
        raise InvalidInput("load_osm_pbf needs pyrosm: pip install 'privopt[osm]'") from None
    p = _path("path", path)
    cell = check_positive("cell_km", cell_km)
    if not p.is_file():
        raise InvalidInput(f"{p} is not a file")
    nodes, edges = OSM(str(p)).get_network(nodes=True, network_type=network_type)
    if edges is None or len(edges) == 0:
        raise InvalidInput(f"{p} has no {network_type} road network")
    ids = np.asarray(nodes["id"], dtype=np.int64)
    pos = {int(n): i for i, n in enumerate(ids)}
    u = np.array([pos[int(a)] for a in edges["u"]], dtype=np.int64)
    v = np.array([pos[int(b)] for b in edges["v"]], dtype=np.int64)
    latlon = np.column_stack([np.asarray(nodes["lat"], float), np.asarray(nodes["lon"], float)])
    road = Graph.from_edges(ids.size, u, v, np.asarray(edges["length"], float) / 1000.0)
    _, labels = road.components()
    main = np.bincount(labels).argmax()
    keep = np.flatnonzero(labels == main)
    return _cells_on_roads(road, latlon, keep, cell, name=p.stem)


def _path(name: str, value: Any) -> Path:
    if not isinstance(value, (str, Path)) and not hasattr(value, "__fspath__"):
        raise InvalidInput(
            f"{name} must be a path (str or os.PathLike), got {type(value).__name__}"
        )
    return Path(value)


def _cells_on_roads(
    road: Graph, latlon: np.ndarray, candidates: np.ndarray, cell_km: float, *, name: str
) -> Geography:
    """One road node per non-empty ``cell_km`` grid cell: the node nearest the cell centre."""
    lat0, lon0 = latlon[candidates].min(axis=0)
    cos0 = np.cos(np.radians(latlon[candidates, 0].mean()))
    y = (latlon[candidates, 0] - lat0) * KM_PER_DEGREE_LAT
    x = (latlon[candidates, 1] - lon0) * KM_PER_DEGREE_LAT * cos0
    cell = np.floor(y / cell_km).astype(np.int64) * 1_000_003 + np.floor(x / cell_km).astype(
        np.int64
    )
    off = np.hypot(
        y - (np.floor(y / cell_km) + 0.5) * cell_km, x - (np.floor(x / cell_km) + 0.5) * cell_km
    )
    order = np.lexsort((off, cell))
    first = np.ones(order.size, dtype=bool)
    first[1:] = cell[order][1:] != cell[order][:-1]
    chosen = np.sort(candidates[order[first]])
    return Geography(
        road=road,
        road_nodes=chosen,
        points=latlon[chosen],
        metric="haversine",
        road_points=latlon,
        name=name,
    )
