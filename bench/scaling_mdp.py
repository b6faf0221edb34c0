"""Metric-DP scaling (issue 17 item 5): the exact LP at 3–5 sizes, fitted log-log slopes.

``mdp(sizes, out, baseline=None)`` is the family entry for a shared ``bench/scaling.py``: it
solves the K = N grid (1 km cells, ε = 10/km, η = 2 km, c = d: every cell an output, so the full
LP has N·K variables and |E|·K rows) at each size in a fresh child process
(``bench/mdp_scale.py``), fits time ∝ N^a and peak RSS ∝ N^b by least squares on the logs,
writes ``out`` (a PNG with the points and the fitted lines) and returns the measurements and
exponents. ``baseline`` (a git revision) measures that revision's code at the same sizes in the
same command, for the before/after exponents. Progress goes to stderr; as a script it prints a
markdown table.

    python bench/scaling_mdp.py [--sizes 500 1000 2000 4000] [--baseline fedfbc0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mdp_scale import baseline_source, run_child
from scaling import log_log_slope, plot_runs

#: Grid shapes (rows, cols) of 1 km cells per size N.
GRIDS = {500: (20, 25), 1000: (25, 40), 2000: (40, 50), 4000: (50, 80), 8000: (80, 100)}
DEFAULT_SIZES = (500, 1000, 2000, 4000)


def _measure(sizes, source: Path | None, limit: float, label: str) -> dict:
    times, peaks = [], []
    for n in sizes:
        print(f"mdp scaling ({label}): N = K = {n}", file=sys.stderr, flush=True)
        r = run_child(f"grid-kn:{n}", None, source, limit)
        if "error" in r:
            raise RuntimeError(f"mdp exact LP at N = {n} ({label}) failed: {r['error']}")
        times.append(r["time_s"])
        peaks.append(r["peak_rss_mib"] / 1024)
    return {
        "solve_s": times,
        "peak_gib": peaks,
        "time_exponent": log_log_slope(list(sizes), times),
        "memory_exponent": log_log_slope(list(sizes), peaks),
    }


def mdp(
    sizes=DEFAULT_SIZES,
    out: str | Path = "mdp_scaling.png",
    *,
    baseline: str | None = None,
    baseline_sizes=None,
    limit: float = 1800.0,
) -> dict:
    """Measure the exact LP on K = N grids at ``sizes`` (keys of :data:`GRIDS`); returns
    {"family", "sizes", "solve_s", "peak_gib", "time_exponent", "memory_exponent", "plot"} and,
    with ``baseline``, the same under "baseline" (at ``baseline_sizes``, default ``sizes``)."""
    result = {"family": "mdp (exact LP, K = N grid)", "sizes": list(sizes)}
    result.update(_measure(sizes, None, limit, "this tree"))
    if baseline is not None:
        base_sizes = list(baseline_sizes or sizes)
        with tempfile.TemporaryDirectory() as tmp:
            source = baseline_source(baseline, Path(tmp))
            base = _measure(base_sizes, source, limit, f"baseline {baseline}")
        result["baseline"] = {"revision": baseline, "sizes": base_sizes, **base}
    result["plot"] = str(out)
    plot(result, Path(out))
    return result


def plot(result: dict, out: Path) -> None:
    runs = [("this tree", result)]
    if "baseline" in result:
        runs.append((f"baseline {result['baseline']['revision']}", result["baseline"]))
    plot_runs(
        runs,
        out,
        keys=("solve_s", "peak_gib"),
        labels=("solve time (s)", "peak RSS (GiB)"),
        size_label="records N = outputs K (grid, ε = 10, η = 2)",
        title="metric DP exact LP (privopt.mdp.solve), one process",
        symbol="N",
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES))
    ap.add_argument("--baseline", default=None, help="git revision measured beside")
    ap.add_argument("--baseline-sizes", type=int, nargs="+", default=None)
    ap.add_argument("--limit", type=float, default=1800.0, help="seconds per run")
    ap.add_argument("--out", default="mdp_scaling.png")
    args = ap.parse_args(argv)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    r = mdp(
        args.sizes,
        args.out,
        baseline=args.baseline,
        baseline_sizes=args.baseline_sizes,
        limit=args.limit,
    )
    print(f"load average at start: {load}\n")
    print("| code | N = K | solve (s) | peak RSS (GiB) |")
    print("|---|---|---|---|")
    runs = [("this tree", r)] + (
        [(f"baseline {args.baseline}", r["baseline"])] if args.baseline else []
    )
    for name, run in runs:
        for n, t, m in zip(run["sizes"], run["solve_s"], run["peak_gib"], strict=True):
            print(f"| {name} | {n:,} | {t:.2f} | {m:.2f} |")
    for name, run in runs:
        print(
            f"\n{name}: time ∝ N^{run['time_exponent']:.2f}, "
            f"peak RSS ∝ N^{run['memory_exponent']:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
