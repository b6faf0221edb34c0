"""Splitting a census budget over the levels so that each level meets an error target.

A census mechanism measures every level with its own share of the budget (ε_ℓ = s_ℓ·ε, or
ρ_ℓ = s_ℓ·ρ). The noise of a level, and so the error of its counts, is public: it depends only
on the mechanism's measurement (its sensitivity per level) and the level's share. The error
used here is the root mean square error (RMSE) of one measured count, in households:

- counts measurements (M_H, M_H^dp, M_H^r, TopDown): one noise draw per count, RMSE = sd(Z_ℓ);
- cumulative and chain measurements (M_c^dp, M_c^r, M_c^ch): a count is the difference of two
  measured cumulative counts, RMSE = √2·sd(Z_ℓ);

with sd(Z) of the double geometric √(2a)/(1 − a), a = exp(−ε_ℓ/Δ_ℓ), and of the discrete
Gaussian σ_ℓ = Δ₂_ℓ/√(2ρ_ℓ) (its exact sd, from the pmf, below σ = 2).

:func:`allocate_budget` minimises the worst ratio of a level's RMSE to its target: the errors
fall as the shares grow, so the optimum gives every level the same ratio r and spends the whole
budget. r ≤ 1 means every target is met (each level beats its target by the same factor);
r > 1 means the targets cannot all be met with this budget, and r is the smallest worst excess.
Without targets every level gets the same target, so the worst RMSE over the levels is
minimised.

The post-processing (consistency, non-negativity, integrality) usually lowers the error of the
measurements further; :meth:`BudgetAllocation.simulate` measures the released counts' error on
given (e.g. synthetic) data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np

from privopt import _optional
from privopt._progress import progress_bar, progress_scope
from privopt._validation import (
    check_epsilon,
    check_executor,
    check_finite_array,
    check_int,
    check_positive,
)
from privopt.census.hierarchy import CensusCounts, Hierarchy
from privopt.census.uncertainty import RERUNNABLE
from privopt.dp.discrete import discrete_gaussian_pmf
from privopt.errors import InvalidInput

__all__ = ["BudgetAllocation", "allocate_budget", "MEASUREMENT_OF"]

#: The measurement each census mechanism post-processes.
MEASUREMENT_OF: dict[str, str] = {
    "M_H": "counts",
    "M_H^dp": "counts",
    "M_H^r": "counts",
    "TopDown": "counts",
    "M_c^dp": "cumulative",
    "M_c^r": "cumulative",
    "M_c^ch": "chain",
}

#: Bisection steps (in log space for the shares): far below float resolution of a share.
_STEPS = 64


@dataclass(frozen=True)
class BudgetAllocation:
    """Per-level shares of a census budget, with the error they imply.

    Attributes
    ----------
    method : census mechanism the shares are for.
    noise : ``"geometric"`` (``total`` is ε) or ``"gaussian"`` (``total`` is ρ).
    total : ε or ρ of the whole release.
    shares : (L,) fraction of the budget per level, top level first (sum 1); pass as
        ``shares=`` to the mechanism (see :meth:`mechanism_arguments`).
    targets : (L,) RMSE target per level in households, or None (no targets given).
    expected_rmse : (L,) RMSE of one measured count per level with these shares, households.
    worst_ratio : max over the levels of expected_rmse / target (with no targets: the worst
        RMSE itself).
    met : True when every target is met (worst_ratio ≤ 1), False when the targets cannot all
        be met with this budget (the worst ratio is then minimised), None without targets.
    objective : what the shares achieve, in words.
    """

    method: str
    noise: str
    total: float
    shares: tuple[float, ...]
    targets: tuple[float, ...] | None
    expected_rmse: tuple[float, ...]
    worst_ratio: float
    met: bool | None
    objective: str

    def mechanism_arguments(self) -> dict[str, Any]:
        """``{"epsilon" or "rho": total, "shares": shares}``, the mechanism's budget keywords."""
        key = "epsilon" if self.noise == "geometric" else "rho"
        return {key: self.total, "shares": self.shares}

    def to_frame(self, level_names: Sequence[str] | None = None) -> Any:
        """One row per level: level, share, target, expected_rmse (pandas DataFrame)."""
        pd = _optional.pandas()
        L = len(self.shares)
        return pd.DataFrame(
            {
                "level": list(level_names) if level_names is not None else list(range(1, L + 1)),
                "share": self.shares,
                "target": self.targets if self.targets is not None else [math.nan] * L,
                "expected_rmse": self.expected_rmse,
            }
        )

    def simulate(
        self,
        data: CensusCounts,
        runs: int = 20,
        *,
        random_state: Any = None,
        executor: Executor | None = None,
        progress: bool | str = "auto",
    ) -> np.ndarray:
        """(L,) RMSE of the released counts per level, households, measured by running the
        mechanism with these shares ``runs`` times on ``data`` (evaluation only: compares
        with the true counts of ``data``; use synthetic or already public data).

        ``executor``: optional :class:`concurrent.futures.Executor` running one release per
        task; ``progress``: a bar on stderr over the runs."""
        if not isinstance(data, CensusCounts):
            raise InvalidInput(
                f"data must be a privopt.census.CensusCounts, got {type(data).__name__}"
            )
        if data.hierarchy.n_levels != len(self.shares):
            raise InvalidInput(
                f"data has {data.hierarchy.n_levels} levels, the allocation {len(self.shares)}"
            )
        runs = check_int("runs", runs, minimum=1)
        executor = check_executor(executor, accept_dask_client=True)
        seeds = _seed_sequence(random_state).spawn(runs)
        jobs = [(RERUNNABLE[self.method], data, self.mechanism_arguments(), s) for s in seeds]
        h = data.hierarchy
        squared = np.zeros(h.n_levels)
        with progress_bar(progress, total=runs, desc="census budget check", unit="run") as bar:
            results = (
                map(_squared_error, jobs)
                if executor is None
                else (f.result() for f in [executor.submit(_squared_error, j) for j in jobs])
            )
            for per_region in results:
                squared += np.bincount(h.level, weights=per_region, minlength=h.n_levels)
                bar.update(1)
        return np.sqrt(squared / (runs * h.level_sizes * data.N))


