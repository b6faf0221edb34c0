"""The one place where the census mechanisms draw noise and spend privacy budget.

Every draw comes from :func:`privopt.dp.sample_discrete_laplace` (two-sided geometric,
``P(k) ∝ exp(−ε|k|/Δ)``), i.e. the paper's ``Geom(λ)`` with scale ``λ = Δ/ε_level``
(spec 003 §1.4). The budget ε is split evenly over the L levels (each level partitions the
groups: parallel composition inside a level, sequential across levels, Thm 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Measurements", "draw_level_noise", "spend_levels"]


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
    """

    kind: str
    noisy: np.ndarray
    epsilon: float
    scale: np.ndarray
    sensitivity: np.ndarray
    ledger: list = field(default_factory=list)
    info: dict = field(default_factory=dict)


def draw_level_noise(
    shape_per_level: list[tuple[int, ...]], epsilon: float, sensitivity: np.ndarray, rng: Any
) -> list[np.ndarray]:
    """One int64 noise array per level: discrete Laplace with ε_level = ε/L and the level's Δ."""
    from privopt.dp import as_random_source, sample_discrete_laplace

    source = as_random_source(rng)
    L = len(shape_per_level)
    out = []
    for lev, shape in enumerate(shape_per_level):
        size = int(np.prod(shape))
        draws = sample_discrete_laplace(
            epsilon / L, size, sensitivity=int(sensitivity[lev]), rng=source
        )
        out.append(np.asarray(draws, dtype=np.int64).reshape(shape))
    return out


def spend_levels(
    accountant: Any, epsilon: float, sensitivity: np.ndarray, *, label: str, mechanism: str
) -> list:
    """Record ε/L per level on ``accountant`` (a new one if None); returns the new entries."""
    from privopt.dp import PrivacyAccountant

    acct = PrivacyAccountant() if accountant is None else accountant
    L = len(sensitivity)
    before = len(acct.entries)
    for lev in range(L):
        acct.spend(
            epsilon / L,
            label=f"{label} level {lev + 1}/{L}",
            mechanism=mechanism,
            sensitivity=float(sensitivity[lev]),
        )
    return list(acct.entries[before:])
