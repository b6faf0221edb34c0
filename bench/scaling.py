"""Scaling report: every family at 3–5 sizes, log-log slopes, docs/scaling.md.

Each family measures one operation at several input sizes n, every size in a fresh process (so
that its peak memory is its own), fits time ∝ n^a and memory ∝ n^b by least squares on the logs,
and draws one plot (measured points, fitted lines, the paper's point and the issue's before/goal
points where there are any). Progress goes to stderr; the exponents and every family's measured
points go to stdout as Markdown tables.

    python bench/scaling.py                          # every family, ~20 min on 2 cores
    python bench/scaling.py --quick                  # smaller sizes, ~2 min
    python bench/scaling.py census kanon-greedy      # some families
    python bench/scaling.py mdp-grid --sizes 500 1000 2000 --baseline-rev fedfbc0
    python bench/scaling.py --baseline-rev 508e491   # also REV's exponents, same sizes

The page ``docs/scaling.md`` and its plots ``docs/scaling/*.png`` are written (atomically: temp +
rename) by a run of every family at their full sizes; a run of some families, of other sizes or
``--quick`` writes a page only where ``--out`` says. With ``--baseline-rev REV`` the same
measurements run a second time with privopt built from git revision REV (a cached virtual
environment under ``build/``, see ``harness.interpreter_at``): the plots show both, the tables
the exponents before and after.

The families' children are the bench scripts that measure one run at scale: ``mdp_scale.py``
(mdp-grid), ``geo_bench.py`` (geo), ``kanon_scale.py`` (kanon-*), ``census_scale.py`` (census)
and ``dpm_scale.py`` (cluster); lp and mdp run in this script's own ``child`` mode. None of them
imports this script.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import census_scale
import dpm_scale
import geo_bench
import kanon_scale
import mdp_scale
import numpy as np
from harness import (
    REPO,
    data_root,
    git,
    interpreter_at,
    log_log_slope,
    measured,
    print_json,
    run_json,
    save_figure,
    write_atomically,
)

#: The page a run of every family at its full sizes writes (with its plots beside it).
PAGE = REPO / "docs" / "scaling.md"
#: Hand-kept notes appended to a family's section (``<family>.md``): measurements this script does
#: not take, such as fan-out on a cluster, each with its own command and machine.
NOTES = REPO / "bench" / "scaling_notes"


#: The page's fixed section on fanning out from the command line, before the measured ones.
FROM_THE_COMMAND_LINE = """## From the command line

Every family whose work splits into independent tasks runs them on Dask from the command line,
with one of:

- `--workers N`: a local Dask cluster of N single-threaded worker processes, started for the run
  and stopped at its end (also on an error, Ctrl-C or SIGTERM);
- `--scheduler ADDRESS` (e.g. `tcp://10.0.0.5:8786`): a running Dask cluster, whose workers need
  privopt installed; `--connect-timeout SECONDS` (default 30) bounds the wait for it;
- `--threads N` (`mdp`, `geo`, `geo serve`, `kanon`, `census`): N threads of the command's own
  process.

