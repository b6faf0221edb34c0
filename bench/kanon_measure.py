"""One k-anonymity measurement per process, against the current code or a baseline revision.

The kanon bench scripts run every measurement in a fresh child process (``python
bench/kanon_measure.py ...``), so that its peak RSS is its own and a baseline revision of the
package can be imported in place of the current one: ``--baseline-dir`` points at a directory
holding ``privopt/`` (made by :func:`extract_revision` with ``git archive``). The child prints one
JSON line: times (``solve`` = the algorithm, ``total`` = with validation, rendering and the
k-anonymity check that ``anonymize`` always runs), loss, classes, peak RSS in MiB.

    python bench/kanon_measure.py --method greedy --data adult --n 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ADULT_QI = ["age", "education-num", "hours-per-week", "sex", "race", "marital-status"]


def extract_revision(rev: str, repo: Path | None = None) -> Path:
    """``python/privopt`` of git revision ``rev`` in a temporary directory (returned)."""
    repo = repo or Path(__file__).resolve().parents[1]
    out = Path(tempfile.mkdtemp(prefix="privopt-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", rev, "python/privopt"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out / "python"


def run_child(args: list[str], baseline_dir: Path | None = None, timeout: float = 3600) -> dict:
    """Run one measurement in a child process; its JSON result (``{"error": ...}`` on failure)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    if baseline_dir is not None:
        cmd += ["--baseline-dir", str(baseline_dir)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def _use_baseline(path: str) -> None:
    # The editable install's import hook would shadow the baseline package: drop it.
    sys.meta_path[:] = [f for f in sys.meta_path if "ScikitBuild" not in type(f).__name__]
    sys.path.insert(0, path)


def _table(kind: str, n: int):
    import pandas as pd
    from privopt.kanon import datasets

    if kind == "synthetic":
        return datasets.synthetic_census(n, seed=0)
    if kind == "adult":
        adult = datasets.load_adult(os.environ.get("ADULT_DATA"))[ADULT_QI]
        return pd.concat([adult] * -(-n // len(adult)), ignore_index=True).iloc[:n]
    return datasets.load_census(kind).iloc[:n]  # a CENSUS 4-attribute file


def _measure(a: argparse.Namespace) -> dict:
    import warnings

    from privopt.kanon import anonymize, datasets

    df = _table(a.data, a.n)
    opts = {}
    if a.method == "split_carry":
        opts["S"] = a.S
        if a.chunking:
            opts["chunking"] = a.chunking
        if a.parts:
            opts.update(parts=a.parts, progress=False)
    anonymize(datasets.fars_20(), 3, method=a.method)  # load the Numba kernels untimed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if a.dask_workers:
            import distributed

            with (
                distributed.LocalCluster(
                    n_workers=a.dask_workers, threads_per_worker=1, dashboard_address=None
                ) as cluster,
                distributed.Client(cluster) as client,
            ):
                opts["executor"] = client.get_executor()
                t0 = time.perf_counter()
                res = anonymize(df, a.k, method=a.method, **opts)
        else:
            t0 = time.perf_counter()
            res = anonymize(df, a.k, method=a.method, **opts)
    wall = time.perf_counter() - t0
    kib = 1024.0
    out = {
        "method": a.method,
        "n": a.n,
        "solve": res.timings["solve"],
        "total": wall,
        "objective": res.objective,
        "classes": len(res.class_sizes),
        "min_class": int(res.class_sizes.min()),
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / kib,
        "children_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / kib,
    }
    for key in ("n_subproblems", "uncertified_subproblems", "time_limited", "seams"):
        if key in res.info:
            out[key] = res.info[key]
    if a.pycanon:  # the outside check, on the released strings (slow at 10^6 rows)
        from pycanon import anonymity

        qi = res.quasi_identifiers
        out["pycanon_k"] = int(anonymity.k_anonymity(res.table[qi].astype(str), qi))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", required=True)
    ap.add_argument("--data", default="synthetic", help="synthetic, adult, or a CENSUS file")
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--S", type=int, default=3)
    ap.add_argument("--parts", type=int, default=0, help="split_carry parts (0: serial)")
    ap.add_argument("--chunking", default=None, help="split_carry chunking (runs or paper)")
    ap.add_argument("--dask-workers", type=int, default=0, help="run the parts on Dask")
    ap.add_argument("--pycanon", action="store_true", help="also check k with pycanon")
    ap.add_argument("--baseline-dir", default=None, help="directory holding a privopt/")
    a = ap.parse_args()
    if a.baseline_dir:
        _use_baseline(a.baseline_dir)
    print(json.dumps(_measure(a)), flush=True)


if __name__ == "__main__":
    main()
