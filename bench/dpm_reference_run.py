"""Run the DPM paper's own implementations on a saved data set, for bench/dpm_table2.py.

This script runs under a *different* interpreter from privopt's: one with scikit-learn < 1.9,
``diffprivlib==0.6.6`` and ``fast-histogram`` (diffprivlib does not import with scikit-learn 1.9).
It imports nothing from privopt. It runs one of:

- ``dpm``: the authors' reference DPM (``dpm.py`` of UzL-PrivSec/dp-mondrian-clustering, Apache-2.0;
  not shipped with privopt, pass the folder holding it with ``--code``);
- ``diffprivlib``: diffprivlib's DP-Lloyd ``KMeans(n_clusters=k, bounds=…, epsilon=…)``, as the
  paper's evaluation harness calls it;

once per seed (numpy's global RNG seeded, as both libraries draw from it), timing each fit, and
writes the centres to ``<out>/<algo>_<seed>.npy`` and one JSON line per run to stdout.

    <python> bench/dpm_reference_run.py --algo dpm --code DIR --data X.npy --bounds -100 100 \
        --epsilon 1 --delta 3.16e-8 --seeds 0 1 2 --out OUT
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=["dpm", "diffprivlib"], required=True)
    parser.add_argument("--code", help="folder holding the authors' dpm.py (for --algo dpm)")
    parser.add_argument("--data", required=True, help=".npy file of the (n, d) points")
    parser.add_argument("--bounds", nargs=2, type=float, required=True)
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--delta", type=float, default=0.0)
    parser.add_argument("--k", type=int, default=None, help="clusters (diffprivlib only)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    X = np.load(args.data)
    bounds = (args.bounds[0], args.bounds[1])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.algo == "dpm":
        if not args.code or not (Path(args.code) / "dpm.py").is_file():
            sys.exit("--code must name a folder holding the authors' dpm.py")
        sys.path.insert(0, args.code)
        from dpm import DPM  # the authors' reference implementation

        def fit() -> np.ndarray:
            centres, _ = DPM(X, bounds, args.epsilon, args.delta).perform_clustering()
            return np.asarray(centres)
    else:
        from diffprivlib.models import KMeans

        def fit() -> np.ndarray:
            km = KMeans(n_clusters=args.k, bounds=bounds, epsilon=args.epsilon).fit(X)
            return np.asarray(km.cluster_centers_)

    for seed in args.seeds:
        np.random.seed(seed)  # noqa: NPY002 -- both libraries draw from the global RNG
        start = time.perf_counter()
        centres = fit()
        elapsed = time.perf_counter() - start
        np.save(out / f"{args.algo}_{seed}.npy", centres)
        print(json.dumps({"algo": args.algo, "seed": seed, "fit_s": elapsed}), flush=True)


if __name__ == "__main__":
    main()
