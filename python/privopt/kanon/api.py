"""``anonymize``: the public entry point, and the result object it returns."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from privopt import _optional
from privopt._progress import check_progress, progress_scope_for
from privopt._validation import (
    check_bool,
    check_executor,
    check_finite_array,
    check_instance,
    check_int,
    check_labels,
    check_nonnegative,
    check_positive,
)
from privopt.errors import InvalidInput, PrivacyViolation
from privopt.kanon.baselines import k_member, mondrian
from privopt.kanon.check import verify_boxes, verify_k_anonymous
from privopt.kanon.greedy import greedy_search
from privopt.kanon.initial import initial_solution
from privopt.kanon.loss import ClassBoxes, LossBreakdown, class_boxes, information_loss
from privopt.kanon.milp import solve_exact
from privopt.kanon.problem import KAnonProblem, build_problem
from privopt.kanon.split_carry import split_and_carry
from privopt.release import Guarantee, Release, json_number_back
from privopt.report import axes_or_new, format_number

__all__ = ["anonymize", "KAnonResult", "METHODS", "render_table"]


def _fmt_number(v: float, integer: bool) -> str:
    return str(int(v)) if integer else repr(float(v))


def _value_set_formatter(labels) -> Callable:
    names = [str(v) for v in labels]
    return lambda present: "|".join(names[c] for c in np.flatnonzero(present))


def _interval_formatter(integer: bool) -> Callable:
    return lambda pair: f"[{_fmt_number(pair[0], integer)}-{_fmt_number(pair[1], integer)}]"


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``rows`` (c, w) and the index of each row's pattern, by hashing (each
    column factorized, codes packed into one int64) rather than sorting rows."""
    pd = _optional.pandas()

    key = np.zeros(len(rows), dtype=np.int64)
    span = 1
    for col in rows.T:
        codes, uniq = pd.factorize(col)
        span *= len(uniq)
        if span >= 2**62:  # too many combinations to pack: sort the rows instead
            uniq_rows, inv = np.unique(rows, axis=0, return_inverse=True)
            return uniq_rows, inv.ravel()
        key = key * len(uniq) + codes
    inv, _ = pd.factorize(key)
    first = np.empty(int(inv.max()) + 1, dtype=np.int64)
    first[inv[::-1]] = np.arange(len(inv) - 1, -1, -1)  # first row of each pattern
    return rows[first], inv


def _distinct_texts(rows: np.ndarray, fmt: Callable) -> np.ndarray:
    """``fmt(row)`` for every row of ``rows`` (c, w), formatting each distinct row once."""
    uniq, inv = _distinct_rows(rows)
    return np.asarray([fmt(r) for r in uniq], dtype=object)[inv]


def render_table(df: Any, problem: KAnonProblem, boxes: ClassBoxes) -> Any:
    """Copy of ``df`` with QI cells generalized: ``"[y-z]"`` intervals for numeric columns
    (``"v"`` when y = z is not collapsed: the interval is always printed), and the sorted set of
    the class's values joined by ``"|"`` for categorical columns.

    Parameters
    ----------
    df : pandas.DataFrame, the n rows ``problem`` was built from.
    problem : the :class:`KAnonProblem` of ``df``.
    boxes : the classes' boxes (:func:`~privopt.kanon.loss.class_boxes`), one label per row.

    Raises
    ------
    InvalidInput
        An argument of the wrong type, or ``df``, ``problem`` and ``boxes`` of different rows
        or columns.
    """
    check_instance("problem", problem, KAnonProblem)
    check_instance("boxes", boxes, ClassBoxes)
    check_instance("df", df, _optional.pandas().DataFrame)
    n = problem.x.shape[0]
    if len(df) != n or boxes.labels.shape != (n,):
        raise InvalidInput(
            f"df ({len(df)} rows), problem ({n} rows) and boxes ({boxes.labels.size} labels) "
            "must describe the same rows"
        )
    missing = [name for name in problem.names if name not in df.columns]
    if missing:
        raise InvalidInput(f"df lacks the quasi-identifier columns {missing} of problem")
    return _render_table(df, problem, boxes)


