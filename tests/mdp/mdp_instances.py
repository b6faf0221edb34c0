"""Small mDP instances shared by the tests (spec 000 §8)."""

from __future__ import annotations

import numpy as np
from privopt.mdp import MDPProblem


def line_problem(n: int, epsilon: float) -> MDPProblem:
    """Points 0..n-1 on a line, η = 1, c = d, p = 1/N (spec §8 items 3–4)."""
    return MDPProblem(np.arange(n, dtype=float)[:, None], epsilon=epsilon, eta=1.0)


def random_2d(
    n: int = 40, seed: int = 0, eps: float = 1.0, eta: float = 1.2, side: float = 6.0, **kw
) -> MDPProblem:
    """Spec §8 item 5 generator (n = 40, seed 0 gives LP* = 0.8243241414)."""
    pts = np.random.default_rng(seed).uniform(0, side, (n, 2))
    return MDPProblem(pts, epsilon=eps, eta=eta, **kw)
