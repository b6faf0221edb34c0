"""Fixtures of the census tests."""

from __future__ import annotations

import pytest
from privopt.census import CensusCounts, Hierarchy


@pytest.fixture
def running_example() -> CensusCounts:
    """Tables 2-4 of the paper (spec 003 §1.2): US → GA, NY; N = 5; G = 6."""
    h = Hierarchy.from_nested({"US": ["GA", "NY"]}, level_names=["nation", "state"])
    return CensusCounts.from_leaf_counts(h, [[2, 0, 1, 0, 0], [1, 1, 1, 0, 0]], G=6)
