"""DPM scaling run: fit time and peak memory for n = 10⁵ … 10⁷ points in d = 10 (issue 5 targets:
10⁷ × 10 in ≤ 60 s and ≤ 4 GiB). Each size runs in a fresh subprocess so that its peak resident
memory (which includes the 8·n·d-byte data array itself) is measured alone.

    python bench/dpm_scaling.py [--sizes 100000 1000000 10000000] [--n-jobs 2] [--dask]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np


def make_data(n: int, d: int, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """64 unit-variance Gaussian blobs with centres uniform in [−100, 100]^d (the Synth recipe),
    generated block-wise to avoid make_blobs' temporary copies."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-100, 100, size=(64, d))
    labels = rng.integers(0, 64, size=n)
    X = np.empty((n, d))
    for lo in range(0, n, 1 << 20):
        hi = min(n, lo + (1 << 20))
        X[lo:hi] = centres[labels[lo:hi]] + rng.standard_normal((hi - lo, d))
    return X, labels


def child(n: int, d: int, n_jobs: int | None, use_dask: bool) -> None:
    from privopt.cluster import DPM
    from privopt.cluster.metrics import clustering_accuracy

    # Warm-up: JIT compilation of the privopt.dp samplers is not part of the fit time.
    DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state=0).fit(make_data(2000, d)[0])
    X, y = make_data(n, d)
    data_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    model = DPM(bounds=(-100, 100), epsilon=1.0, delta=1 / n**1.5, random_state=0, n_jobs=n_jobs)
    start = time.perf_counter()
    if use_dask:
        import dask.array as da
        import distributed

        with (
            distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster),
        ):
            lazy = da.from_array(X, chunks=(max(1, n // 8), d)).persist()
            start = time.perf_counter()
            model.fit(lazy)
            labels = model.labels_.compute()
    else:
        model.fit(X)
        labels = model.labels_
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        json.dumps(
            {
                "n": n,
                "d": d,
                "fit_s": elapsed,
                "peak_gib": peak,
                "data_gib": X.nbytes / 2**30,
                "rss_after_data_gib": data_rss,
                "clusters": model.n_clusters_,
                "accuracy": clustering_accuracy(labels, y),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--dask", action="store_true", help="fit through a 2-worker LocalCluster")
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.n_jobs, args.dask)
        return
    print("| n | d | fit (s) | peak RSS (GiB) | data (GiB) | clusters | accuracy |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        cmd = [sys.executable, __file__, "--child", str(n), str(args.d)]
        if args.n_jobs is not None:
            cmd += ["--n-jobs", str(args.n_jobs)]
        if args.dask:
            cmd.append("--dask")
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(
            f"| {r['n']:.0e} | {r['d']} | {r['fit_s']:.2f} | {r['peak_gib']:.2f} | "
            f"{r['data_gib']:.2f} | {r['clusters']} | {r['accuracy']:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
