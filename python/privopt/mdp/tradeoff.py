"""Metric DP across ε: the optimal matrix against the paper baselines, loss and the Bayes
adversary's error side by side (:func:`sweep_epsilon`)."""

from __future__ import annotations

import time
from concurrent.futures import Executor
from typing import Any

import numpy as np

from privopt._progress import check_progress
from privopt._validation import check_executor, check_instance, check_int
from privopt.errors import InvalidInput
from privopt.mdp.solvers import _SOLVE_OPTIONS, _check_benders_options, solve
from privopt.perturbation.adversary import check_distance_table
from privopt.perturbation.laplace import planar_laplace
from privopt.perturbation.matrix import PerturbationMatrix
from privopt.perturbation.problem import MDPProblem
from privopt.perturbation.solve import epsilon_path, exponential_mechanism
from privopt.perturbation.tradeoff import EpsilonSweep, TradeoffPoint, check_epsilons, run_tasks

__all__ = ["sweep_epsilon", "SWEEP_BASELINES"]

#: The paper baselines a metric-DP sweep can compare with.
SWEEP_BASELINES = ("expmech", "laplace")


def sweep_epsilon(
    problem: MDPProblem,
    epsilons: Any,
    *,
    method: str = "lp",
    baselines: Any = "auto",
    distances: Any = None,
    laplace_samples: int = 1000,
    rng: Any = None,
    executor: Executor | None = None,
    progress: Any = "auto",
    **options: Any,
) -> EpsilonSweep:
    """Expected loss and the Bayes-optimal adversary's error of the optimal ε-mDP matrix and
    its baselines, for each ε, on ``problem``'s records, outputs, prior, cost and η.

    For each ε the optimal matrix is solved (``method`` "lp" or "benders") and evaluated with
    :meth:`~privopt.perturbation.PerturbationMatrix.inference_error` under the problem's prior
    (the one its loss is weighted by), and so are the baselines: the exponential mechanism
    (``"expmech"``, paper Eq. 47) and planar Laplace snapped to the outputs (``"laplace"``,
    estimated from ``laplace_samples`` draws per record).

    Parameters
    ----------
    problem : the records, outputs, prior, cost and η; its own ε is not used.
    epsilons : the ε values (1/distance unit), each > 0; solved in the given order.
    method : ``"lp"`` (exact, default) or ``"benders"``: the optimal matrix's solver.
    baselines : ``"auto"`` (default: ``"expmech"``, and ``"laplace"`` when the records are
        points of the plane), a list of names from :data:`SWEEP_BASELINES`, or ``()``.
    distances : optional (N, G) loss table of the adversary (e.g. road distances: the
        road-aware adversary); default the problem's metric (see ``inference_error``).
    laplace_samples : draws per record of the planar Laplace estimate (default 1000).
    rng : randomness of the planar Laplace draws: None (the OS CSPRNG) or a seed (reproducible,
        for testing; the same seed at every ε).
    executor : None (default) solves here, one ε after another, each LP warm-started from the
        previous one (:func:`~privopt.perturbation.epsilon_path`); a
        :class:`concurrent.futures.Executor` (threads, processes, ``dask_client.get_executor()``)
        runs one task per ε (cold solves, in parallel).
    progress : ``True``, ``False`` or ``"auto"``: one bar on stderr, a step per ε.
    options : passed to :func:`privopt.mdp.solve` for the optimal matrix.

    Returns
    -------
    EpsilonSweep
        One point per mechanism and ε (``table``, ``markdown()``, ``plot()``).

    Raises
    ------
    InvalidInput
        A problem that is not an :class:`MDPProblem`, bad ε values, an unknown method or
        baseline, ``"laplace"`` asked for records that are not planar points, a bad loss
        table, executor or progress argument.

    Examples
    --------
    >>> import numpy as np
    >>> from privopt.mdp import MDPProblem
    >>> prob = MDPProblem(np.arange(6.0)[:, None], epsilon=1.0, eta=1.0)
    >>> sweep = sweep_epsilon(prob, [0.5, 2.0], progress=False)
    >>> sweep.mechanisms
    ['optimal', 'expmech']
    >>> [round(p.adversary_error, 4) for p in sweep.points if p.mechanism == "optimal"]
    [1.0605, 0.2226]
    """
    check_instance("problem", problem, MDPProblem)
    eps = check_epsilons(epsilons)
    if method not in ("lp", "benders"):
        raise InvalidInput(f"method must be 'lp' or 'benders', got {method!r}")
    _check_benders_options(method, {k: v for k, v in options.items() if k not in _SOLVE_OPTIONS})
    wanted = _baselines(problem, baselines)
    table = (
        None
        if distances is None
        else check_distance_table("distances", distances, problem.n_records)
    )
    samples = check_int("laplace_samples", laplace_samples, minimum=1)
    executor = check_executor(executor)
    progress = check_progress(progress)
    spec = (method, options, wanted, table, samples, rng)
    if executor is None and method == "lp":
        # Warm-started, one ε per call; the sweep's own bar replaces the solves' bars.
        path = epsilon_path(problem, eps, progress=False, **options)

        def warm(e: float) -> list[TradeoffPoint]:
            return _points(problem, e, next(path), spec)

        results = run_tasks(
            warm, [(e,) for e in eps], executor=None, progress=progress, desc="ε sweep"
        )
    else:
        results = run_tasks(
            _points,
            [(problem, e, None, spec) for e in eps],
            executor=executor,
            progress=progress,
            desc="ε sweep",
        )
    unit = "km" if problem.metric == "haversine" else "distance units"
    is_distance = problem.cost is problem.output_distances
    notes = {
        "method": method,
        "prior": "the problem's prior",
        "adversary_loss": "the problem's metric" if table is None else "the given table",
        "laplace_samples": samples if "laplace" in wanted else None,
        "warm_start": executor is None and method == "lp",
    }
    return EpsilonSweep(
        [p for points in results for p in points],
        loss_label=(
            f"expected distance to the report ({unit})" if is_distance else "expected cost"
        ),
        error_label=f"adversary's expected error ({unit})",
        notes=notes,
    )


