"""The exponential mechanism (McSherry & Talwar 2007), computed in log space.

Candidate i is selected with probability ∝ exp(ε·uᵢ/(2Δu)) — or exp(ε·uᵢ/Δu) when the score
is monotonic (adding a record moves all scores in the same direction; Dwork & Roth 2014,
Remark 3.1) — which is ε-DP for any neighbouring relation under which every score moves by at
most Δu.

Log space: the weights are never formed directly. The logits lᵢ = ε·uᵢ/(2Δu) are shifted by
their log-sum-exp, pᵢ = exp(lᵢ - LSE(l)), so scores spanning 1e6 (logits in the hundreds of
thousands) neither overflow nor produce NaN; candidates more than ~745 nats below the best get
probability 0 in float64 (their true probability is < 1e-323).

Sampling: exact, from the float64 probabilities :func:`exponential_mechanism_probabilities`
returns, by integer arithmetic on uniform random bits (:func:`privopt.dp.sample_categorical`):
candidate i comes out with probability pᵢ / Σⱼ pⱼ, the stored floats over their exact sum. We
prefer it to an inverse CDF on a 53-bit uniform (whose rounding moves every probability by up to
~2⁻⁵³ and gives a candidate below 2⁻⁵³ the probability of one float step) and to Gumbel-max
(one log(-log U) per candidate, rounded differently for each logit). Guarantee, stated
honestly: each pᵢ is within a relative ~(|lᵢ − LSE| + 1)·2⁻⁵² of its exact value (at most
~2⁻⁴² for a candidate still above float range), so the realised ratios between neighbouring
datasets exceed e^ε by at most that factor; a candidate more than ~745 nats below the best gets
probability 0 (its exact probability is below 2⁻¹⁰⁷⁴), which adds δ ≤ n·2⁻¹⁰⁷⁴.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import logsumexp

from privopt._validation import (
    check_bool,
    check_epsilon,
    check_finite_array,
    check_int,
    check_positive,
    finite_result,
)
from privopt.dp.categorical import sample_categorical
from privopt.errors import InvalidInput

__all__ = ["exponential_mechanism", "exponential_mechanism_probabilities"]


def _logits(scores: Any, epsilon: float, sensitivity: float, monotonic: bool) -> np.ndarray:
    u = check_finite_array("scores", scores, ndim=1)
    if u.size == 0:
        raise InvalidInput("scores must not be empty")
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    monotonic = check_bool("monotonic", monotonic)
    factor = epsilon / (sensitivity if monotonic else 2.0 * sensitivity)
    if not math.isfinite(factor):
        raise InvalidInput(
            f"epsilon / sensitivity = {epsilon!r} / {sensitivity!r} overflows float64"
        )
    # Shift by the max before scaling: keeps logits ≤ 0 and finite even for huge scores.
    return factor * (u - u.max())


@finite_result(cause="epsilon / sensitivity beyond float64")
def exponential_mechanism_probabilities(
    scores: Any, epsilon: float, *, sensitivity: float = 1.0, monotonic: bool = False
) -> np.ndarray:
    """Selection probabilities of :func:`exponential_mechanism`, shape (n,), float64.

    Parameters
    ----------
    scores : (n,) utility uᵢ of each candidate (higher is better), finite.
    epsilon : ε > 0.
    sensitivity : Δu > 0, the most any score changes between neighbouring datasets.
    monotonic : use exp(ε·u/Δu) instead of exp(ε·u/(2Δu)) (valid only for monotonic scores).

    Examples
    --------
    >>> exponential_mechanism_probabilities([0.0, 0.0], 1.0).tolist()
    [0.5, 0.5]
    """
    logits = _logits(scores, epsilon, sensitivity, monotonic)
    return np.exp(logits - logsumexp(logits))


@finite_result(cause="epsilon / sensitivity beyond float64")
def exponential_mechanism(
    scores: Any,
    epsilon: float,
    *,
    sensitivity: float = 1.0,
    rng: Any = None,
    monotonic: bool = False,
    size: int | None = None,
) -> Any:
    """Select an index with probability ∝ exp(ε·scoreᵢ/(2Δu)) (ε-DP, see module docstring).

    Parameters
    ----------
    scores : (n,) utility of each candidate, finite.
    epsilon : ε > 0.
    sensitivity : Δu > 0, the most any score changes between neighbouring datasets.
    rng : None (default: the OS CSPRNG, for real releases) or a seed / Generator
        (reproducible, for testing only); see :func:`privopt.dp.as_random_source`.
    monotonic : scores monotonic in the data: exp(ε·u/Δu), still ε-DP.
    size : None for one selection (int); an int k for k independent selections (each costs ε).

    Returns
    -------
    int index in [0, n), or an int64 array of shape (size,).

    Examples
    --------
    >>> exponential_mechanism([0.0, 1e6, -1e6], 1.0, rng=0)
    1
    """
    p = exponential_mechanism_probabilities(
        scores, epsilon, sensitivity=sensitivity, monotonic=monotonic
    )
    if size is not None:
        size = check_int("size", size, minimum=0)
    idx = sample_categorical(p, 1 if size is None else size, rng=rng)
    return int(idx[0]) if size is None else idx
