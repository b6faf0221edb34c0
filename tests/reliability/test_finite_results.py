"""No public result is NaN or ±inf (issue 12 item 6): the call raises instead, naming the cause.

One table of (entry point, input that used to give a non-finite result, expected exception,
message fragment). Each input is valid in type and range; the result it produced before
(named in the entry) overflowed float64. The shared check is
:func:`privopt._validation.check_finite_result` (and its decorator ``finite_result``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from privopt import census as cen
from privopt import dp, mdp
from privopt._validation import check_finite_result, finite_result
from privopt.cluster import budget_schedule
from privopt.errors import InvalidInput, NumericalTrouble

BIG = 1.79e308

CASES: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    (
        "dp.laplace_mechanism (was [-inf, inf])",
        lambda: dp.laplace_mechanism([BIG, -BIG], 1e-10, sensitivity=1e300, rng=0),
        NumericalTrouble,
        r"laplace_mechanism result is not finite.*values plus noise",
    ),
    (
        "dp.sample_laplace (was -inf)",
        lambda: dp.sample_laplace(1e308, 5, rng=0),
        NumericalTrouble,
        "sample_laplace result is not finite",
    ),
    (
        "dp.classic_gaussian_sigma (was inf)",
        lambda: dp.classic_gaussian_sigma(1e-300, 1e-6, 1e300),
        NumericalTrouble,
        "classic_gaussian_sigma result is not finite",
    ),
    (
        "dp.sample_discrete_gaussian (was a bare OverflowError)",
        lambda: dp.sample_discrete_gaussian(1e300, 5, rng=0),
        NumericalTrouble,
        "sample_discrete_gaussian: a value overflows float64",
    ),
    (
        "dp.discrete_gaussian_pmf (was a bare OverflowError)",
        lambda: dp.discrete_gaussian_pmf(0, 1e300),
        NumericalTrouble,
        "discrete_gaussian_pmf: a value overflows",
    ),
    (
        "dp.discrete_gaussian_delta (was a bare OverflowError)",
        lambda: dp.discrete_gaussian_delta(1e300, 1e-10),
        NumericalTrouble,
        "discrete_gaussian_delta: a value overflows",
    ),
    (
        "dp.exponential_mechanism_probabilities (was [nan, nan])",
        lambda: dp.exponential_mechanism_probabilities([1.0, 0.0], 1.0, sensitivity=1e-320),
        InvalidInput,
        "epsilon / sensitivity = 1.0 / 1e-320 overflows",
    ),
    (
        "dp.exponential_mechanism (was index 0 drawn from NaNs)",
        lambda: dp.exponential_mechanism([1.0, 0.0], 1.0, sensitivity=1e-320, rng=0),
        InvalidInput,
        "overflows",
    ),
    (
        "mdp.PerturbationMatrix expected_loss=inf (was accepted)",
        lambda: mdp.PerturbationMatrix(np.full((2, 2), 0.5), 1.0, 1.0, math.inf),
        NumericalTrouble,
        "expected_loss is not finite",
    ),
    (
        "mdp.PerturbationMatrix lower_bound=inf (was accepted)",
        lambda: mdp.PerturbationMatrix(np.full((2, 2), 0.5), 1.0, 1.0, 0.5, lower_bound=math.inf),
        NumericalTrouble,
        "lower_bound is not finite",
    ),
    (
        "census.paper_delta (was a bare OverflowError)",
        lambda: cen.paper_delta(1e308),
        NumericalTrouble,
        "paper_delta: a value overflows",
    ),
    (
        "census.l1_per_level (was [inf, inf])",
        lambda: cen.l1_per_level(
            counts().hierarchy,
            np.full(counts().counts.shape, BIG),
            -np.full(counts().counts.shape, BIG),
        ),
        NumericalTrouble,
        "l1_per_level result is not finite",
    ),
    (
        "cluster.budget_schedule (was λ = inf with a RuntimeWarning)",
        lambda: budget_schedule(1e-308, 1e-6, 3, (0.1, 0.4, 0.3, 0.2), (0.5, 0.5)),
        NumericalTrouble,
        r"budget_schedule lambdas is not finite.*epsilon = 1e-308",
    ),
]


def counts() -> cen.CensusCounts:
    import pandas as pd

    rec = pd.DataFrame({"state": ["GA", "GA", "NY", "NY"], "hh": ["a", "a", "b", "c"]})
    return cen.CensusCounts.from_records(rec, ["state"], "hh")


@pytest.mark.parametrize(
    ("call", "exc", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_non_finite_results_raise_naming_the_cause(call, exc, fragment):
    with pytest.raises(exc) as info:
        call()
    assert re.search(fragment, str(info.value)), str(info.value)


def test_finite_results_pass_unchanged():
    # The same seeded draws through the checked public function and its unchecked body.
    checked = dp.laplace_mechanism(np.arange(5.0), 1.0, rng=3)
    plain = dp.laplace_mechanism.__wrapped__(np.arange(5.0), 1.0, rng=3)
    np.testing.assert_array_equal(checked, plain)
    assert dp.sample_discrete_laplace(1.0, rng=0) == dp.sample_discrete_laplace.__wrapped__(
        1.0, rng=0
    )
    big = 10**400  # a Python int beyond float64 is still a finite answer
    assert check_finite_result("n", big) is big
    ints = np.array([2**62, -(2**62)])
    assert check_finite_result("n", ints) is ints


def test_the_decorator_names_the_function_and_keeps_its_signature():
    @finite_result(cause="x near 1e308")
    def twice(x: float) -> float:
        """Doc."""
        return 2 * x

    assert twice(2.0) == 4.0 and twice.__name__ == "twice" and twice.__doc__ == "Doc."
    with pytest.raises(NumericalTrouble, match=r"twice result is not finite \(inf\); cause: x"):
        twice(1e308)
    import inspect

    assert list(inspect.signature(dp.laplace_mechanism).parameters) == [
        "values",
        "epsilon",
        "sensitivity",
        "rng",
    ]
