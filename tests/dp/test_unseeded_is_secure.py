"""Without a seed, every noise draw of privopt.dp reads the OS CSPRNG (issue 15 item 5)."""

from __future__ import annotations

import numpy as np
import pytest
from privopt import dp
from privopt.dp import randomness

DRAWS = {
    "sample_discrete_laplace": lambda rng: dp.sample_discrete_laplace(1.0, 5, rng=rng),
    "sample_discrete_gaussian": lambda rng: dp.sample_discrete_gaussian(2.0, 5, rng=rng),
    "sample_laplace": lambda rng: dp.sample_laplace(1.0, 5, rng=rng),
    "sample_gaussian": lambda rng: dp.sample_gaussian(1.0, 5, rng=rng),
    "laplace_mechanism": lambda rng: dp.laplace_mechanism(np.zeros(3), 1.0, rng=rng),
    "gaussian_mechanism": lambda rng: dp.gaussian_mechanism(np.zeros(3), 1.0, 1e-6, rng=rng),
    "exponential_mechanism": lambda rng: dp.exponential_mechanism(np.arange(4.0), 1.0, rng=rng),
    "sample_categorical": lambda rng: dp.sample_categorical([0.2, 0.3, 0.5], 5, rng=rng),
}


@pytest.fixture
def os_entropy(monkeypatch):
    """Count the bytes read from the OS CSPRNG (the draws still use them)."""
    calls = []
    real = randomness.secrets.token_bytes

    def spy(n):
        calls.append(n)
        return real(n)

    monkeypatch.setattr(randomness.secrets, "token_bytes", spy)
    return calls


@pytest.mark.parametrize("draw", DRAWS.values(), ids=DRAWS.keys())
def test_unseeded_draw_reads_the_os_csprng(draw, os_entropy):
    draw(None)
    assert os_entropy, "an unseeded draw must read the OS CSPRNG"


@pytest.mark.parametrize("draw", DRAWS.values(), ids=DRAWS.keys())
def test_a_seed_is_reproducible_and_never_reads_the_csprng(draw, os_entropy):
    first, second = draw(7), draw(7)
    np.testing.assert_array_equal(np.asarray(first), np.asarray(second))
    assert os_entropy == []
