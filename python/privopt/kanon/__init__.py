"""k-anonymity by optimization (Liang & Samavi 2020).

Local-recoding generalization to intervals: every row's quasi-identifiers become a box, rows
with identical boxes form an equivalence class of at least k rows, and the information loss
:math:`\\sum_i \\sum_j w_j (z_{ij} − y_{ij})/(U_j − L_j)` is minimized exactly (MILP, small
tables) or by the paper's Split & Carry and Greedy Search algorithms. Mondrian and K-Member are
baselines.

Main entry point: :func:`anonymize` (pandas in, :class:`KAnonResult` out).
"""

from privopt.kanon import datasets
from privopt.kanon.api import METHODS, KAnonResult, anonymize, render_table
from privopt.kanon.check import k_anonymity_level, verify_boxes, verify_k_anonymous
from privopt.kanon.greedy import greedy_search
from privopt.kanon.initial import initial_solution, variance_sort
from privopt.kanon.loss import LossBreakdown, class_boxes, information_loss
from privopt.kanon.problem import KAnonProblem, build_problem

__all__ = [
    "anonymize",
    "KAnonResult",
    "METHODS",
    "render_table",
    "datasets",
    "KAnonProblem",
    "build_problem",
    "LossBreakdown",
    "class_boxes",
    "information_loss",
    "k_anonymity_level",
    "verify_k_anonymous",
    "verify_boxes",
    "variance_sort",
    "initial_solution",
    "greedy_search",
]
