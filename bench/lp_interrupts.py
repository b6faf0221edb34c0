"""Benchmark: what watching HiGHS runs for signals costs (privopt.lp.interrupts).

    python bench/lp_interrupts.py [--repeats 3] [--cols 3000] [--rows 2000]

The same packing LP (box [0, 1], density 0.5%) is solved by dual simplex from scratch, alternately
outside and inside :func:`privopt.lp.interrupts.interruptible` (the interrupt callbacks subscribed:
one Python call per simplex iteration), in the same process. Printed per repeat: both times,
iterations, callbacks made and the ratio watched / plain; last line: the median ratio and the
cost per callback (time difference / callbacks, microseconds). Peak RSS at the end.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

from privopt.lp import LinearProgram, highs
from privopt.lp.examples import random_packing_lp
from privopt.lp.interrupts import WATCH_MIN_SIZE, interruptible


def timed_solve(lp: LinearProgram, watched: bool) -> tuple[float, int, int]:
    """(seconds, simplex iterations, callbacks made)."""
    h = lp.to_highs()
    highs.configure(h, method="simplex", presolve=False)
    calls = [0]

    def count(event) -> None:
        calls[0] += 1

    t0 = time.perf_counter()
    if watched:
        with interruptible():
            h.cbSimplexInterrupt.subscribe(count)  # counts the callbacks the watch adds
            highs.run(h)
    else:
        highs.run(h)
    dt = time.perf_counter() - t0
    return dt, int(h.getInfo().simplex_iteration_count), calls[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cols", type=int, default=3000)
    ap.add_argument("--rows", type=int, default=2000)
    args = ap.parse_args()
    lp = random_packing_lp(args.cols, args.rows)
    assert lp.n_vars + lp.n_rows >= WATCH_MIN_SIZE, "below the watch threshold"
    print(f"load average {os.getloadavg()[0]:.1f}; {args.cols} cols x {args.rows} rows")
    print(f"{'plain s':>8} {'watched s':>10} {'iters':>7} {'callbacks':>10} {'ratio':>7}")
    ratios, per_call = [], []
    for _ in range(args.repeats):
        plain, it, _ = timed_solve(lp, False)
        watched, it_w, calls = timed_solve(lp, True)
        ratios.append(watched / plain)
        per_call.append((watched - plain) / max(calls, 1) * 1e6)
        print(f"{plain:8.3f} {watched:10.3f} {it_w:7d} {calls:10d} {watched / plain:7.3f}")
    print(
        f"median ratio {statistics.median(ratios):.3f}; cost per callback "
        f"{statistics.median(per_call):.1f} µs (median); mean iteration "
        f"{plain / max(it, 1) * 1e6:.0f} µs"
    )
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