The command's process (the driver) reads the input, runs the serial part and writes the outputs;
the workers run the tasks. The release is the serial run's, byte for byte where the serial run is
deterministic. A worker lost mid-run is replaced (a local cluster restarts it) and its tasks run
again: Benders resubmits a lost batch of subproblems itself (twice at most; the batch restarts
from a cold solver, so its matrix agrees with the serial one to rounding), the other families
rely on Dask recomputing lost tasks. Options a run would not use (`--workers` with one LP) are
refused, not ignored.
"""

#: (command, what runs on the workers, what crosses the wire, what stays in the driver).
FAN_OUT = [
    (
        "privopt mdp points.csv --method benders --epsilon 2 --workers 8",
        "the Benders subproblems, one batch per worker",
        "each batch's subproblem data once (the worker keeps it and a warm solver); per round, "
        "the master point out and the cuts back",
        "the master problem",
    ),
    (
        "privopt mdp points.csv --sweep-epsilon 0.5,1,2 --workers 3",
        "one matrix per ε",
        "the problem to each task; the matrix and its summary back",
        "the table and plots",
    ),
    (
        "privopt geo --rome rome/ --epsilon 5 --method benders --workers 8",
        "the per-user subproblems of CLR-Geo's Benders",
        "as for mdp Benders, one user's block per subproblem",
        "the CR table, the master",
    ),
    (
        "privopt geo serve --rome rome/ --epsilon 5 --scheduler tcp://10.0.0.5:8786",
        "each batch's per-user subproblems",
        "as for geo, per batch",
        "the HTTP service, the batching",
    ),
    (
        "privopt kanon table.csv --anonymity 5 --method split-carry --parts 16 --workers 8",
        "each part's Split & Carry, then the seams across the cuts",
        "each part's rows (quasi-identifier columns, sorted); its class labels back",
        "the sort, the cuts, the published table",
    ),
    (
        "privopt census --synthetic-us --epsilon 1 --method m-h-dp --workers 8",
        "the tree DP of each subtree below the cut level (at least 4 subtrees per batch, "
        "about 4 batches per worker), up then down",
        "each batch's structure (fan-outs, int32) and noisy counts (int32 when they fit) once "
        "(the worker keeps them and its tables); "
        "per round, up: the subtrees' root tables back as slope steps; down: their root values "
        "out, their released counts (int32) back",
        "the noise, the DP of the levels above the cut and of the root",
    ),
    (
        "privopt census --streamed-synthetic 100,1000,1000 --epsilon 1 --workers 16 --out big",
        "each top-level region's generation, noise, bottom-up tables and, later, its top-down "
        "pass and its released counts (written by the worker)",
        "a few numbers per region out (its index, its root values); its root tables back",
        "the root's measurement and DP; nothing of the regions below it",
    ),
    (
        "privopt cluster points.npy --bounds -100 100 --epsilon 1 --delta 1e-12 --workers 8",
        "the passes over the data, per row chunk (`--chunk-rows`, default 1,048,576)",
        "the file's path and each chunk's rows (the workers read the `.npy` themselves); per "
        "tree level a count histogram per chunk, then the leaf sums; each column once, chunk by "
        "chunk, for the split width; the labels, four chunks at a time",
        "the split tree, the split width's two n-float buffers, four chunks' labels (appended "
        "to `labels.csv`)",
    ),
]

FAN_OUT_NOTE = """`privopt cluster` needs a `.npy` input on Dask (a CSV is refused: this process
would parse it whole) and, with `--scheduler`, a path that names the same file on every worker.
`--progress on` shows the cluster's work as it is gathered: Benders rounds, split-carry parts,
census subtrees (streamed: top-level regions), DPM's tree levels and label batches.
`docs/errors.md` lists the refusals."""


#: Issue 26's fan-out goals, the 16-core figures and the models' predictions, hand-kept from the
#: families' notes (which give each figure's command and inputs).
FAN_OUT_DATA = NOTES / "fan_out.json"
FAN_OUT_HEADING = "## Fan-out on many workers"


def fan_out_section(data: dict[str, Any]) -> list[str]:
    """The page's section on the fan-out goals: a table per family and the plot."""
    lines = [
        FAN_OUT_HEADING,
        "",
        data["intro"],
        "",
        "| family | workload | goal | measured on 16 cores | predicted now | what bounds it |",
        "|---|---|---|---|---|---|",
    ]
    for row in data["rows"]:
        lines.append(
            f"| [{row['family']}](#{row['family']}) | {row['workload']} | {row['goal']} | "
            f"{row['measured']} | {row['predicted']} | {row['bound']} |"
        )
    lines += memory_table(data.get("memory"))
    title = "Fan-out: goals, 16-core measurements and the models' predictions"
    return [*lines, "", f"![{title}](scaling/fan-out.png)"]


def memory_table(memory: dict[str, Any] | None) -> list[str]:
    """The peak RSS per worker over the worker counts measured (memory does not need the
    cores, so the 2-core machine measures it), with what each family's model predicts for
    its goal's workload."""
    if not memory:
        return []
    counts = sorted({int(w) for row in memory["rows"] for w in row["measured"]})
    lines = [
        "",
        memory["intro"],
        "",
        "| family | workload | "
        + " | ".join(f"{w} worker{'s' if w > 1 else ''}" for w in counts)
        + " | predicted | goal | command |",
        "|---|---|" + "---|" * len(counts) + "---|---|---|",
    ]
    for row in memory["rows"]:
        cells = [f"{row['measured'][str(w)]:,.0f}" if str(w) in row["measured"] else "—"
                 for w in counts]  # fmt: skip
        lines.append(
            f"| [{row['family']}](#{row['family']}) | {row['workload']} | "
            + " | ".join(cells)
            + f" | {row.get('predicted_text', '—')} | {row.get('goal_text', '—')} "
            f"| `{row['command']}` |"
        )
    return lines


