"""The shared certification rule (privopt.certify)."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st
from privopt.certify import UncertifiedResultWarning, certify, proven_relative_gap
from privopt.errors import InvalidInput, NumericalTrouble


def test_certified_when_bound_proves_gap():
    c = certify(10.0, 10.0 - 1e-6, 1e-6)
    assert c.certified and c.status == "optimal"


def test_uncertified_warns_once_and_reports_gap():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c = certify(1.0, 0.72, 1e-9, otherwise="time_limit", what="thing")
    assert [type(x.message) for x in w] == [UncertifiedResultWarning]
    assert "thing" in str(w[0].message)
    assert c.status == "time_limit" and not c.certified
    assert c.relative_gap == pytest.approx(0.28)


def test_no_bound_means_infinite_gap():
    with pytest.warns(UncertifiedResultWarning):
        c = certify(1.0, -math.inf, 0.5)
    assert c.relative_gap == math.inf


@pytest.mark.parametrize("bad", [{"otherwise": "optimal"}, {"otherwise": "nope"}])
def test_bad_status_rejected(bad):
    with pytest.raises(InvalidInput, match="otherwise"):
        certify(1.0, 1.0, 0.0, **bad)


def test_bad_gap_and_value_rejected():
    with pytest.raises(InvalidInput, match="rel_gap"):
        certify(1.0, 1.0, float("nan"))
    with pytest.raises(InvalidInput, match="value"):
        proven_relative_gap(float("inf"), 0.0)


@given(
    st.floats(-1e12, 1e12, allow_nan=False),
    st.floats(-1e12, 1e12, allow_nan=False),
    st.floats(0, 1, allow_nan=False),
)
def test_certified_iff_rule_holds(value, lb, rel_gap):
    if lb - value > 1e-6 * max(abs(value), abs(lb), 1e-12):  # a bound above its value
        with pytest.raises(NumericalTrouble, match="exceeds the value"):
            certify(value, lb, rel_gap)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncertifiedResultWarning)
        c = certify(value, lb, rel_gap)
    rule = (value - lb) / max(abs(value), 1e-12) <= rel_gap
    assert c.certified == rule
    assert c.relative_gap >= 0
