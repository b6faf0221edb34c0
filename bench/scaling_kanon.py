"""k-anonymity scaling (issue 17 item 5): time and peak RSS at 3–5 sizes, log-log slopes, plot.

``kanon(sizes, method, data, out)`` is the family entry for a shared ``bench/scaling.py``: it
runs each size in a fresh child (``bench/kanon_measure.py``, which ``anonymize``s and so
verifies the output k-anonymous), fits time ∝ n^a and peak RSS ∝ n^b by least squares on the
logs, writes ``out`` (a PNG with the points and fitted lines) and returns the measurements and
exponents. The paper reports no timings to plot beside them (its figures did not survive as
numbers). Progress goes to stderr; as a script it prints a markdown table.

    python bench/scaling_kanon.py [--method greedy] [--data adult] [--sizes 100000 300000 1000000]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kanon_measure import run_child
from scaling import fitted_result, plot_runs

DEFAULT_SIZES = {"greedy": (100_000, 300_000, 1_000_000), "split_carry": (10_000, 30_000, 100_000)}


def kanon(
    sizes=None, method: str = "greedy", data: str = "adult", out: str | Path = "kanon_scaling.png"
) -> dict:
    """Measure ``anonymize(..., method=method)`` (k = 3) on ``data`` at ``sizes``; returns
    {"family", "method", "data", "sizes", "solve_s", "total_s", "peak_gib", "time_exponent",
    "memory_exponent", "plot"} (time = the algorithm; total adds validation, rendering and the
    k-anonymity check)."""
    sizes = list(sizes or DEFAULT_SIZES.get(method, DEFAULT_SIZES["greedy"]))
    solve_s, total_s, peak = [], [], []
    for n in sizes:
        print(f"kanon {method} scaling: n = {n:.0e}", file=sys.stderr, flush=True)
        r = run_child(["--method", method, "--data", data, "--n", str(n)])
        if "error" in r:
            raise RuntimeError(f"kanon {method} at n = {n} failed: {r['error']}")
        solve_s.append(r["solve"])
        total_s.append(r["total"])
        peak.append(r["rss_mib"] / 1024)
    result = fitted_result(
        f"kanon ({method})",
        sizes,
        {"solve_s": solve_s, "total_s": total_s, "peak_gib": peak},
        ("solve_s", "peak_gib"),
        out,
        method=method,
        data=data,
    )
    plot(result, Path(out))
    return result


def plot(result: dict, out: Path) -> None:
    plot_runs(
        [("measured", result)],
        out,
        keys=("solve_s", "peak_gib"),
        labels=(f"{result['method']} time (s)", "peak RSS (GiB)"),
        size_label=f"rows n ({result['data']}, k = 3)",
        title=f"k-anonymity (privopt.kanon, {result['method']}), one process",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="greedy")
    parser.add_argument("--data", default="adult")
    parser.add_argument("--sizes", nargs="+", type=int, default=None)
    parser.add_argument("--out", default="kanon_scaling.png")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    r = kanon(args.sizes, args.method, args.data, args.out)
    print("| n | solve (s) | end to end (s) | peak RSS (GiB) |")
    print("|---|---|---|---|")
    for n, t, tt, m in zip(r["sizes"], r["solve_s"], r["total_s"], r["peak_gib"], strict=True):
        print(f"| {n:.0e} | {t:.2f} | {tt:.2f} | {m:.2f} |")
    print(f"\ntime ∝ n^{r['time_exponent']:.2f}, peak RSS ∝ n^{r['memory_exponent']:.2f}")
    print(f"load average at end: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
