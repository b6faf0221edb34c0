"""The JSON messages between LR-Geo clients and the server (spec 001 §4, Fig. 4).

Client and server exchange only these, as JSON objects with a ``"type"`` field:

========================  ======================  =========================================
message                    direction               content
========================  ======================  =========================================
``"params"``               server → client         :class:`~privopt.geo.GeoParams`
``"setup"``                server → client         parameters, map fingerprint, snap table
``"cr_request"``           client → server         request circle and the V̂ points wanted
``"cr_block"``             server → client         β for the requested pairs
``"upload"``               client → server         D_{N_m²}, D_{N_m,V}, Ĉ with column ids
``"user_matrix"``          server → client         Z_{N_m}, its own cost and Geo-Ind check,
                                                   and the certificate of its batch's solve
``"error"``                server → client         a refused request
========================  ======================  =========================================

Arrays travel as ``{"dtype": "float64", "shape": [...], "data": "<base64 little-endian>"}``:
exact, compact, and still plain JSON. Text from the wire is decoded by :func:`parse_json` only
(strict UTF-8 JSON, nesting at most :data:`MAX_JSON_DEPTH`, every number finite and integers
within 64 bits), and every ``from_json`` validates types, shapes and values; both raise
:class:`~privopt.errors.InvalidInput` naming the field, so an HTTP server can answer 4xx.

Examples
--------
>>> import numpy as np
>>> up = Upload("u1", np.zeros((1, 1)), np.array([[0.0, 1.0]]), np.array([[0.0, 2.0]]))
>>> back = Upload.from_json(up.to_json())
>>> back.user, back.cost.tolist()
('u1', [[0.0, 2.0]])
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privopt.errors import InvalidInput
from privopt.geo.clr import UserBlock
from privopt.geo.crtable import SnapTable
from privopt.geo.params import GeoParams

__all__ = [
    "parse_json",
    "encode_array",
    "decode_array",
    "CRRequest",
    "CRBlock",
    "Upload",
    "BatchInfo",
    "UserMatrix",
    "ErrorMessage",
    "Setup",
    "parse_message",
    "MAX_ARRAY_ENTRIES",
    "MAX_JSON_DEPTH",
]

#: Largest array a message may carry (entries); larger ones are refused before decoding.
MAX_ARRAY_ENTRIES = 50_000_000
#: Deepest nesting of JSON arrays and objects accepted (the messages need 4); deeper text is
#: refused before it is parsed, so parsing cannot exhaust the interpreter's recursion limit.
MAX_JSON_DEPTH = 32
_DTYPES = {"float64": "<f8", "int64": "<i8"}
#: JSON integers hold ids, shapes and counts: they must fit in a signed 64-bit integer.
_INT_BOUND = 2**63
#: Bytes of wire text scanned at once for its nesting depth (bounded temporary arrays).
_SCAN_CHUNK = 1 << 20


class _OutOfRange:
    """A JSON number that has no faithful Python value here (an integer beyond 64 bits, a
    float beyond ±1.8e308, a NaN/Infinity literal); it only marks where to point the error."""

    def __init__(self, token: str) -> None:
        self.token = token

    def describe(self) -> str:
        if self.token in ("NaN", "Infinity", "-Infinity"):
            return f"{self.token}, which JSON does not allow"
        if any(c in self.token for c in ".eE"):
            shown = self.token if len(self.token) <= 40 else self.token[:39] + "…"
            return f"{shown}, beyond the float range (±1.8e308)"
        return _too_long(len(self.token.lstrip("-")))


def _too_long(digits: int) -> str:
    return f"an integer of {digits} digits, beyond 64 bits (±9.2e18)"


def parse_json(text: str | bytes) -> Any:
    """Decode JSON text from the wire: the one way messages are read.

    Parameters
    ----------
    text : UTF-8 bytes (an HTTP body) or str.

    Returns
    -------
    The decoded value (dicts, lists, str, int, float, bool, None).

    Raises
    ------
    InvalidInput
        Bytes that are not UTF-8, malformed JSON, nesting deeper than :data:`MAX_JSON_DEPTH`
        (checked before parsing), a NaN or Infinity literal, a float beyond ±1.8e308 or an
        integer beyond 64 bits (the message names where it is, e.g. ``rows.shape[0]``).

    Examples
    --------
    >>> parse_json(b'{"shape": [2, 3]}')
    {'shape': [2, 3]}
    >>> parse_json('{"shape": [100000000000000000000, 0]}')
    Traceback (most recent call last):
    ...
    privopt.errors.InvalidInput: shape[0] is an integer of 21 digits, beyond 64 bits (±9.2e18)
    """
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"the JSON text is not UTF-8 (byte {exc.start})") from None
    elif isinstance(text, str):
        raw = text.encode("utf-8", "surrogatepass")
    else:
        raise InvalidInput(f"JSON text must be str or bytes, got {type(text).__name__}")
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH:  # only then can it be too deep
        depth = _nesting_depth(raw, MAX_JSON_DEPTH)
        if depth > MAX_JSON_DEPTH:
            raise InvalidInput(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep")
    flagged: list[bool] = []

    def out_of_range(token: str) -> _OutOfRange:
        flagged.append(True)
        return _OutOfRange(token)

    def real(token: str) -> Any:
        value = float(token)
        return value if math.isfinite(value) else out_of_range(token)

    def integer(token: str) -> Any:
        # Beyond 19 digits an integer cannot fit in 64 bits: never converted (Python refuses
        # more than 4300 digits with a ValueError, and converting long ones is quadratic).
        if len(token.lstrip("-")) > 19:
            return out_of_range(token)
        value = int(token)
        return value if -_INT_BOUND <= value < _INT_BOUND else out_of_range(token)

    try:
        data = json.loads(text, parse_int=integer, parse_float=real, parse_constant=out_of_range)
    except ValueError as exc:
        raise InvalidInput(f"malformed JSON: {exc}") from None
    if flagged:
        _check_numbers(data)
    return data


def _nesting_depth(raw: bytes, limit: int) -> int:
    """Deepest nesting of ``[``/``{`` outside JSON strings in ``raw`` (stops above ``limit``).

    Exact on valid JSON; on malformed text it is exact up to the first error, which is where
    the parser stops too. Vectorised over chunks of :data:`_SCAN_CHUNK` bytes: a quote is a
    string delimiter unless an odd run of backslashes precedes it.
    """
    depth, worst, in_string, backslashes = 0, 0, False, 0
    for start in range(0, len(raw), _SCAN_CHUNK):
        a = np.frombuffer(raw, np.uint8, min(_SCAN_CHUNK, len(raw) - start), start)
        is_backslash = a == ord("\\")
        last_other = np.maximum.accumulate(np.where(is_backslash, -1, np.arange(a.size)))
        quotes = np.flatnonzero(a == ord('"'))
        before = np.maximum(quotes - 1, 0)
        run = np.where(quotes > 0, quotes - 1 - last_other[before], 0)
        run[(quotes == 0) | (last_other[before] < 0)] += backslashes  # run began earlier
        delimiters = quotes[run % 2 == 0]
        toggles = np.zeros(a.size, np.int8)
        toggles[delimiters] = 1
        inside = (np.cumsum(toggles, dtype=np.int64) + in_string) % 2 == 1
        step = np.isin(a, (ord("["), ord("{"))).astype(np.int8)
        step -= np.isin(a, (ord("]"), ord("}")))
        step[inside] = 0
        levels = np.cumsum(step, dtype=np.int64) + depth
        worst = max(worst, int(levels.max(initial=depth)))
        if worst > limit:
            break
        depth = int(levels[-1])
        in_string = bool((in_string + delimiters.size) % 2)
        tail = int(last_other[-1])
        backslashes = backslashes + a.size if tail < 0 else a.size - 1 - tail
    return worst


def _check_numbers(data: Any) -> Any:
    """``data`` unchanged if every number in it is faithful (finite, integers within 64 bits),
    else InvalidInput naming the first bad one's place (``rows.shape[0]``)."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:  # depth first, in document order
        path, value = stack.pop()
        if isinstance(value, dict):
            items = [(f"{path}.{k}" if path else str(k), v) for k, v in value.items()]
            stack.extend(reversed(items))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{path}[{n}]", v) for n, v in enumerate(value)]))
        elif isinstance(value, _OutOfRange):
            raise InvalidInput(f"{path or 'the value'} is {value.describe()}")
        elif isinstance(value, int) and not -_INT_BOUND <= value < _INT_BOUND:
            # str() refuses more than 4300 digits; beyond, log10 is exact enough to say how many.
            size = abs(value)
            digits = len(str(size)) if size.bit_length() < 14_000 else int(math.log10(size)) + 1
            raise InvalidInput(f"{path or 'the value'} is {_too_long(digits)}")
    return data


def _show(value: Any, width: int = 40) -> str:
    """``repr(value)`` cut to ``width`` characters (a client's value echoed in an error)."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def encode_array(a: Any, dtype: str = "float64") -> dict[str, Any]:
    """An array as a JSON object (exact: the bytes of the little-endian values, base64)."""
    if dtype not in _DTYPES:
        raise InvalidInput(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
    arr = np.ascontiguousarray(a, dtype=_DTYPES[dtype])
    return {
        "dtype": dtype,
        "shape": list(arr.shape),
        "data": base64.b64encode(arr.tobytes()).decode("ascii"),
    }


def decode_array(
    name: str, obj: Any, *, dtype: str = "float64", ndim: int | None = None
) -> np.ndarray:
    """Inverse of :func:`encode_array`, validating dtype, shape, size and finiteness.

    Raises
    ------
    InvalidInput
        Naming ``name``: not an encoded array, another dtype, a shape that is not a list of
        ``ndim`` ints in [0, :data:`MAX_ARRAY_ENTRIES`] (booleans are not ints here), more
        entries than that, data that is not base64 of exactly the shape's bytes, NaN or inf.
    """
    if not isinstance(obj, dict) or set(obj) != {"dtype", "shape", "data"}:
        raise InvalidInput(f"{name} must be an encoded array {{dtype, shape, data}}")
    if obj["dtype"] != dtype:
        raise InvalidInput(f"{name} must have dtype {dtype}, got {_show(obj['dtype'])}")
    shape = obj["shape"]
    if not isinstance(shape, list):
        raise InvalidInput(f"{name}.shape must be a list of ints, got {_show(shape)}")
    if ndim is not None and len(shape) != ndim:
        raise InvalidInput(f"{name} must be {ndim}-dimensional, got shape {_show(shape)}")
    for axis, length in enumerate(shape):
        if type(length) is not int or not 0 <= length <= MAX_ARRAY_ENTRIES:
            raise InvalidInput(
                f"{name}.shape[{axis}] must be an int in [0, {MAX_ARRAY_ENTRIES}], "
                f"got {_show(length)}"
            )
    size = math.prod(shape)
    if size > MAX_ARRAY_ENTRIES:
        raise InvalidInput(f"{name} has {size} entries, more than {MAX_ARRAY_ENTRIES}")
    data = obj["data"]
    if not isinstance(data, str):
        raise InvalidInput(f"{name}.data must be a base64 string")
    if len(data) != 4 * math.ceil(8 * size / 3):  # checked before decoding it
        raise InvalidInput(
            f"{name}.data holds {len(data)} base64 characters, shape {shape} needs "
            f"{4 * math.ceil(8 * size / 3)} ({8 * size} bytes)"
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        raise InvalidInput(f"{name}.data is not valid base64") from None
    if len(raw) != 8 * size:
        raise InvalidInput(f"{name}.data holds {len(raw)} bytes, shape {shape} needs {8 * size}")
    arr = np.frombuffer(raw, dtype=_DTYPES[dtype]).reshape(shape).astype(_DTYPES[dtype][1:])
    if dtype == "float64" and not np.all(np.isfinite(arr)):
        raise InvalidInput(f"{name} contains NaN or inf")
    return arr


def _as_dict(data: Any, kind: str) -> dict[str, Any]:
    """A message's fields: text is decoded by :func:`parse_json`; a dict (from Python) gets
    the same number checks."""
    data = parse_json(data) if isinstance(data, (str, bytes)) else _check_numbers(data)
    if not isinstance(data, dict):
        raise InvalidInput(f"a {kind} message must be a JSON object, got {type(data).__name__}")
    if data.get("type") != kind:
        raise InvalidInput(f"expected a message of type {kind!r}, got {_show(data.get('type'))}")
    return data


def _field(data: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in data:
        raise InvalidInput(f"field {name!r} is missing")
    value = data[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise InvalidInput(f"field {name!r} has the wrong type ({type(value).__name__})")
    return value


def _number(data: dict[str, Any], name: str, *, allow: tuple[str, ...] = ()) -> float:
    """Field ``name`` as a finite float (ints accepted), or ±inf where ``allow`` names
    ``"inf"``/``"-inf"`` (how the messages write them)."""
    value = data.get(name)
    if isinstance(value, str) and value in allow:
        return float(value)
    number = float(_field(data, name, (int, float)))  # |int| < 2^63 (_check_numbers)
    if not math.isfinite(number):
        raise InvalidInput(f"field {name!r} must be finite, got {number!r}")
    return number


@dataclass(frozen=True)
class CRRequest:
    """A user's request for cost-reference rows (Prop. 4.3).

    Attributes
    ----------
    center : location id of v_a, drawn uniformly from N_m.
    radius_km : max{2Γ, Γ + r_obf}.
    rows : V̂ indices of the rows wanted (the snaps of the LR set, or of every location in the
        circle when the user hides N_m in it).
    cols : V̂ indices of the columns (the snaps of every location of V).
    """

    center: int
    radius_km: float
    rows: np.ndarray
    cols: np.ndarray

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON-ready dict (arrays encoded)."""
        return {
            "type": "cr_request",
            "center": int(self.center),
            "radius_km": float(self.radius_km),
            "rows": encode_array(self.rows, "int64"),
            "cols": encode_array(self.cols, "int64"),
        }

    @classmethod
    def from_json(cls, data: Any) -> CRRequest:
        """Decode and validate a message; InvalidInput names the bad field."""
        d = _as_dict(data, "cr_request")
        radius = _number(d, "radius_km")
        if radius < 0:
            raise InvalidInput(f"radius_km must be finite and >= 0, got {radius!r}")
        return cls(
            int(_field(d, "center", int)),
            radius,
            decode_array("rows", d.get("rows"), dtype="int64", ndim=1),
            decode_array("cols", d.get("cols"), dtype="int64", ndim=1),
        )


@dataclass(frozen=True)
class CRBlock:
    """β between the requested V̂ rows and columns (km), shape (len(rows), len(cols))."""

    rows: np.ndarray
    cols: np.ndarray
    beta: np.ndarray

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON-ready dict (arrays encoded)."""
        return {
            "type": "cr_block",
            "rows": encode_array(self.rows, "int64"),
            "cols": encode_array(self.cols, "int64"),
            "beta": encode_array(self.beta),
        }

    @classmethod
    def from_json(cls, data: Any) -> CRBlock:
        """Decode and validate a message; InvalidInput names the bad field."""
        d = _as_dict(data, "cr_block")
        rows = decode_array("rows", d.get("rows"), dtype="int64", ndim=1)
        cols = decode_array("cols", d.get("cols"), dtype="int64", ndim=1)
        beta = decode_array("beta", d.get("beta"), ndim=2)
        if beta.shape != (rows.size, cols.size):
            raise InvalidInput(f"beta must have shape ({rows.size}, {cols.size}), got {beta.shape}")
        return cls(rows, cols, beta)


@dataclass(frozen=True)
class Upload:
    """What user m uploads (spec §4 step 5, A7): distances and estimated costs, no identities
    of its rows; its columns are global location ids (the server needs them to share y_k).

    Attributes
    ----------
    user : an opaque id chosen by the client (echoed in the reply).
    pair_distances : (n, n) D_{N_m²}, km.
    column_distances : (n, K) D_{N_m,V}, km.
    cost : (n, K) Ĉ, km.
    columns : (K,) global location id of each column (default 0..K-1).
    """

    user: str
    pair_distances: np.ndarray
    column_distances: np.ndarray
    cost: np.ndarray
    columns: np.ndarray | None = None

    def block(self) -> UserBlock:
        """The validated server-side :class:`~privopt.geo.UserBlock`, built (and its arrays
        checked) once per message: :meth:`from_json` builds it as it decodes, and the server
        solves from it without checking the arrays again."""
        block = self.__dict__.get("_block")
        if block is None:
            block = UserBlock(self.pair_distances, self.column_distances, self.cost)
            object.__setattr__(self, "_block", block)  # a cache, not a field: eq and repr ignore it
        return block

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON-ready dict (arrays encoded)."""
        k = np.asarray(self.column_distances).shape[1]
        cols = np.arange(k) if self.columns is None else self.columns
        return {
            "type": "upload",
            "user": self.user,
            "pair_distances": encode_array(self.pair_distances),
            "column_distances": encode_array(self.column_distances),
            "cost": encode_array(self.cost),
            "columns": encode_array(cols, "int64"),
        }

    @classmethod
    def from_json(cls, data: Any) -> Upload:
        """Decode and validate a message; InvalidInput names the bad field."""
        d = _as_dict(data, "upload")
        user = _field(d, "user", str)
        pair = decode_array("pair_distances", d.get("pair_distances"), ndim=2)
        dist = decode_array("column_distances", d.get("column_distances"), ndim=2)
        cost = decode_array("cost", d.get("cost"), ndim=2)
        columns = decode_array("columns", d.get("columns"), dtype="int64", ndim=1)
        # Shapes, symmetry, signs and range checked now, once (decode_array checked
        # finiteness): the server solves from this block.
        block = UserBlock.from_finite(pair, dist, cost)
        if columns.size != dist.shape[1]:
            raise InvalidInput("columns must name every column of column_distances")
        up = cls(user, pair, dist, cost, columns)
        object.__setattr__(up, "_block", block)
        return up


@dataclass(frozen=True)
class BatchInfo:
    """The CLR-Geo solve that produced a user's matrix: the same for every user solved with it.

    The users of one batch share y, so Thm 4.4 (ε/2-Geo-Ind between exponential entries) holds
    across their matrices; its certificate is of the batch's objective, not of one user's.

    Attributes
    ----------
    users : number of users solved together.
    position : this user's place among them (0-based; the order of the solve).
    method : the solver that produced the matrices (``"benders"``, ``"rowgen"`` or ``"lp"``).
    status : the batch's certificate status (``"optimal"``, ``"time_limit"``, ...).
    relative_gap : proven relative gap of the batch objective (inf: none proven).
    objective : the batch objective Σ_m (1/|N_m|) Σ ĉ z over its users, km.
    lower_bound : proven lower bound of that objective, km (-inf: none proven).
    id : the server's number of the batch (None outside a server).
    """

    users: int
    position: int
    method: str
    status: str
    relative_gap: float
    objective: float
    lower_bound: float
    id: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The batch object of a ``user_matrix`` message."""
        return {
            "id": self.id,
            "users": int(self.users),
            "position": int(self.position),
            "method": self.method,
            "status": self.status,
            "relative_gap": _finite_or_str(self.relative_gap),
            "objective": float(self.objective),
            "lower_bound": _finite_or_str(self.lower_bound),
        }

    @classmethod
    def from_json(cls, data: Any) -> BatchInfo:
        """Decode and validate the batch object; InvalidInput names the bad field."""
        if not isinstance(data, dict):
            raise InvalidInput(f"field 'batch' must be a JSON object, got {type(data).__name__}")
        d = {f"batch.{k}": v for k, v in _check_numbers(data).items()}
        users = _field(d, "batch.users", int)
        position = _field(d, "batch.position", int)
        if users < 1 or not 0 <= position < users:
            raise InvalidInput(f"batch.position must lie in [0, batch.users = {users})")
        gap = _number(d, "batch.relative_gap", allow=("inf",))
        if gap < 0:
            raise InvalidInput(f"batch.relative_gap must be >= 0, got {gap!r}")
        ident = d.get("batch.id")
        if ident is not None and (_field(d, "batch.id", int) < 0):
            raise InvalidInput(f"batch.id must be null or an int >= 0, got {ident!r}")
        return cls(
            users,
            position,
            _field(d, "batch.method", str),
            _field(d, "batch.status", str),
            gap,
            _number(d, "batch.objective"),
            _number(d, "batch.lower_bound", allow=("-inf",)),
            ident,
        )


@dataclass(frozen=True)
class UserMatrix:
    """The server's reply to one user: what is the user's own, and how its batch was solved.

    Attributes
    ----------
    user : the id the client chose (echoed).
    matrix : (n, K) Z_{N_m}, rows in the order of the upload, row-stochastic.
    objective : this user's expected estimated cost (1/n) Σ_i Σ_k ĉ_ik z_ik, km.
    max_geo_ind_violation : this matrix's largest relative (ε, γ)-Geo-Ind violation between
        its own rows (on the upload's distances; 0 when it holds, see
        :class:`~privopt.perturbation.Verification`).
    batch : the solve shared with the other users of the batch (:class:`BatchInfo`).
    """

    user: str
    matrix: np.ndarray
    objective: float
    max_geo_ind_violation: float
    batch: BatchInfo

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON-ready dict (arrays encoded)."""
        return {
            "type": "user_matrix",
            "user": self.user,
            "matrix": encode_array(self.matrix),
            "objective": float(self.objective),
            "max_geo_ind_violation": float(self.max_geo_ind_violation),
            "batch": self.batch.to_json(),
        }

    @classmethod
    def from_json(cls, data: Any) -> UserMatrix:
        """Decode and validate a message; InvalidInput names the bad field."""
        d = _as_dict(data, "user_matrix")
        z = decode_array("matrix", d.get("matrix"), ndim=2)
        if np.any(z < 0) or not np.allclose(z.sum(axis=1), 1.0, atol=1e-9):
            raise InvalidInput("matrix must be row-stochastic")
        violation = _number(d, "max_geo_ind_violation")
        if violation < 0:
            raise InvalidInput(f"max_geo_ind_violation must be >= 0, got {violation!r}")
        return cls(
            _field(d, "user", str),
            z,
            _number(d, "objective"),
            violation,
            BatchInfo.from_json(_field(d, "batch", dict)),
        )


@dataclass(frozen=True)
class ErrorMessage:
    """A refused request: what was wrong (the InvalidInput text)."""

    error: str
    status: int = 400

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON-ready dict."""
        return {"type": "error", "error": self.error, "status": self.status}

    @classmethod
    def from_json(cls, data: Any) -> ErrorMessage:
        """Decode and validate a message; InvalidInput names the bad field."""
        d = _as_dict(data, "error")
        status = d.get("status", 400)
        if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
            raise InvalidInput(f"field 'status' must be an HTTP status code, got {status!r}")
        return cls(_field(d, "error", str), status)


@dataclass(frozen=True)
class Setup:
    """What the server publishes to every client before a request (all of it public).

    Attributes
    ----------
    params : the public :class:`~privopt.geo.GeoParams`.
    map_fingerprint : :meth:`~privopt.geo.Geography.fingerprint` of the server's map; a client
        refuses to work on another map.
    snap : (K,) V̂ index of each location; ``snap_road_km``, ``snap_line_km`` : (K,) the
        correction terms (see :class:`~privopt.geo.SnapTable`).
    max_body_bytes : the largest request body the server reads.
    """

    params: Any
    map_fingerprint: str
    snap: np.ndarray
    snap_road_km: np.ndarray
    snap_line_km: np.ndarray
    max_body_bytes: int

    @property
    def n_locations(self) -> int:
        """Number of locations in the snap table."""
        return int(self.snap.size)

    def snaps(self) -> Any:
        """The :class:`~privopt.geo.SnapTable` a client estimates costs with."""
        return SnapTable(self.snap, self.snap_road_km, self.snap_line_km)

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON-ready dict (arrays encoded)."""
        return {
            "type": "setup",
            "params": self.params.to_json(),
            "map_fingerprint": self.map_fingerprint,
            "snap": encode_array(self.snap, "int64"),
            "snap_road_km": encode_array(self.snap_road_km),
            "snap_line_km": encode_array(self.snap_line_km),
            "max_body_bytes": int(self.max_body_bytes),
        }

    @classmethod
    def from_json(cls, data: Any) -> Setup:
        """Decode and validate a message; InvalidInput names the bad field."""
        d = _as_dict(data, "setup")
        snap = decode_array("snap", d.get("snap"), dtype="int64", ndim=1)
        road = decode_array("snap_road_km", d.get("snap_road_km"), ndim=1)
        line = decode_array("snap_line_km", d.get("snap_line_km"), ndim=1)
        if not snap.size or road.shape != snap.shape or line.shape != snap.shape:
            raise InvalidInput("snap, snap_road_km and snap_line_km must be (K,) with K >= 1")
        if snap.min() < 0 or road.min() < 0 or line.min() < 0:
            raise InvalidInput("the snap table must hold indices and distances >= 0")
        return cls(
            GeoParams.from_json(_field(d, "params", dict)),
            _field(d, "map_fingerprint", str),
            snap,
            road,
            line,
            _field(d, "max_body_bytes", int),
        )


def _finite_or_str(x: float) -> float | str:
    """A float for JSON: ±inf as the strings "inf"/"-inf" (JSON has no infinity)."""
    return float(x) if math.isfinite(x) else ("inf" if x > 0 else "-inf")


_TYPES: dict[str, Any] = {
    "cr_request": CRRequest,
    "cr_block": CRBlock,
    "upload": Upload,
    "user_matrix": UserMatrix,
    "error": ErrorMessage,
    "setup": Setup,
}


def parse_message(data: Any) -> Any:
    """Any message from its JSON (a str, bytes or an already parsed dict) by its ``type``."""
    data = parse_json(data) if isinstance(data, (str, bytes)) else _check_numbers(data)
    if not isinstance(data, dict) or data.get("type") not in (*_TYPES, "params"):
        raise InvalidInput("a message must be a JSON object with a known 'type'")
    if data["type"] == "params":
        return GeoParams.from_json({k: v for k, v in data.items() if k != "type"})
    return _TYPES[data["type"]].from_json(data)
