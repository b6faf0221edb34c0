"""Census mechanisms on real records: the IPUMS extract of the shared reference data.

The shared data (``PRIVOPT_DATA`` or ../shared/data, see its README; not part of the repository)
has no household ids, so this runs the paper's model as a *count of counts* (Kuo et al., spec 003
§4): regions race → marital status (1 + 7 + 36 regions), a group is one sex × age cell of a
region, its size is the number of people in it. The sizes are heavy-tailed up to N ≈ 1,084 —
the shape of the paper's Census run (N = 1,000). Caveat: in this reading adding or removing a
person can also create or delete a group (a cell of size 1), which the paper's neighbour model
(G public, spec 003 §1.4) does not cover; the run is a real-data accuracy/runtime check, not a
release recipe for cells.

Prints mean L1 per level, #CV and seconds per mechanism for ε ∈ {0.1, 0.5, 1}, with the runtime
ratio to TopDown (and to the DP mechanisms for the QP baselines, ``--with-qp``) from the same run.

Usage: python bench/census_real.py [--records PATH] [--levels RACE,MARST] [--group SEX,AGE]
       [--runs 3] [--with-qp] [--qp-limit 120]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from privopt.census import CensusCounts
from privopt.census.report import run_comparison
from privopt.census.synthetic import synthetic_hierarchy


def default_records() -> Path | None:
    """``kanon/census/100k_4attr.csv`` under PRIVOPT_DATA or a ``shared/data`` above here."""
    env = os.environ.get("PRIVOPT_DATA")
    roots = ([Path(env)] if env else []) + [
        p / "shared" / "data" for p in Path(__file__).resolve().parents
    ]
    for r in roots:
        f = r / "kanon" / "census" / "100k_4attr.csv"
        if f.is_file():
            return f
    return None


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=Path, default=None, help="records CSV (default: IPUMS 100k)")
    ap.add_argument("--levels", default="RACE,MARST")
    ap.add_argument("--group", default="SEX,AGE")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--epsilons", default="0.1,0.5,1.0")
    ap.add_argument("--with-qp", action="store_true")
    ap.add_argument("--qp-limit", type=float, default=120.0)
    args = ap.parse_args()
    path = args.records or default_records()
    if path is None or not Path(path).is_file():
        sys.exit(
            "records not found: pass --records or set PRIVOPT_DATA (see ../shared/data/README.md)"
        )
    frame = pd.read_csv(path)
    data = CensusCounts.from_records(frame, args.levels.split(","), args.group.split(","))
    h = data.hierarchy
    print(
        f"# {Path(path).name}: {len(frame)} records, regions "
        f"{' → '.join(f'{n} ({k})' for n, k in zip(h.level_names, h.level_sizes, strict=True))}, "
        f"groups = {args.group} cells, G = {data.G}, N = {data.N}, {args.runs} runs\n"
    )
    mechs = ["M_H^dp", "M_c^dp", "M_c^ch", "TopDown"] + (["M_H^r", "M_c^r"] if args.with_qp else [])
    run_comparison(synthetic_hierarchy([2], 10, N=4, seed=1), 1.0, mechs)  # Numba warm-up
    print(
        "| ε | mechanism | "
        + " | ".join(f"L1 {n}" for n in h.level_names)
        + " | L1 total | #CV | seconds | × TopDown time |"
    )
    print("|---|---|" + "---|" * (h.n_levels + 4))
    for eps in (float(e) for e in args.epsilons.split(",")):
        rows = run_comparison(data, eps, mechs, runs=args.runs, seed=0, qp_time_limit=args.qp_limit)
        paper = run_comparison(
            data, eps, ["M_c^ch"], runs=args.runs, seed=0, chain_noise_scale="paper"
        )[0]
        paper["mechanism"] = "M_c^ch (paper λ, not ε-DP)"
        t_td = next(r["seconds"] for r in rows if r["mechanism"] == "TopDown")
        for r in [*rows, paper]:
            if not r["ok"]:
                print(
                    f"| {eps} | {r['mechanism']} | "
                    + "— | " * (h.n_levels + 2)
                    + f"> {args.qp_limit:g} s | |"
                )
                continue
            l1 = np.asarray(r["l1"])
            print(
                f"| {eps} | {r['mechanism']} | "
                + " | ".join(f"{v:.0f}" for v in l1)
                + f" | {l1.sum():.0f} | {r['cv']:.0f} | {r['seconds']:.3f} | "
                f"{r['seconds'] / t_td:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
