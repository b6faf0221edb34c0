"""LR-Geo end to end (clients → server → clients) and its result (spec 001 §4, §11).

:func:`run_lrgeo` simulates M users on one map: each builds its LR set and CR request, the
server answers with β, each user estimates its costs and uploads, the server solves CLR-Geo for
the batch, and each user gets Z_{N_m} back. Every message crosses as JSON. The result,
:class:`LRGeoResult`, is the release of the run (:class:`privopt.release.Release`): one
:class:`~privopt.perturbation.PerturbationMatrix` per user (rows = N_m through ``row_index``,
outputs = all of V), the CLR-Geo certificate and the map; it verifies, saves and loads, and
computes the metrics of §11.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from privopt import _optional
from privopt._progress import check_progress
from privopt._validation import (
    MAX_EXP_ARGUMENT,
    check_bool,
    check_executor,
    check_finite_array,
    check_finite_result,
    check_instance,
    check_int,
    check_nonnegative,
    check_positive,
)
from privopt.dp import as_random_source
from privopt.errors import InvalidInput, PrivacyViolation
from privopt.geo.adversary import user_inference_errors
from privopt.geo.client import LRGeoClient, SnapTable, UserState
from privopt.geo.clr import geo_ind_edges
from privopt.geo.crtable import CostReferenceTable, TravelCosts
from privopt.geo.geography import Geography, check_geography, location_indices
from privopt.geo.messages import CRRequest, Upload, UserMatrix
from privopt.geo.metrics import (
    ambiguity_counts,
    cross_user_violations,
    expected_cost,
    exponential_mass,
    prop45_bound,
    real_row_cost,
)
from privopt.geo.params import GEO_REL_GAP, GeoParams, check_params
from privopt.geo.server import answer_cr_request, solve_uploads
from privopt.geo.solve import CLR_METHODS, ClrSolution
from privopt.geometry import map_km
from privopt.perturbation import MDPProblem, solve_exact
from privopt.perturbation.adversary import InferenceError
from privopt.perturbation.matrix import PerturbationMatrix, scan_violations, verify_matrix
from privopt.perturbation.problem import EdgeList
from privopt.release import Guarantee, Release, json_number_back
from privopt.report import axes_or_new, format_number

__all__ = ["LRGeoResult", "run_lrgeo", "user_problem", "relaxed_problem"]

#: The guarantee's name on LR-Geo's matrices.
GEO_IND = "(epsilon, gamma)-Geo-Ind"

#: Rows of the stacked matrix per block of the cross-user check (bounds its temporary pairs).
_ROWS_PER_BLOCK = 256


@dataclass(eq=False, repr=False)
class LRGeoResult(Release):
    """The users' matrices of one LR-Geo run and what is needed to check and evaluate them.

    Guarantee: (ε, γ)-Geo-Ind. Each user's matrix satisfies ``z_ik ≤ e^{ε d_ij} z_jk`` for every
    two locations i, j of its LR set within γ km of each other and every reported location k
    (verified to a relative 1e-9); its exponential entries (d_ik > r_exp) are even
    ε/2-Geo-Ind towards every row of every user (Thm 4.4), whatever the shared ỹ is.

    Every user's rows are listed in increasing location order: nothing in the result marks
    which row is a user's own location. The true locations (``users``) are kept by the clients:
    a result from :func:`run_lrgeo` holds them for evaluation, a saved one does not.

    Attributes
    ----------
    geography, params : the map and the parameters (public).
    users : (M,) true locations, or None (a loaded release: they are not saved).
    matrices : per user, the released :class:`PerturbationMatrix` (``row_index`` = N_m in
        increasing order, ``edges`` = its Geo-Ind pairs, ``kind`` = "(epsilon, gamma)-Geo-Ind").
    solution : the server's :class:`ClrSolution` (bounds, status, ỹ, info; its ``matrices``
        are the users' matrices, rows in the same order).
    true_costs : per user, c̄ rows of N_m (n_m × K), km.
    lower_costs : per user, the estimates c̃ (n_m × K) used by the relaxed bound.
    uploads : the uploads (what the server saw: distances and estimated costs ĉ), rows in
        the order of ``matrices``.
    stage_seconds : seconds per stage: ``clients``, ``cr_requests``, ``solve`` and ``total``
        (the whole exchange, without the evaluation of ``true_costs``); :attr:`timings`.
    seeded : the clients' random draws came from a seed (reproducible: for testing only).
    """

    mechanism: ClassVar[str] = "geo"

    geography: Geography
    params: GeoParams
    users: np.ndarray | None
    matrices: list[PerturbationMatrix]
    solution: ClrSolution
    true_costs: list[np.ndarray]
    lower_costs: list[np.ndarray]
    uploads: list[Upload]
    stage_seconds: dict[str, float] = field(default_factory=dict)
    seeded: bool = False

    def __post_init__(self) -> None:
        check_bool("seeded", self.seeded)

    @property
    def lr_sets(self) -> list[np.ndarray]:
        """Each user's LR set: the row indices of its matrix (increasing)."""
        return [pm.row_index for pm in self.matrices]  # type: ignore[misc]

    @property
    def n_users(self) -> int:
        """M, the number of users."""
        return len(self.matrices)

    # ------------------------------------------------------------------ the release contract
    @property
    def guarantee(self) -> Guarantee:
        """(ε, γ)-Geo-Ind within each user's LR set (see the class docstring)."""
        gamma = self.params.gamma
        within = (
            "any two locations" if math.isinf(gamma) else f"any two locations within {gamma:g} km"
        )
        stay = self.true_location_probability()
        detail = (
            ""
            if math.isnan(stay)
            else f"a location is reported as itself with probability {format_number(stay)} on "
            "average over the locations of the users' LR sets"
        )
        return Guarantee(
            GEO_IND,
            {"epsilon": self.params.epsilon, "gamma": gamma},
            f"{within} of each other in one user's LR set: the probability of each reported "
            "location differs between them by a factor of at most e^(epsilon·d), d their "
            "distance in km (epsilon in 1/km)",
            self.seeded,
            unit="km",
            detail=detail,
        )

    def true_location_probability(self) -> float:
        """Mean probability that a location is reported unchanged, over every row of every
        user's matrix (each location of each LR set), NaN where the outputs are not locations.

        A user at location i reports i with probability ``z_ii``; at a large ε this is close
        to 1 and the obfuscation hides little. The mean is over the LR locations rather than
        the users' true locations: it is computed from the released matrices alone, so it
        reveals nothing about where the users are and is the same after :meth:`save`/load.
        It equals the mean of :meth:`inference_error`'s ``true_report_probability`` (the
        adversary's uniform prior over each LR set), without solving for the adversary.
        """
        entries: list[np.ndarray] = []
        for pm in self.matrices:
            if pm.output_index is None or pm.row_index is None:
                return math.nan
            column = {int(loc): c for c, loc in enumerate(np.asarray(pm.output_index))}
            rows = np.asarray(pm.row_index)
            cols = np.array([column.get(int(loc), -1) for loc in rows])
            stay = np.where(cols >= 0, pm.matrix[np.arange(rows.size), np.maximum(cols, 0)], 0.0)
            entries.append(stay)
        return float(np.concatenate(entries).mean()) if entries else math.nan

    @property
    def status(self) -> str | None:
        """The certification status of the CLR-Geo solve."""
        return self.solution.status

    @property
    def relative_gap(self) -> float | None:
        """The proven relative gap of the CLR-Geo solve (inf when no bound was proven)."""
        return float(self.solution.relative_gap)

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per stage (``total``: the whole exchange)."""
        return dict(self.stage_seconds)

    def describe(self) -> str:
        """What was released, in one line."""
        sizes = [pm.n_records for pm in self.matrices]
        return (
            f"LR-Geo matrices of {self.n_users} users over {self.geography.n_locations} "
            f"locations (LR sets of {min(sizes)} to {max(sizes)} rows, {self.solution.method})"
        )

    def verify(self) -> LRGeoResult:
        """Re-check the guarantee on the matrices alone (the map gives the distances); raise
        :class:`~privopt.errors.PrivacyViolation` if it fails, else return self.

        - every user's matrix is row-stochastic and (ε, γ)-Geo-Ind over the pairs of its LR set
          within γ, with the pairs computed from the map (to a relative 1e-9);
        - the exponential entries (d_ik > r_exp) of all users are ε/2-Geo-Ind between every two
          rows of any users (Thm 4.4); pairs whose bound e^(ε·d/2) exceeds float64 are left out.
        """
        p, geo = self.params, self.geography
        for m, pm in enumerate(self.matrices):
            if pm.epsilon != p.epsilon or pm.eta != p.gamma or pm.kind != GEO_IND:
                raise PrivacyViolation(
                    f"user {m}'s matrix states {pm.kind} with epsilon = {pm.epsilon}, "
                    f"gamma = {pm.eta}, not the run's epsilon = {p.epsilon}, gamma = {p.gamma}"
                )
            lr = pm.row_index
            edges = geo_ind_edges(geo.distance_rows(lr, lr), p.gamma)
            check = verify_matrix(pm.matrix, edges, p.epsilon, check_input=False)
            if not check.ok(1e-9):
                raise PrivacyViolation(
                    f"user {m}'s matrix is not (epsilon, gamma)-Geo-Ind: {check}"
                )
        worst = self.shared_entry_violation()
        if worst > 1e-9:
            raise PrivacyViolation(
                "the exponential entries are not epsilon/2-Geo-Ind across users (Thm 4.4): "
                f"worst relative violation {worst:.3g}"
            )
        return self

    def shared_entry_violation(self) -> float:
        """The worst relative violation of Thm 4.4: ``max(0, z_ik − e^{ε d_ij/2} z_jk) / z_ik``
        over every two LR rows i, j of any users (the same user's included) and every column k
        exponential for both (d_ik > r_exp and d_jk > r_exp); 0 when it holds."""
        p = self.params
        stacked = np.vstack([pm.matrix for pm in self.matrices])
        where = np.concatenate(self.lr_sets)
        exponential = self.geography.distance_rows(where) > p.r_exp
        # A non-exponential entry on the right must never bind: 1 ≥ any probability.
        left = np.where(exponential, stacked, 0.0)
        right = np.where(exponential, stacked, 1.0)
        pair_distance = self.geography.distance_rows(where, where)
        limit = 2.0 * MAX_EXP_ARGUMENT / p.epsilon
        worst = 0.0
        for start in range(0, where.size, _ROWS_PER_BLOCK):
            block = pair_distance[start : start + _ROWS_PER_BLOCK]
            i, j = np.nonzero(block <= limit)
            i += start
            keep = i != j
            edges = EdgeList(i[keep], j[keep], pair_distance[i[keep], j[keep]])
            scan = scan_violations(left, edges, p.epsilon / 2, right=right, check_input=False)
            worst = max(worst, scan.max_relative)
        return worst

    def _summary_fields(self) -> dict[str, Any]:
        s = self.solution
        mass = self.exponential_mass()
        return {
            "users": self.n_users,
            "K": self.geography.n_locations,
            "epsilon": self.params.epsilon,
            "gamma": self.params.gamma,
            "cost_km": self.cost(),
            # The solver's figures use the estimated costs ĉ and sum over users; cost_km above
            # is the mean over users with the true costs c̄.
            "clr_objective_sum_km": s.objective,
            "clr_objective_per_user_km": s.objective_per_user,
            "clr_lower_bound_sum_km": s.lower_bound,
            "method": s.method,
            "y_norm": s.info.get("y_norm"),
            "exponential_mass_max": float(mass.max(initial=0.0)),
            "exponential_mass_mean": float(mass.mean()) if mass.size else 0.0,
            "lr_set_sizes": [int(pm.n_records) for pm in self.matrices],
            "rows_without_neighbours": self.rows_without_neighbours(),
            "timings_s": self.timings,
            "solver": {k: v for k, v in s.info.items() if k != "history"},
            "seeded": self.seeded,
        }

    def plot(self, ax: Any = None) -> Any:
        """User 0's distribution of the reported location on the map (:meth:`plot_user`)."""
        return self.plot_user(0, ax)

    def plot_user(self, m: int = 0, ax: Any = None) -> Any:
        """User m's distribution of the reported location on the map, with its LR set N_m.

        The distribution is that of the user's own row when the true location is known (a
        result of :func:`run_lrgeo`; it is starred, with the obfuscation range r_obf), else the
        mean over the LR rows (what an observer who knows only N_m expects). A map without
        coordinates shows the probabilities by location index.
        """
        m = check_int("m", m, minimum=0, maximum=self.n_users - 1)
        ax = axes_or_new(ax, figsize=(5.5, 4.5))
        geo, pm = self.geography, self.matrices[m]
        own = self._own_row(m)
        row = pm.matrix.mean(axis=0) if own is None else pm.matrix[own]
        if geo.points is None:
            ax.bar(np.arange(row.size), row, color="C0")
            ax.set_xlabel("reported location (index)")
            ax.set_ylabel("probability of being reported")
            ax.set_title(f"User {m}: where the reported location falls")
            return ax
        centre = geo.points.min(axis=0) / 2 + geo.points.max(axis=0) / 2

        def xy(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return map_km(q, geo.metric, origin=centre)

        ax.scatter(*xy(geo.points), s=3, c="0.85", label="all locations")
        shown = row > 1e-6 * row.max()
        sc = ax.scatter(*xy(geo.points[shown]), s=10, c=np.log10(row[shown]), cmap="viridis")
        ax.figure.colorbar(sc, ax=ax, label="probability of being reported (log10)")
        ax.scatter(
            *xy(geo.points[pm.row_index]),
            s=30,
            facecolors="none",
            edgecolors="C1",
            label="locally relevant locations (N_m)",
        )
        if own is not None:
            self._mark_user(ax, xy, int(pm.row_index[own]))  # type: ignore[index]
        # km on both axes and equal aspect: distances and the obfuscation circle are true.
        ax.set_aspect("equal", adjustable="datalim")
        haversine = geo.metric == "haversine"
        ax.set_xlabel("km east of the map centre" if haversine else "x (km)")
        ax.set_ylabel("km north of the map centre" if haversine else "y (km)")
        # Outside the axes, so that the legend never covers a location.
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.15), fontsize=7, ncol=2, frameon=False)
        ax.set_title(
            f"User {m}: where the reported location falls"
            + ("" if own is None else " (true location starred)")
        )
        return ax

    def _mark_user(self, ax: Any, xy: Any, location: int) -> None:
        """The true location (a star) and its obfuscation range r_obf (a dashed circle)."""
        assert self.geography.points is not None
        point = self.geography.points[location : location + 1]
        ax.scatter(*xy(point), marker="*", s=160, c="r", label="true location (v_m)")
        centre = xy(point)
        ax.add_patch(
            _optional.matplotlib().patches.Circle(
                (centre[0][0], centre[1][0]),
                self.params.r_obf,
                fill=False,
                ls="--",
                color="C3",
                label=f"obfuscation range r_obf = {self.params.r_obf:g} km",
            )
        )

    def _own_row(self, m: int) -> int | None:
        """The row of user m's true location in its matrix; None when the locations are not
        known (a loaded release)."""
        if self.users is None:
            return None
        return int(np.searchsorted(self.lr_sets[m], self.users[m]))

    def _state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        map_meta, map_data = self.geography._state()
        s = self.solution
        offsets = np.cumsum([0] + [pm.n_records for pm in self.matrices])
        meta = {
            "params": self.params.to_json(),
            "map": map_meta,
            "users": [
                {"id": up.user, "expected_loss": pm.expected_loss, "info": _plain(pm.info)}
                for up, pm in zip(self.uploads, self.matrices, strict=True)
            ],
            "solution": {
                "objective": s.objective,
                "lower_bound": s.lower_bound,
                "status": s.status,
                "relative_gap": s.relative_gap,
                "method": s.method,
                "info": _plain(s.info),
            },
            "stage_seconds": dict(self.stage_seconds),
            "seeded": self.seeded,
        }
        data: dict[str, Any] = {f"map_{k}": v for k, v in map_data.items()}
        data.update(
            lr_offsets=offsets.astype(np.int64),
            lr_sets=np.concatenate(self.lr_sets).astype(np.int64),
            matrices=np.vstack([pm.matrix for pm in self.matrices]),
            true_costs=np.vstack(self.true_costs),
            lower_costs=np.vstack(self.lower_costs),
            upload_costs=np.vstack([up.cost for up in self.uploads]),
            y_tilde=s.y_tilde,
        )
        return meta, data

    @classmethod
    def _from_state(cls, meta: dict[str, Any], data: dict[str, Any]) -> LRGeoResult:
        wanted = ("lr_offsets", "lr_sets", "matrices", "true_costs", "lower_costs")
        missing = [k for k in (*wanted, "upload_costs", "y_tilde") if k not in data]
        if missing:
            raise InvalidInput(f"the saved LR-Geo release lacks the arrays {missing}")
        geo = Geography._from_state(
            meta.get("map", {}),
            {k[len("map_") :]: v for k, v in data.items() if k.startswith("map_")},
        )
        params = GeoParams.from_json(meta.get("params"))
        k = geo.n_locations
        users = meta.get("users")
        offsets = check_finite_array("lr_offsets", data["lr_offsets"], ndim=1, dtype=np.int64)
        if not isinstance(users, list) or offsets.size != len(users) + 1 or not users:
            raise InvalidInput("the saved LR-Geo release must list its users, one LR set each")
        stacked = {
            name: check_finite_array(name, data[name], shape=(int(offsets[-1]), k))
            for name in ("matrices", "true_costs", "lower_costs", "upload_costs")
        }
        lr_all = check_finite_array(
            "lr_sets", data["lr_sets"], shape=(int(offsets[-1]),), dtype=np.int64
        )
        if offsets[0] != 0 or np.any(np.diff(offsets) < 1):
            raise InvalidInput("lr_offsets must rise from 0 by at least one row per user")
        if lr_all.size and (lr_all.min() < 0 or lr_all.max() >= k):
            raise InvalidInput(f"an LR set names a location outside the map's {k}")
        parts = [slice(int(a), int(b)) for a, b in itertools.pairwise(offsets)]
        matrices, uploads = [], []
        for part, user in zip(parts, users, strict=True):
            if not isinstance(user, dict):
                raise InvalidInput("each saved user must be a JSON object")
            lr = lr_all[part]
            pair = geo.distance_rows(lr, lr)
            matrices.append(
                _user_matrix(
                    stacked["matrices"][part],
                    params,
                    lr,
                    pair,
                    json_number_back(user.get("expected_loss")),
                    dict(user.get("info", {})),
                )
            )
            uploads.append(
                Upload(
                    str(user.get("id", "")),
                    pair,
                    geo.distance_rows(lr),
                    stacked["upload_costs"][part],
                    np.arange(k),
                )
            )
        sol = meta.get("solution", {})
        solution = ClrSolution(
            matrices=[pm.matrix for pm in matrices],
            y_tilde=check_finite_array("y_tilde", data["y_tilde"], shape=(k,)),
            objective=json_number_back(sol.get("objective")),
            lower_bound=json_number_back(sol.get("lower_bound")),
            status=str(sol.get("status")),
            relative_gap=json_number_back(sol.get("relative_gap")),
            method=str(sol.get("method")),
            info=dict(sol.get("info", {})),
        )
        seeded = meta.get("seeded", False)
        return cls(
            geography=geo,
            params=params,
            users=None,
            matrices=matrices,
            solution=solution,
            true_costs=[stacked["true_costs"][part] for part in parts],
            lower_costs=[stacked["lower_costs"][part] for part in parts],
            uploads=uploads,
            stage_seconds={
                str(a): float(b) for a, b in dict(meta.get("stage_seconds", {})).items()
            },
            seeded=seeded if isinstance(seeded, bool) else True,
        )

    # ------------------------------------------------------------------ evaluation
    def cost(self) -> float:
        """Expected cost (A9), km: the **mean over users** of each user's expected true travel
        cost c̄ under a uniform prior on its LR set. (``solution.objective`` is the solver's
        objective: estimated costs ĉ, summed over users.)"""
        return expected_cost([pm.matrix for pm in self.matrices], self.true_costs)  # checked

    def inference_error(self, prior: Any = None, *, loss: str = "metric") -> list[InferenceError]:
        """The Bayes-optimal adversary's view of each user's release
        (:func:`privopt.geo.adversary.user_inference_errors`): its expected error in km when it
        holds the user's matrix, sees one report and guesses the true location, and the
        probability that the report is the true location.

        Parameters
        ----------
        prior : (K,) the adversary's prior over the locations V, or None (default) for
            uniform; restricted to each user's LR set (which the matrix reveals).
        loss : ``"metric"`` (the Geo-Ind distance, km) or ``"road"`` (travel distance on the
            road network, km: the road-aware adversary).

        Returns
        -------
        list of :class:`~privopt.perturbation.adversary.InferenceError`, one per user; the
        mean of their ``expected_error`` is the release's figure (as :meth:`cost` averages).
        """
        return user_inference_errors(
            self.geography, self.lr_sets, [pm.matrix for pm in self.matrices], prior, loss=loss
        )

    def real_row_cost(self) -> float:
        """Cost of the users' own rows, km (mean over users).

        Raises
        ------
        InvalidInput
            The true locations are not known: a loaded release does not hold them.
        """
        rows = [self._own_row(m) for m in range(self.n_users)]
        if any(r is None for r in rows):
            raise InvalidInput(
                "real_row_cost needs the users' true locations, which a saved LR-Geo release "
                "does not hold (they stay with the clients)"
            )
        own = [slice(r, r + 1) for r in rows if r is not None]
        return real_row_cost(
            [pm.matrix[o] for pm, o in zip(self.matrices, own, strict=True)],
            [c[o] for c, o in zip(self.true_costs, own, strict=True)],
        )

    def relaxed_bound(self, *, exact: bool = False, **solve_options: Any) -> float:
        """Lower bound (Thm 4.7, Eqs. 31–32) normalised like :meth:`cost`: the mean over users
        of the rigorous lower bound of the relaxed LR problem with c̃ (``exact=True``: with the
        true c̄, the exact-cost bound).

        Raises
        ------
        NumericalTrouble
            A user's relaxed problem has no finite certified lower bound.
        """
        check_bool("exact", exact)
        bounds = []
        for pm, low, true in zip(self.matrices, self.lower_costs, self.true_costs, strict=True):
            prob = relaxed_problem(
                self.geography, self.params, pm.row_index, true if exact else low
            )
            bounds.append(solve_exact(prob, **solve_options).lower_bound)
        return check_finite_result("relaxed lower bound", float(np.mean(bounds)))

    def violations(self, *, all_pairs: bool = False, tol: float = 1e-9) -> Any:
        """GV/GVE across and within users (:func:`privopt.geo.metrics.cross_user_violations`)."""
        check_bool("all_pairs", all_pairs)
        return cross_user_violations(
            [pm.matrix for pm in self.matrices],
            self.lr_sets,
            self.geography.distance_rows,
            self.params.epsilon,
            self.params.gamma,
            tol=tol,
            all_pairs=all_pairs,
        )

    def prop45_bound(self) -> float:
        """Prop. 4.5 (30) for these users (all-pairs fraction not guaranteed)."""
        return prop45_bound([u.column_distances for u in self.uploads], self.params.r_exp)

    def exponential_mass(self) -> np.ndarray:
        """Mass on exponential entries per LR row (stacked over users)."""
        return exponential_mass(
            [pm.matrix for pm in self.matrices],
            [u.column_distances for u in self.uploads],
            self.params.r_exp,
        )

    def ambiguity(
        self,
        table: CostReferenceTable,
        *,
        interval: str = "exact",
        columns_per_user: int | None = 50,
        seed: int | None = 0,
    ) -> np.ndarray:
        """The paper's Fig. 13: for uploaded coefficients ĉ_ik, how many CR-table rows the server
        can match — the V̂ points a whose ``β(a, v̂_k)`` lies in the interval of
        :func:`~privopt.geo.metrics.ambiguity_counts` (``"exact"`` always counts the true row).

        ``columns_per_user`` columns k are drawn per user (seeded; None: all), every row i of
        the upload kept. Returns the counts, one per coefficient (stacked over users).
        """
        check_instance("table", table, CostReferenceTable)
        if columns_per_user is not None:
            columns_per_user = check_int("columns_per_user", columns_per_user, minimum=1)
        if seed is not None:
            seed = check_int("seed", seed, minimum=0)
        rng = np.random.default_rng(seed)
        everyone = np.arange(table.n_points)
        counts = []
        for up in self.uploads:
            k_all = up.cost.shape[1]
            take = k_all if columns_per_user is None else min(columns_per_user, k_all)
            for k in rng.permutation(k_all)[:take]:
                beta = table.beta(everyone, [table.snap[k]])[:, 0]
                counts.append(
                    ambiguity_counts(up.cost[:, k], beta, table.delta_max, interval=interval)
                )
        return np.concatenate(counts)

    def rows_without_neighbours(self) -> int:
        """LR rows with no Geo-Ind neighbour (d ≤ γ) in their own LR set: their row only needs
        to be a distribution, so most such rows report their true location."""
        n = 0
        for up in self.uploads:
            d = up.pair_distances
            near = (d <= self.params.gamma) & ~np.eye(d.shape[0], dtype=bool)
            n += int(np.sum(~near.any(axis=1)))
        return n


