"""DPM at scale against a baseline build, in one run (issue 17 item 3).

Each fit runs in a fresh child process, so that its peak RSS (which includes the data) is its
own; the same child script runs under this interpreter (the current build) and, with
``--baseline-python PY``, under an interpreter with another privopt installed (e.g. the build
before this work), on the very same data and seed. Ratios are taken between rows of one run.

In memory (n × d from the Synth recipe: 64 unit blobs in [-100, 100]^d):

    python bench/dpm_scale.py memory --sizes 1000000 10000000 [--baseline-python PY]

Out of core: the data are first written to disk as a column-major ``.npy`` (block by block,
never whole in memory), then read back as a Dask array in row chunks
(:class:`privopt.cluster._npy_reader.NpyRows`: ``pread`` of each column's rows, so the file's
pages stay in the page cache and out of the fit's RSS), and the file is deleted at the end:

    python bench/dpm_scale.py disk --sizes 100000000 --dir /tmp

With ``--workers 0 1 2 …`` (disk mode) each size is fitted once per entry in one command: 0 is
serial (Dask's synchronous scheduler, in the driver process), W ≥ 1 a ``distributed.LocalCluster``
of W single-threaded worker processes, as ``privopt cluster --workers W`` starts. Each row then
also gives the driver's phases (``--profile``, printed as JSON to stderr): the passes the fit
fans out, the split width's serial part in the driver (fetching each column whole, clipping and
sorting it, or on a cluster the workers' sorts and gap sums and the sums' transfer; summing the
gaps, sorting the gaps), and the bytes of the level histograms; plus the
file's read rate, cold (pages dropped from the cache first) and warm, in one process.

Progress goes to stderr; the table (markdown) to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from harness import peak_rss_mib, print_json, run_json

BLOCK = 1 << 20


def synth_block(rng: np.random.Generator, centres: np.ndarray, rows: int) -> tuple:
    labels = rng.integers(0, len(centres), size=rows)
    return centres[labels] + rng.standard_normal((rows, centres.shape[1])), labels


def make_data(n: int, d: int, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """In memory: 64 unit-variance blobs, centres uniform in [-100, 100]^d."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-100, 100, size=(64, d))
    X, y = np.empty((n, d)), np.empty(n, dtype=np.int64)
    for lo in range(0, n, BLOCK):
        hi = min(n, lo + BLOCK)
        X[lo:hi], y[lo:hi] = synth_block(rng, centres, hi - lo)
    return X, y


def write_npy(path: Path, n: int, d: int, seed: int = 42) -> None:
    """The same recipe written block by block into a column-major .npy (temp + rename)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-100, 100, size=(64, d))
    tmp = path.with_suffix(".partial.npy")
    out = np.lib.format.open_memmap(
        tmp, mode="w+", dtype=np.float64, shape=(n, d), fortran_order=True
    )
    for lo in range(0, n, BLOCK):
        hi = min(n, lo + BLOCK)
        out[lo:hi] = synth_block(rng, centres, hi - lo)[0]
        if lo % (16 * BLOCK) == 0:
            print(f"writing {path.name}: {hi / n:.0%}", file=sys.stderr, flush=True)
    out.flush()
    del out
    os.replace(tmp, path)


class PhaseTimer:
    """Seconds (and calls) per named phase of a fit, by wrapping functions of privopt's modules
    in this process (the driver): what the driver waits for, fanned out or its own work."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.level_cells_bytes: list[int] = []

    def wrap(self, owner, name: str, phase: str) -> None:
        inner = getattr(owner, name, None)
        if inner is None:  # a phase that a baseline revision does not have
            return

        def timed(*a, **k):
            start = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - start
                self.calls[phase] = self.calls.get(phase, 0) + 1

        setattr(owner, name, timed)

    def install(self) -> None:
        from privopt.cluster import _dask, _interval

        self.wrap(_dask.DaskData, "summary", "fan-out: summary pass")
        self.wrap(_dask.DaskData, "gaps", "split width: gaps, all")
        self.wrap(_dask, "fill_column", "split width: fetch a column whole (fan-out + transfer)")
        self.wrap(_dask, "fetch_column", "split width: fetch a column sorted on a worker")
        self.wrap(_dask, "gaps_on_workers", "split width: sort + add gaps on the workers, all")
        self.wrap(_dask, "fetch_gap_sums", "split width: fetch the gap sums (driver)")
        self.wrap(_dask, "prepare_column", "split width: clip + sort a column (driver)")
        self.wrap(_dask, "add_sorted_gaps", "split width: add the gaps (driver)")
        self.wrap(_interval, "prepare_column", "split width: clip + sort the gaps (driver)")
        self.wrap(_dask.DaskData, "level_counts", "fan-out: level passes (codes at the first)")
        self.wrap(_dask.DaskData, "slot_sums", "fan-out: leaf sums pass")
        counts = _dask._cc.counts_from_cells
        timer = self

        class Kernel:  # the kernel module, recording each level's reduced histogram
            def __getattr__(self, attr):
                return getattr(_dask._core.cluster, attr)

            @staticmethod
            def counts_from_cells(cells, *a):
                timer.level_cells_bytes.append(int(cells.nbytes))
                return counts(cells, *a)

        _dask._cc = Kernel()


def read_rates(path: str, chunk: int) -> dict[str, float]:
    """MB/s of reading the whole file chunk by chunk (as a worker does), cold then warm."""
    from privopt.cluster._npy_reader import NpyRows

    source = NpyRows(path)
    labels = ("warm",)
    if hasattr(os, "posix_fadvise"):  # Linux: this file's pages out of the cache first
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        labels = ("cold", "warm")
    out = {}
    for label in labels:
        start = time.perf_counter()
        for lo in range(0, source.shape[0], chunk):
            source.read_rows(lo, min(source.shape[0], lo + chunk))
        out[f"read_{label}_mb_s"] = os.path.getsize(path) / 1e6 / (time.perf_counter() - start)
    source.close()
    return out