def _squared_error(job: tuple[Any, CensusCounts, dict[str, Any], Any]) -> np.ndarray:
    """(R,) sum over sizes of the squared error of one release (module-level: picklable)."""
    mechanism, data, kwargs, seed = job
    with progress_scope(False):
        released = mechanism(data, rng=np.random.default_rng(seed), **kwargs).counts
    diff = (released - data.counts).astype(np.float64)
    return (diff * diff).sum(axis=1)


def _seed_sequence(random_state: Any) -> np.random.SeedSequence:
    if random_state is None:
        return np.random.SeedSequence()
    return np.random.SeedSequence(check_int("random_state", random_state, minimum=0))


def allocate_budget(
    hierarchy: Hierarchy | CensusCounts,
    epsilon: float | None = None,
    *,
    rho: float | None = None,
    targets: Any = None,
    method: str = "M_H^dp",
) -> BudgetAllocation:
    """Per-level shares of ε (or ρ) that meet per-level error targets, or that minimise the
    worst error relative to its target when the budget cannot meet them all.

    Parameters
    ----------
    hierarchy : the public region tree (a :class:`Hierarchy`, or :class:`CensusCounts`, whose
        hierarchy is used; no count is read).
    epsilon : total ε (> 0): double geometric noise, ε-DP.
    rho : total ρ (> 0) instead of ``epsilon``: discrete Gaussian noise, ρ-zCDP.
    targets : (L,) RMSE target of one count per level, households, top level first (> 0), or
        one number for every level; None: minimise the worst RMSE over the levels.
    method : the census mechanism the shares are for (its measurement sets the sensitivity:
        see the module docstring).

    Returns
    -------
    BudgetAllocation
        ``met`` says whether the targets are met; the shares go to the mechanism with
        ``**allocation.mechanism_arguments()``.

    Raises
    ------
    InvalidInput
        Not exactly one of epsilon and rho, a budget ≤ 0, targets of the wrong length, ≤ 0 or
        not finite, an unknown method.

    Example
    -------
    >>> from privopt.census import Hierarchy, allocate_budget
    >>> h = Hierarchy.from_nested({"US": {"GA": ["a", "b"], "NY": ["c"]}})
    >>> plan = allocate_budget(h, 1.0, targets=[20.0, 20.0, 5.0])
    >>> plan.met, [round(s, 3) for s in plan.shares]
    (True, [0.167, 0.167, 0.666])
    """
    if isinstance(hierarchy, CensusCounts):
        hierarchy = hierarchy.hierarchy
    if not isinstance(hierarchy, Hierarchy):
        raise InvalidInput(
            f"hierarchy must be a privopt.census.Hierarchy, got {type(hierarchy).__name__}"
        )
    if method not in MEASUREMENT_OF:
        raise InvalidInput(f"method must be one of {sorted(MEASUREMENT_OF)}, got {method!r}")
    if (epsilon is None) == (rho is None):
        raise InvalidInput(
            "give exactly one of epsilon (geometric noise, epsilon-DP) and rho (discrete "
            f"Gaussian noise, rho-zCDP), got epsilon={epsilon!r}, rho={rho!r}"
        )
    noise = "geometric" if rho is None else "gaussian"
    total = check_epsilon(epsilon) if rho is None else check_positive("rho", rho)
    L = hierarchy.n_levels
    goal = _check_targets(targets, L)
    error = _LevelError(MEASUREMENT_OF[method], noise, total, hierarchy.level_sizes)

    def shares_at(ratio: float) -> np.ndarray:
        return np.array([error.share_for(lev, ratio * goal[lev]) for lev in range(L)])

    # Σ_ℓ s_ℓ(r) falls as r grows: bisect (in log space) for the r that spends the budget.
    lo, hi = 1e-12, 1.0
    while shares_at(hi).sum() > 1.0:
        lo, hi = hi, hi * 4.0
    while shares_at(lo).sum() <= 1.0 and lo > 1e-300:
        lo *= 1e-6
    for _ in range(_STEPS):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if shares_at(mid).sum() > 1.0 else (lo, mid)
    shares = shares_at(hi)
    shares = shares / shares.sum()  # spend the slack the bisection leaves, pro rata
    rmse = np.array([error.rmse(lev, float(shares[lev])) for lev in range(L)])
    worst = float(np.max(rmse / goal))
    if targets is None:
        met, objective = None, "no targets: the worst RMSE over the levels is minimised"
    elif worst <= 1.0 + 1e-9:
        met, objective = True, "every target is met, each level by the same factor"
    else:
        met = False
        objective = (
            f"the targets cannot all be met with this budget: the worst RMSE / target "
            f"({worst:.3g}) is minimised"
        )
    return BudgetAllocation(
        method,
        noise,
        float(total),
        tuple(float(s) for s in shares),
        None if targets is None else tuple(float(t) for t in goal),
        tuple(float(e) for e in rmse),
        worst,
        met,
        objective,
    )


