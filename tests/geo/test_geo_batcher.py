"""The server's upload batcher without HTTP: batch sizes, the window, failures, back-pressure."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from privopt.errors import SolverLimit
from privopt.geo.http_server import HTTPError, ServiceConfig, UploadBatcher


def _batcher(solve, **kw):
    opts = {"max_batch": 3, "window_s": 0.05, "max_pending": 100} | kw
    return UploadBatcher(solve, **opts)


def test_batches_close_at_max_batch_and_after_the_window() -> None:
    seen: list[list[int]] = []
    lock = threading.Lock()

    def solve(batch):
        with lock:
            seen.append(list(batch))
        time.sleep(0.02)
        return [f"reply {u}" for u in batch]

    async def main():
        b = _batcher(solve)
        replies = await asyncio.gather(*(b.submit(u) for u in range(7)))
        b.close()
        return replies

    replies = asyncio.run(main())
    assert replies == [f"reply {u}" for u in range(7)]  # each waiter gets its own reply
    assert [len(s) for s in seen] == [3, 3, 1]  # two full batches, then the window closes one
    assert sorted(u for s in seen for u in s) == list(range(7))


def test_one_solve_at_a_time_and_arrivals_meanwhile_form_the_next_batch() -> None:
    running, peak, seen = [0], [0], []

    def solve(batch):
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        seen.append(len(batch))
        time.sleep(0.1)
        running[0] -= 1
        return list(batch)

    async def main():
        b = _batcher(solve, max_batch=50, window_s=0.0)
        first = asyncio.ensure_future(b.submit(0))
        await asyncio.sleep(0.02)  # the first batch (one upload) is solving now
        rest = [b.submit(u) for u in range(1, 6)]
        out = await asyncio.gather(first, *rest)
        b.close()
        return out

    assert asyncio.run(main()) == list(range(6))
    assert peak[0] == 1 and seen == [1, 5]


def test_a_failed_solve_fails_its_batch_only() -> None:
    def solve(batch):
        if 0 in batch:
            raise SolverLimit("time limit")
        return list(batch)

    async def main():
        b = _batcher(solve, max_batch=2)
        out = await asyncio.gather(*(b.submit(u) for u in range(4)), return_exceptions=True)
        b.close()
        return out

    out = asyncio.run(main())
    assert all(isinstance(x, SolverLimit) for x in out[:2]) and out[2:] == [2, 3]


def test_a_users_own_error_fails_that_user_only() -> None:
    """``solve`` may answer some uploads of a batch with an exception (a failing upload found
    by bisection): only their waiters raise."""

    def solve(batch):
        return [HTTPError(422, f"upload {u}") if u % 3 == 1 else u for u in batch]

    async def main():
        b = _batcher(solve, max_batch=4)
        out = await asyncio.gather(*(b.submit(u) for u in range(6)), return_exceptions=True)
        b.close()
        return out

    out = asyncio.run(main())
    assert [x.status if isinstance(x, HTTPError) else x for x in out] == [0, 422, 2, 3, 422, 5]


def test_too_many_pending_uploads_are_refused_with_503() -> None:
    gate = threading.Event()

    def solve(batch):
        gate.wait(5)
        return list(batch)

    async def main():
        b = _batcher(solve, max_batch=1, window_s=0.0, max_pending=2)
        first = asyncio.ensure_future(b.submit(0))  # solving, blocks on the gate
        await asyncio.sleep(0.02)
        waiting = [asyncio.ensure_future(b.submit(u)) for u in (1, 2)]
        await asyncio.sleep(0.02)
        with pytest.raises(HTTPError) as err:
            await b.submit(3)
        gate.set()
        out = await asyncio.gather(first, *waiting)
        b.close()
        return err.value.status, out

    status, out = asyncio.run(main())
    assert status == 503 and out == [0, 1, 2]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_batch": 0}, "max_batch"),
        ({"batch_window_s": -1.0}, "batch_window_s"),
        ({"max_body_bytes": 10}, "max_body_bytes"),
        ({"method": "simplex"}, "method"),
        ({"time_limit": 0.0}, "time_limit"),
        ({"header_timeout_s": 0.0}, "header_timeout_s"),
        ({"body_timeout_s": float("inf")}, "body_timeout_s"),
        ({"max_connections": 0}, "max_connections"),
    ],
)
def test_bad_service_settings(kwargs, match: str) -> None:
    from privopt.errors import InvalidInput

    with pytest.raises(InvalidInput, match=match):
        ServiceConfig(**kwargs)
