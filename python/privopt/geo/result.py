"""LR-Geo end to end (clients → server → clients) and its result (spec 001 §4, §11).

:func:`run_lrgeo` simulates M users on one map: each builds its LR set and CR request, the
server answers with β, each user estimates its costs and uploads, the server solves CLR-Geo for
the batch, and each user gets Z_{N_m} back. Every message crosses as JSON. The result holds one
:class:`~privopt.mdp.PerturbationMatrix` per user (rows = N_m through ``row_index``, outputs =
all of V) and computes the metrics of §11.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from privopt._validation import check_bool, check_int
from privopt.errors import InvalidInput
from privopt.geo.client import LRGeoClient, SnapTable, UserState
from privopt.geo.crtable import CostReferenceTable, TravelCosts
from privopt.geo.geography import Geography
from privopt.geo.messages import CRRequest, Upload, UserMatrix
from privopt.geo.params import GEO_REL_GAP, GeoParams
from privopt.geo.server import answer_cr_request, solve_uploads
from privopt.geo.solve import ClrSolution
from privopt.mdp.result import PerturbationMatrix

__all__ = ["LRGeoResult", "run_lrgeo", "user_problem", "relaxed_problem"]


@dataclass
class LRGeoResult:
    """The users' matrices and what is needed to evaluate them.

    Attributes
    ----------
    geography, params : the map and the parameters.
    users : (M,) true locations (kept by the clients; here for evaluation).
    matrices : per user, the released :class:`PerturbationMatrix` (row_index = N_m).
    solution : the server's :class:`ClrSolution` (bounds, status, y, info).
    true_costs : per user, c̄ rows of N_m (n_m × K), km.
    lower_costs : per user, the estimates c̃ (n_m × K) used by the relaxed bound.
    uploads : the upload messages (what the server saw).
    timings : seconds per stage (client, cr, solve, total: the whole exchange, without the
        evaluation of ``true_costs``).
    """

    geography: Geography
    params: GeoParams
    users: np.ndarray
    matrices: list[PerturbationMatrix]
    solution: ClrSolution
    true_costs: list[np.ndarray]
    lower_costs: list[np.ndarray]
    uploads: list[Upload]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def lr_sets(self) -> list[np.ndarray]:
        """Each user's LR set: the row indices of its matrix."""
        return [pm.row_index for pm in self.matrices]  # type: ignore[misc]

    def cost(self) -> float:
        """Expected cost (A9), km: the **mean over users** of each user's expected true travel
        cost c̄ under a uniform prior on its LR set. (``solution.objective`` is the solver's
        objective: estimated costs ĉ, summed over users.)"""
        from privopt.geo.metrics import expected_cost

        return expected_cost([pm.matrix for pm in self.matrices], self.true_costs)  # checked

    def real_row_cost(self) -> float:
        """Cost of the users' own rows, km."""
        from privopt.geo.metrics import real_row_cost

        return real_row_cost([pm.matrix for pm in self.matrices], self.true_costs)

    def relaxed_bound(self, *, exact: bool = False, **solve_options: Any) -> float:
        """Lower bound (Thm 4.7, Eqs. 31–32) normalised like :meth:`cost`: the mean over users
        of the rigorous lower bound of the relaxed LR problem with c̃ (``exact=True``: with the
        true c̄, the exact-cost bound).

        Raises
        ------
        NumericalTrouble
            A user's relaxed problem has no finite certified lower bound.
        """
        from privopt._validation import check_finite_result
        from privopt.mdp import solve

        check_bool("exact", exact)
        bounds = []
        for pm, low, true in zip(self.matrices, self.lower_costs, self.true_costs, strict=True):
            prob = relaxed_problem(
                self.geography, self.params, pm.row_index, true if exact else low
            )
            bounds.append(solve(prob, **solve_options).lower_bound)
        return check_finite_result("relaxed lower bound", float(np.mean(bounds)))

    def violations(self, *, all_pairs: bool = False, tol: float = 1e-9) -> Any:
        """GV/GVE across and within users (:func:`privopt.geo.metrics.cross_user_violations`)."""
        from privopt.geo.metrics import cross_user_violations

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
        from privopt.geo.metrics import prop45_bound

        return prop45_bound([u.column_distances for u in self.uploads], self.params.r_exp)

    def exponential_mass(self) -> np.ndarray:
        """Mass on exponential entries per LR row (stacked over users)."""
        from privopt.geo.metrics import exponential_mass

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
        """§10 / Fig. 13: for uploaded coefficients ĉ_ik, how many CR-table rows the server can
        match — the V̂ points a whose ``β(a, v̂_k)`` lies in the interval of
        :func:`~privopt.geo.metrics.ambiguity_counts` (``"exact"`` always counts the true row).

        ``columns_per_user`` columns k are drawn per user (seeded; None: all), every row i of
        the upload kept. Returns the counts, one per coefficient (stacked over users).
        """
        from privopt._validation import check_instance
        from privopt.geo.metrics import ambiguity_counts

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

    def summary(self) -> dict[str, Any]:
        """Headline figures (JSON-able)."""
        s = self.solution
        mass = self.exponential_mass()
        return {
            "users": int(self.users.size),
            "K": self.geography.n_locations,
            "cost_km": self.cost(),
            "real_row_cost_km": self.real_row_cost(),
            # The solver's figures use the estimated costs ĉ and sum over users; cost_km above
            # is the mean over users with the true costs c̄.
            "clr_objective_sum_km": s.objective,
            "clr_objective_per_user_km": s.objective_per_user,
            "clr_lower_bound_sum_km": s.lower_bound,
            "status": s.status,
            "relative_gap": s.relative_gap,
            "y_norm": s.info.get("y_norm"),
            "exponential_mass_max": float(mass.max(initial=0.0)),
            "exponential_mass_mean": float(mass.mean()) if mass.size else 0.0,
            "lr_set_sizes": [int(pm.n_records) for pm in self.matrices],
            "rows_without_neighbours": self.rows_without_neighbours(),
            "timings_s": self.timings,
            "solver": {k: v for k, v in s.info.items() if k != "history"},
        }

    def rows_without_neighbours(self) -> int:
        """LR rows with no Geo-Ind neighbour (d ≤ γ) in their own LR set: their row only needs
        to be a distribution, so most such rows report their true location."""
        n = 0
        for up in self.uploads:
            d = up.pair_distances
            near = (d <= self.params.gamma) & ~np.eye(d.shape[0], dtype=bool)
            n += int(np.sum(~near.any(axis=1)))
        return n


