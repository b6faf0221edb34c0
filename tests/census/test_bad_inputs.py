"""Bad input to the census API, command line and private kernels (issue 15 item 4): a clear,
typed error naming the argument, before any budget is spent; never a silent truncation, a deep
AttributeError or a crashed interpreter."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from privopt._core import census as kernels
from privopt.census import (
    CensusCounts,
    Hierarchy,
    m_c_ch,
    m_h_dp,
    m_h_r,
    measure_counts,
    release,
    tree_postprocess,
)
from privopt.census.synthetic import synthetic_us
from privopt.cli import main
from privopt.dp import PrivacyAccountant
from privopt.errors import InvalidInput

H = Hierarchy.from_nested({"US": ["GA", "NY"]})
DATA = CensusCounts.from_leaf_counts(H, [[2, 0, 1], [1, 1, 1]])

CASES = [
    (lambda: release(DATA, 1.0, accountant="x"), "accountant must be a privopt.dp"),
    (lambda: release(DATA, 1.0, "M_c^ch", accountant=3), "accountant must be a privopt.dp"),
    (lambda: measure_counts(DATA, 1.0, accountant=object()), "accountant must be"),
    (lambda: release(DATA, 1.0, "M_H^dp", bogus=1), "no argument 'bogus'; valid keyword"),
    (lambda: release(DATA, 1.0, "M_H", window="auto"), "M_H takes no argument 'window'"),
    (lambda: release(DATA, 1.0, method=3), "method must be one of"),
    (lambda: m_h_r(DATA, 1.0, rng=0, time_limit=-1), "time_limit must be > 0"),
    (lambda: m_h_r(DATA, 1.0, rng=0, time_limit=float("nan")), "time_limit must not be NaN"),
    (lambda: m_h_dp(DATA, 1.0, window=1.5), "window must be"),
    (lambda: m_c_ch(DATA, 1.0, window="wide"), "window must be"),
    (
        lambda: m_h_dp(DATA, 2.0, measurements=measure_counts(DATA, 1.0, rng=0)),
        "differs from the measurements",
    ),
    (
        lambda: CensusCounts.from_leaf_counts(H, np.array([[1e20, 0, 1], [1, 1, 1]])),
        "above 2^61",
    ),
    (
        lambda: CensusCounts.from_leaf_counts(H, np.array([[1.5, 0, 1], [1, 1, 1]])),
        "must hold integers",
    ),
    (
        lambda: CensusCounts.from_leaf_counts(H, np.array([[np.nan, 0, 1], [1, 1, 1]])),
        "must hold integers",
    ),
    (
        lambda: CensusCounts.from_leaf_counts(H, np.array([[1 + 1j, 0, 1], [1, 1, 1]])),
        "must be real",
    ),
    (
        lambda: CensusCounts.from_leaf_counts(
            H, np.array([[2**63, 0, 1], [1, 1, 1]], dtype=np.uint64)
        ),
        "above 2^61",
    ),
    (
        lambda: CensusCounts.from_leaf_counts(H, np.array([[2**61, 0, 1], [2**61, 1, 1]])),
        "sum to more than 2^61",
    ),
    (lambda: CensusCounts.from_region_counts(H, [[1, 2], [1]]), "numeric array"),
    (lambda: CensusCounts.from_records([[1]], ["a"], "b"), "records must be a pandas"),
    (lambda: Hierarchy.from_parents([-1, 0, 0], level_names="ab"), "not the string 'ab'"),
    (lambda: synthetic_us(0, scale=1e-4, outliers=-1), "outliers must be >= 0"),
    (lambda: tree_postprocess(H, np.zeros((3, 1), dtype=np.int64), 3, scale=-1.0), "scale"),
]


@pytest.mark.parametrize("call, message", CASES, ids=[m for _, m in CASES])
def test_bad_input_is_refused_clearly(call, message):
    with pytest.raises(InvalidInput, match=re.escape(message)):
        call()


def test_refusal_spends_no_budget():
    acct = PrivacyAccountant(epsilon_budget=5.0)
    for kwargs in ({"window": "wide"}, {"bogus": 1}):
        with pytest.raises(InvalidInput):
            release(DATA, 1.0, "M_H^dp", accountant=acct, **kwargs)
    assert acct.entries == []


@pytest.mark.parametrize("cell", ["1.5", "", "1e20", "-1", "abc"])
def test_cli_counts_refuses_non_counts(tmp_path, capsys, cell):
    # 1.5 was truncated to 1 silently; NaN and 1e20 gave a misleading message. The message
    # names the column and line, never the cell (a count is data).
    counts = tmp_path / "counts.csv"
    counts.write_text(f"state,county,size_1,size_2\nGA,g1,3,1\nGA,g2,{cell},2\nNY,n1,5,0\n")
    args = ["census", "--epsilon", "1", "--counts", str(counts), "--levels", "state,county"]
    assert main([*args, "--out", str(tmp_path / "out"), "--seed", "0"]) == 2
    err = capsys.readouterr().err
    assert "column size_1, line 3 is not a count" in err and "Traceback" not in err
    assert not cell or cell not in err.split("is not a count")[1]


def test_cli_counts_accepts_integral_floats(tmp_path):
    counts = tmp_path / "counts.csv"
    counts.write_text("state,county,size_1,size_2\nGA,g1,3.0,1\nGA,g2,0,2\nNY,n1,5,0\n")
    out = tmp_path / "out"
    args = [
        "census",
        "--epsilon",
        "1",
        "--counts",
        str(counts),
        "--levels",
        "state,county",
        "--seed",
        "0",
    ]
    assert main([*args, "--out", str(out), "--mechanism", "M_H^dp"]) == 0
    assert pd.read_csv(out / "released_counts.csv")["count"].sum() == 3 * 11


BIG = 2**63 - 1
SMALL = -(2**63)


@pytest.mark.parametrize(
    "lo, hi, noisy",
    [
        ([SMALL, 0], [BIG, 5], [0, 0]),  # windows near the int64 limits (was a segfault)
        ([0, 0], [BIG, BIG], [0, 0]),
        ([0, 0], [5, 5], [BIG, SMALL]),
        ([-(2**61), -(2**61)], [2**61, 2**61], [0, 0]),  # in range but 2^62 values per node
    ],
)
def test_chain_dp_binding_refuses_extreme_windows(lo, hi, noisy):
    args = [np.array(noisy), np.array(lo), np.array(hi), np.array([0], dtype=np.uint8)]
    with pytest.raises(ValueError):
        kernels.chain_dp(*args)


def test_chain_dp_binding_checks_sizes_and_limits():
    one = np.zeros(3, dtype=np.int64)
    with pytest.raises(ValueError, match="at least one node"):
        kernels.chain_dp(one[:0], one[:0], one[:0], np.zeros(0, dtype=np.uint8))
    with pytest.raises(ValueError, match="equal_next"):
        kernels.chain_dp(one, one, one + 5, np.zeros(5, dtype=np.uint8))
    with pytest.raises(ValueError, match="max_cells"):
        kernels.chain_dp(one, one, one + 100, np.zeros(2, dtype=np.uint8), max_cells=50)
    with pytest.raises(ValueError, match="max_table_size"):
        kernels.chain_dp(one, one, one + 5, np.zeros(2, dtype=np.uint8), max_table_size=0)
    # A valid far-away chain computes with slopes only; a cost beyond int64 is None.
    far = np.array([2**59, -(2**59)])
    status, _, cost, values = kernels.chain_dp(
        far, np.array([0, 5]), np.array([10, 5]), np.array([0], dtype=np.uint8)
    )
    assert status == 0 and values.tolist() == [5, 5] and cost is None


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"noisy": np.array([1.5, 2.0])}, "noisy[0] = 1.5 is not an integer"),
        ({"lo": np.array([0.0, np.nan])}, "lo[1] = nan is not an integer"),
        ({"hi": np.array([5.0, 1e300])}, "hi[1] = 1e+300 is not an integer within int64"),
        ({"hi": np.array([2**64 - 1, 5], dtype=np.uint64)}, "hi[0] = 18446744073709551615"),
        ({"noisy": np.array([True, False])}, "noisy must hold integers, got dtype bool"),
        ({"equal_next": np.array([0.5])}, "equal_next[0] = 0.5 is not an integer"),
        ({"equal_next": np.array([2])}, "equal_next[0] = 2 is not 0 or 1"),
    ],
)
def test_chain_dp_binding_refuses_non_integers_instead_of_truncating(change, fragment):
    args = {
        "noisy": np.array([1, 2]),
        "lo": np.array([0, 0]),
        "hi": np.array([5, 5]),
        "equal_next": np.array([0], dtype=np.uint8),
    }
    with pytest.raises(ValueError, match=re.escape(fragment)):
        kernels.chain_dp(**{**args, **change})
    # Integral floats and plain lists are the same integers: same answer as int64 input.
    want = kernels.chain_dp(**args)
    as_floats = {k: v.astype(float) for k, v in args.items()}
    as_lists = {k: v.tolist() for k, v in args.items()}
    for other in (as_floats, as_lists):
        got = kernels.chain_dp(**other)
        assert got[:3] == want[:3] and got[3].tolist() == want[3].tolist()


def test_tree_dp_binding_refuses_non_integers():
    ptr, idx = _tree()
    args = [ptr, idx, np.array([0, 1, 1]), np.array([1, 1, 1]), np.array([0, 0, 0])]
    with pytest.raises(ValueError, match=re.escape("hi[2] = 3.5 is not an integer")):
        kernels.tree_dp(*args, np.array([3.0, 3.0, 3.5]), 0)
    with pytest.raises(ValueError, match=re.escape("weight[0] = 0.5 is not an integer")):
        kernels.tree_dp(*args[:3], np.array([0.5, 1, 1]), args[4], np.array([3, 3, 3]), 0)


def _tree(n_children: int = 2):
    ptr = np.array([0, n_children] + [n_children] * n_children, dtype=np.int64)
    idx = np.arange(1, n_children + 1, dtype=np.int64)
    return ptr, idx


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"lo": [SMALL, 0, 0]}, "2^61"),
        ({"hi": [BIG, BIG, BIG]}, "2^61"),
        ({"noisy": [0, BIG, 0]}, "2^61"),
        ({"weight": [1, -1, 1]}, "negative weight"),
        ({"root": 7}, "root"),
        ({"child_idx": [1, 9]}, "child_idx"),
        ({"child_idx": [1, 1]}, "two parents"),
        ({"child_ptr": [0, 2, 1, 2]}, "non-decreasing"),
        ({"lo": [0, 0, 0, 0]}, "lo must have 3"),
        ({"lo": [0, -(2**40), -(2**40)], "hi": [2**41, 2**40, 2**40]}, "limit"),
    ],
)
def test_tree_dp_binding_validates(change, fragment):
    ptr, idx = _tree()
    args = {
        "child_ptr": ptr,
        "child_idx": idx,
        "noisy": np.array([0, 1, 1]),
        "weight": np.array([1, 1, 1]),
        "lo": np.array([0, 0, 0]),
        "hi": np.array([3, 3, 3]),
        "root": 0,
    }
    args.update({k: np.asarray(v) if isinstance(v, list) else v for k, v in change.items()})
    with pytest.raises(ValueError, match=re.escape(fragment)):
        kernels.tree_dp(**args)


def test_tree_dp_slopes_beyond_int64_raise_overflow():
    ptr, idx = _tree()
    big = 2**61
    with pytest.raises(OverflowError):
        kernels.tree_dp(
            ptr,
            idx,
            np.array([big, -big, big]),
            np.array([4, 4, 4]),
            np.array([-big, -big, -big]),
            np.array([big, big, big]),
            0,
            max_table_size=2**62,
        )


def test_table_merge_binding_validates():
    with pytest.raises(ValueError, match="not be empty"):
        kernels.table_merge(np.zeros(0, dtype=np.int64), [], 0, 1)
    with pytest.raises(ValueError, match="is empty"):
        kernels.table_merge(np.array([0]), [np.zeros(0, dtype=np.int64)], 0, 1)
    with pytest.raises(ValueError, match="2\\^61"):
        kernels.table_merge(np.array([0]), [np.array([0, 1])], SMALL, 1)
    with pytest.raises(ValueError, match="2\\^61"):
        kernels.table_merge(np.array([BIG]), [np.array([0, 1])], 0, 1)
    with pytest.raises(OverflowError):
        kernels.table_merge(np.array([0]), [np.array([SMALL, BIG])], 0, 1)
