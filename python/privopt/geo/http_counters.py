"""The LR-Geo service's counters, shared by its server processes.

``privopt geo serve --processes P`` runs P server processes on one listening socket; each
answers its own connections and solves its own batches. ``GET /health`` must still describe the
whole server, and batch ids must stay unique across processes, so the counters live in shared
memory (``multiprocessing`` arrays handed to each process when it starts). Each process writes
only its own row, under a lock of its own threads: no lock is shared between processes, so a
process killed at any moment cannot leave the others waiting. A reader sums the rows (a count of
another process may be a moment old). A single-process server uses plain memory.
"""

from __future__ import annotations

import multiprocessing
import threading
from array import array
from typing import Any

from privopt._validation import check_int

__all__ = ["ServiceCounters", "REQUEST_KINDS", "RECENT_BATCHES"]

#: Kinds of request events counted (``health()["requests"]``).
REQUEST_KINDS = ("cr", "upload", "refused", "failed", "failed_solves")

#: Sizes of the most recent batches kept per process for ``health()["batch_sizes"]``.
RECENT_BATCHES = 1024

# One row of integers per process: the request kinds, then these three.
_BATCHES = len(REQUEST_KINDS)
_BATCH_USERS = _BATCHES + 1
_PENDING = _BATCHES + 2
_ROW = _BATCHES + 3


class ServiceCounters:
    """Request counts, solved batches and waiting uploads of one server (all its processes).

    Parameters
    ----------
    processes : number of server processes that write here, each in its own row (its
        0-based index ``process`` in every method).
    shared : keep the counters in shared memory, to hand to processes started by
        ``multiprocessing``'s spawn context (default: when ``processes > 1``).

    Every method is safe from any thread of the process that owns row ``process``; any
    process may read (:meth:`snapshot`).
    """

    def __init__(self, processes: int = 1, *, shared: bool | None = None) -> None:
        check_int("processes", processes, minimum=1)
        self.processes = processes
        self.shared = processes > 1 if shared is None else shared
        self._ints: Any
        self._solve_s: Any
        self._recent: Any
        if self.shared:
            ctx = multiprocessing.get_context("spawn")
            self._ints = ctx.RawArray("q", _ROW * processes)
            self._solve_s = ctx.RawArray("d", processes)
            self._recent = ctx.RawArray("q", RECENT_BATCHES * processes)
        else:
            self._ints = array("q", bytes(8 * _ROW * processes))
            self._solve_s = array("d", bytes(8 * processes))
            self._recent = array("q", bytes(8 * RECENT_BATCHES * processes))
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]  # each process has its own threads, hence its own lock
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def count(self, process: int, what: str) -> None:
        """Count one event of kind ``what`` (one of :data:`REQUEST_KINDS`)."""
        i = _ROW * process + REQUEST_KINDS.index(what)
        with self._lock:
            self._ints[i] += 1

    def record_batch(self, process: int, users: int, solve_s: float) -> int:
        """Record a solved batch of ``users`` uploads that took ``solve_s`` seconds; its id,
        unique over all processes (process ``p``'s j-th batch is ``j·P + p``: 0, 1, 2, ...
        with one process)."""
        row = _ROW * process
        with self._lock:
            local = self._ints[row + _BATCHES]
            self._recent[RECENT_BATCHES * process + local % RECENT_BATCHES] = users
            self._ints[row + _BATCH_USERS] += users
            self._solve_s[process] += solve_s
            self._ints[row + _BATCHES] = local + 1  # last: a reader sees the size first
        return int(local) * self.processes + process

    def set_pending(self, process: int, pending: int) -> None:
        """Uploads waiting for a batch in server process ``process``."""
        self._ints[_ROW * process + _PENDING] = pending

    def snapshot(self) -> dict[str, Any]:
        """The counts as ``health`` reports them, summed over processes: ``requests`` (per
        kind), ``batches``, ``batch_users`` (uploads answered by solved batches),
        ``batch_sizes`` (the latest :data:`RECENT_BATCHES` batches, in the order of their
        ids), ``solve_s_total`` (seconds), ``pending_uploads``."""
        rows = [list(self._ints[_ROW * p : _ROW * (p + 1)]) for p in range(self.processes)]
        recent: list[tuple[int, int]] = []
        for p, row in enumerate(rows):
            done = row[_BATCHES]
            for j in range(max(0, done - RECENT_BATCHES), done):
                size = self._recent[RECENT_BATCHES * p + j % RECENT_BATCHES]
                recent.append((j * self.processes + p, int(size)))
        recent.sort()
        return {
            "requests": {k: sum(row[i] for row in rows) for i, k in enumerate(REQUEST_KINDS)},
            "batches": sum(row[_BATCHES] for row in rows),
            "batch_users": sum(row[_BATCH_USERS] for row in rows),
            "batch_sizes": [size for _, size in recent[-RECENT_BATCHES:]],
            "solve_s_total": float(sum(self._solve_s)),
            "pending_uploads": sum(row[_PENDING] for row in rows),
        }
