"""Noise is drawn from the OS CSPRNG unless a seed is given (issue 15 item 5): DPM, DP-Lloyd and
``privopt cluster``. A seed means "reproducible, for testing"."""

from __future__ import annotations

import numpy as np
import pytest
from privopt import dp
from privopt.cli import main
from privopt.cluster import DPM, _dpm
from privopt.cluster.baselines import dp_lloyd


@pytest.fixture
def word_counts(monkeypatch):
    """Counts the words each kind of source hands out during the test."""
    counts = {"secure": 0, "generator": 0}
    secure_words = dp.SecureSource.random_words
    generator_words = dp.GeneratorSource.random_words

    def secure(self, n):
        counts["secure"] += int(n)
        return secure_words(self, n)

    def generator(self, n):
        counts["generator"] += int(n)
        return generator_words(self, n)

    monkeypatch.setattr(dp.SecureSource, "random_words", secure)
    monkeypatch.setattr(dp.GeneratorSource, "random_words", generator)
    return counts


def points(n=3000):
    rng = np.random.default_rng(0)
    return rng.normal(0, 5, size=(n, 2)) + rng.choice([-50.0, 50.0], size=(n, 1))


def test_dpm_without_a_seed_draws_only_from_the_csprng(word_counts, monkeypatch):
    # The range pre-check runs the samplers' calibration once on a throwaway seeded Generator
    # (public parameters only, output discarded); without it, every word of the fit must come
    # from the OS source.
    monkeypatch.setattr(_dpm, "_check_noise_range", lambda *args: None)
    model = DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6).fit(points())
    assert word_counts["secure"] > 0 and word_counts["generator"] == 0
    assert np.all(np.isfinite(model.cluster_centers_))
    DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state=3).fit(points())
    assert word_counts["generator"] > 0  # a seed means a seeded Generator
    DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state="secure").fit(points())


def test_dpm_unseeded_fits_differ_and_seeded_fits_repeat():
    X = points()
    a, b = (DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6).fit(X) for _ in range(2))
    assert not np.array_equal(a.cluster_centers_, b.cluster_centers_)
    c, d = (DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state=9).fit(X) for _ in "ab")
    np.testing.assert_array_equal(c.cluster_centers_, d.cluster_centers_)


def test_dp_lloyd_without_a_seed_draws_from_the_csprng(word_counts):
    dp_lloyd(points(500), 2, (-100, 100), 1.0)
    assert word_counts["secure"] > 0 and word_counts["generator"] == 0


def test_cli_without_seed_uses_the_csprng_and_says_what_a_seed_is(tmp_path, word_counts, capsys):
    path = tmp_path / "p.npy"
    np.save(path, points(2000))
    rc = main(
        [
            "cluster",
            "--epsilon",
            "1",
            "--delta",
            "0.01",
            str(path),
            "--bounds",
            "-100",
            "100",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert rc == 0 and word_counts["secure"] > 0
    with pytest.raises(SystemExit):
        main(["cluster", "--epsilon", "1", "--delta", "0.01", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "for testing only" in text and "cryptographic" in text
