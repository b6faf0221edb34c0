"""``anonymize``: the public entry point, and the result object it returns."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privopt._validation import check_bool, check_instance
from privopt.errors import InvalidInput, PrivacyViolation
from privopt.kanon.check import verify_boxes, verify_k_anonymous
from privopt.kanon.loss import ClassBoxes, LossBreakdown, class_boxes, information_loss
from privopt.kanon.problem import KAnonProblem, build_problem

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
    import pandas as pd

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


def render_table(df, problem: KAnonProblem, boxes: ClassBoxes):
    """Copy of ``df`` with QI cells generalized: ``"[y-z]"`` intervals for numeric columns
    (``"v"`` when y = z is not collapsed: the interval is always printed), and the sorted set of
    the class's values joined by ``"|"`` for categorical columns (spec §7.17)."""
    check_instance("problem", problem, KAnonProblem)
    check_instance("boxes", boxes, ClassBoxes)
    import pandas as pd

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
    import pandas as pd

    own = np.asarray([str(v) for v in labels], dtype=object)[codes.astype(np.int64)]
    pairs = pd.DataFrame({"cell": cells.to_numpy(), "own": own})
    for cell, value in pairs.drop_duplicates().itertuples(index=False):
        # (a label that itself contains "|" can only be checked as a substring)
        if value not in cell.split("|") and ("|" not in value or value not in cell):
            row = int(np.flatnonzero((pairs["cell"] == cell) & (pairs["own"] == value))[0])
            raise PrivacyViolation(
                f"row {row}: {name} value {value!r} is not in its released set {cell!r}"
            )


@dataclass
class KAnonResult:
    """Outcome of :func:`anonymize`.

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
    timings : dict
        Seconds: ``"solve"`` (the algorithm only), ``"total"`` (incl. validation, rendering and
        verification).
    info : dict
        Method-specific details (MILP status and gap, Split & Carry sub-problem sizes, ...).
    """

    table: Any
    classes: np.ndarray
    lower: Any
    upper: Any
    loss: LossBreakdown
    method: str
    k: int
    problem: KAnonProblem = field(repr=False)
    timings: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    @property
    def quasi_identifiers(self) -> list:
        """Names of the quasi-identifier columns, in the order of ``problem``."""
        return list(self.problem.names)

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

    def verify(self) -> None:
        """Re-check k-anonymity of :attr:`table`, box containment, and that every categorical
        cell's value set contains the row's own value; raise PrivacyViolation."""
        verify_k_anonymous(self.table, self.quasi_identifiers, self.k)
        verify_boxes(
            self.problem.x,
            self.lower.to_numpy(dtype=float),
            self.upper.to_numpy(dtype=float),
            self.classes,
            self.k,
        )
        p = self.problem
        for j in np.flatnonzero(p.categorical):
            _verify_value_sets(p.names[j], self.table[p.names[j]], p.labels[j], p.x[:, j])

    def loss_table(self):
        """Per-attribute loss: weight, objective share (Σ_i w_j D_ij) and NCP sum."""
        import pandas as pd

        return pd.DataFrame(
            {
                "weight": self.problem.weights,
                "objective": self.loss.per_attribute,
                "ncp": self.loss.ncp_per_attribute,
            },
            index=pd.Index(self.problem.names, name="attribute"),
        )

    def summary(self) -> str:
        """One line: method, n, k, class sizes, objective, GCP and solve time."""
        sizes = self.class_sizes
        return (
            f"{self.method}: n={len(self.classes)}, k={self.k}, {len(sizes)} classes "
            f"(sizes {sizes.min()}..{sizes.max()}), objective={self.objective:.6f}, "
            f"GCP={self.gcp:.6f}, solve {self.timings.get('solve', float('nan')):.3f} s"
        )

    def plot_class_sizes(self, ax=None):
        """Bar chart of the class-size histogram; returns the matplotlib Axes."""
        from privopt.report import axes_or_new

        ax = axes_or_new(ax, figsize=(5, 3.2))
        vals, counts = np.unique(self.class_sizes, return_counts=True)
        from matplotlib.ticker import MaxNLocator

        ax.bar(vals, counts, width=0.8, color="tab:blue")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.axvline(self.k - 0.5, color="tab:red", ls="--", lw=1, label=f"k = {self.k}")
        ax.set_xlabel("equivalence-class size")
        ax.set_ylabel("number of classes")
        ax.set_title(f"{self.method}: class sizes")
        ax.legend()
        return ax


def _run_initial(problem, **_):
    from privopt.kanon.initial import initial_solution

    return initial_solution(problem), {}


def _run_greedy(problem, *, progress="auto"):
    from privopt.kanon.greedy import greedy_search

    return greedy_search(problem, progress=progress), {}


def _run_milp(problem, **opts):
    from privopt.kanon.milp import solve_exact

    return solve_exact(problem, **opts)


