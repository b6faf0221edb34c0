"""Scaling report (issue 17 item 5): every family at 3–5 sizes, log-log slopes, docs/scaling.md.

Each family measures one operation at several input sizes n, every size in a fresh process (so
that its peak memory is its own), fits time ∝ n^a and memory ∝ n^b by least squares on the logs,
and draws one plot (measured points, fitted lines, the paper's point and the issue's before/goal
points where there are any). The page ``docs/scaling.md`` and the plots ``docs/scaling/*.png``
are written atomically (temp + rename); progress goes to stderr, the summary table to stdout.

    python bench/scaling.py                          # all families, ~20 min on 2 cores
    python bench/scaling.py --quick                  # smaller sizes, ~2 min
    python bench/scaling.py --families census kanon  # some families (the page lists those)
    python bench/scaling.py --baseline-rev 8d3f549   # also REV's exponents, same sizes

With ``--baseline-rev REV`` the same measurements run a second time with privopt built from git
revision REV (``git archive`` into a cached virtual environment under ``build/``, which takes the
other packages from this environment): the plots show both, the page lists the exponents before
and after.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))


# ----------------------------------------------------------------------- fits and plots
def log_log_slope(x: list[float], y: list[float]) -> float:
    """Least-squares slope of log y against log x (the exponent a of y ∝ x^a)."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


@dataclass
class Reference:
    """A point from elsewhere drawn beside the measurements: ``kind`` is "paper", "before"
    (issue 17's figure of the code before) or "goal"; ``axis`` is "time" or "memory"."""

    n: float
    value: float
    label: str
    kind: str = "paper"
    axis: str = "time"


@dataclass
class Series:
    """One family's measurements: sizes n, seconds and MiB per size."""

    sizes: list[float]
    seconds: list[float]
    mib: list[float]

    @property
    def time_exponent(self) -> float:
        return log_log_slope(self.sizes, self.seconds)

    @property
    def memory_exponent(self) -> float:
        return log_log_slope(self.sizes, [max(m, 1.0) for m in self.mib])

    @property
    def last_step(self) -> tuple[float, float]:
        """Time and memory exponents between the two largest sizes alone: fixed costs (a
        process's resident imports, start-up) weigh least there."""
        n, t, m = self.sizes[-2:], self.seconds[-2:], [max(v, 1.0) for v in self.mib[-2:]]
        return log_log_slope(n, t), log_log_slope(n, m)


@dataclass
class Result:
    """A family's report: what was measured, the series (and REV's), reference points."""

    name: str
    title: str
    size_label: str
    time_label: str
    memory_label: str
    what: str
    series: Series
    references: list[Reference] = field(default_factory=list)
    before: Series | None = None
    extra: dict[str, list[Any]] = field(default_factory=dict)
    #: what the problem's structure predicts for the exponents (the measurements' context)
    expected: str = ""


