"""Data model: constructors, breadth-first order, aggregation, validation errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from privopt.census import CensusCounts, Hierarchy, cumulate, decumulate
from privopt.errors import InvalidInput


def test_running_example_counts(running_example):
    c = running_example
    assert c.hierarchy.names.tolist() == ["US", "GA", "NY"]
    assert c.counts.tolist() == [[3, 1, 2, 0, 0], [2, 0, 1, 0, 0], [1, 1, 1, 0, 0]]
    assert (c.G, c.N, c.hierarchy.n_levels) == (6, 5, 2)
    assert np.array_equal(decumulate(cumulate(c.counts)), c.counts)


def test_from_parents_reorders_breadth_first():
    # 0 is a leaf under 3; 3 is the root's child; 2 is the root.
    h = Hierarchy.from_parents([3, 3, -1, 2, 2, 4], names=list("abcdef"))
    # depth of f is 3 but a, b are at depth 2: unequal -> rejected below; use an equal tree.
    h = Hierarchy.from_parents([3, 3, -1, 2, 2, 4, 4], names=list("abcdefg"))
    assert h.names.tolist() == ["c", "d", "e", "a", "b", "f", "g"]
    assert h.level.tolist() == [0, 1, 1, 2, 2, 2, 2]
    assert h.parent.tolist() == [-1, 0, 0, 1, 1, 2, 2]
    assert h.postorder().tolist() == [3, 4, 1, 5, 6, 2, 0]


def test_from_records_and_frame():
    rec = pd.DataFrame(
        {
            "state": ["GA"] * 5 + ["NY"] * 6,
            "county": ["g1", "g1", "g1", "g2", "g2", "n1", "n1", "n1", "n1", "n1", "n1"],
            "hh": ["A", "A", "A", "B", "C", "D", "D", "D", "E", "F", "F"],
        }
    )
    c = CensusCounts.from_records(rec, ["state", "county"], "hh", max_size=4)
    h = c.hierarchy
    assert h.names.tolist() == ["root", "GA", "NY", "GA/g1", "GA/g2", "NY/n1"]
    assert c.counts[0].tolist() == [3, 1, 2, 0]
    assert c.counts[h.index("GA/g2")].tolist() == [2, 0, 0, 0]
    with pytest.raises(InvalidInput, match="max_size"):
        CensusCounts.from_records(rec, ["state", "county"], "hh", max_size=2)
    bad = rec.copy()
    bad.loc[0, "county"] = "g2"
    with pytest.raises(InvalidInput, match="spans several regions"):
        CensusCounts.from_records(bad, ["state", "county"], "hh")
    with pytest.raises(InvalidInput, match="group_column"):
        CensusCounts.from_records(rec, ["state"], "nope")


@pytest.mark.parametrize(
    "parent, match",
    [
        ([0, 0], "exactly one root"),
        ([-1, -1], "exactly one root"),
        ([-1, 5], "not a valid region index"),
        ([-1, 2, 1], "cycle"),
        ([-1, 0, 0, 1], "same depth"),
        ([], "non-empty"),
        ([-1.0, 0.0], "integer"),
    ],
)
def test_bad_hierarchies(parent, match):
    with pytest.raises(InvalidInput, match=match):
        Hierarchy.from_parents(np.asarray(parent))


def test_bad_counts():
    h = Hierarchy.from_nested({"US": ["GA", "NY"]})
    with pytest.raises(InvalidInput, match="negative"):
        CensusCounts.from_leaf_counts(h, [[1, -1], [0, 0]])
    with pytest.raises(InvalidInput, match="shape"):
        CensusCounts.from_leaf_counts(h, [[1, 1]])
    with pytest.raises(InvalidInput, match="G = 5"):
        CensusCounts.from_leaf_counts(h, [[1, 1], [1, 1]], G=5)
    with pytest.raises(InvalidInput, match="integers"):
        CensusCounts.from_leaf_counts(h, [[1.5, 1], [1, 1]])
    with pytest.raises(InvalidInput, match="not consistent"):
        CensusCounts.from_region_counts(h, [[3, 2], [1, 1], [1, 1]])
    with pytest.raises(InvalidInput, match="names must be unique"):
        Hierarchy.from_parents([-1, 0, 0], names=["a", "b", "b"])
    with pytest.raises(InvalidInput, match="one root key"):
        Hierarchy.from_nested({"a": [], "b": []})


def test_count_of_counts_groups():
    # Several group columns: each distinct (sex, age) combination inside a leaf is one group.
    rec = pd.DataFrame(
        {
            "state": ["GA", "GA", "GA", "NY", "NY"],
            "sex": [1, 1, 2, 1, 1],
            "age": [30, 30, 30, 30, 40],
        }
    )
    c = CensusCounts.from_records(rec, ["state"], ["sex", "age"])
    assert c.counts.tolist() == [[3, 1], [1, 1], [2, 0]]
    with pytest.raises(InvalidInput, match="group_column"):
        CensusCounts.from_records(rec, ["state"], ["sex", "nope"])


def test_unequal_depth_padding():
    # DC has no counties: pad it with its own copy, then the mechanisms run as usual.
    tree = {"US": {"VA": ["VA-1", "VA-2"], "DC": None}}
    with pytest.raises(InvalidInput, match="pad_leaves=True"):
        Hierarchy.from_nested(tree)
    h = Hierarchy.from_nested(tree, ["nation", "state", "county"], pad_leaves=True)
    assert h.names.tolist() == ["US", "VA", "DC", "VA-1", "VA-2", "DC/DC"]
    assert h.level_sizes.tolist() == [1, 2, 3]
    data = CensusCounts.from_leaf_counts(h, [[2, 1], [0, 3], [4, 0]])
    assert data.counts[h.index("DC")].tolist() == [4, 0]
    from privopt.census import m_h_dp

    rel = m_h_dp(data, 1.0, rng=0).verify()
    dc, dc2 = h.index("DC"), h.index("DC/DC")
    assert rel.counts[dc].tolist() == rel.counts[dc2].tolist()
    deep = Hierarchy.from_parents([-1, 0, 0, 1, 3], list("abcde"), pad_leaves=True)
    assert deep.level_sizes.tolist() == [1, 2, 2, 2] and "c/c/c" in deep.names.tolist()


def test_ragged_records_with_padding():
    rec = pd.DataFrame(
        {
            "state": ["VA", "VA", "VA", "DC", "DC"],
            "county": ["v1", "v1", "v2", None, None],
            "hh": ["a", "a", "b", "c", "d"],
        }
    )
    with pytest.raises(InvalidInput, match="pad_leaves=True"):
        CensusCounts.from_records(rec, ["state", "county"], "hh")
    c = CensusCounts.from_records(rec, ["state", "county"], "hh", pad_leaves=True)
    h = c.hierarchy
    assert h.level_sizes.tolist() == [1, 2, 3]
    assert c.counts[h.index("DC/DC")].tolist() == [2, 0] == c.counts[h.index("DC")].tolist()
    assert c.counts[0].tolist() == [3, 1]
    bad = pd.DataFrame({"state": [None], "county": ["x"]})
    with pytest.raises(InvalidInput, match="only end"):
        Hierarchy.from_frame(bad, ["state", "county"], pad_leaves=True)


def test_from_records_refuses_missing_group_ids():
    # Rows with a NaN group id were silently dropped (issue 12 defect 5): now the row is named,
    # by position (an index label may be an identifier).
    rec = pd.DataFrame(
        {"state": ["GA", "GA", "NY", "NY"], "hh": ["a", "a", np.nan, "b"]},
        index=[10, 11, 12, 13],
    )
    with pytest.raises(InvalidInput, match="row position 2 "):
        CensusCounts.from_records(rec, ["state"], "hh")
    cells = pd.DataFrame({"state": ["GA", "NY"], "sex": [1, None], "age": [30, 40]})
    with pytest.raises(InvalidInput, match="row position 1 "):
        CensusCounts.from_records(cells, ["state"], ["sex", "age"])


def test_hierarchy_fingerprint_covers_parents_names_and_levels():
    a = Hierarchy.from_nested({"US": ["GA", "NY"]}, level_names=["nation", "state"])
    assert (
        a.fingerprint
        == Hierarchy.from_parents([-1, 0, 0], ["US", "GA", "NY"], ["nation", "state"]).fingerprint
    )
    assert a.fingerprint != Hierarchy.from_nested({"US": ["GA", "NY"]}).fingerprint
    assert (
        a.fingerprint
        != Hierarchy.from_nested({"US": ["NY", "GA"]}, ["nation", "state"]).fingerprint
    )
