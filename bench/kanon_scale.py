"""k-anonymity at scale: Greedy Search and Split & Carry at 10⁵–10⁶ rows, serial and in parts on
a Dask cluster, against a baseline git revision in the same command.

Every measurement runs in its own process (``child``), so that its peak RSS is its own and a
baseline revision's package can be imported in place of the current one (its sources with this
build's compiled core: ``--baseline REV``). ``anonymize`` verifies every output k-anonymous.
Tables go to stdout in Markdown, progress to stderr. Each Split & Carry run in parts also reports
its stages (sort and cuts, submitting the parts, until the last part is done, after it: wall time
in the driver), the sum of its parts' times where they ran, and a prediction of its time on 8 and
16 workers from those (:func:`predicted_time`), with its speed-up over the same code's serial run.

    python bench/kanon_scale.py greedy --adult --sizes 1000000 --baseline b67ca32
    python bench/kanon_scale.py split-carry --sizes 100000 1000000 --baseline b67ca32
    python bench/kanon_scale.py split-carry --sizes 1000000 --baseline e15fbec --repeats 2 \
        --baseline-max-n 1000000
    python bench/kanon_scale.py split-carry --sizes 1000000 --data adult --paper-chunks
    python bench/kanon_scale.py child --method greedy --data adult --n 1000000   # one JSON line

``greedy``: Greedy Search per size, with the IFS (``initial``) on the same rows as the in-run
baseline and, with ``--baseline REV``, REV's Greedy Search and the time ratio. ``split-carry``:
Greedy Search (the loss to beat), then for REV (up to ``--baseline-max-n`` rows) and this code:
Split & Carry serial, in parts on a ``distributed`` ``LocalCluster`` (``--workers``, warmed before
the timing) and in the same parts in one process (each part timed alone, the model's input where
the cores are shared; its predictions release the parts at the Dask run's rate of submitting
them); parts: the library's default on a cluster unless ``--parts``. With ``--paper-chunks`` also
the paper's chunks of S k-sets (``chunking="paper"``), serial, which do cut runs of identical
rows short.
Rows: UCI Adult's quasi-identifiers replicated to n (``adult``), the first n rows of a CENSUS
4-attribute file, or synthetic CENSUS-like marginals (``synthetic``, the default).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from harness import package_at, peak_rss_mib, print_json, run_json, use_package

#: UCI Adult's quasi-identifiers of the ``adult`` rows (6 QIs, 3 categorical).
ADULT_QI = ["age", "education-num", "hours-per-week", "sex", "race", "marital-status"]


def make_rows(kind: str, n: int) -> Any:
    """n rows: ``synthetic`` (CENSUS-like marginals), ``adult`` (UCI Adult replicated; the
    file ``$ADULT_DATA``, else the shared data's) or the path of a CENSUS 4-attribute file."""
    import pandas as pd
    from privopt.kanon import datasets

    if kind == "synthetic":
        return datasets.synthetic_census(n, seed=0)
    if kind == "adult":
        adult = datasets.load_adult(os.environ.get("ADULT_DATA"))[ADULT_QI]
        return pd.concat([adult] * -(-n // len(adult)), ignore_index=True).iloc[:n]
    return datasets.load_census(kind).iloc[:n]


# ----------------------------------------------------------------------- one measurement
def measure(a: argparse.Namespace) -> dict[str, Any]:
    """One ``anonymize`` run (inside the child): times (``solve`` = the algorithm, ``total``
    = with validation, rendering and the k-anonymity check), loss, classes, peak RSS (MiB)."""
    from privopt.kanon import anonymize, datasets

    df = make_rows(a.data, a.n)
    opts: dict[str, Any] = {}
    if a.method == "split_carry":
        # No progress=False unless in parts: older revisions (--baseline) refuse it in serial
        # runs, and an "auto" bar stays off in a child whose stderr is a pipe.
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
                # as the command line's: no hashing of every task's arguments
                opts["executor"] = client.get_executor(pure=False)
                if a.baseline_dir:  # the workers run the baseline's parts too
                    client.run(use_package, a.baseline_dir)
                client.run(_warm_worker)  # imports and compiled kernels, untimed
                t0 = time.perf_counter()
                res = anonymize(df, a.k, method=a.method, **opts)
        else:
            t0 = time.perf_counter()
            res = anonymize(df, a.k, method=a.method, **opts)
    wall = time.perf_counter() - t0
    out = {
        "method": a.method,
        "n": a.n,
        "solve": res.timings["solve"],
        "total": wall,
        "objective": res.objective,
        "classes": len(res.class_sizes),
        "min_class": int(res.class_sizes.min()),
        "peak_rss_mib": peak_rss_mib(),
        # the Dask workers' largest peak (the children this process waited for)
        "children_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }
    for key in ("n_subproblems", "uncertified_subproblems", "time_limited", "seams"):
        if key in res.info:
            out[key] = res.info[key]
    if "stage_times" in res.info:  # this revision's Split & Carry
        out.update(
            parts=len(res.info["parts"]) - 1,
            stage_times=res.info["stage_times"],
            part_times=res.info["part_times"],
        )
    if a.pycanon:  # the outside check, on the released strings (slow at 10^6 rows)
        from pycanon import anonymity

        qi = res.quasi_identifiers
        out["pycanon_k"] = int(anonymity.k_anonymity(res.table[qi].astype(str), qi))
    return out


def _warm_worker() -> None:
    """On a Dask worker: import privopt and load its compiled kernels (any revision)."""
    from privopt.kanon import anonymize, datasets

    anonymize(datasets.fars_20(), 3, method="split_carry")


def predicted_time(r: dict, workers: int, submit_per_part: float | None = None) -> float:
    """Wall time (s) of run ``r`` on ``workers`` workers: the driver's stages before the first
    part (sort and cuts) and after the last (the seams left, the labels), plus the parts'
    times list-scheduled longest first, each part released when the driver has submitted it:
    at the run's own rate (its ``submit`` stage over its parts), or ``submit_per_part``
    seconds a part (for a run in one process, which submits nothing)."""
    stages = r["stage_times"]
    times = sorted(r["part_times"], reverse=True)
    if submit_per_part is None:
        submit_per_part = stages.get("submit", 0.0) / len(times)
    finish = [0.0] * workers
    for i, t in enumerate(times):
        w = finish.index(min(finish))
        finish[w] = max(finish[w], (i + 1) * submit_per_part) + t
    return stages["sort"] + max(finish) + stages["seams"]


def run_child(args: list[str], baseline: Path | None = None, timeout: float = 3600) -> dict:
    """One measurement (``child`` ARGS) in a fresh process; ``baseline``: a package folder of
    :func:`harness.package_at` imported instead of the current privopt."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "child", *args]
    if baseline is not None:
        cmd += ["--baseline-dir", str(baseline)]
    return run_json(cmd, timeout=timeout)


# ----------------------------------------------------------------------- the tables
def greedy_table(args: argparse.Namespace, baseline: Path | None) -> None:
    data = "adult" if args.adult is not None else (args.data or "synthetic")
    print(
        "| n | data | greedy solve (s) | end to end (s) | IFS solve (s) | greedy objective | "
        "IFS objective | peak RSS (MiB) | baseline solve (s) | speed-up | baseline objective | "
        "pycanon k |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    nan = float("nan")
    for n in args.sizes:
        print(f"kanon greedy, n = {n}", file=sys.stderr, flush=True)
        common = ["--data", data, "--n", str(n), "--k", str(args.k)]
        g = run_child(["--method", "greedy", *common] + (["--pycanon"] if args.pycanon else []))
        i = run_child(["--method", "initial", *common])
        b = run_child(["--method", "greedy", *common], baseline) if baseline else None
        if "error" in g:
            print(f"| {n} | {data} | error: {g['error']} |", flush=True)
            continue
        ok = b is not None and "error" not in b
        base = "-" if b is None else (f"{b['solve']:.2f}" if ok else "error")
        ratio = f"{b['solve'] / g['solve']:.1f}x" if ok else "-"
        bobj = f"{b['objective']:.2f}" if ok else "-"
        print(
            f"| {n} | {data} | {g['solve']:.2f} | {g['total']:.2f} | {i.get('solve', nan):.2f} | "
            f"{g['objective']:.2f} | {i.get('objective', nan):.2f} | {g['peak_rss_mib']:.0f} | "
            f"{base} | {ratio} | {bobj} | {g.get('pycanon_k', '-')} |",
            flush=True,
        )


def _split_carry_row(
    n: int, label: str, r: dict, greedy: dict, serial: dict | None, submit_per_part: float | None
) -> str:
    """One run's row; the speed-ups are against ``serial`` (the same code's serial run)."""
    if "error" in r:
        return f"| {n} | {label} | error: {r['error']} |"
    vs_greedy = r["objective"] / greedy["objective"] if "objective" in greedy else float("nan")
    ref_time = serial.get("solve") if serial else None
    speed = f"{ref_time / r['solve']:.2f}x" if ref_time and r is not serial else "-"
    stages = "- | - | - | - | -"
    if "stage_times" in r and r.get("parts", 1) > 1:
        st = r["stage_times"]
        t8, t16 = (predicted_time(r, w, submit_per_part) for w in (8, 16))
        gain = f" ({ref_time / t8:.1f}x)" if ref_time else ""
        gain16 = f" ({ref_time / t16:.1f}x)" if ref_time else ""
        stages = (
            f"{st['sort']:.2f} / {st.get('submit', 0.0):.2f} / {st['parts']:.2f} / "
            f"{st['seams']:.2f} | {sum(r['part_times']):.1f} | {max(r['part_times']):.2f} | "
            f"{t8:.2f}{gain} | {t16:.2f}{gain16}"
        )
    return (
        f"| {n} | {label} | {r['solve']:.1f} | {r['objective']:.2f} | {vs_greedy:.3f} | {speed} | "
        f"{r['peak_rss_mib']:.0f} | {r['children_rss_mib']:.0f} | {r.get('n_subproblems', '-')} | "
        f"{r.get('uncertified_subproblems', '-')} | {r.get('parts', '-')} | {stages} |"
    )


def least_time(args: list[str], baseline: Path | None, repeats: int) -> dict:
    """The run of ``repeats`` (each a fresh process) with the least solve time: on shared
    cores other jobs only add time."""
    runs = [run_child(args, baseline, timeout=7200) for _ in range(repeats)]
    done = [r for r in runs if "error" not in r]
    return min(done, key=lambda r: r["solve"]) if done else runs[0]


def split_carry_table(args: argparse.Namespace, baseline: Path | None) -> None:
    """Per size: Greedy Search, then for the baseline (if any) and this code: Split & Carry
    serial, in parts on Dask, and in the same parts in one process (each part timed alone:
    the model's input where the cores are shared); speed-ups against the same code's serial
    run, the one-process row's predictions at the Dask run's rate of submitting parts. Each
    Split & Carry row is the least time of ``--repeats`` runs."""
    from privopt.kanon.split_carry import ROWS_PER_PART

    print(
        "| n | run | solve (s) | objective | / greedy | speed-up vs serial | peak RSS (MiB) | "
        "workers' peak RSS (MiB) | sub-problems | uncertified | parts | sort / submit / parts "
        "/ seams (s) | Σ part (s) | longest part (s) | predicted, 8 workers (s) (speed-up) | "
        "predicted, 16 workers (s) (speed-up) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        print(f"kanon split & carry, n = {n}", file=sys.stderr, flush=True)
        common = ["--data", args.data, "--n", str(n), "--k", str(args.k), "--S", str(args.S)]
        greedy = run_child(["--method", "greedy", *common])
        print(_split_carry_row(n, "greedy", greedy, greedy, None, None), flush=True)
        serial_cmd = ["--method", "split_carry", *common]
        parts = args.parts or max(2, -(-n // ROWS_PER_PART))
        dask = [*serial_cmd, "--dask-workers", str(args.workers), "--parts", str(parts)]
        inline = [*serial_cmd, "--parts", str(parts)]
        revisions: list[tuple[str, Path | None]] = []
        if baseline is not None and n <= args.baseline_max_n:
            revisions.append((f"baseline {args.baseline}", baseline))
        revisions.append(("", None))
        for name, base in revisions:
            tag = f", {name}" if name else ""
            serial = None
            if n <= args.serial_max_n or base is not None:
                if args.paper_chunks and base is None:
                    paper = run_child([*serial_cmd, "--chunking", "paper"], timeout=7200)
                    label = "S&C serial, paper chunks"
                    print(_split_carry_row(n, label, paper, greedy, None, None))
                serial = least_time(serial_cmd, base, args.repeats)
                print(_split_carry_row(n, f"S&C serial{tag}", serial, greedy, serial, None))
            r = least_time(dask, base, args.repeats)
            label = f"S&C in {parts} parts, Dask x{args.workers}{tag}"
            print(_split_carry_row(n, label, r, greedy, serial, None), flush=True)
            rate = r["stage_times"].get("submit", 0.0) / parts if "stage_times" in r else 0.0
            one = least_time(inline, base, args.repeats)
            label = f"S&C in {parts} parts, one process{tag}"
            print(_split_carry_row(n, label, one, greedy, serial, rate), flush=True)


# ----------------------------------------------------------------------- command line
def _child_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--method", required=True)
    ap.add_argument("--data", default="synthetic", help="synthetic, adult, or a CENSUS file")
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--S", type=int, default=3)
    ap.add_argument("--parts", type=int, default=0, help="split_carry parts (0: serial)")
    ap.add_argument("--chunking", default=None, help="split_carry chunking (runs or paper)")
    ap.add_argument("--dask-workers", type=int, default=0, help="run the parts on Dask")
    ap.add_argument("--pycanon", action="store_true", help="also check k with pycanon")
    ap.add_argument("--baseline-dir", default=None, help="a package folder holding privopt/")


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    greedy = sub.add_parser("greedy", help="Greedy Search against the IFS and REV")
    greedy.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    greedy.add_argument(
        "--adult",
        nargs="?",
        const="",
        default=None,
        help="UCI Adult (optional path to adult.data; default the shared data's)",
    )
    greedy.add_argument("--data", default=None, help="a CENSUS 4-attribute CSV")
    greedy.add_argument("--pycanon", action="store_true", help="check the output with pycanon")
    sc = sub.add_parser("split-carry", help="Split & Carry serial, on Dask and at REV")
    sc.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    sc.add_argument("--data", default="synthetic", help="synthetic, adult, or a CENSUS file")
    sc.add_argument("--S", type=int, default=3)
    sc.add_argument("--workers", type=int, default=2)
    sc.add_argument("--parts", type=int, default=0, help="parts (default: the library's)")
    sc.add_argument("--serial-max-n", type=int, default=10**6)
    sc.add_argument("--baseline-max-n", type=int, default=100_000)
    sc.add_argument("--paper-chunks", action="store_true", help="also the paper's chunks, serial")
    sc.add_argument("--repeats", type=int, default=1, help="runs of each row, least time kept")
    for p in (greedy, sc):
        p.add_argument("--k", type=int, default=3)
        p.add_argument("--baseline", default=None, help="git revision to compare with")
    _child_options(sub.add_parser("child", help="one measurement, one JSON line"))
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.mode == "child":
        if args.baseline_dir:
            use_package(args.baseline_dir)
        print_json(measure(args))
        return 0
    if args.mode == "greedy" and args.adult:
        os.environ["ADULT_DATA"] = args.adult
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        baseline = package_at(args.baseline, Path(tmp)) if args.baseline else None
        (greedy_table if args.mode == "greedy" else split_carry_table)(args, baseline)
    print(f"\nload average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
