"""The census mechanisms on the shared IPUMS records (skipped when ../shared/data is absent)."""

from __future__ import annotations

import numpy as np
import pytest
from privopt.census import CensusCounts, release


@pytest.fixture(scope="module")
def ipums(shared_data) -> CensusCounts:
    path = shared_data("kanon/census/20k_4attr.csv")
    import pandas as pd

    frame = pd.read_csv(path)
    data = CensusCounts.from_records(frame, ["RACE", "MARST"], ["SEX", "AGE"])
    # Count of counts: every person is in exactly one sex × age cell of one leaf.
    assert int((data.counts[0] * np.arange(1, data.N + 1)).sum()) == len(frame)
    assert len(frame.drop_duplicates()) == data.G
    return data


@pytest.mark.parametrize("mechanism", ["M_H^dp", "M_c^dp", "M_c^ch", "TopDown"])
def test_ipums_count_of_counts_release(ipums, mechanism):
    rel = release(ipums, 1.0, mechanism, rng=0).verify()
    assert rel.counts.shape == ipums.counts.shape and rel.counts[0].sum() == ipums.G
    if mechanism != "TopDown":
        assert rel.info["certified"]
    # The tree DP is the L2-closest consistent release and the truth is one, so the DP's
    # distance to the measurements is at most the truth's.
    if mechanism == "M_H^dp":
        raw = rel.measurements.noisy
        assert ((rel.counts - raw) ** 2).sum() <= ((ipums.counts - raw) ** 2).sum()
