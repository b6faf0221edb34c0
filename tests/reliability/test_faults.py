"""Faults in distributed runs (issue 15 §6): a Dask worker dies mid-solve, the result equals
the serial one.

One table, one 2-worker ``LocalCluster`` (worker processes under nannies, so a killed worker
comes back, as on a real cluster). Each row names the entry point, how its worker dies and
when:

- ``between rounds``: the test process kills a worker before a round's tasks are submitted
  (the worker holds the scattered subproblems and their warm solvers);
- ``in a task``: the victim kills itself (SIGKILL) inside the N-th call of a function that only
  runs within a task, so the task is running when its worker dies.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from privopt.lp.benders import solve_benders
from privopt.lp.examples import capacity_expansion_lp
from privopt.mdp import MDPProblem, solve

distributed = pytest.importorskip("distributed")  # the test extra: CI has it

pytestmark = pytest.mark.dask


def kill_inside(client, module: str, name: str, nth: int) -> None:
    """Make one worker SIGKILL itself on its ``nth`` call of ``module.name`` (a function that
    runs only inside tasks). The restarted worker is a fresh process, without the trap."""

    def install(dask_worker=None):  # nested: shipped by value to the worker
        import importlib
        import signal

        mod = importlib.import_module(module)
        original = getattr(mod, name)
        calls = {"n": 0}

        def trap(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == nth:
                os.kill(os.getpid(), signal.SIGKILL)
            return original(*args, **kwargs)

        setattr(mod, name, trap)

    victim = sorted(client.scheduler_info()["workers"])[0]
    client.run(install, workers=[victim])


def kill_between_rounds(client, monkeypatch, nth_round: int) -> None:
    """Kill one worker (from this process) just before Benders round ``nth_round`` submits."""
    import privopt.lp.benders.subproblems as engine

    original = engine._Dispatcher.solve_all
    calls = {"n": 0}

    def solve_all(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == nth_round:
            victim = sorted(client.scheduler_info()["workers"])[0]
            with contextlib.suppress(Exception):  # its connection drops, as intended
                client.run(os._exit, 1, workers=[victim])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(engine._Dispatcher, "solve_all", solve_all)


def lp_benders(executor) -> Any:
    res = solve_benders(
        capacity_expansion_lp(1, n_regions=4), rel_gap=1e-9, progress=False, executor=executor
    )
    assert res.status == "optimal" and res.executor_mode == (
        "serial" if executor is None else "dask"
    )
    return res.objective, res.lower_bound


def mdp_benders(executor) -> Any:
    # 12 points on a line, four subsets: two batches of two subproblems, one per worker.
    prob = MDPProblem(np.arange(12, dtype=float)[:, None], epsilon=0.7, eta=1.0)
    res = solve(prob, "benders", labels=np.arange(12) // 3, rel_gap=1e-7, executor=executor)
    modes = {c["executor"] for c in res.info["components"]}
    assert modes == {"serial" if executor is None else "dask"}
    return res.expected_loss, res.lower_bound, res.matrix


def dpm_fit(executor) -> Any:
    # DPM takes no executor: a Dask array input runs on the current client (the fixture's).
    from privopt.cluster import DPM
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(n_samples=4000, centers=8, center_box=(-90, 90), random_state=0)
    if executor is not None:
        import dask.array as da

        X = da.from_array(X, chunks=(500, 2))
    model = DPM(bounds=(-100, 100), epsilon=10, delta=1e-6, random_state=5).fit(X)
    labels = model.labels_ if executor is None else model.labels_.compute()
    return model.cluster_centers_, labels, model.cluster_sizes_


@dataclass(frozen=True)
class Fault:
    entry: str
    when: str
    run: Callable[[Any], Any]  # executor (None: serial) -> comparable result
    inject: Callable[[Any, Any], None]  # (client, monkeypatch) -> None


FAULTS = [
    Fault(
        "lp.solve_benders",
        "between rounds",
        lp_benders,
        lambda client, mp: kill_between_rounds(client, mp, nth_round=2),
    ),
    Fault(
        "lp.solve_benders",
        "in a task",
        lp_benders,
        # _solve_by runs once per subproblem inside each batch task: the 3rd call is in round 2
        lambda client, mp: kill_inside(client, "privopt.lp.benders.subproblems", "_solve_by", 3),
    ),
    Fault(
        "mdp.solve(benders)",
        "in a task",
        mdp_benders,
        lambda client, mp: kill_inside(client, "privopt.lp.benders.subproblems", "_solve_by", 3),
    ),
    Fault(
        "cluster.DPM.fit",
        "in a task",
        dpm_fit,
        # one call per row chunk and tree level: the 3rd is in the first level pass
        lambda client, mp: kill_inside(client, "privopt.cluster._chunks", "chunk_level_step", 3),
    ),
]


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def same(a: Any, b: Any) -> None:
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f"{f.entry}-{f.when}".replace(" ", "_"))
def test_worker_killed_mid_solve_gives_the_serial_result(fault, client, monkeypatch):
    serial = fault.run(None)
    client.wait_for_workers(2, timeout=60)  # the previous row's victim is back
    before = set(client.scheduler_info()["workers"])
    fault.inject(client, monkeypatch)
    same(fault.run(client.get_executor()), serial)
    client.wait_for_workers(2, timeout=60)
    assert set(client.scheduler_info()["workers"]) != before  # a worker did die
