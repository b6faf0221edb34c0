"""Greedy Search scaling (issue 6, bench (c)); opt-in.

Rows: the CENSUS 4-attribute file (real, up to 100k) when ``--data`` is given, else synthetic
rows with CENSUS-like marginals (``privopt.kanon.datasets.synthetic_census``). The IFS runs in
the same process as the baseline (time ratio printed).

    python bench/kanon_greedy_scaling.py --sizes 100000 1000000 [--data .../census/100k_4attr.csv]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd
from privopt.kanon import anonymize, build_problem, datasets, greedy_search, initial_solution


def pycanon_k(df, problem, labels, enabled: bool):
    """k-anonymity level of the rendered greedy table for pycanon (``--pycanon``), else "-"."""
    if not enabled:
        return "-"
    try:
        from pycanon import anonymity
    except ImportError:
        return "n/a"
    import warnings

    from privopt.kanon import class_boxes, render_table

    table = render_table(df, problem, class_boxes(problem, labels))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return anonymity.k_anonymity(table.astype(str), list(problem.names))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--data", default=None, help="CENSUS CSV to use for n <= its rows")
    ap.add_argument(
        "--adult",
        default=None,
        help="adult.data path: use UCI Adult (6 QIs, 3 categorical) replicated to n",
    )
    ap.add_argument(
        "--uniform",
        action="store_true",
        help="continuous uniform rows (no duplicates): Greedy's O(n^2) worst case",
    )
    ap.add_argument(
        "--pycanon",
        action="store_true",
        help="also check the greedy table with pycanon (slow at 10^6 rows)",
    )
    args = ap.parse_args()
    real = datasets.load_census(args.data) if args.data else None
    adult = None
    if args.adult:
        qi = ["age", "education-num", "hours-per-week", "sex", "race", "marital-status"]
        adult = datasets.load_adult(args.adult)[qi]
    anonymize(datasets.fars_20(), 3)  # compile / load the Numba kernel outside the timings
    print(
        "| n | source | greedy (s) | IFS (s) | greedy objective | IFS objective | "
        "pycanon k (greedy) |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        if args.uniform:
            import numpy as np

            rng = np.random.default_rng(0)
            df = pd.DataFrame(rng.random((n, 4)), columns=list("abcd"))
            src = "uniform"
        elif adult is not None:
            reps = -(-n // len(adult))
            df = pd.concat([adult] * reps, ignore_index=True).iloc[:n]
            src = f"Adult x{reps}"
        elif real is not None and n <= len(real):
            df, src = real.iloc[:n], "CENSUS"
        else:
            df, src = datasets.synthetic_census(n, seed=0), "synthetic"
        p = build_problem(df, args.k)
        t = time.perf_counter()
        g = greedy_search(p)
        tg = time.perf_counter() - t
        t = time.perf_counter()
        i = initial_solution(p)
        ti = time.perf_counter() - t
        from privopt.kanon import class_boxes, information_loss, verify_boxes

        # our own check on both partitions (untimed; anonymize() would do it too)
        for lab in (g, i):
            b = class_boxes(p, lab)
            verify_boxes(p.x, b.lo, b.hi, b.labels, args.k)
        print(
            f"| {n} | {src} | {tg:.2f} | {ti:.3f} | {information_loss(p, g).objective:.2f} | "
            f"{information_loss(p, i).objective:.2f} | {pycanon_k(df, p, g, args.pycanon)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
