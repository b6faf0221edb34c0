"""Data for metric DP: the paper's Rome grid, the synthetic 3-D Gaussian set (generated) and
loaders for the Rome road nodes and text embeddings (paths as arguments; spec 000 §5.1)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from privopt._inputs import load_npy, read_csv_table
from privopt._validation import (
    check_finite_array,
    check_int,
    check_positive,
    check_size,
    finite_result,
)
from privopt.errors import InvalidInput

__all__ = [
    "ROME_BBOX",
    "rome_grid",
    "gaussian_3d",
    "load_rome_nodes",
    "load_text_embeddings",
    "km_to_latlon",
]

#: Rome bounding box (south, west, north, east) in degrees (spec §5.1).
ROME_BBOX = (41.66, 12.24, 42.10, 12.81)


@finite_result(cause="coordinates near the float64 limit")
def km_to_latlon(xy_km: np.ndarray, origin: tuple[float, float] = ROME_BBOX[:2]) -> np.ndarray:
    """(x east, y north) km offsets → (lat, lon) degrees around ``origin`` (equirectangular)."""
    xy_km = check_finite_array("xy_km", xy_km, shape=(None, 2))
    lat0, lon0 = check_finite_array("origin", origin, shape=(2,))
    lat = lat0 + np.degrees(xy_km[:, 1] / 6371.0)
    lon = lon0 + np.degrees(xy_km[:, 0] / (6371.0 * math.cos(math.radians(lat0))))
    return np.column_stack([lat, lon])


def rome_grid(rows: int = 20, cols: int = 25, cell_km: float = 1.0) -> np.ndarray:
    """Cell centres (km, x east then y north) of the paper's grid map: ``rows × cols`` cells of
    ``cell_km`` inside Rome's bounding box (20 × 25 × 1 km fits: 48.9 km × 47.3 km).

    Returns
    -------
    (rows·cols, 2) float64, row-major over (row, col); use the Euclidean metric (km) and, to
    draw on a map, :func:`km_to_latlon`.

    Examples
    --------
    >>> rome_grid().shape
    (500, 2)
    """
    r = check_int("rows", rows, minimum=1)
    c = check_int("cols", cols, minimum=1)
    check_size((r, c), "(rows, cols)")
    s = check_positive("cell_km", cell_km)
    yy, xx = np.meshgrid((np.arange(r) + 0.5) * s, (np.arange(c) + 0.5) * s, indexing="ij")
    return np.column_stack([xx.ravel(), yy.ravel()])


def gaussian_3d(n: int = 500, *, sigma: float = 4.0, seed: int | None = 0) -> np.ndarray:
    """Synthetic data set: ``n`` i.i.d. N(0, σ²I₃) vectors (paper's synthetic set; σ = 4 as in the
    authors' ``normrnd(0, 4.0, 500, 3)``). Euclidean metric."""
    k = check_int("n", n, minimum=1)
    s = check_positive("sigma", sigma)
    return np.random.default_rng(seed).normal(0.0, s, size=(k, 3))


def load_rome_nodes(
    path: str | Path,
    n: int | None = 500,
    *,
    seed: int | None = 0,
    bbox: tuple[float, float, float, float] | None = ROME_BBOX,
) -> np.ndarray:
    """Road nodes of Rome from ``nodes_rome.csv`` (columns osmid, y = lat, x = lon, ...).

    Parameters
    ----------
    path : the CSV file (e.g. ``shared/data/rome/nodes_rome.csv``).
    n : number of nodes sampled without replacement (``None`` = all).
    seed : sampling seed (instances 0..9 = seeds 0..9).
    bbox : (south, west, north, east) filter, or None.

    Returns
    -------
    (n, 2) float64 **(lat, lon)** in degrees — use ``metric="haversine"`` (km).
    """
    p = Path(path)
    frame = read_csv_table(p, "path", refuse_separators=False)
    if "y" not in frame.columns or "x" not in frame.columns:
        raise InvalidInput(
            f"{p}: expected columns 'y' (lat) and 'x' (lon), got {list(frame.columns)}"
        )
    latlon = check_finite_array(f"{p} columns (y, x)", frame[["y", "x"]].to_numpy(), ndim=2)
    if bbox is not None:
        s, w, nn, e = bbox
        keep = (
            (latlon[:, 0] >= s) & (latlon[:, 0] <= nn) & (latlon[:, 1] >= w) & (latlon[:, 1] <= e)
        )
        latlon = latlon[keep]
    # Distinct locations only (coincident nodes add d = 0 equality constraints, no information).
    latlon = np.unique(latlon, axis=0)
    if n is None:
        return latlon
    k = check_int("n", n, minimum=1, maximum=latlon.shape[0])
    idx = np.sort(np.random.default_rng(seed).choice(latlon.shape[0], k, replace=False))
    return latlon[idx]


def load_text_embeddings(
    directory: str | Path, n: int | None = 500, *, seed: int | None = 0
) -> tuple[list[str], np.ndarray]:
    """Words and their embeddings from ``words2000.txt`` + ``words2000_minilm384.npy``
    (shared/data/text). Returns (words, float64 (n, 384)); Euclidean metric."""
    d = Path(directory)
    words_file, emb_file = d / "words2000.txt", d / "words2000_minilm384.npy"
    if not words_file.is_file() or not emb_file.is_file():
        raise InvalidInput(f"{d} must contain words2000.txt and words2000_minilm384.npy")
    words = words_file.read_text(encoding="utf-8").split()
    emb = check_finite_array(str(emb_file), load_npy(emb_file, "directory"), ndim=2)
    if n is None:
        return words, emb
    k = check_int("n", n, minimum=1, maximum=emb.shape[0])
    idx = np.sort(np.random.default_rng(seed).choice(emb.shape[0], k, replace=False))
    return [words[i] for i in idx], emb[idx]