def _run_split_carry(problem, **opts):
    from privopt.kanon.split_carry import split_and_carry

    return split_and_carry(problem, **opts)


def _run_mondrian(problem, **_):
    from privopt.kanon.baselines import mondrian

    return mondrian(problem), {}


def _run_kmember(problem, *, seed=0, **_):
    from privopt.kanon.baselines import k_member

    return k_member(problem, seed=seed), {}


#: method name -> options it accepts (anything else is rejected, so typos do not pass silently)
METHOD_OPTIONS: dict[str, set[str]] = {
    "initial": set(),
    "greedy": {"progress"},
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
        "progress",
        "executor",
        "parts",
        "chunking",
    },
    "mondrian": set(),
    "k_member": {"seed"},
}


def _check_option_values(options: dict) -> None:
    """Option values checked at the boundary (a negative time limit would otherwise run)."""
    from privopt._validation import check_int, check_positive

    for name in ("time_limit", "sub_time_limit"):
        if options.get(name) is not None:
            options[name] = check_positive(name, options[name], allow_inf=True)
    if "S" in options:
        options["S"] = check_int("S", options["S"], minimum=1)
    if options.get("seed") is not None:
        options["seed"] = check_int("seed", options["seed"], minimum=0)
    for name in ("equality_cardinality", "verbose"):
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
    quasi_identifiers: Sequence | None = None,
    *,
    weights=None,
    method: str = "greedy",
    categorical: Sequence | None = None,
    bounds: Mapping | None = None,
    categorical_denominator: str = "dom_minus_1",
    normalize_weights: bool = False,
    **options,
) -> KAnonResult:
    """k-anonymize a table by local-recoding generalization to intervals (Liang & Samavi 2020).

    Parameters
    ----------
    df : pandas.DataFrame, n rows. Non-QI columns pass through unchanged; rows keep their order.
    k : int, 1 <= k <= n. Every output equivalence class has at least k rows.
    quasi_identifiers : QI columns (default: all columns).
    weights : positive attribute weights ``w_j`` (sequence aligned with the QIs, or a mapping);
        default all 1. They scale the objective (eq. 34) and the sort (Var/w², eq. 36).
    method : ``"greedy"`` (Greedy Search, default), ``"split_carry"`` (Split & Carry MILPs),
        ``"milp"`` (exact MILP, small n only), ``"initial"`` (Initial Feasible Solution),
        ``"mondrian"`` or ``"k_member"`` (baselines).
    categorical : QI columns treated as categorical (value sets in the output; default the
        non-numeric ones).
    bounds : ``{column: (L, U)}`` permissible ranges replacing the data min/max.
    categorical_denominator : ``"dom_minus_1"`` (default) or ``"dom"`` for the categorical NCP.
    normalize_weights : rescale the weights to sum to 1 (eq. 35).
    **options : method options: ``progress`` (greedy, split_carry: ``True``, ``False`` or
        ``"auto"``, a bar on stderr); ``time_limit`` (s), ``formulation`` ("auto", "set_partition"
        or "paper"), ``rel_gap``, ``max_columns``, ``equality_cardinality`` (milp); ``S``,
        ``sub_time_limit``, ``time_limit``, ``formulation``, ``executor`` (a
        ``concurrent.futures.Executor`` for parallel parts), ``parts`` (split_carry);
        ``seed`` (k_member).

    Returns
    -------
    KAnonResult, already verified k-anonymous.

    Raises
    ------
    InvalidInput : bad table, k, QIs, weights, bounds or method.
    privopt.errors.PrivacyViolation : never expected; raised instead of returning a result
        that fails the k-anonymity check.

    Examples
    --------
    >>> from privopt.kanon import anonymize, datasets
    >>> res = anonymize(datasets.fars_20(), k=3, weights=[0.25] * 4)
    >>> round(res.objective, 6)
    7.127016
    """
    import pandas as pd

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
    problem = build_problem(
        df,
        k,
        quasi_identifiers,
        weights=weights,
        categorical=categorical,
        bounds=bounds,
        categorical_denominator=categorical_denominator,
        normalize_weights=normalize_weights,
    )
    t1 = time.perf_counter()
    labels, info = METHODS[method](problem, **options)
    t2 = time.perf_counter()
    boxes = class_boxes(problem, labels)
    loss = information_loss(problem, boxes)
    table = render_table(df, problem, boxes)
    lower = pd.DataFrame(boxes.lo, columns=problem.names, index=df.index)
    upper = pd.DataFrame(boxes.hi, columns=problem.names, index=df.index)
    result = KAnonResult(
        table=table,
        classes=boxes.labels,
        lower=lower,
        upper=upper,
        loss=loss,
        method=method,
        k=problem.k,
        problem=problem,
        info=info,
    )
    result.verify()  # issue item 4: a result that fails the check is never returned
    result.timings = {"solve": t2 - t1, "total": time.perf_counter() - t0}
    return result
