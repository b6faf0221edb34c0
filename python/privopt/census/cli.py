"""``privopt census``: records CSV or a counts table → the release (loadable by
:func:`privopt.load`), the released counts (CSV/Parquet) and a report."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from privopt import _optional
from privopt._arguments import Real, count, positive, seed
from privopt._cli_support import emit_summary, refuse_ignored_options, reserve_outputs
from privopt._inputs import read_csv_table
from privopt.census.hierarchy import MAX_COUNT, CensusCounts, Hierarchy
from privopt.census.mechanisms import MECHANISMS
from privopt.census.report import comparison_table, plot_l1_per_level, run_comparison
from privopt.census.synthetic import synthetic_us
from privopt.errors import InvalidInput
from privopt.report import Report, Section, close_figure, save_figure

__all__ = ["register", "load_counts"]


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
    raise InvalidInput("give one of --records, --counts or --synthetic-us")


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
        )
        if v
    ]
    if len(given) > 1:
        raise InvalidInput(f"give one input, not {' and '.join(given)}")
    records, counts, synthetic = bool(args.records), bool(args.counts), args.synthetic_us
    compare = args.compare is not None
    refuse_ignored_options(
        args,
        [
            ("--group", "group", None, records, "--records"),
            ("--levels", "levels", None, records or counts, "--records or --counts"),
            ("--pad-leaves", "pad_leaves", False, records or counts, "--records or --counts"),
            ("--max-size", "max_size", None, records or synthetic, "--records or --synthetic-us"),
            ("--scale", "scale", 1e-3, synthetic, "--synthetic-us"),
            ("--tracts-per-county", "tracts_per_county", None, synthetic, "--synthetic-us"),
            ("--blocks-per-tract", "blocks_per_tract", None, synthetic, "--synthetic-us"),
            ("--counties-csv", "counties_csv", None, synthetic, "--synthetic-us"),
            ("--runs", "runs", 1, compare, "--compare"),
            ("--qp-time-limit", "qp_time_limit", 30.0, compare, "--compare"),
            (
                "--chain-noise-scale",
                "chain_noise_scale",
                "strict",
                args.method == "M_c^ch" or compare,
                "--method M_c^ch or --compare",
            ),
            (
                "--window",
                "window",
                "auto",
                args.method in ("M_H^dp", "M_c^dp", "M_c^ch"),
                "--method M_H^dp, M_c^dp or M_c^ch",
            ),
            (
                "--qp-solver",
                "qp_solver",
                "auto",
                args.method in ("M_H^r", "M_c^r"),
                "--method M_H^r or M_c^r",
            ),
        ],
    )


def _run(args: argparse.Namespace) -> int:
    _refuse_ignored(args)
    with reserve_outputs(args, [args.records, args.counts, args.counties_csv]) as outputs:
        out = outputs.add(args.out)
        data = load_counts(args)
        rel = _release(args, data)
        checks = rel.check()
        with outputs.publish() as staged:
            _write_outputs(staged[out], args, data, rel, checks)
    ok = all(checks.values()) or rel.method in ("M_H", "M_H^r", "M_c^r")
    emit_summary(
        {
            "command": "census",
            "out": str(out),
            "counts": str(out / f"released_counts.{args.format}"),
            "report": str(out / "report.md"),
            **rel.summary(),
            "checks": checks,
            "ok": ok,
        }
    )
    return 0 if ok else 1


def _release(args: argparse.Namespace, data: CensusCounts):
    """The release of the mechanism the flags name, with its options."""
    kw: dict = {}
    if args.method == "M_c^ch":
        kw["chain_noise_scale"] = args.chain_noise_scale
    if args.method in ("M_H^dp", "M_c^dp", "M_c^ch"):
        kw["window"] = int(args.window) if args.window.isdigit() else args.window
    if args.method in ("M_H^r", "M_c^r"):
        kw["qp_solver"] = args.qp_solver
    # A release without --seed draws its noise from the OS CSPRNG (privopt.dp "secure").
    rng = "secure" if args.seed is None else args.seed
    return MECHANISMS[args.method](data, args.epsilon, rng=rng, **kw)


def _write_outputs(out: Path, args: argparse.Namespace, data, rel, checks) -> None:
    """The release (``release.json`` and ``data.npz``: :func:`privopt.load` reads ``out``), the
    released counts table, report.md and the plots, into ``out``."""
    rel._write(out)
    rel.write_table(out / f"released_counts.{args.format}")
    ax = rel.plot()
    save_figure(ax.figure, out / "census_counts_by_size.png", dpi=110)
    close_figure(ax.figure)
    h = data.hierarchy
    body = (
        f"Mechanism **{rel.method}**, ε = {rel.epsilon:g}, {h.n_regions} regions in "
        f"{h.n_levels} levels, N = {data.N}, G = {data.G}.\n\n"
        f"Guarantee in detail: {rel.guarantee_details}.\n\n"
        f"Checks: {checks}; runtime {rel.timings['total']:.3f} s.\n\nLedger:\n\n"
        + "\n".join(f"- {e}" for e in rel.ledger)
        + "\n"
    )
    summary = rel.report()
    report = Report("privopt census")
    report.add(Section(summary.title, summary.body, ["census_counts_by_size.png"]))
    report.add(Section("Noise, checks and ledger", body))
    if args.compare:
        names = (
            [m.strip() for m in args.compare.split(",")]
            if args.compare != "all"
            else ["M_H^dp", "M_c^dp", "M_c^ch", "TopDown", "M_H^r", "M_c^r"]
        )
        rows = run_comparison(
            data,
            args.epsilon,
            names,
            runs=args.runs,
            seed=0 if args.seed is None else args.seed,
            chain_noise_scale=args.chain_noise_scale,
            qp_time_limit=args.qp_time_limit,
        )
        plot = plot_l1_per_level(rows, h.level_names, out / "census_l1_per_level.png")
        report.add(
            Section(
                "Comparison (confidential: errors against the true counts, do not publish)",
                comparison_table(rows, h.level_names),
                [plot.name],
            )
        )
    report.write(out)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``census`` subcommand."""
    p = subparsers.add_parser(
        "census",
        help="consistent ε-DP group-size counts over a region hierarchy (spec 003)",
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
        "--window",
        default="auto",
        help="DP value windows: auto (certified, default), paper, exact or an int δ",
    )
    p.add_argument(
        "--qp-solver",
        default="auto",
        choices=["auto", "clarabel", "highs"],
        help="QP solver of M_H^r / M_c^r (default: Clarabel if installed)",
    )
    p.add_argument(
        "--scale",
        type=Real(low=0.0, low_open=True, high=1.0),
        default=1e-3,
        help="fraction of US households for --synthetic-us (default 1e-3)",
    )
    p.add_argument("--epsilon", type=positive, default=1.0, help="total ε (default 1)")
    p.add_argument(
        "--method",
        "--mechanism",
        dest="method",
        default="M_c^dp",
        choices=sorted(MECHANISMS),
        help="census mechanism (default M_c^dp)",
    )
    p.add_argument(
        "--chain-noise-scale",
        default="strict",
        choices=["strict", "paper"],
        help="M_c^ch noise: strict ε-DP (default) or the paper's scale (not ε-DP)",
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
        help="seconds per HiGHS QP of M_H^r / M_c^r in --compare (default 30)",
    )
    p.add_argument(
        "--seed",
        type=seed,
        default=None,
        help="seed for reproducible runs, for testing only (default: the OS CSPRNG, for "
        "real releases; --synthetic-us data then use seed 0)",
    )
    p.add_argument("--format", default="csv", choices=["csv", "parquet"])
    p.add_argument("--out", default="census_out", help="output directory")
    p.set_defaults(func=_run)