def user_problem(geography: Geography, params: GeoParams, cost: np.ndarray | None = None) -> Any:
    """The :class:`~privopt.mdp.MDPProblem` the users' matrices are verified against: records
    and outputs = V, η = γ, ε; cost c̄ when given (K × K)."""
    from privopt.geo.geography import check_geography
    from privopt.geo.params import check_params
    from privopt.mdp import MDPProblem

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
    from privopt.geo.geography import check_geography, location_indices
    from privopt.geo.params import check_params
    from privopt.mdp import MDPProblem

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
        :class:`TravelCosts` (clients get the exact c̄: ĉ = c̃ = c̄, spec §17 oracles).
    method, executor, rel_gap : the CLR-Geo solver (:func:`privopt.geo.solve.solve_clr`).
    rng : the clients' randomness for v_a (None: the OS CSPRNG).
    via_json : pass every message through its JSON form (as over the wire).
    request_rows : see :class:`~privopt.geo.client.LRGeoClient`.
    progress : ``"auto"`` (default), ``True`` or ``False``: the solver's progress bar on stderr
        (:func:`privopt.geo.solve.solve_clr`).

    Raises
    ------
    InvalidInput
        M = 0, a user outside the map, bad parameters, arguments of the wrong type.
    """
    from privopt._progress import check_progress
    from privopt._validation import check_instance
    from privopt.geo.geography import check_geography
    from privopt.geo.params import check_params

    check_geography("geography", geography)
    check_params("params", params)
    check_instance("costs", costs, (CostReferenceTable, TravelCosts))
    if (
        costs.geography is not geography
        and costs.geography.fingerprint() != geography.fingerprint()
    ):
        raise InvalidInput("costs must be built on the same map as geography")
    check_bool("via_json", via_json)
    progress = check_progress(progress)
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
        state = client.start(int(m), rng)
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
        uploads, params, method=method, executor=executor, rel_gap=rel_gap, progress=progress
    )
    t_solve = time.perf_counter() - t2
    replies = [UserMatrix.from_json(wire(r)) for r in replies]
    t_total = time.perf_counter() - t0  # the exchange; c̄ below is evaluation only
    matrices, true = [], []
    for state, reply in zip(states, replies, strict=True):
        c = costs.true_costs(state.lr_set)
        true.append(c)
        matrices.append(
            PerturbationMatrix(
                reply.matrix,
                params.epsilon,
                params.gamma,
                float(np.sum(c * reply.matrix) / reply.matrix.shape[0]),
                method="lr-geo",
                output_index=np.arange(geography.n_locations),
                row_index=state.lr_set,
                summary={"batch": reply.batch.to_json()},
            )
        )
    timings = {
        "clients_s": t_client,
        "cr_requests_s": t_cr,
        "solve_s": t_solve,
        "total_s": t_total,
    }
    return LRGeoResult(
        geography,
        params,
        locs.astype(np.int64),
        matrices,
        sol,
        true,
        [cast(np.ndarray, s.cost_lower) for s in states],  # set for every state above
        uploads,
        timings,
    )


def _identity_snaps(geography: Geography) -> SnapTable:
    k = geography.n_locations
    return SnapTable(np.arange(k), np.zeros(k), np.zeros(k))
