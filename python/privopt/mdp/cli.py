"""``privopt mdp``: optimal ε-mDP perturbation matrix for points from a CSV/NPY file."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from privopt._arguments import Real, count, nonnegative, positive, seed
from privopt._cli_support import emit_summary, refuse_ignored_options, reserve_outputs
from privopt._inputs import load_points_file, read_numeric_csv
from privopt.mdp import MDPProblem, rome_grid, solve
from privopt.report import Report, Section, close_figure, markdown_table, save_figure

__all__ = ["register", "load_points"]


def load_points(path: str | Path, option: str = "POINTS") -> np.ndarray:
    """Records from ``.npy`` (a real (n, d) or (n,) array) or ``.csv`` (numeric columns; a
    header line is optional; with columns named lat/lon, latitude/longitude or y/x those two
    are taken in (lat, lon) order).

    Raises
    ------
    InvalidInput
        Missing, empty, garbled or ragged file, a wrong-dtype ``.npy``, NaN/inf values.
    """
    if Path(path).suffix.lower() == ".npy":
        return load_points_file(path, option)
    header, values = read_numeric_csv(path, option)
    names = [] if header is None else [c.strip().lower() for c in header]
    for lat, lon in (("lat", "lon"), ("latitude", "longitude"), ("y", "x")):
        if lat in names and lon in names:
            return values[:, [names.index(lat), names.index(lon)]]
    return values


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``mdp`` subcommand to the ``privopt`` parser."""
    p = subparsers.add_parser(
        "mdp",
        help="optimal metric-DP perturbation matrix (LP / Benders / ExpMech)",
        description="Compute an ε-mDP perturbation matrix for the records in POINTS (CSV or "
        "NPY), write it as an .npz and a Markdown report with plots. Without POINTS the "
        "paper's 20×25 km Rome grid is used.",
    )
    p.add_argument("points", nargs="?", help="records: .csv (header optional) or .npy")
    p.add_argument(
        "--metric",
        default="euclidean",
        choices=["euclidean", "haversine", "precomputed"],
        help="distance: euclidean, haversine ((lat, lon) degrees → km), or "
        "precomputed (POINTS is the N×N matrix)",
    )
    p.add_argument("--epsilon", type=positive, default=2.0, help="ε per distance unit (1/km)")
    p.add_argument(
        "--eta",
        type=Real(low=0.0, low_open=True, allow_inf=True),
        default=2.0,
        help="neighbour threshold η (distance unit; inf: every pair)",
    )
    p.add_argument("--method", default="lp", choices=["lp", "benders", "expmech"])
    p.add_argument(
        "-k",
        "--outputs",
        type=count,
        default=None,
        help="use K random records as outputs (default: all records)",
    )
    p.add_argument("--subsets", type=count, default=25, help="Benders: number of subsets M")
    p.add_argument(
        "--partitioner", default="k-m-dv", choices=["k-m-dv", "k-m-rec", "k-m-adj", "bsc"]
    )
    p.add_argument("--gap", type=nonnegative, default=1e-4, help="Benders relative gap")
    p.add_argument(
        "--plain",
        action="store_true",
        help="LP: pass all rows to HiGHS at once (no row generation)",
    )
    p.add_argument(
        "--polish",
        choices=["auto", "yes", "no"],
        default="auto",
        help="LP: re-solve the final rows unscaled (less repair; 'auto': only when "
        "the certified gap exceeds 1e-5)",
    )
    p.add_argument(
        "--seed",
        type=seed,
        default=0,
        help="seed for choosing the K outputs (a public choice, not a privacy draw)",
    )
    p.add_argument("--out", default="mdp_out", help="output directory")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    benders, lp = args.method == "benders", args.method == "lp"
    refuse_ignored_options(
        args,
        [
            ("--subsets", "subsets", 25, benders, "--method benders"),
            ("--partitioner", "partitioner", "k-m-dv", benders, "--method benders"),
            ("--gap", "gap", 1e-4, benders, "--method benders"),
            ("--plain", "plain", False, lp, "--method lp"),
            ("--polish", "polish", "auto", lp and not args.plain, "--method lp without --plain"),
            ("--seed", "seed", 0, args.outputs is not None, "-k/--outputs (it draws them)"),
        ],
    )
    with reserve_outputs(args, [args.points]) as outputs:
        out = outputs.add(args.out)
        prob, pm, v = _solve(args)
        with outputs.publish() as staged:
            _write_outputs(staged[out], args, prob, pm, v)
    emit_summary(
        {
            "command": "mdp",
            "out": str(out),
            "matrix": str(out / "perturbation_matrix.npz"),
            "records": prob.n_records,
            "outputs": prob.n_outputs,
            "method": args.method,
            "expected_loss": pm.expected_loss,
            "lower_bound": pm.lower_bound,
            "relative_gap": pm.relative_gap,
            "max_relative_violation": v.max_relative_violation,
            "time_s": pm.info.get("time_s"),
        }
    )
    return 0


def _solve(args: argparse.Namespace):
    """(problem, perturbation matrix, its verification) as the flags ask."""
    records = rome_grid() if args.points is None else load_points(args.points)
    prob = MDPProblem(
        records,
        epsilon=args.epsilon,
        eta=args.eta,
        metric=args.metric,
        outputs=args.outputs,
        seed=args.seed,
    )
    opts: dict = {}
    if args.method == "benders":
        opts = dict(
            m=args.subsets, partitioner=args.partitioner, rel_gap=args.gap, progress=args.progress
        )
    elif args.method == "lp":
        opts = dict(
            row_generation=not args.plain,
            polish={"auto": "auto", "yes": True, "no": False}[args.polish],
        )
    pm = solve(prob, args.method, **opts)
    return prob, pm, pm.violations(prob)


def _write_outputs(out: Path, args: argparse.Namespace, prob, pm, v) -> None:
    """The matrix (.npz), the report and its plots, into the staging directory ``out``."""
    pm.save(out / "perturbation_matrix.npz")
    pm._write(out)  # release.json + data.npz: privopt.load(out) reads the release back
    rows = [
        ["records N", prob.n_records],
        ["outputs K", prob.n_outputs],
        ["neighbour pairs |E|", len(prob.edges)],
        ["method", args.method],
        ["expected loss", pm.expected_loss],
        ["lower bound", pm.lower_bound],
        ["certified relative gap", pm.relative_gap],
        ["time (s)", pm.info.get("time_s", float("nan"))],
        ["max relative mDP violation", v.max_relative_violation],
        ["repair weight α", pm.info.get("repair_alpha", 0.0)],
    ]
    sec = Section("Metric-DP perturbation matrix", markdown_table(["quantity", "value"], rows))
    try:
        if prob.points is not None and prob.points.shape[1] == 2:
            ax = pm.plot_row(prob, prob.n_records // 2)
            save_figure(ax.figure, out / "mdp_row.png", dpi=110, bbox_inches="tight")
            sec.figures.append("mdp_row.png")
        if args.method == "benders" and pm.history:
            ax = pm.plot_bounds()
            save_figure(ax.figure, out / "mdp_bounds.png", dpi=110, bbox_inches="tight")
            sec.figures.append("mdp_bounds.png")
    finally:
        close_figure("all")
    report = Report("privopt mdp")
    report.add(sec)
    report.write(out)
