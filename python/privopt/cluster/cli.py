"""``privopt cluster``: DPM on a CSV or NPY file; writes the release, centres, labels and a
report. With ``--workers`` or ``--scheduler`` a ``.npy`` input is fitted as a Dask array on
that cluster, read by the workers in row chunks, and the labels are written chunk by chunk."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

# The package, not DPM itself: privopt.cluster imports scikit-learn (a second) when DPM is
# first used, so that `privopt --help` does not.
from privopt import _optional, cluster
from privopt._arguments import Real, count
from privopt._cli_support import (
    add_alias,
    add_delta_option,
    add_epsilon_option,
    add_executor_options,
    add_out_option,
    add_seed_option,
    dask_client_from_args,
    emit_summary,
    refuse_ignored_options,
    release_summary,
    reserve_outputs,
)
from privopt._inputs import load_points_file
from privopt._progress import progress_bar
from privopt.cluster._chunks import chunk_label_lines
from privopt.cluster._dpm import _dask_passes
from privopt.cluster._npy_reader import NpyRows
from privopt.cluster._plot import projection_plot
from privopt.errors import InvalidInput
from privopt.report import GLOSSARY_NOTE, Report, Section, format_number

__all__ = ["register", "load_points", "DEFAULT_CHUNK_ROWS"]

#: Rows per chunk of a fit on a Dask cluster unless ``--chunk-rows`` (8 MiB per float64 column).
DEFAULT_CHUNK_ROWS = 1 << 20

#: Chunks labelled at a time on a Dask cluster, at least (one per worker thread when the cluster
#: has more): this process holds their labels, never all n.
LABEL_BATCH_CHUNKS = 4

#: Rows of the projection plot drawn from a fit on a Dask cluster (every k-th row of each chunk).
PLOT_SAMPLE_ROWS = 20_000


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
    add_executor_options(
        p,
        "the passes over the data (a .npy INPUT, which each worker reads in row chunks; "
        "this process keeps the tree, not the data)",
    )
    p.add_argument(
        "--chunk-rows",
        type=count,
        default=None,
        metavar="ROWS",
        help="with --workers or --scheduler: rows per chunk, the unit a worker reads and "
        f"labels (default {DEFAULT_CHUNK_ROWS:,}, {DEFAULT_CHUNK_ROWS * 8 // 2**20} MiB per "
        "column)",
    )
    add_out_option(p, "cluster")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    on_cluster = args.workers is not None or args.scheduler is not None
    refuse_ignored_options(
        args,
        [
            ("--chunk-rows", "chunk_rows", None, on_cluster, "--workers or --scheduler"),
            (
                "--connect-timeout",
                "connect_timeout",
                None,
                args.scheduler is not None,
                "--scheduler",
            ),
        ],
    )
    inputs = [args.input] + ([args.bounds_file] if args.bounds_file is not None else [])
    with reserve_outputs(args, inputs) as outputs:
        out = outputs.add(args.out)
        X = _chunked_points(args) if on_cluster else load_points(args.input)
        with dask_client_from_args(args):
            model = _fit(args, X)
            with outputs.publish() as staged:
                _write_outputs(staged[out], args, X, args.delta, model)
    n = int(X.shape[0])
    emit_summary(
        release_summary(
            "cluster",
            model.release_,
            out,
            centres=str(out / "centres.csv"),
            labels=str(out / "labels.csv"),
            n=n,
        )
    )
    hint = single_cluster_hint(model, args.epsilon, n)
    if hint:
        print(f"note: {hint}", file=sys.stderr)
    return 0


def _fit(args: argparse.Namespace, X: Any) -> Any:
    """The fitted DPM of the options (X: an array, or a Dask array on a cluster)."""
    return cluster.DPM(
        bounds=_bounds(args, int(X.shape[1])),
        epsilon=args.epsilon,
        **_estimate_options(args),
        delta=args.delta,
        max_depth=args.max_depth,
        window=args.window.replace("-", "_"),
        clip=not args.no_clip,
        random_state=args.seed,
    ).fit(X)


def _chunked_points(args: argparse.Namespace) -> Any:
    """INPUT as a Dask array of row chunks that the workers read from the file themselves.

    Only a ``.npy`` file can be read so: text has to be parsed from its start, so this process
    would hold it whole (the refusal says how to convert it).
    """
    if Path(args.input).suffix.lower() != ".npy":
        raise InvalidInput(
            "--workers and --scheduler need a .npy INPUT (the workers read it in row chunks); "
            f"{args.input!r} is text, which this process would parse whole: save it with "
            "numpy.save, or run without them"
        )
    source = NpyRows(args.input, "INPUT")
    rows = DEFAULT_CHUNK_ROWS if args.chunk_rows is None else args.chunk_rows
    return _optional.dask_array().from_array(
        source, chunks=(min(rows, source.shape[0]), source.shape[1]), asarray=False
    )


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


def _write_outputs(out: Path, args: argparse.Namespace, X: Any, delta: float, model) -> None:
    """The release (``release.json``, ``data.npz``: :func:`privopt.load` reads the folder back),
    centres.csv, labels.csv, the projection plot and report.md, into ``out``."""
    release = model.release_
    release._write(out)
    np.savetxt(out / "centres.csv", model.cluster_centers_, delimiter=",", fmt="%.10g")
    n, d = (int(v) for v in X.shape)
    if isinstance(X, np.ndarray):
        np.savetxt(out / "labels.csv", model.labels_, fmt="%d")
        shown, shown_labels = X, model.labels_
    else:
        shown, shown_labels = _write_chunked_labels(out / "labels.csv", X, model.labels_)
    projection_plot(
        shown,
        shown_labels,
        model.cluster_centers_,
        out / "projection.png",
        f"DPM, epsilon = {args.epsilon:g}: {_clusters(model.n_clusters_)}",
    )
    body = (
        f"Input `{args.input}`: n = {n} points, d = {d} features; "
        f"{_bounds_text(args, model)}; "
        f"epsilon = {args.epsilon:g}, delta = {delta:.3g}.\n\n"
        f"**{_clusters(model.n_clusters_)}**, split width β = "
        f"{'not estimated' if model.split_width_ is None else format_number(model.split_width_)}"
        f" (units of the data; {model.n_splits_} candidate splits per dimension).\n\n"
        + (
            f"Why one cluster: {single_cluster_hint(model, args.epsilon, n)}.\n\n"
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


def _write_chunked_labels(path: Path, X: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    """Write the lazy (n,) ``labels`` of the Dask array X to ``path`` a few chunks at a time, in
    one pass with a sample of X for the plot (every k-th row of each chunk, about
    :data:`PLOT_SAMPLE_ROWS` in all); returns (sample rows, their labels)."""
    compute = _optional.dask_array().compute
    passes = _dask_passes()
    step = max(1, int(X.shape[0]) // PLOT_SAMPLE_ROWS)
    label_blocks = list(labels.to_delayed().ravel())
    # The workers format their chunk's lines; this process only writes the bytes in order.
    lines = [passes.delayed_call(chunk_label_lines, block) for block in label_blocks]
    picked = [block[::step] for block in label_blocks]
    row_blocks = [block[::step] for block in X.to_delayed().ravel()]
    batch = passes.chunks_in_flight(LABEL_BATCH_CHUNKS)
    samples: list[np.ndarray] = []
    sample_labels: list[np.ndarray] = []
    starts = progress_bar(
        "auto", range(0, len(label_blocks), batch), desc="DPM labels", unit="batch"
    )
    with open(path, "wb") as fh:
        for first in starts:
            part = slice(first, first + batch)
            text, rows, rows_labels = compute(lines[part], row_blocks[part], picked[part])
            fh.writelines(text)
            samples += rows
            sample_labels += rows_labels
    return np.concatenate(samples), np.concatenate(sample_labels)


def _bounds_text(args: argparse.Namespace, model: Any) -> str:
    if args.bounds is not None:
        return f"bounds {tuple(args.bounds)}"
    if args.bounds_file is not None:
        return f"per-feature bounds from `{args.bounds_file}`"
    return (
        f"per-feature bounds estimated privately with epsilon "
        f"{model.release_.bounds_epsilon:g} of the total"
    )
