"""The solver interface: LP/MILP building and solving over HiGHS, row and column generation,
Benders decomposition, projection QPs and certified bounds.

Mechanisms import these names from here, and only these (a test holds them to it):

- :class:`LinearProgram` — vectorised model assembly from sparse column and row blocks.
- :func:`solve` / :class:`LPResult` — one LP or MILP with duals, verified Farkas rays, errors
  mapped to :mod:`privopt.errors`; :func:`farkas_margin` checks a certificate.
- :class:`RowGenProblem` / :class:`RowGenSolver` / :func:`solve_rowgen` (module
  :mod:`privopt.lp.rowgen`) — lazy rows, priced columns, shared columns, a certified bound.
- :class:`BendersProblem` / :func:`solve_benders` (package :mod:`privopt.lp.benders`) — Benders
  decomposition with serial, thread, process or Dask subproblem solves.
- :func:`solve_projection_qp` — least-squares projections onto a polyhedron.
- :class:`Model` / :class:`LPSolution` — a live HiGHS instance to build, grow, re-solve warm or
  cold and read (values, duals, basis, rays, status); :mod:`privopt.lp.highs` is the one
  module that talks to HiGHS.
- :func:`safe_dual_bound` / :class:`SimplexGroups` — the certified bound from any multipliers.
- :mod:`privopt.lp.examples` — generated block-structured test instances.
"""

from __future__ import annotations

from privopt.lp.benders import (
    BendersIteration,
    BendersProblem,
    BendersResult,
    Cut,
    solve_benders,
)
from privopt.lp.bounds import SimplexGroups, safe_dual_bound
from privopt.lp.highs import LPSolution, Model
from privopt.lp.model import LinearProgram
from privopt.lp.qp import solve_projection_qp
from privopt.lp.rowgen import (
    RowGenBasis,
    RowGenProblem,
    RowGenResult,
    RowGenSolver,
    solve_rowgen,
)
from privopt.lp.solve import LPResult, farkas_margin, solve

__all__ = [
    "LinearProgram",
    "LPResult",
    "solve",
    "farkas_margin",
    "RowGenProblem",
    "RowGenSolver",
    "RowGenResult",
    "RowGenBasis",
    "solve_rowgen",
    "BendersProblem",
    "BendersResult",
    "BendersIteration",
    "Cut",
    "solve_benders",
    "solve_projection_qp",
    "Model",
    "LPSolution",
    "safe_dual_bound",
    "SimplexGroups",
]
