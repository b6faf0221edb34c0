"""Fixtures of the k-anonymity tests: the paper's FARS 20-record example and its oracles."""

from __future__ import annotations

import pytest
from privopt.kanon import datasets

#: Spec §8.1: sorted order of Table 2b.
FARS_SORTED = [12, 1, 11, 14, 7, 10, 16, 19, 13, 6, 9, 5, 8, 2, 15, 17, 0, 4, 18, 3]
#: Spec §8.2, Table 7 (k=3, equal weights).
FARS_GREEDY_K3 = [[12, 1, 11], [14, 7, 10, 4], [16, 5, 9], [19, 13, 6, 18], [8, 0, 17], [2, 15, 3]]
#: Spec §8.3, Table 4b (k=3, equal weights), unique optimum.
FARS_OPT_K3 = [[0, 2, 15, 17], [1, 11, 12], [3, 4, 18], [5, 6, 8, 9], [7, 10, 16], [13, 14, 19]]
#: Spec §8.3, Table 4c (k=3, w=(.8,.05,.1,.05)), unique optimum.
FARS_OPT_K3_W = [[0, 8, 10, 16], [1, 14, 15], [2, 3, 13, 18], [4, 6, 9], [5, 7, 11], [12, 17, 19]]
QUARTER = [0.25] * 4
W_APP_A = [0.8, 0.05, 0.1, 0.05]


@pytest.fixture
def fars():
    return datasets.fars_20()


def canon(partition):
    """Order-free form of a partition (list of lists of row ids)."""
    return sorted(sorted(int(i) for i in c) for c in partition)
