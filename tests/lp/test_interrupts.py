"""SIGINT / SIGTERM during a HiGHS run inside :func:`privopt.lp.interrupts.interruptible`.

The signal is sent from a simplex callback at a chosen iteration, so it lands inside the run
deterministically: the run must stop within an iteration or two (HiGHS's "Interrupted by user"
status) and the signal's previous handler must then be called, on the main thread.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
from privopt.lp import highs
from privopt.lp.examples import random_packing_lp
from privopt.lp.interrupts import WATCH_MIN_SIZE, interruptible, watching
from privopt.lp.model import LinearProgram

TRIGGER = 30  # simplex iteration at which the test sends the signal


def fresh(lp: LinearProgram):
    h = lp.to_highs()
    highs.configure(h, method="simplex", presolve=False)
    return h


def signal_at(h, sig: int, iteration: int = TRIGGER) -> list[int]:
    """Send ``sig`` to this process once the simplex reaches ``iteration``; returns the list
    of iterations at which the callback ran after sending (to count how long HiGHS went on)."""
    after: list[int] = []

    def send(event) -> None:
        it = int(event.data_out.simplex_iteration_count)
        if after:
            after.append(it)
        elif it >= iteration:
            after.append(it)
            os.kill(os.getpid(), sig)

    h.cbSimplexInterrupt.subscribe(send)
    return after


@pytest.fixture(scope="module")
def big_lp() -> LinearProgram:
    lp = random_packing_lp(3_000, 2_000)
    assert lp.n_vars + lp.n_rows >= WATCH_MIN_SIZE
    return lp


def test_sigint_stops_a_watched_run_at_once(big_lp) -> None:
    h = fresh(big_lp)
    after = signal_at(h, signal.SIGINT)
    with interruptible(), pytest.raises(KeyboardInterrupt):
        highs.run(h)
    assert h.getModelStatus() == highs.ModelStatus.kInterrupt
    assert len(after) <= 2  # stopped at the next callback, not at the end of the solve
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    assert not watching()


class Stopped(BaseException):
    pass


def test_sigterm_calls_the_handler_in_place_when_the_scope_opened(big_lp) -> None:
    def raise_stopped(signum, frame):
        raise Stopped(signum)

    previous = signal.signal(signal.SIGTERM, raise_stopped)
    try:
        h = fresh(big_lp)
        signal_at(h, signal.SIGTERM)
        with interruptible(), pytest.raises(Stopped):
            highs.run(h)
        assert h.getModelStatus() == highs.ModelStatus.kInterrupt
        assert signal.getsignal(signal.SIGTERM) is raise_stopped
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_small_model_is_not_watched_and_the_signal_follows_the_run() -> None:
    lp = random_packing_lp(300, 200, seed=1)
    h = fresh(lp)
    signal_at(h, signal.SIGINT, iteration=1)
    with interruptible(), pytest.raises(KeyboardInterrupt):
        highs.run(h)
    # Below WATCH_MIN_SIZE nothing stops HiGHS: the run finished, then the signal was raised.
    assert h.getModelStatus() == highs.ModelStatus.kOptimal
    with interruptible():  # a later run in a new scope is not stopped
        highs.run(h)
    assert h.getModelStatus() == highs.ModelStatus.kOptimal


def test_an_ignored_signal_stays_ignored() -> None:
    # A background job of a non-interactive shell starts with SIGINT ignored; a signal meant
    # to be ignored must not stop HiGHS (it then ended the command with an error).
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interruptible():
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_outside_the_scope_runs_get_no_callback(big_lp) -> None:
    h = fresh(random_packing_lp(300, 200, seed=2))
    highs.run(h)
    assert not getattr(h, "_privopt_watched", False)
    assert h.getModelStatus() == highs.ModelStatus.kOptimal


def test_cli_exits_130_with_one_line_when_sigint_hits_a_solve(
    big_lp, tmp_path, monkeypatch, capsys
):
    import privopt.mdp.cli
    from privopt.cli import EXIT_SIGINT, main

    def long_solve(*args, **kwargs):
        h = fresh(big_lp)
        signal_at(h, signal.SIGINT)
        highs.run(h)
        raise AssertionError("the interrupted solve returned")

    monkeypatch.setattr(privopt.mdp.cli, "solve", long_solve)
    src = tmp_path / "points.csv"
    pts = np.random.default_rng(0).uniform(0, 3, (12, 2))
    src.write_text("x,y\n" + "\n".join(f"{a},{b}" for a, b in pts) + "\n")
    argv = ["mdp", str(src), "--epsilon", "1", "--eta", "1.5", "--out", str(tmp_path / "o"), "-q"]
    assert main(argv) == EXIT_SIGINT
    err = capsys.readouterr()
    assert err.out == ""
    assert err.err.splitlines() == [
        "privopt mdp: error: interrupted (SIGINT); no output written, any earlier output kept"
    ]
    assert not (tmp_path / "o").exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
