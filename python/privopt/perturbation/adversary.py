"""The Bayes-optimal adversary's view of a perturbation matrix (Shokri, Theodorakopoulos,
Le Boudec & Hubaux, *Quantifying Location Privacy*, IEEE S&P 2011; Shokri et al., CCS 2012).

The adversary knows the released matrix Z (rows: the places the user may truly be, ``Z[i, k] =
Pr[report k | true place i]``), a prior p over those places, and sees one report k. Its
posterior is ``post(i | k) ∝ p_i Z_ik``; it guesses the candidate place g that minimises its
expected loss ``Σ_i post(i | k) d(i, g)``. Its expected error over the user's reports is

    E = Σ_k Pr(k) min_g Σ_i post(i | k) d(i, g) = Σ_k min_g Σ_i p_i Z_ik d(i, g),

in the unit of the loss d (the metric's km for a location release; travel km on the road graph
for the road-aware adversary). A larger E is more privacy. Also reported: the probability that
the report is the true place itself, ``Σ_i p_i Σ_k Z_ik [d(i, o_k) = 0]``.

The sums over i for all guesses g at once are one matrix product, ``(p ∘ Z)ᵀ D`` (K × G),
computed for a block of reports at a time so that memory stays bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from privopt._validation import (
    check_bool,
    check_finite_array,
    check_finite_result,
    check_probability_vector,
)
from privopt.errors import InvalidInput

__all__ = ["InferenceError", "bayes_inference_error", "check_prior", "check_distance_table"]

#: Entries of one block of the (reports × guesses) expected-loss table (bounds its memory).
_BLOCK_ENTRIES = 4_000_000


@dataclass(frozen=True)
class InferenceError:
    """What the Bayes-optimal adversary achieves against one released matrix.

    Attributes
    ----------
    expected_error : the adversary's expected distance error E (unit of the loss: km for a
        location release), over the prior and the mechanism's randomness. 0 means the report
        gives the true place away; larger is more private.
    true_report_probability : probability that the report is at the true place
        (``d(true place, report) = 0``).
    guesses : (K,) int64, the adversary's guess for each report: a column of the loss table
        (the guess set). -1 for a report that has probability 0 (nothing to guess).
    report_probability : (K,) float64, Pr(report k) under the prior.
    loss : what the loss measures: ``"metric"`` (the problem's distance), ``"road"`` (travel
        distance on the road graph) or ``"given"`` (a table the caller passed).
    """

    expected_error: float
    true_report_probability: float
    guesses: np.ndarray
    report_probability: np.ndarray
    loss: str = "metric"

    def __repr__(self) -> str:
        return (
            f"InferenceError(expected_error={self.expected_error:.6g}, "
            f"true_report_probability={self.true_report_probability:.6g}, "
            f"reports={self.guesses.size}, loss={self.loss!r})"
        )


def check_prior(prior: Any, n: int, name: str = "prior") -> np.ndarray:
    """A prior over ``n`` places: None for uniform, else a probability vector of shape (n,)."""
    if prior is None:
        return np.full(n, 1.0 / n)
    p = check_probability_vector(name, prior)
    if p.shape != (n,):
        raise InvalidInput(f"{name} must have shape ({n},) (one entry per row), got {p.shape}")
    return p


def bayes_inference_error(
    matrix: Any,
    prior: Any,
    distances: Any,
    *,
    same_place: Any = None,
    loss: str = "given",
    check_input: bool = True,
) -> InferenceError:
    """The Bayes-optimal adversary's expected error against ``matrix`` (module docstring).

    Parameters
    ----------
    matrix : (n, K) the released probabilities ``Z[i, k] = Pr[report k | true place i]``
        (rows sum to 1).
    prior : (n,) the adversary's prior over the true places (a probability vector), or None
        for uniform.
    distances : (n, G) the adversary's loss ``d(i, g)`` ≥ 0 between each true place i and
        each candidate guess g (km, say); the guess set is its columns.
    same_place : (n, K) bool, True where report k is the true place i (for
        ``true_report_probability``); None: 0 is reported.
    loss : the label of ``distances`` kept in the result (``"metric"``, ``"road"``,
        ``"given"``).
    check_input : validate the arguments (default); privopt's own callers pass False for
        arrays built from a validated problem.

    Returns
    -------
    InferenceError

    Raises
    ------
    InvalidInput
        Arrays that are not finite real arrays of matching shapes, a negative or infinite
        distance (a disconnected road graph has no travel distance between its parts), a
        matrix with negative entries or rows that do not sum to 1, a prior that is not a
        probability vector.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> bayes_inference_error(np.eye(2), None, d).expected_error   # the report is the truth
    0.0
    >>> bayes_inference_error(np.full((2, 2), 0.5), None, d).expected_error   # no information
    0.5
    """
    if check_bool("check_input", check_input):
        matrix, prior, distances, same_place = _checked(matrix, prior, distances, same_place)
    k = matrix.shape[1]
    joint = prior[:, None] * matrix  # p_i Z_ik: Pr(true place i and report k)
    report_probability = joint.sum(axis=0)
    guesses = np.empty(k, dtype=np.int64)
    error = 0.0
    step = max(1, _BLOCK_ENTRIES // max(distances.shape[1], 1))
    for start in range(0, k, step):
        expected = joint[:, start : start + step].T @ distances  # (reports, guesses)
        best = np.argmin(expected, axis=1)
        guesses[start : start + step] = best
        error += float(expected[np.arange(best.size), best].sum())
    guesses[report_probability == 0] = -1
    true_report = 0.0 if same_place is None else float(joint[same_place].sum())
    return InferenceError(
        float(check_finite_result("expected_error", max(error, 0.0))),
        min(max(true_report, 0.0), 1.0),
        guesses,
        report_probability,
        loss,
    )


def _checked(
    matrix: Any, prior: Any, distances: Any, same_place: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The arguments of :func:`bayes_inference_error`, checked at the public boundary."""
    z = check_finite_array("matrix", matrix, ndim=2)
    if z.size == 0:
        raise InvalidInput(f"matrix must be a non-empty (n, K) array, got shape {z.shape}")
    if float(z.min()) < 0.0:
        raise InvalidInput("matrix has a negative entry: it is not a perturbation matrix")
    sums = np.abs(z.sum(axis=1) - 1.0)
    if float(sums.max()) > 1e-6:
        raise InvalidInput(f"matrix row {int(np.argmax(sums))} does not sum to 1")
    p = check_prior(prior, z.shape[0])
    d = check_distance_table("distances", distances, z.shape[0])
    same = None
    if same_place is not None:
        same = np.asarray(same_place)
        if same.dtype != np.bool_ or same.shape != z.shape:
            raise InvalidInput(
                f"same_place must be a bool array of the matrix's shape {z.shape}, got "
                f"{same.dtype} {same.shape}"
            )
    return z, p, d, same


def check_distance_table(name: str, value: Any, n: int) -> np.ndarray:
    """An (n, G) table of the adversary's loss: finite, ≥ 0, G ≥ 1."""
    try:
        d = check_finite_array(name, value, ndim=2)
    except InvalidInput as err:
        if "non-finite" not in str(err):
            raise
        raise InvalidInput(
            f"{err}: the adversary's loss must be finite between every true place and every "
            "guess (a disconnected graph has no distance between its parts; evaluate each "
            "part's release on its own)"
        ) from None
    if d.shape[0] != n or d.shape[1] == 0:
        raise InvalidInput(f"{name} must have shape ({n}, G >= 1), got {d.shape}")
    if float(d.min()) < 0.0:
        raise InvalidInput(f"{name} must be >= 0 (a distance)")
    return d
