"""Consistent differentially private hierarchical group-size counts (Fioretto, Van
Hentenryck & Zhu): the tree DP M_H^dp over convex cost tables (TableMerge in C++), the cumulative
mechanisms M_c^dp and the exact chain DP M_c^ch (C++), QP baselines M_H^r / M_c^r, a TopDown-style
baseline, a release object with ``verify()``, and a synthetic US household generator.

Example
-------
>>> from privopt.census import Hierarchy, CensusCounts, m_c_ch
>>> h = Hierarchy.from_nested({"US": ["GA", "NY"]})
>>> data = CensusCounts.from_leaf_counts(h, [[2, 0, 1], [1, 1, 1]])
>>> rel = m_c_ch(data, 1.0, rng=0).verify()
>>> int(rel.counts[0].sum()) == data.G
True
"""

from privopt.census.budget import BudgetAllocation, allocate_budget
from privopt.census.hierarchy import CensusCounts, Hierarchy, cumulate, decumulate
from privopt.census.mechanisms import (
    MECHANISMS,
    m_c_ch,
    m_c_dp,
    m_c_r,
    m_h,
    m_h_dp,
    m_h_r,
    measure_chain,
    measure_counts,
    measure_cumulative,
    release,
    topdown,
)
from privopt.census.noise import Measurements
from privopt.census.release import CensusRelease, consistency_violations, l1_per_level
from privopt.census.solvers import chain_postprocess, paper_delta, tree_postprocess
from privopt.census.streamed import RegularSyntheticSource, StreamedRelease, m_h_dp_streamed
from privopt.census.uncertainty import CountIntervals, count_intervals

__all__ = [
    "Hierarchy",
    "CensusCounts",
    "CensusRelease",
    "CountIntervals",
    "BudgetAllocation",
    "allocate_budget",
    "count_intervals",
    "Measurements",
    "MECHANISMS",
    "release",
    "m_h",
    "m_h_r",
    "m_h_dp",
    "m_c_r",
    "m_c_dp",
    "m_c_ch",
    "topdown",
    "measure_counts",
    "measure_cumulative",
    "measure_chain",
    "tree_postprocess",
    "chain_postprocess",
    "paper_delta",
    "cumulate",
    "decumulate",
    "consistency_violations",
    "l1_per_level",
    "m_h_dp_streamed",
    "RegularSyntheticSource",
    "StreamedRelease",
]
