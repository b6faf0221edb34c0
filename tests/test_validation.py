import math

import numpy as np
import pytest
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
