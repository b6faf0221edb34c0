"""``privopt cluster``: DPM on a CSV or NPY file; writes the release, centres, labels and a
report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

# The package, not DPM itself: privopt.cluster imports scikit-learn (a second) when DPM is
# first used, so that `privopt --help` does not.
from privopt import cluster
from privopt._arguments import Real, count, positive, seed
from privopt._cli_support import emit_summary, reserve_outputs
from privopt._inputs import load_points_file
from privopt.cluster._plot import projection_plot
from privopt.report import Report, Section

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
    p.add_argument(
        "--bounds",
        nargs=2,
        type=Real(),
        required=True,
        metavar=("A", "B"),
        help="public range [A, B] of every coordinate",
    )
    p.add_argument("--epsilon", type=positive, default=1.0, help="total epsilon (default 1)")
    p.add_argument(
        "--delta",
        type=Real(low=0.0, low_open=True, high=1.0),
        default=None,
        help="total delta (default 1/n^1.5 as in the paper, which treats n as public)",
    )
    p.add_argument("--max-depth", type=count, default=7, help="recursion depth tau_r (default 7)")
    p.add_argument("--window", default="paper", choices=["paper", "half_open", "reference"])
    p.add_argument("--no-clip", action="store_true", help="reject points outside the bounds")
    p.add_argument(
        "--seed",
        type=seed,
        default=None,
        help="seed the noise, for reproducible tests only: anyone who knows the seed can "
        "recompute and remove the noise. Default: the operating system's cryptographic source",
    )
    p.add_argument("--out", default="dpm-out", help="output directory (default ./dpm-out)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with reserve_outputs(args, [args.input]) as outputs:
        out = outputs.add(args.out)
        X = load_points(args.input)
        delta = args.delta if args.delta is not None else 1.0 / max(len(X), 2) ** 1.5
        model = cluster.DPM(
            bounds=tuple(args.bounds),
            epsilon=args.epsilon,
            delta=delta,
            max_depth=args.max_depth,
            window=args.window,
            clip=not args.no_clip,
            random_state=args.seed,
        ).fit(X)
        with outputs.publish() as staged:
            _write_outputs(staged[out], args, X, delta, model)

    emit_summary(
        {
            "command": "cluster",
            "out": str(out),
            "centres": str(out / "centres.csv"),
            "n": len(X),
            **model.release_.summary(),
        }
    )
    if model.split_width_ is None:
        print("note: the noisy count was below 2, so the data stayed one cluster", file=sys.stderr)
    return 0


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
        f"DPM, epsilon={args.epsilon:g}: {model.n_clusters_} clusters",
    )
    body = (
        f"Input `{args.input}`: n = {len(X)}, d = {X.shape[1]}; bounds {tuple(args.bounds)}; "
        f"epsilon = {args.epsilon:g}, delta = {delta:.3g}"
        f"{' (default 1/n^1.5)' if args.delta is None else ''}.\n\n"
        f"**{model.n_clusters_} clusters**, split width beta = {model.split_width_} "
        f"({model.n_splits_} candidates per dimension).\n\n"
        "The labels and the plot use the raw data and are not private; the release "
        "(release.json, data.npz) and centres.csv are.\n"
    )
    report = Report("privopt cluster (DPM)")
    report.add(release.report())
    report.add(Section("DPM clustering: the data owner's view", body, ["projection.png"]))
    report.write(out)
