"""Perturbation matrices for metric privacy: the shared core under :mod:`privopt.mdp` and
:mod:`privopt.geo`.

A perturbation matrix Z (N × K) gives ``Z[i, k] = Pr[report o_k | true record r_i]``. Its
guarantee, ε-metric DP (geo-indistinguishability) on neighbour pairs d(r_i, r_j) ≤ η, is
:math:`Z_{ik} ≤ e^{ε d_{ij}} Z_{jk}` for every output k. This package holds what both mechanisms
need of such a matrix:

- the problem: records, outputs, metric, prior, utility loss, ε and η (:class:`MDPProblem`,
  its neighbour pairs :class:`EdgeList` and components);
- the matrix as a release (:class:`PerturbationMatrix`: sample, verify, save, load, plot) and
  its guarantee check (:func:`verify_matrix`, :class:`Verification`);
- repair onto the guarantee (:func:`repair`, :func:`repair_shared`, the lifts);
- the exact optimal matrix by LP (:func:`solve_exact`, row generation with a certified bound)
  and the exponential mechanism (:func:`exponential_mechanism`);
- the travel-cost loss (:func:`travel_cost_loss`);
- the adversary's view of a matrix (:class:`InferenceError`, :func:`bayes_inference_error`,
  :meth:`PerturbationMatrix.inference_error`), the planar Laplace baseline
  (:func:`planar_laplace`) and the trade-off table of a sweep over ε (:class:`EpsilonSweep`).

Examples
--------
>>> import numpy as np
>>> from privopt.perturbation import MDPProblem, solve_exact
>>> pm = solve_exact(MDPProblem(np.array([[0.0], [1.0]]), epsilon=1.0, eta=1.0))
>>> round(pm.expected_loss, 10)   # randomized response: 1 / (1 + e)
0.2689414214
"""

from privopt.perturbation.adversary import InferenceError, bayes_inference_error
from privopt.perturbation.laplace import planar_laplace
from privopt.perturbation.matrix import (
    PerturbationMatrix,
    Verification,
    ViolationScan,
    repair,
    repair_shared,
    restrict_edges,
    scan_violations,
    verify_matrix,
)
from privopt.perturbation.problem import EdgeList, MatrixBlock, MDPProblem, travel_cost_loss
from privopt.perturbation.solve import (
    epsilon_path,
    exponential_mechanism,
    solve_components,
    solve_epsilon_path,
    solve_exact,
)
from privopt.perturbation.tradeoff import EpsilonSweep, TradeoffPoint

__all__ = [
    "MDPProblem",
    "EdgeList",
    "MatrixBlock",
    "PerturbationMatrix",
    "Verification",
    "ViolationScan",
    "verify_matrix",
    "scan_violations",
    "restrict_edges",
    "repair",
    "repair_shared",
    "solve_exact",
    "solve_components",
    "solve_epsilon_path",
    "epsilon_path",
    "exponential_mechanism",
    "travel_cost_loss",
    "InferenceError",
    "bayes_inference_error",
    "planar_laplace",
    "EpsilonSweep",
    "TradeoffPoint",
]