def plot_fan_out(data: dict[str, Any], out: Path) -> None:
    """Speed-up against workers (predicted curves or ranges, goals, 16-core points) and the
    time goals (predicted seconds against the goal), written atomically to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    memory = (data.get("memory") or {}).get("rows", [])
    fig, axes = plt.subplots(
        1, 3 if memory else 2, figsize=(16 if memory else 11, 4.2),
        width_ratios=[3, 2, 3] if memory else [3, 2],
    )  # fmt: skip
    left, right = axes[0], axes[1]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    curves = [r for r in data["rows"] if "curve" in r]
    for i, (colour, row) in enumerate(zip(colours, curves, strict=False)):
        nudge = 1.0 + 0.04 * (i - (len(curves) - 1) / 2)  # goals and points at one x apart
        ws = sorted(int(w) for w in row["curve"])
        lo = [row["curve"][str(w)][0] for w in ws]
        hi = [row["curve"][str(w)][1] for w in ws]
        mid = [(a + b) / 2 for a, b in zip(lo, hi, strict=True)]
        left.plot(ws, mid, "o-", color=colour, label=f"{row['label']}: predicted")
        if lo != hi:
            left.fill_between(ws, lo, hi, color=colour, alpha=0.2)
            left.vlines(ws, lo, hi, color=colour)
        gw, gs = row["goal_point"]
        left.plot([gw * nudge], [gs], "*", color=colour, markersize=14, markeredgecolor="black")
        if "measured_point" in row:
            mw, ms = row["measured_point"]
            left.plot([mw * nudge], [ms], "X", color=colour, markersize=9, markeredgecolor="black")
    left.plot([], [], "*", color="grey", markersize=12, markeredgecolor="black", label="goal")
    left.plot([], [], "X", color="grey", markersize=8, markeredgecolor="black",
              label="measured on 16 cores (earlier code)")  # fmt: skip
    ideal = [1, 16]
    left.plot(ideal, ideal, ":", color="grey", label="ideal (speed-up = workers)")
    left.set_xscale("log", base=2)
    left.set_xticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
    left.set_xlabel("Dask workers")
    left.set_ylabel("speed-up over the serial run")
    left.set_ylim(0, 16.5)
    left.set_title("Speed-up goals")
    left.legend(fontsize=7, loc="upper left")
    timed = [r for r in data["rows"] if "seconds" in r]
    names = [textwrap.fill(r["label"], 22) for r in timed]
    for i, row in enumerate(timed):
        lo, hi = row["seconds"]["predicted"]
        right.barh(i, hi, color=colours[(len(curves) + i) % len(colours)], alpha=0.35)
        right.barh(i, lo, color=colours[(len(curves) + i) % len(colours)])
        right.plot([row["seconds"]["goal"]] * 2, [i - 0.4, i + 0.4], "k-", linewidth=2)
    right.set_yticks(range(len(timed)), names, fontsize=8)
    right.plot([], [], "k-", linewidth=2, label="goal")
    right.barh([], [], color="grey", label="predicted (light: upper end)")
    right.legend(fontsize=7, loc="lower right")
    right.set_xlabel("seconds on 16 workers")
    right.set_title("Time goals")
    if memory:
        # Each family in the colour of its speed-up curve or time bar.
        family_colour: dict[str, str] = {}
        for i, row in enumerate(curves + timed):
            family_colour.setdefault(row["family"], colours[i % len(colours)])
        _plot_memory(axes[2], memory, family_colour)
    fig.suptitle("Fan-out on a 16-core machine: predictions from the 2-core models", fontsize=10)
    fig.tight_layout()
    save_figure(fig, out)


def _plot_memory(ax: Any, rows: list[dict[str, Any]], family_colour: dict[str, str]) -> None:
    """Peak RSS per worker against workers: measured points (lines), the models' figures
    (hollow, dashed; from the last measured point where they are of the same workload) and
    the memory goals (stars)."""
    for row in rows:
        colour = family_colour.get(row["family"], "grey")
        ws = sorted(int(w) for w in row["measured"])
        ys = [row["measured"][str(w)] / 1024 for w in ws]
        ax.plot(ws, ys, "o-", color=colour, label=row["label"])
        # Predicted points of the same workload continue the measured line; those of the
        # goal's larger workload stand apart, joined among themselves.
        pred = sorted((int(w), m / 1024) for w, m in row.get("predicted", {}).items())
        if pred:
            start = [(ws[-1], ys[-1])] if row.get("joined") else []
            px, py = zip(*(start + pred), strict=True)
            ax.plot(px, py, "--", color=colour)
            ax.plot([w for w, _ in pred], [y for _, y in pred], "o", color=colour,
                    markerfacecolor="white")  # fmt: skip
        if "goal" in row:
            gw, gmib = row["goal"]
            ax.plot([gw], [gmib / 1024], "*", color=colour, markersize=14,
                    markeredgecolor="black")  # fmt: skip
    ax.plot([], [], "o", color="grey", markerfacecolor="white", label="predicted")
    ax.plot([], [], "*", color="grey", markersize=12, markeredgecolor="black", label="goal")
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
    ax.set_xlabel("Dask workers (server processes for geo)")
    ax.set_ylabel("peak RSS per worker (GiB)")
    ax.set_ylim(bottom=0)
    ax.set_title("Memory per worker (measured on 2 cores)")
    ax.legend(fontsize=7, loc="upper left")


def from_the_command_line() -> list[str]:
    """The page's section on ``--workers``/``--scheduler``: the options, then one example per
    family with what runs where and what is shipped."""
    lines = [FROM_THE_COMMAND_LINE.rstrip("\n"), ""]
    lines += [
        "| command | runs on the workers | sent over the wire | stays in the driver |",
        "|---|---|---|---|",
    ]
    lines += [f"| `{cmd}` | {work} | {wire} | {driver} |" for cmd, work, wire, driver in FAN_OUT]
    return [*lines, "", FAN_OUT_NOTE]


# ----------------------------------------------------------------------- results and plots
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
    save_figure(fig, out)


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


# ----------------------------------------------------------------------- this script's children
def child_lp(n: int) -> dict:
    """Blocks of n nonzeros -> a loaded Highs (assembly + pass_to), best of 3, against
    passModel on the prepared arrays."""
    from lp_assembly import assemble, make_blocks, pass_model, pass_to  # privopt, HiGHS: child only

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

    data = data_root()
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


CHILDREN = {"lp": child_lp, "mdp": child_mdp}


def run_child(family: str, n: int) -> dict:
    """``python bench/scaling.py child FAMILY --n N`` in a fresh process; its JSON line."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "child", family, "--n", str(n)]
    return _checked(run_json(cmd), f"{family} at n = {n}")


