"""What a DPM fit publishes: :class:`ClusteringRelease` (centres, noisy sizes, the split tree,
the privacy ledger), a :class:`~privopt.release.Release` that labels new points on its own.

Everything here is a differentially private output of the fit or public: the centres (noisy leaf
averages clipped to the public box), the noisy leaf sizes ñ_i, the released split tree (its cuts
were chosen by the exponential mechanism), the split width β and the noisy root count ñ_D. The
data itself, and anything computed from it without noise, never enters a release.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

import numpy as np

from privopt import _core
from privopt._validation import (
    check_bool,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_int,
    check_numeric_dtype,
)
from privopt.cluster._backend import is_dask_array
from privopt.cluster._input import points_array
from privopt.dp import LedgerEntry, PlannedSpend, PrivacyAccountant
from privopt.errors import InvalidInput, PrivacyBudgetExceeded, PrivacyViolation
from privopt.release import Guarantee, Release, json_number_back
from privopt.report import axes_or_new, markdown_table

__all__ = ["ClusteringRelease"]

#: Names of the split tree's arrays, one entry per node (see :attr:`ClusteringRelease.tree`).
TREE_ARRAYS = ("feature", "threshold", "left", "right", "centre")


@dataclass(eq=False, repr=False)
class ClusteringRelease(Release):
    """The published result of a DPM fit: (ε, δ)-DP cluster centres that can label points.

    Guarantee: (ε, δ)-differential privacy under add/remove-one-point neighbours, every
    coordinate clipped to the public ``bounds`` (:class:`privopt.cluster.DPM`).

    Attributes
    ----------
    centres : (k, d) noisy leaf averages clipped to [a, b], in the units of the data.
    sizes : (k,) noisy leaf sizes ñ_i (points, noisy; 0 only for the one data-independent
        centre of a fit whose noisy count was not positive).
    bounds : (a, b), the public range of every coordinate, in the units of the data.
    epsilon, delta : the (ε, δ) the release states.
    ledger : the privacy ledger of the fit: one :class:`privopt.dp.LedgerEntry` per spend.
    tree : the released split tree as five (nodes,) arrays, :data:`TREE_ARRAYS`: the split
        feature (−1 at a tip), the threshold (x[feature] ≤ threshold goes left), the left and
        right child, and each tip's centre index (−1 at inner nodes). :meth:`predict` starts
        each point's nearest-centre search at its tip's centre (same answer as a full search).
    max_depth : τ_r, the depth the fit allowed (at most 2^τ_r centres).
    split_width : β in the units of the data; None when ñ_D < 2 (no split was tried).
    percentile_estimate : the DP gap percentile p̃; None when ñ_D < 2.
    n_splits : split candidates per dimension, ⌊(b − a)/β⌋.
    noisy_count : ñ_D, the noisy number of points.
    min_size : τ_e, the noisy size below which a child stops the split.
    seeded : the noise came from a seed (reproducible by anyone who knows it: testing only).
    fit_seconds : seconds per phase of the fit (``split_width``, ``tree``, ``averages``,
        ``total``).
    """

    mechanism: ClassVar[str] = "cluster"

    centres: np.ndarray
    sizes: np.ndarray
    bounds: tuple[float, float]
    epsilon: float
    delta: float
    ledger: list[LedgerEntry]
    tree: tuple[np.ndarray, ...]
    max_depth: int
    split_width: float | None = None
    percentile_estimate: float | None = None
    n_splits: int = 0
    noisy_count: float = 0.0
    min_size: float = 0.0
    seeded: bool = False
    fit_seconds: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.centres = check_finite_array("centres", self.centres, ndim=2)
        k, d = self.centres.shape
        if k == 0 or d == 0:
            raise InvalidInput(f"centres must be a non-empty (k, d) array, got shape {(k, d)}")
        self.sizes = check_finite_array("sizes", self.sizes, shape=(k,))
        bounds = check_finite_array("bounds", self.bounds, shape=(2,))
        if not bounds[0] < bounds[1]:
            raise InvalidInput(f"bounds must be (a, b) with a < b, got {self.bounds!r}")
        self.bounds = (float(bounds[0]), float(bounds[1]))
        self.epsilon = check_epsilon(self.epsilon)
        self.delta = check_delta(self.delta)
        self.max_depth = check_int("max_depth", self.max_depth, minimum=1)
        self.n_splits = check_int("n_splits", self.n_splits, minimum=0)
        if not isinstance(self.ledger, list) or not all(
            isinstance(e, LedgerEntry) for e in self.ledger
        ):
            raise InvalidInput("ledger must be a list of privopt.dp.LedgerEntry")
        check_bool("seeded", self.seeded)
        self.tree = _checked_tree(self.tree)

    # ------------------------------------------------------------------ the release contract
    @property
    def n_clusters(self) -> int:
        """k, the number of centres."""
        return int(self.centres.shape[0])

    @property
    def n_features(self) -> int:
        """d, the number of coordinates of a point."""
        return int(self.centres.shape[1])

    @property
    def guarantee(self) -> Guarantee:
        """(ε, δ)-DP, add/remove-one-point neighbours."""
        return Guarantee(
            "(epsilon, delta)-DP",
            {"epsilon": self.epsilon, "delta": self.delta},
            "one point (record) added to or removed from the data, every coordinate clipped "
            f"to the public range [{self.bounds[0]:g}, {self.bounds[1]:g}]",
            self.seeded,
        )

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per phase of the fit (``total`` the whole fit)."""
        return dict(self.fit_seconds)

    def describe(self) -> str:
        """What was released, in one line."""
        return (
            f"clustering: {self.n_clusters} centres in {self.n_features} dimensions, "
            f"coordinates in [{self.bounds[0]:g}, {self.bounds[1]:g}]"
        )

    def accountant(self) -> PrivacyAccountant:
        """A :class:`privopt.dp.PrivacyAccountant` holding the ledger, with budget (ε, δ)."""
        acct = PrivacyAccountant(self.epsilon, self.delta)
        acct.entries.extend(self.ledger)
        return acct

    def verify(self) -> ClusteringRelease:
        """Check what the release can prove about itself; raise
        :class:`~privopt.errors.PrivacyViolation` if anything fails, else return self.

        - the ledger, replayed by :class:`privopt.dp.PrivacyAccountant`'s composition rules,
          totals at most the stated (ε, δ), and a seeded spend is stated as seeded;
        - every centre lies in the public box [a, b]^d;
        - one noisy size per centre, each > 0 (0 only for a single data-independent centre),
          and at most 2^τ_r centres;
        - the split tree cuts inside the box on existing features, every tip points to a centre.
        """
        self._verify_ledger()
        a, b = self.bounds
        if not (np.all(self.centres >= a) and np.all(self.centres <= b)):
            raise PrivacyViolation(f"a released centre lies outside the public box [{a}, {b}]^d")
        fallback = self.n_clusters == 1 and float(self.sizes[0]) == 0.0
        if not fallback and not np.all(self.sizes > 0):
            raise PrivacyViolation("a released cluster size is not positive")
        if self.n_clusters > 2**self.max_depth:
            raise PrivacyViolation(
                f"{self.n_clusters} centres, more than the 2^{self.max_depth} leaves of the tree"
            )
        self._verify_tree()
        return self

    def _verify_ledger(self) -> None:
        """Replay the ledger into an accountant with the stated budget (its rules and its
        rounding slack decide)."""
        acct = PrivacyAccountant(self.epsilon, self.delta)
        try:
            acct.spend_all(
                PlannedSpend(
                    e.epsilon,
                    e.delta,
                    label=e.label,
                    mechanism=e.mechanism,
                    sensitivity=e.sensitivity,
                    group=None if e.group is None else f"{e.group} #{e.group_index}",
                    part=e.part,
                    seeded=e.seeded,
                )
                for e in self.ledger
            )
        except PrivacyBudgetExceeded as err:
            raise PrivacyViolation(f"the ledger exceeds the stated guarantee: {err}") from None
        except InvalidInput as err:
            raise PrivacyViolation(f"the ledger holds an invalid spend: {err}") from None
        if acct.seeded and not self.seeded:
            raise PrivacyViolation(
                "the ledger records spends drawn from a seed, but the release states unseeded "
                "randomness"
            )

    def _verify_tree(self) -> None:
        feature, threshold, _, _, centre = self.tree
        tips = feature < 0
        a, b = self.bounds
        if np.any(feature >= self.n_features):
            raise PrivacyViolation("the split tree cuts a feature the centres do not have")
        if not (np.all(threshold[~tips] >= a) and np.all(threshold[~tips] <= b)):
            raise PrivacyViolation("the split tree cuts outside the public box")
        if np.any(centre[tips] < 0) or np.any(centre[tips] >= self.n_clusters):
            raise PrivacyViolation("a tip of the split tree has no centre")

    def _summary_fields(self) -> dict[str, Any]:
        acct = self.accountant()
        return {
            "clusters": self.n_clusters,
            "features": self.n_features,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "bounds": list(self.bounds),
            "split_width": self.split_width,
            "split_candidates_per_feature": self.n_splits,
            "noisy_count": self.noisy_count,
            "ledger_epsilon": acct.epsilon_spent,
            "ledger_delta": acct.delta_spent,
            "ledger_entries": len(self.ledger),
            "seeded": self.seeded,
        }

    def report(self) -> Any:
        """The shared report section, then the centres and the privacy ledger."""
        section = super().report()
        shown = min(self.n_features, 3)
        rows = [
            [i, float(w), *(float(v) for v in c[:shown])]
            for i, (c, w) in enumerate(zip(self.centres, self.sizes, strict=True))
        ]
        section.body += (
            "\n\nCentres (first coordinates) and noisy sizes:\n\n"
            + markdown_table(["cluster", "noisy size"] + [f"x{j}" for j in range(shown)], rows)
            + "\nPrivacy ledger:\n\n```\n"
            + self.accountant().ledger()
            + "\n```\n"
        )
        return section

    def plot(self, ax: Any = None) -> Any:
        """The centres on their first two coordinates (one coordinate: on a line), marker
        area proportional to the noisy size, within the public box."""
        ax = axes_or_new(ax, figsize=(5.0, 4.5))
        x = self.centres[:, 0]
        y = self.centres[:, 1] if self.n_features > 1 else np.zeros_like(x)
        largest = float(np.max(self.sizes)) if float(np.max(self.sizes)) > 0 else 1.0
        area = 20.0 + 400.0 * np.maximum(self.sizes, 0.0) / largest
        ax.scatter(x, y, s=area, alpha=0.6, edgecolors="k", label="centre (area ∝ noisy size)")
        a, b = self.bounds
        ax.set_xlim(a, b)
        if self.n_features > 1:
            ax.set_ylim(a, b)
        ax.set_xlabel("coordinate 0 (data units)")
        ax.set_ylabel("coordinate 1 (data units)" if self.n_features > 1 else "(one coordinate)")
        ax.set_title(
            f"DPM centres: {self.n_clusters} clusters, ε = {self.epsilon:g}, δ = {self.delta:.2g}"
        )
        ax.legend(loc="best", fontsize=8)
        return ax

    def _state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        meta = {
            "bounds": list(self.bounds),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "max_depth": self.max_depth,
            "split_width": self.split_width,
            "percentile_estimate": self.percentile_estimate,
            "n_splits": self.n_splits,
            "noisy_count": self.noisy_count,
            "min_size": self.min_size,
            "seeded": self.seeded,
            "fit_seconds": dict(self.fit_seconds),
            "ledger": [asdict(e) for e in self.ledger],
        }
        data = {"centres": self.centres, "sizes": self.sizes}
        data.update({f"tree_{name}": arr for name, arr in zip(TREE_ARRAYS, self.tree, strict=True)})
        return meta, data

    @classmethod
    def _from_state(cls, meta: dict[str, Any], data: dict[str, Any]) -> ClusteringRelease:
        wanted = ("centres", "sizes", *(f"tree_{name}" for name in TREE_ARRAYS))
        missing = [k for k in wanted if k not in data]
        if missing:
            raise InvalidInput(f"the saved clustering lacks the arrays {missing}")
        optional = {
            name: None if meta.get(name) is None else json_number_back(meta[name])
            for name in ("split_width", "percentile_estimate")
        }
        return cls(
            centres=data["centres"],
            sizes=data["sizes"],
            bounds=meta.get("bounds", ()),  # (every value checked in __post_init__)
            epsilon=json_number_back(meta.get("epsilon")),
            delta=json_number_back(meta.get("delta")),
            ledger=_ledger(meta.get("ledger")),
            tree=tuple(data[f"tree_{name}"] for name in TREE_ARRAYS),
            max_depth=meta.get("max_depth", 0),
            n_splits=meta.get("n_splits", 0),
            noisy_count=json_number_back(meta.get("noisy_count", 0.0)),
            min_size=json_number_back(meta.get("min_size", 0.0)),
            seeded=meta.get("seeded", False),
            fit_seconds={str(k): float(v) for k, v in dict(meta.get("fit_seconds", {})).items()},
            **optional,
        )

    # ------------------------------------------------------------------ labelling
    def predict(self, X: Any, *, n_jobs: int | None = None) -> Any:
        """Index of the nearest centre (Euclidean; the first on ties) of each row of X.

        Parameters
        ----------
        X : (n, d) points in the units of the data, or a Dask array (labelled lazily).
        n_jobs : threads (None = 1, −1 = all cores).

        Returns
        -------
        (n,) int64 labels in [0, k), or a lazy Dask array of them.

        Raises
        ------
        InvalidInput
            X not a finite real (n, d) array with the release's d.
        """
        centres, tips = self.centres, self.tree
        if is_dask_array(X):
            check_numeric_dtype("X", X.dtype)
            self._check_features(X.shape[1] if X.ndim == 2 else -1, X.ndim)
            return X.rechunk({1: -1}).map_blocks(
                lambda blk: _nearest_from(blk, centres, tips, 1), drop_axis=1, dtype=np.int64
            )
        arr = points_array(X, min_samples=0)
        self._check_features(arr.shape[1], arr.ndim)
        if n_jobs is not None:
            n_jobs = check_int("n_jobs", n_jobs)
            if n_jobs == 0:
                raise InvalidInput("n_jobs must be a positive int, -1 or None, got 0")
        threads = 1 if n_jobs is None else (os.cpu_count() or 1) if n_jobs < 0 else n_jobs
        return _nearest_from(arr, centres, tips, threads)

    def _check_features(self, d: int, ndim: int) -> None:
        if ndim != 2:
            raise InvalidInput(f"X must be 2-dimensional (n samples, d features), got {ndim}-D")
        if d != self.n_features:
            # scikit-learn's wording, which its estimator checks look for.
            raise InvalidInput(
                f"X has {d} features, but DPM is expecting {self.n_features} features as input"
            )


