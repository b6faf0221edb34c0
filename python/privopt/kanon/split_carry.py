"""Split & Carry (paper Algorithm 1; spec §3.3–3.4 and §7.7–7.9).

The variance-sorted rows are cut into the IFS k-sets; chunks of ``S`` k-sets are solved as MILPs
one after the other (the last chunk may hold fewer k-sets and the remainder rows). The whole
equivalence classes (identical boxes) that contain one of the last k rows of a chunk are carried
into the next sub-problem; every other class is final. Each sub-problem starts from "carried
classes unchanged + new k-sets as classes", which is feasible, so a time limit can always fall
back to a valid answer, and by induction ``OPT ≤ S&C ≤ IFS`` when every sub-problem is solved
to optimality (§8.5 property 5).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from privopt._validation import check_int, check_positive
from privopt.kanon.initial import initial_ksets, split_large_classes, variance_sort
from privopt.kanon.milp import solve_rows
from privopt.kanon.problem import KAnonProblem

__all__ = ["split_and_carry"]


def split_and_carry(
    problem: KAnonProblem,
    *,
    S: int = 3,
    sub_time_limit: float | None = 10.0,
    time_limit: float | None = None,
    formulation: str = "auto",
    verbose: bool = False,
    progress=None,
):
    """Split & Carry partition of ``problem``.

    Parameters
    ----------
    S : number of k-sets per chunk (paper: S ≥ 2; experiments use 3, 4, 5).
    sub_time_limit : seconds per sub-problem (early termination, §1.3; default 10, None for no
        limit); the incumbent, or the feasible start, is used when it expires.
    time_limit : total seconds, spread evenly as ``T / #sub-problems`` (the paper's rule);
        replaces ``sub_time_limit`` when given.
    formulation : MILP formulation of each sub-problem, see :func:`privopt.kanon.milp.solve_rows`.
        A sub-problem that is not proven optimal (time limit, capped column set) keeps its
        best partition, never worse than its start; ``uncertified_subproblems`` counts them.
    progress : optional callable ``progress(done, total)`` after each sub-problem.

    Returns
    -------
    labels : (n,) class id per row; info : dict with ``n_subproblems``, ``sub_sizes`` (list),
    ``size_counts`` (Table 8-style {size: count}), ``lemma2_bound`` = k(2k−1+S),
    ``time_limited`` and ``fallbacks`` (counts), ``sub_objectives`` (solver objective per
    sub-problem), ``sub_times`` (s per sub-problem), ``milp_time`` (s),
    ``restricted_subproblems``, ``uncertified_subproblems``.
    """
    S = check_int("S", S, minimum=1)
    if sub_time_limit is not None:
        sub_time_limit = check_positive("sub_time_limit", sub_time_limit)
    k = problem.k
    x, lo, hi, coef, integer = problem.milp_columns()
    order = variance_sort(problem)
    ksets = initial_ksets(order, k)
    chunks = [ksets[i : i + S] for i in range(0, len(ksets), S)]  # ⌈⌊n/k⌋/S⌉ (§7.7)
    if time_limit is not None:
        sub_time_limit = check_positive("time_limit", time_limit) / len(chunks)
    labels = np.full(problem.n, -1, dtype=np.int64)
    next_id = 0
    carry_rows = np.empty(0, dtype=np.int64)
    carry_lab = np.empty(0, dtype=np.int64)
    sizes, objs, sub_times = [], [], []
    n_limited = n_fallback = n_uncertified = n_restricted = 0
    milp_time = 0.0
    for t, chunk in enumerate(chunks):
        new_rows = np.concatenate(chunk)
        rows = np.concatenate([carry_rows, new_rows])
        base = int(carry_lab.max()) + 1 if carry_lab.size else 0
        start = np.concatenate(
            [carry_lab] + [np.full(len(c), base + i) for i, c in enumerate(chunk)]
        )
        sub_lab, info = solve_rows(
            x[rows],
            lo,
            hi,
            coef,
            integer,
            k,
            start_labels=start,
            formulation=formulation,
            time_limit=sub_time_limit,
            verbose=verbose,
        )
        sizes.append(len(rows))
        objs.append(info.get("objective", math.nan))
        n_limited += info.get("status") == "time_limit"
        n_fallback += bool(info.get("fallback"))
        n_uncertified += info["status"] != "optimal"
        n_restricted += info["status"] == "restricted"
        milp_time += info.get("solve_time", 0.0)
        sub_times.append(info.get("solve_time", 0.0))
        sub_lab = split_large_classes(sub_lab, k)
        if t == len(chunks) - 1:
            carried = np.zeros(len(rows), dtype=bool)  # nothing is carried out of the last
        else:
            boundary = sub_lab[len(rows) - k :]  # last k rows of the chunk (§7.7)
            carried = np.isin(sub_lab, boundary)  # their whole classes (§3.4)
        fin = ~carried
        if fin.any():
            _, fin_lab = np.unique(sub_lab[fin], return_inverse=True)
            labels[rows[fin]] = next_id + fin_lab.ravel()
            next_id += int(fin_lab.max()) + 1
        carry_rows = rows[carried]
        _, carry_lab = np.unique(sub_lab[carried], return_inverse=True)
        carry_lab = carry_lab.ravel()
        if progress is not None:
            progress(t + 1, len(chunks))
    info = {
        "S": S,
        "n_subproblems": len(chunks),
        "sub_sizes": sizes,
        "size_counts": dict(sorted(Counter(sizes).items())),
        "lemma2_bound": k * (2 * k - 1 + S),
        "time_limited": n_limited,
        "fallbacks": n_fallback,
        "sub_objectives": objs,
        "sub_times": sub_times,
        "milp_time": milp_time,
        "sub_time_limit": sub_time_limit,
        "formulation": formulation,
        "uncertified_subproblems": n_uncertified,
        "restricted_subproblems": n_restricted,
    }
    return labels, info
