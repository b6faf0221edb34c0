"""The one place where the census mechanisms draw noise and spend privacy budget.

Every draw comes from :func:`privopt.dp.sample_discrete_laplace` (two-sided geometric,
``P(k) ∝ exp(−ε|k|/Δ)``), i.e. the paper's ``Geom(λ)`` with scale ``λ = Δ/ε_level``
(spec 003 §1.4). The budget ε is split evenly over the L levels (each level partitions the
groups: parallel composition inside a level, sequential across levels, Thm 1).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from privopt._progress import progress_bar
from privopt.dp import (
    GeneratorSource,
    PlannedSpend,
    PrivacyAccountant,
    SecureSource,
    as_random_source,
    sample_discrete_laplace,
)
from privopt.errors import InvalidInput

if TYPE_CHECKING:
    from privopt.census.hierarchy import CensusCounts

__all__ = [
    "DataFingerprint",
    "Measurements",
    "check_accountant",
    "charge_levels",
    "draw_level_noise",
]


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
        (level-wise chain cumulative counts, spec 003 §3.4).
    noisy : int64 array, (R, N) for counts/cumulative; (R·N,) in chain order for ``"chain"``.
    epsilon : total ε spent by these measurements.
    scale : (L,) noise scale λ per level.
    sensitivity : (L,) L1 sensitivity Δ per level.
    ledger : the accountant's ledger entries of the spends.
    info : extra facts (``chain_noise_scale`` of chain measurements).
    source : :class:`DataFingerprint` of the data measured; the mechanisms accept the
        measurements only with data of the same fingerprint.
    """

    kind: str
    noisy: np.ndarray
    epsilon: float
    scale: np.ndarray
    sensitivity: np.ndarray
    ledger: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    source: DataFingerprint | None = None


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
    source = as_random_source(rng)
    L = len(shape_per_level)
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
        out[lev][a:b] = sample_discrete_laplace(
            epsilon / L, b - a, sensitivity=int(sensitivity[lev]), rng=src
        )
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
    epsilon: float,
    sensitivity: np.ndarray,
    *,
    label: str,
    mechanism: str,
    seeded: bool,
) -> Iterator[list]:
    """Charge ε/L per level on ``accountant`` (a new one if None), all or nothing.

    The whole plan (one spend per level) is checked against the budget before anything is
    recorded or drawn, then recorded at once; the block (the noise draws) runs inside the
    accountant's transaction, so an exception in it leaves the ledger as it was. ``seeded``:
    the noise comes from a seed (recorded in every entry). Yields the new ledger entries.
    """
    acct = check_accountant(accountant)
    L = len(sensitivity)
    plan = [
        PlannedSpend(
            epsilon / L,
            label=f"{label} level {lev + 1}/{L}",
            mechanism=mechanism,
            sensitivity=float(sensitivity[lev]),
            seeded=seeded,
        )
        for lev in range(L)
    ]
    with acct.transaction(plan):
        yield acct.spend_all(plan)
