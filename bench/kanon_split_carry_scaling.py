"""Split & Carry at scale (issue 17 item 4): parts on a Dask LocalCluster vs serial; opt-in.

Each measurement runs in its own process (``kanon_measure.py``) with its peak RSS (the Dask
workers' largest RSS separately). Per size: Greedy (the loss to beat), Split & Carry serial,
Split & Carry in parts on a 2-worker ``distributed.LocalCluster``, and with ``--baseline REV``
the serial Split & Carry of git revision REV (today's code) up to ``--baseline-max-n`` rows,
and with ``--paper-chunks`` the serial Split & Carry with the paper's chunks of S k-sets
(``chunking="paper"``) against the default chunks that do not cut runs of identical rows short.
``anonymize`` verifies every output k-anonymous.

    python bench/kanon_split_carry_scaling.py --sizes 100000 1000000 --baseline b67ca32
    python bench/kanon_split_carry_scaling.py --sizes 1000000 --data adult --paper-chunks
"""

from __future__ import annotations

import argparse

from kanon_measure import extract_revision, run_child


def _row(n, label, r, greedy, ref_time):
    if "error" in r:
        return f"| {n} | {label} | error: {r['error']} |"
    vs_greedy = r["objective"] / greedy["objective"] if "objective" in greedy else float("nan")
    speed = f"{ref_time / r['solve']:.2f}x" if ref_time else "-"
    extra = r.get("uncertified_subproblems", "-")
    return (
        f"| {n} | {label} | {r['solve']:.1f} | {r['objective']:.2f} | {vs_greedy:.3f} | {speed} | "
        f"{r['rss_mib']:.0f} | {r['children_rss_mib']:.0f} | {r.get('n_subproblems', '-')} | "
        f"{extra} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--S", type=int, default=3)
    ap.add_argument("--data", default="synthetic", help="synthetic, adult, or a CENSUS file")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--parts", type=int, default=0, help="parts (default: one per 50,000 rows)")
    ap.add_argument("--serial-max-n", type=int, default=10**6)
    ap.add_argument("--baseline", default=None, help="git revision to compare with")
    ap.add_argument("--baseline-max-n", type=int, default=100_000)
    ap.add_argument("--paper-chunks", action="store_true", help="also the paper's chunks, serial")
    args = ap.parse_args()
    base_dir = extract_revision(args.baseline) if args.baseline else None
    print(
        "| n | run | solve (s) | objective | / greedy | speed-up vs first row | peak RSS (MiB) | "
        "workers' peak RSS (MiB) | sub-problems | uncertified |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        common = ["--data", args.data, "--n", str(n), "--k", str(args.k), "--S", str(args.S)]
        greedy = run_child(["--method", "greedy", *common])
        print(_row(n, "greedy", greedy, greedy, None), flush=True)
        runs = []
        if base_dir is not None and n <= args.baseline_max_n:
            runs.append(("S&C serial, baseline", ["--method", "split_carry", *common], base_dir))
        if n <= args.serial_max_n:
            if args.paper_chunks:
                paper = ["--method", "split_carry", *common, "--chunking", "paper"]
                runs.append(("S&C serial, paper chunks", paper, None))
            runs.append(("S&C serial", ["--method", "split_carry", *common], None))
        parts = args.parts or max(2, -(-n // 50_000))
        dask = ["--parts", str(parts), "--dask-workers", str(args.workers)]
        runs.append(
            (
                f"S&C {parts} parts, Dask x{args.workers}",
                ["--method", "split_carry", *common, *dask],
                None,
            )
        )
        ref = None
        for label, cmd, base in runs:
            r = run_child(cmd, base, timeout=7200)
            print(_row(n, label, r, greedy, ref), flush=True)
            ref = ref or r.get("solve")


if __name__ == "__main__":
    main()
