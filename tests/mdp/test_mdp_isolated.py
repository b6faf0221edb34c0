"""Records with no neighbour within η: (ε, η)-mDP says nothing about them, and solve() says so."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from privopt.errors import UnprotectedRecordsWarning
from privopt.mdp import MDPProblem, solve


def test_records_without_a_neighbour_within_eta_are_named_in_a_warning():
    points = np.array([[0.0, 0.0], [0.5, 0.0], [10.0, 10.0]])  # the third is alone
    with pytest.warns(UnprotectedRecordsWarning, match="1 of 3 records have no neighbour"):
        res = solve(MDPProblem(points, epsilon=1.0, eta=1.0))
    assert res.info["n_isolated"] == 1
    assert res.matrix[2, 2] == 1.0  # its own location, exactly: nothing hides it
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnprotectedRecordsWarning)
        solve(MDPProblem(points, epsilon=1.0, eta=20.0))  # everyone has a neighbour: silent
