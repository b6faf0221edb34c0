"""DPM (DP-Mondrian) clustering as a scikit-learn estimator (spec 004, Algorithms 1–2)."""

from __future__ import annotations

import math
import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import NotFittedError

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
    check_real,
)
from privopt.cluster._backend import InMemoryData, SplitTree, is_dask_array
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

#: Narrowest bounds accepted: the split grid's bucket index scales by 1/(b − a).
_MIN_WIDTH = 1e-290


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


#: scikit-learn checks that need a fitted estimator: DPM() without bounds cannot pass them.
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


def sklearn_expected_failed_checks(estimator: DPM) -> dict[str, str]:
    """The scikit-learn estimator checks that do not apply to ``estimator``, with the reason.

    For ``expected_failed_checks=`` of :func:`sklearn.utils.estimator_checks.check_estimator`
    or ``parametrize_with_checks``. With ``bounds`` every check applies (none is listed).
    Without them, ``fit`` refuses every input, because an (ε, δ)-DP release needs the public
    range of the coordinates, so each check that needs a fitted estimator is listed; the checks
    of input validation, parameters and the unfitted state still run and pass.

    Examples
    --------
    >>> sklearn_expected_failed_checks(DPM(bounds=(0, 1)))
    {}
    >>> len(sklearn_expected_failed_checks(DPM())) > 0
    True
    """
    if check_instance("estimator", estimator, DPM).bounds is not None:
        return {}
    reason = (
        "needs a fitted estimator, and DPM() without bounds refuses to fit: an (epsilon, "
        "delta)-DP release needs the public range (a, b) of the coordinates"
    )
    return dict.fromkeys(_CHECKS_NEEDING_A_FIT, reason)


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
    coordinate of the data clipped to the public ``bounds`` (Theorem 1; spec §6). The budget is
    split (ε_int, ε_cnt, ε_exp, ε_avg) = ``budget_split``·ε and (δ_cnt, δ_avg) = ``delta_split``·δ;
    counts and split selections are spread over the levels with the √(2^i) schedule, and each level
    composes in parallel over its disjoint nodes. Every spend is recorded in ``accountant_``.

    Parameters
    ----------
    bounds : (a, b), a < b, the public range [a, b] of every coordinate (same units as X).
    epsilon : total ε > 0.
    delta : total δ in (0, 1); the paper uses 1/n^1.5. Required (no data-dependent default).
    max_depth : τ_r ≥ 1, the maximum recursion depth (at most 2^τ_r clusters).
    t, q : centreness parameters, 2q ≤ t ≤ 1 and 0 < q < 1/2 (defaults 0.3 and 1/12).
    alpha : α > 0, the weight of emptiness in the score (default 5, spec §2.3).
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
        ``"reference"`` (the reference code's histogram bins; spec §9 D3).
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
    labels_ : (n,) index of the nearest centre of each training point (not private).
    cluster_sizes_ : (k,) noisy leaf sizes ñ_i (the weights of Algorithm 1).
    split_width_ : β (spec §5) in the units of X; None when ñ_D < 2 (no width estimated).
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
        epsilon: float = 1.0,
        delta: float | None = None,
        *,
        max_depth: int = 7,
        t: float = 0.3,
        q: float = 1.0 / 12.0,
        alpha: float = 5.0,
        budget_split: tuple[float, float, float, float] = (0.04, 0.18, 0.18, 0.6),
        delta_split: tuple[float, float] = (0.2, 0.8),
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
        a, b = self._validated_bounds()
        eps = check_epsilon(self.epsilon)
        if self.delta is None:
            raise InvalidInput("delta must be given (the paper uses delta = 1/n**1.5)")
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
        progress = check_progress(self.progress)
        return dict(
            progress=progress,
            a=a,
            b=b,
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

    def _validated_bounds(self) -> tuple[float, float]:
        """The public range (a, b) of every coordinate, finite, a < b, within float64's grid."""
        if self.bounds is None:
            raise InvalidInput("bounds must be given: the public range (a, b) of every coordinate")
        try:
            lower, upper = self.bounds
        except (TypeError, ValueError):
            raise InvalidInput(f"bounds must be a pair (a, b), got {self.bounds!r}") from None
        a = check_real("bounds[0]", lower, allow_inf=True)
        b = check_real("bounds[1]", upper, allow_inf=True)
        if not (math.isfinite(a) and math.isfinite(b) and a < b):
            raise InvalidInput(f"bounds must be finite with a < b, got {self.bounds!r}")
        if not _MIN_WIDTH <= b - a < math.inf:
            raise InvalidInput(
                f"bounds {self.bounds!r} span b - a = {b - a!r}, outside the float64 range the "
                f"split grid needs ([{_MIN_WIDTH:g}, 1.8e308)): rescale the data"
            )
        return a, b

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

    def _data(self, X: Any, a: float, b: float) -> InMemoryData | DaskData:
        if is_dask_array(X):
            check_numeric_dtype("X", X.dtype)
            if X.ndim != 2:
                raise InvalidInput(f"X must be 2-dimensional, got shape {X.shape}")
            # Dask is optional (the dask extra): imported once a Dask array arrives.
            from privopt.cluster._dask import DaskData

            lazy = DaskData(X, a, b)
            finite, lo, hi = lazy.summary()
            data: InMemoryData | DaskData = lazy
            if not finite:
                raise InvalidInput("X contains a non-finite value (NaN or inf)")
        else:  # already checked by points_array
            lo, hi = (X.min(), X.max()) if X.size else (a, b)
            data = InMemoryData(X, a, b, self.n_jobs)
        if data.d < 1:
            raise InvalidInput(
                f"X must have at least one column (d >= 1), got shape {(data.n, data.d)}"
            )
        if data.n < 2:
            raise InvalidInput(f"X must have at least 2 rows, got {data.n}")
        if not self.clip and (lo < a or hi > b):
            raise InvalidInput(
                f"X has values outside bounds {self.bounds!r} (pass clip=True to clip them)"
            )
        # Dimension-summed gaps (Alg. 2) and the averaging sensitivity are sums over d terms.
        if not (math.isfinite(data.d * (b - a)) and math.isfinite(math.sqrt(data.d) * max(-a, b))):
            raise InvalidInput(
                f"bounds {self.bounds!r} are too large for d = {data.d} columns in float64: "
                "rescale the data"
            )
        # Checked before any spend: the largest possible candidate set, at β = min(σ)/2, must
        # keep the per-level count arrays (slots × d × W) in memory.
        grid = DEFAULT_SIGMA_GRID if self.sigma_grid is None else np.asarray(self.sigma_grid)
        per_dim = (b - a) / (0.5 * float(np.min(grid)))
        worst = data.d * math.floor(per_dim) if per_dim < 2.0**62 else math.inf
        if worst > MAX_CANDIDATES:
            raise InvalidInput(
                f"up to d·⌊(b−a)/(min(sigma_grid)/2)⌋ = {worst} split candidates per node, more "
                f"than {MAX_CANDIDATES}: narrow the bounds or drop the smallest sigma_grid values"
            )
        return data

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
        points = X if is_dask_array(X) else points_array(X)
        p = self._validated()
        data = self._data(points, p["a"], p["b"])
        sched = budget_schedule(p["epsilon"], p["delta"], p["depth"], p["split"], p["dsplit"])
        _check_noise_range(sched, data.d, data.n, p["epsilon"])
        acct = (
            accountant if accountant is not None else dp.PrivacyAccountant(p["epsilon"], p["delta"])
        )
        rng = _noise_source(self.random_state)
        first_spend = len(acct.entries)
        # All or nothing: the whole plan is checked against the budget before any noise is
        # drawn, and a failure anywhere in the release takes every spend of this fit back out
        # (nothing computed from the noise has left the block then).
        with acct.transaction(sched.plan()):
            fitted = self._release(data, sched, p, acct, rng)
            for name in ("cluster_centers_", "cluster_sizes_"):
                check_finite_result(
                    name, fitted[name], cause=f"bounds {self.bounds!r}, epsilon {self.epsilon!r}"
                )
        seconds = fitted.pop("fit_seconds")
        for name, value in fitted.items():
            setattr(self, name, value)
        self.n_features_in_ = data.d
        self.schedule_ = sched
        self.accountant_ = acct
        self.seeded_ = not rng.secure
        self.ledger_ = acct.ledger()
        self.release_ = ClusteringRelease(
            centres=self.cluster_centers_,
            sizes=self.cluster_sizes_,
            bounds=(p["a"], p["b"]),
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

    def _release(self, data, sched: BudgetSchedule, p, acct, rng) -> dict[str, Any]:
        """Algorithm 1: every spend and every noisy release; returns the fitted attributes (and
        ``fit_seconds``, seconds per phase)."""
        start = time.perf_counter()
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
            n_splits = int(_core.cluster.num_splits(p["a"], p["b"], beta)) if beta > 0 else 0

        t_width = time.perf_counter()
        tree, leaves = self._build(data, n_tilde, tau_e, beta, n_splits, sched, p, acct, rng)
        t_tree = time.perf_counter()
        centres, sizes, tip_centre = self._average(data, tree, leaves, sched, p, acct, rng)
        end = time.perf_counter()
        return {
            "fit_seconds": {
                "split_width": t_width - start,
                "tree": t_tree - t_width,
                "averages": end - t_tree,
                "total": end - start,
            },
            "noisy_count_": n_tilde,
            "min_size_": tau_e,
            "split_width_": beta,
            "percentile_estimate_": p_tilde,
            "n_splits_": n_splits,
            "tree_": tree,
            "cluster_centers_": centres,
            # Each tip's centre: predict starts every point's nearest-centre search there.
            "tip_centres_": tree.kernel_arrays(
                {node: tip_centre.get(node, 0) for node in tree.tips()}
            ),
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
        width = p["b"] - p["a"]
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
        a, t, q, alpha = p["a"], p["t"], p["q"], p["alpha"]
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
        d, a, b = data.d, p["a"], p["b"]
        reach = max(abs(a), abs(b))
        l2 = reach * math.sqrt(d)  # max ‖x‖₂ over [a, b]^d
        acct.spend(
            sched.epsilon_average,
            sched.delta_average,
            label=f"leaf averages ({len(leaves)} disjoint leaves)",
            mechanism="Gaussian (analytic)",
            sensitivity=l2,
            seeded=not rng.secure,
        )
        # The sums and their noise are computed in units of 2^e ≥ max(|a|, |b|): scaling by a
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
                centres.append(np.clip(noisy_sums[s] / nt, a / unit, b / unit) * unit)
                weights.append(nt)
        if not centres:  # data-independent fallback: the centre of the box
            centres, weights = [np.full(d, 0.5 * a + 0.5 * b)], [0.0]
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
        return self.release_.predict(X, n_jobs=self.n_jobs)
