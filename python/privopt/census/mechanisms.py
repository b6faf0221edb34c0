"""The census mechanisms of spec 003: M_H, M_H^r, M_H^dp, M_c^r, M_c^dp, M_c^ch and a
TopDown-style baseline. Each takes the private :class:`CensusCounts`, ε and a random source and
returns a :class:`CensusRelease`.

Privacy (all mechanisms): neighbouring datasets differ by one individual, which moves one group
from size k to k±1 inside [1, N] (G is public and unchanged, spec 003 §1.4). Each mechanism
measures with either noise (:mod:`privopt.census.noise`):

- ``epsilon=``: double geometric noise, ε-DP. Counts have ℓ1-sensitivity Δ_n = 2 (Lemma 4),
  per-region cumulative counts Δ_c = 1 (Lemma 6), the chain measurements of M_c^ch |R_ℓ| per
  level (spec 003 §3.4 WARNING; the paper's scale L/ε is available as
  ``chain_noise_scale="paper"`` but is ε-DP only when each level has one region).
- ``rho=``: discrete Gaussian noise, ρ-zCDP. The ℓ2-sensitivities are √2 for counts (two cells
  move by one), 1 for cumulative counts (one cell moves by one) and √|R_ℓ| for the chain (|R_ℓ|
  chain values move by one).

The budget is split over the L levels by ``shares`` (evenly by default; see
:func:`privopt.census.allocate_budget`), parallel composition inside a level. Everything after
the noise is post-processing: the exact post-processing minimises Σ (x − ñ)² for either noise
(Model 1 / Model 3 of spec 003), which is also the maximum-likelihood consistent integer
estimate under Gaussian noise of equal variance across levels; with unequal shares it stays
valid (any function of the measurements is) but does not weight the levels.

Measurements can be drawn once (:func:`measure_counts`, :func:`measure_cumulative`,
:func:`measure_chain`) and shared by several post-processings via ``measurements=``; then no
budget is spent again.
"""

from __future__ import annotations

import functools
import inspect
import math
import time
import warnings
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import scipy.sparse as sp

from privopt import _optional
from privopt._callers import stacklevel_outside_privopt
from privopt._progress import progress_scope_for, with_progress_argument
from privopt._validation import (
    check_executor,
    check_finite_result,
    check_positive,
)
from privopt.census.hierarchy import CensusCounts, Hierarchy, cumulate, decumulate
from privopt.census.noise import (
    DataFingerprint,
    LevelBudget,
    Measurements,
    charge_levels,
    check_accountant,
    check_shares,
    draw_budget_noise,
    level_budget,
)
from privopt.census.release import CensusRelease
from privopt.census.solvers import (
    chain_order,
    chain_postprocess,
    check_window,
    level_cumulative,
    round_half_up,
    tree_postprocess,
)
from privopt.census.uncertainty import RERUNNABLE
from privopt.dp.calibration import DEFAULT_CONVERSION_DELTA
from privopt.dp.randomness import is_seeded
from privopt.errors import InvalidInput, NumericalTrouble, SolverLimit
from privopt.lp import solve_projection_qp

__all__ = [
    "measure_counts",
    "measure_cumulative",
    "measure_chain",
    "m_h",
    "m_h_r",
    "m_h_dp",
    "m_c_r",
    "m_c_dp",
    "m_c_ch",
    "topdown",
    "MECHANISMS",
    "release",
]

_GUARANTEE = (
    "ε-DP (pure), neighbours: one individual added/removed, moving one group between "
    "sizes k and k±1; ε/L per level, discrete Laplace (double geometric) noise, {what}"
)

_NEIGHBOURS = "neighbours: one individual added/removed, moving one group between sizes k and k±1"


#: Appended to the guarantee of a release whose noise came from a seed.
SEEDED_NOTE = (
    "; SEEDED: the noise was drawn from a seed, so anyone who knows it can recompute and "
    "remove the noise: reproducible, for testing only, not a private release"
)


def _check_data(data: Any) -> CensusCounts:
    if not isinstance(data, CensusCounts):
        raise InvalidInput(f"data must be a privopt.census.CensusCounts, got {type(data).__name__}")
    return data


# ----------------------------------------------------------------------------- measurements
def _budget(
    data: CensusCounts, epsilon: Any, rho: Any, shares: Any, accountant: Any
) -> LevelBudget:
    """The validated budget of a measurement; a zCDP budget is stated as (ε, δ) at the
    accountant's conversion δ (the default one without an accountant)."""
    acct = check_accountant(accountant) if accountant is not None else None
    delta = acct.conversion_delta if acct is not None else DEFAULT_CONVERSION_DELTA
    return level_budget(
        epsilon, rho, shares, data.hierarchy.n_levels, conversion_delta=float(delta)
    )


def _noise_name(budget: LevelBudget) -> str:
    return "discrete Laplace" if budget.noise == "geometric" else "discrete Gaussian"


