"""Greedy Search (paper Algorithm 2; spec §4 and §7.10), inner loop compiled with Numba.

Semantics (spec §4.3): go down the variance-sorted list; the seed is the first remaining record;
the class grows k-1 times by the remaining record minimizing the per-record weighted GCP
``g(E ∪ {x}) = Σ_j w_j NCP_j(E ∪ {x})``, ties to the earliest in sorted order; stop after ⌊n/k⌋
classes; each of the n mod k leftovers goes, in sorted order, to the class minimizing the
*absolute* ``g(C ∪ {r})`` (Table 7 rules out the increase criterion), ties to the oldest class.
Costs come from :mod:`privopt.kanon.box_cost`, exact integers where the data allow it, so that
ties follow this rule and not rounding.

The compiled scan is exact (it returns what a full scan returns) but stops early in two cases:
a candidate inside the current box has the least possible cost (g is monotone under adding
records), and when the primary sort key is numeric, its term is non-decreasing along the sorted
list, so once a lower bound exceeds the best cost no later record can win.
"""

from __future__ import annotations

from fractions import Fraction

import numba
import numpy as np

from privopt._progress import check_progress, progress_bar
from privopt._validation import check_bool, check_instance, check_permutation
from privopt.kanon.box_cost import (
    BoxCost,
    add_to_class,
    box_cost,
    class_cost,
    clear_class,
    cost_with,
    exceeds,
    start_class,
)
from privopt.kanon.initial import key_order, variance_sort
from privopt.kanon.problem import KAnonProblem

__all__ = ["greedy_search", "greedy_search_reference"]


@numba.njit(cache=True, nogil=True)
def _unlink(nxt, prv, r, head, end):  # pragma: no cover - compiled
    """Remove run r from the doubly linked list of runs with rows left; returns the head."""
    a, b = prv[r], nxt[r]
    if a >= 0:
        nxt[a] = b
    else:
        head = b
    if b != end:
        prv[b] = a
    return head


@numba.njit(cache=True, nogil=True)
def _best_run(
    values, head, end, nxt, first, mn, mx, distinct, cnt, coef, is_cat, primary, exact
):  # pragma: no cover
    """First run (in sorted order) whose rows give the least ``g(E ∪ {x})``.

    All rows of a run are identical, so one cost per run gives the same argmin as a scan of
    the rows, and the run's first remaining row is the earliest row of least cost.
    """
    cur = class_cost(mn, mx, distinct, coef, is_cat)
    rest = cur
    if primary >= 0:
        rest = cur - coef[primary] * (mx[primary] - mn[primary])
    best_r = -1
    best = cur
    r = head
    while r != end:
        row = first[r]
        cost = cost_with(values, row, mn, mx, distinct, cnt, coef, is_cat)
        if best_r < 0 or cost < best:  # strict: ties stay with the earliest run
            best, best_r = cost, r
            if cost <= cur:
                break  # inside the box: nothing can be cheaper
        elif primary >= 0:
            v = values[row, primary]
            hi = mx[primary] if mx[primary] > v else v
            if exceeds(coef[primary] * (hi - mn[primary]) + rest, best, exact):
                break  # the primary key only grows from here on
        r = nxt[r]
    return best_r


@numba.njit(cache=True, nogil=True)
def _greedy_classes(
    values, run_start, k, coef, is_cat, primary, exact, state, cls, c_start, c_stop
):  # pragma: no cover
    """Build classes ``c_start .. c_stop-1``, writing their ids into ``cls`` (n,) per sorted
    position, and return the new head of the list of runs with rows left.

    ``state`` is :func:`_greedy_state`'s tuple; its arrays carry the list of runs from one call
    to the next, so classes can be built in slices (a progress bar advances between them). Each
    run hands out its rows front to back.
    """
    head, end, nxt, prv, first, mn, mx, distinct, cnt, members = state
    for c in range(c_start, c_stop):
        for step in range(k):
            r = head
            if step > 0:
                r = _best_run(
                    values,
                    head,
                    end,
                    nxt,
                    first,
                    mn,
                    mx,
                    distinct,
                    cnt,
                    coef,
                    is_cat,
                    primary,
                    exact,
                )
            p = first[r]
            first[r] += 1
            if first[r] == run_start[r + 1]:
                head = _unlink(nxt, prv, r, head, end)
            cls[p] = c
            members[step] = p
            if step == 0:  # the seed: the first remaining record
                start_class(values, p, is_cat, mn, mx, distinct, cnt)
            else:
                add_to_class(values, p, is_cat, mn, mx, distinct, cnt)
        clear_class(values, members, k, is_cat, cnt)
    return head


def _greedy_state(values: np.ndarray, run_start: np.ndarray, k: int, n_slots: int) -> tuple:
    """Initial state of :func:`_greedy_classes`: ``(head, end, nxt, prv, first, mn, mx,
    distinct, cnt, members)``, a doubly linked list over the R runs of identical rows (all with
    rows left) and the scratch arrays of the current class's box."""
    m = values.shape[1]
    n_runs = len(run_start) - 1
    return (
        0,
        n_runs,
        np.arange(1, n_runs + 1),
        np.arange(-1, n_runs - 1),
        run_start[:-1].copy(),  # first remaining row of each run
        np.empty(m, dtype=values.dtype),
        np.empty(m, dtype=values.dtype),
        np.zeros(m, dtype=np.int64),
        np.zeros(max(n_slots, 1), dtype=np.int64),
        np.empty(k, dtype=np.int64),
    )


