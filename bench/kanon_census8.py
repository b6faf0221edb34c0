"""Fig. 3-shaped run: CENSUS 1,000 x 8 attributes (6 categorical), GCP vs k; opt-in.

python bench/kanon_census8.py --data ../shared/data/kanon [--k 3 5 7 9 11 13 15]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from privopt.kanon import anonymize, datasets


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, type=Path, help="the kanon/ data folder")
    ap.add_argument("--k", type=int, nargs="+", default=[3, 5, 7, 9, 11, 13, 15])
    args = ap.parse_args()
    attrs = datasets.read_attribute_file(args.data / "census_8attr_attributes.txt")
    df = datasets.load_census(args.data / "census_1k_8attr.csv")
    for m in ("greedy", "k_member"):  # compile / load the kernels untimed
        anonymize(datasets.fars_20(), 3, method=m)
    print("| k | method | GCP | objective | time (s) |")
    print("|---|---|---|---|---|")
    for k in args.k:
        for method in ["greedy", "k_member", "initial", "mondrian"]:
            res = anonymize(df, k, attrs["names"], categorical=attrs["categorical"], method=method)
            print(
                f"| {k} | {method} | {res.gcp:.2f} | {res.objective:.2f} | "
                f"{res.timings['solve']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
