"""Issue 12 defect 6 for kanon: values near the float64 limits give a finite result or a clear
InvalidInput naming the column, never a NaN loss."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.errors import InvalidInput
from privopt.kanon import METHODS, anonymize

ALL_METHODS = sorted(METHODS)


def _finite_result(res):
    assert math.isfinite(res.objective) and math.isfinite(res.gcp)
    assert np.all(np.isfinite(res.loss.per_attribute))
    assert np.all(np.isfinite(res.loss.ncp_per_attribute))
    for key in ("lower_bound", "relative_gap"):
        if key in res.info:
            assert math.isfinite(res.info[key])


@pytest.mark.parametrize("method", ALL_METHODS)
def test_values_at_the_float_limit_are_refused_by_name(method):
    df = pd.DataFrame({"a": [1e308, -1e308, 0.0, 5.0], "b": [1, 2, 3, 4]})
    with pytest.raises(InvalidInput, match=r"'a': its range U − L overflows"):
        anonymize(df, 2, method=method)


@pytest.mark.parametrize("method", ALL_METHODS)
def test_large_and_tiny_ranges_that_fit_give_finite_results(method):
    # the loss does not depend on the column's scale (it is divided by U − L); a moderate
    # scale with the same variance order (eq. 36) gives the same partition
    for scale, moderate in ((1e307, 1e3), (1e-300, 1e-3)):
        results = []
        for s in (scale, moderate):
            df = pd.DataFrame({"a": [s, -s, 0.0, s / 2], "b": [1, 2, 3, 4]})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an uncertified MILP warning is not the point
                results.append(anonymize(df, 2, method=method))
        _finite_result(results[0])
        assert results[0].objective == pytest.approx(results[1].objective, rel=1e-12)


def test_subnormal_range_and_huge_weights_are_refused():
    with pytest.raises(InvalidInput, match=r"'a' has a range U − L too small"):
        anonymize(pd.DataFrame({"a": [0.0, 5e-324, 0.0], "b": [1, 2, 3]}), 2)
    df = pd.DataFrame({"a": [0, 1, 2, 3], "b": [1, 2, 3, 4]})
    with pytest.raises(InvalidInput, match=r"weights .* too large"):
        anonymize(df, 2, weights=[1e308, 1e308])
    # only the ratios matter: normalized, the same weights are fine
    assert anonymize(df, 2, weights=[1e308, 1e308], normalize_weights=True).objective > 0


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=4, max_size=8),
    st.sampled_from(["greedy", "initial", "mondrian", "k_member", "split_carry"]),
)
def test_any_finite_column_gives_a_finite_result_or_invalid_input(values, method):
    df = pd.DataFrame({"a": values, "b": np.arange(len(values)) % 3})
    try:
        res = anonymize(df, 2, method=method)
    except InvalidInput as exc:
        assert "'a'" in str(exc)
        return
    _finite_result(res)