def measure_counts(
    data: CensusCounts,
    epsilon: float | None = None,
    *,
    rho: float | None = None,
    shares: Any = None,
    rng: Any = None,
    accountant: Any = None,
) -> Measurements:
    """ñ^r = n^r + noise for every region: Geom(Δ/ε_ℓ)^N with Δ_n = 2 (ε/L per level by
    default), or with ``rho=`` discrete Gaussian N_ℤ(0, σ_ℓ²)^N, σ_ℓ = √2/√(2ρ_ℓ)
    (ℓ2-sensitivity √2). ``shares``: the fraction of the budget spent on each level."""
    data = _check_data(data)
    budget = _budget(data, epsilon, rho, shares, accountant)
    h = data.hierarchy
    L = h.n_levels
    sens = np.full(L, 2.0) if budget.noise == "geometric" else np.full(L, math.sqrt(2.0))
    delta_text = "Δ=2" if budget.noise == "geometric" else "ℓ2 Δ=√2"
    with charge_levels(
        accountant,
        budget,
        sens,
        label="census counts",
        mechanism=f"{_noise_name(budget)} on group-size counts ({delta_text})",
        seeded=is_seeded(rng),
    ) as ledger:
        noise = draw_budget_noise([(int(k), data.N) for k in h.level_sizes], budget, sens, rng)
        noisy = data.counts + np.concatenate(noise, axis=0)
    return Measurements(
        "counts",
        noisy,
        budget.epsilon,
        budget.noise_scale(sens),
        sens,
        ledger,
        source=DataFingerprint.of(data),
        budget=budget,
    )


def measure_cumulative(
    data: CensusCounts,
    epsilon: float | None = None,
    *,
    rho: float | None = None,
    shares: Any = None,
    rng: Any = None,
    accountant: Any = None,
) -> Measurements:
    """c̃^r = ⊕(n^r) + noise for every region: Geom(1/ε_ℓ)^N (sensitivity Δ_c = 1), or with
    ``rho=`` discrete Gaussian, σ_ℓ = 1/√(2ρ_ℓ) (ℓ2-sensitivity 1). ``shares`` as in
    :func:`measure_counts`."""
    data = _check_data(data)
    budget = _budget(data, epsilon, rho, shares, accountant)
    h = data.hierarchy
    L = h.n_levels
    sens = np.ones(L)
    delta_text = "Δ=1" if budget.noise == "geometric" else "ℓ2 Δ=1"
    with charge_levels(
        accountant,
        budget,
        sens,
        label="census cumulative counts",
        mechanism=f"{_noise_name(budget)} on cumulative counts ({delta_text})",
        seeded=is_seeded(rng),
    ) as ledger:
        noise = draw_budget_noise([(int(k), data.N) for k in h.level_sizes], budget, sens, rng)
        noisy = cumulate(data.counts) + np.concatenate(noise, axis=0)
    return Measurements(
        "cumulative",
        noisy,
        budget.epsilon,
        budget.noise_scale(sens),
        sens,
        ledger,
        source=DataFingerprint.of(data),
        budget=budget,
    )


def measure_chain(
    data: CensusCounts,
    epsilon: float | None = None,
    *,
    rho: float | None = None,
    shares: Any = None,
    rng: Any = None,
    accountant: Any = None,
    chain_noise_scale: str = "strict",
) -> Measurements:
    """Level-wise cumulative chain counts plus noise.

    ``chain_noise_scale="strict"`` (default): Δ_ℓ = |R_ℓ|, λ_ℓ = |R_ℓ|/ε_ℓ — ε-DP; with ``rho=``
    discrete Gaussian noise of ℓ2-sensitivity √|R_ℓ|, σ_ℓ = √(|R_ℓ|/(2ρ_ℓ)) — ρ-zCDP.
    ``"paper"``: Δ = 1, λ = L/ε as in the paper — ε-DP only if every level has one region;
    recorded as such in the ledger (geometric noise only).
    """
    data = _check_data(data)
    if chain_noise_scale not in ("strict", "paper"):
        raise InvalidInput(
            f"chain_noise_scale must be 'strict' or 'paper', got {chain_noise_scale!r}"
        )
    budget = _budget(data, epsilon, rho, shares, accountant)
    if budget.noise == "gaussian" and chain_noise_scale == "paper":
        raise InvalidInput(
            "chain_noise_scale='paper' reproduces the paper's geometric noise scale; with rho "
            "(discrete Gaussian noise) use 'strict'"
        )
    h = data.hierarchy
    L = h.n_levels
    region, size, level, _ = chain_order(h, data.N)
    truth = level_cumulative(data.counts[region, size], level, L)
    sizes = h.level_sizes.astype(np.float64)
    if budget.noise == "gaussian":
        sens, delta_text = np.sqrt(sizes), "ℓ2 Δ=√|R_ℓ|"
    elif chain_noise_scale == "strict":
        sens, delta_text = sizes, "Δ=|R_ℓ| (strict)"
    else:
        sens = np.ones(L)
        delta_text = "Δ=1 as in the paper (NOT ε-DP when a level has several regions)"
    with charge_levels(
        accountant,
        budget,
        sens,
        label="census chain counts",
        mechanism=f"{_noise_name(budget)} on level-wise chain cumulative counts, {delta_text}",
        seeded=is_seeded(rng),
    ) as ledger:
        noise = draw_budget_noise([(int(k) * data.N,) for k in h.level_sizes], budget, sens, rng)
        noisy = truth.copy()
        for lev in range(L):
            noisy[level == lev] += noise[lev]
    return Measurements(
        "chain",
        noisy,
        budget.epsilon,
        budget.noise_scale(sens),
        sens,
        ledger,
        {"chain_noise_scale": chain_noise_scale},
        source=DataFingerprint.of(data),
        budget=budget,
    )


