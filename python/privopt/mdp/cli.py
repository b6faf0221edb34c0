"""``privopt mdp``: optimal ε-mDP perturbation matrix for points from a CSV/NPY file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from privopt.errors import InvalidInput

__all__ = ["register", "load_points"]


def load_points(path: str | Path) -> np.ndarray:
    """Records from ``.npy`` (float array) or ``.csv`` (numeric columns; a header line is
    skipped; with columns named lat/lon or y/x those two are taken in (lat, lon) order)."""
    p = Path(path)
    if not p.is_file():
        raise InvalidInput(f"points file {str(p)!r} does not exist")
    if p.suffix == ".npy":
        return np.load(p, allow_pickle=False).astype(np.float64)
    with p.open(encoding="utf-8") as f:
        first = f.readline().strip().split(",")
    try:
        [float(v) for v in first]
        return np.loadtxt(p, delimiter=",", ndmin=2)
    except ValueError:
        pass
    names = [c.strip().lower() for c in first]
    for lat, lon in (("lat", "lon"), ("latitude", "longitude"), ("y", "x")):
        if lat in names and lon in names:
            cols = (names.index(lat), names.index(lon))
            return np.loadtxt(p, delimiter=",", skiprows=1, usecols=cols, ndmin=2)
    return np.loadtxt(p, delimiter=",", skiprows=1, ndmin=2)


def register(subparsers: argparse._SubParsersAction) -> None:
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
    p.add_argument("--epsilon", type=float, default=2.0, help="ε per distance unit (1/km)")
    p.add_argument("--eta", type=float, default=2.0, help="neighbour threshold η")
    p.add_argument("--method", default="lp", choices=["lp", "benders", "expmech"])
    p.add_argument(
        "-k",
        "--outputs",
        type=int,
        default=None,
        help="use K random records as outputs (default: all records)",
    )
    p.add_argument("--subsets", type=int, default=25, help="Benders: number of subsets M")
    p.add_argument(
        "--partitioner", default="k-m-dv", choices=["k-m-dv", "k-m-rec", "k-m-adj", "bsc"]
    )
    p.add_argument("--gap", type=float, default=1e-4, help="Benders relative gap")
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
    p.add_argument("--seed", type=int, default=0, help="seed for choosing outputs")
    p.add_argument("--out", default="mdp_out", help="output directory")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from privopt.mdp import MDPProblem, rome_grid, solve
    from privopt.report import Report, Section, markdown_table

    records = rome_grid() if args.points is None else load_points(args.points)
    prob = MDPProblem(
        records,
        epsilon=args.epsilon,
        eta=args.eta,
        metric=args.metric,
        outputs=args.outputs,
        seed=args.seed,
    )
    opts = {}
    if args.method == "benders":
        opts = dict(m=args.subsets, partitioner=args.partitioner, rel_gap=args.gap)
    elif args.method == "lp":
        opts = dict(
            row_generation=not args.plain,
            polish={"auto": "auto", "yes": True, "no": False}[args.polish],
        )
    pm = solve(prob, args.method, **opts)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    npz = pm.save(out / "perturbation_matrix.npz")
    v = pm.verify(prob)
    rows = [
        ["records N", prob.n_records],
        ["outputs K", prob.n_outputs],
        ["neighbour pairs |E|", len(prob.edges)],
        ["method", args.method],
        ["expected loss", pm.expected_loss],
        ["lower bound", pm.lower_bound],
        ["certified relative gap", pm.relative_gap],
        ["time (s)", pm.summary.get("time_s", float("nan"))],
        ["max relative mDP violation", v.max_relative_violation],
        ["repair weight α", pm.summary.get("repair_alpha", 0.0)],
    ]
    sec = Section("Metric-DP perturbation matrix", markdown_table(["quantity", "value"], rows))
    if prob.points is not None and prob.points.shape[1] == 2:
        ax = pm.plot_row(prob, prob.n_records // 2)
        ax.figure.savefig(out / "mdp_row.png", dpi=110, bbox_inches="tight")
        sec.figures.append("mdp_row.png")
    if args.method == "benders" and pm.history:
        ax = pm.plot_bounds()
        ax.figure.savefig(out / "mdp_bounds.png", dpi=110, bbox_inches="tight")
        sec.figures.append("mdp_bounds.png")
    report = Report("privopt mdp")
    report.add(sec)
    report.write(out)
    print(
        json.dumps(
            {
                "matrix": str(npz),
                "expected_loss": pm.expected_loss,
                "lower_bound": pm.lower_bound,
                "relative_gap": pm.relative_gap,
                "max_relative_violation": v.max_relative_violation,
                "time_s": pm.summary.get("time_s"),
            }
        )
    )
    import matplotlib.pyplot as plt

    plt.close("all")
    return 0