def _render_table(df: Any, problem: KAnonProblem, boxes: ClassBoxes) -> Any:
    """:func:`render_table` of arguments that :func:`anonymize` has just built together:
    trusted, nothing is checked again."""
    pd = _optional.pandas()
    out = df.copy()
    lab = boxes.labels
    first = np.unique(lab, return_index=True)[1]  # one row per class
    for j, name in enumerate(problem.names):
        if problem.categorical[j]:
            codes = problem.x[:, j].astype(np.int64)
            present = np.zeros((int(lab.max()) + 1, len(problem.labels[j])), dtype=bool)
            present[lab, codes] = True
            text = _distinct_texts(present, _value_set_formatter(problem.labels[j]))
        else:
            pairs = np.column_stack([boxes.lo[first, j], boxes.hi[first, j]])
            text = _distinct_texts(pairs, _interval_formatter(bool(problem.integer[j])))
        # one string per class pattern, then broadcast: rendering is O(patterns), not O(n)
        out[name] = pd.Series(text[lab], index=df.index, dtype=object)
    return out


def _verify_value_sets(name, cells, labels, codes) -> None:
    """Every released categorical cell (value set ``"a|b"``) holds the row's own value; each
    distinct (cell, value) pair is checked once."""
    pd = _optional.pandas()

    own = np.asarray([str(v) for v in labels], dtype=object)[codes.astype(np.int64)]
    pairs = pd.DataFrame({"cell": cells.to_numpy(), "own": own})
    for cell, value in pairs.drop_duplicates().itertuples(index=False):
        # (a label that itself contains "|" can only be checked as a substring)
        if value not in cell.split("|") and ("|" not in value or value not in cell):
            row = int(np.flatnonzero((pairs["cell"] == cell) & (pairs["own"] == value))[0])
            raise PrivacyViolation(
                f"row {row}: {name} value {value!r} is not in its released set {cell!r}"
            )


#: Who k-anonymity protects, in plain words.
PROTECTS = (
    "every record shares its generalised quasi-identifiers with at least k-1 other records, "
    "so a person known by those attributes is one of at least k rows"
)


