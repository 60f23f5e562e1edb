"""The run's case concurrency when the user sets none: as many cases as the provider's quota feeds.

With `--concurrency` given, that many cases run at once, as asked (and the summary says when
it, not the quota, held the run back). Without it, a run starts with `START` cases at once and
takes one more each time a case ends while every model endpoint it calls has room to spare
(no call waiting for its turn, no 429 pause, below the known rate; see
`proctor.calls.quota.has_headroom`), up to `MAXIMUM`. A run whose agent calls no model through
Proctor never grows: its concurrency stays `START`, the old default.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from types import TracebackType

from proctor.calls.quota import has_headroom

START = 8
MAXIMUM = 256


class AdaptiveLimiter:
    """`async with limiter:` like an `asyncio.Semaphore` whose size grows while `headroom()`."""

    def __init__(
        self, start: int = START, maximum: int = MAXIMUM, headroom: Callable[[], bool] = has_headroom
    ) -> None:
        self.limit = start
        self.maximum = maximum
        self.active = 0
        self._headroom = headroom
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def __aenter__(self) -> None:
        while self.active >= self.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # woken as it was cancelled: pass the turn on
                raise
        self.active += 1

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.active -= 1
        if self._waiters and self.limit < self.maximum and self._headroom():
            self.limit += 1
        self._wake()

    def _wake(self) -> None:
        free = self.limit - self.active
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1
