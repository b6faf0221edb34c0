"""Signals during HiGHS runs: SIGINT / SIGTERM stop a long solve at once, and ``-v`` logging.

A HiGHS run is one C++ call: Python runs a signal's handler only when the call returns, so a
Ctrl-C during a long solve waited for the solve to end. Inside :func:`interruptible` the
process's handlers for SIGINT and SIGTERM are replaced by one that, while the main thread is
inside a HiGHS run, only records the signal; HiGHS's simplex, IPM and MIP interrupt callbacks
(which run Python code, hence the handler, every iteration) then stop the run, and the run's
wrapper, :func:`privopt.lp.highs.run`, calls the previous handler as soon as HiGHS has
returned (KeyboardInterrupt for SIGINT). Outside a run the previous handler is called at once.

The callback costs a few microseconds per simplex iteration, so it is subscribed only inside
the scope and only on models of at least :data:`WATCH_MIN_SIZE` rows plus columns (a smaller
model's iteration is so short that the callback would be a noticeable share of it, and its
whole run ends within moments anyway).

This module does not import ``highspy``; :mod:`privopt.lp.highs` holds the callbacks.

Examples
--------
>>> from privopt.lp.interrupts import interruptible, watching
>>> watching()
False
>>> with interruptible():
...     watching()
True
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = [
    "WATCH_MIN_SIZE",
    "interruptible",
    "watching",
    "logging_on",
    "stop_requested",
    "enter_run",
    "leave_run",
]

#: Models with fewer rows + columns than this are not watched (see the module docstring;
#: measured: ~1 callback per simplex iteration, a few µs each, against ~0.5 ms iterations at
#: 5,000 rows + columns).
WATCH_MIN_SIZE = 5_000


class _State:
    """What the scope's handler and the run wrapper share (one per process)."""

    def __init__(self) -> None:
        self.depth = 0  # nested interruptible() scopes
        self.log = False  # HiGHS's log on (the CLI's -v)
        self.previous: dict[int, Any] = {}  # handler of each signal before the scope
        self.stop = threading.Event()  # set by a signal: watched runs stop at once
        self.signum: int | None = None  # the last signal received in the scope
        self.pending: int | None = None  # a signal recorded during a main-thread run
        self.main_runs = 0  # HiGHS runs the main thread is inside (0 or 1)


_state = _State()


def watching() -> bool:
    """Whether an :func:`interruptible` scope is open (HiGHS runs are then watched)."""
    return _state.depth > 0


def logging_on() -> bool:
    """Whether the open scope asked for HiGHS's log (on fd 1; the CLI diverts it to stderr)."""
    return _state.depth > 0 and _state.log


def stop_requested() -> bool:
    """Whether a signal arrived in the scope (HiGHS interrupt callbacks poll this)."""
    return _state.stop.is_set()


def _on_signal(signum: int, frame: Any) -> None:
    _state.signum = signum
    _state.stop.set()
    if _state.main_runs > 0:
        # Inside a HiGHS callback: raising here would unwind through HiGHS's C++ code.
        _state.pending = signum
        return
    _call_previous(signum, frame)


def _call_previous(signum: int, frame: Any) -> None:
    previous = _state.previous.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)


def enter_run() -> None:
    """Called by :func:`privopt.lp.highs.run` before ``Highs.run()``."""
    if threading.current_thread() is threading.main_thread():
        _state.main_runs += 1


def leave_run(interrupted: bool) -> None:
    """Called by :func:`privopt.lp.highs.run` after ``Highs.run()`` (``interrupted``: HiGHS
    stopped on a user interrupt). Raises what the signal's previous handler raises: on the
    main thread for a signal recorded during the run, on any thread for an interrupted run."""
    main = threading.current_thread() is threading.main_thread()
    if main:
        _state.main_runs -= 1
        signum, _state.pending = _state.pending, None
        if signum is not None:
            _state.stop.clear()  # delivered: later runs in the scope are not stopped
            _call_previous(signum, None)
            return
    if interrupted and _state.stop.is_set() and _state.signum is not None:
        _call_previous(_state.signum, None)


@contextlib.contextmanager
def interruptible(*, log: bool = False) -> Iterator[None]:
    """Make SIGINT and SIGTERM stop HiGHS runs at once while the block runs (main thread only;
    elsewhere the block runs unchanged). The handlers in place when the scope opens are the
    ones finally called; an ignored signal stays ignored. ``log``: HiGHS prints its log (on
    fd 1) for every run in the scope.

    After a signal that was raised outside a HiGHS run, watched runs in the scope (for example
    on worker threads) keep stopping at once until the scope closes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outer = _state.depth == 0
    if outer:
        # An ignored signal stays ignored (a background job of a shell ignores SIGINT).
        current = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        _state.previous = {s: h for s, h in current.items() if h != signal.SIG_IGN}
        for s in _state.previous:
            signal.signal(s, _on_signal)
        _state.log = log
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
        if outer:
            for s, handler in _state.previous.items():
                signal.signal(s, handler if handler is not None else signal.SIG_DFL)
            _state.stop.clear()
            _state.signum = _state.pending = None
            _state.log = False
