"""DPM's privacy budget schedule (spec 004 §0, §3, §6).

The total (ε, δ) is split into the interval-size estimate, the noisy counts, the split selections
and the final averages; counts and selections are spread over the recursion levels with the
√(2^i) closed form of Eq. 2 (which Alg. 1 and the reference code use; spec §3 notes that the
stated objective does not actually lead to it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privopt._validation import (
    check_delta,
    check_epsilon,
    check_finite_array,
    check_finite_result,
    check_int,
)
from privopt.dp import PlannedSpend
from privopt.errors import InvalidInput

__all__ = ["BudgetSchedule", "budget_schedule", "level_weights"]


def level_weights(n_levels: int) -> np.ndarray:
    """√(2^i) / Σ_j √(2^j) for i = 0..n_levels−1, shape (n_levels,); sums to 1."""
    w = np.sqrt(2.0 ** np.arange(n_levels))
    return w / w.sum()


@dataclass(frozen=True)
class BudgetSchedule:
    """Per-stage and per-level privacy parameters of one DPM run.

    Attributes
    ----------
    epsilon_interval : ε_int of IntervalSizeEst (Algorithm 2).
    epsilon_count : (τ_r+1,) ε_cnt_i of the noisy counts of level i (root = level 0).
    epsilon_split : (τ_r,) ε_exp_i of the split selections at level i.
    epsilon_average : ε_avg of the Gaussian leaf averages.
    delta_count : δ_cnt of every count level (the probability that ñ − λ_i > |S|).
    delta_average : δ_avg of the Gaussian leaf averages.
    lambdas : (τ_r+1,) λ_i = −ln(2 δ_cnt)/ε_cnt_i (Eq. 1), clamped at 0; +inf when δ_cnt = 0.
    epsilon_bounds : ε of the private per-feature bounds (0 when the bounds were given).
    """

    epsilon_interval: float
    epsilon_count: np.ndarray
    epsilon_split: np.ndarray
    epsilon_average: float
    delta_count: float
    delta_average: float
    lambdas: np.ndarray
    epsilon_bounds: float = 0.0

    @property
    def epsilon_total(self) -> float:
        return (
            self.epsilon_bounds
            + self.epsilon_interval
            + float(self.epsilon_count.sum())
            + float(self.epsilon_split.sum())
            + self.epsilon_average
        )

    @property
    def delta_total(self) -> float:
        return self.delta_count * self.epsilon_count.size + self.delta_average

    def plan(self) -> list[PlannedSpend]:
        """Every spend of one fit, in order, for the accountant's all-or-nothing check.

        A fit charges each level in full whether or not nodes remain (Theorem 1 is a worst-case
        bound), so the plan does not depend on the data.
        """
        spends = []
        if self.epsilon_bounds > 0:
            spends.append(PlannedSpend(self.epsilon_bounds, label="feature bounds"))
        spends.append(PlannedSpend(self.epsilon_count[0], self.delta_count, label="root count"))
        spends.append(PlannedSpend(self.epsilon_interval, label="split width"))
        for level, eps in enumerate(self.epsilon_split):
            spends.append(PlannedSpend(eps, label=f"split selection, level {level}"))
            spends.append(
                PlannedSpend(
                    self.epsilon_count[level + 1],
                    self.delta_count,
                    label=f"noisy counts, level {level + 1}",
                )
            )
        spends.append(PlannedSpend(self.epsilon_average, self.delta_average, label="averages"))
        return spends


def _fractions(name: str, value: Any, n: int) -> np.ndarray:
    """``n`` finite fractions >= 0 summing to 1 (to 1e-9)."""
    arr = check_finite_array(name, value, shape=(n,))
    if np.any(arr < 0) or abs(float(arr.sum()) - 1.0) > 1e-9:
        raise InvalidInput(f"{name} must be {n} fractions >= 0 summing to 1, got {tuple(value)}")
    return arr


def budget_schedule(
    epsilon: float,
    delta: float,
    max_depth: int,
    budget_split: tuple[float, float, float, float],
    delta_split: tuple[float, float],
    bounds_share: float = 0.0,
) -> BudgetSchedule:
    """The schedule for total (ε, δ), τ_r = ``max_depth`` and the given stage fractions.

    Parameters
    ----------
    epsilon, delta : total budget (already validated).
    max_depth : τ_r ≥ 1, the number of split levels.
    budget_split : fractions (int, cnt, exp, avg) of ε, summing to 1.
    delta_split : fractions (cnt, avg) of δ, summing to 1; the count part is shared equally by
        the τ_r+1 count levels (δ_cnt = 0.2 δ/(τ_r+1) by default, as the reference code does).
    bounds_share : the share of ε spent on private per-feature bounds, in [0, 1); the stage
        fractions then split the rest, (1 − bounds_share)·ε.

    Examples
    --------
    >>> s = budget_schedule(1.0, 1e-5 ** 1.5, 7, (0.04, 0.18, 0.18, 0.6), (0.2, 0.8))
    >>> [round(float(v), 6) for v in s.epsilon_count[:3]]
    [0.004971, 0.007029, 0.009941]
    """
    f_int, f_cnt, f_exp, f_avg = _fractions("budget_split", budget_split, 4)
    d_cnt, d_avg = _fractions("delta_split", delta_split, 2)
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if not 0.0 <= bounds_share < 1.0:
        raise InvalidInput(f"bounds_share must lie in [0, 1), got {bounds_share!r}")
    epsilon_bounds = epsilon * bounds_share
    epsilon = epsilon - epsilon_bounds
    max_depth = check_int("max_depth", max_depth, minimum=1)
    eps_cnt = epsilon * f_cnt * level_weights(max_depth + 1)
    eps_exp = epsilon * f_exp * level_weights(max_depth)
    delta_count = delta * d_cnt / (max_depth + 1)
    if delta_count > 0:
        with np.errstate(over="ignore", divide="ignore"):
            lambdas = np.maximum(-math.log(2.0 * delta_count) / eps_cnt, 0.0)
        # +inf is the documented λ of δ_cnt = 0 only, never an overflow of a tiny ε
        check_finite_result("budget_schedule lambdas", lambdas, cause=f"epsilon = {epsilon!r}")
    else:
        lambdas = np.full(max_depth + 1, math.inf)
    return BudgetSchedule(
        epsilon * f_int,
        eps_cnt,
        eps_exp,
        epsilon * f_avg,
        delta_count,
        delta * d_avg,
        lambdas,
        epsilon_bounds,
    )
