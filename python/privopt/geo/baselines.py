"""Baselines of LR-Geo (spec 001 §13), all returning
:class:`~privopt.perturbation.PerturbationMatrix`.

- :func:`full_lp` — the OMG LP over all of V (:func:`privopt.perturbation.solve_exact`), at γ or at
  ∞;
- :func:`const_opt` — ConstOPT (Imola et al.): CLR-Geo with one block whose rows are all of V;
- :func:`exp_mech` — ``z_ik ∝ exp(−ε d_ik / 2)`` over all of V;
- :func:`laplace` — planar Laplace noise snapped to the nearest location, estimated by Monte
  Carlo (rows = the given locations);
- LR-Geo-F is :func:`privopt.geo.run_lrgeo` with ``gamma = gamma_graph = inf``
  (:func:`lr_geo_f_params`).

Their costs on the users' LR rows come from :func:`privopt.geo.metrics.expected_cost` with the
rows ``matrix[N_m]`` (or over all of V with p = 1/K).
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np

from privopt._validation import check_finite_result, check_instance, check_int, check_nonnegative
from privopt.errors import InvalidInput
from privopt.geo.clr import UserBlock, build_model
from privopt.geo.crtable import CostReferenceTable, TravelCosts
from privopt.geo.geography import Geography, check_geography, location_indices
from privopt.geo.params import GEO_REL_GAP, GeoParams, check_params
from privopt.geo.result import user_problem
from privopt.geo.solve import solve_clr
from privopt.perturbation import exponential_mechanism, solve_exact
from privopt.perturbation.laplace import snapped_planar_laplace
from privopt.perturbation.matrix import PerturbationMatrix

__all__ = [
    "full_lp",
    "const_opt",
    "exp_mech",
    "laplace",
    "lr_geo_f_params",
    "on_lr_rows",
    "BASELINES",
]

#: The baselines :func:`on_lr_rows` computes (``privopt geo --baselines``).
BASELINES = ("lp", "lp-inf", "constopt", "expmech", "laplace")


def _checked(geography: Any, params: Any, costs: Any) -> None:
    """The common arguments of every baseline, checked at the boundary (InvalidInput)."""
    check_geography("geography", geography)
    check_params("params", params)
    check_instance("costs", costs, (CostReferenceTable, TravelCosts))
    if costs.geography.n_locations != geography.n_locations:
        raise InvalidInput(
            f"costs must be built on the map of geography ({geography.n_locations} locations), "
            f"got one of {costs.geography.n_locations}"
        )


def _problem(geography: Geography, params: GeoParams, costs: Any, gamma: float | None) -> Any:
    _checked(geography, params, costs)
    k = geography.n_locations
    g = params.gamma if gamma is None else gamma
    return user_problem(geography, params.with_(gamma=g), costs.true_costs(np.arange(k)))


def full_lp(
    geography: Geography,
    params: GeoParams,
    costs: Any,
    *,
    gamma: float | None = None,
    rel_gap: float = GEO_REL_GAP,
    **options: Any,
) -> PerturbationMatrix:
    """The full OMG LP over all K×K entries with the true costs, uniform prior
    1/K
    (:func:`privopt.perturbation.solve_exact`: exact, with its rigorous lower bound). ``gamma``
    defaults to the
    parameters' γ; pass ``inf`` for the classical setting. ``rel_gap`` is the gap its
    ``status="optimal"`` proves (the same default as every LR-Geo solver,
    :data:`~privopt.geo.params.GEO_REL_GAP`; a larger certified gap is polished first)."""
    rel_gap = check_nonnegative("rel_gap", rel_gap)
    if "polish_gap" in options:
        raise InvalidInput("full_lp takes rel_gap, not polish_gap (they are the same target)")
    return solve_exact(_problem(geography, params, costs, gamma), polish_gap=rel_gap, **options)


def exp_mech(geography: Geography, params: GeoParams, costs: Any) -> PerturbationMatrix:
    """ExpMech over all of V (the exponent uses d, A12)."""
    return exponential_mechanism(_problem(geography, params, costs, None))


def const_opt(
    geography: Geography, params: GeoParams, costs: Any, *, method: str = "lp", **options: Any
) -> PerturbationMatrix:
    """ConstOPT: one CLR-Geo block with every location as a row (Geo-Ind among rows with
    d ≤ γ, free entries for d_ik ≤ r_exp, the rest y_k·g_ik), true costs, prior 1/K."""
    _checked(geography, params, costs)
    k = geography.n_locations
    d = geography.distance_matrix()
    cbar = costs.true_costs(np.arange(k))
    model = build_model([UserBlock(d, d, cbar)], params)
    sol = solve_clr(model, method, **options)  # finite, or it raised
    return PerturbationMatrix(
        sol.matrices[0],
        params.epsilon,
        params.gamma,
        sol.objective,
        lower_bound=sol.lower_bound,
        method="constopt",
        output_index=np.arange(k),
        info={"status": sol.status, "relative_gap": sol.relative_gap, **sol.info},
    )


def laplace(
    geography: Geography,
    params: GeoParams,
    costs: Any,
    rows: Any,
    *,
    n_samples: int = 1000,
    rng: Any = None,
) -> PerturbationMatrix:
    """Planar Laplace with snapping (Andrés et al.), its matrix rows estimated by Monte Carlo.

    For every location in ``rows``, ``n_samples`` reports are drawn (:mod:`privopt.dp.planar`),
    snapped to the nearest location of V (Haversine), and counted. The frequencies estimate the
    mechanism's rows (the artifact uses 100 samples per row); ``summary["samples"]`` says how
    many. Needs (lat, lon) coordinates.
    """
    _checked(geography, params, costs)
    if geography.metric != "haversine" or geography.points is None:
        raise InvalidInput("the planar Laplace baseline needs a (lat, lon) geography")
    n = check_int("n_samples", n_samples, minimum=1)
    r = location_indices("rows", rows, geography.n_locations)
    if r.size == 0:
        raise InvalidInput("rows must name at least one location")
    start = time.perf_counter()
    k = geography.n_locations
    z = snapped_planar_laplace(
        geography.points[r], geography.points, "haversine", params.epsilon, n, rng
    )
    cost = check_finite_result("Laplace cost", float(np.sum(costs.true_costs(r) * z) / r.size))
    return PerturbationMatrix(
        z,
        params.epsilon,
        math.inf,
        cost,
        method="laplace",
        output_index=np.arange(k),
        row_index=r,
        info={"samples": n, "time_s": time.perf_counter() - start},
    )


def lr_geo_f_params(params: GeoParams) -> GeoParams:
    """LR-Geo-F: γ = ∞ for the constraints and the LR-search graph (N_m a metric ball)."""
    check_params("params", params)
    return params.with_(gamma=math.inf, gamma_graph=math.inf)


def on_lr_rows(
    res: Any, costs: Any, wanted: list[str], *, rng: Any = None, laplace_samples: int = 200
) -> dict[str, tuple[list[np.ndarray], float]]:
    """Each requested baseline's rows for the users of an LR-Geo result, as LR-Geo's matrices
    have them: per user, the baseline's (n_m, K) rows of its LR set N_m, so that costs and the
    adversary's error compare on the same rows.

    Parameters
    ----------
    res : the :class:`~privopt.geo.LRGeoResult` whose users' LR sets are evaluated.
    costs : the cost table (CR table or exact travel costs) of the run.
    wanted : names from :data:`BASELINES`.
    rng : randomness of the planar Laplace draws, one stream for all users: None (the OS
        CSPRNG) or an int seed (reproducible, for testing).
    laplace_samples : planar Laplace draws per row.

    Returns
    -------
    ``{name: (matrices, seconds)}`` in the order of ``wanted``; ``seconds`` is the time to
    compute the baseline. A full solve's uncertified status is not warned about here (the
    caller reports statuses where it has them).
    """
    geo, p = res.geography, res.params
    runs = {
        "lp": lambda: full_lp(geo, p, costs),
        "lp-inf": lambda: full_lp(geo, p, costs, gamma=math.inf),
        "constopt": lambda: const_opt(geo, p, costs),
        "expmech": lambda: exp_mech(geo, p, costs),
    }
    out: dict[str, tuple[list[np.ndarray], float]] = {}
    for name in wanted:
        start = time.perf_counter()
        if name == "laplace":
            # one stream for all users (a seed per user would repeat the same noise)
            stream = np.random.default_rng(rng) if isinstance(rng, int) else rng
            mats = [
                laplace(geo, p, costs, lr, n_samples=laplace_samples, rng=stream).matrix
                for lr in res.lr_sets
            ]
        elif name in runs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the status column says what is certified
                pm = runs[name]()
            mats = [pm.matrix[lr] for lr in res.lr_sets]
        else:
            raise InvalidInput(f"unknown baseline {name!r}; use any of {BASELINES}")
        out[name] = (mats, time.perf_counter() - start)
    return out