def _checked(result: dict, what: str) -> dict:
    """A child's result, or the child's error raised (the family is then listed as failed)."""
    if "error" in result:
        raise RuntimeError(f"{what}: {result['error']}")
    return result


# ----------------------------------------------------------------------- the families
def _progress(message: str) -> None:
    print(f"scaling: {message}", file=sys.stderr, flush=True)


def family_lp(sizes: list[int], quick: bool) -> Result:
    runs = []
    for n in sizes:
        _progress(f"lp, {n:.0e} nonzeros")
        runs.append(run_child("lp", n))
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


def family_mdp(sizes: list[int], quick: bool) -> Result:
    runs = []
    for n in sizes:
        _progress(f"mdp, K = N = {n}")
        runs.append(run_child("mdp", n))
    road = data_root() is not None
    return Result(
        name="mdp",
        title="Metric DP: the exact LP by row generation, K = N (privopt.mdp)",
        size_label=f"records N = outputs K ({'Rome road nodes' if road else 'generated grid'})",
        time_label="solve (s)",
        memory_label="own peak above the data (MiB)",
        what="`privopt.mdp.solve(problem, 'lp')` with as many outputs as records (K = N), "
        f"ε = 10/km, η = 2, on {'N Rome road nodes (Haversine)' if road else 'a 1 km grid'}; "
        "every release certified (safe dual bound of the full LP). A first version measured "
        "751 s and "
        "2.9 GB (process peak) on a K = N = 2,000 grid before its work.",
        expected="Expected: at least 2 for time and memory, since the LP has N·K = N² variables "
        "(row generation keeps the |E|·K rows to a fraction, but the columns are all there); "
        "more when the number of row-generation rounds or HiGHS's simplex iterations grow with N.",
        series=Series(sizes, [r["seconds"] for r in runs], [r["own_mib"] for r in runs]),
        references=[
            Reference(2000, 751, "first version (grid): 751 s", "before"),
            Reference(2000, 60, "goal: ≤ 60 s", "goal"),
        ],
        extra={"certified gap": [r["gap"] for r in runs]},
    )


def family_mdp_grid(sizes: list[int], quick: bool) -> Result:
    runs = []
    for n in sizes:
        _progress(f"mdp-grid, N = K = {n}")
        r = mdp_scale.run_child(f"grid-kn:{n}", None, None, limit=1800.0)
        runs.append(_checked(r, f"mdp exact LP at N = {n}"))
    return Result(
        name="mdp-grid",
        title="Metric DP: the exact LP on the K = N grid (privopt.mdp)",
        size_label="cells N = outputs K (1 km grid)",
        time_label="solve (s)",
        memory_label="process peak RSS (MiB)",
        what="The exact LP on a grid of N 1 km cells with every cell an output (K = N), "
        "ε = 10/km, η = 2 km: the setting of the first measurement (`bench/mdp_scale.py`'s "
        "workload "
        "`grid-kn:N`, one process per size).",
        expected="Expected: at least 2, as for the road nodes above.",
        series=Series(sizes, [r["time_s"] for r in runs], [r["peak_rss_mib"] for r in runs]),
        references=[
            Reference(2000, 751, "first version: 751 s", "before"),
            Reference(2000, 60, "goal: ≤ 60 s", "goal"),
            Reference(2000, 2.9e3 / 1.024 / 1.024, "first version: 2.9 GB", "before", "memory"),
            Reference(2000, 2048, "goal: ≤ 2 GiB", "goal", "memory"),
        ],
    )


