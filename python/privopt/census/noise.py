"""The one place where the census mechanisms draw noise and spend privacy budget.

Two noises, both exact integer samplers of :mod:`privopt.dp`:

- ``"geometric"`` (the paper's, spec 003 §1.4): :func:`privopt.dp.sample_discrete_laplace`,
  two-sided geometric ``P(k) ∝ exp(−ε_ℓ|k|/Δ_ℓ)``, the paper's ``Geom(λ)`` with scale
  ``λ_ℓ = Δ_ℓ/ε_ℓ``, Δ_ℓ the ℓ1-sensitivity of level ℓ's measurement; ε-DP (pure).
- ``"gaussian"`` (as the 2020 U.S. Census TopDown measures):
  :func:`privopt.dp.sample_discrete_gaussian`, ``P(k) ∝ exp(−k²/(2σ_ℓ²))`` with
  ``σ_ℓ = Δ₂_ℓ/√(2ρ_ℓ)``, Δ₂_ℓ the ℓ2-sensitivity; each level is ρ_ℓ-zCDP (Canonne, Kamath &
  Steinke 2020, Thm 14) and the levels compose to ρ = Σ ρ_ℓ.

The budget (ε or ρ) is split over the L levels by ``shares`` (evenly by default): each level
partitions the groups, so a level is one measurement of the whole data (parallel composition
inside a level, sequential across levels, Thm 1).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from privopt._progress import progress_bar
from privopt._validation import check_epsilon, check_finite_array, check_positive
from privopt.dp import (
    GeneratorSource,
    PlannedSpend,
    PrivacyAccountant,
    SecureSource,
    as_random_source,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from privopt.dp.calibration import DEFAULT_CONVERSION_DELTA, zcdp_epsilon
from privopt.errors import InvalidInput

if TYPE_CHECKING:
    from privopt.census.hierarchy import CensusCounts

__all__ = [
    "NOISES",
    "DataFingerprint",
    "LevelBudget",
    "Measurements",
    "check_accountant",
    "charge_levels",
    "draw_level_noise",
    "draw_budget_noise",
    "level_budget",
]

#: The census noises: the paper's double geometric under ε-DP, the discrete Gaussian under zCDP.
NOISES = ("geometric", "gaussian")


@dataclass(frozen=True)
class LevelBudget:
    """The privacy budget of one census measurement and how it is split over the levels.

    Attributes
    ----------
    noise : ``"geometric"`` (budget ε, ε-DP) or ``"gaussian"`` (budget ρ, ρ-zCDP).
    total : ε or ρ of the whole measurement (> 0).
    shares : (L,) fraction of the budget spent on each level, top level first; each > 0, sum 1.
    conversion_delta : δ at which a ρ-zCDP budget is stated as (ε, δ)-DP.
    """

    noise: str
    total: float
    shares: tuple[float, ...]
    conversion_delta: float = DEFAULT_CONVERSION_DELTA

    @property
    def per_level(self) -> np.ndarray:
        """(L,) ε_ℓ or ρ_ℓ (an even split divides, as the paper's ε/L does, bit for bit)."""
        if self.even:
            return np.full(len(self.shares), self.total / len(self.shares))
        return self.total * np.asarray(self.shares, dtype=np.float64)

    @property
    def even(self) -> bool:
        """The budget is split evenly over the levels (the paper's split)."""
        return all(math.isclose(s, 1.0 / len(self.shares), rel_tol=1e-12) for s in self.shares)

    @property
    def epsilon(self) -> float:
        """ε of the guarantee: the budget itself (geometric) or the (ε, δ)-DP conversion of ρ at
        :attr:`conversion_delta` (Gaussian; Bun & Steinke 2016, Prop. 1.3)."""
        if self.noise == "geometric":
            return self.total
        return zcdp_epsilon(self.total, self.conversion_delta)

    def noise_scale(self, sensitivity: np.ndarray) -> np.ndarray:
        """(L,) noise scale per level: λ_ℓ = Δ_ℓ/ε_ℓ (geometric, ``sensitivity`` in ℓ1) or
        σ_ℓ = Δ₂_ℓ/√(2ρ_ℓ) (Gaussian, ``sensitivity`` in ℓ2)."""
        if self.noise == "geometric":
            if self.even:  # the paper's λ = Δ·L/ε, bit for bit
                return sensitivity * len(self.shares) / self.total
            return sensitivity / self.per_level
        return sensitivity / np.sqrt(2.0 * self.per_level)

    def standard_deviation(self, sensitivity: np.ndarray) -> np.ndarray:
        """(L,) standard deviation of one noise draw per level (counts): √2·λ_ℓ for the double
        geometric (large λ), σ_ℓ for the discrete Gaussian (σ ≥ 1)."""
        scale = self.noise_scale(sensitivity)
        return math.sqrt(2.0) * scale if self.noise == "geometric" else scale


def level_budget(
    epsilon: Any,
    rho: Any,
    shares: Any,
    n_levels: int,
    *,
    conversion_delta: float = DEFAULT_CONVERSION_DELTA,
) -> LevelBudget:
    """The :class:`LevelBudget` of a census call: ε (geometric noise) or ρ (Gaussian noise),
    exactly one of them, and the per-level ``shares`` (None: even). Bad values raise
    InvalidInput naming the argument."""
    if (epsilon is None) == (rho is None):
        raise InvalidInput(
            "give exactly one of epsilon (geometric noise, epsilon-DP) and rho (discrete "
            f"Gaussian noise, rho-zCDP), got epsilon={epsilon!r}, rho={rho!r}"
        )
    if rho is None:
        noise, total = "geometric", check_epsilon(epsilon)
    else:
        noise, total = "gaussian", check_positive("rho", rho)
    return LevelBudget(noise, total, check_shares(shares, n_levels), conversion_delta)


def check_shares(shares: Any, n_levels: int) -> tuple[float, ...]:
    """``shares`` as L fractions > 0 summing to 1 (to 1e-9); None gives the even split."""
    if shares is None:
        return (1.0 / n_levels,) * n_levels
    arr = check_finite_array("shares", shares, ndim=1)
    if arr.shape != (n_levels,):
        raise InvalidInput(
            f"shares must hold one fraction per level ({n_levels}), got shape {arr.shape}"
        )
    if np.any(arr <= 0) or abs(float(arr.sum()) - 1.0) > 1e-9:
        raise InvalidInput(
            f"shares must be fractions > 0 summing to 1, got {[float(v) for v in arr]}"
        )
    return tuple(float(v) for v in arr / arr.sum())


@dataclass(frozen=True)
class DataFingerprint:
    """The public facts of the dataset a set of measurements was drawn from.

    Post-processing reads the hierarchy, G and N from the data it is given; measurements of
    another dataset (another hierarchy of the same shape, another G) would be silently
    post-processed against the wrong facts, so every :class:`Measurements` carries this and the
    mechanisms reject a mismatch.

    Attributes
    ----------
    hierarchy : SHA-256 of the region tree (parents, names, level names).
    G : public total number of groups.
    N : largest group size.
    level_sizes : |R_ℓ| per level.
    """

    hierarchy: str
    G: int
    N: int
    level_sizes: tuple[int, ...]

    @classmethod
    def of(cls, data: CensusCounts) -> DataFingerprint:
        """The fingerprint of ``data`` (a :class:`~privopt.census.CensusCounts`)."""
        h = data.hierarchy
        return cls(h.fingerprint, data.G, data.N, tuple(int(k) for k in h.level_sizes))

    def check(self, data: CensusCounts) -> None:
        """Raise InvalidInput naming the first fact of ``data`` that differs."""
        other = DataFingerprint.of(data)
        for name in ("hierarchy", "G", "N", "level_sizes"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                what = "a different hierarchy" if name == "hierarchy" else f"{name} = {mine}"
                raise InvalidInput(
                    f"measurements were made on {what}, but data has "
                    f"{'another' if name == 'hierarchy' else theirs}: post-process measurements "
                    f"only with the data they measured"
                )


@dataclass(eq=False)
class Measurements:
    """Noisy measurements of one kind, kept apart from any public output.

    Attributes
    ----------
    kind : ``"counts"`` (n^r + Geom(2L/ε)), ``"cumulative"`` (⊕n^r + Geom(L/ε)) or ``"chain"``
        (level-wise chain cumulative counts).
    noisy : int64 array, (R, N) for counts/cumulative; (R·N,) in chain order for ``"chain"``.
    epsilon : total ε of the guarantee (geometric noise: the ε spent; Gaussian noise: the
        (ε, δ)-DP conversion of ρ).
    scale : (L,) noise scale per level: λ_ℓ (geometric) or σ_ℓ (Gaussian).
    sensitivity : (L,) sensitivity per level: ℓ1 Δ_ℓ (geometric) or ℓ2 Δ₂_ℓ (Gaussian).
    ledger : the accountant's ledger entries of the spends.
    info : extra facts (``chain_noise_scale`` of chain measurements).
    source : :class:`DataFingerprint` of the data measured; the mechanisms accept the
        measurements only with data of the same fingerprint.
    budget : the :class:`LevelBudget` spent (None: geometric noise, ``epsilon`` split evenly).
    """

    kind: str
    noisy: np.ndarray
    epsilon: float
    scale: np.ndarray
    sensitivity: np.ndarray
    ledger: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    source: DataFingerprint | None = None
    budget: LevelBudget | None = None

    @property
    def level_budget(self) -> LevelBudget:
        """The budget spent (the even geometric split at :attr:`epsilon` when none is recorded)."""
        if self.budget is not None:
            return self.budget
        L = len(self.scale)
        return LevelBudget("geometric", float(self.epsilon), (1.0 / L,) * L)

    @property
    def window_scale(self) -> np.ndarray:
        """(L,) the scale λ whose double geometric has the noise's variance (2λ² = σ² for the
        Gaussian): the post-processing sizes its first value windows with it."""
        scale = np.asarray(self.scale, dtype=np.float64)
        return scale if self.level_budget.noise == "geometric" else scale / math.sqrt(2.0)


#: Draws per task when noise is drawn on several threads (the privopt.dp samplers release the
#: GIL); levels with fewer draws in all are drawn in one stream, as before.
NOISE_CHUNK = 1 << 20


def draw_level_noise(
    shape_per_level: list[tuple[int, ...]], epsilon: float, sensitivity: np.ndarray, rng: Any
) -> list[np.ndarray]:
    """One int64 noise array per level: discrete Laplace with ε_level = ε/L and the level's Δ.

    Above :data:`NOISE_CHUNK` draws in all, the draws are split into fixed chunks drawn on one
    thread per core: from the OS CSPRNG (thread-safe) or, for a seeded Generator, from child
    generators spawned in chunk order — so a seed gives the same noise on any machine.
    """
    L = len(shape_per_level)

    def sample(lev: int, count: int, src: Any) -> np.ndarray:
        return sample_discrete_laplace(
            epsilon / L, count, sensitivity=int(sensitivity[lev]), rng=src
        )

    return _draw_levels(shape_per_level, sample, rng)


def draw_budget_noise(
    shape_per_level: list[tuple[int, ...]],
    budget: LevelBudget,
    sensitivity: np.ndarray,
    rng: Any,
) -> list[np.ndarray]:
    """One int64 noise array per level for ``budget``: discrete Laplace with ε_ℓ and the ℓ1
    sensitivity Δ_ℓ (an integer), or discrete Gaussian with σ_ℓ = Δ₂_ℓ/√(2ρ_ℓ); chunked and
    threaded as :func:`draw_level_noise`, whose noise it equals for an even geometric budget."""
    per_level = budget.per_level
    if budget.noise == "geometric":

        def sample(lev: int, count: int, src: Any) -> np.ndarray:
            return sample_discrete_laplace(
                float(per_level[lev]), count, sensitivity=int(sensitivity[lev]), rng=src
            )

    else:
        sigma = budget.noise_scale(np.asarray(sensitivity, dtype=np.float64))

        def sample(lev: int, count: int, src: Any) -> np.ndarray:
            return sample_discrete_gaussian(float(sigma[lev]), count, rng=src)

    return _draw_levels(shape_per_level, sample, rng)


def _draw_levels(
    shape_per_level: list[tuple[int, ...]],
    sample: Callable[[int, int, Any], np.ndarray],
    rng: Any,
) -> list[np.ndarray]:
    """``sample(level, count, source)`` for every level, in chunks (as :func:`draw_level_noise`)."""
    source = as_random_source(rng)
    sizes = [int(np.prod(shape)) for shape in shape_per_level]
    jobs = [  # (level, start, stop)
        (lev, a, min(a + NOISE_CHUNK, n))
        for lev, n in enumerate(sizes)
        for a in range(0, n, NOISE_CHUNK)
    ]
    sources = _chunk_sources(source, len(jobs)) if sum(sizes) > NOISE_CHUNK else None
    out = [np.empty(n, dtype=np.int64) for n in sizes]

    def draw(job: int) -> int:
        lev, a, b = jobs[job]
        src = source if sources is None else sources[job]
        out[lev][a:b] = sample(lev, b - a, src)
        return b - a

    with progress_bar(total=sum(sizes), desc="census noise", unit="draw") as bar:
        if sources is None:
            for job in range(len(jobs)):
                bar.update(draw(job))
        else:
            with ThreadPoolExecutor(max_workers=min(os.cpu_count() or 1, len(jobs))) as pool:
                for drawn in pool.map(draw, range(len(jobs))):
                    bar.update(drawn)
    return [o.reshape(shape) for o, shape in zip(out, shape_per_level, strict=True)]


def _chunk_sources(source: Any, n: int) -> list | None:
    """Independent sources for n chunks, or None when ``source`` cannot be split safely."""
    if isinstance(source, SecureSource):
        return [source] * n
    if isinstance(source, GeneratorSource) and hasattr(source.generator, "spawn"):
        return [GeneratorSource(g) for g in source.generator.spawn(n)]
    return None


def check_accountant(accountant: Any) -> Any:
    """``accountant`` as a :class:`privopt.dp.PrivacyAccountant` (a new, unlimited one for None);
    anything else is refused with InvalidInput before any budget is spent or noise drawn."""
    if accountant is None:
        return PrivacyAccountant()
    if not isinstance(accountant, PrivacyAccountant):
        raise InvalidInput(
            f"accountant must be a privopt.dp.PrivacyAccountant or None, got "
            f"{type(accountant).__name__} {accountant!r:.40}"
        )
    return accountant


@contextmanager
def charge_levels(
    accountant: Any,
    budget: float | LevelBudget,
    sensitivity: np.ndarray,
    *,
    label: str,
    mechanism: str,
    seeded: bool,
) -> Iterator[list]:
    """Charge each level its share of ``budget`` on ``accountant`` (a new one if None), all or
    nothing: ε_ℓ for geometric noise, ρ_ℓ (a zCDP spend) for Gaussian noise; a plain ε is split
    evenly.

    The whole plan (one spend per level) is checked against the budget before anything is
    recorded or drawn, then recorded at once; the block (the noise draws) runs inside the
    accountant's transaction, so an exception in it leaves the ledger as it was. ``seeded``:
    the noise comes from a seed (recorded in every entry). Yields the new ledger entries.
    """
    acct = check_accountant(accountant)
    L = len(sensitivity)
    if not isinstance(budget, LevelBudget):
        budget = LevelBudget("geometric", float(budget), (1.0 / L,) * L)
    per_level = budget.per_level
    plan = [
        PlannedSpend(
            float(per_level[lev]) if budget.noise == "geometric" else 0.0,
            label=f"{label} level {lev + 1}/{L}",
            mechanism=mechanism,
            sensitivity=float(sensitivity[lev]),
            seeded=seeded,
            rho=float(per_level[lev]) if budget.noise == "gaussian" else 0.0,
        )
        for lev in range(L)
    ]
    with acct.transaction(plan):
        yield acct.spend_all(plan)
