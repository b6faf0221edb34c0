"""Benders decomposition over HiGHS (spec 000 §3): master LP with one ``theta_k`` per subproblem,
optimality cuts from subproblem duals, feasibility cuts from Farkas rays, multi-cut by default.

Problem form
------------
::

    min  c^T x + sum_k phi_k(x)      s.t. x in the master LP (rows, bounds, integrality)
    phi_k(x) = min  q_k^T y_k   s.t.  L_k <= T_k x + W_k y_k <= U_k,   l_k <= y_k <= u_k

Subproblem ``k`` is a :class:`~privopt.lp.model.LinearProgram` over ``y_k`` with the nominal
row bounds ``L_k, U_k`` (those at ``x = 0``) plus the coupling matrix ``T_k``: for a master point
``x`` its row bounds become ``L_k - T_k x`` and ``U_k - T_k x`` (the right-hand side ``h_k - T_k x``
of the spec, written for ranged rows).

Cuts (HiGHS sign conventions, see :mod:`privopt.lp.solve`)
----------------------------------------------------------
* Optimality: with row duals ``pi`` and reduced costs ``d`` of subproblem ``k`` at ``xbar``,
  weak duality gives for every ``x``: ``phi_k(x) >= alpha - (T_k^T pi)^T x`` where
  ``alpha = sum_i pi_i B_i + sum_j d_j b_j``, ``B_i`` the nominal row bound picked by the sign of
  ``pi_i`` (``L`` if > 0, ``U`` if < 0) and ``b_j`` the column bound picked by the sign of
  ``d_j``; it is tight at ``xbar`` (strong duality). Master row: ``theta_k + beta^T x >= alpha``.
* Feasibility: a verified Farkas ray ``y`` of subproblem ``k`` at ``xbar`` (orientation of
  :func:`~privopt.lp.solve.farkas_margin`) must have non-positive margin at every feasible
  ``x``: ``sum_i y_i B_i - (T_k^T y)^T x <= max_{box} (W_k^T y)^T y_k``, i.e. master row
  ``beta^T x >= gamma``. The ray is HiGHS's dual ray (subproblems run with presolve off and
  dual simplex), with the phase-1 LP of spec 000 §3.2 as the fallback.

Bounds (spec 000 §3.3): LB = master optimum (valid once every ``theta_k`` is bounded); UB at a
master point whose subproblems are all feasible = ``c^T x + sum_k phi_k(x)``; the best UB and its
full solution are kept (incumbent). Stop when ``(UB - LB) / max(gap_floor, |UB|) <= rel_gap``
(``gap_floor`` = 1 by default) or ``UB - LB <= abs_gap``.

A ``theta_k`` without a finite lower bound is held at 0 (out of the objective) until its first
optimality cut; LB is reported as ``-inf`` until then (the usual "theta inactive" start).

Parallel subproblems and data shipping
--------------------------------------
Subproblems are solved through any :class:`concurrent.futures.Executor`; each subproblem's data
crosses to a worker once, and every worker keeps one warm model per subproblem (across
iterations only the row bounds change, so the dual simplex restarts from the previous basis):

* ``executor=None``: serial, in this process.
* :class:`~concurrent.futures.ThreadPoolExecutor`: the solvers live in this process; HiGHS
  releases the GIL while it runs.
* Dask (``distributed.Client.get_executor()``) and any other executor: the subproblems are
  split once into one batch per worker (balanced by size) and each round submits one task per
  batch (the executor's per-task overhead is paid per worker, not per subproblem).
* Dask: each batch is ``client.scatter``-ed once to its worker and its tasks are pinned there,
  so each subproblem keeps one warm solver and the iterates are the serial ones.
* Any other executor (e.g. :class:`~concurrent.futures.ProcessPoolExecutor`): each subproblem is
  pickled once into a temporary file; tasks carry ``(token, ks, paths, xs)`` and a module-level
  function loads the file at most once per worker process, caching the solver under the
  per-run ``token`` (a small LRU of recent runs, so workers do not accumulate models). This needs
  workers on the same machine (shared file system). Prefer a ``spawn``/``forkserver``
  multiprocessing context: forking a process that already ran HiGHS's thread pool is unsafe.

Only the coupled entries ``x[cols(T_k)]`` travel per subproblem and per iteration.
"""

from privopt.lp.benders.driver import solve_benders
from privopt.lp.benders.problem import BendersProblem, Cut
from privopt.lp.benders.result import BendersIteration, BendersResult

__all__ = ["BendersProblem", "BendersResult", "BendersIteration", "solve_benders", "Cut"]