class KAnonResult(Release):
    """A k-anonymous table: the outcome of :func:`anonymize`, as a release.

    Attributes
    ----------
    table : pandas.DataFrame
        The input table, same index and row order, QI cells generalized (see
        :func:`render_table`); other columns unchanged.
    classes : (n,) int64
        Equivalence-class id of every row (0..c-1, numbered by first appearance).
    lower, upper : pandas.DataFrame
        Numeric box bounds ``y_ij, z_ij`` per QI cell (categorical columns: code range).
    loss : LossBreakdown
        Objective (eq. 34), GCP (Def. 9) and their per-attribute splits.
    method, k : the algorithm and anonymity parameter used.
    problem : KAnonProblem or None
        The validated input (it holds the original quasi-identifier values): present on the
        result of :func:`anonymize`, never saved, None on a release read by
        :func:`privopt.load`.
    timings : dict
        Seconds: ``"solve"`` (the algorithm only), ``"total"`` (incl. validation, rendering and
        verification).
    info : dict
        Method-specific details (MILP status and gap, Split & Carry sub-problem sizes, ...).
    quasi_identifiers : list
        Names of the quasi-identifier columns (default: the problem's).
    weights : (m,) float64
        The attribute weights ``w_j`` (default: the problem's).
    categorical : list or None
        The quasi-identifiers released as value sets (default: the problem's categorical
        columns; None on a release saved before this was recorded).

    The release contract (:class:`privopt.release.Release`): :attr:`guarantee` is k-anonymity;
    :attr:`status` and :attr:`relative_gap` are the MILP's certificate (None for the heuristics,
    which prove nothing); :meth:`verify` re-checks the released table; :meth:`save` writes
    ``release.json``, ``table.parquet`` (CSV without pyarrow) and ``data.npz`` (classes and
    boxes), never the original data.
    """

    mechanism: ClassVar[str] = "kanon"

    def __init__(
        self,
        table: Any,
        classes: np.ndarray,
        lower: Any,
        upper: Any,
        loss: LossBreakdown,
        method: str,
        k: int,
        problem: KAnonProblem | None = None,
        timings: Mapping[str, float] | None = None,
        info: Mapping[str, Any] | None = None,
        *,
        quasi_identifiers: Sequence | None = None,
        weights: Any = None,
        categorical: Sequence | None = None,
    ) -> None:
        if problem is not None:
            check_instance("problem", problem, KAnonProblem)
            quasi_identifiers = problem.names if quasi_identifiers is None else quasi_identifiers
            if categorical is None:
                categorical = [problem.names[j] for j in np.flatnonzero(problem.categorical)]
        if quasi_identifiers is None:
            raise InvalidInput("quasi_identifiers are required when no problem is given")
        self.quasi_identifiers = list(quasi_identifiers)
        m = len(self.quasi_identifiers)
        self.categorical = None if categorical is None else list(categorical)
        if self.categorical is not None and any(
            c not in self.quasi_identifiers for c in self.categorical
        ):
            raise InvalidInput("categorical must name quasi-identifier columns only")
        n = len(getattr(table, "index", ()))
        if not hasattr(table, "columns") or any(
            q not in table.columns for q in self.quasi_identifiers
        ):
            raise InvalidInput("table must be a DataFrame holding every quasi-identifier column")
        self.table = table
        self.classes = check_labels("classes", classes, n)
        if not np.array_equal(
            np.unique(self.classes), np.arange(int(self.classes.max(initial=-1)) + 1)
        ):
            raise InvalidInput("classes must number the equivalence classes 0..c-1")
        self.lower, self.upper = lower, upper
        for name, box in (("lower", lower), ("upper", upper)):
            if getattr(box, "shape", None) != (n, m):
                raise InvalidInput(f"{name} must be an ({n}, {m}) DataFrame of box bounds")
        self.loss = check_instance("loss", loss, LossBreakdown)
        if not isinstance(method, str) or not method:
            raise InvalidInput(f"method must name a k-anonymity method, got {method!r}")
        self.method = method
        self.k = check_int("k", k, minimum=1)
        self.problem = problem
        raw_weights = problem.weights if weights is None and problem is not None else weights
        self.weights = check_finite_array("weights", raw_weights, shape=(m,))
        self._timings = {str(key): float(v) for key, v in (timings or {}).items()}
        self.info = dict(info or {})

    # ------------------------------------------------------------------ the release contract
    @property
    def guarantee(self) -> Guarantee:
        """k-anonymity of the released table on its quasi-identifiers (nothing random)."""
        return Guarantee("k-anonymity", {"k": self.k}, PROTECTS)

    @property
    def status(self) -> str | None:
        """The MILP's certification status (``"optimal"``, ``"time_limit"``, …); None for
        Greedy Search, Split & Carry, the IFS and the baselines, which prove nothing."""
        status = self.info.get("status")
        return None if status is None else str(status)

    @property
    def relative_gap(self) -> float | None:
        """The MILP's proven relative gap, None where :attr:`status` is None."""
        gap = self.info.get("relative_gap") if self.status is not None else None
        return None if gap is None else json_number_back(gap)

    @property
    def timings(self) -> dict[str, float]:
        """Seconds: ``solve`` (the algorithm only) and ``total``."""
        return self._timings

    def describe(self) -> str:
        """What was released, in one line: rows, classes, method and information loss."""
        sizes = self.class_sizes
        return (
            f"k-anonymous table of {len(self.classes)} rows in {len(sizes)} classes (sizes "
            f"{sizes.min()} to {sizes.max()} rows), method {self.method}, information loss "
            f"{format_number(self.objective)}, global certainty penalty (GCP) "
            f"{format_number(self.gcp)}"
        )

    def verify(self) -> KAnonResult:
        """Re-check the release and return self; raise
        :class:`~privopt.errors.PrivacyViolation` on the first failure.

        On the released table itself: every combination of generalised quasi-identifiers
        occurs at least k times, the rows of a class show the same generalised values, every
        class has one box (lower ≤ upper) and at least k rows. With the original problem
        attached (the result of :func:`anonymize`), also: every box contains its row's
        values, and every categorical cell's value set holds the row's own value.
        """
        qis = self.quasi_identifiers
        verify_k_anonymous(self.table, qis, self.k)
        lo = self.lower.to_numpy(dtype=float)
        hi = self.upper.to_numpy(dtype=float)
        # Without the data, the boxes' own lower corners stand in for it: lo <= hi.
        values = lo if self.problem is None else self.problem.x
        verify_boxes(values, lo, hi, self.classes, self.k)
        _verify_classes_match_table(self.table[qis], self.classes)
        if self.problem is not None:
            p = self.problem
            for j in np.flatnonzero(p.categorical):
                _verify_value_sets(p.names[j], self.table[p.names[j]], p.labels[j], p.x[:, j])
        return self

    def _summary_fields(self) -> dict[str, Any]:
        sizes = self.class_sizes
        return {
            "method": self.method,
            "k": self.k,
            "rows": len(self.classes),
            "classes": len(sizes),
            "smallest_class": int(sizes.min()),
            "largest_class": int(sizes.max()),
            "objective": self.objective,
            "gcp": self.gcp,
            "quasi_identifiers": [str(q) for q in self.quasi_identifiers],
        }

    def plot(self, ax: Any = None) -> Any:
        """Bar chart of the class-size histogram (k marked); returns the matplotlib Axes."""
        ax = axes_or_new(ax, figsize=(5, 3.2))
        vals, counts = np.unique(self.class_sizes, return_counts=True)
        ax.bar(vals, counts, width=0.8, color="tab:blue")
        ax.xaxis.set_major_locator(_optional.matplotlib().ticker.MaxNLocator(integer=True))
        ax.axvline(
            self.k - 0.5, color="tab:red", ls="--", lw=1, label=f"k = {self.k}: smallest allowed"
        )
        ax.set_xlabel("size of a group of indistinguishable rows (rows)")
        ax.set_ylabel("number of groups")
        ax.set_title(
            f"{len(self.class_sizes)} groups of {len(self.classes)} rows ({self.method}, "
            f"k = {self.k})"
        )
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        return ax

    def plot_class_sizes(self, ax: Any = None) -> Any:
        """The class-size histogram: the same figure as :meth:`plot`."""
        return self.plot(ax)

    def _state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        pd = _optional.pandas()

        table = self.table
        meta = {
            "method": self.method,
            "k": self.k,
            "quasi_identifiers": self.quasi_identifiers,
            "categorical": self.categorical,
            "weights": self.weights,
            "loss": dataclasses.asdict(self.loss),
            "timings": self.timings,
            "info": self.info,
            # Parquet gives text columns back as pandas' string type and a RangeIndex as
            # values; these two facts restore the table as it was.
            "table_object_columns": [str(c) for c in table.columns if table[c].dtype == object],
            "table_range_index": isinstance(table.index, pd.RangeIndex),
        }
        data = {
            "table": table,
            "classes": self.classes,
            "lower": self.lower.to_numpy(dtype=np.float64),
            "upper": self.upper.to_numpy(dtype=np.float64),
        }
        return meta, data

    @classmethod
    def _from_state(cls, meta: dict[str, Any], data: dict[str, Any]) -> KAnonResult:
        pd = _optional.pandas()

        for key in ("table", "classes", "lower", "upper"):
            if key not in data:
                raise InvalidInput(f"the saved k-anonymity release has no {key!r}")
        table = data["table"]
        for column in meta.get("table_object_columns", []):
            if column in table.columns and table[column].dtype != object:
                table[column] = table[column].astype(object)
        if meta.get("table_range_index") and np.array_equal(table.index, np.arange(len(table))):
            table.index = pd.RangeIndex(len(table), name=table.index.name)
        qis = list(meta.get("quasi_identifiers", []))
        boxes = {
            name: pd.DataFrame(data[name], columns=qis, index=table.index)
            for name in ("lower", "upper")
        }
        saved_loss = meta.get("loss", {})
        try:
            loss = LossBreakdown(
                objective=json_number_back(saved_loss["objective"]),
                gcp=json_number_back(saved_loss["gcp"]),
                weighted_gcp=json_number_back(saved_loss["weighted_gcp"]),
                per_attribute=np.asarray(saved_loss["per_attribute"], dtype=np.float64),
                ncp_per_attribute=np.asarray(saved_loss["ncp_per_attribute"], dtype=np.float64),
            )
        except (KeyError, TypeError, ValueError):
            raise InvalidInput("the saved k-anonymity release has no valid loss") from None
        return cls(
            table,
            data["classes"],
            boxes["lower"],
            boxes["upper"],
            loss,
            meta.get("method", ""),
            meta.get("k", 0),
            timings={key: json_number_back(v) for key, v in meta.get("timings", {}).items()},
            info=meta.get("info", {}),
            quasi_identifiers=qis,
            weights=meta.get("weights"),
            categorical=meta.get("categorical"),
        )

    def _write(self, folder: Path) -> None:
        """The release's files; a table Parquet cannot hold is refused naming the column."""
        if not all(isinstance(c, str) for c in self.table.columns):
            raise InvalidInput(
                "the released table's column names must be text to be saved, got "
                f"{[c for c in self.table.columns if not isinstance(c, str)][:3]}"
            )
        try:
            super()._write(folder)
        except (TypeError, ValueError):  # pyarrow's ArrowTypeError / ArrowInvalid
            # (pyarrow's message quotes the offending cell: data, which messages never show)
            raise InvalidInput(
                f"column {_unstorable_column(self.table)!r} of the released table cannot be "
                "saved in Parquet (it mixes numbers and text, say): give it one type"
            ) from None

    # ------------------------------------------------------------------ figures of the release
    @property
    def objective(self) -> float:
        """Eq. (34) in the user's weights (the paper's weighted information loss)."""
        return self.loss.objective

    @property
    def gcp(self) -> float:
        """Σ_i GCP(x'_i) (Def. 9)."""
        return self.loss.gcp

    @property
    def class_sizes(self) -> np.ndarray:
        """(c,) number of rows of each class."""
        return np.bincount(self.classes)

    def partition(self) -> list[list[int]]:
        """Classes as lists of row positions (0..n-1), sorted, in class-id order."""
        order = np.argsort(self.classes, kind="stable")
        splits = np.cumsum(self.class_sizes)[:-1]
        return [sorted(g.tolist()) for g in np.split(order, splits)]

    def interval_frame(self) -> Any:
        """The released table with each numeric quasi-identifier cell as a ``pandas.Interval``.

        Same index, rows and columns as :attr:`table`. A numeric quasi-identifier column holds
        closed intervals ``[lower, upper]`` (``closed="both"``: the generalisation keeps every
        value from the lower to the upper bound, both included, as ``"[y-z]"`` in
        :attr:`table`), int64 when every bound is a whole number, else float64. Categorical
        quasi-identifier columns keep their value sets as text (``"a|b"``: intervals do not
        describe them); other columns are unchanged.

        Returns
        -------
        pandas.DataFrame, n rows.

        Examples
        --------
        >>> from privopt.kanon import anonymize, datasets
        >>> res = anonymize(datasets.fars_20(), k=3)
        >>> res.interval_frame()["AGE"].dtype
        interval[int64, both]
        """
        pd = _optional.pandas()
        out = self.table.copy()
        categorical = _categorical_columns(self)
        for name in self.quasi_identifiers:
            if name in categorical:
                continue
            lo = self.lower[name].to_numpy(dtype=np.float64)
            hi = self.upper[name].to_numpy(dtype=np.float64)
            if np.all(lo == np.round(lo)) and np.all(hi == np.round(hi)):
                lo, hi = lo.astype(np.int64), hi.astype(np.int64)
            intervals = pd.arrays.IntervalArray.from_arrays(lo, hi, closed="both")
            out[name] = pd.Series(intervals, index=out.index)
        return out

    def loss_table(self):
        """Per-attribute loss: weight, objective share (Σ_i w_j D_ij) and NCP sum."""
        pd = _optional.pandas()

        return pd.DataFrame(
            {
                "weight": self.weights,
                "objective": self.loss.per_attribute,
                "ncp": self.loss.ncp_per_attribute,
            },
            index=pd.Index(self.quasi_identifiers, name="attribute"),
        )


