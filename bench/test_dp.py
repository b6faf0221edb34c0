"""Noise benchmarks: the exact discrete Laplace and Gaussian samplers of ``privopt.dp`` per draw,
against numpy's floating-point Laplace and normal rounded to integers.

The baseline is not a private sampler (a rounded floating-point draw leaks through its low bits,
Mironov 2012): it is the cost of a draw without exactness, what the exact samplers' integer
arithmetic is measured against. Every mechanism that counts (census, DPM, k-anonymity's
releases) draws through these samplers, so their time per draw is their hot path. The draws
come from a seeded Generator, advancing across rounds (replaying the same random words would
let the CPU's branch predictor learn the draws), or from the OS CSPRNG (``rng=None``, what a
real release uses). The scales λ = Δ/ε = 6 and 100 are not powers of two, as census's rates are
not. The sample variance must match the exact pmf's.
"""

from __future__ import annotations

import numpy as np
import pytest
from privopt.dp import (
    discrete_gaussian_pmf,
    discrete_laplace_pmf,
    sample_categorical,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)


def _settings(kind: str, scales: list[float], size: int, sources: list[str]) -> list[dict]:
    return [
        {"id": f"{kind}{scale:g}-{source}-n{size:.0e}", "scale": scale, "size": size, "rng": source}
        for scale in scales
        for source in sources
    ]


SETTINGS = {
    "test_discrete_laplace": {
        "small": _settings("lambda", [6.0], 100_000, ["seed"]),
        "paper": _settings("lambda", [1.0, 6.0, 100.0, 1e4], 1_000_000, ["seed", "os"]),
    },
    "test_discrete_gaussian": {
        "small": _settings("sigma", [30.0], 100_000, ["seed"]),
        "paper": _settings("sigma", [1.0, 30.0, 1e4], 1_000_000, ["seed", "os"]),
    },
    # K outputs of one released row (1,331: the LR-Geo grid); draws of it per call.
    "test_sample_categorical": {
        "small": [{"id": "K1331-one", "K": 1331, "size": 1}],
        "paper": [
            {"id": f"K{k}-{'one' if n == 1 else n}", "K": k, "size": n}
            for k in (100, 1331)
            for n in (1, 10_000)
        ],
    },
}
#: What the samplers took before (a git revision's Numba kernels, 10⁶ draws; docs/performance.md).
BEFORE = {
    "laplace": "57–108 ns per draw at λ = 1…10⁴, 5.9–11.6× faster than the Numba kernels",
    "gaussian": "86–177 ns per draw at σ = 1…10⁴, 6.3–18.5× faster than the Numba kernels",
}


def _exact_variance(pmf, scale: float) -> float:
    """Σ k² P(k) over ±60 scales (the tails beyond weigh below 1e-20 of it)."""
    k = np.arange(-int(60 * scale) - 10, int(60 * scale) + 11)
    return float(np.sum(k.astype(float) ** 2 * pmf(k)))


def _check_sample(draws: np.ndarray, size: int, variance: float) -> None:
    assert draws.shape == (size,) and draws.dtype.kind == "i"
    assert abs(draws.mean()) < 6 * np.sqrt(variance / size)  # centred
    assert draws.var() == pytest.approx(variance, rel=0.05)  # the pmf's spread


def _per_draw(info: dict, size: int) -> None:
    """Nanoseconds per draw of both sides (no privopt median under --benchmark-disable)."""
    for side in ("", "baseline_"):
        if f"{side}median_s" in info:
            info[f"{side}ns_per_draw"] = 1e9 * info[f"{side}median_s"] / size


def test_discrete_laplace(against, setting, benchmark):
    """``sample_discrete_laplace(ε = 1/λ, n)`` against ``rint(Generator.laplace(0, λ, n))``."""
    lam, size = setting["scale"], setting["size"]
    rng = np.random.default_rng(0) if setting["rng"] == "seed" else None
    base_rng = np.random.default_rng(1)
    draws, _ = against(
        lambda: sample_discrete_laplace(1 / lam, size, rng=rng),
        lambda: np.rint(base_rng.laplace(0.0, lam, size)).astype(np.int64),
        baseline_name="numpy's floating-point Laplace, rounded (not exact)",
        paper=BEFORE["laplace"],
        rounds=5,
        setting=setting,
    )
    _check_sample(draws, size, _exact_variance(lambda k: discrete_laplace_pmf(k, 1 / lam), lam))
    _per_draw(benchmark.extra_info, size)


def test_discrete_gaussian(against, setting, benchmark):
    """``sample_discrete_gaussian(σ, n)`` against ``rint(Generator.normal(0, σ, n))``."""
    sigma, size = setting["scale"], setting["size"]
    rng = np.random.default_rng(0) if setting["rng"] == "seed" else None
    base_rng = np.random.default_rng(1)
    draws, _ = against(
        lambda: sample_discrete_gaussian(sigma, size, rng=rng),
        lambda: np.rint(base_rng.normal(0.0, sigma, size)).astype(np.int64),
        baseline_name="numpy's floating-point normal, rounded (not exact)",
        paper=BEFORE["gaussian"],
        rounds=5,
        setting=setting,
    )
    variance = _exact_variance(lambda k: discrete_gaussian_pmf(k, sigma), sigma)
    _check_sample(draws, size, variance)
    _per_draw(benchmark.extra_info, size)


def test_sample_categorical(against, setting, benchmark):
    """``sample_categorical(row, n)`` (exact: integer arithmetic over the row's exact sum, OS
    CSPRNG) against ``Generator.choice(K, n, p=row)`` (floating point, not exact): one call
    builds the row's exact cumulative table once, then draws."""
    K, size = setting["K"], setting["size"]
    row = np.random.default_rng(2).dirichlet(np.full(K, 0.3))
    base_rng = np.random.default_rng(1)
    draws, _ = against(
        lambda: sample_categorical(row, size),
        lambda: base_rng.choice(K, size, p=row),
        baseline_name="numpy's Generator.choice (floating point, not exact)",
        rounds=5,
        setting=setting,
    )
    assert draws.shape == (size,) and draws.min() >= 0 and draws.max() < K
    assert np.all(row[draws] > 0)  # never an index of weight 0 (none here below 1e-300)
    _per_draw(benchmark.extra_info, size)
