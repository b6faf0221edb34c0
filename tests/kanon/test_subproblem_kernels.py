"""The compiled helpers of Split & Carry's sub-problems against the numpy code they replace:
same labels, same objective bits, on random small label arrays and tables."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.certify import certify
from privopt.kanon import milp
from privopt.kanon.loss import normalize_labels, normalize_labels_by_sorting
from privopt.kanon.milp import partition_objective, solve_rows
from privopt.kanon.split_carry import _carry_and_final

from .oracles import carry_and_final_by_sets, partition_objective_by_scatter

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@st.composite
def label_arrays(draw):
    """Ids of 0..40 rows: few classes, offset anywhere in the dtype's range."""
    dtype = np.dtype(draw(st.sampled_from(INT_DTYPES)))
    info = np.iinfo(dtype)
    n = draw(st.integers(0, 40))
    ids = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n))
    scale = draw(st.sampled_from([s for s in (1, 7, 1000) if 12 * s <= int(info.max)]))
    spread = np.array(ids, dtype=object) * scale
    top = int(max(spread, default=0))
    base = draw(st.integers(int(info.min), int(info.max) - top))
    return (spread + base).astype(dtype)


@settings(max_examples=200, deadline=None)
@given(label_arrays())
def test_normalize_labels_matches_sorting(labels):
    fast = normalize_labels(labels)
    ref = normalize_labels_by_sorting(labels)
    assert fast.dtype == ref.dtype == np.int64
    assert np.array_equal(fast, ref)


def test_normalize_labels_wide_and_non_integer_ids():
    wide = np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max])
    assert normalize_labels(wide).tolist() == [0, 1, 2, 0]
    assert normalize_labels(np.array([2.5, -1.0, 2.5])).tolist() == [0, 1, 0]
    assert normalize_labels(np.array([[3, 1], [3, 2]])).tolist() == [0, 1, 0, 2]
    assert normalize_labels(np.array([], dtype=np.int64)).tolist() == []


@st.composite
def partitions(draw):
    """A small table (n, m') of few distinct values, its factors and a labelling of its rows."""
    n = draw(st.integers(1, 24))
    m = draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.choice(rng.normal(size=5) * 10.0 ** rng.integers(-3, 4), size=(n, m))
    coef = rng.uniform(0, 3, size=m)
    labels = rng.integers(0, draw(st.integers(1, 9)), size=n) * draw(st.sampled_from([1, 5]))
    return x, coef, labels


@settings(max_examples=200, deadline=None)
@given(partitions())
def test_partition_objective_bit_for_bit(case):
    x, coef, labels = case
    fast = partition_objective(x, coef, labels)
    ref = partition_objective_by_scatter(x, coef, labels)
    assert fast == ref and math.copysign(1.0, fast) == math.copysign(1.0, ref)


def test_partition_objective_of_point_classes_is_zero():
    x = np.array([[1.5, -2.0], [1.5, -2.0], [0.0, 3.0], [0.0, 3.0]])
    labels = np.array([4, 4, 9, 9])
    assert partition_objective(x, np.ones(2), labels) == 0.0
    assert partition_objective_by_scatter(x, np.ones(2), labels) == 0.0


def test_zero_loss_certificate_equals_certify():
    # a sub-problem whose start already has zero loss: the shortcut and privopt.certify agree
    x = np.repeat(np.array([[1.0, 2.0], [3.0, 4.0]]), 3, axis=0)
    labels, info = solve_rows(x, x.min(axis=0), x.max(axis=0), np.ones(2), None, 3)
    assert info["status"] == "optimal" and info["objective"] == 0.0
    run = milp._Run(x, np.ones(2), 3, None, labels, 0.0)
    fast = milp._certify(run, 1e-6, warn=False)
    cert = certify(0.0, 0.0, 1e-6, warn=False)
    assert fast == {
        "status": cert.status,
        "objective": 0.0,
        "lower_bound": cert.lower_bound,
        "relative_gap": cert.relative_gap,
        "mip_gap": cert.relative_gap,
        "proof": "nonnegative_loss",
        "rel_gap": 1e-6,
    }
    assert {key: info[key] for key in fast} == fast


@st.composite
def sub_problem_labels(draw):
    n = draw(st.integers(1, 30))
    ids = np.array(draw(st.lists(st.integers(0, 15), min_size=n, max_size=n)), dtype=np.int64)
    return ids, draw(st.integers(0, n))


@settings(max_examples=200, deadline=None)
@given(sub_problem_labels())
def test_carry_and_final_matches_set_operations(case):
    sub_lab, n_last = case
    carried, renumbered, n_final = _carry_and_final(sub_lab, n_last)
    ref_carried, ref_final, ref_carry = carry_and_final_by_sets(sub_lab, n_last)
    assert np.array_equal(carried, ref_carried)
    assert np.array_equal(renumbered[~carried], ref_final)
    assert np.array_equal(renumbered[carried], ref_carry)
    assert n_final == len(np.unique(ref_final))