def _categorical_columns(result: KAnonResult) -> set:
    """The quasi-identifiers released as value sets: as recorded, or, on a release saved
    without that record, the columns whose cells are not all ``"[y-z]"`` intervals."""
    if result.categorical is not None:
        return set(result.categorical)
    return {
        name
        for name in result.quasi_identifiers
        if not result.table[name].astype(str).str.fullmatch(r"\[.*-.*\]").all()
    }


def _unstorable_column(table: Any) -> Any:
    """The first column of ``table`` that pyarrow cannot convert (None if all convert)."""
    pa = _optional.pyarrow()
    if pa is None:  # the table was written as CSV: no column is refused by pyarrow
        return None
    for column in table.columns:
        try:
            pa.Array.from_pandas(table[column])
        except (pa.ArrowException, TypeError, ValueError):
            return column
    return None


def _verify_classes_match_table(generalised: Any, classes: np.ndarray) -> None:
    """Every class's rows show one combination of generalised values (the released table and
    the class ids describe the same partition)."""
    cells = generalised.groupby(list(generalised.columns), sort=False, dropna=False).ngroup()
    cells = cells.to_numpy()
    n_classes = int(classes.max(initial=-1)) + 1
    lowest, highest = np.full(n_classes, cells.size), np.full(n_classes, -1)
    np.minimum.at(lowest, classes, cells)
    np.maximum.at(highest, classes, cells)
    mixed = np.flatnonzero(lowest != highest)
    if mixed.size:
        raise PrivacyViolation(
            f"the rows of class {int(mixed[0])} show different generalised values"
        )


