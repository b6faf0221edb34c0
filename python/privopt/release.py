"""The release contract: one base for what every mechanism hands out.

A *release* is the object a mechanism publishes: a perturbation matrix, a k-anonymous table,
census counts, a clustering. Whatever the mechanism, it carries the same names:

- ``mechanism``: the registered name of the mechanism that made it (:func:`privopt.mechanisms`,
  :mod:`privopt.registry`);
- ``guarantee``: a :class:`Guarantee` record (kind, parameters, what is protected, whether the
  randomness was seeded);
- ``status`` and ``relative_gap``: the certification rule's verdict (``docs/certification.md``)
  on the optimization that produced it, both None where nothing is optimized;
- ``timings``: seconds per phase;
- :meth:`Release.verify`: re-checks the guarantee on the released object itself, independently
  of the solver, and raises :class:`~privopt.errors.PrivacyViolation` if it fails;
- :meth:`Release.summary`: a JSON-safe dict (the command line prints exactly this);
- :meth:`Release.report`: a report section, beginning with what was released, under which
  guarantee, with what status;
- :meth:`Release.plot`: a figure of the release on a matplotlib Axes;
- :meth:`Release.save` / :func:`load`: a directory with ``release.json`` and the data in open
  formats (npz, CSV, Parquet); loading gives back an equal release;
- a ``repr`` of at most 10 lines at any size.

``tests/test_release_contract.py`` runs every registered mechanism through this contract.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from privopt import _optional
from privopt._atomic import atomic_directory, check_output
from privopt._inputs import load_npz
from privopt._json import jsonable
from privopt._validation import check_bool
from privopt.errors import InvalidInput
from privopt.report import Section, format_number, markdown_table, release_header, status_text

__all__ = [
    "Guarantee",
    "Release",
    "GUARANTEE_KINDS",
    "RELEASE_FILE",
    "load",
    "read_metadata",
    "json_number_back",
]

#: The privacy notions a release can state.
GUARANTEE_KINDS = (
    "epsilon-DP",
    "(epsilon, delta)-DP",
    "rho-zCDP",
    "epsilon-metric-DP",
    "(epsilon, gamma)-Geo-Ind",
    "k-anonymity",
)

#: The metadata file of a saved release (a directory).
RELEASE_FILE = "release.json"

#: Version of the saved layout; a reader refuses a newer one.
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Guarantee:
    """What a release promises, as a typed record.

    Attributes
    ----------
    kind : one of :data:`GUARANTEE_KINDS`.
    parameters : the guarantee's parameters by name (``epsilon`` and, where they apply,
        ``delta``, ``eta`` or ``gamma`` in the metric's units, ``k``; a ``"rho-zCDP"`` guarantee
        gives ``rho`` and the (ε, δ)-DP it implies as ``epsilon`` and ``delta``).
    protects : plain words: who is protected from what (the neighbouring relation).
    seeded : the randomness came from a seed: anyone who knows it can recompute the noise, so
        the release is reproducible and for testing only.
    unit : the distance unit of a metric guarantee (``"km"``; empty: "distance unit"), in
        which ε is "per unit" and η, γ are lengths.
    detail : one more plain-words fact about this release's protection (the geo release: how
        often the true location is reported), appended to :meth:`describe`.

    Examples
    --------
    >>> g = Guarantee("epsilon-DP", {"epsilon": 1.0}, "one household added or removed")
    >>> Guarantee.from_json(g.to_json()) == g
    True
    >>> g.describe()
    'epsilon-DP with epsilon = 1: the probability of any release changes by at most a factor \
e^1 = 2.718 between any two data sets that differ by one household added or removed'
    >>> Guarantee("epsilon-metric-DP", {"epsilon": 2.0, "eta": 1.5}, unit="km").describe()
    'epsilon-metric-DP with epsilon = 2 per km: two records 1 km apart are indistinguishable \
up to a factor e^2 = 7.389 in the probability of each report (e^(2·d) for two records d km \
apart, for any two within 1.5 km)'
    """

    kind: str
    parameters: dict[str, float] = field(default_factory=dict)
    protects: str = ""
    seeded: bool = False
    unit: str = ""
    detail: str = ""

    def __post_init__(self) -> None:
        if self.kind not in GUARANTEE_KINDS:
            raise InvalidInput(f"kind must be one of {GUARANTEE_KINDS}, got {self.kind!r}")
        if not isinstance(self.parameters, dict) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
            for k, v in self.parameters.items()
        ):
            raise InvalidInput(f"parameters must map names to numbers, got {self.parameters!r}")
        for name in ("protects", "unit", "detail"):
            if not isinstance(getattr(self, name), str):
                raise InvalidInput(f"{name} must be a string, got {getattr(self, name)!r}")
        check_bool("seeded", self.seeded)

    def describe(self) -> str:
        """The guarantee in plain words, with its numbers and units: what a reader of the
        release can and cannot tell apart, and by how much (the factor e^ε)."""
        text = _plain_words(self.kind, self.parameters, self.protects, self.unit or "")
        if self.detail:
            text += f"; {self.detail}"
        if self.seeded:
            text += (
                " (SEEDED: the random draws came from a seed; anyone who knows it can "
                "recompute them, so this release is for testing only)"
            )
        return text

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (``inf`` written as the string ``"inf"``)."""
        return {
            "kind": self.kind,
            "parameters": {k: _json_number(v) for k, v in self.parameters.items()},
            "protects": self.protects,
            "seeded": self.seeded,
            "unit": self.unit,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: Any) -> Guarantee:
        """Inverse of :meth:`to_json`."""
        if not isinstance(data, dict):
            raise InvalidInput(f"a guarantee must be a JSON object, got {type(data).__name__}")
        params = {k: math.inf if v == "inf" else v for k, v in data.get("parameters", {}).items()}
        return cls(
            str(data.get("kind", "")),
            params,
            data.get("protects", ""),
            data.get("seeded", False),
            data.get("unit", ""),
            data.get("detail", ""),
        )


