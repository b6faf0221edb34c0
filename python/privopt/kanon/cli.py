"""``privopt kanon``: k-anonymize a CSV file and write the generalized table plus a report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from privopt._arguments import count, positive
from privopt._cli_support import emit_summary, refuse_ignored_options, reserve_outputs
from privopt._inputs import parse_number, read_csv_table
from privopt.errors import InvalidInput
from privopt.kanon.api import METHODS, anonymize
from privopt.kanon.report import write_report

__all__ = ["register", "run"]


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``kanon`` subcommand."""
    p = subparsers.add_parser(
        "kanon",
        help="k-anonymize a CSV table by optimal generalization to intervals",
        description="k-anonymize INPUT (CSV) by local-recoding generalization (Liang & Samavi "
        "2020): every quasi-identifier cell becomes an interval (numeric) or a value set "
        "(categorical) shared by at least k rows. Writes the table to --out, and to "
        "--report-dir a report (loss per attribute, class-size histogram) and the release "
        "(release.json and its data: privopt.load reads the folder back).",
    )
    p.add_argument("input", help="input CSV file with a header row")
    p.add_argument("--k", type=count, required=True, help="anonymity parameter k >= 1")
    p.add_argument("--qi", help="comma-separated quasi-identifier columns (default: all)")
    p.add_argument("--weights", help="comma-separated positive weights, one per QI")
    p.add_argument("--categorical", help="comma-separated categorical QI columns")
    p.add_argument(
        "--method", default="greedy", choices=sorted(METHODS), help="algorithm (default: greedy)"
    )
    p.add_argument("--S", type=count, default=3, help="k-sets per Split & Carry chunk (default 3)")
    p.add_argument(
        "--chunking",
        choices=["runs", "paper"],
        default="runs",
        help="Split & Carry chunks: end early rather than cut a run of identical rows short "
        "(runs, default) or always S k-sets (paper)",
    )
    p.add_argument(
        "--time-limit",
        type=positive,
        default=None,
        help="seconds for the whole run (milp, split_carry; default none): Split & Carry "
        "spreads it evenly over its sub-problems",
    )
    p.add_argument(
        "--sub-time-limit",
        type=positive,
        default=None,
        help="seconds per Split & Carry sub-problem (default 10; --time-limit replaces it)",
    )
    p.add_argument("--out", required=True, help="output CSV for the generalized table")
    p.add_argument(
        "--report-dir",
        default=None,
        help="directory for report.md, the histogram and the release (default: <out>_report)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``privopt kanon``: read the table, anonymize it, publish the table and the report
    together (or neither); return the exit code."""
    chunked = args.method == "split_carry"
    refuse_ignored_options(
        args,
        [
            ("--S", "S", 3, chunked, "--method split_carry"),
            ("--chunking", "chunking", "runs", chunked, "--method split_carry"),
            (
                "--time-limit",
                "time_limit",
                None,
                chunked or args.method == "milp",
                "--method milp or split_carry",
            ),
        ],
    )
    src = Path(args.input)
    # Both outputs are checked and locked before the input is read (never over the input,
    # never over an earlier output without --force).
    with reserve_outputs(args, [src]) as outputs:
        out = outputs.add(args.out, kind="file")
        report_dir = outputs.add(
            args.report_dir or out.with_name(out.stem + "_report"), option="--report-dir"
        )
        res = _anonymize(args, src)
        with outputs.publish() as staged:
            write_report(res, staged[report_dir], title=f"k-anonymity of {src.name}")
            res._write(staged[report_dir])  # the release: privopt.load(report_dir)
            res.table.to_csv(staged[out], index=False)
    print(res.describe(), file=sys.stderr)
    emit_summary(
        {
            "command": "kanon",
            "table": str(out),
            "report": str(report_dir / "report.md"),
            "release": str(report_dir),
            **res.summary(),
        }
    )
    return 0


def _anonymize(args: argparse.Namespace, src: Path):
    """The :class:`~privopt.kanon.api.KAnonResult` of INPUT as the flags ask."""
    df = read_csv_table(src, "INPUT")
    weight_texts = _split(args.weights)
    weights = None
    if weight_texts is not None:
        try:
            weights = [parse_number(w) for w in weight_texts]
        except ValueError:
            raise InvalidInput(f"--weights must be numbers, got {args.weights!r}") from None
    options: dict = {}
    if args.method == "split_carry":
        options = {"S": args.S, "chunking": args.chunking, "time_limit": args.time_limit}
        if args.sub_time_limit is not None:  # else the API default (10 s per sub-problem)
            options["sub_time_limit"] = args.sub_time_limit
    elif args.method == "milp":
        options = {"time_limit": args.time_limit}
    if args.sub_time_limit is not None and args.method != "split_carry":
        raise InvalidInput(f"--sub-time-limit applies to --method split_carry, not {args.method}")
    return anonymize(
        df,
        args.k,
        _split(args.qi),
        weights=weights,
        categorical=_split(args.categorical),
        method=args.method,
        **options,
    )