def _user_matrix(
    z: np.ndarray,
    params: GeoParams,
    lr_set: np.ndarray,
    pair_distances: np.ndarray,
    expected_loss: float,
    info: dict[str, Any],
) -> PerturbationMatrix:
    """One user's released matrix: rows = its LR set, outputs = all of V, the Geo-Ind pairs of
    the LR set as its edges (so that it verifies on its own)."""
    return PerturbationMatrix(
        z,
        params.epsilon,
        params.gamma,
        expected_loss,
        method="lr-geo",
        output_index=np.arange(z.shape[1]),
        info=info,
        row_index=lr_set,
        edges=geo_ind_edges(pair_distances, params.gamma),
        kind=GEO_IND,
    )


def _plain(value: Any) -> Any:
    """A solver's figures as plain JSON values (numpy numbers and arrays to Python)."""
    return json.loads(json.dumps(value, default=_json_default))


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def user_problem(geography: Geography, params: GeoParams, cost: np.ndarray | None = None) -> Any:
    """The :class:`~privopt.perturbation.MDPProblem` the users' matrices are verified against:
    records and outputs = V, η = γ, ε; cost c̄ when given (K × K)."""
    check_geography("geography", geography)
    check_params("params", params)
    if geography.points is not None and geography.metric != "precomputed":
        return MDPProblem(
            geography.points,
            epsilon=params.epsilon,
            eta=params.gamma,
            metric=geography.metric,
            cost=cost,
        )
    return MDPProblem(
        geography.distance_matrix(),
        epsilon=params.epsilon,
        eta=params.gamma,
        metric="precomputed",
        cost=cost,
    )


