"""The release object returned by every census mechanism, its checks and its error metrics."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privopt._validation import check_bool, check_finite_array, finite_result, numeric_array
from privopt.census.hierarchy import CensusCounts, Hierarchy
from privopt.errors import InvalidInput, PrivacyViolation

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


@dataclass(eq=False)
class CensusRelease:
    """A differentially private release of group-size counts.

    Attributes
    ----------
    mechanism : name (``"M_H"``, ``"M_H^r"``, ``"M_H^dp"``, ``"M_c^r"``, ``"M_c^dp"``,
        ``"M_c^ch"``, ``"TopDown"``).
    hierarchy : the (public) region tree.
    counts : (R, N) int64 (float64 for M_H, which releases raw noisy counts may be negative) —
        the public output, ``counts[r, s-1]`` groups of size s in region r.
    G : public total.
    epsilon : ε spent.
    guarantee : one-line statement of the privacy guarantee (notion, neighbours, sensitivity);
        a seeded release says so in it.
    ledger : privacy-ledger entries (``privopt.dp.LedgerEntry``) of the noise draws.
    timings : seconds per phase (``noise``, ``postprocess``, ``total``).
    info : solver facts (DP cost, window rounds, certified exactness, …).
    measurements : the noisy measurements (:class:`~privopt.census.noise.Measurements`), kept
        apart from ``counts``; they are as private-safe as the output but not part of it.
    """

    mechanism: str
    hierarchy: Hierarchy
    counts: np.ndarray
    G: int
    epsilon: float
    guarantee: str
    ledger: list = field(default_factory=list)
    #: the noise came from a seed (reproducible by anyone who knows it): for testing only
    seeded: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    measurements: Any = field(default=None, repr=False)

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

    def verify(self) -> CensusRelease:
        """Raise :class:`~privopt.errors.PrivacyViolation` naming the failed properties unless the
        release is integral, non-negative, consistent and faithful; returns self."""
        failed = [k for k, ok in self.check().items() if not ok]
        if failed:
            raise PrivacyViolation(
                f"{self.mechanism} release is not {', '.join(failed)}"
                f" ({self.violations()} consistency violations)"
            )
        return self

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
        import pandas as pd

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
        """Write the released counts as CSV (``.csv``) or Parquet (``.parquet``, needs pyarrow),
        atomically (temporary file beside it, then renamed)."""
        from privopt._atomic import atomic_file

        p = Path(path)
        if p.suffix not in (".csv", ".parquet"):
            raise InvalidInput(f"path must end in .csv or .parquet, got {p.name!r}")
        with atomic_file(p) as tmp:
            table = self._arrow_table()
            if table is not None:  # pyarrow: C++ writers, names stored once (dictionary)
                self._write_arrow(table, str(tmp), p.suffix)
            elif p.suffix == ".parquet":
                raise InvalidInput(f"writing {p.name} needs pyarrow (pip install privopt[census])")
            else:
                self.to_frame().to_csv(tmp, index=False)
        return p

    def _arrow_table(self) -> Any:
        """The long table of :meth:`to_frame` as a pyarrow Table (None without pyarrow)."""
        try:
            import pyarrow as pa  # type: ignore[import-untyped]
        except ImportError:
            return None
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
    def _write_arrow(table: Any, path: str, suffix: str) -> None:
        if suffix == ".parquet":
            table = table.cast(_plain_schema(table))  # readers get plain strings back
            import pyarrow.parquet as pq  # type: ignore[import-untyped]

            pq.write_table(table, path)  # parquet dictionary-encodes the repeated names itself
            return
        import pyarrow.csv as pc  # type: ignore[import-untyped]

        # Unquoted fields and header, as pandas writes them, unless a name needs quotes.
        names = [*table.column("region").chunk(0).dictionary.to_pylist()]
        names += table.column("level").chunk(0).dictionary.to_pylist()
        plain = not any(any(c in str(x) for c in ',"\r\n') for x in names)
        schema = _plain_schema(table)
        options = pc.WriteOptions(include_header=False, quoting_style="none" if plain else "needed")
        with open(path, "wb") as f:
            f.write((",".join(table.column_names) + "\n").encode())
            # The names become plain strings one block at a time (not 10^7 strings at once).
            for start in range(0, table.num_rows, CSV_BLOCK_ROWS):
                block = table.slice(start, CSV_BLOCK_ROWS).cast(schema)
                pc.write_csv(block, f, write_options=options)

    def __repr__(self) -> str:
        R, N = self.counts.shape
        return (
            f"CensusRelease({self.mechanism}, ε={self.epsilon:g}, {R} regions × {N} sizes, "
            f"G={self.G}, {self.timings.get('total', float('nan')):.3g} s"
            f"{', SEEDED' if self.seeded else ''})"
        )


#: Rows written per block by the pyarrow CSV writer.
CSV_BLOCK_ROWS = 1 << 20


def _plain_schema(table: Any) -> Any:
    """The schema of ``table`` with dictionary columns as plain strings (for the CSV writer)."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
            for f in table.schema
        ]
    )