def _run_initial(problem, **_):
    return initial_solution(problem), {}


def _run_greedy(problem, **_):
    return greedy_search(problem), {}


def _run_milp(problem, **opts):
    return solve_exact(problem, **opts)


def _run_split_carry(problem, **opts):
    return split_and_carry(problem, **opts)


def _run_mondrian(problem, **_):
    return mondrian(problem), {}


def _run_kmember(problem, *, seed=0, **_):
    return k_member(problem, seed=seed), {}


#: method name -> options it accepts (anything else is rejected, so typos do not pass silently)
METHOD_OPTIONS: dict[str, set[str]] = {
    "initial": set(),
    "greedy": set(),
    "milp": {
        "time_limit",
        "formulation",
        "equality_cardinality",
        "mip_start",
        "verbose",
        "rel_gap",
        "max_columns",
    },
    "split_carry": {
        "S",
        "sub_time_limit",
        "time_limit",
        "formulation",
        "verbose",
        "executor",
        "parts",
        "chunking",
    },
    "mondrian": set(),
    "k_member": {"seed"},
}


def _check_option_values(options: dict) -> None:
    """Option values checked at the boundary, by the same rules as every privopt entry point
    (a negative time limit, or an executor that is not one, would otherwise run)."""
    for name in ("time_limit", "sub_time_limit"):
        if options.get(name) is not None:
            options[name] = check_positive(name, options[name], allow_inf=True)
    if "rel_gap" in options:
        options["rel_gap"] = check_nonnegative("rel_gap", options["rel_gap"])
    for name in ("S", "max_columns"):
        if name in options:
            options[name] = check_int(name, options[name], minimum=1)
    if options.get("parts") is not None:
        options["parts"] = check_int("parts", options["parts"], minimum=1)
    if options.get("seed") is not None:
        options["seed"] = check_int("seed", options["seed"], minimum=0)
    if "executor" in options:
        check_executor(options["executor"], accept_dask_client=True)
    for name in ("equality_cardinality", "verbose", "mip_start"):
        if name in options:
            options[name] = check_bool(name, options[name])


