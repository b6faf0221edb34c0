"""DPM (DP-Mondrian) clustering as a scikit-learn estimator (spec 004, Algorithms 1–2)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import _check_feature_names

from privopt import _core, dp
from privopt._progress import check_progress, progress_bar
from privopt._validation import (
    check_bool,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_finite_result,
    check_instance,
    check_int,
    check_numeric_dtype,
    check_positive,
)
from privopt.cluster._backend import InMemoryData, SplitTree, is_dask_array
from privopt.cluster._bounds import (
    DEFAULT_BOUNDS_RANGE,
    FeatureBox,
    checked_bounds,
    checked_search_range,
    dp_feature_bounds,
)
from privopt.cluster._budget import BudgetSchedule, budget_schedule
from privopt.cluster._input import points_array
from privopt.cluster._interval import codebook_monte_carlo, dp_percentile_in_place, split_width
from privopt.cluster.release import ClusteringRelease
from privopt.errors import InvalidInput

if TYPE_CHECKING:
    from privopt.cluster._dask import DaskData

__all__ = ["DPM", "DEFAULT_SIGMA_GRID", "nearest_centre", "sklearn_expected_failed_checks"]

#: σ candidates of IntervalSizeEst as in the reference code: 0.5, 1.0, …, 29.5 (spec §0, D1).
DEFAULT_SIGMA_GRID = np.arange(0.5, 30.0, 0.5)

_WINDOWS = ("paper", "half_open", "reference")

#: Largest number of split candidates per node (d·numSplits) accepted; see ``DPM._data``.
MAX_CANDIDATES = 200_000

#: Largest noise scale accepted (see ``_check_noise_range``).
_MAX_NOISE_SCALE = 1e300


def nearest_centre(X: np.ndarray, centres: np.ndarray, *, n_jobs: int | None = None) -> np.ndarray:
    """Index of the nearest centre (Euclidean; the first one on ties) of each row of X.

    Parameters
    ----------
    X : (n, d) points.
    centres : (k, d), k ≥ 1.
    n_jobs : threads (None = 1, −1 = all cores).

    Returns
    -------
    (n,) int64.
    """
    threads = 1 if n_jobs is None else (os.cpu_count() or 1) if n_jobs < 0 else max(1, n_jobs)
    X = check_finite_array("X", X, ndim=2)
    centres = check_finite_array("centres", centres, shape=(None, X.shape[1]))
    if centres.shape[0] == 0:
        raise InvalidInput("centres must hold at least one centre")
    return _core.cluster.nearest_centres(X, centres, threads)


def _power_of_two_above(x: float) -> float:
    """The power of two 2^e with x < 2^e ≤ 2x, for x > 0 (exact)."""
    return math.ldexp(1.0, math.frexp(x)[1])


#: scikit-learn checks that need a fitted estimator: DPM without epsilon and delta cannot
#: pass them.
_CHECKS_NEEDING_A_FIT = (
    "check_fit_score_takes_y",
    "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self",
    "check_readonly_memmap_input",
    "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit",
    "check_estimators_dtypes",
    "check_dtype_object",
    "check_pipeline_consistency",
    "check_estimators_nan_inf",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_clustering",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_fit2d_1feature",
    "check_dict_unchanged",
    "check_fit_idempotent",
    "check_fit_check_is_fitted",
    "check_n_features_in",
    "check_fit2d_predict1d",
    "check_array_api_input",
)


#: The ε from which the scikit-learn suite's clustering check passes (check_clustering).
CLUSTERING_CHECK_EPSILON = 100.0


def sklearn_expected_failed_checks(estimator: DPM) -> dict[str, str]:
    """The scikit-learn estimator checks that do not apply to ``estimator``, with the reason.

    For ``expected_failed_checks=`` of :func:`sklearn.utils.estimator_checks.check_estimator`
    or ``parametrize_with_checks``.

    - Without ``epsilon`` or ``delta``, ``fit`` refuses every input (privacy is chosen, not
      defaulted), so each check that needs a fitted estimator is listed; the checks of input
      validation, parameters and the unfitted state still run and pass.
    - With ε below 100, ``check_clustering`` is listed: it asks
      for an adjusted Rand index above 0.4 on 50 points in 3 blobs, and the noise that
      differential privacy adds to the counts and averages of so few points hides the blobs.
      Every other check passes.

    Examples
    --------
    >>> sklearn_expected_failed_checks(DPM(bounds=(0, 1), epsilon=100, delta=1e-6))
    {}
    >>> list(sklearn_expected_failed_checks(DPM(bounds=(0, 1), epsilon=1, delta=1e-6)))
    ['check_clustering']
    >>> len(sklearn_expected_failed_checks(DPM())) > 0
    True
    """
    dpm = check_instance("estimator", estimator, DPM)
    if dpm.epsilon is None or dpm.delta is None:
        reason = (
            "needs a fitted estimator, and DPM without epsilon and delta refuses to fit: a "
            "privacy level is chosen, never defaulted"
        )
        return dict.fromkeys(_CHECKS_NEEDING_A_FIT, reason)
    if check_epsilon(dpm.epsilon) < CLUSTERING_CHECK_EPSILON:
        return {
            "check_clustering": (
                "asks for an adjusted Rand index above 0.4 on 50 points in 3 blobs; at "
                f"epsilon = {dpm.epsilon!r} the noise of the private counts and averages of "
                "so few points hides the blobs"
            )
        }
    return {}


def _noise_source(random_state: Any) -> dp.RandomSource:
    """The randomness of a fit: the OS CSPRNG unless a seed or source was given explicitly."""
    return dp.as_random_source("secure" if random_state is None else random_state)


def _check_noise_range(sched: BudgetSchedule, d: int, n: int, epsilon: float) -> None:
    """Reject, before any spend, a budget whose noise the samplers of ``privopt.dp`` cannot draw.

    The Gaussian σ of the averages (in the units of ``DPM._average``, where Δ₂ ≤ √d) is at most
    √d·√(2 ln(1.25/δ))/min(ε, 1) (the classic bound caps the analytic σ); it must stay far from
    overflow. Then every count and average calibration is run once on zeros with a throwaway
    source, the counts on ``n`` (the largest count, public in DPM): it depends on public
    parameters only, and raises the samplers' own InvalidInput (ε/Δ out of their range, or a
    huge ε whose noise grid is too fine to hold n) here rather than after the first spend.
    """
    sigma = math.sqrt(d) * math.sqrt(2.0 * math.log(1.25 / sched.delta_average))
    worst = max(1.0 / sched.epsilon_interval, sigma / min(sched.epsilon_average, 1.0))
    if not worst < _MAX_NOISE_SCALE:
        raise InvalidInput(
            f"epsilon={epsilon!r} is too small: a noise scale of {worst:.3g} is beyond the "
            f"float64 range of the samplers (at most {_MAX_NOISE_SCALE:g})"
        )
    throwaway = dp.GeneratorSource(np.random.default_rng(0))
    zero = np.zeros(1)
    try:
        for eps in sched.epsilon_count:
            dp.laplace_mechanism(np.array([float(n)]), float(eps), rng=throwaway)
        dp.gaussian_mechanism(
            zero,
            sched.epsilon_average,
            sched.delta_average,
            sensitivity=math.sqrt(d),
            rng=throwaway,
        )
    except InvalidInput as err:
        raise InvalidInput(f"epsilon={epsilon!r} cannot be used by DPM's noise: {err}") from None


def _dask_passes() -> Any:
    """The module of DPM's Dask passes; Dask is optional (the dask extra), so it is imported
    once a Dask array arrives."""
    import privopt.cluster._dask as passes

    return passes


def columns(X: Any, d: int) -> Iterator[np.ndarray]:
    """The d columns of X, (n,) float64 each, one fresh copy at a time (a Dask array is read
    chunk by chunk into it)."""
    for k in range(d):
        if is_dask_array(X):
            col = np.empty(int(X.shape[0]))
            _dask_passes().fill_column(X.astype(np.float64), k, col)
            yield col
        else:
            yield np.array(X[:, k], dtype=np.float64, copy=True)


class DPM(ClusterMixin, BaseEstimator):
    """Differentially private clustering by separation (DPM, Liebenow et al., CCS 2024).

    Splits the data recursively with axis-aligned cuts chosen by the exponential mechanism among
    candidates that are near the per-dimension median (centreness) and in sparse regions
    (emptiness); stops when a chosen split would leave a child with a noisy size below
    τ_e = ñ_D/2^τ_r, or at depth τ_r. The centres are Gaussian-noised averages of the leaves,
    clipped to the public box [a, b]^d: clipping is post-processing of a private release, so it
    costs no privacy, and it makes every centre a point the data could hold (the noise alone can
    push the centre of a leaf near the edge outside the box). The number of clusters is not an
    input; it is at most 2^τ_r.

    Guarantee: (ε, δ)-differential privacy under add/remove-one-point neighbours, with every
    coordinate of the data clipped to the public ``bounds`` (Theorem 1). The budget is
    split (ε_int, ε_cnt, ε_exp, ε_avg) = ``budget_split``·ε and (δ_cnt, δ_avg) = ``delta_split``·δ;
    counts and split selections are spread over the levels with the √(2^i) schedule, and each level
    composes in parallel over its disjoint nodes. Every spend is recorded in ``accountant_``.

    Parameters
    ----------
    bounds : (a, b), a < b, the public range [a, b] of every coordinate (same units as X).
    epsilon : total ε > 0. Required: None (the default, as scikit-learn needs one) is refused
        by ``fit``, since a privacy level is chosen, never defaulted.
    delta : total δ in (0, 1); the paper uses 1/n^1.5. Required like ``epsilon`` (and no
        data-dependent default exists).
    max_depth : τ_r ≥ 1, the maximum recursion depth (at most 2^τ_r clusters).
    t, q : centreness parameters, 2q ≤ t ≤ 1 and 0 < q < 1/2 (defaults 0.3 and 1/12).
    alpha : α > 0, the weight of emptiness in the score (default 5).
    budget_split : fractions (int, cnt, exp, avg) of ε, each > 0, summing to 1.
    delta_split : fractions (cnt, avg) of δ, each > 0, summing to 1.
    sigma_grid : increasing positive σ candidates of IntervalSizeEst (default 0.5, 1, …, 29.5), in
        data units; β = σ*/2.
    percentile : the gap percentile of IntervalSizeEst, in (0, 100) (default 65).
    codebook : ``"analytic"`` (exact expected-gap percentile, default) or ``"monte_carlo"`` (the
        reference code's 30-replicate simulation; slow).
    mc_reps : replicates of the Monte Carlo codebook.
    min_size : τ_e as an absolute noisy size; None for ñ_D/2^τ_r.
    window : emptiness window: ``"paper"`` (closed [s−β/2, s+β/2]), ``"half_open"`` or
        ``"reference"`` (the reference code's histogram bins).
    strict_termination : stop when a child's ñ < τ_e (paper) if True, ñ ≤ τ_e (reference) if False.
    clip : clip coordinates to ``bounds`` (True), or reject data outside them (False).
    n_jobs : threads of the counting passes (None = 1, −1 = all cores).
    progress : ``"auto"`` (default), True or False: a progress bar of the tree's levels on
        stderr (:mod:`privopt._progress`; ``"auto"`` shows one only for a long fit on a
        terminal).
    random_state : None (default), ``"secure"``, an int seed, a numpy Generator or a
        :class:`privopt.dp.RandomSource`; every random draw of ``fit`` comes from it. None and
        ``"secure"`` draw from the operating system's CSPRNG, as a real release must: nobody can
        predict or replay the noise. A seed or Generator makes the fit reproducible, for
        testing only: anyone who knows the seed can recompute the noise and remove it.

    Attributes
    ----------
    cluster_centers_ : (k, d) noisy leaf averages clipped to [a, b], in the units of X; finite.
    n_clusters_ : k.
    n_features_in_ : d, the number of columns of X seen by ``fit``.
    feature_names_in_ : (d,) object array of the column names of X, set only when X was a
        DataFrame whose column names are all strings (as in scikit-learn); ``predict`` refuses
        a DataFrame with other names, and warns when names are seen in fit or predict only.
    labels_ : (n,) index of the nearest centre of each training point (not private).
    cluster_sizes_ : (k,) noisy leaf sizes ñ_i (the weights of Algorithm 1).
    split_width_ : β in the units of X; None when ñ_D < 2 (no width estimated).
    percentile_estimate_ : the DP gap percentile p̃ of Algorithm 2; None when ñ_D < 2.
    n_splits_ : split candidates per dimension, ⌊(b − a)/β⌋.
    noisy_count_ : ñ_D.
    min_size_ : τ_e used.
    tree_ : the released split tree (a :class:`SplitTree`).
    tip_centres_ : the tree's arrays with each tip's centre index in the slot; ``predict`` starts
        each point's search at its tip's centre (the answer is that of the full search).
    schedule_ : the per-level budget (:class:`BudgetSchedule`).
    accountant_ : the :class:`privopt.dp.PrivacyAccountant` holding the ledger.
    seeded_ : True when ``random_state`` was a seed or Generator: the noise is reproducible
        by anyone who knows it, so the fit is for testing only (the ledger marks every spend).
    ledger_ : ``accountant_.ledger()``, the readable table of spends.
    release_ : the :class:`~privopt.cluster.release.ClusteringRelease` of the fit: what may be
        published (centres, noisy sizes, the split tree, this fit's ledger), with ``verify()``,
        ``summary()``, ``save()`` and ``predict()`` of its own; :func:`privopt.load` reads it
        back.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_blobs
    >>> X, _ = make_blobs(4000, centers=[(-50, -50), (50, 50)], cluster_std=3, random_state=0)
    >>> model = DPM(bounds=(-100, 100), epsilon=10, delta=1e-6, random_state=0).fit(X)
    >>> model.n_clusters_
    2
    """

    def __init__(
        self,
        bounds: tuple[float, float] | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        max_depth: int = 7,
        t: float = 0.3,
        q: float = 1.0 / 12.0,
        alpha: float = 5.0,
        budget_split: tuple[float, float, float, float] = (0.04, 0.18, 0.18, 0.6),
        delta_split: tuple[float, float] = (0.2, 0.8),
        bounds_epsilon_share: float = 0.1,
        bounds_range: tuple[float, float] = DEFAULT_BOUNDS_RANGE,
        sigma_grid: Any = None,
        percentile: float = 65.0,
        codebook: str = "analytic",
        mc_reps: int = 30,
        min_size: float | None = None,
        window: str = "paper",
        strict_termination: bool = True,
        clip: bool = True,
        n_jobs: int | None = None,
        progress: bool | str = "auto",
        random_state: Any = None,
    ) -> None:
        self.bounds = bounds
        self.epsilon = epsilon
        self.delta = delta
        self.max_depth = max_depth
        self.t = t
        self.q = q
        self.alpha = alpha
        self.budget_split = budget_split
        self.delta_split = delta_split
        self.bounds_epsilon_share = bounds_epsilon_share
        self.bounds_range = bounds_range
        self.sigma_grid = sigma_grid
        self.percentile = percentile
        self.codebook = codebook
        self.mc_reps = mc_reps
        self.min_size = min_size
        self.window = window
        self.strict_termination = strict_termination
        self.clip = clip
        self.n_jobs = n_jobs
        self.progress = progress
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def _validated(self) -> dict[str, Any]:
        given = None if self.bounds is None else checked_bounds(self.bounds)
        share = check_positive("bounds_epsilon_share", self.bounds_epsilon_share)
        if not share < 1:
            raise InvalidInput(
                f"bounds_epsilon_share must lie in (0, 1), got {self.bounds_epsilon_share!r}"
            )
        search = checked_search_range(self.bounds_range)
        unset = [name for name in ("epsilon", "delta") if getattr(self, name) is None]
        if unset:
            # Privacy is chosen, not defaulted: scikit-learn needs a default for every
            # parameter, so None stands for "not chosen yet" and fit refuses it.
            raise InvalidInput(
                f"{' and '.join(unset)} must be given: DPM has no default privacy level; choose "
                "it, e.g. DPM(epsilon=1.0, delta=1e-6) (the paper uses delta = 1/n**1.5)"
            )
        eps = check_epsilon(self.epsilon)
        delta = check_delta(self.delta)
        if delta == 0:
            raise InvalidInput("delta must be > 0: the shifted counts of DPM need delta_cnt > 0")
        depth = check_int("max_depth", self.max_depth, minimum=1, maximum=30)
        q = check_positive("q", self.q)
        t = check_positive("t", self.t)
        if not q < 0.5:
            raise InvalidInput(f"q must be < 1/2, got {self.q!r}")
        if not (2 * q <= t <= 1):
            raise InvalidInput(
                f"t must satisfy 2q <= t <= 1 (valid t, q), got t={self.t!r}, q={self.q!r}"
            )
        alpha = check_positive("alpha", self.alpha)
        split = self._fractions("budget_split", self.budget_split, 4)
        dsplit = self._fractions("delta_split", self.delta_split, 2)
        grid = self._validated_sigma_grid()
        pct = check_positive("percentile", self.percentile)
        if not pct < 100:
            raise InvalidInput(f"percentile must lie in (0, 100), got {self.percentile!r}")
        if self.codebook not in ("analytic", "monte_carlo"):
            raise InvalidInput(
                f"codebook must be 'analytic' or 'monte_carlo', got {self.codebook!r}"
            )
        reps = check_int("mc_reps", self.mc_reps, minimum=1)
        min_size = None if self.min_size is None else check_positive("min_size", self.min_size)
        if self.window not in _WINDOWS:
            raise InvalidInput(f"window must be one of {_WINDOWS}, got {self.window!r}")
        self._check_flags_and_jobs()
        if given is None and not self.clip:
            raise InvalidInput(
                "clip=False needs the bounds given: estimated bounds leave some points outside "
                "by design, and DPM clips them"
            )
        progress = check_progress(self.progress)
        return dict(
            progress=progress,
            given=given,
            bounds_share=share if given is None else 0.0,
            search=search,
            epsilon=eps,
            delta=delta,
            depth=depth,
            t=t,
            q=q,
            alpha=alpha,
            split=split,
            dsplit=dsplit,
            grid=grid,
            percentile=pct,
            reps=reps,
            min_size=min_size,
        )

    def _validated_sigma_grid(self) -> np.ndarray:
        grid = DEFAULT_SIGMA_GRID if self.sigma_grid is None else self.sigma_grid
        grid = check_finite_array("sigma_grid", grid, ndim=1)
        if grid.size == 0 or np.any(grid <= 0) or np.any(np.diff(grid) <= 0):
            raise InvalidInput("sigma_grid must be a non-empty increasing array of positive values")
        return grid

    def _check_flags_and_jobs(self) -> None:
        for name in ("strict_termination", "clip"):
            check_bool(name, getattr(self, name))
        if self.n_jobs is not None:
            check_int("n_jobs", self.n_jobs)
            if self.n_jobs == 0:
                raise InvalidInput("n_jobs must be a positive int, -1 or None, got 0")

    @staticmethod
    def _fractions(name: str, value: Any, length: int) -> tuple[float, ...]:
        arr = check_finite_array(name, value, shape=(length,))
        if np.any(arr <= 0) or abs(float(arr.sum()) - 1.0) > 1e-9:
            raise InvalidInput(
                f"{name} must hold {length} positive fractions summing to 1, got {value!r}"
            )
        return tuple(float(v) for v in arr)

    def _shape(self, X: Any) -> tuple[int, int, float, float]:
        """(n, d, min, max) of the points, after the checks that need no bounds."""
        if is_dask_array(X):
            check_numeric_dtype("X", X.dtype)
            if X.ndim != 2:
                raise InvalidInput(f"X must be 2-dimensional, got shape {X.shape}")
            finite, lo, hi = _dask_passes().DaskData(X, 0.0, 1.0).summary()
            if not finite:
                raise InvalidInput("X contains a non-finite value (NaN or inf)")
            n, d = (int(v) for v in X.shape)
        else:  # already checked by points_array
            (n, d), (lo, hi) = X.shape, ((X.min(), X.max()) if X.size else (0.0, 0.0))
        if d < 1:
            raise InvalidInput(f"X must have at least one column (d >= 1), got shape {(n, d)}")
        if n < 2:
            raise InvalidInput(f"X must have at least 2 rows, got {n}")
        return n, d, float(lo), float(hi)

    def _checked_box(self, X: Any, d: int, p: dict[str, Any]) -> FeatureBox | None:
        """The box of given bounds, checked against the data and float64 before any spend;
        None for bounds to estimate (checked on the search range, which holds them)."""
        if p["given"] is None:
            lo, hi = p["search"]
            self._check_float_range(d, hi - lo, max(-lo, hi), "bounds_range", self.bounds_range)
            return None
        lower, upper, scalar = checked_bounds(self.bounds, d)
        box = FeatureBox(lower, upper, per_feature=not scalar)
        if not self.clip and self._outside(X, box):
            raise InvalidInput(
                f"X has values outside bounds {self.bounds!r} (pass clip=True to clip them)"
            )
        self._check_float_range(d, box.b - box.a, float(np.max(box.reach())), "bounds", self.bounds)
        # Checked before any spend: the largest possible candidate set, at β = min(σ)/2, must
        # keep the per-level count arrays (slots × d × W) in memory.
        per_dim = (box.b - box.a) / (0.5 * float(np.min(p["grid"])))
        worst = d * math.floor(per_dim) if per_dim < 2.0**62 else math.inf
        if worst > MAX_CANDIDATES:
            raise InvalidInput(
                f"up to d·⌊(b−a)/(min(sigma_grid)/2)⌋ = {worst} split candidates per node, more "
                f"than {MAX_CANDIDATES}: narrow the bounds or drop the smallest sigma_grid values"
            )
        return box

    @staticmethod
    def _check_float_range(d: int, width: float, reach: float, name: str, value: Any) -> None:
        # Dimension-summed gaps (Alg. 2) and the averaging sensitivity are sums over d terms.
        if not (math.isfinite(d * width) and math.isfinite(math.sqrt(d) * reach)):
            raise InvalidInput(
                f"{name} {value!r} are too large for d = {d} columns in float64: rescale the data"
            )

    @staticmethod
    def _outside(X: Any, box: FeatureBox) -> bool:
        """Whether any coordinate of X lies outside its feature's range."""
        if is_dask_array(X):
            lo, hi = _dask_passes().dask.compute(X.min(axis=0), X.max(axis=0))
        else:
            lo, hi = X.min(axis=0), X.max(axis=0)
        return bool(np.any(lo < box.lower) or np.any(hi > box.upper))

    def _passes(self, X: Any, box: FeatureBox) -> InMemoryData | DaskData:
        """The data passes over X in the box's frame (per-feature bounds: clipped and shifted,
        a copy; one pair: X as it is, clipped by the passes themselves)."""
        if box.per_feature:
            X = np.clip(X, box.lower, box.upper) - box.shift  # Dask stays lazy
        if is_dask_array(X):
            return _dask_passes().DaskData(X, box.a, box.b)
        return InMemoryData(X, box.a, box.b, self.n_jobs)

    def _estimated_box(self, X: Any, d: int, sched: BudgetSchedule, p, acct, rng) -> FeatureBox:
        """Per-feature bounds by DP percentiles (:func:`dp_feature_bounds`), charged to ``acct``."""
        acct.spend(
            sched.epsilon_bounds,
            0.0,
            label=f"feature bounds: DP percentiles of {d} features (exponential mechanism)",
            mechanism="exponential (quantile)",
            sensitivity=1.0,
            seeded=not rng.secure,
        )
        lower, upper = dp_feature_bounds(columns(X, d), d, sched.epsilon_bounds, p["search"], rng)
        return FeatureBox(lower, upper, per_feature=True)

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, y: Any = None, *, accountant: dp.PrivacyAccountant | None = None) -> DPM:
        """Cluster X under (ε, δ)-DP.

        Every check that can fail on public inputs (hyper-parameters, shapes, the float64 range
        of the noise) runs before the first spend.

        Parameters
        ----------
        X : (n, d) array-like or Dask array of points, coordinates in the units of ``bounds``.
        y : ignored.
        accountant : record the spends in this accountant, which enforces its own budget; default
            a fresh accountant with budget (ε, δ). The fit is charged all or nothing: the whole
            plan of spends is checked before any noise is drawn, and a fit that raises leaves the
            accountant as it found it.

        Returns
        -------
        self

        Raises
        ------
        InvalidInput
            Bad data or hyper-parameters, named in the message.
        PrivacyBudgetExceeded
            The fit's plan does not fit the accountant's remaining budget (nothing is charged).
        NumericalTrouble
            A released value came out non-finite (not expected after the range checks).
        """
        # Column names of a DataFrame, as scikit-learn records them (feature_names_in_).
        _check_feature_names(self, X, reset=True)
        points = X if is_dask_array(X) else points_array(X)
        p = self._validated()
        n, d, _, _ = self._shape(points)
        given_box = self._checked_box(points, d, p)
        sched = budget_schedule(
            p["epsilon"], p["delta"], p["depth"], p["split"], p["dsplit"], p["bounds_share"]
        )
        _check_noise_range(sched, d, n, p["epsilon"])
        acct = (
            accountant if accountant is not None else dp.PrivacyAccountant(p["epsilon"], p["delta"])
        )
        rng = _noise_source(self.random_state)
        first_spend = len(acct.entries)
        # All or nothing: the whole plan is checked against the budget before any noise is
        # drawn, and a failure anywhere in the release takes every spend of this fit back out
        # (nothing computed from the noise has left the block then).
        with acct.transaction(sched.plan()):
            fitted = self._release(points, given_box, sched, p, acct, rng)
            for name in ("cluster_centers_", "cluster_sizes_"):
                check_finite_result(
                    name, fitted[name], cause=f"bounds {self.bounds!r}, epsilon {self.epsilon!r}"
                )
        seconds = fitted.pop("fit_seconds")
        box = fitted.pop("box")
        for name, value in fitted.items():
            setattr(self, name, value)
        self.n_features_in_ = d
        self.schedule_ = sched
        self.accountant_ = acct
        self.seeded_ = not rng.secure
        self.ledger_ = acct.ledger()
        self.release_ = ClusteringRelease(
            centres=self.cluster_centers_,
            sizes=self.cluster_sizes_,
            bounds=(float(np.min(box.lower)), float(np.max(box.upper))),
            feature_bounds=(box.lower, box.upper) if box.per_feature else None,
            bounds_epsilon=sched.epsilon_bounds,
            epsilon=p["epsilon"],
            delta=p["delta"],
            ledger=list(acct.entries[first_spend:]),  # this fit's spends only
            tree=self.tip_centres_,
            max_depth=p["depth"],
            split_width=self.split_width_,
            percentile_estimate=self.percentile_estimate_,
            n_splits=self.n_splits_,
            noisy_count=self.noisy_count_,
            min_size=self.min_size_,
            seeded=self.seeded_,
            fit_seconds=seconds,
        )
        self.labels_ = self.predict(X)
        return self

    def _release(self, X, box, sched: BudgetSchedule, p, acct, rng) -> dict[str, Any]:
        """The private bounds when ``box`` is None, then Algorithm 1: every spend and every noisy
        release; returns the fitted attributes (and ``fit_seconds``, seconds per phase, and
        ``box``, the :class:`FeatureBox` used)."""
        start = time.perf_counter()
        if box is None:
            box = self._estimated_box(X, int(X.shape[1]), sched, p, acct, rng)
        p = {**p, "box": box}
        data = self._passes(X, box)
        t_bounds = time.perf_counter()
        n_tilde = self._root_count(data, sched, acct, rng)
        depth = p["depth"]
        tau_e = n_tilde / 2**depth if p["min_size"] is None else p["min_size"]

        # Alg. 1 line 7 / Alg. 2: β.
        acct.spend(
            sched.epsilon_interval,
            0.0,
            label=f"split width: DP {p['percentile']:g}th percentile of gaps (Alg. 2)",
            mechanism="exponential (quantile)",
            sensitivity=2.0,
            seeded=not rng.secure,
        )
        beta, p_tilde, n_splits = None, None, 0
        if math.floor(n_tilde) >= 2:  # ñ_D < 2: no codebook, the root is the only leaf (§10.15)
            beta, p_tilde = self._split_width(data, n_tilde, sched, p, rng)
            n_splits = int(_core.cluster.num_splits(box.a, box.b, beta)) if beta > 0 else 0
            if p["given"] is None and data.d * n_splits > MAX_CANDIDATES:
                # Estimated bounds are checked only now: β is widened (post-processing of
                # released values) so that the grid keeps at most MAX_CANDIDATES candidates.
                beta = (box.b - box.a) / (MAX_CANDIDATES // data.d) * (1 + 1e-12)
                n_splits = int(_core.cluster.num_splits(box.a, box.b, beta))

        t_width = time.perf_counter()
        tree, leaves = self._build(data, n_tilde, tau_e, beta, n_splits, sched, p, acct, rng)
        t_tree = time.perf_counter()
        centres, sizes, tip_centre = self._average(data, tree, leaves, sched, p, acct, rng)
        end = time.perf_counter()
        # The passes cut in the box's frame; the released tree cuts in data units.
        released = SplitTree(
            list(tree.feature),
            box.thresholds_in_data_units(
                np.asarray(tree.feature, dtype=np.int64), np.asarray(tree.threshold)
            ).tolist(),
            list(tree.left),
            list(tree.right),
        )
        return {
            "box": box,
            "fit_seconds": {
                **({"bounds": t_bounds - start} if p["given"] is None else {}),
                "split_width": t_width - t_bounds,
                "tree": t_tree - t_width,
                "averages": end - t_tree,
                "total": end - start,
            },
            "noisy_count_": n_tilde,
            "min_size_": tau_e,
            "split_width_": beta,
            "percentile_estimate_": p_tilde,
            "n_splits_": n_splits,
            "tree_": released,
            "cluster_centers_": centres,
            # Each tip's centre: predict starts every point's nearest-centre search there.
            "tip_centres_": released.kernel_arrays(
                {node: tip_centre.get(node, 0) for node in tree.tips()}
            ),
            "bounds_": (box.lower.copy(), box.upper.copy()),
            "bounds_estimated_": p["given"] is None,
            "cluster_sizes_": sizes,
            "n_clusters_": len(centres),
        }

    @staticmethod
    def _root_count(data, sched: BudgetSchedule, acct, rng) -> float:
        """Alg. 1 line 5: the noisy root count ñ_D (level 0)."""
        acct.spend(
            sched.epsilon_count[0],
            sched.delta_count,
            label="noisy count, level 0 (root)",
            mechanism="Laplace",
            sensitivity=1.0,
            seeded=not rng.secure,
        )
        noisy = dp.laplace_mechanism(
            np.array([data.n], dtype=float), sched.epsilon_count[0], rng=rng
        )
        return float(noisy[0])

    def _split_width(self, data, n_tilde, sched: BudgetSchedule, p, rng) -> tuple[float, float]:
        width = p["box"].b - p["box"].a
        if self.codebook == "analytic":
            return split_width(
                data.gaps(), n_tilde, sched.epsilon_interval, width, p["grid"], p["percentile"], rng
            )
        # Reference construction: simulate the table, seeded from the run's randomness source.

        p_tilde = dp_percentile_in_place(
            data.gaps(), p["percentile"], sched.epsilon_interval, (0.0, width), rng=rng
        )
        seed = dp.as_random_source(rng).random_words(4)
        table = codebook_monte_carlo(
            math.floor(n_tilde),
            p["grid"],
            p["percentile"],
            p["reps"],
            rng=np.random.default_rng(seed),
        )
        return 0.5 * float(p["grid"][int(np.argmin(np.abs(table - p_tilde)))]), p_tilde

    def _build(self, data, n_tilde, tau_e, beta, n_splits, sched: BudgetSchedule, p, acct, rng):
        """BuildClustering of Alg. 1, level by level (breadth first; leaf order is immaterial)."""
        tree = SplitTree()
        leaves: list[tuple[int, float]] = []  # (node, ñ) of finished leaves
        active: list[tuple[int, float]] = [(0, n_tilde)]
        if n_splits == 0:  # no candidates (β > b − a or ñ_D < 2): one leaf (§10.15)
            leaves, active = active, []
        a, t, q, alpha = p["box"].a, p["t"], p["q"], p["alpha"]
        # Per-feature bounds: the cuts outside a feature's own range are never candidates.
        valid = p["box"].valid_candidates(n_splits, beta) if n_splits else None
        levels = progress_bar(p["progress"], range(p["depth"]), desc="DPM tree depth", unit="level")
        for level in levels:
            eps_exp, eps_cnt = sched.epsilon_split[level], sched.epsilon_count[level + 1]
            # Each level is charged in full (the worst case of Theorem 1), nodes or not; the
            # nodes of a level are disjoint, so they compose in parallel.
            acct.spend(
                eps_exp,
                0.0,
                label=f"split selection, level {level} ({len(active)} disjoint nodes)",
                mechanism="exponential",
                sensitivity=None,
                seeded=not rng.secure,
            )
            acct.spend(
                eps_cnt,
                sched.delta_count,
                label=f"noisy counts, level {level + 1}",
                mechanism="Laplace",
                sensitivity=1.0,
                seeded=not rng.secure,
            )
            if not active:
                continue
            slots = {node: s for s, (node, _) in enumerate(active)}
            size, rank, window, at_most = data.level_counts(tree, slots, beta, self.window)
            lam = sched.lambdas[level]
            # All selections of the level first, then one Laplace release of all 2k child counts:
            # one point changes exactly one child count by 1 (ℓ1-sensitivity 1; disjoint nodes).
            uniforms = np.atleast_1d(rng.uniform(len(active)))
            chosen = []
            for s, (_, nt) in enumerate(active):
                scores = _core.cluster.score_candidates(rank[s], window[s], nt, t, q, alpha)
                if valid is not None:
                    scores = np.where(valid.reshape(scores.shape), scores, -np.inf)
                sens = (t / q + alpha) / max(nt - lam, 1.0)  # Δf, [C] clamp (spec §2.4)
                # p ∝ exp(ε·f/(2Δf)) (spec §1, §10.1), chosen in log space by the kernel from a
                # uniform of the run's randomness source.
                choice = _core.cluster.em_choice(scores, eps_exp / (2.0 * sens), float(uniforms[s]))
                dim, j = divmod(int(choice), n_splits)
                left_size = int(at_most[s, dim, j])
                chosen.append((dim, j, left_size, int(size[s]) - left_size))
            child_sizes = np.array([c[2:] for c in chosen], dtype=float).ravel()
            noisy = dp.laplace_mechanism(child_sizes, eps_cnt, sensitivity=1.0, rng=rng).reshape(
                -1, 2
            )
            next_active: list[tuple[int, float]] = []
            outcomes = zip(active, chosen, noisy.tolist(), strict=True)
            for (node, nt), (dim, j, _, _), (n1, n2) in outcomes:
                stop = (min(n1, n2) < tau_e) if self.strict_termination else (min(n1, n2) <= tau_e)
                if stop:
                    leaves.append((node, nt))  # the split is discarded; S keeps its own ñ
                    continue
                left, right = tree.split(node, dim, a + (j + 0.5) * beta)
                next_active += [(left, n1), (right, n2)]
            active = next_active
        return tree, leaves + active

    def _average(
        self, data, tree, leaves, sched: BudgetSchedule, p, acct, rng
    ) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
        """DPAvg: Gaussian noise on each leaf's clipped sum, divided by the leaf's stored ñ, then
        clipped to the bounds; returns (centres (k, d), noisy sizes (k,), tip → centre index)."""
        box = p["box"]
        reaches = box.reach()
        reach = float(np.max(reaches))
        # max ‖x‖₂ over the passes' box (√d·max(|a|, |b|) for one pair (a, b), exactly).
        l2 = reach * math.sqrt(float(np.sum((reaches / reach) ** 2)))
        acct.spend(
            sched.epsilon_average,
            sched.delta_average,
            label=f"leaf averages ({len(leaves)} disjoint leaves)",
            mechanism="Gaussian (analytic)",
            sensitivity=l2,
            seeded=not rng.secure,
        )
        # The sums and their noise are computed in units of 2^e ≥ max reach: scaling by a
        # power of two is exact (sums, Δ₂, σ and the noise grid all scale bit for bit), and keeps
        # the sums below n and σ in range for any bounds float64 can hold.
        unit = _power_of_two_above(reach)
        slots = {node: s for s, (node, _) in enumerate(leaves)}
        sums, _ = data.slot_sums(tree, slots, 1.0 / unit)
        # One Gaussian release of the (k, d) matrix of sums: a point moves one leaf's sum by at
        # most Δ₂ in ℓ2 (leaves are disjoint), so Δ₂ is the sensitivity of the whole matrix.
        noisy_sums = dp.gaussian_mechanism(
            sums, sched.epsilon_average, sched.delta_average, sensitivity=l2 / unit, rng=rng
        )
        centres: list[np.ndarray] = []
        weights: list[float] = []
        tip_centre: dict[int, int] = {}
        for s, (node, nt) in enumerate(leaves):
            if nt > 0:  # ñ_i ≤ 0 only for a root with ñ_D ≤ 0 (spec §10.15)
                # Clipping to the public box is post-processing: free, and every centre lands
                # where a point could be.
                tip_centre[node] = len(centres)
                centre = noisy_sums[s] / nt * unit + box.shift
                centres.append(np.clip(centre, box.lower, box.upper))
                weights.append(nt)
        if not centres:  # data-independent fallback: the centre of the box
            centres, weights = [0.5 * box.lower + 0.5 * box.upper], [0.0]
        return np.vstack(centres), np.asarray(weights), tip_centre

    # ------------------------------------------------------------------ prediction
    def predict(self, X: Any) -> Any:
        """Index of the nearest centre (Euclidean) of each row of X; (n,) int64
        (:meth:`ClusteringRelease.predict <privopt.cluster.release.ClusteringRelease.predict>`
        of :attr:`release_`).

        A Dask array gives a lazy Dask array of labels.
        """
        if not hasattr(self, "release_"):
            raise NotFittedError("DPM is not fitted yet; call fit first")
        # As every scikit-learn estimator: a warning when names were seen only on one side,
        # an error when they differ.
        try:
            _check_feature_names(self, X, reset=False)
        except ValueError as err:
            raise InvalidInput(f"X: {err}") from None
        return self.release_.predict(X, n_jobs=self.n_jobs)
