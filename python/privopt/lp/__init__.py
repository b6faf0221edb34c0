"""LP/MILP building and solving over HiGHS, and Benders decomposition.

- :class:`LinearProgram` — vectorised model assembly from sparse column and row blocks.
- :func:`solve` / :class:`LPResult` — HiGHS solve with duals, Farkas rays, mapped errors.
- :mod:`privopt.lp.benders` — :class:`BendersProblem`, :func:`solve_benders`.
"""

from __future__ import annotations

from privopt.lp.model import LinearProgram
from privopt.lp.solve import LPResult, farkas_margin, solve

__all__ = ["LinearProgram", "LPResult", "solve", "farkas_margin"]
