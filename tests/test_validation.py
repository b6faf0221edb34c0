import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from privopt import _validation as v
from privopt.errors import InvalidInput, NumericalTrouble


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, "x", None, True])
def test_epsilon_rejected(bad):
    with pytest.raises(InvalidInput, match="epsilon"):
        v.check_epsilon(bad)


def test_epsilon_accepted_as_float():
    assert v.check_epsilon(np.float32(0.5)) == pytest.approx(0.5)


@pytest.mark.parametrize("bad", [-1e-9, 1.0, 2.0, math.nan])
def test_delta_rejected(bad):
    with pytest.raises(InvalidInput, match=r"delta must lie in \[0, 1\)|NaN"):
        v.check_delta(bad)


def test_int_checks():
    assert v.check_int("k", 3.0, minimum=1) == 3
    with pytest.raises(InvalidInput, match="k must be >= 2"):
        v.check_int("k", 1, minimum=2)
    with pytest.raises(InvalidInput, match="k must be an integer"):
        v.check_int("k", 2.5)


def test_finite_array_names_shape_and_position():
    with pytest.raises(InvalidInput, match=r"X must have shape \(any, 3\)"):
        v.check_finite_array("X", np.zeros((4, 2)), shape=(None, 3))
    with pytest.raises(InvalidInput, match=r"X contains a non-finite value at index \(1, 0\)"):
        v.check_finite_array("X", [[0.0, 1.0], [math.nan, 2.0]])


def test_probability_vector():
    np.testing.assert_allclose(v.check_probability_vector("p", [0.25, 0.75]), [0.25, 0.75])
    with pytest.raises(InvalidInput, match="sum to 1"):
        v.check_probability_vector("p", [0.5, 0.6])
    with pytest.raises(InvalidInput, match="negative entry at index 0"):
        v.check_probability_vector("p", [-0.5, 1.5])


@pytest.mark.parametrize("bad", [1 + 0j, np.complex128(0.5), np.array(0.5 + 0j), "0.5", b"1"])
def test_scalars_refuse_complex_and_text(bad):
    with pytest.raises(InvalidInput, match="epsilon must be a real number"):
        v.check_epsilon(bad)


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        (np.array([1.0, 2.0]) + 1j, "must be real, got complex"),
        (np.array([1.0, 2.0]) + 0j, "must be real, got complex"),  # even a zero imaginary part
        ([1.0, 2 + 3j], "must be real, got complex"),
        (np.array([1, 2 + 3j], dtype=object), "must be real, got complex"),
        (["1.5", "2"], "numeric array, got dtype <U3"),
        (np.array([True, False]), "numeric array, got dtype bool"),
        (np.array(["2024-01-01"], dtype="datetime64[D]"), "numeric array"),
        ([[1.0, 2.0], [3.0]], "numeric array"),
        ([object()], "dtype object with an element of type object at index"),
    ],
)
def test_finite_array_refuses_what_numpy_would_cast(bad, fragment):
    with pytest.raises(InvalidInput, match=fragment):
        v.check_finite_array("X", bad)


def test_integer_arrays_refuse_truncation_and_overflow():
    np.testing.assert_array_equal(v.check_finite_array("u", [1.0, 2.0], dtype=np.int64), [1, 2])
    with pytest.raises(
        InvalidInput, match=r"u must hold integers, got a fractional, .* index \(1,\)"
    ):
        v.check_finite_array("u", [1.0, 1.5], dtype=np.int64)
    for bad in ([1.0, math.nan], [1e300], [2**70]):
        with pytest.raises(InvalidInput, match="u must"):
            v.check_finite_array("u", bad, dtype=np.int64)


def test_finite_result_passes_finite_values_unchanged():
    assert v.check_finite_result("loss", 0.25) == 0.25
    arr = np.array([[0.0, 1e308]])
    assert v.check_finite_result("Z", arr) is arr


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (math.inf, r"loss is not finite \(inf\)"),
        (np.float64("nan"), r"loss is not finite \(nan\)"),
        (np.array([[1.0, 2.0], [3.0, -math.inf]]), r"at index \(1, 1\) \(1 of 4 entries\)"),
        ([1.0, math.nan], r"nan at index \(1,\)"),
    ],
)
def test_finite_result_raises_numerical_trouble_naming_the_value(value, fragment):
    with pytest.raises(NumericalTrouble, match=fragment):
        v.check_finite_result("loss", value)
    with pytest.raises(NumericalTrouble, match="cause: coordinates near 1e300"):
        v.check_finite_result("loss", value, cause="coordinates near 1e300")
    with pytest.raises(InvalidInput, match="must be real"):
        v.check_finite_result("loss", 1 + 1j)


