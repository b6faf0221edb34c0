"""Per-count uncertainty of a census release, from the release and the public noise alone.

A released count x̂ is the post-processing of noisy measurements whose distribution is public
(the mechanism, its noise and its budget are stated in the release). :func:`count_intervals`
takes the released counts as a stand-in for the truth, measures them again with fresh noise of
the same distribution, re-runs the same post-processing, and reads each count's interval off
the replicates (a parametric bootstrap, percentile intervals: the α/2 and 1 − α/2 quantiles of
the replicated counts, rounded outward to integers). Nothing but public values is read, so the
intervals are post-processing of the release and cost no privacy budget.

The raw noisy counts of M_H need no simulation: x̂ = n + Z with Z of the public noise
distribution, so the interval x̂ ± q, q the smallest integer with P(|Z| ≤ q) ≥ confidence, holds
with exactly that probability (or more, by discreteness).

Coverage (measured on synthetic hierarchies, ``tests/census/test_intervals.py``): within 3
points of the nominal level for every mechanism and both noises where the noise spans several
counts and is smaller than the counts. Three documented departures, all on the safe side:
counts near zero are covered more often than nominal (non-negativity pulls the post-processed
counts up, and the percentile interval then reaches further towards zero); M_c^ch's strict
chain noise (λ_ℓ = |R_ℓ|/ε_ℓ, hundreds of households at the leaves of a wide level) can exceed
the counts, the monotone chain then binds and the intervals are conservative; and when the
noise spans only a few counts, integer endpoints make the intervals conservative.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from privopt import _optional
from privopt._progress import progress_bar, progress_scope
from privopt._validation import check_executor, check_int, check_positive
from privopt.census.hierarchy import CensusCounts, Hierarchy
from privopt.dp.discrete import discrete_gaussian_pmf, discrete_laplace_pmf
from privopt.errors import InvalidInput
from privopt.report import axes_or_new

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CountIntervals", "count_intervals", "DEFAULT_RUNS", "RERUNNABLE"]


class CensusReleaseFields(Protocol):
    """What intervals read of a :class:`privopt.census.CensusRelease` (its public fields; the
    release module calls into this one, so this one names the fields instead of importing it)."""

    @property
    def method(self) -> str: ...
    @property
    def hierarchy(self) -> Hierarchy: ...
    @property
    def counts(self) -> np.ndarray: ...
    @property
    def epsilon(self) -> float: ...
    @property
    def rho(self) -> float | None: ...
    @property
    def shares(self) -> Any: ...
    @property
    def info(self) -> dict[str, Any]: ...
    def check(self) -> dict[str, bool]: ...


_RELEASE_FIELDS = ("method", "hierarchy", "counts", "epsilon", "rho", "shares", "info", "check")

#: The mechanisms intervals can re-run, by release method name. ``privopt.census.mechanisms``
#: fills it in: the mechanisms build releases, and the release's ``intervals`` reaches this
#: module, so this module cannot import the mechanisms without a cycle.
RERUNNABLE: dict[str, Callable[..., CensusReleaseFields]] = {}

#: Replicates of the post-processing per interval call (the 5 % tails of a 90 % interval then
#: rest on 10 replicates each).
DEFAULT_RUNS = 200

#: Replicates per task on an executor.
_BATCH = 8


@dataclass(frozen=True)
class CountIntervals:
    """Interval estimates of every released count.

    Attributes
    ----------
    hierarchy : the region tree of the release.
    counts : (R, N) int64, the released counts.
    lower, upper : (R, N) int64, the interval of each count (households), lower ≤ count ≤ upper.
    confidence : nominal coverage of each interval, in (0, 1).
    runs : replicates of the post-processing behind the intervals (0 for M_H's exact ones).
    method : the census mechanism of the release.
    """

    hierarchy: Hierarchy
    counts: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    confidence: float
    runs: int
    method: str

    def width_per_level(self) -> np.ndarray:
        """(L,) mean interval width (upper − lower) of the counts of each level, households."""
        width = (self.upper - self.lower).astype(np.float64).mean(axis=1)
        sums = np.bincount(self.hierarchy.level, weights=width, minlength=self.hierarchy.n_levels)
        return sums / self.hierarchy.level_sizes

    def coverage(self, truth: CensusCounts | np.ndarray) -> float:
        """Fraction of counts whose interval holds the true count (evaluation only: reads the
        confidential truth)."""
        t = truth.counts if isinstance(truth, CensusCounts) else np.asarray(truth)
        if t.shape != self.counts.shape:
            raise InvalidInput(f"truth must have shape {self.counts.shape}, got {t.shape}")
        return float(np.mean((self.lower <= t) & (t <= self.upper)))

    def plot(self, ax: Any = None, level: int = -1) -> Any:
        """The released counts of the regions of one level (the leaves by default; at most 12,
        the largest) by household size, each with its interval as an error bar."""
        ax = axes_or_new(ax, figsize=(7, 4))
        h = self.hierarchy
        level = check_int("level", level, minimum=-h.n_levels, maximum=h.n_levels - 1)
        rows = h.level_slice(level % h.n_levels)
        totals = self.counts[rows].sum(axis=1)
        chosen = rows.start + np.sort(np.argsort(-totals, kind="stable")[:12])
        sizes = np.arange(1, self.counts.shape[1] + 1)
        width = 0.8 / len(chosen)
        for i, r in enumerate(chosen):
            x = sizes - 0.4 + width * (i + 0.5)
            c = self.counts[r]
            ax.errorbar(
                x,
                c,
                yerr=np.vstack([c - self.lower[r], self.upper[r] - c]),
                fmt="o",
                ms=3,
                capsize=2,
                lw=1,
                label=str(h.names[r]),
            )
        ax.set_xticks(sizes)
        ax.set_xlabel("household size (persons)")
        ax.set_ylabel("released number of households")
        ax.set_title(
            f"{self.method}: {self.confidence:.0%} intervals, level "
            f"{h.level_names[level % h.n_levels]}"
        )
        ax.legend(fontsize="x-small", ncol=2)
        return ax

    def to_frame(self) -> pd.DataFrame:
        """Long table: region, level, size, count, lower, upper."""
        pd = _optional.pandas()
        h = self.hierarchy
        R, N = self.counts.shape
        return pd.DataFrame(
            {
                "region": np.repeat(np.asarray([str(x) for x in h.names], dtype=object), N),
                "level": np.repeat(np.asarray(h.level_names, dtype=object)[h.level], N),
                "size": np.tile(np.arange(1, N + 1), R),
                "count": self.counts.ravel(),
                "lower": self.lower.ravel(),
                "upper": self.upper.ravel(),
            }
        )


def count_intervals(
    release: CensusReleaseFields,
    confidence: float = 0.9,
    *,
    runs: int = DEFAULT_RUNS,
    random_state: Any = None,
    executor: Executor | None = None,
    progress: bool | str = "auto",
) -> CountIntervals:
    """Per-count intervals of a census release (see the module docstring for the method).

    Parameters
    ----------
    release : a :class:`~privopt.census.CensusRelease` (also one read back by
        :func:`privopt.load`: only its public fields are used).
    confidence : nominal coverage of each interval, in (0, 1).
    runs : replicates of the post-processing (≥ 20; ignored for M_H, whose intervals are
        exact). The tails of the intervals rest on about runs·(1 − confidence)/2 replicates.
    random_state : seed of the replicates' noise (None: fresh entropy). The replicates are
        post-processing of public values, so this seed reveals nothing private.
    executor : optional :class:`concurrent.futures.Executor` (or a Dask client's
        ``get_executor()``) on which the replicates run in batches; the intervals are the same
        as in this thread for the same ``random_state``.
    progress : ``True``, ``False`` or ``"auto"``: a bar on stderr over the replicates.

    The replicates are held at once: runs·R·N·8 bytes (200 replicates of 10⁵ counts: 160 MB).

    Returns
    -------
    CountIntervals

    Raises
    ------
    InvalidInput
        Bad arguments, or a release whose counts are not consistent, non-negative integers
        summing to G (a QP baseline's rounding can break consistency): the replicates start from
        the released counts as a stand-in for the truth.

    Example
    -------
    >>> from privopt.census import CensusCounts, Hierarchy, m_h_dp
    >>> data = CensusCounts.from_leaf_counts(Hierarchy.from_nested({"US": ["GA", "NY"]}),
    ...                                      [[20, 5, 1], [12, 9, 3]])
    >>> iv = count_intervals(m_h_dp(data, 1.0, rng=0), 0.9, runs=40, random_state=0)
    >>> bool(((iv.lower <= iv.counts) & (iv.counts <= iv.upper)).all())
    True
    """
    if not all(hasattr(release, a) for a in _RELEASE_FIELDS):
        raise InvalidInput(
            f"release must be a privopt.census.CensusRelease, got {type(release).__name__}"
        )
    confidence = check_positive("confidence", confidence)
    if not confidence < 1:
        raise InvalidInput(f"confidence must lie in (0, 1), got {confidence!r}")
    runs = check_int("runs", runs, minimum=20)
    executor = check_executor(executor, accept_dask_client=True)
    if release.method == "M_H":
        lower, upper = _noise_intervals(release, confidence)
        return CountIntervals(
            release.hierarchy, release.counts, lower, upper, confidence, 0, release.method
        )
    stand_in = _stand_in(release)
    replicates = _replicate(release, stand_in, runs, random_state, executor, progress)
    alpha = 1.0 - confidence
    # Outward to integers: the interval holds at least the nominal share of the replicates.
    lower = np.quantile(replicates, alpha / 2, axis=0, method="lower").astype(np.int64)
    upper = np.quantile(replicates, 1 - alpha / 2, axis=0, method="higher").astype(np.int64)
    # Each interval holds its released count: near zero the post-processed replicates can all
    # land on one side of it (non-negativity pushes them up); widening only adds coverage.
    lower = np.minimum(lower, release.counts)
    upper = np.maximum(upper, release.counts)
    return CountIntervals(
        release.hierarchy, release.counts, lower, upper, confidence, runs, release.method
    )


def _stand_in(release: CensusReleaseFields) -> CensusCounts:
    """The released counts as the truth of the replicates (they must be a possible truth)."""
    failed = [k for k, ok in release.check().items() if not ok]
    if failed:
        raise InvalidInput(
            f"intervals re-run the post-processing from the released counts, which must be "
            f"integral, non-negative, consistent and faithful; this {release.method} release "
            f"is not {', '.join(failed)}"
        )
    return CensusCounts.from_region_counts(release.hierarchy, release.counts)


def _mechanism_arguments(release: CensusReleaseFields) -> dict[str, Any]:
    """The public budget and options of the release, as keyword arguments of its mechanism."""
    budget: dict[str, Any] = (
        {"epsilon": release.epsilon} if release.rho is None else {"rho": release.rho}
    )
    budget["shares"] = release.shares
    if release.method == "M_c^ch":
        budget["chain_noise_scale"] = release.info.get("chain_noise_scale", "strict")
    return budget


def _replicate(
    release: CensusReleaseFields,
    stand_in: CensusCounts,
    runs: int,
    random_state: Any,
    executor: Executor | None,
    progress: bool | str,
) -> np.ndarray:
    """(runs, R, N) replicated released counts, in replicate order whatever the executor."""
    if release.method not in RERUNNABLE:
        raise InvalidInput(f"the release names no census mechanism: {release.method!r}")
    seeds = _seed_sequence(random_state).spawn(runs)
    kwargs = _mechanism_arguments(release)
    batches = [seeds[i : i + _BATCH] for i in range(0, runs, _BATCH)]
    mechanism = RERUNNABLE[release.method]
    jobs = [(mechanism, stand_in, kwargs, batch) for batch in batches]
    out = np.empty((runs, *release.counts.shape), dtype=np.int64)
    done = 0
    with progress_bar(progress, total=runs, desc="census intervals", unit="replicate") as bar:
        results = (
            map(_run_batch, jobs)
            if executor is None
            else (f.result() for f in [executor.submit(_run_batch, job) for job in jobs])
        )
        for block in results:
            out[done : done + len(block)] = block
            done += len(block)
            bar.update(len(block))
    return out


def _run_batch(
    job: tuple[Callable[..., CensusReleaseFields], CensusCounts, dict[str, Any], list],
) -> np.ndarray:
    """Replicates of one batch: the mechanism on the stand-in with each seed's noise (a
    throwaway ledger; module-level, as the mechanisms are, so that process pools can run it)."""
    mechanism, stand_in, kwargs, seeds = job
    with progress_scope(False):  # the caller's bar counts the replicates
        return np.stack(
            [
                mechanism(stand_in, rng=np.random.default_rng(seed), **kwargs).counts
                for seed in seeds
            ]
        )


def _seed_sequence(random_state: Any) -> np.random.SeedSequence:
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    return np.random.SeedSequence(check_int("random_state", random_state, minimum=0))


def _noise_intervals(
    release: CensusReleaseFields, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """M_H: x̂ ± q per level, q the smallest integer with P(|Z| ≤ q) ≥ confidence for the
    level's noise Z (exact pmf)."""
    L = release.hierarchy.n_levels
    half = np.empty(L, dtype=np.int64)
    for lev in range(L):
        half[lev] = _symmetric_quantile(release, lev, confidence)
    q = half[release.hierarchy.level][:, None]
    return release.counts - q, release.counts + q


def _symmetric_quantile(release: CensusReleaseFields, lev: int, confidence: float) -> int:
    """Smallest q ≥ 0 with P(|Z| ≤ q) ≥ confidence for the counts noise of level ``lev``."""
    share = release.shares[lev]
    if release.rho is None:
        eps = release.epsilon * share

        def pmf(k: np.ndarray) -> np.ndarray:
            return discrete_laplace_pmf(k, eps, sensitivity=2)

        spread = 2.0 / eps
    else:
        sigma = math.sqrt(2.0) / math.sqrt(2.0 * release.rho * share)

        def pmf(k: np.ndarray) -> np.ndarray:
            return discrete_gaussian_pmf(k, sigma)

        spread = sigma
    top = max(8, math.ceil(spread) * 4)
    while True:  # widen until the central mass reaches the confidence
        k = np.arange(0, top + 1)
        mass = pmf(k)
        central = np.cumsum(np.where(k == 0, mass, 2 * mass))
        hit = np.flatnonzero(central >= confidence)
        if hit.size:
            return int(hit[0])
        top *= 2
