"""The compiled β / c̄ kernel (Σ_j q_j |tc(a, t_j) − tc(b, t_j)|) against the numpy formula
(Eq. 5), on random tables with extreme magnitudes and ties."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from privopt.geo.crtable import _weighted_l1


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    st.integers(0, 10_000),
    st.integers(0, 7),
    st.integers(0, 9),
    st.integers(1, 6),
    st.sampled_from([1e-9, 1.0, 1e6]),
)
def test_weighted_l1_matches_the_formula(seed, r, c, t, scale) -> None:
    rng = np.random.default_rng(seed)
    a = np.round(rng.random((r, t)) * 4) * scale  # ties: |a − b| = 0 on many terms
    b = np.round(rng.random((c, t)) * 4) * scale
    w = rng.dirichlet(np.ones(t))
    got = _weighted_l1(a, b, w)
    ref = np.abs(a[:, None, :] - b[None, :, :]) @ w if r and c else np.zeros((r, c))
    assert got.shape == (r, c)
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13 * scale)
    assert np.all(got >= 0)
    if r and c:  # a metric on the rows: zero against itself, symmetric
        np.testing.assert_allclose(np.diag(_weighted_l1(a, a, w)), 0.0, atol=0)
        np.testing.assert_allclose(_weighted_l1(b, a, w), got.T, rtol=1e-15, atol=0)
