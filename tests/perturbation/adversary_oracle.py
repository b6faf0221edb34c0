"""The slow reference of the Bayes-optimal adversary: report by report, the posterior
normalised explicitly, every guess tried in a Python loop (the test oracle of
:func:`privopt.perturbation.bayes_inference_error`)."""

from __future__ import annotations

import numpy as np


def brute_force_adversary(
    matrix: np.ndarray, prior: np.ndarray, distances: np.ndarray, same: np.ndarray | None = None
) -> tuple[float, float, list[float]]:
    """(expected error, probability that the report is the true place, per report the least
    posterior expected loss) of the adversary that sees one report and guesses."""
    n, k = matrix.shape
    error, best_losses = 0.0, []
    for report in range(k):
        pr = sum(prior[i] * matrix[i, report] for i in range(n))
        if pr == 0:
            best_losses.append(0.0)
            continue
        posterior = [prior[i] * matrix[i, report] / pr for i in range(n)]
        best = min(
            sum(posterior[i] * distances[i, g] for i in range(n)) for g in range(distances.shape[1])
        )
        best_losses.append(best)
        error += pr * best
    true_report = 0.0
    if same is not None:
        true_report = sum(
            prior[i] * matrix[i, report] for i in range(n) for report in range(k) if same[i, report]
        )
    return error, true_report, best_losses
