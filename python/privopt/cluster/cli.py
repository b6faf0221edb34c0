"""``privopt cluster``: DPM on a CSV or NPY file; writes the release, centres, labels and a
report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

# The package, not DPM itself: privopt.cluster imports scikit-learn (a second) when DPM is
# first used, so that `privopt --help` does not.
from privopt import cluster
from privopt._arguments import Real, count
from privopt._cli_support import (
    add_alias,
    add_delta_option,
    add_epsilon_option,
    add_out_option,
    add_seed_option,
    emit_summary,
    release_summary,
    reserve_outputs,
)
from privopt._inputs import load_points_file
from privopt.cluster._plot import projection_plot
from privopt.errors import InvalidInput
from privopt.report import GLOSSARY_NOTE, Report, Section, format_number

__all__ = ["register", "load_points"]


def load_points(path: str | Path) -> np.ndarray:
    """An (n, d) finite float array from ``.npy`` or a comma-separated text file (one header
    line of column names allowed); a bad file raises :class:`InvalidInput` naming it."""
    return load_points_file(path, "INPUT")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``cluster`` subcommand to the ``privopt`` parser."""
    p = subparsers.add_parser(
        "cluster",
        help="differentially private clustering (DPM) of a CSV/NPY file",
        description="Cluster the rows of a CSV or NPY file under (epsilon, delta)-DP with DPM "
        "(no number of clusters needed). Writes the release (release.json and data.npz, which "
        "privopt.load reads back), centres.csv, labels.csv, report.md and a 2-D projection "
        "plot into --out.",
    )
    p.add_argument("input", help="points, one row each: .npy or comma-separated text")
    given = p.add_mutually_exclusive_group()
    given.add_argument(
        "--bounds",
        nargs=2,
        type=Real(),
        metavar=("A", "B"),
        help="public range [A, B] of every coordinate (public knowledge, not read off the data)",
    )
    given.add_argument(
        "--bounds-file",
        metavar="PATH",
        help="public per-feature ranges: a CSV or NPY file of two rows, the lower and the upper "
        "bound of each column",
    )
    p.add_argument(
        "--bounds-epsilon-share",
        type=Real(low=0.0, low_open=True),
        default=None,
        help="without --bounds or --bounds-file, the share of epsilon spent on estimating "
        "per-feature bounds privately (default 0.1)",
    )
    p.add_argument(
        "--bounds-range",
        nargs=2,
        type=Real(),
        metavar=("LO", "HI"),
        default=None,
        help="without --bounds or --bounds-file, the public range the estimated bounds are "
        "searched in (default -1e6 1e6)",
    )
    add_epsilon_option(p, "total ε of the whole clustering, (ε, δ)-DP")
    add_delta_option(p, "total δ of the whole clustering; the paper uses 1/n^1.5")
    p.add_argument("--max-depth", type=count, default=7, help="recursion depth tau_r")
    p.add_argument(
        "--emptiness-window",
        dest="window",
        default="paper",
        choices=["paper", "half-open", "reference"],
        help="which candidate centres count as empty: paper (closed window of width β), "
        "half-open, or reference (the paper's reference code)",
    )
    add_alias(p, "--window", "window", choices=["paper", "half-open", "half_open", "reference"])
    p.add_argument("--no-clip", action="store_true", help="reject points outside the bounds")
    add_seed_option(p, "the noise")
    add_out_option(p, "cluster")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    inputs = [args.input] + ([args.bounds_file] if args.bounds_file is not None else [])
    with reserve_outputs(args, inputs) as outputs:
        out = outputs.add(args.out)
        X = load_points(args.input)
        bounds = _bounds(args, X.shape[1])
        delta = args.delta
        model = cluster.DPM(
            bounds=bounds,
            epsilon=args.epsilon,
            **_estimate_options(args),
            delta=delta,
            max_depth=args.max_depth,
            window=args.window.replace("-", "_"),
            clip=not args.no_clip,
            random_state=args.seed,
        ).fit(X)
        with outputs.publish() as staged:
            _write_outputs(staged[out], args, X, delta, model)

    emit_summary(
        release_summary(
            "cluster",
            model.release_,
            out,
            centres=str(out / "centres.csv"),
            labels=str(out / "labels.csv"),
            n=len(X),
        )
    )
    hint = single_cluster_hint(model, args.epsilon, len(X))
    if hint:
        print(f"note: {hint}", file=sys.stderr)
    return 0