def _get(
    measure: Callable,
    kind: str,
    data: CensusCounts,
    epsilon: float | None,
    rng: Any,
    accountant: Any,
    measurements: Measurements | None,
    rho: float | None = None,
    shares: Any = None,
    **kw: Any,
) -> tuple[Measurements, float]:
    start = time.perf_counter()
    data = _check_data(data)
    check_accountant(accountant)
    if measurements is None:
        if epsilon is None and rho is None:
            raise InvalidInput(
                "epsilon is required (or rho, for discrete Gaussian noise) unless measurements "
                "are given"
            )
        measurements = measure(
            data, epsilon, rho=rho, shares=shares, rng=rng, accountant=accountant, **kw
        )
    else:
        _check_measurements(measurements, kind, data)
        _check_same_budget(measurements, epsilon, rho, shares, data.hierarchy.n_levels)
    return measurements, time.perf_counter() - start


def _check_same_budget(
    measurements: Measurements, epsilon: Any, rho: Any, shares: Any, n_levels: int
) -> None:
    """A budget given beside ``measurements`` must be theirs (nothing is measured again)."""
    spent = measurements.level_budget
    if epsilon is not None or rho is not None:
        given = level_budget(epsilon, rho, None, n_levels)
        if (given.noise, given.total) != (spent.noise, spent.total):
            name = "epsilon" if given.noise == "geometric" else "rho"
            theirs = "epsilon" if spent.noise == "geometric" else "rho"
            raise InvalidInput(
                f"{name} = {given.total} differs from the measurements' {theirs} = "
                f"{spent.total}: pass {name}=None to post-process them"
            )
    if shares is not None:
        given_shares = check_shares(shares, n_levels)
        if not np.allclose(given_shares, spent.shares, rtol=1e-12, atol=0):
            raise InvalidInput(
                f"shares {list(given_shares)} differ from the measurements' "
                f"{list(spent.shares)}: pass shares=None to post-process them"
            )


def _check_measurements(measurements: Any, kind: str, data: CensusCounts) -> None:
    """Measurements of the right kind, made on this data (fingerprint) and of its shape."""
    if not isinstance(measurements, Measurements) or measurements.kind != kind:
        raise InvalidInput(
            f"measurements must be {kind!r} Measurements, got "
            f"{getattr(measurements, 'kind', type(measurements).__name__)!r}"
        )
    if measurements.source is None:
        raise InvalidInput(
            "measurements do not record the data they measured (source is None): make them "
            "with measure_counts / measure_cumulative / measure_chain"
        )
    measurements.source.check(data)
    R, N = data.hierarchy.n_regions, data.N
    want = (R * N,) if kind == "chain" else (R, N)
    if np.shape(measurements.noisy) != want:
        raise InvalidInput(
            f"measurements.noisy must have shape {want}, got {np.shape(measurements.noisy)}"
        )


def _release(
    name: str,
    data: CensusCounts,
    meas: Measurements,
    counts: np.ndarray,
    t_noise: float,
    t_post: float,
    what: str,
    info: dict | None = None,
) -> CensusRelease:
    if counts.dtype.kind == "f":  # integer counts are finite by construction
        check_finite_result(f"{name} counts", counts)
    seeded = any(e.seeded for e in meas.ledger)
    budget = meas.level_budget
    return CensusRelease(
        method=name,
        hierarchy=data.hierarchy,
        counts=counts,
        G=data.G,
        epsilon=meas.epsilon if budget.noise == "geometric" else None,
        guarantee_details=_guarantee_details(meas, what) + (SEEDED_NOTE if seeded else ""),
        seeded=seeded,
        ledger=list(meas.ledger),
        timings={"noise": t_noise, "postprocess": t_post, "total": t_noise + t_post},
        info={**(info or {}), **meas.info},
        measurements=meas,
        noise=budget.noise,
        rho=budget.total if budget.noise == "gaussian" else None,
        shares=budget.shares,
        conversion_delta=budget.conversion_delta,
    )


def _guarantee_details(meas: Measurements, what: str) -> str:
    """The guarantee in one line: the paper's text for its even geometric split, else the
    notion, the split and the noise per level."""
    budget = meas.level_budget
    if budget.noise == "geometric" and budget.even:
        return _GUARANTEE.format(what=what)
    split = (
        "an even split over the levels"
        if budget.even
        else "per-level shares " + ", ".join(f"{s:.4g}" for s in budget.shares)
    )
    scales = ", ".join(f"{s:.4g}" for s in meas.scale)
    sens = ", ".join(f"{s:.4g}" for s in meas.sensitivity)
    if budget.noise == "geometric":
        return (
            f"ε-DP (pure), {_NEIGHBOURS}; ε = {budget.total:g} in {split}, discrete Laplace "
            f"(double geometric) noise on the {meas.kind} measurements, ℓ1-sensitivity per "
            f"level {sens}, scale λ per level {scales}"
        )
    return (
        f"ρ-zCDP with ρ = {budget.total:g} (so (ε, δ)-DP with ε = {budget.epsilon:.4g}, δ = "
        f"{budget.conversion_delta:g}), {_NEIGHBOURS}; ρ in {split}, discrete Gaussian noise "
        f"on the {meas.kind} measurements, ℓ2-sensitivity per level {sens}, σ per level {scales}"
    )


