"""DPM scaling (issue 17 item 5): fit time and peak RSS at 3–5 sizes, fitted log-log slopes, plot.

``cluster(sizes, d, out)`` is the family entry for a shared ``bench/scaling.py``: it runs each
size in a fresh child (``bench/dpm_scale.py``), fits time ∝ n^a and peak RSS ∝ n^b by least
squares on the logs, writes ``out`` (a PNG with the points and the fitted lines) and returns the
measurements and exponents. Progress goes to stderr; as a script it prints a markdown table.

    python bench/scaling_cluster.py [--sizes 100000 300000 1000000 3000000] [--out dpm_scaling.png]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dpm_scale import run_child
from scaling import fitted_result, plot_runs

DEFAULT_SIZES = (100_000, 300_000, 1_000_000, 3_000_000)


def cluster(sizes=DEFAULT_SIZES, d: int = 10, out: str | Path = "dpm_scaling.png") -> dict:
    """Measure DPM fits (in memory, d columns, the Synth recipe) at ``sizes``; returns
    {"family", "sizes", "fit_s", "peak_gib", "time_exponent", "memory_exponent", "plot"}."""
    fit_s, peak = [], []
    for n in sizes:
        print(f"DPM scaling: n = {n:.0e}", file=sys.stderr, flush=True)
        r = run_child(sys.executable, ["--n", str(n), "--d", str(d)])
        if "error" in r:
            raise RuntimeError(f"DPM fit at n = {n} failed: {r['error']}")
        fit_s.append(r["fit_s"])
        peak.append(r["peak_gib"])
    result = fitted_result(
        "cluster (DPM)", sizes, {"fit_s": fit_s, "peak_gib": peak}, ("fit_s", "peak_gib"), out
    )
    plot(result, Path(out))
    return result


def plot(result: dict, out: Path) -> None:
    plot_runs(
        [("measured", result)],
        out,
        keys=("fit_s", "peak_gib"),
        labels=("fit time (s)", "peak RSS (GiB)"),
        size_label="points n (d = 10)",
        title="DPM (privopt.cluster), one process",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=list(DEFAULT_SIZES))
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--out", default="dpm_scaling.png")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    r = cluster(args.sizes, args.d, args.out)
    print("| n | fit (s) | peak RSS (GiB) |")
    print("|---|---|---|")
    for n, t, m in zip(r["sizes"], r["fit_s"], r["peak_gib"], strict=True):
        print(f"| {n:.0e} | {t:.2f} | {m:.2f} |")
    print(f"\ntime ∝ n^{r['time_exponent']:.2f}, peak RSS ∝ n^{r['memory_exponent']:.2f}")
    print(f"load average at end: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
