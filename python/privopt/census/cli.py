"""``privopt census``: records CSV or a counts table → the release (loadable by
:func:`privopt.load`), the released counts (CSV/Parquet) and a report."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from privopt import _optional
from privopt._arguments import Method, Real, count, method_name, positive
from privopt._atomic import atomic_file
from privopt._cli_support import (
    add_alias,
    add_epsilon_option,
    add_executor_options,
    add_out_option,
    add_seed_option,
    emit_summary,
    executor_from_args,
    executor_rules,
    refuse_ignored_options,
    release_summary,
    reserve_outputs,
)
from privopt._inputs import read_csv_table
from privopt.census.budget import BudgetAllocation, allocate_budget
from privopt.census.cli_streamed import run_streamed
from privopt.census.hierarchy import MAX_COUNT, CensusCounts, Hierarchy
from privopt.census.mechanisms import MECHANISMS
from privopt.census.report import (
    checks_text,
    comparison_table,
    ledger_table,
    method_words,
    plot_l1_per_level,
    run_comparison,
)
from privopt.census.synthetic import synthetic_us
from privopt.errors import InvalidInput
from privopt.report import (
    GLOSSARY_NOTE,
    Report,
    Section,
    close_figure,
    format_number,
    markdown_table,
    save_figure,
)

__all__ = ["register", "load_counts"]

_METHOD = Method(MECHANISMS)


def load_counts(args: argparse.Namespace) -> CensusCounts:
    """The input selected by the CLI flags (records, counts table or synthetic US data)."""
    if args.synthetic_us:
        return synthetic_us(
            0 if args.seed is None else args.seed,
            N=args.max_size or 20,
            scale=args.scale,
            tracts_per_county=args.tracts_per_county,
            blocks_per_tract=args.blocks_per_tract,
            counties_csv=args.counties_csv,
        )

    if not args.levels:
        raise InvalidInput("--levels is required with --records or --counts")
    levels = [c.strip() for c in args.levels.split(",") if c.strip()]
    if args.records:
        if not args.group:
            raise InvalidInput("--group is required with --records")
        frame = read_csv_table(args.records, "--records", refuse_separators=False)
        group = [c.strip() for c in args.group.split(",") if c.strip()]
        _refuse_missing_groups(frame, group)
        return CensusCounts.from_records(
            frame,
            levels,
            group[0] if len(group) == 1 else group,
            max_size=args.max_size,
            pad_leaves=args.pad_leaves,
        )
    if args.counts:
        frame = read_csv_table(args.counts, "--counts", refuse_separators=False)
        size_cols = sorted(
            (c for c in frame.columns if str(c).startswith("size_")), key=lambda c: int(str(c)[5:])
        )
        if not size_cols:
            raise InvalidInput("--counts needs columns size_1 … size_N (one row per leaf region)")
        if [int(str(c)[5:]) for c in size_cols] != list(range(1, len(size_cols) + 1)):
            raise InvalidInput("--counts size columns must be size_1 … size_N without gaps")
        h = Hierarchy.from_frame(frame, levels, pad_leaves=args.pad_leaves)
        rows = h.leaf_positions(frame[levels])
        if np.unique(rows).size != rows.size:
            raise InvalidInput("--counts has duplicate leaf rows")
        leaf = np.zeros((h.leaves.stop - h.leaves.start, len(size_cols)), dtype=np.int64)
        leaf[rows] = _count_columns(frame, size_cols)
        return CensusCounts.from_leaf_counts(h, leaf)
    raise InvalidInput("give one of --records, --counts, --synthetic-us or --streamed-synthetic")


def _refuse_missing_groups(frame, group: list[str]) -> None:
    """A record without a group id would be dropped from the counts: refuse it, by line."""
    present = [c for c in group if c in frame.columns]
    missing = frame[present].isna().any(axis=1).to_numpy()
    if missing.any():
        lines = (np.flatnonzero(missing)[:5] + 2).tolist()  # + header line, 1-based
        raise InvalidInput(
            f"--records: group column(s) {present} are empty on line(s) {lines} "
            f"({int(missing.sum())} records); every record needs a group id"
        )


def _count_columns(frame, size_cols: list) -> np.ndarray:
    """The size_1..size_N columns as int64, each cell a non-negative integer ≤ 2⁶¹; anything else
    (text, missing, 1.5, 1e20, -1) is refused naming the column and the CSV line."""
    pd = _optional.pandas()

    out = np.empty((len(frame), len(size_cols)), dtype=np.int64)
    for j, col in enumerate(size_cols):
        raw = frame[col]
        num = pd.to_numeric(raw, errors="coerce")
        as_float = num.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(as_float) | (as_float < 0) | (as_float > MAX_COUNT)
        bad |= as_float != np.floor(np.where(np.isfinite(as_float), as_float, 0))
        if bad.any():
            i = int(np.argmax(bad))
            raise InvalidInput(
                f"--counts: column {col}, line {i + 2} is not a count (a non-negative integer "
                "up to 2^61)"
            )
        out[:, j] = num.to_numpy() if num.dtype.kind in "iu" else as_float.astype(np.int64)
    return out


def _refuse_ignored(args: argparse.Namespace) -> None:
    """One input, and no option that the chosen input or mechanism would not read."""
    given = [
        f
        for f, v in (
            ("--records", args.records),
            ("--counts", args.counts),
            ("--synthetic-us", args.synthetic_us),
            ("--streamed-synthetic", args.streamed_synthetic),
        )
        if v
    ]
    if len(given) > 1:
        raise InvalidInput(f"give one input, not {' and '.join(given)}")
    if args.streamed_synthetic is not None:
        _refuse_ignored_streamed(args)
        return
    records, counts, synthetic = bool(args.records), bool(args.counts), args.synthetic_us
    compare = args.compare is not None
    if args.rho is not None and args.epsilon is not None:
        raise InvalidInput("give one of --epsilon (geometric noise) and --rho (Gaussian noise)")
    if args.rho is None and args.epsilon is None:
        raise InvalidInput(
            "the following arguments are required: --epsilon (or --rho, for discrete Gaussian "
            "noise under ρ-zCDP)"
        )
    if not given:  # after the budget: a missing --epsilon is the first thing to hear
        raise InvalidInput(
            "give one input: --records, --counts, --synthetic-us or --streamed-synthetic"
        )
    if args.rho is not None and compare:
        raise InvalidInput("--compare runs geometric noise at --epsilon; leave out --rho")
    if args.intervals is not None and args.method in ("M_H^r", "M_c^r"):
        raise InvalidInput(
            f"--intervals re-run the post-processing from consistent released counts; "
            f"{method_name(args.method)} rounds a QP and need not be consistent: use m-h-dp, "
            "m-c-dp, m-c-ch, topdown or m-h"
        )
    if args.interval_runs is not None and args.method == "M_H":
        raise InvalidInput("--interval-runs: M_H's intervals are exact, they run no replicates")
    refuse_ignored_options(
        args,
        [
            ("--group", "group", None, records, "--records"),
            ("--levels", "levels", None, records or counts, "--records or --counts"),
            ("--pad-leaves", "pad_leaves", False, records or counts, "--records or --counts"),
            ("--groups", "groups", None, False, "--streamed-synthetic"),
            (
                "--max-size",
                "max_size",
                None,
                records or synthetic,
                "--records, --synthetic-us or --streamed-synthetic",
            ),
            ("--scale", "scale", 1e-3, synthetic, "--synthetic-us"),
            ("--tracts-per-county", "tracts_per_county", None, synthetic, "--synthetic-us"),
            ("--blocks-per-tract", "blocks_per_tract", None, synthetic, "--synthetic-us"),
            ("--counties-csv", "counties_csv", None, synthetic, "--synthetic-us"),
            ("--runs", "runs", 1, compare, "--compare"),
            ("--interval-runs", "interval_runs", None, args.intervals is not None, "--intervals"),
            ("--qp-time-limit", "qp_time_limit", 30.0, compare, "--compare"),
            (
                "--chain-noise-scale",
                "chain_noise_scale",
                "strict",
                args.method == "M_c^ch" or compare,
                "--method m-c-ch or --compare",
            ),
            (
                "--value-window",
                "window",
                "auto",
                args.method in ("M_H^dp", "M_c^dp", "M_c^ch"),
                "--method m-h-dp, m-c-dp or m-c-ch",
            ),
            *executor_rules(args.method in ("M_H^dp", "M_c^dp"), "--method m-h-dp or m-c-dp"),
            (
                "--qp-solver",
                "qp_solver",
                "auto",
                args.method in ("M_H^r", "M_c^r"),
                "--method m-h-r or m-c-r",
            ),
        ],
    )


def _refuse_ignored_streamed(args: argparse.Namespace) -> None:
    """--streamed-synthetic runs M_H^dp at --epsilon, nothing else: refuse what it would not
    read."""
    if args.epsilon is None:
        raise InvalidInput("--streamed-synthetic needs --epsilon (geometric noise, ε-DP)")
    given: set[str] = getattr(args, "given_options", set())
    if "method" in given and args.method != "M_H^dp":
        raise InvalidInput(
            f"--streamed-synthetic runs m-h-dp (M_H^dp), not {method_name(args.method)}"
        )
    unused = "--records, --counts or --synthetic-us (not with --streamed-synthetic)"
    refuse_ignored_options(
        args,
        [
            ("--rho", "rho", None, False, "--records, --counts or --synthetic-us"),
            *(
                (flag, dest, default, False, unused)
                for flag, dest, default in (
                    ("--levels", "levels", None),
                    ("--group", "group", None),
                    ("--pad-leaves", "pad_leaves", False),
                    ("--scale", "scale", 1e-3),
                    ("--tracts-per-county", "tracts_per_county", None),
                    ("--blocks-per-tract", "blocks_per_tract", None),
                    ("--counties-csv", "counties_csv", None),
                    ("--targets", "targets", None),
                    ("--intervals", "intervals", None),
                    ("--interval-runs", "interval_runs", None),
                    ("--compare", "compare", None),
                    ("--runs", "runs", 1),
                    ("--qp-time-limit", "qp_time_limit", 30.0),
                    ("--chain-noise-scale", "chain_noise_scale", "strict"),
                    ("--value-window", "window", "auto"),
                    ("--qp-solver", "qp_solver", "auto"),
                    ("--format", "format", "csv"),
                )
            ),
        ],
    )


def _run(args: argparse.Namespace) -> int:
    _refuse_ignored(args)
    if args.streamed_synthetic is not None:
        return run_streamed(args)
    with reserve_outputs(args, [args.records, args.counts, args.counties_csv]) as outputs:
        out = outputs.add(args.out)
        data = load_counts(args)
        plan = _allocation(args, data)
        with executor_from_args(args) as executor:
            rel = _release(args, data, plan, executor)
        checks = rel.check()
        intervals = _intervals(args, rel)
        with outputs.publish() as staged:
            _write_outputs(staged[out], args, data, rel, checks, plan, intervals)
    ok = all(checks.values()) or rel.method in ("M_H", "M_H^r", "M_c^r")
    emit_summary(
        release_summary(
            "census",
            rel,
            out,
            counts=str(out / f"released_counts.{args.format}"),
            report=str(out / "report.md"),
            **({} if plan is None else {"shares": list(plan.shares), "targets_met": plan.met}),
            **(
                {}
                if intervals is None
                else {"intervals": str(out / f"count_intervals.{args.format}")}
            ),
            checks=checks,
            ok=ok,
        )
    )
    return 0 if ok else 1


def _budget(args: argparse.Namespace) -> dict:
    """``{"epsilon": ε}`` or ``{"rho": ρ}`` from the flags (ε = 1 when neither is given)."""
    if args.rho is not None:
        return {"rho": args.rho}
    return {"epsilon": args.epsilon}


def _allocation(args: argparse.Namespace, data: CensusCounts) -> BudgetAllocation | None:
    """The per-level shares that meet ``--targets`` (None without targets: the even split)."""
    if args.targets is None:
        return None
    targets = [_target(t) for t in args.targets.split(",")]
    if len(targets) == 1:
        targets = targets * data.hierarchy.n_levels
    if len(targets) != data.hierarchy.n_levels:
        raise InvalidInput(
            f"--targets needs one RMSE per level ({data.hierarchy.n_levels}: "
            f"{', '.join(map(str, data.hierarchy.level_names))}) or one for all, got "
            f"{len(targets)}"
        )
    return allocate_budget(data.hierarchy, targets=targets, method=args.method, **_budget(args))


def _target(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InvalidInput(f"--targets: {text.strip()!r} is not a number") from None
    if not (np.isfinite(value) and value > 0):
        raise InvalidInput(f"--targets: every target must be a number > 0, got {text.strip()!r}")
    return value


def _intervals(args: argparse.Namespace, rel):
    """The per-count intervals of ``--intervals`` (None without it)."""
    if args.intervals is None:
        return None
    runs = {} if args.interval_runs is None else {"runs": args.interval_runs}
    return rel.intervals(args.intervals, random_state=args.seed, **runs)


def _release(
    args: argparse.Namespace,
    data: CensusCounts,
    plan: BudgetAllocation | None,
    executor: Any = None,
):
    """The release of the mechanism the flags name, with its options (``executor``: where the
    tree DP of M_H^dp and M_c^dp runs)."""
    kw: dict = _budget(args) if plan is None else plan.mechanism_arguments()
    if executor is not None:
        kw["executor"] = executor
    if args.method == "M_c^ch":
        kw["chain_noise_scale"] = args.chain_noise_scale
    if args.method in ("M_H^dp", "M_c^dp", "M_c^ch"):
        kw["window"] = int(args.window) if args.window.isdigit() else args.window
    if args.method in ("M_H^r", "M_c^r"):
        kw["qp_solver"] = args.qp_solver
    # A release without --seed draws its noise from the OS CSPRNG (privopt.dp "secure").
    rng = "secure" if args.seed is None else args.seed
    return MECHANISMS[args.method](data, rng=rng, **kw)


def _write_outputs(out: Path, args: argparse.Namespace, data, rel, checks, plan, intervals) -> None:
    """The release (``release.json`` and ``data.npz``: :func:`privopt.load` reads ``out``), the
    released counts table, the intervals table (``--intervals``), report.md and the plots, into
    ``out``."""
    rel._write(out)
    rel.write_table(out / f"released_counts.{args.format}")
    ax = rel.plot()
    save_figure(ax.figure, out / "census_counts_by_size.png", dpi=110)
    close_figure(ax.figure)
    h = data.hierarchy
    budget = f"ε = {rel.epsilon:g}" if rel.rho is None else f"ρ = {rel.rho:g}"
    body = (
        f"Method **{rel.method}** ({method_words(rel.method)}), privacy {budget}, "
        f"{h.n_regions} regions in {h.n_levels} levels, group sizes 1 to {data.N}, "
        f"{data.G} groups in total.\n\n"
        f"Guarantee in detail: {rel.guarantee_details}.\n\n"
        + checks_text(checks)
        + f"\n\nRuntime: {format_number(rel.timings['total'], 3)} s.\n\n"
        "**Privacy spent (the ledger).** Each line is one noisy measurement:\n\n"
        + ledger_table(rel.ledger)
        + "\n"
        + GLOSSARY_NOTE
        + "\n"
    )
    summary = rel.report()
    report = Report("privopt census")
    report.add(Section(summary.title, summary.body, ["census_counts_by_size.png"]))
    report.add(Section("Noise, checks and ledger", body))
    if plan is not None:
        table = markdown_table(
            ["level", "share", "RMSE target", "expected RMSE"],
            [
                [str(name), f"{s:.4g}", f"{t:.4g}", f"{e:.4g}"]
                for name, s, t, e in zip(
                    h.level_names,
                    plan.shares,
                    plan.targets or (),  # --targets gave them
                    plan.expected_rmse,
                    strict=True,
                )
            ],
        )
        report.add(
            Section("Budget split over the levels (--targets)", f"{plan.objective}.\n\n{table}\n")
        )
    if intervals is not None:
        frame = intervals.to_frame()
        path = out / f"count_intervals.{args.format}"
        with atomic_file(path) as tmp:
            if args.format == "csv":
                frame.to_csv(tmp, index=False)
            else:
                frame.to_parquet(tmp, index=False)
        ax = intervals.plot()
        save_figure(ax.figure, out / "census_intervals.png", dpi=110)
        close_figure(ax.figure)
        per_level = zip(h.level_names, intervals.width_per_level(), strict=True)
        widths = ", ".join(f"{name}: {w:.3g}" for name, w in per_level)
        report.add(
            Section(
                f"{intervals.confidence:.0%} intervals of the counts",
                f"From the release and its public noise alone ({intervals.runs or 'exact'} "
                f"replicates); mean width per level, households: {widths}. Table: {path.name}.\n",
                ["census_intervals.png"],
            )
        )
    if args.compare:
        names = (
            [_compared(m) for m in args.compare.split(",") if m.strip()]
            if args.compare != "all"
            else ["M_H^dp", "M_c^dp", "M_c^ch", "TopDown", "M_H^r", "M_c^r"]
        )
        rows = run_comparison(
            data,
            _budget(args)["epsilon"],
            names,
            runs=args.runs,
            seed=0 if args.seed is None else args.seed,
            chain_noise_scale=args.chain_noise_scale,
            qp_time_limit=args.qp_time_limit,
        )
        plot = plot_l1_per_level(rows, h.level_names, out / "census_l1_per_level.png")
        report.add(
            Section(
                "Comparison of methods (confidential: errors against the true counts, "
                "do not publish)",
                comparison_table(rows, h.level_names),
                [plot.name],
            )
        )
    report.write(out)


def _compared(name: str) -> str:
    """One mechanism of --compare, in any spelling --method accepts."""
    try:
        return _METHOD(name)
    except argparse.ArgumentTypeError as exc:
        raise InvalidInput(f"--compare: {exc}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``census`` subcommand."""
    p = subparsers.add_parser(
        "census",
        help="consistent ε-DP (or ρ-zCDP) group-size counts over a region hierarchy",
        description="Release ε-DP counts of groups (households) per size and region, consistent "
        "across levels, non-negative integers summing to the public total.",
    )
    src = p.add_argument_group("input (one of)")
    src.add_argument("--records", help="CSV, one row per individual (region columns + group id)")
    src.add_argument("--counts", help="CSV, one row per leaf: region columns + size_1..size_N")
    src.add_argument(
        "--synthetic-us",
        action="store_true",
        help="generated national data (52 states, 3,221 counties)",
    )
    src.add_argument(
        "--streamed-synthetic",
        default=None,
        metavar="FANOUTS",
        help="a regular synthetic hierarchy with these fan-outs below the root (e.g. "
        "100,1000,1000: 10^8 leaves), generated, solved by m-h-dp and written one top-level "
        "region at a time (.npy files), on --workers/--scheduler/--threads; the noise comes "
        "from --seed: a capacity run, not a private release",
    )
    p.add_argument(
        "--groups",
        type=count,
        default=None,
        help="--streamed-synthetic: households in all (default 100 per leaf)",
    )
    p.add_argument("--levels", help="comma-separated region columns, top level first")
    p.add_argument(
        "--group",
        help="group id column of --records; several comma-separated "
        "columns make each distinct combination within a leaf a group (count of counts)",
    )
    p.add_argument("--max-size", type=count, default=None, help="N (default: largest group)")
    p.add_argument(
        "--pad-leaves",
        action="store_true",
        help="accept region paths that end early (empty last columns), padded with "
        "single-child copies",
    )
    p.add_argument(
        "--tracts-per-county",
        type=positive,
        default=None,
        help="--synthetic-us: add a tract level with this mean fan-out",
    )
    p.add_argument(
        "--blocks-per-tract",
        type=positive,
        default=None,
        help="--synthetic-us: add a block level with this mean fan-out",
    )
    p.add_argument(
        "--counties-csv",
        default=None,
        help="--synthetic-us: FIPS county list (statefp, countyfp) naming the counties",
    )
    p.add_argument(
        "--value-window",
        dest="window",
        default="auto",
        help="value windows of the consistency step (m-h-dp, m-c-dp, m-c-ch): auto "
        "(certified), paper, exact or a whole number of counts",
    )
    add_alias(p, "--window", "window")
    p.add_argument(
        "--qp-solver",
        default="auto",
        choices=["auto", "clarabel", "highs"],
        help="QP solver of m-h-r / m-c-r (auto: Clarabel if installed, else HiGHS)",
    )
    p.add_argument(
        "--scale",
        type=Real(low=0.0, low_open=True, high=1.0),
        default=1e-3,
        help="fraction of US households for --synthetic-us (default 1e-3)",
    )
    # argparse cannot require "one of --epsilon, --rho" with a type each: the run checks it.
    add_epsilon_option(
        p,
        "total ε of the released counts, double geometric noise, ε-DP (or give --rho)",
        parent=True,
    )
    p.add_argument(
        "--rho",
        type=positive,
        default=None,
        help="total ρ instead of --epsilon (one of the two is required): discrete Gaussian "
        "noise, ρ-zCDP (stated as (ε, δ))",
    )
    p.add_argument(
        "--targets",
        default=None,
        help="comma-separated RMSE targets per level (households, top level first) or one for "
        "all: the budget is split over the levels to meet them (or to minimise the worst "
        "excess); default: an even split",
    )
    p.add_argument(
        "--intervals",
        type=Real(low=0.0, low_open=True, high=1.0),
        default=None,
        metavar="CONFIDENCE",
        help="also write per-count intervals at this confidence (e.g. 0.9) to "
        "count_intervals.csv and census_intervals.png",
    )
    p.add_argument(
        "--interval-runs",
        type=count,
        default=None,
        help="replicates of the post-processing behind --intervals (default 200, at least 20)",
    )
    p.add_argument(
        "--method",
        "--mechanism",
        dest="method",
        type=_METHOD,
        default="m-c-dp",
        metavar=_METHOD.metavar,
        help="census mechanism (the paper's M_c^dp is m-c-dp, M_H^dp is m-h-dp, ...)",
    )
    p.add_argument(
        "--chain-noise-scale",
        default="strict",
        choices=["strict", "paper"],
        help="m-c-ch noise: strict ε-DP (default) or the paper's scale (not ε-DP)",
    )
    p.add_argument(
        "--compare",
        default=None,
        help="also compare mechanisms ('all' or comma list) and plot L1 per level",
    )
    p.add_argument("--runs", type=count, default=1, help="noise draws for --compare")
    p.add_argument(
        "--qp-time-limit",
        type=positive,
        default=30.0,
        help="seconds per HiGHS QP of m-h-r / m-c-r in --compare (default 30)",
    )
    add_seed_option(p, "the noise and of the --synthetic-us data (which otherwise use seed 0)")
    p.add_argument(
        "--format", default="csv", choices=["csv", "parquet"], help="released counts table"
    )
    add_executor_options(
        p,
        "the tree post-processing of m-h-dp and m-c-dp (one task per subtree), or every "
        "region of --streamed-synthetic",
        threads="that tree post-processing",
    )
    add_out_option(p, "census")
    p.set_defaults(func=_run)
