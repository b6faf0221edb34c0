"""``privopt kanon``: k-anonymize a CSV file and write the generalized table plus a report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from privopt._arguments import Method, count, method_name, positive
from privopt._cli_support import (
    add_alias,
    add_executor_options,
    add_out_option,
    add_time_limit_option,
    emit_summary,
    executor_from_args,
    executor_rules,
    refuse_ignored_options,
    release_summary,
    reserve_outputs,
)
from privopt._inputs import parse_number, read_csv_table
from privopt.errors import InvalidInput
from privopt.kanon.api import METHODS, anonymize
from privopt.kanon.report import write_report
from privopt.kanon.split_carry import MIN_PART_FACTOR

__all__ = ["register", "run", "TABLE_FILE"]


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


#: The anonymized table's file name inside --out.
TABLE_FILE = "anonymized.csv"

_METHOD = Method(METHODS)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``kanon`` subcommand."""
    p = subparsers.add_parser(
        "kanon",
        help="k-anonymize a CSV table by optimal generalization to intervals",
        description="k-anonymize INPUT (CSV) by local-recoding generalization (Liang & Samavi "
        "2020): every quasi-identifier cell becomes an interval (numeric) or a value set "
        f"(categorical) shared by at least k rows. Writes into the folder --out the table "
        f"({TABLE_FILE}), a report (loss per attribute, class-size histogram) and the release "
        "(release.json and its data: privopt.load reads the folder back).",
    )
    p.add_argument("input", help="input CSV file with a header row")
    p.add_argument(
        "--anonymity",
        "--k",
        "-k",
        dest="k",
        type=count,
        required=True,
        help="required: the anonymity k >= 1, the fewest rows that share each generalized "
        "quasi-identifier combination",
    )
    p.add_argument(
        "--quasi-identifiers",
        "--qi",
        dest="qi",
        help="comma-separated quasi-identifier columns to generalise (default: every column "
        "not named in --sensitive; the run then names them on stderr)",
    )
    p.add_argument(
        "--sensitive",
        help="comma-separated columns carried unchanged, never generalised (default: none)",
    )
    p.add_argument("--weights", help="comma-separated positive weights, one per QI (default: 1)")
    p.add_argument("--categorical", help="comma-separated categorical QI columns (default: none)")
    p.add_argument(
        "--method", type=_METHOD, default="greedy", metavar=_METHOD.metavar, help="algorithm"
    )
    p.add_argument(
        "--sets-per-chunk",
        dest="S",
        type=count,
        default=3,
        help="split-carry: k-sets per chunk (the paper's S)",
    )
    add_alias(p, "--S", "S", type=count)
    p.add_argument(
        "--chunking",
        choices=["runs", "paper"],
        default="runs",
        help="split-carry chunks: end early rather than cut a run of identical rows short "
        "(runs) or always S k-sets (paper)",
    )
    add_time_limit_option(
        p, "the whole run (milp, split-carry; split-carry spreads it over its sub-problems)"
    )
    p.add_argument(
        "--sub-time-limit",
        type=positive,
        default=None,
        help="seconds per split-carry sub-problem (default: 10; --time-limit replaces it)",
    )
    p.add_argument(
        "--parts",
        type=count,
        default=None,
        help="split-carry: solve the table in this many parts along the split tree, each its "
        "own task (default: 1, or one per 12,500 rows, at least 2, with --workers/--scheduler/"
        "--threads); the table depends on the number of parts, not on where they run",
    )
    add_executor_options(p, "the split-carry parts", threads="the split-carry parts")
    add_out_option(p, "kanon")
    p.add_argument(
        "--report-dir",
        default=None,
        help=argparse.SUPPRESS,  # the former report folder: now --out holds everything
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``privopt kanon``: read the table, anonymize it, publish the table and the report
    together (or neither); return the exit code."""
    chunked = args.method == "split_carry"
    refuse_ignored_options(
        args,
        [
            ("--sets-per-chunk", "S", 3, chunked, "--method split-carry"),
            ("--chunking", "chunking", "runs", chunked, "--method split-carry"),
            ("--parts", "parts", None, chunked, "--method split-carry"),
            *executor_rules(chunked, "--method split-carry"),
            (
                "--time-limit",
                "time_limit",
                None,
                chunked or args.method == "milp",
                "--method milp or split-carry",
            ),
        ],
    )
    src = Path(args.input)
    # The folder is checked and locked before the input is read (never over the input, never
    # over an earlier output without --force).
    with reserve_outputs(args, [src]) as outputs:
        out = outputs.add(_output_folder(args))
        _refuse_file_name(out)
        with executor_from_args(args) as executor:
            res = _anonymize(args, src, executor)
        with outputs.publish() as staged:
            write_report(res, staged[out], title=f"k-anonymity of {src.name}")
            res._write(staged[out])  # the release: privopt.load(out)
            res.table.to_csv(staged[out] / TABLE_FILE, index=False)
    if args.qi is None and args.sensitive is None:
        print(
            f"privopt kanon: note: every column was generalised as a quasi-identifier "
            f"({len(res.quasi_identifiers)}: {', '.join(map(str, res.quasi_identifiers))}), as "
            "neither --quasi-identifiers nor --sensitive was given; name the columns to keep "
            "unchanged with --sensitive",
            file=sys.stderr,
        )
    print(res.describe(), file=sys.stderr)
    note = _fewer_parts_note(args, res.info.get("parts"))
    if note:
        print(f"note: {note}", file=sys.stderr)
    emit_summary(
        release_summary(
            "kanon", res, out, table=str(out / TABLE_FILE), report=str(out / "report.md")
        )
    )
    return 0


def _fewer_parts_note(args: argparse.Namespace, cuts: Any) -> str:
    """Why a split-carry run asked to fan out solved fewer parts ("" when it did not): each
    part needs at least MIN_PART_FACTOR·k·(2k − 1) rows, so a small table stays whole and runs
    here."""
    fan_out = any(getattr(args, o, None) is not None for o in ("workers", "scheduler", "threads"))
    if cuts is None or (args.parts is None and not fan_out):
        return ""
    solved = len(cuts) - 1
    if solved >= (args.parts if args.parts is not None else 2):  # fanning out: 2 at least
        return ""
    given = [o for o in ("parts", "workers", "scheduler", "threads") if getattr(args, o, None)]
    asked = f"--{given[0]} {getattr(args, given[0])}"
    where = "" if solved > 1 else ", in this process"
    return (
        f"{asked} asked for more parts than the table holds: a part needs at least "
        f"{MIN_PART_FACTOR}·k·(2k − 1) = {MIN_PART_FACTOR * args.k * (2 * args.k - 1)} rows, "
        "so it was solved in "
        f"{solved} part{'s' if solved > 1 else ''}{where}"
    )


def _output_folder(args: argparse.Namespace) -> str:
    """--out, or the former --report-dir (both given: refused)."""
    given: set[str] = getattr(args, "given_options", set())
    if args.report_dir is not None:
        if "out" in given:
            raise InvalidInput(
                "--report-dir is the former name of --out (one folder now holds the table, "
                "the report and the release); give --out only"
            )
        return str(args.report_dir)
    return str(args.out)


def _refuse_file_name(out: Path) -> None:
    """A CSV name given as --out (the former meaning: the table's file) is refused, not made
    into a folder called ``*.csv``."""
    if out.suffix.lower() == ".csv":
        raise InvalidInput(
            f"--out is the output folder (the table is written into it as {TABLE_FILE}), "
            f"got the file name {str(out)!r}"
        )


def _anonymize(args: argparse.Namespace, src: Path, executor: Any = None):
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
        if args.parts is not None:
            options["parts"] = args.parts
        if executor is not None:
            options["executor"] = executor
        if args.sub_time_limit is not None:  # else the API default (10 s per sub-problem)
            options["sub_time_limit"] = args.sub_time_limit
    elif args.method == "milp":
        options = {"time_limit": args.time_limit}
    if args.sub_time_limit is not None and args.method != "split_carry":
        raise InvalidInput(
            f"--sub-time-limit applies to --method split-carry, not {method_name(args.method)}"
        )
    return anonymize(
        df,
        args.k,
        _split(args.qi),
        sensitive=_split(args.sensitive),
        weights=weights,
        categorical=_split(args.categorical),
        method=args.method,
        **options,
    )
