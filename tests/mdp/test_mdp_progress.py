"""mdp.solve(progress=...): bars over the row-generation rounds on stderr when asked, none when
not, and the same matrix either way."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from privopt.errors import InvalidInput
from privopt.mdp import MDPProblem, solve


@pytest.fixture
def problem():
    points = np.random.default_rng(5).uniform(0, 4, size=(30, 2))
    return MDPProblem(points, epsilon=2.0, eta=1.5)


def test_progress_true_shows_the_rounds_on_stderr_only(problem, capsys):
    on = solve(problem, progress=True)
    out, err = capsys.readouterr()
    assert out == "" and "mDP row generation (30 records)" in err
    off = solve(problem, progress=False)
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    assert np.array_equal(on.matrix, off.matrix)


def test_progress_is_part_of_the_signature_and_validated(problem):
    assert inspect.signature(solve).parameters["progress"].default == "auto"
    with pytest.raises(InvalidInput, match="progress must be True, False or 'auto'"):
        solve(problem, progress="sometimes")