def _check_targets(targets: Any, n_levels: int) -> np.ndarray:
    if targets is None:
        return np.ones(n_levels)
    arr = check_finite_array("targets", targets)
    if arr.ndim == 0:
        arr = np.full(n_levels, float(arr))
    if arr.shape != (n_levels,):
        raise InvalidInput(
            f"targets must hold one RMSE per level ({n_levels}) or one number, got shape "
            f"{arr.shape}"
        )
    if np.any(arr <= 0):
        raise InvalidInput(f"targets must be > 0 (households), got {[float(t) for t in arr]}")
    return arr.astype(np.float64)


class _LevelError:
    """RMSE of one measured count per level as a function of the level's share."""

    def __init__(self, kind: str, noise: str, total: float, level_sizes: np.ndarray) -> None:
        sizes = np.asarray(level_sizes, dtype=np.float64)
        self.noise, self.total = noise, total
        if kind == "counts":
            self.sensitivity = np.full(len(sizes), 2.0 if noise == "geometric" else math.sqrt(2))
        elif kind == "cumulative":
            self.sensitivity = np.ones(len(sizes))
        else:  # chain, strict scale
            self.sensitivity = sizes if noise == "geometric" else np.sqrt(sizes)
        # A count of a cumulative or chain measurement is a difference of two noisy values.
        self.draws = 1.0 if kind == "counts" else 2.0

    def rmse(self, lev: int, share: float) -> float:
        return math.sqrt(self.draws) * self._sd(lev, share)

    def _sd(self, lev: int, share: float) -> float:
        budget = share * self.total
        if self.noise == "geometric":
            t = budget / self.sensitivity[lev]  # a = exp(−t); sd = √(2a)/(1 − a)
            return math.sqrt(2.0 * math.exp(-t)) / -math.expm1(-t)
        sigma = self.sensitivity[lev] / math.sqrt(2.0 * budget)
        if sigma >= 2.0:  # the discrete Gaussian's variance is σ² to within e^(−2π²σ²)
            return sigma
        k = np.arange(-int(12 * sigma) - 2, int(12 * sigma) + 3)
        return math.sqrt(float(np.sum(discrete_gaussian_pmf(k, sigma) * k * k)))

    def share_for(self, lev: int, target: float) -> float:
        """Smallest share (up to bisection precision) whose RMSE is ≤ ``target``; may be > 1."""
        lo, hi = 1e-300, 1.0
        while self.rmse(lev, hi) > target:
            lo, hi = hi, hi * 2.0
            if hi > 1e300:
                return math.inf
        for _ in range(_STEPS):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if self.rmse(lev, mid) > target else (lo, mid)
        return hi
