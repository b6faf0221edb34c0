"""Demo section: the census mechanisms on generated US household data (a few seconds)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from privopt.census.hierarchy import CensusCounts, Hierarchy
from privopt.census.mechanisms import m_h_dp
from privopt.census.release import CensusRelease
from privopt.census.report import comparison_table, plot_l1_per_level, run_comparison
from privopt.census.synthetic import household_size_distribution, synthetic_us
from privopt.report import Section

__all__ = ["demo_section", "example"]


def demo_section(out_dir: Path, seed: int) -> Section:
    """National (1 + 52 + 3,221 regions, N = 8, 1/1000 of the households) with the DP
    mechanisms and TopDown; the QP baselines on the nation → state levels only (HiGHS's QP is
    slow beyond ~10⁴ cells)."""
    data = synthetic_us(seed, N=8, scale=1e-3)
    h = data.hierarchy
    eps = 1.0
    rows = run_comparison(data, eps, ["M_H^dp", "M_c^dp", "M_c^ch", "TopDown"], seed=seed)
    plot = plot_l1_per_level(rows, h.level_names, Path(out_dir) / "census_l1_per_level.png")
    states = h.level_slice(1)
    h2 = Hierarchy.from_parents(h.parent[: states.stop], h.names[: states.stop], h.level_names[:2])
    small = CensusCounts.from_leaf_counts(h2, data.counts[states])
    rows2 = run_comparison(
        small, eps, ["M_H^r", "M_H^dp", "M_c^r", "M_c^dp", "TopDown"], seed=seed, qp_time_limit=20.0
    )
    body = (
        f"Synthetic US households (seed {seed}): {h.n_regions} regions "
        f"({', '.join(f'{n} {k}' for n, k in zip(h.level_sizes, h.level_names, strict=True))}), "
        f"group sizes 1 to {data.N}, {data.G} groups in all, ε = {eps:g} split over the "
        f"{h.n_levels} levels. The chain-of-levels method (M_c^ch) must scale its noise to the "
        "number of regions in a level to stay ε-DP, hence its large county error.\n\n"
        + comparison_table(rows, h.level_names)
        + "\n\nNation → states only, beside the least-squares baselines, whose rounded "
        "counts can break consistency:\n\n" + comparison_table(rows2, h2.level_names)
    )
    return Section("Census: consistent DP group-size counts", body, [plot.name])


def example() -> CensusRelease:
    """A small release: M_H^dp with ε = 1 on a nation of 3 states and 8 counties, households
    of 1..6 persons (600 households, generated from seed 0), noise from seed 0 — a seeded
    release, for testing (about 0.01 s)."""
    tree = {
        "nation": {"North": ["N1", "N2", "N3"], "Centre": ["C1", "C2"], "South": ["S1", "S2", "S3"]}
    }
    hierarchy = Hierarchy.from_nested(tree, ["nation", "state", "county"])
    counties = np.random.default_rng(0).multinomial(600, np.full(8, 1 / 8))
    shares = household_size_distribution(6)
    leaf_counts = np.array(
        [np.random.default_rng([0, c]).multinomial(n, shares) for c, n in enumerate(counties)]
    )
    data = CensusCounts.from_leaf_counts(hierarchy, leaf_counts)
    return m_h_dp(data, 1.0, rng=0, progress=False)