def plot(result: Result, out: Path, baseline_rev: str | None = None) -> None:
    """Time and memory against n on log-log axes, written atomically to ``out`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.8))
    panels = (
        (axes[0], "time", "seconds", result.time_label),
        (axes[1], "memory", "mib", result.memory_label),
    )
    for ax, axis, key, label in panels:
        runs = [(result.series, "now", "o", "-")]
        if result.before is not None:
            runs.append((result.before, f"before ({baseline_rev})", "s", "--"))
        refs = [r for r in result.references if r.axis == axis]
        reach = max([r.n for r in refs], default=0.0)
        for series, name, marker, line in runs:
            _plot_series(ax, series, key, name, marker, line, reach)
        for ref in refs:
            style = {"paper": "*", "before": "X", "goal": "v"}[ref.kind]
            ax.loglog([ref.n], [ref.value], style, markersize=11, label=ref.label)
        ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels overlap on short ranges
        ax.set_xlabel(result.size_label)
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(result.title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, out)


def _plot_series(
    ax: Any, series: Series, key: str, name: str, marker: str, line: str, reach: float
) -> None:
    """Points, the fitted line over them, and the line extended (dotted) to ``reach``, the
    size of a reference point beyond the measurements."""
    n = np.asarray(series.sizes, dtype=float)
    y = np.maximum(np.asarray(getattr(series, key), dtype=float), 1e-3 if key == "seconds" else 1)
    coef = np.polyfit(np.log(n), np.log(y), 1)
    (points,) = ax.loglog(n, y, marker, label=f"{name}: measured")
    color = points.get_color()
    fit = lambda x: np.exp(np.polyval(coef, np.log(x)))  # noqa: E731
    ax.loglog(n, fit(n), line, color=color, label=f"{name}: fit n^{coef[0]:.2f}")
    if reach > n.max():
        ahead = np.array([n.max(), reach])
        ax.loglog(ahead, fit(ahead), ":", color=color, label=f"{name}: fit extended")


def fitted_result(
    family: str,
    sizes: list[int],
    series: dict[str, list[float]],
    keys: tuple[str, str],
    out: str | Path,
    **extra: Any,
) -> dict:
    """The per-family scripts' result: ``series`` measured at ``sizes`` with the log-log
    exponents of its time and memory columns (``keys``) and the plot's path."""
    sizes = list(sizes)
    return {
        "family": family,
        **extra,
        "sizes": sizes,
        **series,
        "time_exponent": log_log_slope(sizes, series[keys[0]]),
        "memory_exponent": log_log_slope(sizes, series[keys[1]]),
        "plot": str(out),
    }