def _nearest_from(X: np.ndarray, centres: np.ndarray, tips: tuple, threads: int) -> np.ndarray:
    """Nearest-centre labels, each row's search started at its tip's centre (the full search's
    answer, ties to the first index included)."""
    return _core.cluster.nearest_centres_from(
        np.ascontiguousarray(X, dtype=np.float64), centres, _core.cluster.Tree(*tips), threads
    )


def _checked_tree(tree: Any) -> tuple[np.ndarray, ...]:
    """The five node arrays of a split tree, of one length, children inside the tree."""
    if not isinstance(tree, (tuple, list)) or len(tree) != len(TREE_ARRAYS):
        raise InvalidInput(f"tree must be the {len(TREE_ARRAYS)} arrays {TREE_ARRAYS}")
    kinds = (np.int64, np.float64, np.int64, np.int64, np.int64)
    arrays = tuple(
        check_finite_array(f"tree {name}", arr, ndim=1, dtype=kind)
        for name, arr, kind in zip(TREE_ARRAYS, tree, kinds, strict=True)
    )
    n = arrays[0].size
    if n == 0 or any(arr.size != n for arr in arrays):
        raise InvalidInput(f"the tree's arrays {TREE_ARRAYS} must have one common length >= 1")
    inner = np.flatnonzero(arrays[0] >= 0)
    for name, arr in (("left", arrays[2]), ("right", arrays[3])):
        # Children come after their parent (SplitTree appends them): no walk can loop.
        if np.any(arr[inner] <= inner) or np.any(arr[inner] >= n):
            raise InvalidInput(f"tree {name} must name a later node of the tree's {n} nodes")
    return arrays


def _ledger(data: Any) -> list[LedgerEntry]:
    """The saved ledger: a JSON list of entries."""
    if not isinstance(data, list):
        raise InvalidInput("the saved clustering's ledger must be a list of entries")
    return [_ledger_entry(entry) for entry in data]


def _ledger_entry(data: Any) -> LedgerEntry:
    """A :class:`LedgerEntry` from its saved JSON object (field names checked; values are
    checked by :meth:`ClusteringRelease.verify`)."""
    names = {f.name for f in fields(LedgerEntry)}
    if not isinstance(data, dict) or not set(data) <= names:
        raise InvalidInput(f"a saved ledger entry must be an object with fields {sorted(names)}")
    try:
        return LedgerEntry(**data)
    except TypeError as err:
        raise InvalidInput(f"a saved ledger entry is incomplete: {err}") from None
