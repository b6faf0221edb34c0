"""Worked examples of the k-anonymity paper (issue 6, bench (a)): FARS-20, k = 3.

Prints every method's objective beside the paper's figure and the solve time, and checks each
output with pycanon when installed. Run: ``python bench/kanon_worked_examples.py``.
"""

from __future__ import annotations

import time

from privopt.kanon import anonymize, datasets

PAPER = {
    ("milp", "1/4"): 4.816532,
    ("split_carry", "1/4"): 4.816532,
    ("greedy", "1/4"): 7.127016,
    ("initial", "1/4"): 7.943548,
    ("milp", "App. A"): 4.114516,
    ("greedy", "App. A"): 4.201613,
}
WEIGHTS = {"1/4": [0.25] * 4, "App. A": [0.8, 0.05, 0.1, 0.05]}


def pycanon_level(res):
    try:
        from pycanon import anonymity
    except ImportError:
        return "n/a"
    return anonymity.k_anonymity(res.table.astype(str), res.quasi_identifiers)


def main() -> None:
    df = datasets.fars_20()
    print("| weights | method | objective | paper | time (s) | pycanon k |")
    print("|---|---|---|---|---|---|")
    for wname, w in WEIGHTS.items():
        for method in ["milp", "split_carry", "greedy", "initial", "k_member", "mondrian"]:
            t = time.perf_counter()
            res = anonymize(df, 3, weights=w, method=method)
            el = time.perf_counter() - t
            paper = PAPER.get((method, wname), "")
            print(
                f"| {wname} | {method} | {res.objective:.6f} | {paper} | {el:.3f} | "
                f"{pycanon_level(res)} |"
            )
    t = time.perf_counter()
    res = anonymize(
        df, 3, weights=WEIGHTS["1/4"], method="milp", formulation="paper", time_limit=60
    )
    print(
        f"\npaper big-M formulation (eqs. 22-28), 60 s limit: objective {res.objective:.6f}, "
        f"status {res.info['status']}, gap {res.info.get('mip_gap')}, "
        f"{time.perf_counter() - t:.1f} s"
    )


if __name__ == "__main__":
    main()
