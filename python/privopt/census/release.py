"""The release object returned by every census mechanism, its checks and its error metrics."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from privopt import _optional
from privopt._atomic import atomic_file
from privopt._validation import (
    check_bool,
    check_epsilon,
    check_finite_array,
    check_int,
    finite_result,
    numeric_array,
)
from privopt.census.hierarchy import CensusCounts, Hierarchy
from privopt.dp.accountant import LedgerEntry
from privopt.errors import InvalidInput, PrivacyViolation
from privopt.release import Guarantee, Release, json_number_back
from privopt.report import axes_or_new

__all__ = ["CensusRelease", "consistency_violations", "l1_per_level"]


def _region_table(name: str, hierarchy: Hierarchy, value: Any) -> np.ndarray:
    """A finite real (R, N) table, one row per region of ``hierarchy``."""
    if not isinstance(hierarchy, Hierarchy):
        raise InvalidInput(f"hierarchy must be a Hierarchy, got {type(hierarchy).__name__}")
    raw = numeric_array(name, value)
    arr = check_finite_array(
        name, raw, dtype=np.int64 if raw.dtype.kind in "iu" else np.float64, ndim=2
    )
    if arr.shape[0] != hierarchy.n_regions:
        raise InvalidInput(
            f"{name} must have one row per region ({hierarchy.n_regions}), got shape {arr.shape}"
        )
    return arr


def consistency_violations(hierarchy: Hierarchy, counts: np.ndarray) -> int:
    """#CV: pairs (non-leaf r, s) with ``n̂_s^r ≠ Σ_c n̂_s^c`` (spec 003 §5 resolution)."""
    counts = _region_table("counts", hierarchy, counts)
    sums = np.zeros_like(counts)
    np.add.at(sums, hierarchy.parent[1:], counts[1:])
    internal = np.diff(hierarchy.child_ptr) > 0
    return int(np.count_nonzero(sums[internal] != counts[internal]))