def family_geo(sizes: list[int], quick: bool) -> Result:
    reps = 1 if quick else 2
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
            anchor=False,
        )
        r = geo_bench._child(a, grid=True)
        if "error" in r:
            raise RuntimeError(f"geo at K = {k}: {r['error'][0]}")
        runs.append(r)
    paper = [
        Reference(k, t, "paper Table 1 (Rome, M = 4)" if k == 100 else "", "paper")
        for k, t in zip((100, 200, 300, 400), geo_bench.PAPER_TIME["lrgeo"], strict=True)
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
    data = "adult" if method == "greedy" and data_root() is not None else "synthetic"
    runs = []
    for n in sizes:
        _progress(f"kanon {method}, n = {n:.0e}")
        r = kanon_scale.run_child(["--method", method, "--data", data, "--n", str(n)])
        runs.append(_checked(r, f"kanon {method} at n = {n}"))
    refs = {
        "greedy": [
            Reference(1e6, 82.7, "first version: 82.7 s", "before"),
            Reference(1e6, 15, "goal: ≤ 15 s", "goal"),
        ],
        "split_carry": [Reference(1e5, 37, "first version: 37 s", "before")],
    }[method]
    label = {"greedy": "Greedy Search", "split_carry": "Split & Carry (S = 3, serial)"}[method]
    rows = "UCI Adult replicated" if data == "adult" else "synthetic CENSUS-like rows"
    return Result(
        name=f"kanon-{method.replace('_', '-')}",
        title=f"k-anonymity: {label} (privopt.kanon)",
        size_label=f"rows n ({rows}, k = 3)",
        time_label="algorithm (s)",
        memory_label="process peak RSS (MiB)",
        what=f"`anonymize(..., k=3, method={method!r})` on n {rows} (`bench/kanon_scale.py`'s "
        "child, one process per size); the time is the algorithm's, the output is verified "
        "k-anonymous in the same run.",
        expected="Expected: below 1 on these inputs. Replicated and census-like rows repeat more "
        "as n grows: Greedy scans runs of identical rows and a Split & Carry chunk of identical "
        "rows costs nothing to solve; rows without duplicates would show Greedy's O(n²·m) scan "
        "({doc}`performance`, k-anonymity).",
        series=Series(sizes, [r["solve"] for r in runs], [r["peak_rss_mib"] for r in runs]),
        references=refs,
        extra={"end to end (s)": [r["total"] for r in runs]},
    )


def family_census(sizes: list[int], quick: bool) -> Result:
    runs = []
    for n in sizes:
        _progress(f"census, {n:.0e} leaves")
        spec = {"fanouts": census_scale.FANOUTS[n], "N": 20, "eps": 1.0, "method": "regions"}
        runs.append(_checked(census_scale.run_child("solver", spec), f"census at {n} leaves"))
    return Result(
        name="census",
        title="Census: the exact tree post-processing (M_H^dp), solver alone (privopt.census)",
        size_label="leaves n (4-level hierarchy, N = 20)",
        time_label="solver (s)",
        memory_label="solver's own peak (MiB)",
        what="`tree_postprocess` (M_H^dp's consistent post-processing, certified) on a regular "
        "4-level hierarchy root → 10 → … with 100 households per leaf, N = 20, ε = 1 "
        "(`bench/census_scale.py`'s solver child, one process per size); memory is the solver's "
        "high-water mark above the data.",
        expected="Expected: 1 for time and memory (one table per region, each merged once "
        "into its parent).",
        series=Series(
            sizes,
            [r["seconds"] for r in runs],
            [max(r["solver_peak_mib"] - r["before_mib"], 1.0) for r in runs],
        ),
        references=[
            Reference(1e6, 26.5, "first version: 24–29 s", "before"),
            Reference(1e6, 5, "goal: ≤ 5 s", "goal"),
            Reference(1e6, 1024, "goal: ≤ 1 GiB", "goal", "memory"),
        ],
    )


def family_cluster(sizes: list[int], quick: bool) -> Result:
    runs = []
    for n in sizes:
        _progress(f"cluster, n = {n:.0e}")
        r = dpm_scale.run_child(sys.executable, ["--n", str(n), "--d", "10"])
        runs.append(_checked(r, f"DPM fit at n = {n}"))
    return Result(
        name="cluster",
        title="DPM clustering, in memory (privopt.cluster)",
        size_label="points n (d = 10, 64 blobs)",
        time_label="fit (s)",
        memory_label="process peak RSS (MiB)",
        what="`DPM(epsilon=1, delta=1 / n**1.5).fit(X)` on n × 10 points of the Synth recipe "
        "(64 unit blobs in [−100, 100]^10; `bench/dpm_scale.py`'s child, one process per size, "
        "data included in the peak). The paper's point is the authors' DPM on Synth-10d "
        "(n = 10⁵) on 2 cores, as the DPM paper reports it.",
        expected="Expected: about 1 for time (each tree level is one pass over the points); "
        "the memory column is the process peak with the data, so its fitted exponent is pulled "
        "down by the resident ~300 MiB until the data (80 MB per 10⁶ points) dominates.",
        series=Series(sizes, [r["fit_s"] for r in runs], [1024 * r["peak_gib"] for r in runs]),
        references=[
            Reference(1e5, 18.5, "paper: authors' DPM, 17–20 s", "paper"),
            Reference(1e7, 14, "first version: 14 s", "before"),
            Reference(1e7, 10, "goal: ≤ 10 s", "goal"),
        ],
    )


@dataclass(frozen=True)
class Family:
    """How a family runs: ``runner(sizes, quick)``, its full and ``--quick`` sizes (None: left
    out of ``--quick``) and, where only some sizes have an instance, those sizes."""

    runner: Callable[[list[int], bool], Result]
    sizes: list[int]
    quick: list[int] | None
    valid: tuple[int, ...] | None = None


FAMILIES: dict[str, Family] = {
    "lp": Family(
        family_lp, [300_000, 1_000_000, 3_000_000, 10_000_000], [100_000, 300_000, 1_000_000]
    ),
    "mdp": Family(family_mdp, [200, 400, 800, 1600], [100, 200, 400]),
    "mdp-grid": Family(family_mdp_grid, [500, 1000, 2000], None, tuple(mdp_scale.GRIDS)),
    "geo": Family(family_geo, [100, 400, 1369, 4900, 10000], [100, 400, 1369]),
    "kanon-greedy": Family(
        lambda s, quick: family_kanon(s, "greedy"),
        [100_000, 300_000, 1_000_000],
        [30_000, 100_000, 300_000],
    ),
    "kanon-split-carry": Family(
        lambda s, quick: family_kanon(s, "split_carry"), [10_000, 30_000, 100_000], None
    ),
    "census": Family(
        family_census,
        [10_000, 100_000, 1_000_000],
        [1_000, 10_000, 100_000],
        tuple(census_scale.FANOUTS),
    ),
    "cluster": Family(
        family_cluster,
        [100_000, 300_000, 1_000_000, 3_000_000, 10_000_000],
        [100_000, 300_000, 1_000_000],
    ),
}


#: Families left out of a whole report's --baseline-rev (named ones run): their "before" is
#: issue 17's figure on the plot (the K = N = 2,000 grid took 751 s before, longer than the
#: whole report).
NO_BASELINE = {"mdp-grid"}


def sizes_of(name: str, quick: bool, sizes: list[int] | None) -> list[int] | None:
    """The sizes family ``name`` runs at: ``sizes`` when given, else its full or quick ones
    (None: the family has no quick sizes)."""
    family = FAMILIES[name]
    return sizes or (family.quick if quick else family.sizes)


def measure(name: str, sizes: list[int], quick: bool, repeats: int = 1) -> Result:
    """The family at ``sizes``, ``repeats`` times over: per size the least time (other jobs'
    load only ever adds time) and the largest memory."""
    runs = []
    for i in range(repeats):
        if repeats > 1:
            _progress(f"{name}: run {i + 1} of {repeats}")
        runs.append(FAMILIES[name].runner(sizes, quick))
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


def measure_baseline(args: argparse.Namespace, names: list[str]) -> dict[str, Series]:
    """The same families and sizes under REV's privopt (this script, REV's interpreter)."""
    python, env = interpreter_at(args.baseline_rev)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "baseline.json"
        cmd = [python, __file__, *names, "--json", str(out), "--no-page"]
        cmd += ["--repeats", str(args.repeats)]
        cmd += ["--quick"] if args.quick else []
        cmd += ["--sizes", *map(str, args.sizes)] if args.sizes else []
        # exit status 1 means some family failed (one REV lacks): the JSON says which
        # its progress and tables go to stderr: this run's stdout carries this run's tables
        status = subprocess.run(cmd, env=env, stdout=sys.stderr).returncode
        if not out.exists():
            raise RuntimeError(
                f"the measurements at {args.baseline_rev} failed (exit status {status})"
            )
        saved = json.loads(out.read_text())
    return {
        name: Series(r["sizes"], r["seconds"], r["mib"])
        for name, r in saved.items()
        if "error" not in r
    }


# ----------------------------------------------------------------------- tables and the page
def _exponents(series: Series | None) -> str:
    if series is None:
        return "—"
    return f"{series.time_exponent:.2f} / {series.memory_exponent:.2f}"


def _sizes(sizes: list[float]) -> str:
    return "; ".join(f"{n:,.0f}" for n in sizes)


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
        "Plots show the measured points, the fitted lines, and the paper's figure or the earlier "
        "before/goal figures where there are any (other machines, other settings: context, not "
        "a comparison).",
        "",
        f"Measured {context['date']} by `{context['command']}` on privopt {context['version']} "
        f"(git {context['commit']}), {context['cores']} cores shared with other jobs: load "
        f"average {context['load_start']:.1f} at the start, {context['load_end']:.1f} at the "
        f"end; {context['minutes']:.1f} min in all. Each size ran {context['repeats']} time(s): "
        "the least time is kept (other jobs' load only adds time), and the largest memory. "
        "This page is written by that command: edit "
        "`bench/scaling.py`, not the page (notes measured by other commands, which they name, "
        "come from `bench/scaling_notes/`).",
        "",
        *_exponent_table(results, errors, rev, links=True),
        "",
        *from_the_command_line(),
    ]
    if FAN_OUT_DATA.exists():
        lines += ["", *fan_out_section(json.loads(FAN_OUT_DATA.read_text()))]
    for r in results:
        lines += ["", *_section(r, rev)]
    return "\n".join(lines) + "\n"


