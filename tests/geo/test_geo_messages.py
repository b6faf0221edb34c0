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
from privopt.geo.clr import MAX_KM
from privopt.geo.messages import (
    MAX_JSON_DEPTH,
    BatchInfo,
    CRBlock,
    CRRequest,
    ErrorMessage,
    Setup,
    Upload,
    UserMatrix,
    parse_json,
    parse_message,
)
from privopt.geo.params import MIN_EPS_D_CAP

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
    gamma = draw(st.one_of(st.floats(1e-3, 1e3), st.just(math.inf)))
    floor = min(epsilon * gamma, MIN_EPS_D_CAP)  # the smallest cap GeoParams accepts
    # e^{ε·r_exp/2} must be a finite float64 (GeoParams refuses the rest).
    r_exp_max = min(r_obf, 2 * MAX_EXP_ARGUMENT / epsilon)
    return GeoParams(
        epsilon=epsilon,
        gamma=gamma,
        gamma_graph=draw(st.one_of(st.none(), st.floats(1e-3, 1e3), st.just(math.inf))),
        lr_radius=draw(st.one_of(st.floats(0.0, 1e3), st.just(math.inf))),
        r_obf=r_obf,
        r_exp=draw(st.floats(0.0, r_exp_max)),
        lr_max_size=draw(st.one_of(st.none(), st.integers(1, 10**6))),
        eps_d_cap=draw(st.one_of(st.floats(floor, floor + 1e3), st.just(math.inf))),
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
    km = lambda shape: np.minimum(_floats(rng, shape, nonneg=True), MAX_KM)  # noqa: E731
    d = km((m, m))
    d = np.minimum(d, d.T)
    np.fill_diagonal(d, 0.0)
    up = Upload(f"user-{seed}-ü", d, km((m, k)), km((m, k)), ids(k))
    back = _wire(up)
    assert back.user == up.user
    for name in ("pair_distances", "column_distances", "cost", "columns"):
        _same(getattr(back, name), getattr(up, name))

    z = rng.dirichlet(np.ones(k), m)
    z[rng.random((m, k)) < 0.2] = 0.0
    z[np.arange(m), rng.integers(0, k, m)] += 0.5  # no empty row
    z /= z.sum(axis=1, keepdims=True)
    gap = float(rng.choice([0.0, 1e-9, math.inf]))
    users = int(rng.integers(1, 100))
    batch = BatchInfo(
        users,
        int(rng.integers(0, users)),
        str(rng.choice(["benders", "rowgen", "lp"])),
        "optimal" if gap < 1 else "gap_not_closed",
        gap,
        float(_floats(rng, (1,), nonneg=True)[0]),
        float(rng.choice([-math.inf, 0.0, 1.5])),
        None if rng.random() < 0.3 else int(rng.integers(0, 2**62)),
    )
    um = UserMatrix("u", z, float(rng.random()), float(rng.random()), batch)
    back = _wire(um)
    _same(back.matrix, um.matrix)
    assert (back.user, back.objective, back.max_geo_ind_violation, back.batch) == (
        um.user,
        um.objective,
        um.max_geo_ind_violation,
        um.batch,
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
    batch = BatchInfo(1, 0, "lp", "optimal", 0.0, 0.0, 0.0)
    not_stochastic = UserMatrix("u", np.full((1, 2), 0.6), 0.0, 0.0, batch).to_json()
    with pytest.raises(InvalidInput, match="row-stochastic"):
        UserMatrix.from_json(not_stochastic)


@pytest.mark.parametrize("name", ["pair_distances", "column_distances", "cost"])
def test_upload_values_above_max_km_are_refused(name: str) -> None:
    """Distances and costs lie in [0, MAX_KM]: one user's cost of 1e20 km once passed and made
    HiGHS fail on the whole batch."""
    d = np.array([[0.0, 1.0], [1.0, 0.0]])
    arrays = {"pair_distances": d, "column_distances": d.copy(), "cost": np.ones((2, 2))}
    Upload.from_json(Upload("u", **arrays).to_json())  # in range: accepted
    arrays[name] = arrays[name] * MAX_KM * 1.5
    with pytest.raises(InvalidInput, match=f"{name} holds .* above the largest accepted MAX_KM"):
        Upload.from_json(Upload("u", **arrays).to_json())


# ------------------------------------------------------------------- decoding text from the wire
def _depth_by_hand(text: str) -> int:
    """Nesting depth of JSON text by a character loop (the slow oracle of the vector scan)."""
    depth = worst = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (c == "\\", c != '"')
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            worst = max(worst, depth)
        elif c in "]}":
            depth -= 1
    return worst


_TRICKY = st.sampled_from(['a"[b', '\\"{', "[[", "x\\", "}}]]", "\\\\", "ü[", ""])
_JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        _TRICKY,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(_TRICKY | st.text(max_size=3), inner, max_size=3),
    ),
    max_leaves=30,
)


@SETTINGS
@given(_JSON_VALUES, st.sampled_from([1, 2, 3, 7, 1 << 20]))
def test_nesting_depth_scan_matches_a_character_loop(value, chunk) -> None:
    """Brackets inside strings, escaped quotes and backslash runs across chunk borders."""
    from privopt.geo import messages

    text = json.dumps(value, ensure_ascii=False)
    old = messages._SCAN_CHUNK
    messages._SCAN_CHUNK = chunk
    try:
        assert messages._nesting_depth(text.encode(), 10**9) == _depth_by_hand(text)
    finally:
        messages._SCAN_CHUNK = old
    assert parse_json(text) == value