def plot_runs(
    runs: list[tuple[str, dict]],
    out: Path,
    *,
    keys: tuple[str, str],
    labels: tuple[str, str],
    size_label: str,
    title: str,
    symbol: str = "n",
) -> None:
    """Time and memory of the per-family scripts' results (dicts with ``sizes``, the two
    ``keys`` and ``time_exponent`` / ``memory_exponent``), one series per ``(name, result)``,
    measured points and fitted line on log-log axes; written atomically to ``out`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    panels = zip(axes, keys, ("time_exponent", "memory_exponent"), labels, strict=True)
    for ax, key, exponent, label in panels:
        for name, run in runs:
            n = np.asarray(run["sizes"], dtype=float)
            y = np.asarray(run[key])
            coef = np.polyfit(np.log(n), np.log(y), 1)
            (points,) = ax.loglog(n, y, "o", label=f"{name}: {symbol}^{run[exponent]:.2f}")
            ax.loglog(n, np.exp(np.polyval(coef, np.log(n))), "-", color=points.get_color())
        ax.set_xlabel(size_label)
        ax.set_ylabel(label)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    out = Path(out)
    tmp = out.with_name(out.name + ".partial.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, out)


# ----------------------------------------------------------------------- child processes
def run_child(args: list[str], python: str | None = None, timeout: float = 3600) -> dict:
    """``python bench/scaling.py child ARGS`` in a fresh process; its JSON line."""
    cmd = [python or sys.executable, str(Path(__file__).resolve()), "child", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(args)}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(lines[-1])


def _status_mib(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    return float("nan")


def measured(run: Callable[[], Any]) -> dict:
    """Seconds of ``run()`` and its own peak memory: the high-water mark above the resident
    set just before it (the reset of VmHWM is Linux's clear_refs 5)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status_mib("VmRSS:")
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    peak = _status_mib("VmHWM:")
    return {"seconds": seconds, "own_mib": peak - before, "peak_mib": peak}


def child_lp(n: int) -> dict:
    """Blocks of n nonzeros -> a loaded Highs (assembly + pass_to), best of 3, against
    passModel on the prepared arrays."""
    from lp_assembly import assemble, make_blocks, pass_model, pass_to

    blocks = make_blocks(n)
    pass_model(assemble(*blocks, csc=True))  # warm-up (Numba, HiGHS)
    runs = [measured(lambda: pass_to(assemble(*blocks))) for _ in range(3)]
    prepared = assemble(*blocks, csc=True)
    base = min(measured(lambda: pass_model(prepared))["seconds"] for _ in range(3))
    best = min(runs, key=lambda r: r["seconds"])
    return {**best, "own_mib": max(r["own_mib"] for r in runs), "passModel_s": base}


def child_mdp(n: int) -> dict:
    """The exact LP (row generation) with K = N outputs on n Rome road nodes (Haversine),
    ε = 10/km, η = 2; a generated 1 km grid of n cells without the shared data."""
    import warnings

    from mdp_bench import make_problem
    from privopt.mdp import MDPProblem, rome_grid, solve

    data = _data_root()
    if data is not None and (data / "rome").is_dir():
        problem = make_problem("road", n, n, 0, data)
    else:
        side = math.ceil(math.sqrt(n))
        problem = MDPProblem(rome_grid(side, side)[:n], epsilon=10.0, eta=2.0, seed=0)
    solve(make_problem("grid", 20, 20, 0, None), "lp")  # warm-up (imports, first HiGHS)
    out: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = measured(lambda: out.setdefault("pm", solve(problem, "lp")))
    pm = out["pm"]
    return {**stats, "gap": pm.relative_gap, "loss": pm.expected_loss}


def _data_root() -> Path | None:
    env = os.environ.get("PRIVOPT_DATA")
    root = Path(env) if env else REPO.parent / "shared" / "data"
    return root if root.is_dir() else None


CHILDREN = {"lp": child_lp, "mdp": child_mdp}


# ----------------------------------------------------------------------- the families
def _progress(message: str) -> None:
    print(f"scaling: {message}", file=sys.stderr, flush=True)


def family_lp(sizes: list[int]) -> Result:
    runs = []
    for n in sizes:
        _progress(f"lp, {n:.0e} nonzeros")
        runs.append(run_child(["lp", "--n", str(n)]))
    return Result(
        name="lp",
        title="LP layer: blocks to a loaded Highs (privopt.lp)",
        size_label="nonzeros n",
        time_label="assembly + pass_to (s, best of 3)",
        memory_label="own peak above the data (MiB)",
        what="A block-angular LP of n nonzeros (`bench/lp_assembly.py`'s blocks: ten CSR "
        "diagonal blocks and one linking triple) built as a `LinearProgram` and passed to a "
        "fresh `Highs`; beside it, HiGHS's own `passModel` on the prepared CSC arrays.",
        expected="Expected: 1 for time and memory (assembly and HiGHS's copy touch each nonzero "
        "a fixed number of times).",
        series=Series(sizes, [r["seconds"] for r in runs], [r["own_mib"] for r in runs]),
        extra={"passModel (s)": [r["passModel_s"] for r in runs]},
    )


def family_mdp(sizes: list[int]) -> Result:
    runs = []
    for n in sizes:
        _progress(f"mdp, K = N = {n}")
        runs.append(run_child(["mdp", "--n", str(n)]))
    road = _data_root() is not None
    return Result(
        name="mdp",
        title="Metric DP: the exact LP by row generation, K = N (privopt.mdp)",
        size_label=f"records N = outputs K ({'Rome road nodes' if road else 'generated grid'})",
        time_label="solve (s)",
        memory_label="own peak above the data (MiB)",
        what="`privopt.mdp.solve(problem, 'lp')` with as many outputs as records (K = N), "
        f"ε = 10/km, η = 2, on {'N Rome road nodes (Haversine)' if road else 'a 1 km grid'}; "
        "every release certified (safe dual bound of the full LP). Issue 17 measured 751 s and "
        "2.9 GB (process peak) on a K = N = 2,000 grid before its work.",
        expected="Expected: at least 2 for time and memory, since the LP has N·K = N² variables "
        "(row generation keeps the |E|·K rows to a fraction, but the columns are all there); "
        "more when the number of row-generation rounds or HiGHS's simplex iterations grow with N.",
        series=Series(sizes, [r["seconds"] for r in runs], [r["own_mib"] for r in runs]),
        references=[
            Reference(2000, 751, "issue 17, before (grid): 751 s", "before"),
            Reference(2000, 60, "goal: ≤ 60 s", "goal"),
        ],
        extra={"certified gap": [r["gap"] for r in runs]},
    )


def family_mdp_grid(sizes: list[int]) -> Result:
    from scaling_mdp import mdp

    with tempfile.TemporaryDirectory() as tmp:
        r = mdp(sizes, Path(tmp) / "mdp.png")
    return Result(
        name="mdp-grid",
        title="Metric DP: the exact LP on the K = N grid (privopt.mdp)",
        size_label="cells N = outputs K (1 km grid)",
        time_label="solve (s)",
        memory_label="process peak RSS (MiB)",
        what="The exact LP on a grid of N 1 km cells with every cell an output (K = N), "
        "ε = 10/km, η = 2 km: issue 17's setting (`bench/scaling_mdp.py`, which runs "
        "`bench/mdp_scale.py` per size).",
        expected="Expected: at least 2, as for the road nodes above.",
        series=Series(sizes, r["solve_s"], [1024 * g for g in r["peak_gib"]]),
        references=[
            Reference(2000, 751, "issue 17, before: 751 s", "before"),
            Reference(2000, 60, "goal: ≤ 60 s", "goal"),
            Reference(2000, 2.9e3 / 1.024 / 1.024, "issue 17, before: 2.9 GB", "before", "memory"),
            Reference(2000, 2048, "goal: ≤ 2 GiB", "goal", "memory"),
        ],
    )


def family_geo(sizes: list[int], reps: int) -> Result:
    from geo_bench import PAPER_TIME, _child

    runs = []
    for k in sizes:
        _progress(f"geo, K = {k}")
        a = argparse.Namespace(
            k=k,
            m=4,
            r_exp=4.0,
            epsilon=10.0,
            reps=reps,
            seed=0,
            rome=None,
            timeout=3600,
            lr_max_size=20,  # L, as in the paper's tables
        )
        r = _child(a, grid=True)
        if "error" in r:
            raise RuntimeError(f"geo at K = {k}: {r['error'][0]}")
        runs.append(r)
    paper = [
        Reference(k, t, "paper Table 1 (Rome, M = 4)" if k == 100 else "", "paper")
        for k, t in zip((100, 200, 300, 400), PAPER_TIME["lrgeo"], strict=True)
    ]
    return Result(
        name="geo",
        title="LR-Geo: CLR-Geo for M = 4 users (privopt.geo)",
        size_label="locations K (generated grid, 0.5 km cells)",
        time_label="whole exchange for 4 users (s)",
        memory_label="process peak RSS (MiB)",
        what="`run_lrgeo` for M = 4 users (clients, CR requests and the solve; the CR table "
        "excluded, as in the artifact) on a generated √K × √K grid of 0.5 km cells with roads "
        "1.2× the straight line, ε = 10/km, r_exp = 4 km, L = 20, γ_graph = 50 km, mean of "
        f"{reps} seeded repetition(s) (`bench/geo_bench.py`'s child). The paper's points are "
        "its Table 1 on the Rome grid.",
        expected="Expected: well below 1. Each user's LP is bounded by its locally relevant "
        "locations (r_exp, L), not by K; what grows with K is the geography around it "
        "(distances, shortest paths within γ_graph).",
        series=Series(
            sizes,
            [float(np.mean(r["time_s"])) for r in runs],
            [r["peak_rss_mib"][0] for r in runs],
        ),
        references=paper,
    )


def family_kanon(sizes: list[int], method: str) -> Result:
    from scaling_kanon import kanon

    data = "adult" if method == "greedy" and _data_root() is not None else "synthetic"
    with tempfile.TemporaryDirectory() as tmp:
        r = kanon(sizes, method, data, Path(tmp) / "kanon.png")
    refs = {
        "greedy": [
            Reference(1e6, 82.7, "issue 17, before: 82.7 s", "before"),
            Reference(1e6, 15, "goal: ≤ 15 s", "goal"),
        ],
        "split_carry": [Reference(1e5, 37, "issue 17, before: 37 s", "before")],
    }[method]
    label = {"greedy": "Greedy Search", "split_carry": "Split & Carry (S = 3, serial)"}[method]
    rows = "UCI Adult replicated" if data == "adult" else "synthetic CENSUS-like rows"
    return Result(
        name=f"kanon-{method.replace('_', '-')}",
        title=f"k-anonymity: {label} (privopt.kanon)",
        size_label=f"rows n ({rows}, k = 3)",
        time_label="algorithm (s)",
        memory_label="process peak RSS (MiB)",
        what=f"`anonymize(..., k=3, method={method!r})` on n {rows} (`bench/scaling_kanon.py`, "
        "which runs `bench/kanon_measure.py` per size); the time is the algorithm's, the output "
        "is verified k-anonymous in the same run.",
        expected="Expected: below 1 on these inputs. Replicated and census-like rows repeat more "
        "as n grows: Greedy scans runs of identical rows and a Split & Carry chunk of identical "
        "rows costs nothing to solve; rows without duplicates would show Greedy's O(n²·m) scan "
        "(docs/kanon.md).",
        series=Series(sizes, r["solve_s"], [1024 * g for g in r["peak_gib"]]),
        references=refs,
        extra={"end to end (s)": r["total_s"]},
    )


def family_census(sizes: list[int]) -> Result:
    from scaling_census import census

    with tempfile.TemporaryDirectory() as tmp:
        r = census(sizes, Path(tmp) / "census.png")
    return Result(
        name="census",
        title="Census: M_H^dp's tree DP, solver alone (privopt.census)",
        size_label="leaves n (4-level hierarchy, N = 20)",
        time_label="solver (s)",
        memory_label="solver's own peak (MiB)",
        what="`tree_postprocess` (M_H^dp's consistent post-processing, certified) on a regular "
        "4-level hierarchy root → 10 → … with 100 households per leaf, N = 20, ε = 1 "
        "(`bench/scaling_census.py`, one process per size); memory is the solver's high-water "
        "mark above the data.",
        expected="Expected: 1 for time and memory (one table per region, each merged once "
        "into its parent).",
        series=Series(sizes, r["solve_s"], r["solver_mib"]),
        references=[
            Reference(1e6, 26.5, "issue 17, before: 24–29 s", "before"),
            Reference(1e6, 5, "goal: ≤ 5 s", "goal"),
            Reference(1e6, 1024, "goal: ≤ 1 GiB", "goal", "memory"),
        ],
    )


def family_cluster(sizes: list[int]) -> Result:
    from scaling_cluster import cluster

    with tempfile.TemporaryDirectory() as tmp:
        r = cluster(sizes, 10, Path(tmp) / "cluster.png")
    return Result(
        name="cluster",
        title="DPM clustering, in memory (privopt.cluster)",
        size_label="points n (d = 10, 64 blobs)",
        time_label="fit (s)",
        memory_label="process peak RSS (MiB)",
        what="`DPM(ε = 1, δ = 1/n^1.5).fit(X)` on n × 10 points of the Synth recipe (64 unit "
        "blobs in [−100, 100]^10; `bench/scaling_cluster.py`, one process per size, data "
        "included in the peak). The paper's point is the authors' DPM on Synth-10d "
        "(n = 10⁵) on 2 cores, spec 004 §13.1.",
        expected="Expected: about 1 for time (each tree level is one pass over the points); "
        "the memory column is the process peak with the data, so its fitted exponent is pulled "
        "down by the resident ~300 MiB until the data (80 MB per 10⁶ points) dominates.",
        series=Series(sizes, r["fit_s"], [1024 * g for g in r["peak_gib"]]),
        references=[
            Reference(1e5, 18.5, "paper: authors' DPM, 17–20 s", "paper"),
            Reference(1e7, 14, "issue 17, before: 14 s", "before"),
            Reference(1e7, 10, "goal: ≤ 10 s", "goal"),
        ],
    )


#: Family -> (runner, full sizes, quick sizes); quick sizes None: left out of --quick.
FAMILIES: dict[str, tuple[Callable[..., Result], list[int], list[int] | None]] = {
    "lp": (family_lp, [300_000, 1_000_000, 3_000_000, 10_000_000], [100_000, 300_000, 1_000_000]),
    "mdp": (family_mdp, [200, 400, 800, 1600], [100, 200, 400]),
    "mdp-grid": (family_mdp_grid, [500, 1000, 2000], None),
    "geo": (family_geo, [100, 400, 1369, 4900, 10000], [100, 400, 1369]),
    "kanon-greedy": (
        lambda s: family_kanon(s, "greedy"),
        [100_000, 300_000, 1_000_000],
        [30_000, 100_000, 300_000],
    ),
    "kanon-split-carry": (
        lambda s: family_kanon(s, "split_carry"),
        [10_000, 30_000, 100_000],
        None,
    ),
    "census": (family_census, [10_000, 100_000, 1_000_000], [1_000, 10_000, 100_000]),
    "cluster": (
        family_cluster,
        [100_000, 300_000, 1_000_000, 3_000_000, 10_000_000],
        [100_000, 300_000, 1_000_000],
    ),
}


#: Families not run at --baseline-rev: their "before" is issue 17's figure on the plot (the
#: K = N = 2,000 grid took 751 s before, longer than the whole report).
NO_BASELINE = {"mdp-grid"}


def measure(name: str, quick: bool, repeats: int = 1) -> Result:
    """The family at its full (or quick) sizes, ``repeats`` times over: per size the least
    time (other jobs' load only ever adds time) and the largest memory."""
    runner, full, small = FAMILIES[name]
    sizes = small if quick else full
    if sizes is None:
        raise ValueError(f"{name} has no --quick sizes")
    runs = []
    for i in range(repeats):
        if repeats > 1:
            _progress(f"{name}: run {i + 1} of {repeats}")
        runs.append(family_geo(sizes, reps=1 if quick else 2) if name == "geo" else runner(sizes))
    return least_time(runs)


def least_time(runs: list[Result]) -> Result:
    """The first result with, per size, the least seconds (and least extra figure) and the
    largest memory over ``runs``."""
    first = runs[0]
    first.series = Series(
        first.series.sizes,
        [min(v) for v in zip(*(r.series.seconds for r in runs), strict=True)],
        [max(v) for v in zip(*(r.series.mib for r in runs), strict=True)],
    )
    first.extra = {
        key: [min(v) for v in zip(*(r.extra[key] for r in runs), strict=True)]
        for key in first.extra
    }
    return first


# ----------------------------------------------------------------------- a baseline revision
def baseline_python(rev: str) -> str:
    """An interpreter with privopt built from git revision ``rev`` (cached under
    ``build/baseline-<sha>``): a virtual environment whose other packages come from this one
    (a .pth line), the revision's sources from ``git archive``, built without isolation."""
    import site
    import sysconfig

    sha = _git("rev-parse", rev).strip()
    root = REPO / "build" / f"baseline-{sha[:12]}"
    python = root / "venv" / "bin" / "python"
    if (root / "built").exists():
        return str(python)
    _progress(f"building privopt at {rev} ({sha[:12]}) into {root} (minutes: C++ core)")
    src = root / "src"
    src.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", sha], capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the build and run dependencies of this environment (the editable privopt's .pth file
    # in them is not read: only site directories' .pth files are)
    Path(purelib, "privopt_baseline_deps.pth").write_text("\n".join(site.getsitepackages()))
    env = {**os.environ, "PATH": f"{sysconfig.get_path('scripts')}:{os.environ['PATH']}"}
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, str(src)], check=True, env=env)
    (root / "built").touch()
    return str(python)


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
    ).stdout


