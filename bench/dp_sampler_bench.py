"""Per-draw time of the exact samplers of privopt.dp against a baseline revision, same process.

The baseline's ``discrete.py``, ``_kernels.py`` and ``_reference.py`` are read from git
(``--baseline-rev``, by default the last revision with the Numba kernels) into a temporary
package, so both versions run on the same machine, load and random source, interleaved. For
each case (sampler, scale, size, source) it prints the best-of-``--repeat`` time per draw of
each version and their ratio, then the peak RSS and the load average. The OS CSPRNG source is
``rng=None`` (the default of every sampler); the seeded one a Generator seeded with 0.

Usage: python bench/dp_sampler_bench.py [--baseline-rev REV] [--sizes 1000,1000000]
       [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: The last revision of main whose exact samplers were the Numba kernels.
BASELINE_REV = "e61c968"
FILES = ("discrete.py", "_kernels.py", "_reference.py")
REPO = Path(__file__).resolve().parents[1]


def load_baseline(rev: str, where: Path):
    """The baseline's ``discrete`` module, imported as package ``dp_baseline``."""
    pkg = where / "dp_baseline"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in FILES:
        src = subprocess.run(
            ["git", "show", f"{rev}:python/privopt/dp/{name}"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        src = src.replace("from privopt.dp import _kernels", "from dp_baseline import _kernels")
        src = src.replace("from privopt.dp._reference", "from dp_baseline._reference")
        (pkg / name).write_text(src)
    sys.path.insert(0, str(where))
    return importlib.import_module("dp_baseline.discrete")


def cases(quick: bool):
    """(label, scale, call(module, size, rng)) for the discrete Laplace and Gaussian."""
    lap = [1.0, 6.0, 100.0, 1e4] if not quick else [6.0, 1e4]
    gau = [1.0, 30.0, 1e4] if not quick else [30.0]
    for lam in lap:  # λ = Δ/ε; ε = 1/λ is not dyadic for λ = 6, 100 (census-like rates)
        yield (
            "laplace",
            lam,
            lambda mod, n, rng, e=1 / lam: mod.sample_discrete_laplace(e, n, rng=rng),
        )
    for sigma in gau:
        yield (
            "gaussian",
            sigma,
            lambda mod, n, rng, s=sigma: mod.sample_discrete_gaussian(s, n, rng=rng),
        )


def best_time(call, mod, n: int, seeded: bool, repeat: int) -> float:
    """Best wall time of ``repeat`` timings drawing n samples per call, seconds per draw.

    The seeded source is one Generator advancing across calls: replaying the same words would
    let the CPU's branch predictor learn the draws and flatter small sizes.
    """
    reps = max(1, 20_000 // n)  # small sizes: many calls per timing
    rng = np.random.default_rng(0) if seeded else None
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(reps):
            call(mod, n, rng)
        best = min(best, (time.perf_counter() - t) / (reps * n))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-rev", default=BASELINE_REV)
    ap.add_argument("--sizes", default="1000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="fewer scales (a smoke run)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    from privopt.dp import discrete as current

    with tempfile.TemporaryDirectory() as tmp:
        base = load_baseline(args.baseline_rev, Path(tmp))
        print(f"warming up (baseline {args.baseline_rev} compiles its kernels)", file=sys.stderr)
        for mod in (base, current):
            mod.sample_discrete_laplace(0.3, 10, rng=0)
            mod.sample_discrete_gaussian(3.0, 10, rng=0)
        load0 = os.getloadavg()[0]
        print(f"# Exact samplers: ns per draw, baseline {args.baseline_rev} vs this tree\n")
        print("| sampler | scale | size | rng | baseline ns | now ns | speed-up |")
        print("|---|---|---|---|---|---|---|")
        for name, scale, call in cases(args.quick):
            for n in sizes:
                for seeded, label in ((True, "seed"), (False, "OS CSPRNG")):
                    print(f"  {name} {scale:g} n={n} {label}", file=sys.stderr)
                    before = best_time(call, base, n, seeded, args.repeat)
                    after = best_time(call, current, n, seeded, args.repeat)
                    print(
                        f"| {name} | {scale:g} | {n} | {label} | {before * 1e9:.0f} | "
                        f"{after * 1e9:.0f} | {before / after:.1f}x |",
                        flush=True,
                    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"\nscale: λ = Δ/ε (Laplace) or σ (Gaussian); peak RSS {peak:.0f} MiB; "
        f"load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end, "
        f"{os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