def test_parse_json_bounds_depth_and_numbers() -> None:
    ok = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(ok) is not None
    with pytest.raises(InvalidInput, match=f"nested more than {MAX_JSON_DEPTH} levels"):
        parse_json("[" + ok + "]")
    # Brackets in strings are not nesting: a user id of 100 brackets is fine.
    assert parse_json(json.dumps({"user": "[{" * 100}))["user"] == "[{" * 100
    assert parse_json(json.dumps({"q": '\\"' + "[" * 50})) == {"q": '\\"' + "[" * 50}
    # Integers within 64 bits are kept exactly; beyond, the error names where the number is.
    assert parse_json(f"[{2**63 - 1}, {-(2**63)}]") == [2**63 - 1, -(2**63)]
    for text, match in [
        (f'{{"a": [0, {2**63}]}}', r"a\[1\] is an integer of 19 digits"),
        ('{"a": {"b": 1e309}}', r"a\.b is 1e309, beyond the float range"),
        ('{"x": NaN}', "x is NaN, which JSON does not allow"),
        ("Infinity", "the value is Infinity"),
        ("1" * 5000, "the value is an integer of 5000 digits"),
        (b'"\xff"', r"not UTF-8 \(byte 1\)"),
        ("[1,", "malformed JSON"),
    ]:
        with pytest.raises(InvalidInput, match=match):
            parse_json(text)


def test_python_dicts_get_the_same_number_checks() -> None:
    """from_json on an already parsed dict: a huge int names its field, never OverflowError."""
    d = np.array([[0.0, 1.0], [1.0, 0.0]])
    req = CRRequest(0, 1.0, np.arange(2), np.arange(2)).to_json()
    with pytest.raises(InvalidInput, match="radius_km is an integer of 401 digits"):
        CRRequest.from_json({**req, "radius_km": 10**400})
    with pytest.raises(InvalidInput, match=r"params\.epsilon is an integer"):
        parse_message({"type": "setup", "params": {"epsilon": -(10**30)}})
    with pytest.raises(InvalidInput, match=r"rows.shape\[0\] must be an int"):
        CRRequest.from_json({**req, "rows": {**req["rows"], "shape": [True]}})
    up = Upload("u", d, d, d).to_json()
    with pytest.raises(InvalidInput, match=r"cost.shape\[1\] must be an int in \[0, 50000000\]"):
        Upload.from_json({**up, "cost": {**up["cost"], "shape": [2, -2]}})


def test_a_user_matrix_separates_the_users_fields_from_its_batchs() -> None:
    """The reply says which numbers are this user's and which are the batch solve's."""
    batch = BatchInfo(3, 1, "benders", "optimal", 1e-7, 12.5, 12.4999, 9)
    message = UserMatrix("u", np.eye(2), 4.0, 0.0, batch).to_json()
    assert set(message) == {"type", "user", "matrix", "objective", "max_geo_ind_violation", "batch"}
    assert message["batch"] == {
        "id": 9,
        "users": 3,
        "position": 1,
        "method": "benders",
        "status": "optimal",
        "relative_gap": 1e-7,
        "objective": 12.5,
        "lower_bound": 12.4999,
    }
    for bad, match in [
        ({"position": 3}, r"batch.position must lie in \[0, batch.users = 3\)"),
        ({"relative_gap": -1.0}, "batch.relative_gap must be >= 0"),
        ({"users": "3"}, "field 'batch.users' has the wrong type"),
        ({"lower_bound": "inf"}, "field 'batch.lower_bound' has the wrong type"),
        ({"id": -1}, "batch.id must be null or an int >= 0"),
    ]:
        with pytest.raises(InvalidInput, match=match):
            UserMatrix.from_json({**message, "batch": {**message["batch"], **bad}})


def test_the_upload_does_not_say_which_lr_location_is_the_users() -> None:
    """Users whose LR sets are equal send the same upload whichever location is theirs: the rows
    are in location order (Dijkstra's order put the true location first, and the server would
    have read it off the first row)."""
    from privopt.geo import CostReferenceTable, grid_geography
    from privopt.geo.client import LRGeoClient
    from privopt.geo.crtable import SnapTable
    from privopt.geo.server import answer_cr_request

    geo = grid_geography(3, 3, 0.5, metric="euclidean")
    params = GeoParams(epsilon=2.0, gamma=1.0, lr_radius=10.0, r_obf=1.0, r_exp=0.5)
    table = CostReferenceTable(geo, 3, cell_km=0.5, rng=1)
    client = LRGeoClient(geo, params, SnapTable.of(table), request_rows="circle")
    uploads = []
    for location in (0, 4, 8):  # every LR set is all nine locations (Γ = 10 km)
        state = client.start(location, rng=5)
        assert np.array_equal(state.lr_set, np.arange(9))
        client.estimate(state, answer_cr_request(table, state.request, params))
        uploads.append(client.upload(state, "u").to_json())
    assert uploads[0] == uploads[1] == uploads[2]
