"""Fixtures for the mDP tests."""

from __future__ import annotations

import pytest
from mdp_instances import random_2d
from privopt.mdp import MDPProblem


@pytest.fixture
def small_random() -> MDPProblem:
    return random_2d(14, seed=3, eps=0.8, eta=2.0, side=5.0)
