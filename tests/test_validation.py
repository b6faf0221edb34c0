import math

import numpy as np
import pytest
from privopt import _validation as v
from privopt.errors import InvalidInput


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
