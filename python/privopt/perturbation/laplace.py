"""Planar Laplace snapped to the outputs (Andrés et al., CCS 2013) as a perturbation matrix,
estimated by Monte Carlo: the paper baseline of metric-DP and LR-Geo location releases.

Each record's row is the frequency of the output nearest to ``record + noise`` over
``n_samples`` planar Laplace draws (:mod:`privopt.dp.planar`). The mechanism itself is
ε-geo-indistinguishable for every pair of records (snapping is post-processing); the matrix is
an estimate of it, within about ``1/sqrt(n_samples)`` per entry.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from privopt._validation import check_instance, check_int, check_positive
from privopt.dp.planar import planar_laplace_latlon, planar_laplace_noise
from privopt.errors import InvalidInput
from privopt.geometry import nearest
from privopt.perturbation.matrix import PerturbationMatrix
from privopt.perturbation.problem import MDPProblem

__all__ = ["planar_laplace", "snapped_planar_laplace"]


def snapped_planar_laplace(
    points: np.ndarray,
    candidates: np.ndarray,
    metric: str,
    epsilon: float,
    n_samples: int,
    rng: Any = None,
) -> np.ndarray:
    """(n, m) frequencies: row i counts, over ``n_samples`` draws of ``points[i]`` plus planar
    Laplace noise of ε, which of ``candidates`` is nearest (ties: the lower index).

    Parameters
    ----------
    points : (n, 2) true positions: (lat, lon) degrees for ``"haversine"`` (ε in 1/km), planar
        coordinates for ``"euclidean"`` (ε in 1/coordinate unit).
    candidates : (m, 2) the outputs, in the same convention.
    metric : ``"haversine"`` or ``"euclidean"``.
    epsilon : ε > 0.
    n_samples : draws per point (≥ 1).
    rng : None (the OS CSPRNG), an int seed or Generator (reproducible, for testing), or a
        :class:`privopt.dp.RandomSource`: one stream for all draws.

    The arguments are the caller's, checked (helper of :func:`planar_laplace` and of
    :func:`privopt.geo.baselines.laplace`).
    """
    n = points.shape[0]
    true = np.repeat(points, n_samples, axis=0)
    if metric == "haversine":
        noisy = planar_laplace_latlon(true, epsilon, rng)
    else:
        east, north = planar_laplace_noise(epsilon, true.shape[0], rng)
        noisy = true + np.column_stack([east, north])
    snapped, _ = nearest(noisy, candidates, metric)
    z = np.zeros((n, candidates.shape[0]))
    np.add.at(z, (np.repeat(np.arange(n), n_samples), snapped), 1.0 / n_samples)
    return z


def planar_laplace(
    problem: MDPProblem, *, n_samples: int = 1000, rng: Any = None
) -> PerturbationMatrix:
    """The planar Laplace mechanism snapped to ``problem``'s outputs, as an estimated matrix.

    Parameters
    ----------
    problem : an :class:`MDPProblem` whose records are points of the plane: ``"euclidean"``
        with two coordinates (ε per coordinate unit) or ``"haversine"`` (ε per km); its
        outputs are the snapping targets; its ε the noise's.
    n_samples : draws per record (default 1000; each entry is then within ~0.03 of the
        mechanism's probability).
    rng : None (the OS CSPRNG) or a seed / Generator (reproducible, for testing only).

    Returns
    -------
    PerturbationMatrix
        ``method="laplace"``, ``eta=inf`` (the mechanism is ε-geo-indistinguishable for every
        pair; the estimate is not checked against it), ``expected_loss`` under the problem's
        prior and cost, ``info["samples"]`` = ``n_samples``.

    Raises
    ------
    InvalidInput
        A problem without planar coordinates (a precomputed or graph metric, or points that
        are not two-dimensional), ε = 0, a bad ``n_samples`` or ``rng``.
    """
    check_instance("problem", problem, MDPProblem)
    n = check_int("n_samples", n_samples, minimum=1)
    if problem.points is None or problem.points.shape[1] != 2:
        raise InvalidInput(
            "the planar Laplace baseline needs records that are points of the plane: "
            "metric 'euclidean' with two coordinates or 'haversine' (lat, lon)"
        )
    epsilon = check_positive("epsilon (of the problem)", problem.epsilon)
    outputs = (
        problem.output_points
        if problem.output_index is None
        else problem.points[problem.output_index]
    )
    assert outputs is not None  # coordinate outputs when output_index is None
    start = time.perf_counter()
    z = snapped_planar_laplace(problem.points, outputs, problem.metric, epsilon, n, rng)
    loss = float(np.sum(problem.objective * z))
    return PerturbationMatrix(
        z,
        epsilon,
        math.inf,
        loss,
        method="laplace",
        output_index=problem.output_index,
        info={"samples": n, "time_s": time.perf_counter() - start},
    )
