"""privopt.geometry against independent formulas and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.errors import InvalidInput
from privopt.geometry import (
    check_metric_matrix,
    check_points,
    euclidean,
    haversine_km,
    haversine_pairs_km,
    nearest,
    offset_latlon,
    pairwise,
    triangle_violation,
)
from scipy.spatial.distance import cdist


def _spec_haversine(p: tuple[float, float], q: tuple[float, float]) -> float:
    """Spec 001 §1's atan2 form, one pair at a time."""
    phi1, phi2 = math.radians(p[0]), math.radians(q[0])
    dphi, dlam = phi2 - phi1, math.radians(q[1] - p[1])
    a = math.sin(dphi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(dlam / 2) ** 2
    return 2 * 6371.0 * math.atan2(math.sqrt(a), math.sqrt(1 - a))


latlon = st.tuples(st.floats(-89.0, 89.0), st.floats(-179.0, 179.0))


@settings(max_examples=60, deadline=None)
@given(st.lists(latlon, min_size=1, max_size=6), st.lists(latlon, min_size=1, max_size=6))
def test_haversine_matches_the_spec_formula(a, b) -> None:
    a, b = np.array(a), np.array(b)
    ours = haversine_km(a, b)
    ref = np.array([[_spec_haversine(p, q) for q in b] for p in a])
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(haversine_km(b, a), ours.T, rtol=1e-12, atol=1e-12)
    n = min(len(a), len(b))
    np.testing.assert_allclose(haversine_pairs_km(a[:n], b[:n]), np.diag(ours[:n, :n]), atol=1e-9)


def test_euclidean_and_pairwise_match_scipy() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(30, 3)), rng.normal(size=(20, 3))
    np.testing.assert_allclose(euclidean(a, b), cdist(a, b), rtol=1e-12)
    np.testing.assert_array_equal(np.diag(euclidean(a, a)), 0.0)
    np.testing.assert_array_equal(pairwise(a, b, "euclidean"), euclidean(a, b))
    with pytest.raises(InvalidInput, match="no coordinate formula"):
        pairwise(a, b, "graph")


def test_perturbation_metrics_reexports_the_shared_functions() -> None:
    from privopt.perturbation import metrics

    assert metrics.haversine_km is haversine_km
    assert metrics.euclidean is euclidean


def test_nearest_is_brute_force_argmin() -> None:
    rng = np.random.default_rng(1)
    pts = np.column_stack([rng.uniform(41.8, 42.0, 50), rng.uniform(12.4, 12.6, 50)])
    cand = np.column_stack([rng.uniform(41.8, 42.0, 70), rng.uniform(12.4, 12.6, 70)])
    idx, dist = nearest(pts, cand, "haversine")
    table = haversine_km(pts, cand)
    np.testing.assert_array_equal(idx, np.argmin(table, axis=1))
    np.testing.assert_allclose(dist, table.min(axis=1))
    with pytest.raises(InvalidInput, match="candidate"):
        nearest(pts, cand[:0], "haversine")


@settings(max_examples=40, deadline=None)
@given(
    st.floats(-60.0, 60.0),
    st.floats(-170.0, 170.0),
    st.floats(0.0, 20.0),
    st.floats(0.0, 2 * math.pi),
)
def test_offset_moves_by_the_requested_distance(lat, lon, r, theta) -> None:
    moved = offset_latlon(np.array([[lat, lon]]), r * math.sin(theta), r * math.cos(theta))
    d = float(haversine_km(np.array([[lat, lon]]), moved)[0, 0])
    # Equirectangular approximation with 111.32 km/degree vs the 6371 km sphere: within 0.5 %.
    assert d == pytest.approx(r, rel=5e-3, abs=1e-9)


def test_metric_matrix_checks() -> None:
    d = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
    np.testing.assert_array_equal(check_metric_matrix("d", d), d)
    assert triangle_violation(d) <= 0
    assert triangle_violation(np.array([[0, 1, 5], [1, 0, 1], [5, 1, 0.0]])) == pytest.approx(3.0)
    with_inf = d.copy()
    with_inf[0, 2] = with_inf[2, 0] = np.inf
    assert np.isinf(check_metric_matrix("d", with_inf, allow_inf=True)[0, 2])
    bad = {
        "square": np.zeros((2, 3)),
        "NaN": np.array([[0, np.nan], [np.nan, 0]]),
        "inf": with_inf,
        "diagonal": np.array([[1.0, 1], [1, 0]]),
        "symmetric": np.array([[0.0, 1], [2, 0]]),
    }
    for match, value in bad.items():
        with pytest.raises(InvalidInput, match=match):
            check_metric_matrix("d", value)
    with pytest.raises(InvalidInput, match="numeric"):
        check_metric_matrix("d", [["a"]])


@pytest.mark.parametrize(
    "points, metric, match",
    [
        (np.array([[np.nan, 1.0]]), "haversine", "non-finite"),
        (np.array([[91.0, 1.0]]), "haversine", "latitudes"),
        (np.array([[1.0, 2.0, 3.0]]), "haversine", r"\(n, 2\)"),
        (np.zeros((0, 2)), "euclidean", "non-empty"),
    ],
)
def test_bad_points(points, metric: str, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        check_points("points", points, metric)
