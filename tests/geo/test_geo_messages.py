"""The JSON messages of LR-Geo (privopt.geo.messages): every type round-trips exactly through
``json.dumps``/``json.loads`` on random contents (hypothesis), and malformed ones are refused
with InvalidInput naming the field."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from privopt._validation import MAX_EXP_ARGUMENT
from privopt.errors import InvalidInput
from privopt.geo import GeoParams
from privopt.geo.messages import (
    CRBlock,
    CRRequest,
    ErrorMessage,
    Setup,
    Upload,
    UserMatrix,
    parse_message,
)

SETTINGS = settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)

#: Values a float array may hold on the wire: signed zeros, subnormals, extremes.
SPECIAL = np.array([0.0, -0.0, 5e-324, 2.2e-308, 1e-300, 1.0, 1e300, 1.7976931348623157e308])


def _floats(rng: np.random.Generator, shape: tuple[int, ...], *, nonneg: bool) -> np.ndarray:
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-300, 300, shape)
    pick = rng.random(shape) < 0.2
    x[pick] = rng.choice(SPECIAL, int(pick.sum()))
    return np.abs(x) if nonneg else x


def _wire(message) -> object:
    """As over HTTP: to JSON text and back, then decoded by its type."""
    return parse_message(json.loads(json.dumps(message.to_json())))


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()  # bit for bit (signed zeros, subnormals)


@st.composite
def geo_params(draw) -> GeoParams:
    r_obf = draw(st.floats(0.0, 50.0))
    epsilon = draw(st.floats(1e-3, 1e3))
    # e^{ε·r_exp/2} must be a finite float64 (GeoParams refuses the rest).
    r_exp_max = min(r_obf, 2 * MAX_EXP_ARGUMENT / epsilon)
    return GeoParams(
        epsilon=epsilon,
        gamma=draw(st.one_of(st.floats(1e-3, 1e3), st.just(math.inf))),
        gamma_graph=draw(st.one_of(st.none(), st.floats(1e-3, 1e3), st.just(math.inf))),
        lr_radius=draw(st.one_of(st.floats(0.0, 1e3), st.just(math.inf))),
        r_obf=r_obf,
        r_exp=draw(st.floats(0.0, r_exp_max)),
        lr_max_size=draw(st.one_of(st.none(), st.integers(1, 10**6))),
        eps_d_cap=draw(st.one_of(st.floats(1e-3, 1e3), st.just(math.inf))),
        cr_cell_km=draw(st.floats(1e-3, 10.0)),
        haversine_correction=draw(st.booleans()),
    )


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(0, 6), st.integers(1, 7), geo_params())
def test_every_message_type_round_trips_exactly(seed, n, k, params) -> None:
    rng = np.random.default_rng(seed)
    ids = lambda size: rng.integers(0, 2**62, size)  # noqa: E731 - int64 ids, any size

    req = CRRequest(
        int(rng.integers(0, 2**62)), float(_floats(rng, (1,), nonneg=True)[0]), ids(n), ids(k)
    )
    back = _wire(req)
    assert isinstance(back, CRRequest) and back.center == req.center
    assert back.radius_km == req.radius_km
    _same(back.rows, req.rows), _same(back.cols, req.cols)

    blk = CRBlock(ids(n), ids(k), _floats(rng, (n, k), nonneg=False))
    back = _wire(blk)
    _same(back.rows, blk.rows), _same(back.cols, blk.cols), _same(back.beta, blk.beta)

    m = max(n, 1)
    d = _floats(rng, (m, m), nonneg=True)
    d = np.minimum(d, d.T)
    np.fill_diagonal(d, 0.0)
    up = Upload(
        f"user-{seed}-ü",
        d,
        _floats(rng, (m, k), nonneg=True),
        _floats(rng, (m, k), nonneg=True),
        ids(k),
    )
    back = _wire(up)
    assert back.user == up.user
    for name in ("pair_distances", "column_distances", "cost", "columns"):
        _same(getattr(back, name), getattr(up, name))

    z = rng.dirichlet(np.ones(k), m)
    z[rng.random((m, k)) < 0.2] = 0.0
    z[np.arange(m), rng.integers(0, k, m)] += 0.5  # no empty row
    z /= z.sum(axis=1, keepdims=True)
    gap = float(rng.choice([0.0, 1e-9, math.inf]))
    info = {"batch": int(rng.integers(0, 100)), "note": "ε/2", "nested": {"x": [1, 2.5]}}
    um = UserMatrix(
        "u", z, "optimal" if gap < 1 else "gap_not_closed", gap, float(rng.random()), info
    )
    back = _wire(um)
    _same(back.matrix, um.matrix)
    assert (back.user, back.status, back.relative_gap, back.objective, back.info) == (
        um.user,
        um.status,
        um.relative_gap,
        um.objective,
        um.info,
    )

    err = ErrorMessage(f"bad field {seed!r}: ε ≥ 0", int(rng.choice([400, 404, 413, 500, 503])))
    assert _wire(err) == err

    setup = Setup(
        params,
        f"{seed:064x}",
        ids(k),
        _floats(rng, (k,), nonneg=True),
        _floats(rng, (k,), nonneg=True),
        int(rng.integers(1024, 2**40)),
    )
    back = _wire(setup)
    assert back.params == params and back.map_fingerprint == setup.map_fingerprint
    assert back.max_body_bytes == setup.max_body_bytes
    for name in ("snap", "snap_road_km", "snap_line_km"):
        _same(getattr(back, name), getattr(setup, name))

    assert parse_message(json.dumps({"type": "params", **params.to_json()})) == params


@pytest.mark.parametrize(
    "message, match",
    [
        ("{not json", "malformed"),
        ({"type": "upload", "user": "u"}, "encoded array"),
        ({"type": "nope"}, "known 'type'"),
        ({"type": "cr_request", "center": 1, "radius_km": -1.0}, "radius_km"),
        ({"type": "error", "error": "e", "status": 99}, "status"),
        ({"type": "error", "error": "e", "status": True}, "status"),
        ({"type": "setup", "params": {}}, "snap"),
        ({"type": "params", "epsilon": -1}, "epsilon"),
        ({"type": "params", "bogus": 1}, "unknown parameters"),
    ],
)
def test_malformed_messages(message, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        parse_message(message)


def test_upload_with_nan_or_bad_shapes_is_refused() -> None:
    d = np.array([[0.0, 1.0], [1.0, 0.0]])
    good = Upload("u", d, np.ones((2, 3)), np.ones((2, 3))).to_json()
    bad = dict(good)
    bad["cost"] = {**good["cost"], "shape": [3, 3]}
    with pytest.raises(InvalidInput, match="bytes"):
        Upload.from_json(bad)
    with pytest.raises(InvalidInput, match="NaN"):
        Upload.from_json(Upload("u", d, np.ones((2, 3)), np.full((2, 3), np.nan)).to_json())
    not_stochastic = UserMatrix("u", np.full((1, 2), 0.6), "optimal", 0.0, 0.0).to_json()
    with pytest.raises(InvalidInput, match="row-stochastic"):
        UserMatrix.from_json(not_stochastic)