class Release(ABC):
    """Base of every mechanism's release (see the module docstring for the contract).

    A subclass sets :attr:`mechanism` and implements :attr:`guarantee`, :meth:`verify`,
    :meth:`_summary_fields`, :meth:`plot`, :meth:`_state` and :meth:`_from_state`; it may
    override :attr:`status`, :attr:`relative_gap`, :attr:`timings` and :meth:`report`.
    """

    #: The registered name of the mechanism (:func:`privopt.mechanisms`, :mod:`privopt.registry`).
    mechanism: ClassVar[str] = ""

    @property
    @abstractmethod
    def guarantee(self) -> Guarantee:
        """The guarantee this release states."""

    @property
    def status(self) -> str | None:
        """The certification status (``"optimal"``, ``"gap_not_closed"``, …), None where the
        mechanism optimizes nothing."""
        return None

    @property
    def relative_gap(self) -> float | None:
        """The proven relative gap, None where the mechanism optimizes nothing."""
        return None

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per phase."""
        return {}

    @abstractmethod
    def verify(self) -> Release:
        """Re-check the guarantee on the released object; raise
        :class:`~privopt.errors.PrivacyViolation` if it fails, else return ``self``."""

    @abstractmethod
    def _summary_fields(self) -> dict[str, Any]:
        """The mechanism's own summary entries (JSON-safe or numpy scalars)."""

    @abstractmethod
    def plot(self, ax: Any = None) -> Any:
        """Draw the release on ``ax`` (a new figure when None); returns the Axes."""

    @abstractmethod
    def _state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(JSON-safe metadata, data) of the release: data values are numpy arrays (saved in
        ``data.npz``) or pandas DataFrames (saved as CSV, or Parquet with pyarrow)."""

    @classmethod
    @abstractmethod
    def _from_state(cls, meta: dict[str, Any], data: dict[str, Any]) -> Release:
        """The release from what :meth:`_state` returned (after a save and load)."""

    # ------------------------------------------------------------------ shared behaviour
    def summary(self) -> dict[str, Any]:
        """A JSON-safe dict: the shared keys (``mechanism``, ``guarantee``, ``status``,
        ``relative_gap``, ``time_s``) and the mechanism's own. The command line prints it."""
        head = {
            "mechanism": self.mechanism,
            "guarantee": self.guarantee.to_json(),
            "guarantee_text": self.guarantee.describe(),
            "status": self.status,
            "relative_gap": self.relative_gap,
            "time_s": self.timings.get("total", sum(self.timings.values()) or None),
        }
        return _jsonable({**head, **self._summary_fields()})

    def report(self) -> Any:
        """A report section that begins with what was released, under which guarantee and with
        what status, then the summary's figures as a table."""
        status = status_text(self.status, self.relative_gap)
        head = release_header(self.describe(), self.guarantee.describe(), status)
        rows = [[k, _cell(v)] for k, v in self._summary_fields().items() if _is_scalar(v)]
        body = head + (markdown_table(["quantity", "value"], rows) if rows else "")
        return Section(f"Release: {self.mechanism}", body)

    def describe(self) -> str:
        """One line: what was released (default: the class name)."""
        return type(self).__name__

    def save(self, path: str | Path) -> Path:
        """Write the release as a directory ``path`` (``release.json`` plus its data files),
        atomically: a reader sees no directory or the complete one. Returns the path.

        An existing ``path`` is replaced only when it is empty or privopt wrote it (a saved
        release, a command's output); a file, or a folder of anything else, is refused with
        :class:`~privopt.errors.InvalidInput`, never overwritten.
        """
        target = check_output(path, force=True, kind="dir", option="path")
        with atomic_directory(target) as staging:
            self._write(Path(staging))
        return target

    def _write(self, folder: Path) -> None:
        """Write ``release.json`` and the data files into an existing ``folder``."""
        meta, data = self._state()
        arrays = {k: v for k, v in data.items() if isinstance(v, np.ndarray)}
        tables = {k: v for k, v in data.items() if not isinstance(v, np.ndarray)}
        files: dict[str, str] = {}
        if arrays:
            savez: Any = np.savez_compressed  # (numpy's stubs type **arrays poorly)
            savez(folder / "data.npz", **arrays)
            files.update(dict.fromkeys(arrays, "data.npz"))
        for name, frame in tables.items():
            files[name] = _write_table(frame, folder, name)
        document = self._document(meta, files)
        (folder / RELEASE_FILE).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")

    def _write_npz(self, file: Path) -> None:
        """Write the release as one ``.npz`` file (a release whose data are arrays only): the
        arrays plus ``release_json``, the description :meth:`_write` puts in ``release.json``."""
        meta, data = self._state()
        if not all(isinstance(v, np.ndarray) for v in data.values()):
            raise InvalidInput(f"a {type(self).__name__} is saved as a directory, not one .npz")
        document = json.dumps(self._document(meta, dict.fromkeys(data, "")))
        savez: Any = np.savez_compressed  # (numpy's stubs type **arrays poorly)
        with open(file, "wb") as f:  # by handle: numpy would append .npz to a temporary name
            savez(f, **data, release_json=np.array(document))

    def _document(self, meta: dict[str, Any], files: dict[str, str]) -> dict[str, Any]:
        return {
            "privopt_release": FORMAT_VERSION,
            "mechanism": self.mechanism,
            "release_type": f"{type(self).__module__}.{type(self).__qualname__}",
            "guarantee": self.guarantee.to_json(),
            "status": self.status,
            "relative_gap": _json_number(self.relative_gap),
            "timings": self.timings,
            "summary": self.summary(),
            "files": files,
            "state": _jsonable(meta),
        }

    @classmethod
    def load(cls, path: str | Path) -> Release:
        """Read a release saved by :meth:`save` (:func:`privopt.load` for any mechanism)."""
        release = load(path)
        if not isinstance(release, cls):
            raise InvalidInput(
                f"{str(path)!r} holds a {type(release).__name__}, not a {cls.__name__}"
            )
        return release

    # ------------------------------------------------------------------ equality, repr
    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Release)
        meta_a, data_a = self._state()
        meta_b, data_b = other._state()
        return _jsonable(meta_a) == _jsonable(meta_b) and _same_data(data_a, data_b)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        status = "" if self.status is None else f", status={self.status}"
        if self.relative_gap is not None:
            status += f", relative_gap={_number(self.relative_gap)}"
        return f"{type(self).__name__}({self.describe()};\n  {self.guarantee.describe()}{status})"