# ----------------------------------------------------------------------------- mechanisms
def _all_or_nothing(mechanism: Callable[..., CensusRelease]) -> Callable[..., CensusRelease]:
    """Run ``mechanism`` inside a transaction of its ``accountant``: if measuring or
    post-processing raises, the spends of the call are removed (sound, as nothing derived from
    the noise is released) and the error propagates."""

    @functools.wraps(mechanism)
    def charged(data: Any, epsilon: Any = None, **kwargs: Any) -> CensusRelease:
        accountant = kwargs.get("accountant")
        if accountant is None:
            return mechanism(data, epsilon, **kwargs)
        with check_accountant(accountant).transaction():
            return mechanism(data, epsilon, **kwargs)

    return charged


@_all_or_nothing
@with_progress_argument
def m_h(
    data: CensusCounts,
    epsilon: float | None = None,
    *,
    rho: float | None = None,
    shares: Any = None,
    rng: Any = None,
    accountant: Any = None,
    measurements: Measurements | None = None,
) -> CensusRelease:
    """M_H step 1 only: the raw noisy counts (inconsistent, may be negative; a baseline).
    ``progress`` (keyword): bars over the noise draws, as in :func:`m_h_dp`."""
    meas, t0 = _get(
        measure_counts, "counts", data, epsilon, rng, accountant, measurements, rho, shares
    )
    return _release("M_H", data, meas, meas.noisy.copy(), t0, 0.0, "counts Δ=2, λ=2L/ε")


@_all_or_nothing
def m_h_dp(
    data: CensusCounts,
    epsilon: float | None = None,
    *,
    rho: float | None = None,
    shares: Any = None,
    rng: Any = None,
    accountant: Any = None,
    measurements: Measurements | None = None,
    window: str | int = "auto",
    executor: Any = None,
    progress: bool | str = "auto",
) -> CensusRelease:
    """M_H^dp: noisy counts, then the exact tree DP with TableMerge (C++).

    Parameters
    ----------
    data : private counts.
    epsilon : total ε (> 0): double geometric noise, ε-DP.
    rho : total ρ (> 0) instead of ``epsilon``: discrete Gaussian noise, ρ-zCDP (stated as
        (ε, δ)-DP at the accountant's conversion δ, 1e-10 by default).
    shares : (L,) fraction of the budget spent on each level, top level first (None: even;
        :func:`privopt.census.allocate_budget` finds shares that meet per-level targets).
    rng : None, seed, numpy Generator, ``"secure"`` or a privopt.dp RandomSource.
    accountant : optional privopt.dp.PrivacyAccountant charged the budget (one spend per level).
    measurements : reuse earlier ``"counts"`` measurements (no new spend).
    window : value windows of the DP (see :mod:`privopt.census.solvers`).
    executor : optional :class:`concurrent.futures.Executor` (or a Dask client's
        ``get_executor()``) on which the subtrees below a cut level are solved as tasks; the
        release is the same, bit for bit (:mod:`privopt.census.forest`).
    progress : ``True``, ``False`` or ``"auto"``: bars on stderr over the noise draws and the
        DP's widening rounds (``"auto"``: on a terminal, once the call has run 2 s).

    Returns
    -------
    CensusRelease with integral, non-negative, consistent and faithful counts (Model 1 optimum).

    Example
    -------
    >>> from privopt.census import Hierarchy, CensusCounts, m_h_dp
    >>> h = Hierarchy.from_nested({"US": ["GA", "NY"]})
    >>> data = CensusCounts.from_leaf_counts(h, [[2, 0, 1], [1, 1, 1]])
    >>> m_h_dp(data, 1.0, rng=0).verify().counts.shape
    (3, 3)
    """
    check_window(window)
    check_executor(executor, accept_dask_client=True)
    with progress_scope_for(progress):
        meas, t0 = _get(
            measure_counts, "counts", data, epsilon, rng, accountant, measurements, rho, shares
        )
        start = time.perf_counter()
        counts, info = tree_postprocess(
            data.hierarchy,
            meas.noisy,
            data.G,
            scale=meas.window_scale,
            window=window,
            executor=executor,
        )
    return _release(
        "M_H^dp", data, meas, counts, t0, time.perf_counter() - start, "counts Δ=2, λ=2L/ε", info
    )