def relaxed_problem(geography: Geography, params: GeoParams, rows: Any, cost: np.ndarray) -> Any:
    """Relaxed LR-OMG of one user (Eqs. 31–32): records N_m (uniform prior), outputs all of V,
    constraints (16) among N_m with d ≤ γ, no exponential entries, cost ``cost`` (n × K)."""
    check_geography("geography", geography)
    check_params("params", params)
    r = location_indices("rows", rows, geography.n_locations)
    if geography.points is None or geography.metric == "precomputed":
        return MDPProblem(
            geography.distance_rows(r, r),
            epsilon=params.epsilon,
            eta=params.gamma,
            metric="precomputed",
            output_distances=geography.distance_rows(r),
            cost=cost,
        )
    return MDPProblem(
        geography.points[r],
        epsilon=params.epsilon,
        eta=params.gamma,
        metric=geography.metric,
        outputs=geography.points,
        cost=cost,
    )


def run_lrgeo(
    geography: Geography,
    params: GeoParams,
    users: Any,
    costs: CostReferenceTable | TravelCosts,
    *,
    method: str = "auto",
    executor: Executor | None = None,
    rel_gap: float = GEO_REL_GAP,
    time_limit: float | None = None,
    rng: Any = None,
    via_json: bool = True,
    request_rows: str = "lr",
    progress: bool | str = "auto",
) -> LRGeoResult:
    """Run LR-Geo for users at locations ``users``.

    Parameters
    ----------
    geography, params : the public map and parameters.
    users : int array (M,) of true locations (M ≥ 1).
    costs : the server's :class:`CostReferenceTable` (clients estimate ĉ, c̃ from its β), or
        :class:`TravelCosts` (clients get the exact c̄, ĉ = c̃ = c̄).
    method, executor, rel_gap, time_limit : the CLR-Geo solver
        (:func:`privopt.geo.solve.solve_clr`; ``time_limit`` in seconds, None: none).
    rng : the clients' randomness for v_a, one stream for all users (None: the OS CSPRNG; an
        int seed or a Generator makes the run reproducible, for testing only).
    via_json : pass every message through its JSON form (as over the wire).
    request_rows : see :class:`~privopt.geo.client.LRGeoClient`.
    progress : ``"auto"`` (default), ``True`` or ``False``: the solver's progress bar on stderr
        (:func:`privopt.geo.solve.solve_clr`).

    Returns
    -------
    LRGeoResult
        The release: every user's matrix with its LR set in increasing order.

    Raises
    ------
    InvalidInput
        M = 0, a user outside the map, bad parameters, arguments of the wrong type.
    """
    check_geography("geography", geography)
    check_params("params", params)
    check_instance("costs", costs, (CostReferenceTable, TravelCosts))
    if (
        costs.geography is not geography
        and costs.geography.fingerprint() != geography.fingerprint()
    ):
        raise InvalidInput("costs must be built on the same map as geography")
    check_bool("via_json", via_json)
    # The solver's arguments are checked here too, before any client works.
    if not isinstance(method, str) or method not in CLR_METHODS:
        raise InvalidInput(f"method must be one of {CLR_METHODS}, got {method!r}")
    rel_gap = check_nonnegative("rel_gap", rel_gap)
    if time_limit is not None:
        time_limit = check_positive("time_limit", time_limit, allow_inf=True)
    check_executor(executor)
    progress = check_progress(progress)
    source = as_random_source("secure" if rng is None else rng)
    locs = np.atleast_1d(np.asarray(users))
    if locs.ndim != 1 or locs.size == 0 or locs.dtype.kind not in "iu":
        raise InvalidInput("users must be a non-empty 1-D int array of locations (M >= 1)")
    for u in locs:
        check_int("users", u, minimum=0, maximum=geography.n_locations - 1)
    t0 = time.perf_counter()
    wire = (lambda m: json.loads(json.dumps(m.to_json()))) if via_json else (lambda m: m.to_json())
    table = costs if isinstance(costs, CostReferenceTable) else None
    snaps = SnapTable.of(table) if table is not None else None
    client = LRGeoClient(
        geography, params, snaps or _identity_snaps(geography), request_rows=request_rows
    )
    states: list[UserState] = []
    uploads: list[Upload] = []
    t_cr = 0.0
    for n, m in enumerate(locs):
        state = client.start(int(m), source)
        if table is not None:
            t1 = time.perf_counter()
            block = answer_cr_request(table, CRRequest.from_json(wire(state.request)), params)
            t_cr += time.perf_counter() - t1
            client.estimate(state, type(block).from_json(wire(block)))
        else:
            exact = costs.true_costs(state.lr_set)
            state.cost_upper, state.cost_lower = exact, exact
        uploads.append(Upload.from_json(wire(client.upload(state, f"user{n}"))))
        states.append(state)
    t_client = time.perf_counter() - t0 - t_cr
    t2 = time.perf_counter()
    replies, sol = solve_uploads(
        uploads,
        params,
        method=method,
        executor=executor,
        rel_gap=rel_gap,
        time_limit=time_limit,
        progress=progress,
    )
    t_solve = time.perf_counter() - t2
    replies = [UserMatrix.from_json(wire(r)) for r in replies]
    t_total = time.perf_counter() - t0  # the exchange; c̄ below is evaluation only
    users_out = _sorted_users(states, uploads, replies, params, costs)
    return LRGeoResult(
        geography=geography,
        params=params,
        users=locs.astype(np.int64),
        matrices=[u[0] for u in users_out],
        solution=replace(sol, matrices=[u[0].matrix for u in users_out]),
        true_costs=[u[1] for u in users_out],
        lower_costs=[u[2] for u in users_out],
        uploads=[u[3] for u in users_out],
        stage_seconds={
            "clients": t_client,
            "cr_requests": t_cr,
            "solve": t_solve,
            "total": t_total,
        },
        seeded=not source.secure,
    )