def child(args: argparse.Namespace) -> None:
    from privopt.cluster import DPM

    DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state=0).fit(make_data(2000, 10)[0])
    if args.path:
        import dask.array as da

        # Here, not at the top: a baseline revision's children import this script too, and
        # older revisions have no reader (they measure in-memory sizes only).
        from privopt.cluster._npy_reader import NpyRows

        source = NpyRows(args.path)
        X = da.from_array(source, chunks=(args.chunk, source.shape[1]), asarray=False)
        n = source.shape[0]
    else:
        X, _ = make_data(args.n, args.d)
        n = args.n
    timer = PhaseTimer()
    if args.profile:
        timer.install()
    model = DPM(bounds=(-100, 100), epsilon=1.0, delta=1 / n**1.5, random_state=0)
    with scheduler(args.workers) as client:
        start = time.perf_counter()
        model.fit(X)
        elapsed = time.perf_counter() - start
        workers_mib = sorted(client.run(peak_rss_mib).values()) if client is not None else []
    record = {
        "fit_s": elapsed,
        "peak_gib": peak_rss_mib() / 1024,
        "worker_peak_mib": workers_mib,
        "clusters": int(model.n_clusters_),
        "beta": model.split_width_,
        "centres_sum": float(np.sum(model.cluster_centers_)),
    }
    if args.profile:
        record["phases_s"] = timer.seconds
        record["fit_seconds"] = model.release_.fit_seconds
        record["level_cells_bytes"] = timer.level_cells_bytes
        record["chunks"] = len(X.chunks[0]) if args.path else 1
        if args.path:
            record.update(read_rates(args.path, args.chunk))
    print_json(record)


@contextlib.contextmanager
def scheduler(workers: int | None):
    """None: Dask's default; 0: synchronous (serial, in this process); W: a local cluster of W
    single-threaded worker processes (what ``privopt cluster --workers W`` starts), whose
    client it yields (else None)."""
    if workers is None:
        yield None
        return
    import dask

    if workers == 0:
        with dask.config.set(scheduler="synchronous"):
            yield None
        return
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
        client.as_current(),
    ):
        yield client


def run_child(python: str, extra: list[str]) -> dict:
    """One fit (``child`` EXTRA) under interpreter ``python`` in a fresh process."""
    return run_json([python, __file__, "child", *extra], timeout=None)


def row(label: str, size: str, r: dict, base: dict | None) -> str:
    if "error" in r:
        return f"| {size} | {label} | error: {r['error']} | | | | |"
    ratio = f"{base['fit_s'] / r['fit_s']:.2f}×" if base and "fit_s" in base else ""
    workers = r.get("worker_peak_mib") or []
    worker_peak = f"{max(workers):.0f}" if workers else ""
    return (
        f"| {size} | {label} | {r['fit_s']:.2f} | {ratio} | {r['peak_gib']:.2f} | {worker_peak} "
        f"| {r['clusters']} |"
    )


def worker_label(workers: int | None) -> str:
    return "" if workers is None else (", serial" if workers == 0 else f", {workers} workers")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["memory", "disk", "child"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[1_000_000, 10_000_000])
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--baseline-python", default=None)
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the .npy goes")
    parser.add_argument("--chunk", type=int, default=1 << 21, help="rows per Dask chunk")
    parser.add_argument(
        "--workers",
        nargs="+",
        type=int,
        default=[None],
        help="disk mode: one fit per entry, 0 serial, W a local cluster of W worker processes",
    )
    parser.add_argument(
        "--profile", action="store_true", help="also time the driver's phases (JSON to stderr)"
    )
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode == "child":
        args.workers = args.workers[0]
        child(args)
        return
    if args.mode == "memory" and args.workers != [None]:
        parser.error("--workers applies to the disk mode (a Dask array read from the file)")
    if any(w is not None and w < 0 for w in args.workers):
        parser.error(f"--workers must be 0 (serial) or positive, not {args.workers}")
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    print(
        "| n × d | build | fit (s) | speed-up vs baseline | peak RSS (GiB) "
        "| workers' peak RSS (MiB, max) | clusters |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        size = f"{n:.0e} × {args.d}"
        if args.mode == "memory":
            extra = ["--n", str(n), "--d", str(args.d)]
        else:
            path = Path(args.dir) / f"dpm_bench_{n}x{args.d}.npy"
            write_npy(path, n, args.d)
            extra = ["--path", str(path), "--chunk", str(args.chunk)]
        extra += ["--profile"] if args.profile else []
        try:
            for workers in args.workers:
                runs = extra + ([] if workers is None else ["--workers", str(workers)])
                base = None
                if args.baseline_python:
                    print(f"{size}: baseline", file=sys.stderr, flush=True)
                    base = run_child(args.baseline_python, runs)
                    print(row("baseline" + worker_label(workers), size, base, None), flush=True)
                    if args.profile:
                        print(json.dumps({"baseline": base}), file=sys.stderr, flush=True)
                print(f"{size}: current{worker_label(workers)}", file=sys.stderr, flush=True)
                current = run_child(sys.executable, runs)
                print(row("current" + worker_label(workers), size, current, base), flush=True)
                if args.profile:
                    print(json.dumps(current), file=sys.stderr, flush=True)
        finally:
            if args.mode == "disk":
                path.unlink(missing_ok=True)
    print(f"load average at end: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
