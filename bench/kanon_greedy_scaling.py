"""Greedy Search scaling (issue 6 bench (c), issue 17 item 4 target); opt-in.

Each measurement runs in its own process (``kanon_measure.py``), with its peak RSS. Rows: UCI
Adult replicated to n (``--adult``: 6 QIs, 3 categorical), a CENSUS 4-attribute file
(``--data``), or synthetic CENSUS-like marginals (default). The IFS runs as the in-run
baseline of the same data; ``--baseline REV`` also runs Greedy from git revision REV (today's
code) and prints the time ratio. ``anonymize`` verifies every output k-anonymous.

    python bench/kanon_greedy_scaling.py --adult --sizes 1000000 --baseline b67ca32
"""

from __future__ import annotations

import argparse
import os

from kanon_measure import extract_revision, run_child


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--data", default=None, help="a CENSUS 4-attribute CSV")
    ap.add_argument(
        "--adult",
        nargs="?",
        const="",
        default=None,
        help="UCI Adult (optional path to adult.data; default $PRIVOPT_DATA/adult/adult.data)",
    )
    ap.add_argument("--baseline", default=None, help="git revision to compare with")
    ap.add_argument("--pycanon", action="store_true", help="check the greedy table with pycanon")
    args = ap.parse_args()
    data = "adult" if args.adult is not None else (args.data or "synthetic")
    if args.adult:
        os.environ["ADULT_DATA"] = args.adult
    base_dir = extract_revision(args.baseline) if args.baseline else None
    print(
        "| n | data | greedy solve (s) | end to end (s) | IFS solve (s) | greedy objective | "
        "IFS objective | peak RSS (MiB) | baseline solve (s) | speed-up | baseline objective | "
        "pycanon k |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        common = ["--data", data, "--n", str(n), "--k", str(args.k)]
        g = run_child(["--method", "greedy", *common] + (["--pycanon"] if args.pycanon else []))
        i = run_child(["--method", "initial", *common])
        b = run_child(["--method", "greedy", *common], base_dir) if base_dir else None
        if "error" in g:
            print(f"| {n} | {data} | error: {g['error']} |")
            continue
        base = "-" if b is None else ("error" if "error" in b else f"{b['solve']:.2f}")
        ratio = "-" if b is None or "error" in b else f"{b['solve'] / g['solve']:.1f}x"
        bobj = "-" if b is None or "error" in b else f"{b['objective']:.2f}"
        nan = float("nan")
        print(
            f"| {n} | {data} | {g['solve']:.2f} | {g['total']:.2f} | {i.get('solve', nan):.2f} | "
            f"{g['objective']:.2f} | {i.get('objective', nan):.2f} | {g['rss_mib']:.0f} | "
            f"{base} | {ratio} | {bobj} | {g.get('pycanon_k', '-')} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