# ------------------------------------------------------------- what counts as a numeric input
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([1, 2.5], np.array([1.0, 2.5])),
        (np.array([1.5, 2], dtype=object), np.array([1.5, 2.0])),
        (np.array([1, 2], dtype=object), np.array([1, 2])),
        (np.array([Fraction(1, 2)], dtype=object), np.array([0.5])),
        (pd.Series([1, 2], dtype="Int64"), np.array([1, 2])),
        (pd.Series([1.5, 2.0], dtype="Float64"), np.array([1.5, 2.0])),
        (
            pd.DataFrame({"a": pd.array([1, 2], dtype="Int64"), "b": [0.5, 1.5]}),
            [[1, 0.5], [2, 1.5]],
        ),
        (pd.Series([1.5, 2.0]), np.array([1.5, 2.0])),
        (np.float32(0.5), np.array(0.5)),
    ],
)
def test_numbers_are_accepted_with_their_values(value, expected):
    out = v.numeric_array("x", value)
    assert out.dtype.kind in "iuf"
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (
            np.array(["1.5", "2"], dtype=object),
            r"dtype object with an element of type str at index \(0,\)",
        ),
        (pd.Series(["1.5", "2"]), "pandas dtype str"),
        (pd.Series(["1.5", "2"], dtype="string"), "pandas dtype string"),
        (pd.Series([True, False], dtype="boolean"), "pandas dtype boolean"),
        (pd.Series([1, 2], dtype="category"), "pandas dtype category"),
        ([True, 2.0], "a bool element in a list"),
        ([[1.0, 2.0], [3.0, True]], "a bool element in a list"),
        (np.array([1.0, True], dtype=object), r"element of type bool at index \(1,\)"),
        (np.array([1.0, None], dtype=object), "element of type NoneType"),
        (np.array([Decimal("1.5")], dtype=object), "element of type Decimal"),
        (np.array([True, False]), "got dtype bool"),
        (True, "got dtype bool"),
        (sp.csr_array(np.eye(2)), "must be a dense array, got the sparse csr_array"),
        (
            pd.Series([1, None], dtype="Int64"),
            r"x has a missing value \(pandas NA\) at index \(1,\)",
        ),
        (pd.DataFrame({"a": [1.0, None]}, dtype="Float64"), r"missing value .* index \(1, 0\)"),
    ],
)
def test_non_numbers_are_refused_by_argument_and_dtype(value, fragment):
    with pytest.raises(InvalidInput, match=fragment) as info:
        v.numeric_array("x", value)
    assert str(info.value).startswith("x ")
    assert "1.5" not in str(info.value)  # the message never quotes the data


def test_non_numbers_are_also_a_type_error():
    # What numpy and scikit-learn raise for such input (scikit-learn's estimator checks look
    # for it), while staying an InvalidInput (a ValueError) for privopt's callers.
    with pytest.raises(TypeError):
        v.numeric_array("x", np.array([{"a": 1}], dtype=object))


def test_scalar_parameters_follow_the_same_rule():
    assert v.check_real("offset", np.array(-2)) == -2.0
    assert v.check_real("offset", Fraction(1, 4)) == 0.25
    for bad in ("1", True, np.bool_(True), Decimal("1"), [1.0], None):
        with pytest.raises(InvalidInput, match="offset must be a real number"):
            v.check_real("offset", bad)
    with pytest.raises(InvalidInput, match="beyond the float64 range"):
        v.check_real("offset", 10**400)


def test_integer_conversion_refuses_wrapping():
    with pytest.raises(InvalidInput, match="outside the int64 range"):
        v.real_array("u", np.array([2**63], dtype=np.uint64), np.int64)
    with pytest.raises(InvalidInput, match="out-of-range"):
        v.real_array("u", [2.0**63], np.int64)
    np.testing.assert_array_equal(v.real_array("u", [-(2.0**63)], np.int64), [-(2**63)])


def test_size_products_are_counted_exactly():
    assert v.check_size((2**30, 2**30 - 1))[0] == 2**60 - 2**30
    for bad in [(2**30, 2**30), (2**40, 2**40), (2**32, 2**31), (2**62, 4, 0), 2**70]:
        with pytest.raises(InvalidInput, match=r"size .* more values than an array can hold"):
            v.check_size(bad)
    assert v.check_size((2**59, 0)) == (0, (2**59, 0))


def test_exp_argument_limit_is_the_float64_one():
    v.check_exp_argument(v.MAX_EXP_ARGUMENT, "e", "r")
    assert math.isfinite(math.exp(v.MAX_EXP_ARGUMENT))
    with pytest.raises(InvalidInput, match=r"epsilon \* d of a pair exceeds"):
        v.check_exp_argument(
            math.nextafter(v.MAX_EXP_ARGUMENT, math.inf),
            "epsilon * d",
            "r",
            where=" of a pair",
            show_value=False,
        )
