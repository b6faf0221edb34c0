"""LR-Geo across ε: each user's cost and the Bayes adversary's error against the paper
baselines on the same LR rows (:func:`sweep_epsilon`)."""

from __future__ import annotations

import time
from concurrent.futures import Executor
from typing import Any

import numpy as np

from privopt._progress import check_progress
from privopt._validation import (
    check_executor,
    check_instance,
    check_int,
    check_nonnegative,
)
from privopt.errors import InvalidInput
from privopt.geo.adversary import check_loss, user_inference_errors
from privopt.geo.baselines import BASELINES, on_lr_rows
from privopt.geo.crtable import CostReferenceTable, TravelCosts
from privopt.geo.geography import Geography, location_indices
from privopt.geo.metrics import expected_cost
from privopt.geo.params import GEO_REL_GAP, GeoParams, check_params
from privopt.geo.result import run_lrgeo
from privopt.perturbation.adversary import check_prior
from privopt.perturbation.tradeoff import EpsilonSweep, TradeoffPoint, check_epsilons, run_tasks

__all__ = ["sweep_epsilon"]


def sweep_epsilon(
    geography: Geography,
    params: GeoParams,
    epsilons: Any,
    users: Any,
    costs: CostReferenceTable | TravelCosts,
    *,
    prior: Any = None,
    loss: str = "metric",
    baselines: Any = "auto",
    laplace_samples: int = 200,
    method: str = "auto",
    rel_gap: float = GEO_REL_GAP,
    rng: int | None = None,
    executor: Executor | None = None,
    progress: Any = "auto",
) -> EpsilonSweep:
    """Cost and the Bayes-optimal adversary's error of LR-Geo and its baselines, for each ε,
    for the same users on one map.

    For each ε, LR-Geo runs for ``users`` (:func:`~privopt.geo.run_lrgeo` with ``params`` at
    that ε) and every baseline is evaluated on the same LR rows: the cost is
    :meth:`~privopt.geo.LRGeoResult.cost`'s (mean over users of the expected true travel cost,
    km), the adversary's error the mean over users of
    :func:`~privopt.geo.adversary.user_inference_errors` (it holds each user's matrix, so knows
    its LR set; prior restricted there).

    Parameters
    ----------
    geography, params : the public map and parameters; ``params.epsilon`` is replaced by each ε.
    epsilons : the ε values in 1/km, each > 0.
    users : (M,) the users' true locations (indices into V).
    costs : the server's cost table (as for :func:`~privopt.geo.run_lrgeo`).
    prior : (K,) the adversary's prior over V, or None for uniform.
    loss : the adversary's loss, ``"metric"`` (the Geo-Ind distance, km) or ``"road"``
        (travel distance on the road network, km).
    baselines : ``"auto"`` (default: ``"expmech"``, and ``"laplace"`` on a (lat, lon) map), a
        list of names from :data:`privopt.geo.baselines.BASELINES`, or ``()``.
    laplace_samples : planar Laplace draws per LR row.
    method, rel_gap : the CLR-Geo solver and its gap.
    rng : None (the OS CSPRNG) or an int seed (reproducible, for testing only): the clients'
        draws and the Laplace noise; a seed gives every ε the same draws, hence the same LR
        sets.
    executor : None (each ε here, in turn) or a :class:`concurrent.futures.Executor` running one
        task per ε.
    progress : ``True``, ``False`` or ``"auto"``: one bar on stderr, a step per ε.

    Returns
    -------
    EpsilonSweep
        Points ``"lr-geo"`` and one per baseline at each ε; ``notes`` name the prior and loss.

    Raises
    ------
    InvalidInput
        Bad map, parameters, users, costs, ε values, prior, loss, baselines (``"laplace"``
        needs a (lat, lon) map), seed, executor or progress argument; an ε that the parameters
        refuse (ε·r_exp/2 beyond float64's exponential).
    """
    check_instance("geography", geography, Geography)
    check_params("params", params)
    check_instance("costs", costs, (CostReferenceTable, TravelCosts))
    eps = check_epsilons(epsilons)
    for e in eps:
        params.with_(epsilon=e)  # refused here, before any solve, if the model cannot hold it
    where = location_indices("users", users, geography.n_locations)
    if where.size == 0:
        raise InvalidInput("users must name at least one location")
    check_prior(prior, geography.n_locations)
    loss = check_loss(loss)
    wanted = _baselines(geography, baselines)
    samples = check_int("laplace_samples", laplace_samples, minimum=1)
    rel_gap = check_nonnegative("rel_gap", rel_gap)
    if rng is not None:
        rng = check_int("rng", rng, minimum=0)
    executor = check_executor(executor)
    progress = check_progress(progress)
    spec = (prior, loss, wanted, samples, method, rel_gap, rng)
    results = run_tasks(
        _points,
        [(geography, params.with_(epsilon=e), where, costs, spec) for e in eps],
        executor=executor,
        progress=progress,
        desc="ε sweep",
    )
    return EpsilonSweep(
        [p for points in results for p in points],
        loss_label="expected travel cost (km)",
        error_label=(
            "adversary's expected error (km)"
            if loss == "metric"
            else "adversary's expected error (road km)"
        ),
        notes={
            "users": int(where.size),
            "prior": "uniform" if prior is None else "given",
            "adversary_loss": loss,
            "laplace_samples": samples if "laplace" in wanted else None,
            "method": method,
        },
    )


def _baselines(geography: Geography, baselines: Any) -> list[str]:
    latlon = geography.metric == "haversine" and geography.points is not None
    if isinstance(baselines, str) and baselines == "auto":
        return ["expmech", "laplace"] if latlon else ["expmech"]
    if isinstance(baselines, str) or not all(isinstance(b, str) for b in baselines):
        raise InvalidInput(
            f"baselines must be 'auto' or a list of names from {BASELINES}, got {baselines!r}"
        )
    unknown = [b for b in baselines if b not in BASELINES]
    if unknown:
        raise InvalidInput(f"unknown baseline(s) {unknown}; use any of {BASELINES}")
    if "laplace" in baselines and not latlon:
        raise InvalidInput("the 'laplace' baseline needs a (lat, lon) map (metric 'haversine')")
    return list(dict.fromkeys(baselines))


def _points(
    geography: Geography, params: GeoParams, users: np.ndarray, costs: Any, spec: tuple
) -> list[TradeoffPoint]:
    """LR-Geo's and every baseline's point at ``params.epsilon`` (one executor task; module
    level, so that processes can run it)."""
    prior, loss, wanted, samples, method, rel_gap, rng = spec
    start = time.perf_counter()
    res = run_lrgeo(
        geography, params, users, costs, method=method, rel_gap=rel_gap, rng=rng, progress=False
    )
    rows = {"lr-geo": ([pm.matrix for pm in res.matrices], time.perf_counter() - start)}
    rows.update(on_lr_rows(res, costs, wanted, rng=rng, laplace_samples=samples))
    points = []
    for name, (mats, seconds) in rows.items():
        seen = user_inference_errors(geography, res.lr_sets, mats, prior, loss=loss)
        points.append(
            TradeoffPoint(
                name,
                params.epsilon,
                expected_cost(mats, res.true_costs),
                float(np.mean([s.expected_error for s in seen])),
                float(np.mean([s.true_report_probability for s in seen])),
                seconds,
            )
        )
    return points
