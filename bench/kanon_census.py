"""Fig. 5/6-shaped runs on the CENSUS 4-attribute files (issue 6, bench (b)); opt-in.

Loss and time of every method side by side, the Mondrian/IFS loss ratio (paper: 9-56x), and
Split & Carry's Table 8-style sub-problem size counts. Needs the data folder:

    python bench/kanon_census.py --data ../shared/data/kanon/census --sizes 5000 --k 3 \
        --S 3 4 5 [--methods ...] [--anonypy]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from privopt.kanon import anonymize, datasets


def pick_file(root: Path, n: int) -> Path:
    files = sorted(root.glob("*k_4attr.csv"), key=lambda p: int(p.name.split("k")[0]))
    for f in files:
        if int(f.name.split("k")[0]) * 1000 >= n:
            return f
    raise SystemExit(f"no CENSUS file with {n} rows under {root}")


def anonypy_mondrian_loss(df, k):
    """anonypy's Mondrian (outside cross-check): loss of its partition on tight boxes, or None."""
    try:
        from anonypy.mondrian import Mondrian
    except ImportError:
        return None
    import numpy as np
    from privopt.kanon import build_problem, information_loss

    d = df.reset_index(drop=True)
    parts = Mondrian(d, list(d.columns)).partition(k)
    labels = np.empty(len(d), dtype=np.int64)
    for c, idx in enumerate(parts):
        labels[np.asarray(idx)] = c
    return information_loss(build_problem(d, k), labels).objective


def pycanon_k(res):
    """k-anonymity level of the released table for the outside checker pycanon ("n/a" if absent)."""
    try:
        from pycanon import anonymity
    except ImportError:
        return "n/a"
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return anonymity.k_anonymity(res.table.astype(str), res.quasi_identifiers)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000])
    ap.add_argument("--k", type=int, nargs="+", default=[3])
    ap.add_argument("--S", type=int, nargs="+", default=[3])
    ap.add_argument(
        "--methods", nargs="+", default=["initial", "greedy", "k_member", "mondrian", "split_carry"]
    )
    ap.add_argument("--anonypy", action="store_true", help="also run anonypy's Mondrian")
    args = ap.parse_args()
    for m in ("greedy", "k_member", "split_carry"):  # compile / load the kernels untimed
        anonymize(datasets.fars_20(), 3, method=m)
    print("| n | k | method | S | objective | / greedy | time (s) | pycanon k | note |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        df = datasets.load_census(pick_file(args.data, n), n=n)
        for k in args.k:
            losses = {}
            for method in args.methods:
                for S in args.S if method == "split_carry" else [None]:
                    opts = {"S": S} if S else {}
                    res = anonymize(df, k, method=method, **opts)
                    losses[(method, S)] = res.objective
                    note = ""
                    if method == "split_carry":
                        note = (
                            f"{res.info['n_subproblems']} subs, sizes "
                            f"{res.info['size_counts']}, bound {res.info['lemma2_bound']}, "
                            f"time-limited {res.info['time_limited']}, fallbacks "
                            f"{res.info['fallbacks']}, restricted "
                            f"{res.info['restricted_subproblems']}, uncertified "
                            f"{res.info['uncertified_subproblems']}, slowest sub "
                            f"{max(res.info['sub_times']):.2f} s"
                        )
                    g = losses.get(("greedy", None))
                    rel = f"{res.objective / g:.3f}" if g else ""
                    print(
                        f"| {n} | {k} | {method} | {S or ''} | {res.objective:.4f} | {rel} | "
                        f"{res.timings['solve']:.2f} | {pycanon_k(res)} | {note} |",
                        flush=True,
                    )
            if args.anonypy:
                t = time.perf_counter()
                loss = anonypy_mondrian_loss(df, k)
                if loss is not None:
                    print(
                        f"| {n} | {k} | anonypy Mondrian |  | {loss:.4f} |  | "
                        f"{time.perf_counter() - t:.2f} |  | outside cross-check |"
                    )
            if ("mondrian", None) in losses and ("initial", None) in losses:
                ratio = losses[("mondrian", None)] / losses[("initial", None)]
                print(
                    f"| {n} | {k} | Mondrian / IFS loss |  | {ratio:.2f}x |  |  |  | paper 9-56x |"
                )


if __name__ == "__main__":
    main()