def _greedy_kernel(
    values, run_start, k, coef, is_cat, n_slots, primary, exact, progress="auto"
) -> np.ndarray:
    """Class id per sorted position for the first ⌊n/k⌋ classes; leftovers get -1.

    With a progress bar shown, the classes are built in about 100 slices (one compiled call
    each) and the bar advances between them; otherwise in one call.
    """
    n = values.shape[0]
    n_classes = n // k
    cls = np.full(n, -1, dtype=np.int64)
    state = _greedy_state(values, run_start, k, n_slots)
    with progress_bar(progress, total=n_classes, desc="Greedy", unit="class") as bar:
        step = max(1, -(-n_classes // 100)) if not bar.disable else max(n_classes, 1)
        for c in range(0, n_classes, step):
            stop = min(c + step, n_classes)
            head = _greedy_classes(
                values, run_start, k, coef, is_cat, primary, exact, state, cls, c, stop
            )
            state = (head, *state[1:])
            bar.update(stop - c)
    return cls


def run_starts(values: np.ndarray) -> np.ndarray:
    """(R+1,) start of every run of identical consecutive rows of ``values`` (n, m), and n."""
    change = np.flatnonzero(np.any(values[1:] != values[:-1], axis=1)) + 1
    return np.concatenate([[0], change, [len(values)]]).astype(np.int64)


def _assign_leftovers(cost: BoxCost, cls: np.ndarray) -> None:
    """Sequentially attach each leftover (cls == -1, in sorted order) to argmin g(C ∪ {r})."""
    q = int(cls.max()) + 1
    for r in np.flatnonzero(cls < 0):
        cls[r] = int(np.argmin(cost.row_costs(cls, q, int(r))))  # first minimum = oldest class


def greedy_search(
    problem: KAnonProblem,
    order: np.ndarray | None = None,
    *,
    exact: bool = True,
    progress: bool | str = "auto",
) -> np.ndarray:
    """Greedy Search partition: class id per row (n,), classes numbered by creation.

    Parameters
    ----------
    problem : the validated problem (n rows, m QIs, k).
    order : optional row order (n,); default :func:`variance_sort`.
    exact : compare costs in exact integer arithmetic where the data allow it (see
        :mod:`privopt.kanon.box_cost`); False forces float64.
    progress : ``True``, ``False`` or ``"auto"`` (default: on under the command line unless
        ``--quiet``, else only on a terminal once the call has run 2 s): a bar on stderr over
        the ⌊n/k⌋ classes.

    Returns
    -------
    (n,) int64 class ids; every class has between k and k + (n mod k) rows.
    """
    check_instance("problem", problem, KAnonProblem)
    progress = check_progress(progress)
    order = (
        variance_sort(problem) if order is None else check_permutation("order", order, problem.n)
    )
    cost = box_cost(problem, order, exact=check_bool("exact", exact))
    primary = int(key_order(problem)[0])
    if problem.categorical[primary]:
        primary = -1  # the monotone lower bound only holds for a numeric primary key
    cls = _greedy_kernel(
        cost.values,
        run_starts(cost.values),
        problem.k,
        cost.coef,
        cost.is_cat,
        cost.n_slots,
        primary,
        cost.exact,
        progress,
    )
    _assign_leftovers(cost, cls)
    labels = np.empty(problem.n, dtype=np.int64)
    labels[order] = cls
    return labels


def _reference_cost(problem: KAnonProblem, exact: bool):
    """``g(rows)`` from its definition, in Fractions (exact) or float64 (as ``(w/den)·span``
    summed over the columns in order, the kernel's rounding)."""
    num = (lambda v: Fraction(float(v)).limit_denominator(10**6)) if exact else float
    w = [num(v) for v in problem.weights]
    den = [num(d) for d in np.where(problem.categorical, problem.cat_denominator, problem.ranges)]
    factor = [wj / dj for wj, dj in zip(w, den, strict=True)]

    def g(rows):
        sub = problem.x[rows]
        total = num(0)
        for j in range(problem.m):
            if problem.categorical[j]:
                total += factor[j] * (len(np.unique(sub[:, j])) - 1)
            else:
                total += factor[j] * num(sub[:, j].max() - sub[:, j].min())
        return total

    return g


def greedy_search_reference(problem: KAnonProblem, *, exact: bool = False) -> np.ndarray:
    """Slow full-scan Greedy Search from the definition: the test oracle of
    :func:`greedy_search`. ``exact=True`` computes every cost in rational arithmetic
    (integer data, rational weights), so that ties follow the spec's rule exactly."""
    order = list(variance_sort(problem))
    g = _reference_cost(problem, exact)

    def first_min(costs):
        return min(range(len(costs)), key=costs.__getitem__)  # ties: the first one

    classes: list[list[int]] = []
    remaining = order
    for _ in range(problem.n // problem.k):
        eq = [remaining.pop(0)]
        for _ in range(problem.k - 1):
            eq.append(remaining.pop(first_min([g([*eq, r]) for r in remaining])))
        classes.append(eq)
    for r in remaining:
        classes[first_min([g([*c, r]) for c in classes])].append(r)
    labels = np.empty(problem.n, dtype=np.int64)
    for c, rows in enumerate(classes):
        labels[rows] = c
    return labels
