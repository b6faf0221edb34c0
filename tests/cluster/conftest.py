"""Shared fixtures of the DPM tests: the spec's small data sets (spec 004 §11)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs

EIGHT_CENTRES = np.array([(x, y) for x in (-60, -20, 20, 60) for y in (-40, 40)], dtype=float)
TWELVE = np.array([0.5, 1.2, 1.4, 2.6, 3.1, 3.3, 3.4, 6.0, 7.7, 8.2, 9.9, 9.95])


@pytest.fixture(scope="session")
def eight_centres():
    return EIGHT_CENTRES.copy()


@pytest.fixture(scope="session")
def twelve_points():
    return TWELVE.copy()


@pytest.fixture(scope="session")
def shared_data_dir(shared_data):
    """The real data root holding ``dpm/`` (skips without it: see tests/conftest.py)."""
    return shared_data("dpm").parent


@pytest.fixture(scope="session")
def eight_blobs():
    X, y = make_blobs(n_samples=16000, centers=EIGHT_CENTRES, cluster_std=2.0, random_state=0)
    return X, y


@pytest.fixture(scope="session")
def synth_10d():
    X, y = make_blobs(
        n_samples=100000,
        n_features=10,
        centers=64,
        center_box=(-100, 100),
        cluster_std=1,
        random_state=42,
    )
    return X, y
