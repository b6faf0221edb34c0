"""Metric differential privacy (mDP) at scale: optimal perturbation matrices by
exact LP or by dataset partitioning and Benders decomposition.

Data flows one way: records + metric → :class:`MDPProblem` → :func:`solve`
(``method="lp" | "benders" | "expmech"``) → :class:`PerturbationMatrix` (sample, verify,
save, plot). The problem, the matrix, its repair and the exact LP are the shared core
:mod:`privopt.perturbation` (LR-Geo builds on them too); they are re-exported here so that a
metric-DP user needs one import.

Privacy notion: ε-metric DP (geo-indistinguishability) on neighbour pairs d(r_i, r_j) ≤ η:
:math:`\\Pr[Q(r_i) = o] ≤ e^{ε d_{ij}} \\Pr[Q(r_j) = o]`. The LP mechanisms extend this along
paths of the mDP graph (graph metric D ≥ d, Property 3.2); ExpMech satisfies it for all pairs.

Examples
--------
>>> import numpy as np
>>> from privopt.mdp import MDPProblem, solve
>>> prob = MDPProblem(np.array([[0.0], [1.0]]), epsilon=1.0, eta=1.0)
>>> pm = solve(prob)
>>> round(pm.expected_loss, 10)   # randomized response: 1 / (1 + e)
0.2689414214
"""

from privopt.mdp.datasets import (
    gaussian_3d,
    km_to_latlon,
    load_rome_nodes,
    load_text_embeddings,
    rome_grid,
)
from privopt.mdp.solvers import (  # noqa: F401 - build_lp etc. re-exported
    METHODS,
    build_lp,
    exponential_mechanism,
    solve,
    solve_epsilon_path,
)
from privopt.mdp.tradeoff import sweep_epsilon
from privopt.perturbation import (  # noqa: F401 - re-exported for convenience
    EdgeList,
    MDPProblem,
    PerturbationMatrix,
    Verification,
    repair,
    travel_cost_loss,
)

# The core's names above are importable from here for convenience; their documented home is
# privopt.perturbation (one canonical path per name, listed once in the API reference).
__all__ = [
    "solve",
    "sweep_epsilon",
    "METHODS",
    "rome_grid",
    "gaussian_3d",
    "load_rome_nodes",
    "load_text_embeddings",
    "km_to_latlon",
]