def _baselines(problem: MDPProblem, baselines: Any) -> list[str]:
    planar = problem.points is not None and problem.points.shape[1] == 2
    if isinstance(baselines, str) and baselines == "auto":
        return ["expmech", "laplace"] if planar else ["expmech"]
    if isinstance(baselines, str) or not all(isinstance(b, str) for b in baselines):
        raise InvalidInput(
            f"baselines must be 'auto' or a list of names from {SWEEP_BASELINES}, got {baselines!r}"
        )
    unknown = [b for b in baselines if b not in SWEEP_BASELINES]
    if unknown:
        raise InvalidInput(f"unknown baseline(s) {unknown}; use any of {SWEEP_BASELINES}")
    if "laplace" in baselines and not planar:
        raise InvalidInput(
            "the 'laplace' baseline needs records that are points of the plane (metric "
            "'euclidean' with two coordinates, or 'haversine')"
        )
    return list(dict.fromkeys(baselines))


def _points(
    problem: MDPProblem, epsilon: float, optimal: PerturbationMatrix | None, spec: tuple
) -> list[TradeoffPoint]:
    """Every mechanism's point at ``epsilon`` (one executor task; module level, so that
    processes can run it)."""
    method, options, wanted, table, samples, rng = spec
    prob = problem.with_epsilon(epsilon)
    start = time.perf_counter()
    if optimal is None:
        optimal = solve(prob, method, progress=False, **options)
        seconds = time.perf_counter() - start
    else:
        seconds = float(optimal.info.get("time_s", np.nan))
    matrices = [("optimal", optimal, seconds)]
    for name in wanted:
        start = time.perf_counter()
        pm = (
            exponential_mechanism(prob)
            if name == "expmech"
            else planar_laplace(prob, n_samples=samples, rng=rng)
        )
        matrices.append((name, pm, time.perf_counter() - start))
    points = []
    for name, pm, took in matrices:
        seen = pm.inference_error(prob, prob.prior, distances=table)
        points.append(
            TradeoffPoint(
                name,
                epsilon,
                pm.expected_loss,
                seen.expected_error,
                seen.true_report_probability,
                took,
            )
        )
    return points