def _sorted_users(
    states: list[UserState],
    uploads: list[Upload],
    replies: list[UserMatrix],
    params: GeoParams,
    costs: CostReferenceTable | TravelCosts,
) -> list[tuple[PerturbationMatrix, np.ndarray, np.ndarray, Upload]]:
    """Per user: (matrix, c̄, c̃, upload), every row order changed to increasing location
    ids, so that no row stands out as the user's own (a client lists it first)."""
    out = []
    for state, up, reply in zip(states, uploads, replies, strict=True):
        order = np.argsort(state.lr_set, kind="stable")
        lr = state.lr_set[order]
        c = costs.true_costs(lr)
        z = reply.matrix[order]
        pair = up.pair_distances[np.ix_(order, order)]
        upload = Upload(up.user, pair, up.column_distances[order], up.cost[order], up.columns)
        loss = float(np.sum(c * z) / z.shape[0])
        pm = _user_matrix(z, params, lr, pair, loss, {"batch": reply.batch.to_json()})
        assert state.cost_lower is not None  # set for every state by run_lrgeo
        out.append((pm, c, state.cost_lower[order], upload))
    return out


def _identity_snaps(geography: Geography) -> SnapTable:
    k = geography.n_locations
    return SnapTable(np.arange(k), np.zeros(k), np.zeros(k))
