"""``privopt mdp``: optimal ε-mDP perturbation matrix for points from a CSV/NPY file."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from privopt._arguments import Method, Real, RealList, count, positive, seed
from privopt._cli_support import (
    add_alias,
    add_epsilon_option,
    add_executor_options,
    add_gap_option,
    add_out_option,
    add_time_limit_option,
    emit_summary,
    executor_from_args,
    executor_rules,
    refuse_ignored_options,
    release_summary,
    require_options,
    reserve_outputs,
)
from privopt._inputs import load_points_file, read_numeric_csv
from privopt.errors import InvalidInput
from privopt.mdp import MDPProblem, rome_grid, solve, sweep_epsilon
from privopt.mdp.tradeoff import SWEEP_BASELINES
from privopt.perturbation.matrix import PerturbationMatrix
from privopt.perturbation.tradeoff import MAX_SWEEP_EPSILONS
from privopt.report import (
    GLOSSARY_NOTE,
    Report,
    Section,
    close_figure,
    markdown_table,
    release_header,
    save_figure,
    status_text,
)

__all__ = ["register", "load_points"]

_METHOD = Method(["lp", "benders", "expmech"])
_PARTITIONER = Method(["k-m-dv", "k-m-rec", "k-m-adj", "bsc"])


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


#: Outputs K drawn from the built-in Rome grid's 500 cells when ``--outputs`` is not given (the
#: paper's K = 100; all 500 make an LP that takes minutes to prove on two cores).
GRID_OUTPUTS = 100


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
    # Not argparse-required: --sweep-epsilon replaces it (the run checks that one is given).
    add_epsilon_option(
        p, "ε per distance unit (1/km with haversine), metric DP; or --sweep-epsilon", parent=True
    )
    p.add_argument(
        "--eta",
        type=Real(low=0.0, low_open=True, allow_inf=True),
        default=2.0,
        help="neighbour threshold η (distance unit; inf: every pair)",
    )
    p.add_argument(
        "--method",
        type=_METHOD,
        default="lp",
        metavar=_METHOD.metavar,
        help="lp (one LP, row generation), benders (decomposition) or expmech (exponential "
        "mechanism, no optimization)",
    )
    p.add_argument(
        "--outputs",
        type=count,
        default=None,
        help="use this many random records as the outputs K (default: all records of POINTS; "
        f"{GRID_OUTPUTS} of the built-in grid's 500, the paper's setting)",
    )
    add_alias(p, "-k", "outputs", type=count)
    p.add_argument("--subsets", type=count, default=25, help="Benders: number of subsets M")
    p.add_argument(
        "--partitioner",
        type=_PARTITIONER,
        default="k-m-dv",
        metavar=_PARTITIONER.metavar,
        help="Benders: how the records are split into subsets",
    )
    add_gap_option(p, 1e-4, " (Benders)")
    add_time_limit_option(p, "the solver (per LP for lp, the whole decomposition for benders)")
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
        "--sample-seed",
        type=seed,
        default=0,
        help="seed of the choice of the --outputs records (a public choice, not a privacy draw)",
    )
    p.add_argument(
        "--sweep-epsilon",
        type=RealList(positive, MAX_SWEEP_EPSILONS),
        metavar="E1,E2,...",
        help="instead of one matrix at --epsilon: solve at each ε of the comma list and "
        "compare loss and the Bayes adversary's error with the baselines (sweep.csv, plots)",
    )
    p.add_argument(
        "--baselines",
        type=_sweep_baselines,
        default="auto",
        help="--sweep-epsilon: comma list of expmech, laplace, or none; 'auto': expmech, and "
        "laplace when the records are points of the plane",
    )
    add_executor_options(
        p,
        "the Benders subproblems (with --sweep-epsilon: the ε values)",
        threads="the Benders subproblems or the ε values (without any: one after another, "
        "a sweep's LPs each warm-started from the last)",
    )
    add_alias(p, "--seed", "sample_seed", type=seed)
    add_out_option(p, "mdp")
    p.set_defaults(func=_run)


def _sweep_baselines(text: str) -> str:
    """An argparse ``type``: 'auto', 'none' or a comma list of sweep baselines."""
    names = [b.strip() for b in text.split(",")]
    if text not in ("auto", "none") and not all(b in SWEEP_BASELINES for b in names):
        raise argparse.ArgumentTypeError(
            f"must be auto, none or a comma list of {', '.join(SWEEP_BASELINES)}, got {text!r}"
        )
    return text


def _run(args: argparse.Namespace) -> int:
    benders, lp = args.method == "benders", args.method == "lp"
    sweep = args.sweep_epsilon is not None
    refuse_ignored_options(
        args,
        [
            ("--subsets", "subsets", 25, benders, "--method benders"),
            ("--partitioner", "partitioner", "k-m-dv", benders, "--method benders"),
            ("--gap", "gap", 1e-4, benders, "--method benders"),
            ("--plain", "plain", False, lp, "--method lp"),
            ("--polish", "polish", "auto", lp and not args.plain, "--method lp without --plain"),
            ("--sample-seed", "sample_seed", 0, args.outputs is not None, "--outputs"),
            ("--time-limit", "time_limit", None, args.method != "expmech", "lp or benders"),
            ("--baselines", "baselines", "auto", sweep, "--sweep-epsilon"),
            *executor_rules(benders or sweep, "--method benders or --sweep-epsilon"),
            ("--epsilon", "epsilon", None, not sweep, "one matrix (without --sweep-epsilon)"),
        ],
    )
    if sweep:
        return _run_sweep(args)
    require_options(args, "--epsilon")
    with reserve_outputs(args, [args.points]) as outputs:
        out = outputs.add(args.out)
        prob = _problem(args)
        _say_what_will_not_be_proven(args, prob)
        prob, pm, v, seen = _solve(args, prob)
        with outputs.publish() as staged:
            _write_outputs(staged[out], args, prob, pm, v, seen)
    emit_summary(
        release_summary(
            "mdp",
            pm,
            out,
            matrix=str(out / "perturbation_matrix.npz"),
            records=prob.n_records,
            outputs=prob.n_outputs,
            method=args.method,
            max_relative_violation=v.max_relative_violation,
            adversary_error=seen.expected_error,
            true_report_probability=seen.true_report_probability,
        )
    )
    return 0


def _run_sweep(args: argparse.Namespace) -> int:
    """``--sweep-epsilon``: the sweep's table, plots and report into --out, its points on
    stdout."""
    if args.method == "expmech":
        raise InvalidInput(
            "--sweep-epsilon compares the optimal matrix with the baselines: use --method lp "
            "or benders (the exponential mechanism is a baseline of every sweep)"
        )
    with reserve_outputs(args, [args.points]) as outputs:
        out = outputs.add(args.out)
        prob = _problem(args)
        baselines = {"auto": "auto", "none": []}.get(
            args.baselines, [b.strip() for b in args.baselines.split(",")]
        )
        with executor_from_args(args) as executor:
            result = sweep_epsilon(
                prob,
                args.sweep_epsilon,
                method=args.method,
                baselines=baselines,
                executor=executor,
                progress=args.progress,
                **_solver_options(args, progress=None),
            )
        with outputs.publish() as staged:
            files = result.write_report(staged[out], "privopt mdp --sweep-epsilon")
    emit_summary(
        {
            "command": "mdp",
            "mode": "sweep-epsilon",
            "out": str(out),
            "files": files,
            "records": prob.n_records,
            "outputs": prob.n_outputs,
            "method": args.method,
            **result.summary(),
        }
    )
    return 0


def _problem(args: argparse.Namespace) -> MDPProblem:
    """The records of POINTS (or the Rome grid) as an :class:`MDPProblem` at ``--epsilon``."""
    records = rome_grid() if args.points is None else load_points(args.points)
    return MDPProblem(
        records,
        # a sweep's problem starts at its first ε; each point sets its own
        epsilon=args.epsilon if args.sweep_epsilon is None else args.sweep_epsilon[0],
        eta=args.eta,
        metric=args.metric,
        outputs=GRID_OUTPUTS if args.outputs is None and args.points is None else args.outputs,
        seed=args.sample_seed,
    )


def _solver_options(args: argparse.Namespace, *, progress: bool | None) -> dict[str, Any]:
    """The options of :func:`privopt.mdp.solve` that the flags set for ``--method`` (with
    ``progress`` None, Benders' own bar is left to the caller)."""
    if args.method == "benders":
        opts = dict(
            m=args.subsets,
            partitioner=args.partitioner,
            rel_gap=args.gap,
            time_limit=args.time_limit,
        )
        return opts if progress is None else {**opts, "progress": progress}
    if args.method == "lp":
        return dict(
            row_generation=not args.plain,
            polish={"auto": "auto", "yes": True, "no": False}[args.polish],
            time_limit=args.time_limit,
        )
    return {}


#: records × outputs above which the exact LP is not expected to prove its optimum within a
#: minute on two cores (docs/performance.md: the built-in grid's 500 × 100 takes about 25 s of
#: CPU, 500 × 500 minutes).
QUICK_LP_CELLS = 500 * GRID_OUTPUTS


def _say_what_will_not_be_proven(args: argparse.Namespace, prob: MDPProblem) -> None:
    """Before the solve, on stderr: when the run stops early (``--time-limit``) or is large
    enough to take minutes, what it may end without proving, so nobody waits unawares."""
    where = "privopt mdp: note:"
    if args.method == "expmech":
        return  # nothing is optimized, and the summary's null status says so
    if args.time_limit is not None and math.isfinite(args.time_limit):
        print(
            f"{where} this run stops after {args.time_limit:g} s; the result's status says "
            "whether the gap to the proven lower bound closed",
            file=sys.stderr,
        )
    elif prob.n_records * prob.n_outputs > QUICK_LP_CELLS:
        print(
            f"{where} {prob.n_records} records x {prob.n_outputs} outputs is a large LP: on a "
            "2-core machine proving its optimum can take several minutes; --time-limit S stops "
            "after S s and the status then says whether the gap closed (--outputs K, fewer "
            "outputs, is faster)",
            file=sys.stderr,
        )


def _solve(
    args: argparse.Namespace, prob: MDPProblem
) -> tuple[MDPProblem, PerturbationMatrix, Any, Any]:
    """(problem, perturbation matrix, its verification, the Bayes adversary's view of it) as
    the flags ask."""
    with executor_from_args(args) as executor:
        options = _solver_options(args, progress=args.progress)
        if executor is not None:  # Benders only: the other runs refuse the options
            options["executor"] = executor
        pm = solve(prob, args.method, **options)
    return prob, pm, pm.violations(prob), pm.inference_error(prob, prob.prior)


def _write_outputs(out: Path, args: argparse.Namespace, prob, pm, v, seen) -> None:
    """The matrix (.npz), the report and its plots, into the staging directory ``out``."""
    pm.save(out / "perturbation_matrix.npz")
    pm._write(out)  # release.json + data.npz: privopt.load(out) reads the release back
    unit = "km" if args.metric == "haversine" else "distance units"
    rows = [
        ["records (N)", prob.n_records],
        ["possible outputs (K)", prob.n_outputs],
        ["neighbour pairs protected (|E|, ordered)", len(prob.edges)],
        ["method", args.method],
        [f"expected loss: mean distance to the reported output ({unit})", pm.expected_loss],
        [f"proven lower bound on that loss ({unit})", pm.lower_bound],
        ["proven relative gap to the optimum", pm.relative_gap],
        ["solve time (s)", pm.info.get("time_s", float("nan"))],
        ["largest relative metric-DP violation (0 = none)", v.max_relative_violation],
        ["repair mixing weight (α, 0 = no repair)", pm.info.get("repair_alpha", 0.0)],
        [
            f"expected error of the best (Bayes) attacker guessing the true record ({unit})",
            seen.expected_error,
        ],
        ["probability that the report is the true record", seen.true_report_probability],
    ]
    head = release_header(
        pm.describe(), pm.guarantee.describe(), status_text(pm.status, pm.relative_gap)
    )
    sec = Section(
        "Metric-DP perturbation matrix",
        head + markdown_table(["quantity", "value"], rows) + "\n" + GLOSSARY_NOTE,
    )
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