#: method name -> runner(problem, **options) -> (labels (n,), info dict)
METHODS: dict[str, Callable] = {
    "initial": _run_initial,
    "greedy": _run_greedy,
    "milp": _run_milp,
    "split_carry": _run_split_carry,
    "mondrian": _run_mondrian,
    "k_member": _run_kmember,
}


def anonymize(
    df,
    k: int,
    quasi_identifiers: str | Sequence | None = None,
    *,
    sensitive: str | Sequence | None = None,
    weights=None,
    method: str = "greedy",
    categorical: str | Sequence | None = None,
    bounds: Mapping | None = None,
    categorical_denominator: str = "dom_minus_1",
    normalize_weights: bool = False,
    progress: bool | str = "auto",
    **options,
) -> KAnonResult:
    """k-anonymize a table by local-recoding generalization to intervals (Liang & Samavi 2020).

    Parameters
    ----------
    df : pandas.DataFrame, n rows. Non-QI columns pass through unchanged; rows keep their order.
    k : int, 1 <= k <= n. Every output equivalence class has at least k rows.
    quasi_identifiers : the quasi-identifier (QI) columns to generalise: a list of column
        names, or one name as a string (``"age"`` is the column ``age``). Default: every column
        not named in ``sensitive``, so name the columns to keep unchanged there, or list the
        QIs.
    sensitive : columns carried unchanged and never generalised (a list, or one name as a
        string). A column named both here and in ``quasi_identifiers`` is refused.
    weights : positive attribute weights ``w_j`` (sequence aligned with the QIs, or a mapping);
        default all 1. They scale the objective (eq. 34) and the sort (Var/w², eq. 36).
    method : ``"greedy"`` (Greedy Search, default), ``"split_carry"`` (Split & Carry MILPs),
        ``"milp"`` (exact MILP, small n only), ``"initial"`` (Initial Feasible Solution),
        ``"mondrian"`` or ``"k_member"`` (baselines).
    categorical : QI columns treated as categorical (value sets in the output; a list, or one
        name as a string; default the non-numeric ones).
    bounds : ``{column: (L, U)}`` permissible ranges replacing the data min/max.
    categorical_denominator : ``"dom_minus_1"`` (default) or ``"dom"`` for the categorical NCP.
    normalize_weights : rescale the weights to sum to 1 (eq. 35).
    progress : ``True``, ``False`` or ``"auto"`` (default: on under the command line unless
        ``--quiet``, else on a terminal once the call has run 2 s): bars on stderr over Greedy
        Search's classes and Split & Carry's sub-problems (also Greedy Search as the MILP's
        start).
    **options : method options: ``time_limit`` (s), ``formulation`` ("auto", "set_partition"
        or "paper"), ``rel_gap``, ``max_columns``, ``equality_cardinality`` (milp); ``S``,
        ``sub_time_limit``, ``time_limit``, ``formulation``, ``executor`` (a
        ``concurrent.futures.Executor`` for parallel parts), ``parts`` (split_carry);
        ``seed`` (k_member).

    Returns
    -------
    KAnonResult, already verified k-anonymous.

    Raises
    ------
    InvalidInput : bad table, k, QIs (or a column both QI and sensitive), weights, bounds or
        method.
    privopt.errors.PrivacyViolation : never expected; raised instead of returning a result
        that fails the k-anonymity check.

    Examples
    --------
    >>> from privopt.kanon import anonymize, datasets
    >>> res = anonymize(datasets.fars_20(), k=3, weights=[0.25] * 4)
    >>> round(res.objective, 6)
    7.127016
    """
    pd = _optional.pandas()

    t0 = time.perf_counter()
    if method not in METHODS:
        raise InvalidInput(f"method must be one of {sorted(METHODS)}, got {method!r}")
    unknown = set(options) - METHOD_OPTIONS[method]
    if unknown:
        raise InvalidInput(
            f"method {method!r} takes no option(s) {sorted(unknown)}; "
            f"accepted: {sorted(METHOD_OPTIONS[method])}"
        )
    _check_option_values(options)
    progress = check_progress(progress)
    problem = build_problem(
        df,
        k,
        quasi_identifiers,
        sensitive=sensitive,
        weights=weights,
        categorical=categorical,
        bounds=bounds,
        categorical_denominator=categorical_denominator,
        normalize_weights=normalize_weights,
    )
    t1 = time.perf_counter()
    with progress_scope_for(progress):
        labels, info = METHODS[method](problem, **options)
    t2 = time.perf_counter()
    boxes = class_boxes(problem, labels)
    loss = information_loss(problem, boxes)
    table = _render_table(df, problem, boxes)  # all three built just above
    lower = pd.DataFrame(boxes.lo, columns=problem.names, index=df.index)
    upper = pd.DataFrame(boxes.hi, columns=problem.names, index=df.index)
    timings = {"solve": t2 - t1}
    result = KAnonResult(
        table, boxes.labels, lower, upper, loss, method, problem.k, problem, timings, info
    )
    result.verify()  # a result that fails the check is never returned
    result.timings["total"] = time.perf_counter() - t0
    return result