def measure_baseline(names: list[str], quick: bool, rev: str, repeats: int) -> dict[str, Series]:
    """The same families and sizes under REV's privopt (this script, another interpreter)."""
    python = baseline_python(rev)
    # A run from the source tree puts this tree's python/ on PYTHONPATH, which would shadow
    # REV's installed privopt in the baseline interpreter and its children: drop it.
    own = (REPO / "python").resolve()
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    kept = [p for p in paths if p and Path(p).resolve() != own]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(kept)}
    where = subprocess.run(
        [python, "-c", "import privopt; print(privopt.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.strip()
    if Path(where).resolve().is_relative_to(REPO / "python"):
        raise RuntimeError(f"the baseline interpreter imports this tree's privopt ({where})")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "baseline.json"
        cmd = [python, __file__, "--families", *names, "--json", str(out), "--no-page"]
        cmd += ["--repeats", str(repeats)]
        # exit status 1 means some family failed (one REV lacks): the JSON says which
        proc = subprocess.run(cmd + (["--quick"] if quick else []), env=env)
        if not out.exists():
            raise RuntimeError(f"the measurements at {rev} failed (exit status {proc.returncode})")
        saved = json.loads(out.read_text())
    return {
        name: Series(r["sizes"], r["seconds"], r["mib"])
        for name, r in saved.items()
        if "error" not in r
    }


# ----------------------------------------------------------------------- the page
def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _exponents(series: Series | None) -> str:
    if series is None:
        return "—"
    return f"{series.time_exponent:.2f} / {series.memory_exponent:.2f}"


def render(results: list[Result], errors: dict[str, str], context: dict) -> str:
    """docs/scaling.md: how it was measured, the exponents of every family, a section each."""
    rev = context["baseline_rev"]
    lines = [
        "# Scaling",
        "",
        "How privopt's time and memory grow with the size of the input, per family. Each family "
        "runs one operation at 3–5 sizes n, each size in a fresh process (so that its peak "
        "memory is its own), and a least-squares line through (log n, log y) gives the exponent "
        "*a* of y ∝ n^a. An exponent near 1 is linear growth; the smallest sizes carry fixed "
        "costs (imports, start-up, and the ~250–300 MiB a process holds before its data where "
        "memory is the process peak), which lower a fitted exponent; the exponent between the "
        "two largest sizes alone is the least affected by them. Read both with the points. "
        "Plots show the measured points, the fitted lines, and the paper's figure or issue 17's "
        "before/goal figures where there are any (other machines, other settings: context, not "
        "a comparison).",
        "",
        f"Measured {context['date']} by `{context['command']}` on privopt {context['version']} "
        f"(git {context['commit']}), {context['cores']} cores shared with other jobs: load "
        f"average {context['load_start']:.1f} at the start, {context['load_end']:.1f} at the "
        f"end; {context['minutes']:.1f} min in all. Each size ran {context['repeats']} time(s): "
        "the least time is kept (other jobs' load only adds time), and the largest memory. "
        "This page is written by that command: edit "
        "`bench/scaling.py`, not the page.",
        "",
    ]
    header = "| family | sizes n | time exponent / memory exponent | two largest sizes alone |"
    rule = "|---|---|---|---|"
    if rev:
        header += f" before ({rev}) |"
        rule += "---|"
    lines += [header, rule]
    for r in results:
        row = f"| [{r.name}](#{r.name}) | {_sizes(r.series.sizes)} | {_exponents(r.series)} |"
        row += " {:.2f} / {:.2f} |".format(*r.series.last_step)
        lines.append(row + (f" {_exponents(r.before)} |" if rev else ""))
    for name, message in errors.items():
        lines.append(f"| {name} | failed: {message} | | |" + (" |" if rev else ""))
    for r in results:
        lines += ["", *_section(r, rev)]
    return "\n".join(lines) + "\n"


def _sizes(sizes: list[float]) -> str:
    return "; ".join(f"{n:,.0f}" for n in sizes)


def _section(r: Result, rev: str | None) -> list[str]:
    s = r.series
    lines = [
        f"## {r.name}",
        "",
        r.what,
        "",
        f"Time ∝ n^**{s.time_exponent:.2f}**, memory ∝ n^**{s.memory_exponent:.2f}**"
        + (
            f" (before, {rev}: n^{_exponents(r.before).replace(' / ', ', n^')})."
            if r.before
            else "."
        )
        + " Between the two largest sizes alone: n^{:.2f}, n^{:.2f}.".format(*s.last_step),
        "",
    ]
    if r.expected:
        lines += [r.expected, ""]
    cols = ["n", r.time_label, r.memory_label, *r.extra]
    if r.before:
        cols += [f"before: {r.time_label}", f"before: {r.memory_label}"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for i, n in enumerate(s.sizes):
        cells = [f"{n:,.0f}", f"{s.seconds[i]:.3g}", f"{s.mib[i]:,.0f}"]
        cells += [f"{v[i]:.3g}" for v in r.extra.values()]
        if r.before:
            cells += [f"{r.before.seconds[i]:.3g}", f"{r.before.mib[i]:,.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"![{r.title}](scaling/{r.name}.png)"]
    return lines


# ----------------------------------------------------------------------- command line
def run_families(
    names: list[str], quick: bool, repeats: int = 1
) -> tuple[list[Result], dict[str, str]]:
    results, errors = [], {}
    for name in names:
        if quick and FAMILIES[name][2] is None:
            _progress(f"{name}: no --quick sizes, left out")
            continue
        try:
            results.append(measure(name, quick, repeats))
        except Exception as exc:  # noqa: BLE001 - reported; the other families still run
            errors[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
            _progress(f"{name} failed: {errors[name]}")
    return results, errors


def save_json(path: Path, results: list[Result], errors: dict[str, str]) -> None:
    data: dict[str, Any] = {
        r.name: {"sizes": r.series.sizes, "seconds": r.series.seconds, "mib": r.series.mib}
        for r in results
    }
    data.update({name: {"error": message} for name, message in errors.items()})
    _write_atomically(path, json.dumps(data, indent=1))


def print_summary(results: list[Result], errors: dict[str, str]) -> None:
    print("| family | sizes | time exp. | memory exp. | two largest alone | largest n: s, MiB |")
    print("|---|---|---|---|---|---|")
    for r in results:
        s = r.series
        print(
            f"| {r.name} | {_sizes(s.sizes)} | {s.time_exponent:.2f} | "
            f"{s.memory_exponent:.2f} | {s.last_step[0]:.2f} / {s.last_step[1]:.2f} | "
            f"{s.seconds[-1]:.3g}, {s.mib[-1]:,.0f} |"
        )
    for name, message in errors.items():
        print(f"| {name} | failed: {message} | | | | |")


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", nargs="+", choices=list(FAMILIES), default=list(FAMILIES))
    ap.add_argument("--quick", action="store_true", help="smaller sizes (about 2 minutes)")
    ap.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="runs per size, the least time kept (default 2, 1 with --quick)",
    )
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "scaling.md")
    ap.add_argument("--baseline-rev", default=None, help="also measure this git revision")
    ap.add_argument("--json", type=Path, default=None, help="also save the measurements")
    ap.add_argument("--no-page", action="store_true", help="do not write the page and plots")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "child":
        return child_main(sys.argv[2:])
    args = parse(argv)
    data = _data_root()
    if data is not None:
        os.environ.setdefault("PRIVOPT_DATA", str(data))  # the children's real data sets
    start, load_start = time.perf_counter(), os.getloadavg()[0]
    _progress(f"load average at the start {load_start:.1f}")
    repeats = args.repeats or (1 if args.quick else 2)
    results, errors = run_families(args.families, args.quick, repeats)
    if args.baseline_rev:
        before = measure_baseline(
            [r.name for r in results if r.name not in NO_BASELINE],
            args.quick,
            args.baseline_rev,
            repeats,
        )
        for r in results:
            r.before = before.get(r.name)
    if args.json:
        save_json(args.json, results, errors)
    print_summary(results, errors)
    if not args.no_page:
        context = {
            "date": dt.date.today().isoformat(),
            "command": "python bench/scaling.py"
            + (" --quick" if args.quick else "")
            + (f" --repeats {args.repeats}" if args.repeats else "")
            + (f" --baseline-rev {args.baseline_rev}" if args.baseline_rev else ""),
            "version": _version(),
            "commit": _git("rev-parse", "--short", "HEAD").strip(),
            "cores": os.cpu_count(),
            "load_start": load_start,
            "load_end": os.getloadavg()[0],
            "minutes": (time.perf_counter() - start) / 60,
            "baseline_rev": args.baseline_rev,
            "repeats": repeats,
        }
        for r in results:
            plot(r, args.out.parent / "scaling" / f"{r.name}.png", args.baseline_rev)
        _write_atomically(args.out, render(results, errors, context))
        _progress(f"wrote {args.out}")
    return 1 if errors else 0


def _version() -> str:
    import privopt

    return privopt.__version__


def child_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="scaling.py child")
    ap.add_argument("family", choices=list(CHILDREN))
    ap.add_argument("--n", type=int, required=True)
    a = ap.parse_args(argv)
    print(json.dumps(CHILDREN[a.family](a.n)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
