"""DPM estimator: behaviour (spec 004 §11.2), ledger, scikit-learn conventions, bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from privopt import dp
from privopt.cluster import DPM
from privopt.cluster.metrics import clustering_accuracy
from privopt.errors import InvalidInput, PrivacyBudgetExceeded
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.exceptions import NotFittedError


def dpm(**kw):
    params = dict(bounds=(-100, 100), epsilon=10.0, delta=1e-6)
    params.update(kw)
    return DPM(**params)


def test_eight_blobs_give_eight_clusters(eight_blobs, eight_centres):
    X, y = eight_blobs
    hits = 0
    for seed in range(10):
        m = dpm(random_state=seed).fit(X)
        if m.n_clusters_ == 8:
            hits += 1
            err = np.linalg.norm(m.cluster_centers_[:, None] - eight_centres[None], axis=2).min(
                axis=1
            )
            # The noisy centres' error is random: over seeds 0-39, with the noise streams of two
            # exact samplers (same pmf, different bit use), the largest was 1.25 and 5 of 80
            # fits were above 1.0.
            assert err.max() < 1.5
            assert clustering_accuracy(m.labels_, y) == 1.0
        assert m.split_width_ == pytest.approx(3.25, abs=0.5)
    assert hits >= 9


def test_single_gaussian_gives_at_most_two_clusters():
    small = 0
    for seed in range(10):
        X = np.random.default_rng(100 + seed).normal(0, 5.0 if seed % 2 else 10.0, size=(16000, 2))
        small += dpm(random_state=seed).fit(X).n_clusters_ <= 2
    assert small >= 8


def test_uniform_data_splits_but_within_the_depth_limit():
    X = np.random.default_rng(7).uniform(-100, 100, size=(16000, 2))
    m = dpm(random_state=0).fit(X)
    assert 4 <= m.n_clusters_ <= 128


def test_quality_improves_with_epsilon_on_digits():
    X, y = load_digits(return_X_y=True)
    acc = {
        eps: np.mean(
            [
                clustering_accuracy(
                    DPM(bounds=(0, 16), epsilon=eps, delta=1e-6, random_state=s).fit(X).labels_, y
                )
                for s in range(3)
            ]
        )
        for eps in (1.0, 100.0)
    }
    assert acc[100.0] > acc[1.0]


def test_same_seed_same_clustering(eight_blobs):
    X, _ = eight_blobs
    a = dpm(random_state=3).fit(X)
    b = dpm(random_state=3).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.labels_, b.labels_)


def test_ledger_sums_to_epsilon_delta(eight_blobs):
    X, _ = eight_blobs
    m = dpm(epsilon=2.0, delta=3e-7, random_state=1).fit(X)
    acct = m.accountant_
    assert acct.epsilon_spent == pytest.approx(2.0, abs=1e-12)
    assert acct.delta_spent == pytest.approx(3e-7, rel=1e-12)
    labels = [e.label for e in acct.entries]
    assert len(labels) == 1 + 1 + 2 * 7 + 1  # root count, percentile, 7 × (EM, counts), averages
    assert sum("split selection" in s for s in labels) == 7
    assert sum("count" in s for s in labels) == 8
    assert "leaf averages" in m.ledger_


def test_accountant_budget_is_enforced_before_spending(eight_blobs):
    X, _ = eight_blobs
    acct = dp.PrivacyAccountant(epsilon_budget=1.5, delta_budget=1e-6)
    dpm(epsilon=1.0, random_state=0).fit(X, accountant=acct)
    assert acct.epsilon_spent == pytest.approx(1.0)
    with pytest.raises(PrivacyBudgetExceeded):
        dpm(epsilon=1.0, random_state=0).fit(X, accountant=acct)


def test_sklearn_conventions(eight_blobs):
    X, _ = eight_blobs
    m = dpm(random_state=0, max_depth=5, window="reference")
    params = m.get_params()
    assert params["max_depth"] == 5 and params["window"] == "reference"
    c = clone(m)
    assert c.get_params() == params and not hasattr(c, "cluster_centers_")
    c.set_params(alpha=4.0, epsilon=20.0)
    assert c.alpha == 4.0 and c.epsilon == 20.0
    assert c.fit(X) is c
    labels = clone(m).fit_predict(X)
    assert labels.shape == (len(X),) and labels.dtype == np.int64
    np.testing.assert_array_equal(c.predict(X), c.labels_)
    assert c.cluster_centers_.shape == (c.n_clusters_, 2)
    assert c.cluster_sizes_.shape == (c.n_clusters_,)
    with pytest.raises(NotFittedError):
        dpm().predict(X)


def test_window_modes_and_termination_rule_run(eight_blobs):
    X, _ = eight_blobs
    for window in ("paper", "half_open", "reference"):
        assert dpm(window=window, strict_termination=False, random_state=2).fit(X).n_clusters_ >= 1


def test_tiny_budget_degrades_gracefully():
    X = np.random.default_rng(0).normal(0, 1, size=(5, 2))
    m = dpm(epsilon=1e-3, random_state=0).fit(X)
    assert m.n_clusters_ >= 1 and np.all(np.isfinite(m.cluster_centers_))
    assert m.accountant_.epsilon_spent == pytest.approx(1e-3)


def test_clipping_versus_rejecting_out_of_bounds():
    X = np.array([[0.0, 0.0], [150.0, 1.0], [1.0, -2.0], [3.0, 3.0]])
    dpm(random_state=0).fit(X)  # clipped
    with pytest.raises(InvalidInput, match="outside bounds"):
        dpm(clip=False).fit(X)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([[0.0, np.nan], [1.0, 1.0]]), r"NaN or inf at X\[0, 1\]"),
        (np.array([[0.0, 1.0], [1.0, -np.inf]]), r"NaN or inf at X\[1, 1\]"),
        (np.zeros((1, 2)), "1 sample"),
        (np.zeros((5, 0)), "0 feature"),
        (np.zeros(5), "X must be 2-dimensional"),
        (np.zeros((4, 2)) + 1j, "Complex data not supported"),
        (np.array([["a", "b"], ["c", "d"]]), "X must be a numeric array, got dtype <U1"),
    ],
)
def test_bad_data_rejected(X, match):
    with pytest.raises(InvalidInput, match=match):
        dpm().fit(X)


@pytest.mark.parametrize(
    "params, name",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"delta": None}, "delta"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"bounds": (1, 1)}, "bounds"),
        ({"bounds": ([0, 0], [1])}, "bounds"),
        ({"bounds": ([0, 0, 0], [1, 1, 1])}, "3 features"),
        ({"bounds": ([0, 2], [1, 1])}, "feature 1"),
        ({"bounds": None, "clip": False}, "clip=False"),
        ({"bounds": None, "bounds_epsilon_share": 0.0}, "bounds_epsilon_share"),
        ({"bounds": None, "bounds_epsilon_share": 1.0}, "bounds_epsilon_share"),
        ({"bounds": None, "bounds_range": (5, -5)}, "bounds_range"),
        ({"bounds": None, "bounds_range": (0, math.inf)}, "bounds_range"),
        ({"bounds": None, "bounds_range": (-1e308, 1e308)}, "bounds_range"),
        ({"bounds": (0, math.nan)}, "bounds"),
        ({"max_depth": 0}, "max_depth"),
        ({"max_depth": 2.5}, "max_depth"),
        ({"t": 0.1, "q": 0.1}, "t must"),
        ({"q": 0.0}, "q"),
        ({"q": 0.6}, "q"),
        ({"alpha": -1}, "alpha"),
        ({"budget_split": (0.5, 0.5, 0.5, 0.5)}, "budget_split"),
        ({"budget_split": (0.0, 0.2, 0.2, 0.6)}, "budget_split"),
        ({"delta_split": (1.0,)}, "delta_split"),
        ({"sigma_grid": [2.0, 1.0]}, "sigma_grid"),
        ({"sigma_grid": []}, "sigma_grid"),
        ({"percentile": 100}, "percentile"),
        ({"codebook": "x"}, "codebook"),
        ({"mc_reps": 0}, "mc_reps"),
        ({"min_size": -1}, "min_size"),
        ({"window": "closed"}, "window"),
        ({"clip": "yes"}, "clip"),
        ({"n_jobs": 0}, "n_jobs"),
    ],
)
def test_bad_hyper_parameters_rejected(params, name):
    X = np.zeros((10, 2))
    with pytest.raises(InvalidInput, match=name):
        dpm(**params).fit(X)


def test_too_many_candidates_rejected_before_spending():
    acct = dp.PrivacyAccountant()
    with pytest.raises(InvalidInput, match="split candidates"):
        dpm(bounds=(-1e6, 1e6)).fit(np.zeros((10, 2)), accountant=acct)
    assert acct.epsilon_spent == 0


def test_monte_carlo_codebook_option():
    X = np.random.default_rng(1).normal(0, 4.0, size=(3000, 2))
    m = dpm(epsilon=1000, codebook="monte_carlo", mc_reps=5, max_depth=1, random_state=0).fit(X)
    assert abs(2 * m.split_width_ - 4.0) <= 0.5


def test_feature_names_of_a_dataframe_are_kept(eight_blobs):
    X, _ = eight_blobs
    frame = pd.DataFrame(X[:, :2], columns=["east_km", "north_km"])
    model = dpm(random_state=0).fit(frame)
    assert model.n_features_in_ == 2
    assert list(model.feature_names_in_) == ["east_km", "north_km"]
    assert model.feature_names_in_.dtype == object
    np.testing.assert_array_equal(model.predict(frame), model.labels_)
    with pytest.raises(InvalidInput, match="feature names should match"):
        model.predict(frame.rename(columns={"east_km": "x"}))
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        model.predict(X[:, :2])
    # a refit on an array forgets the names, as scikit-learn estimators do
    refit = model.fit(X[:, :2])
    assert not hasattr(refit, "feature_names_in_") and refit.n_features_in_ == 2
    # names that are not all text are not feature names
    numbered = dpm(random_state=0).fit(pd.DataFrame(X[:, :2]))
    assert not hasattr(numbered, "feature_names_in_")


@pytest.mark.parametrize(
    "given, missing",
    [({}, "epsilon and delta"), ({"epsilon": 1.0}, "delta"), ({"delta": 1e-6}, "epsilon")],
)
def test_privacy_is_chosen_not_defaulted(given, missing):
    """epsilon and delta default to None (scikit-learn needs defaults) and fit refuses None."""
    X = np.random.default_rng(0).uniform(-1, 1, (50, 2))
    assert DPM().epsilon is None and DPM().delta is None
    with pytest.raises(InvalidInput, match=f"^{missing} must be given"):
        DPM(bounds=(-1, 1), **given).fit(X)