# ---------------------------------------------------------------------- loading
def _release_types() -> dict[str, type[Release]]:
    """The concrete release classes defined so far, by mechanism name."""
    found: dict[str, type[Release]] = {}
    stack = list(Release.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.mechanism and not inspect.isabstract(cls):
            found.setdefault(cls.mechanism, cls)
    return found


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The description of a saved release: ``release.json`` of a directory (one written by
    :meth:`Release.save` or a command's ``--out``), or the ``release_json`` entry of a
    single-file ``.npz`` release."""
    where = Path(path)
    if where.is_file() and where.suffix == ".npz":
        arrays = load_npz(where, "path")
        if "release_json" not in arrays:
            raise InvalidInput(f"{str(path)!r} is an .npz file but not a privopt release")
        text = str(arrays["release_json"])
        meta_file = where
    else:
        meta_file = where / RELEASE_FILE
        if not where.is_dir() or not meta_file.is_file():
            raise InvalidInput(
                f"{str(path)!r} is not a saved privopt release (a directory holding "
                f"{RELEASE_FILE}, or a release .npz file)"
            )
        try:
            text = meta_file.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise InvalidInput(f"{str(meta_file)!r} is not UTF-8 text ({err})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise InvalidInput(f"{str(meta_file)!r} is not valid JSON ({err})") from None
    if not isinstance(document, dict) or "privopt_release" not in document:
        raise InvalidInput(f"{str(meta_file)!r} is not a privopt release description")
    version = document["privopt_release"]
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise InvalidInput(
            f"{str(meta_file)!r} has layout version {version!r}; this privopt reads up to "
            f"{FORMAT_VERSION} (upgrade privopt)"
        )
    return document


def load(path: str | Path) -> Release:
    """Read any saved release back as its typed object.

    ``path`` is a directory written by :meth:`Release.save` or a command's ``--out`` directory;
    the mechanism is read from its ``release.json``.

    Raises
    ------
    InvalidInput
        Not a saved release, an unknown mechanism, or missing or damaged data files.
    """
    document = read_metadata(path)
    kind = _release_type(document)
    where = Path(path)
    if where.is_file():  # a single-file .npz release
        data = {k: v for k, v in load_npz(where, "path").items() if k != "release_json"}
        return kind._from_state(document.get("state", {}), data)
    folder = where
    data = {}
    files = document.get("files", {})
    if not isinstance(files, dict):
        raise InvalidInput(f"{str(folder / RELEASE_FILE)!r}: 'files' must be an object")
    archives: dict[Path, dict[str, np.ndarray]] = {}  # each .npz read once
    for name, file in files.items():
        where = folder / str(file)
        if not where.is_file() or where.parent != folder:
            raise InvalidInput(f"{str(where)!r}, a data file of the release, is missing")
        if where.suffix == ".npz":
            if where not in archives:
                archives[where] = load_npz(where, "data file")
            if name not in archives[where]:
                raise InvalidInput(f"{str(where)!r} lacks the array {name!r} of the release")
            data[name] = archives[where][name]
        else:
            data[name] = _read_table(where)
    return kind._from_state(document.get("state", {}), data)


def _release_type(document: dict[str, Any]) -> type[Release]:
    """The class of a saved release: registered under its mechanism name once the class's
    module is imported (imported here when the description names one of privopt's)."""
    name = document.get("mechanism")
    if name not in _release_types():
        qualified = document.get("release_type")
        if isinstance(qualified, str) and qualified.startswith("privopt."):
            module = qualified.rsplit(".", 1)[0]
            with contextlib.suppress(ImportError):
                importlib.import_module(module)
    types = _release_types()
    if name not in types:
        raise InvalidInput(
            f"the release names mechanism {name!r}, which this privopt does not know "
            f"(known: {sorted(types)})"
        )
    return types[name]


def json_number_back(value: Any) -> float:
    """A number from a release's JSON: the strings ``"inf"``/``"-inf"`` back to infinities."""
    if value == "inf":
        return math.inf
    if value == "-inf":
        return -math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"a saved release holds {value!r} where a number belongs")
    return float(value)


# ---------------------------------------------------------------------- helpers
def _write_table(frame: Any, folder: Path, name: str) -> str:
    """A DataFrame as Parquet (pyarrow installed: dtypes kept) or CSV; returns the file name."""
    if _optional.pyarrow() is None:
        file = f"{name}.csv"
        frame.to_csv(folder / file, index=True)
        return file
    file = f"{name}.parquet"
    frame.to_parquet(folder / file, index=True)
    return file


def _read_table(path: Path) -> Any:
    pd = _optional.pandas()

    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_csv(path, index_col=0)


def _same_data(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for key, x in a.items():
        y = b[key]
        if isinstance(x, np.ndarray):
            if not isinstance(y, np.ndarray) or x.shape != y.shape:
                return False
            if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
                return False
        elif hasattr(x, "equals"):  # a DataFrame
            if not x.equals(y):
                return False
        elif x != y:
            return False
    return True


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _jsonable(value: Any) -> Any:
    """Plain JSON for a release: non-finite floats as "inf"/"-inf" (read back as numbers)."""
    return jsonable(value, nonfinite_as_text=True)


def _factor(epsilon: float) -> str:
    """``e^ε = value``: the bound on the ratio of two probabilities, rounded for a reader."""
    return f"e^{_number(epsilon)} = {_number(math.exp(epsilon)) if epsilon < 700 else '∞'}"


def _plain_words(kind: str, params: dict[str, float], protects: str, unit: str) -> str:
    """One guarantee in plain words with its numbers; see :meth:`Guarantee.describe`."""
    eps = params.get("epsilon")
    if kind in ("epsilon-metric-DP", "(epsilon, gamma)-Geo-Ind") and eps is not None:
        geo = kind.endswith("Geo-Ind")
        things = "locations" if geo else "records"
        radius = params.get("gamma" if geo else "eta", math.inf)
        per = unit or "distance unit"
        plural = f"{unit}" if unit else "distance units"
        within = (
            f"for any two {things}"
            if math.isinf(radius)
            else f"for any two within {_number(radius)} {plural}"
        )
        return (
            f"{kind} with epsilon = {_number(eps)} per {per}: two {things} 1 {per} apart are "
            f"indistinguishable up to a factor {_factor(eps)} in the probability of each "
            f"report (e^({_number(eps)}·d) for two {things} d {plural} apart, {within})"
        )
    if kind == "k-anonymity":
        k = int(params.get("k", 1))
        return (
            f"k-anonymity with k = {k}: each released row shares its quasi-identifier "
            f"intervals with at least {k - 1} other rows, so a person known by those attributes "
            f"is one of at least {k} rows; this is not a differential-privacy guarantee"
        )
    between = (
        f"between any two data sets that differ by {protects}"
        if protects
        else "between any two neighbouring data sets"
    )
    if kind == "rho-zCDP" and eps is not None:
        delta = params.get("delta", math.nan)
        return (
            f"rho-zCDP with rho = {_number(params.get('rho', math.nan))}, which implies "
            f"(epsilon, delta)-DP with epsilon = {_number(eps)} and delta = {_number(delta)}: "
            f"the probability of any release changes by at most a factor {_factor(eps)} "
            f"{between}, except with probability at most {_number(delta)}"
        )
    if kind == "(epsilon, delta)-DP" and eps is not None:
        delta = params.get("delta", math.nan)
        return (
            f"(epsilon, delta)-DP with epsilon = {_number(eps)} and delta = {_number(delta)}: "
            f"the probability of any release changes by at most a factor {_factor(eps)} "
            f"{between}, except with probability at most {_number(delta)}"
        )
    if kind == "epsilon-DP" and eps is not None:
        return (
            f"epsilon-DP with epsilon = {_number(eps)}: the probability of any release changes "
            f"by at most a factor {_factor(eps)} {between}"
        )
    values = ", ".join(f"{k} = {_number(v)}" for k, v in params.items())
    text = f"{kind} with {values}" if values else kind
    return f"{text}: {protects}" if protects else text


def _number(value: float) -> str:
    """A number with meaningful digits (the reports' shared formatter)."""
    return format_number(value)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (int, float, str, bool, np.generic)) or value is None


def _cell(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return _number(float(value))
    return str(value)
