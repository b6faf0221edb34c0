"""Census scaling (issue 17 item 5): M_H^dp's solver at 3–5 hierarchy sizes, fitted log-log slopes
of time and peak memory, plot.

``census(sizes, out)`` is the family entry for a shared ``bench/scaling.py``: it runs each size
(leaves of a regular 4-level hierarchy root → 10 → … , 100 households per leaf, N = 20, ε = 1) in
a fresh child (``bench/census_scale.py``'s solver child), fits time ∝ n^a and the solver's own
peak memory ∝ n^b by least squares on the logs, writes ``out`` (a PNG with the points and the
fitted lines) and returns the measurements and exponents. Progress goes to stderr; as a script it
prints a markdown table.

    python bench/scaling_census.py [--sizes 10000 100000 1000000] [--out census_scaling.png]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from census_scale import SOLVER, run_child
from scaling import fitted_result, plot_runs

DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
FANOUTS = {
    1_000: [10, 10, 10],
    10_000: [10, 10, 100],
    100_000: [10, 100, 100],
    1_000_000: [10, 100, 1000],
    10_000_000: [10, 1000, 1000],
}


def census(sizes=DEFAULT_SIZES, out: str | Path = "census_scaling.png") -> dict:
    """Measure M_H^dp's tree DP (by regions, serial) at ``sizes`` leaves; returns {"family",
    "sizes", "solve_s", "solver_mib", "time_exponent", "memory_exponent", "plot"}."""
    bench_dir = os.path.dirname(os.path.abspath(__file__))
    solve_s, own = [], []
    for n in sizes:
        print(f"census scaling: {n:.0e} leaves", file=sys.stderr, flush=True)
        spec = {"fanouts": FANOUTS[n], "N": 20, "eps": 1.0, "method": "regions"}
        r = run_child(SOLVER, {**spec, "bench_dir": bench_dir})
        if "error" in r:
            raise RuntimeError(f"census DP at {n} leaves failed: {r['error']}")
        solve_s.append(r["seconds"])
        own.append(max(r["solver_peak_mib"] - r["before_mib"], 1.0))
    result = fitted_result(
        "census (M_H^dp tree DP)",
        sizes,
        {"solve_s": solve_s, "solver_mib": own},
        ("solve_s", "solver_mib"),
        out,
    )
    plot(result, Path(out))
    return result


def plot(result: dict, out: Path) -> None:
    plot_runs(
        [("measured", result)],
        out,
        keys=("solve_s", "solver_mib"),
        labels=("solver time (s)", "solver's own peak (MiB)"),
        size_label="leaves (N = 20 sizes each)",
        title="Census M_H^dp tree DP (privopt.census), one process",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES))
    ap.add_argument("--out", default="census_scaling.png")
    args = ap.parse_args()
    r = census(args.sizes, args.out)
    print(f"load average {os.getloadavg()[0]:.1f}\n")
    print("| leaves | solver s | solver's own peak MiB |")
    print("|---|---|---|")
    for n, t, m in zip(r["sizes"], r["solve_s"], r["solver_mib"], strict=True):
        print(f"| {n:,} | {t:.2f} | {m:.0f} |")
    print(
        f"\ntime exponent {r['time_exponent']:.2f}, memory exponent "
        f"{r['memory_exponent']:.2f}; plot {r['plot']}"
    )


if __name__ == "__main__":
    main()