@finite_result(cause="counts near the float64 limit")
def l1_per_level(hierarchy: Hierarchy, released: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """L1 error per level, ``Σ_{r∈R_ℓ} ||n^r − n̂^r||_1`` (Table 7), shape (L,)."""
    released = _region_table("released", hierarchy, released)
    truth = _region_table("truth", hierarchy, truth)
    if released.shape != truth.shape:
        raise InvalidInput(f"released {released.shape} and truth {truth.shape} differ in shape")
    err = np.abs(released.astype(np.float64) - truth).sum(axis=1)
    return np.bincount(hierarchy.level, weights=err, minlength=hierarchy.n_levels)


#: Who the census guarantee protects, in plain words (spec 003 §1.4).
PROTECTS = (
    "one individual added or removed, which moves one household between sizes k and k±1 "
    "(the number of households G is public)"
)


class CensusRelease(Release):
    """A differentially private release of group-size counts (the census mechanisms' release).

    Attributes
    ----------
    method : the census mechanism that made it (``"M_H"``, ``"M_H^r"``, ``"M_H^dp"``,
        ``"M_c^r"``, ``"M_c^dp"``, ``"M_c^ch"``, ``"TopDown"``); the release's
        :attr:`mechanism` is ``"census"`` whatever the method.
    hierarchy : the (public) region tree.
    counts : (R, N) int64 (M_H releases raw noisy counts, which may be negative) — the public
        output, ``counts[r, s-1]`` groups of size s in region r.
    G : public total number of groups.
    epsilon : ε spent (the budget charged to the ledger).
    guarantee_details : one line of plain words: the privacy notion, neighbours, sensitivity
        and noise scale; a seeded release says so in it.
    ledger : privacy-ledger entries (``privopt.dp.LedgerEntry``) of the noise draws.
    seeded : the noise came from a seed (reproducible by anyone who knows it): for testing only.
    timings : seconds per phase (``noise``, ``postprocess``, ``total``).
    info : solver facts (DP cost, window rounds, certificate, QP solver, …).
    measurements : the noisy measurements (:class:`~privopt.census.noise.Measurements`), kept
        apart from ``counts``: noisy intermediate values are not part of the published output,
        so :meth:`save` leaves them out (None after :func:`privopt.load`).

    The release contract (:class:`privopt.release.Release`): :attr:`guarantee` is ε-DP;
    :attr:`status` and :attr:`relative_gap` are the post-processing certificate of the DP
    mechanisms (None for M_H, the QP baselines and TopDown, which prove nothing);
    :meth:`verify` re-checks the counts and the ledger; :meth:`save` writes ``release.json`` and
    ``data.npz`` (counts, region parents and names).
    """

    mechanism: ClassVar[str] = "census"

    def __init__(
        self,
        method: str,
        hierarchy: Hierarchy,
        counts: np.ndarray,
        G: int,
        epsilon: float,
        guarantee_details: str = "",
        ledger: Sequence[LedgerEntry] = (),
        seeded: bool = False,
        timings: Mapping[str, float] | None = None,
        info: Mapping[str, Any] | None = None,
        measurements: Any = None,
    ) -> None:
        if not isinstance(method, str) or not method:
            raise InvalidInput(f"method must name a census mechanism, got {method!r}")
        self.method = method
        self.hierarchy = hierarchy
        self.counts = _region_table("counts", hierarchy, counts)
        self.G = check_int("G", G, minimum=0)
        self.epsilon = check_epsilon(epsilon)
        if not isinstance(guarantee_details, str):
            raise InvalidInput(f"guarantee_details must be a string, got {guarantee_details!r}")
        self.guarantee_details = guarantee_details
        self.ledger = list(ledger)
        if not all(isinstance(e, LedgerEntry) for e in self.ledger):
            raise InvalidInput("ledger must hold privopt.dp.LedgerEntry records")
        self.seeded = check_bool("seeded", seeded)
        self._timings = {str(k): float(v) for k, v in (timings or {}).items()}
        self.info = dict(info or {})
        self.measurements = measurements

    # ------------------------------------------------------------------ the release contract
    @property
    def guarantee(self) -> Guarantee:
        """ε-DP for one individual added or removed. With the paper's chain noise scale
        (M_c^ch, ``chain_noise_scale="paper"``) a level of |R_ℓ| regions spends |R_ℓ|·ε/L, so
        the ε stated is ε·Σ_ℓ|R_ℓ|/L, not the ε requested."""
        epsilon, protects = self.epsilon, PROTECTS
        if self.info.get("chain_noise_scale") == "paper":
            sizes = self.hierarchy.level_sizes
            epsilon = self.epsilon * float(sizes.sum()) / len(sizes)
            protects += (
                f"; the chain noise has the paper's scale, which gives this epsilon, not the "
                f"{self.epsilon:g} requested, when a level has several regions"
            )
        return Guarantee("epsilon-DP", {"epsilon": float(epsilon)}, protects, self.seeded)

    @property
    def status(self) -> str | None:
        """``"optimal"`` for the DP mechanisms (certified exact post-processing), None for
        M_H, the QP baselines and TopDown, which optimize nothing they can prove."""
        status = self.info.get("status")
        return None if status is None else str(status)

    @property
    def relative_gap(self) -> float | None:
        """The proven relative gap of the post-processing (0 for the DP mechanisms), or None."""
        gap = self.info.get("relative_gap")
        return None if gap is None else float(gap)

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per phase: ``noise``, ``postprocess`` and ``total``."""
        return self._timings

    def describe(self) -> str:
        """What was released, in one line."""
        h = self.hierarchy
        return (
            f"census counts of {_count(h.n_regions)} regions in {h.n_levels} levels × sizes "
            f"1..{self.counts.shape[1]}, G = {_count(self.G)} groups, method {self.method}"
        )

    def verify(self) -> CensusRelease:
        """Raise :class:`~privopt.errors.PrivacyViolation` unless the counts are integral,
        non-negative, consistent and faithful, and the ledger (when there is one) accounts for
        ε and for seeded noise as the release states; returns self."""
        failed = [k for k, ok in self.check().items() if not ok]
        if failed:
            raise PrivacyViolation(
                f"{self.method} release is not {', '.join(failed)}"
                f" ({self.violations()} consistency violations)"
            )
        if self.ledger:
            spent = math.fsum(e.epsilon for e in self.ledger)
            if not math.isclose(spent, self.epsilon, rel_tol=1e-9):
                raise PrivacyViolation(
                    f"{self.method} release states epsilon = {self.epsilon:g}, its ledger "
                    f"records {spent:g}"
                )
            if any(e.seeded for e in self.ledger) != self.seeded:
                raise PrivacyViolation(
                    f"{self.method} release says seeded = {self.seeded}, its ledger says otherwise"
                )
        return self

    def _summary_fields(self) -> dict[str, Any]:
        h = self.hierarchy
        return {
            "method": self.method,
            "epsilon": self.epsilon,
            "seeded": self.seeded,
            "regions": h.n_regions,
            "levels": h.n_levels,
            "max_size": int(self.counts.shape[1]),
            "groups": self.G,
            "consistency_violations": self.violations(),
        }

    def plot(self, ax: Any = None) -> Any:
        """Released households by size: the root (all regions) and the largest regions of the
        first level below it, one line each."""
        ax = axes_or_new(ax, figsize=(6, 4))
        h, sizes = self.hierarchy, np.arange(1, self.counts.shape[1] + 1)
        ax.plot(sizes, self.counts[0], "o-", color="black", lw=2, label=f"{h.names[0]} (total)")
        if h.n_levels > 1:
            level = h.level_slice(1)
            totals = self.counts[level].sum(axis=1)
            for r in level.start + np.argsort(-totals, kind="stable")[:5]:
                ax.plot(sizes, self.counts[r], ".-", lw=1, label=str(h.names[r]))
        ax.set_xlabel("household size (persons)")
        ax.set_ylabel("released number of households")
        ax.set_title(f"Census release by household size ({self.method}, ε = {self.epsilon:g})")
        ax.legend(fontsize="small")
        return ax

    def _state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        h = self.hierarchy
        meta = {
            "method": self.method,
            "G": self.G,
            "epsilon": self.epsilon,
            "seeded": self.seeded,
            "guarantee_details": self.guarantee_details,
            "level_names": list(h.level_names),
            "ledger": [dataclasses.asdict(e) for e in self.ledger],
            "timings": self.timings,
            "info": self.info,
        }
        data = {
            "counts": self.counts,
            "parent": h.parent,
            "region_names": np.asarray([str(x) for x in h.names], dtype=str),
        }
        return meta, data

    @classmethod
    def _from_state(cls, meta: dict[str, Any], data: dict[str, Any]) -> CensusRelease:
        for key in ("counts", "parent", "region_names"):
            if key not in data:
                raise InvalidInput(f"the saved census release has no {key!r} array")
        parent = data["parent"]
        hierarchy = Hierarchy.from_parents(
            parent, data["region_names"].tolist(), meta.get("level_names")
        )
        if not np.array_equal(hierarchy.parent, parent):
            raise InvalidInput("the saved census regions are not in breadth-first order")
        return cls(
            method=meta.get("method", ""),
            hierarchy=hierarchy,
            counts=data["counts"],
            G=meta.get("G", -1),
            epsilon=json_number_back(meta.get("epsilon")),
            guarantee_details=meta.get("guarantee_details", ""),
            ledger=[_ledger_entry(e) for e in meta.get("ledger", [])],
            seeded=meta.get("seeded", False),
            timings={k: json_number_back(v) for k, v in meta.get("timings", {}).items()},
            info=meta.get("info", {}),
        )

    def __post_init__(self) -> None:
        # A flag given as text ("no") would read as true: refused rather than guessed.
        self.seeded = check_bool("seeded", self.seeded)

    # ------------------------------------------------------------------ checks
    def check(self) -> dict[str, bool]:
        """The four PGSR properties (spec 003 §1.3) as booleans (privacy is by construction)."""
        c = self.counts
        integral = bool(c.dtype.kind in "iu" or np.all(c == np.round(c)))
        # Level sums exactly: Python ints for integer counts (no float rounding above 2^53).
        sums = [
            int(c[self.hierarchy.level_slice(lev)].sum(dtype=object))
            if c.dtype.kind in "iu"
            else float(c[self.hierarchy.level_slice(lev)].sum())
            for lev in range(self.hierarchy.n_levels)
        ]
        return {
            "integral": integral,
            "nonnegative": bool(np.all(c >= 0)),
            "consistent": consistency_violations(self.hierarchy, c) == 0,
            "faithful": all(s == self.G for s in sums),
        }

    def violations(self) -> int:
        """Number of consistency violations #CV."""
        return consistency_violations(self.hierarchy, self.counts)

    def l1_per_level(self, truth: CensusCounts | np.ndarray) -> np.ndarray:
        """L1 error per level against the true counts (evaluation only), shape (L,)."""
        t = truth.counts if isinstance(truth, CensusCounts) else np.asarray(truth)
        if t.shape != self.counts.shape:
            raise InvalidInput(f"truth must have shape {self.counts.shape}, got {t.shape}")
        return l1_per_level(self.hierarchy, self.counts, t)

    # ------------------------------------------------------------------ output
    def to_frame(self):
        """Long pandas DataFrame: region, level, size, count (public output only)."""
        pd = _optional.pandas()

        R, N = self.counts.shape
        return pd.DataFrame(
            {
                "region": np.repeat(self.hierarchy.names, N),
                "level": np.repeat(
                    np.asarray(self.hierarchy.level_names, dtype=object)[self.hierarchy.level], N
                ),
                "size": np.tile(np.arange(1, N + 1), R),
                "count": self.counts.ravel(),
            }
        )

    def save(self, path: str | Path) -> Path:
        """Write the release as a directory (``release.json`` and ``data.npz``), atomically;
        :func:`privopt.load` reads it back. The counts table alone: :meth:`write_table`."""
        if Path(path).suffix in (".csv", ".parquet"):
            raise InvalidInput(
                f"save writes the release as a directory, not {Path(path).name!r}: "
                f"write_table(path) writes the counts table as CSV or Parquet"
            )
        return super().save(path)

    def write_table(self, path: str | Path) -> Path:
        """Write the released counts as a long table (region, level, size, count): CSV
        (``.csv``) or Parquet (``.parquet``, needs pyarrow), atomically (temporary file beside
        it, then renamed). Returns the path."""
        p = Path(path)
        if p.suffix not in (".csv", ".parquet"):
            raise InvalidInput(f"path must end in .csv or .parquet, got {p.name!r}")
        pa = _optional.pyarrow()
        with atomic_file(p) as tmp:
            if pa is not None:  # pyarrow: C++ writers, names stored once (dictionary)
                self._write_arrow(pa, self._arrow_table(pa), str(tmp), p.suffix)
            elif p.suffix == ".parquet":
                raise InvalidInput(f"writing {p.name} needs pyarrow (pip install privopt[census])")
            else:
                self.to_frame().to_csv(tmp, index=False)
        return p

    def _arrow_table(self, pa: Any) -> Any:
        """The long table of :meth:`to_frame` as a Table of the ``pyarrow`` module ``pa``."""
        R, N = self.counts.shape
        h = self.hierarchy
        return pa.table(
            {
                "region": pa.DictionaryArray.from_arrays(
                    pa.array(np.repeat(np.arange(R, dtype=np.int32), N)),
                    pa.array([str(x) for x in h.names]),
                ),
                "level": pa.DictionaryArray.from_arrays(
                    pa.array(np.repeat(h.level.astype(np.int32), N)),
                    pa.array([str(x) for x in h.level_names]),
                ),
                "size": pa.array(np.tile(np.arange(1, N + 1, dtype=np.int64), R)),
                "count": pa.array(self.counts.ravel()),
            }
        )

    @staticmethod
    def _write_arrow(pa: Any, table: Any, path: str, suffix: str) -> None:
        if suffix == ".parquet":
            table = table.cast(_plain_schema(pa, table))  # readers get plain strings back
            pa.parquet.write_table(table, path)  # it dictionary-encodes the repeated names itself
            return
        pc = pa.csv
        # Unquoted fields and header, as pandas writes them, unless a name needs quotes.
        names = [*table.column("region").chunk(0).dictionary.to_pylist()]
        names += table.column("level").chunk(0).dictionary.to_pylist()
        plain = not any(any(c in str(x) for c in ',"\r\n') for x in names)
        schema = _plain_schema(pa, table)
        options = pc.WriteOptions(include_header=False, quoting_style="none" if plain else "needed")
        with open(path, "wb") as f:
            f.write((",".join(table.column_names) + "\n").encode())
            # The names become plain strings one block at a time (not 10^7 strings at once).
            for start in range(0, table.num_rows, CSV_BLOCK_ROWS):
                block = table.slice(start, CSV_BLOCK_ROWS).cast(schema)
                pc.write_csv(block, f, write_options=options)


def _count(n: int) -> str:
    """An integer with thin spaces between thousands (plain words in one-line descriptions)."""
    return f"{n:,}".replace(",", " ")


def _ledger_entry(saved: Any) -> LedgerEntry:
    """A :class:`~privopt.dp.LedgerEntry` from its saved JSON object."""
    names = {f.name for f in dataclasses.fields(LedgerEntry)}
    if not isinstance(saved, dict) or not set(saved) <= names or "label" not in saved:
        raise InvalidInput(f"a saved ledger entry must be an object with fields {sorted(names)}")
    return LedgerEntry(**saved)


#: Rows written per block by the pyarrow CSV writer.
CSV_BLOCK_ROWS = 1 << 20


def _plain_schema(pa: Any, table: Any) -> Any:
    """The schema of ``table`` with dictionary columns as plain strings (for the CSV writer)."""
    return pa.schema(
        [
            pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
            for f in table.schema
        ]
    )
