"""LP/MILP building and solving over HiGHS, and Benders decomposition.

- :class:`LinearProgram` — vectorised model assembly from sparse column and row blocks.
- :func:`solve` / :class:`LPResult` — HiGHS solve with duals, verified Farkas rays, errors
  mapped to :mod:`privopt.errors`.
- :class:`BendersProblem` / :func:`solve_benders` (module :mod:`privopt.lp.benders`) — Benders
  decomposition with serial, thread, process or Dask subproblem solves.
- :mod:`privopt.lp.highs` — the one HiGHS layer (the only module importing ``highspy``).
- :mod:`privopt.lp.rowgen` — row and column generation with shared columns and a
  certified bound; :mod:`privopt.lp.qp` — projection QPs on the same layer.
- :mod:`privopt.lp.examples` — generated block-structured test instances.
"""

from __future__ import annotations

from privopt.lp.benders import BendersProblem, BendersResult, Cut, solve_benders
from privopt.lp.model import LinearProgram
from privopt.lp.solve import LPResult, farkas_margin, solve

__all__ = [
    "LinearProgram",
    "LPResult",
    "solve",
    "farkas_margin",
    "BendersProblem",
    "BendersResult",
    "Cut",
    "solve_benders",
]