@numba.njit(cache=True)
def _pava_rows(y: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Unweighted isotonic (non-decreasing) regression of each row (pool adjacent violators)."""
    out = np.empty_like(y)
    n_rows, n = y.shape
    val = np.empty(n)
    wt = np.empty(n)
    for r in range(n_rows):
        k = 0
        for i in range(n):
            val[k] = y[r, i]
            wt[k] = 1.0
            while k > 0 and val[k - 1] > val[k]:
                w = wt[k - 1] + wt[k]
                val[k - 1] = (val[k - 1] * wt[k - 1] + val[k] * wt[k]) / w
                wt[k - 1] = w
                k -= 1
            k += 1
        i = 0
        for b in range(k):
            for _ in range(int(wt[b])):
                out[r, i] = val[b]
                i += 1
    return out


@_all_or_nothing
def m_c_dp(
    data: CensusCounts,
    epsilon: float | None = None,
    *,
    rho: float | None = None,
    shares: Any = None,
    rng: Any = None,
    accountant: Any = None,
    measurements: Measurements | None = None,
    window: str | int = "auto",
    executor: Any = None,
    progress: bool | str = "auto",
) -> CensusRelease:
    """M_c^dp: noisy cumulative counts, per-region isotonic regression on
    [0, G], round half-up, ⊖, then the tree DP to restore consistency and faithfulness
    (``executor`` and ``progress`` as in :func:`m_h_dp`)."""
    check_window(window)
    check_executor(executor, accept_dask_client=True)
    with progress_scope_for(progress):
        meas, t0 = _get(
            measure_cumulative,
            "cumulative",
            data,
            epsilon,
            rng,
            accountant,
            measurements,
            rho,
            shares,
        )
        start = time.perf_counter()
        iso = np.clip(_pava_rows(meas.noisy.astype(np.float64)), 0, data.G)
        n_bar = decumulate(round_half_up(iso))
        counts, info = tree_postprocess(
            data.hierarchy,
            n_bar,
            data.G,
            scale=meas.window_scale,
            window=window,
            executor=executor,
        )
    return _release(
        "M_c^dp",
        data,
        meas,
        counts,
        t0,
        time.perf_counter() - start,
        "cumulative counts Δ=1, λ=L/ε",
        info,
    )


@_all_or_nothing
def m_c_ch(
    data: CensusCounts,
    epsilon: float | None = None,
    *,
    rho: float | None = None,
    shares: Any = None,
    rng: Any = None,
    accountant: Any = None,
    measurements: Measurements | None = None,
    chain_noise_scale: str = "strict",
    window: str | int = "auto",
    progress: bool | str = "auto",
) -> CensusRelease:
    """M_c^ch: level-wise cumulative chain counts, exact chain DP (C++), ⊖.

    ``chain_noise_scale="strict"`` (default) is ε-DP with Δ_ℓ = |R_ℓ|; ``"paper"`` reproduces
    the paper's scale L/ε, which is NOT ε-DP when a level has more than one region (the ledger
    and ``release.guarantee_details`` say so, and ``release.guarantee`` states the ε it does
    give). ``progress`` as in :func:`m_h_dp`.
    """
    check_window(window)
    with progress_scope_for(progress):
        meas, t0 = _get(
            measure_chain,
            "chain",
            data,
            epsilon,
            rng,
            accountant,
            measurements,
            rho,
            shares,
            chain_noise_scale=chain_noise_scale,
        )
        start = time.perf_counter()
        counts, info = chain_postprocess(
            data.hierarchy, meas.noisy, data.G, data.N, scale=meas.window_scale, window=window
        )
    what = (
        "chain counts Δ_ℓ=|R_ℓ|, λ_ℓ=|R_ℓ|L/ε"
        if meas.info["chain_noise_scale"] == "strict"
        else "chain counts with the paper's λ=L/ε — NOT ε-DP when a level has several regions"
    )
    return _release("M_c^ch", data, meas, counts, t0, time.perf_counter() - start, what, info)


# ----------------------------------------------------------------------------- QP baselines
def _consistency_matrix(h: Hierarchy, N: int, width: int) -> sp.csr_matrix:
    """Rows (internal r, s): Σ_{c∈ch(r)} x[c,s] − x[r,s] = 0, with x[r,s] at column r·N + s."""
    internal = np.flatnonzero(np.diff(h.child_ptr) > 0)
    row_of = np.full(h.n_regions, -1)
    row_of[internal] = np.arange(internal.size)
    kids = np.arange(1, h.n_regions)
    s = np.arange(N)
    rows = np.concatenate(
        [
            (row_of[h.parent[kids]][:, None] * N + s).ravel(),
            (row_of[internal][:, None] * N + s).ravel(),
        ]
    )
    cols = np.concatenate([(kids[:, None] * N + s).ravel(), (internal[:, None] * N + s).ravel()])
    vals = np.concatenate([np.ones(kids.size * N), -np.ones(internal.size * N)])
    return sp.csr_matrix((vals, (rows, cols)), shape=(internal.size * N, width))


def _check_time_limit(time_limit: Any) -> float | None:
    """Seconds > 0, as everywhere in privopt; None or ``inf``: no limit."""
    if time_limit is None:
        return None
    seconds = check_positive("time_limit", time_limit, allow_inf=True)
    return None if math.isinf(seconds) else seconds


def _qp_solver_name(solver: str) -> str:
    if solver not in ("auto", "clarabel", "highs"):
        raise InvalidInput(f"qp_solver must be 'auto', 'clarabel' or 'highs', got {solver!r}")
    if solver != "auto":
        return solver
    return "clarabel" if _optional.has_clarabel() else "highs"


def solve_qp(
    target: np.ndarray,
    A: sp.spmatrix,
    row_lo: np.ndarray,
    row_hi: np.ndarray,
    col_lo: float = 0.0,
    time_limit: float | None = None,
    solver: str = "auto",
) -> np.ndarray:
    """min ||x − target||² s.t. row_lo ≤ A x ≤ row_hi, x ≥ col_lo.

    ``solver="clarabel"``: the Clarabel interior-point solver (optional dependency, extra
    ``census``) — the counterpart of the barrier QP the paper ran in Gurobi, seconds for the
    national release. ``"highs"``: HiGHS's active-set QP (always available; fine for thousands
    of cells, minutes beyond ~10⁴). ``"auto"``: Clarabel when installed, else HiGHS.
    """
    if _qp_solver_name(solver) == "clarabel":
        return _solve_qp_clarabel(target, A, row_lo, row_hi, col_lo, time_limit)
    return solve_projection_qp(target, A, row_lo, row_hi, col_lo, time_limit)


def _solve_qp_clarabel(
    target: np.ndarray,
    A: sp.spmatrix,
    row_lo: np.ndarray,
    row_hi: np.ndarray,
    col_lo: float,
    time_limit: float | None,
) -> np.ndarray:
    clarabel = _optional.clarabel()
    n = target.size
    A = sp.csr_matrix(A)
    lo, hi = np.asarray(row_lo, dtype=np.float64), np.asarray(row_hi, dtype=np.float64)
    # The problem is homogeneous in (x, target, bounds): solve it in units that keep the data
    # below ~10⁵ (the interior-point method reports national counts of 10⁸ "infeasible").
    finite = np.concatenate(
        [np.abs(target), np.abs(lo[np.isfinite(lo)]), np.abs(hi[np.isfinite(hi)]), [abs(col_lo)]]
    )
    unit = max(1.0, float(finite.max()) / 1e5)
    target, lo, hi, col_lo = target / unit, lo / unit, hi / unit, col_lo / unit
    eq = lo == hi
    up = ~eq & np.isfinite(hi)
    down = ~eq & np.isfinite(lo)
    # Clarabel form: A' x + s = b, s in cones — equalities (zero cone) then every inequality as
    # "≤" (non-negative cone): A x ≤ hi, −A x ≤ −lo, −x ≤ −col_lo.
    M = sp.vstack([A[eq], A[up], -A[down], -sp.identity(n, format="csr")]).tocsc()
    b = np.concatenate([hi[eq], hi[up], -lo[down], np.full(n, -col_lo)])
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-10
    if time_limit is not None:
        settings.time_limit = float(time_limit)
    cones = [
        clarabel.ZeroConeT(int(eq.sum())),
        clarabel.NonnegativeConeT(int(up.sum() + down.sum()) + n),
    ]
    sol = clarabel.DefaultSolver(
        sp.identity(n, format="csc") * 2.0, -2.0 * target, M, b, cones, settings
    ).solve()
    status = str(sol.status)
    if "MaxTime" in status:
        raise SolverLimit(f"Clarabel QP hit time_limit = {time_limit} s", status="time limit")
    if status not in ("Solved", "AlmostSolved"):
        raise NumericalTrouble(f"Clarabel QP ended with {status}", status=status)
    return unit * np.asarray(sol.x)


@_all_or_nothing
@with_progress_argument
def m_h_r(
    data: CensusCounts,
    epsilon: float | None = None,
    *,
    rho: float | None = None,
    shares: Any = None,
    rng: Any = None,
    accountant: Any = None,
    measurements: Measurements | None = None,
    time_limit: float | None = None,
    qp_solver: str = "auto",
) -> CensusRelease:
    """M_H^r: Model 1 with integrality relaxed (x ≥ 0 kept), solved as a QP
    (``qp_solver``, see :func:`solve_qp`), each value rounded half-up independently — may violate
    consistency (#CV > 0). ``time_limit``: seconds of the QP (None or ``inf``: none);
    ``progress`` (keyword): bars over the noise draws, as in :func:`m_h_dp`."""
    solver = _qp_solver_name(qp_solver)
    time_limit = _check_time_limit(time_limit)
    meas, t0 = _get(
        measure_counts, "counts", data, epsilon, rng, accountant, measurements, rho, shares
    )
    start = time.perf_counter()
    h, N, R = data.hierarchy, data.N, data.hierarchy.n_regions
    A = sp.vstack(
        [
            _consistency_matrix(h, N, R * N),
            sp.csr_matrix((np.ones(N), (np.zeros(N), np.arange(N))), shape=(1, R * N)),
        ]
    )
    rhs = np.concatenate([np.zeros(A.shape[0] - 1), [data.G]])
    x = solve_qp(
        meas.noisy.ravel().astype(np.float64), A, rhs, rhs, time_limit=time_limit, solver=solver
    )
    check_finite_result("M_H^r QP solution", x, cause=f"the {solver} QP solver")
    counts = np.maximum(round_half_up(x), 0).reshape(R, N)
    return _release(
        "M_H^r",
        data,
        meas,
        counts,
        t0,
        time.perf_counter() - start,
        "counts Δ=2, λ=2L/ε",
        {"qp_solver": solver},
    )


@_all_or_nothing
@with_progress_argument
def m_c_r(
    data: CensusCounts,
    epsilon: float | None = None,
    *,
    rho: float | None = None,
    shares: Any = None,
    rng: Any = None,
    accountant: Any = None,
    measurements: Measurements | None = None,
    time_limit: float | None = None,
    qp_solver: str = "auto",
) -> CensusRelease:
    """M_c^r: Model 2 relaxed (ĉ ≥ 0 continuous) as a QP (``qp_solver``, see
    :func:`solve_qp`), rounded half-up, ⊖. A running maximum after rounding keeps n̂ ≥ 0
    against solver round-off. ``time_limit`` and ``progress`` as in :func:`m_h_r`."""
    solver = _qp_solver_name(qp_solver)
    time_limit = _check_time_limit(time_limit)
    meas, t0 = _get(
        measure_cumulative, "cumulative", data, epsilon, rng, accountant, measurements, rho, shares
    )
    start = time.perf_counter()
    h, N, R = data.hierarchy, data.N, data.hierarchy.n_regions
    rr = np.repeat(np.arange(R), N - 1)
    ii = np.tile(np.arange(N - 1), R)
    k = np.arange(rr.size)
    mono = sp.csr_matrix(
        (
            np.concatenate([np.ones(k.size), -np.ones(k.size)]),
            (np.concatenate([k, k]), np.concatenate([rr * N + ii, rr * N + ii + 1])),
        ),
        shape=(k.size, R * N),
    )
    cons = _consistency_matrix(h, N, R * N)
    top = sp.csr_matrix(([1.0], ([0], [N - 1])), shape=(1, R * N))
    A = sp.vstack([cons, mono, top])
    lo = np.concatenate([np.zeros(cons.shape[0]), np.full(k.size, -np.inf), [data.G]])
    hi = np.concatenate([np.zeros(cons.shape[0]), np.zeros(k.size), [data.G]])
    c = solve_qp(
        meas.noisy.ravel().astype(np.float64), A, lo, hi, time_limit=time_limit, solver=solver
    ).reshape(R, N)
    check_finite_result("M_c^r QP solution", c, cause=f"the {solver} QP solver")
    counts = decumulate(np.maximum.accumulate(np.maximum(round_half_up(c), 0), axis=1))
    return _release(
        "M_c^r",
        data,
        meas,
        counts,
        t0,
        time.perf_counter() - start,
        "cumulative counts Δ=1, λ=L/ε",
        {"qp_solver": solver},
    )


# ----------------------------------------------------------------------------- TopDown
#: TopDown's projection is float64: every integer up to G must be exact (G < 2⁵³).
TOPDOWN_MAX_G = 1 << 53


def _grouped_simplex_projection(v: np.ndarray, group: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Euclidean projection of each group of ``v`` onto {x ≥ 0 : Σ x = target[g]} (Duchi et al.,
    vectorised). ``group`` holds group ids 0..n_groups-1."""
    order = np.lexsort((-v, group))
    vs, gs = v[order], group[order]
    starts = np.flatnonzero(np.concatenate([[True], gs[1:] != gs[:-1]]))
    sizes = np.diff(np.concatenate([starts, [v.size]]))
    first = np.repeat(starts, sizes)
    cs = np.cumsum(vs)
    cs_in = cs - np.concatenate([[0.0], cs])[first]
    j = np.arange(v.size) - first + 1
    theta_j = (cs_in - target[gs]) / j
    ok = vs - theta_j > 0
    # rho = last j with ok (ok is a prefix in each group); groups with target 0 → theta = max.
    last_ok = np.maximum.reduceat(np.where(ok, j, 0), starts)
    theta = np.where(
        last_ok > 0,
        theta_j[np.minimum(starts + np.maximum(last_ok, 1) - 1, v.size - 1)],
        np.maximum.reduceat(vs, starts),
    )
    x = np.empty_like(v)
    x[order] = np.maximum(vs - theta[gs], 0.0)
    return x


def _grouped_round(x: np.ndarray, group: np.ndarray, target: np.ndarray) -> np.ndarray:
    """E2E geoimp_round: floor, then +1 to the cells with the largest fractional parts until
    each group sums to its integer target (spec 003 §4 resolution). Sums are int64, and a
    group that float rounding left over its target (or short by more than its size) is
    repaired exactly, so every group sums to its target and no cell goes negative."""
    fl = np.floor(np.maximum(x, 0.0) + 1e-9).astype(np.int64)
    frac = x - fl
    order = np.lexsort((-frac, group))
    gs = group[order]
    starts = np.flatnonzero(np.concatenate([[True], gs[1:] != gs[:-1]]))
    sums = np.zeros(target.size, dtype=np.int64)
    sums[gs[starts]] = np.add.reduceat(fl[order], starts)
    deficit = target - sums
    rank = np.arange(x.size) - np.repeat(starts, np.diff(np.concatenate([starts, [x.size]])))
    out = fl.copy()
    out[order] += (rank < deficit[gs]).astype(np.int64)
    for g in np.flatnonzero((deficit < 0) | (deficit > np.bincount(group, minlength=target.size))):
        _repair_group(out, np.flatnonzero(group == g), int(target[g]))
    return out


def _repair_group(out: np.ndarray, cells: np.ndarray, target: int) -> None:
    """Make out[cells] sum to ``target`` (≥ 0) with non-negative entries, in exact integers:
    scale proportionally (largest remainders get the leftover units), or split evenly when the
    cells are all zero."""
    vals = [int(v) for v in out[cells]]
    total = sum(vals)
    if total == 0:
        q, r = divmod(target, len(vals))
        new = [q + (i < r) for i in range(len(vals))]
    else:
        new = [v * target // total for v in vals]
        rest = sorted(range(len(vals)), key=lambda i: -((vals[i] * target) % total))
        for i in rest[: target - sum(new)]:
            new[i] += 1
    out[cells] = new


@_all_or_nothing
@with_progress_argument
def topdown(
    data: CensusCounts,
    epsilon: float | None = None,
    *,
    rho: float | None = None,
    shares: Any = None,
    rng: Any = None,
    accountant: Any = None,
    measurements: Measurements | None = None,
) -> CensusRelease:
    """A TopDown-style baseline *in the spirit of* the 2018 E2E / 2020 Census method: the M_H
    measurements, then level by level from the root, an L2 projection of each
    parent's children onto {x ≥ 0, Σ x = parent value} (per size) and a sum-preserving rounding.
    Consistent, integral, non-negative and faithful by construction. ``progress`` (keyword):
    bars over the noise draws, as in :func:`m_h_dp`."""
    data = _check_data(data)
    if data.G >= TOPDOWN_MAX_G:
        raise InvalidInput(
            f"TopDown projects in float64, exact only for G < 2^53; got G = {data.G} "
            f"(use M_H^dp, which is exact in integers)"
        )
    meas, t0 = _get(
        measure_counts, "counts", data, epsilon, rng, accountant, measurements, rho, shares
    )
    start = time.perf_counter()
    h, N, G = data.hierarchy, data.N, data.G
    noisy = meas.noisy.astype(np.float64)
    out = np.zeros((h.n_regions, N), dtype=np.int64)
    g0 = np.zeros(N, dtype=np.int64)
    x = _grouped_simplex_projection(noisy[0], g0, np.array([float(G)]))
    out[0] = _grouped_round(x, g0, np.array([G]))
    for lev in range(1, h.n_levels):
        sl = h.level_slice(lev)
        par = h.parent[sl]
        p_first = par.min()
        group = ((par - p_first)[:, None] * N + np.arange(N)).ravel()
        n_groups = int(group.max()) + 1
        tgt = np.zeros(n_groups, dtype=np.int64)
        tgt[group] = out[par].ravel()
        x = _grouped_simplex_projection(noisy[sl].ravel(), group, tgt.astype(np.float64))
        out[sl] = _grouped_round(x, group, tgt).reshape(-1, N)
    return _release(
        "TopDown",
        data,
        meas,
        out,
        t0,
        time.perf_counter() - start,
        "counts Δ=2, λ=2L/ε (same measurements as M_H)",
    )


MECHANISMS: dict[str, Callable[..., CensusRelease]] = {
    "M_H": m_h,
    "M_H^r": m_h_r,
    "M_H^dp": m_h_dp,
    "M_c^r": m_c_r,
    "M_c^dp": m_c_dp,
    "M_c^ch": m_c_ch,
    "TopDown": topdown,
}
RERUNNABLE.update(MECHANISMS)  # what CensusRelease.intervals re-runs


def release(
    data: CensusCounts, epsilon: float | None = None, method: str = "M_H^dp", **kwargs: Any
) -> CensusRelease:
    """Run the census mechanism named ``method`` (a key of :data:`MECHANISMS`).

    ``kwargs`` are that mechanism's keyword arguments (``rho`` instead of ``epsilon`` for
    discrete Gaussian noise, ``shares``, ``rng``, ``accountant``, ``window``, ``executor``,
    ``progress``, ``time_limit``, …); one it does not take raises InvalidInput.
    ``mechanism=`` is the former name of ``method`` (deprecated).

    Example
    -------
    >>> from privopt.census import CensusCounts, Hierarchy, release
    >>> data = CensusCounts.from_leaf_counts(Hierarchy.from_nested({"US": ["GA", "NY"]}),
    ...                                      [[2, 0, 1], [1, 1, 1]])
    >>> release(data, 1.0, "M_c^dp", rng=0).method
    'M_c^dp'
    >>> release(data, method="M_H^dp", rho=0.5, rng=0).guarantee.kind
    'rho-zCDP'
    """
    if "mechanism" in kwargs:
        warnings.warn(
            "release(mechanism=...) is deprecated: the argument is called method",
            DeprecationWarning,
            stacklevel=stacklevel_outside_privopt(),
        )
        method = kwargs.pop("mechanism")
    if not isinstance(method, str) or method not in MECHANISMS:
        raise InvalidInput(f"method must be one of {sorted(MECHANISMS)}, got {method!r}")
    func = MECHANISMS[method]
    valid = [p for p in inspect.signature(func).parameters if p not in ("data", "epsilon")]
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise InvalidInput(
            f"{method} takes no argument {', '.join(map(repr, unknown))}; valid keyword "
            f"arguments: {', '.join(valid)}"
        )
    return func(data, epsilon, **kwargs)