def _exponent_table(
    results: list[Result], errors: dict[str, str], rev: str | None, links: bool
) -> list[str]:
    header = "| family | sizes n | time exponent / memory exponent | two largest sizes alone |"
    rule = "|---|---|---|---|"
    if rev:
        header += f" before ({rev}) |"
        rule += "---|"
    lines = [header, rule]
    for r in results:
        name = f"[{r.name}](#{r.name})" if links else r.name
        row = f"| {name} | {_sizes(r.series.sizes)} | {_exponents(r.series)} |"
        row += " {:.2f} / {:.2f} |".format(*r.series.last_step)
        lines.append(row + (f" {_exponents(r.before)} |" if rev else ""))
    for name, message in errors.items():
        lines.append(f"| {name} | failed: {message} | | |" + (" |" if rev else ""))
    return lines


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
    lines += _points_table(r)
    lines += ["", f"![{r.title}](scaling/{r.name}.png)"]
    note = NOTES / f"{r.name}.md"
    if note.exists():
        lines += ["", note.read_text().rstrip("\n")]
    return lines


def _points_table(r: Result) -> list[str]:
    """The measured points of one family (and REV's), one row per size."""
    s = r.series
    cols = ["n", r.time_label, r.memory_label, *r.extra]
    if r.before:
        cols += [f"before: {r.time_label}", f"before: {r.memory_label}"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for i, n in enumerate(s.sizes):
        cells = [f"{n:,.0f}", f"{s.seconds[i]:.3g}", f"{s.mib[i]:,.0f}"]
        cells += [f"{v[i]:.3g}" for v in r.extra.values()]
        if r.before:
            cells += [f"{r.before.seconds[i]:.3g}", f"{r.before.mib[i]:,.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def print_tables(results: list[Result], errors: dict[str, str], rev: str | None) -> None:
    """stdout: the exponents of every family, then each family's measured points."""
    print("\n".join(_exponent_table(results, errors, rev, links=False)))
    for r in results:
        print(f"\n{r.name}: {r.title}\n")
        print("\n".join(_points_table(r)))


def save_json(path: Path, results: list[Result], errors: dict[str, str]) -> None:
    data: dict[str, Any] = {
        r.name: {"sizes": r.series.sizes, "seconds": r.series.seconds, "mib": r.series.mib}
        for r in results
    }
    data.update({name: {"error": message} for name, message in errors.items()})
    write_atomically(path, json.dumps(data, indent=1))


# ----------------------------------------------------------------------- command line
def run_families(
    names: list[str], quick: bool, sizes: list[int] | None, repeats: int
) -> tuple[list[Result], dict[str, str]]:
    results, errors = [], {}
    for name in names:
        chosen = sizes_of(name, quick, sizes)
        if chosen is None:
            _progress(f"{name}: no --quick sizes, left out")
            continue
        try:
            results.append(measure(name, chosen, quick, repeats))
        except Exception as exc:  # noqa: BLE001 - reported; the other families still run
            errors[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
            _progress(f"{name} failed: {errors[name]}")
    return results, errors


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=f"families: {', '.join(FAMILIES)} (default: all)",
    )
    ap.add_argument("families", nargs="*", metavar="FAMILY", help="families to run")
    ap.add_argument("--quick", action="store_true", help="smaller sizes (about 2 minutes)")
    ap.add_argument(
        "--sizes", type=int, nargs="+", default=None, help="sizes n of the one FAMILY named"
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="runs per size, the least time kept (default 2, 1 with --quick)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"write the page and plots here (default {PAGE.relative_to(REPO)} for a run of "
        "every family at their full sizes; none otherwise)",
    )
    ap.add_argument("--baseline-rev", default=None, help="also measure this git revision")
    ap.add_argument("--json", type=Path, default=None, help="also save the measurements")
    ap.add_argument("--no-page", action="store_true", help="do not write the page and plots")
    args = ap.parse_args(argv)
    unknown = [f for f in args.families if f not in FAMILIES]
    if unknown:
        ap.error(f"unknown family {', '.join(unknown)} (choose from {', '.join(FAMILIES)})")
    if args.sizes is not None:
        _check_sizes(ap, args)
    if args.repeats is not None and args.repeats < 1:
        ap.error(f"--repeats must be at least 1, not {args.repeats}")
    args.named = list(args.families)
    args.families = args.families or list(FAMILIES)
    args.repeats = args.repeats or (1 if args.quick else 2)
    whole = not args.named and not args.quick and args.sizes is None
    args.page = None if args.no_page else args.out or (PAGE if whole else None)
    return args


def _check_sizes(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if len(args.families) != 1:
        ap.error("--sizes needs exactly one FAMILY")
    if args.quick:
        ap.error("--sizes and --quick: give one of them")
    if len(set(args.sizes)) < 2 or min(args.sizes) < 1:
        ap.error("--sizes: a fit needs at least 2 different positive sizes")
    valid = FAMILIES[args.families[0]].valid
    wrong = [n for n in args.sizes if valid is not None and n not in valid]
    if wrong:
        ap.error(
            f"--sizes: {args.families[0]} has no instance of size {', '.join(map(str, wrong))} "
            f"(sizes: {', '.join(map(str, valid or ()))})"
        )
    args.sizes = sorted(set(args.sizes))


def refresh_notes(page: str, notes: Path = NOTES) -> str:
    """``page`` (the scaling report's text) with each family's hand-kept note replaced by the
    current ``notes/<family>.md`` (the text between the family's plot line and the next
    ``## `` heading) and the fan-out section by the one ``notes/fan_out.json`` gives (after
    the section "From the command line"). The measured tables and plots are left as they are."""
    fan_out = notes / FAN_OUT_DATA.name
    section = fan_out_section(json.loads(fan_out.read_text())) if fan_out.exists() else []
    lines = page.splitlines()
    out: list[str] = []
    i = 0
    placed = not section
    while i < len(lines):
        line = lines[i]
        if line == FAN_OUT_HEADING:  # the old fan-out section: dropped, placed anew below
            i += 1
            while i < len(lines) and not lines[i].startswith("## "):
                i += 1
            continue
        if line.startswith("## ") and not placed and out and _after_command_line(out):
            out += [*section, ""]
            placed = True
        out.append(line)
        i += 1
        plot = re.fullmatch(r"!\[.*\]\(scaling/([\w-]+)\.png\)", line)
        note = notes / f"{plot.group(1)}.md" if plot else None
        if note is None or not note.exists():
            continue
        while i < len(lines) and not lines[i].startswith("## "):
            i += 1  # the old note
        out += ["", note.read_text().rstrip("\n")]
        if i < len(lines):
            out.append("")
    return "\n".join(out) + "\n"


def _after_command_line(lines: list[str]) -> bool:
    """Whether the last ``## `` heading of ``lines`` is the section "From the command line"."""
    headings = [line for line in lines if line.startswith("## ")]
    return bool(headings) and headings[-1] == "## From the command line"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["child"]:
        return child_main(argv[1:])
    if argv[:1] == ["--notes-only"]:
        # The page's notes from bench/scaling_notes/, without measuring anything.
        page = REPO / "docs" / "scaling.md"
        write_atomically(page, refresh_notes(page.read_text()))
        if FAN_OUT_DATA.exists():
            plot_fan_out(
                json.loads(FAN_OUT_DATA.read_text()), page.parent / "scaling" / "fan-out.png"
            )
        _progress(f"notes refreshed in {page}")
        return 0
    args = parse(argv)
    data = data_root()
    if data is not None:
        os.environ.setdefault("PRIVOPT_DATA", str(data))  # the children's real data sets
    start, load_start = time.perf_counter(), os.getloadavg()[0]
    _progress(f"load average at the start {load_start:.1f}")
    results, errors = run_families(args.families, args.quick, args.sizes, args.repeats)
    if args.baseline_rev:
        names = [r.name for r in results if r.name not in NO_BASELINE or r.name in args.named]
        before = measure_baseline(args, names)
        for r in results:
            r.before = before.get(r.name)
    if args.json:
        save_json(args.json, results, errors)
    print_tables(results, errors, args.baseline_rev)
    if args.page is not None:
        context = {
            "date": dt.date.today().isoformat(),
            "command": _command(args),
            "version": _version(),
            "commit": git("rev-parse", "--short", "HEAD").strip(),
            "cores": os.cpu_count(),
            "load_start": load_start,
            "load_end": os.getloadavg()[0],
            "minutes": (time.perf_counter() - start) / 60,
            "baseline_rev": args.baseline_rev,
            "repeats": args.repeats,
        }
        for r in results:
            plot(r, args.page.parent / "scaling" / f"{r.name}.png", args.baseline_rev)
        if FAN_OUT_DATA.exists():
            plot_fan_out(
                json.loads(FAN_OUT_DATA.read_text()), args.page.parent / "scaling" / "fan-out.png"
            )
        write_atomically(args.page, render(results, errors, context))
        _progress(f"wrote {args.page}")
    return 1 if errors else 0


def _command(args: argparse.Namespace) -> str:
    """The command line that reproduces this run's measurements."""
    words = ["python bench/scaling.py", *args.named]
    words += ["--quick"] if args.quick else []
    words += ["--sizes", *map(str, args.sizes)] if args.sizes else []
    words += ["--repeats", str(args.repeats)] if args.repeats != (1 if args.quick else 2) else []
    words += ["--baseline-rev", args.baseline_rev] if args.baseline_rev else []
    return " ".join(words)


def _version() -> str:
    import privopt

    return privopt.__version__


def child_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="scaling.py child")
    ap.add_argument("family", choices=list(CHILDREN))
    ap.add_argument("--n", type=int, required=True)
    a = ap.parse_args(argv)
    print_json(CHILDREN[a.family](a.n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