def _bounds(args: argparse.Namespace, d: int) -> Any:
    """The bounds DPM gets: one pair, per-feature arrays from --bounds-file, or None (to be
    estimated privately)."""
    if args.bounds is None and args.bounds_file is None:
        return None
    for option, value in (
        ("--bounds-epsilon-share", args.bounds_epsilon_share),
        ("--bounds-range", args.bounds_range),
    ):
        if value is not None:
            given = "--bounds" if args.bounds is not None else "--bounds-file"
            raise InvalidInput(f"{option} applies only to estimated bounds, not with {given}")
    if args.bounds is not None:
        return tuple(args.bounds)
    rows = load_points_file(args.bounds_file, "--bounds-file")
    if rows.shape != (2, d):
        raise InvalidInput(
            f"--bounds-file must hold 2 rows (lower, upper) of {d} values, one per column of "
            f"INPUT; got shape {rows.shape}"
        )
    return rows[0], rows[1]


def _estimate_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of the bounds estimate that were given (DPM's defaults otherwise)."""
    options: dict[str, Any] = {}
    if args.bounds_epsilon_share is not None:
        options["bounds_epsilon_share"] = args.bounds_epsilon_share
    if args.bounds_range is not None:
        options["bounds_range"] = tuple(args.bounds_range)
    return options


def _clusters(n: int) -> str:
    return "1 cluster" if n == 1 else f"{n} clusters"


def single_cluster_hint(model: Any, epsilon: float, n: int) -> str:
    """Why a fitted DPM found a single cluster, in plain words ("" when it found more)."""
    if model.n_clusters_ != 1:
        return ""
    if model.split_width_ is None:
        return (
            "1 cluster: the noisy count of points was below 2, so the data stayed one cluster; "
            "a larger epsilon or more points is needed"
        )
    return (
        f"1 cluster: at epsilon = {epsilon:g} the noise of each private split test outweighs "
        f"what a split of these {n} points would gain, so no split was accepted; a larger "
        "epsilon (a bigger privacy budget) or more points lets the test separate groups"
    )


def _write_outputs(out: Path, args: argparse.Namespace, X: np.ndarray, delta: float, model) -> None:
    """The release (``release.json``, ``data.npz``: :func:`privopt.load` reads the folder back),
    centres.csv, labels.csv, the projection plot and report.md, into ``out``."""
    release = model.release_
    release._write(out)
    np.savetxt(out / "centres.csv", model.cluster_centers_, delimiter=",", fmt="%.10g")
    np.savetxt(out / "labels.csv", model.labels_, fmt="%d")
    projection_plot(
        X,
        model.labels_,
        model.cluster_centers_,
        out / "projection.png",
        f"DPM, epsilon = {args.epsilon:g}: {_clusters(model.n_clusters_)}",
    )
    body = (
        f"Input `{args.input}`: n = {len(X)} points, d = {X.shape[1]} features; "
        f"{_bounds_text(args, model)}; "
        f"epsilon = {args.epsilon:g}, delta = {delta:.3g}.\n\n"
        f"**{_clusters(model.n_clusters_)}**, split width β = "
        f"{'not estimated' if model.split_width_ is None else format_number(model.split_width_)}"
        f" (units of the data; {model.n_splits_} candidate splits per dimension).\n\n"
        + (
            f"Why one cluster: {single_cluster_hint(model, args.epsilon, len(X))}.\n\n"
            if model.n_clusters_ == 1
            else ""
        )
        + "The labels and the plot use the raw data and are not private; the release "
        "(release.json, data.npz) and centres.csv are.\n"
    )
    body += "\n" + GLOSSARY_NOTE + "\n"
    report = Report("privopt cluster (DPM)")
    report.add(release.report())
    report.add(Section("DPM clustering: the data owner's view", body, ["projection.png"]))
    report.write(out)


def _bounds_text(args: argparse.Namespace, model: Any) -> str:
    if args.bounds is not None:
        return f"bounds {tuple(args.bounds)}"
    if args.bounds_file is not None:
        return f"per-feature bounds from `{args.bounds_file}`"
    return (
        f"per-feature bounds estimated privately with epsilon "
        f"{model.release_.bounds_epsilon:g} of the total"
    )
