"""The cross-worker cap on model calls: slots of a Prefect global concurrency limit.

Prefect's `concurrency()` costs two API round trips per call and, when the limit is full,
answers 423 with a `Retry-After` near the average slot occupancy: a waiting call sleeps that
long (one call at a time per process, Prefect serialises acquisitions) instead of being woken
when a slot frees. Measured: 8 one-second calls under a limit of 1 took 11.6 s, not 8.
Here a process holds a slot while it has calls waiting and hands it from one call to the next
without asking the server again; it gives the slot back when no call waits or after
`MAX_HOLD_S`, so other workers sharing the limit get their turn. It never holds more slots
than the limit allows, so within one process no acquisition is ever refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from proctor.calls.call_clock import waiting_for_turn

T = TypeVar("T")

log = logging.getLogger("proctor.calls.limits")

MAX_HOLD_S = 5.0  # then the slot goes back to the server, for other workers' turn
LINGER_S = 0.01  # how long a held slot waits for the next call before it is given back
HELD_CALL_S = 120.0  # how long a call given up by its caller may still hold its slot


def held_call_timeout(timeout_s: float | None) -> float:
    """The HTTP timeout of a call under a limit. Its caller's own limit (a metric's
    `timeout_ms`) still applies to the caller; the request itself goes on until the server
    answers, up to `HELD_CALL_S`, so its slot is not handed on while the server still serves it
    (closing the connection early does not stop the server)."""
    return max(timeout_s or 0.0, HELD_CALL_S)


class ModelCallGate:
    """`async with gate.slot():` around every model call (agent turn, judge, simulated user).

    Made per run and process, on the run's event loop; Prefect is imported only when a run
    names a limit, so plain runs stay Prefect-free."""

    def __init__(self, name: str, *, max_hold_s: float = MAX_HOLD_S, linger_s: float = LINGER_S) -> None:
        self.name = name
        self.max_hold_s = max_hold_s
        self.linger_s = linger_s
        self._waiting: deque[asyncio.Future[asyncio.Event]] = deque()
        self._holders: set[asyncio.Task[None]] = set()
        self._serving = 0
        self._cap: int | None = None
        self._cap_lock: asyncio.Lock | None = None

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        await self._read_cap()
        granted: asyncio.Future[asyncio.Event] = asyncio.get_running_loop().create_future()
        self._waiting.append(granted)
        self._spawn()
        try:
            with waiting_for_turn():
                done = await granted
        except BaseException:
            if granted.done() and not granted.cancelled() and granted.exception() is None:
                granted.result().set()  # the slot came as this call was cancelled: pass it on
            granted.cancel()
            raise
        try:
            yield
        finally:
            done.set()

    async def _read_cap(self) -> None:
        """The limit's size, read once: no more holders than slots, so none polls in vain."""
        if self._cap is not None:
            return
        if self._cap_lock is None:
            self._cap_lock = asyncio.Lock()
        async with self._cap_lock:
            if self._cap is None:
                from prefect.client.orchestration import get_client

                async with get_client() as client:
                    limit = await client.read_global_concurrency_limit_by_name(self.name)
                self._cap = max(1, int(limit.limit))

    def _spawn(self) -> None:
        pending = sum(1 for future in self._waiting if not future.done())
        target = min(self._cap or 1, self._serving + pending)
        while len(self._holders) < target:
            task = asyncio.get_running_loop().create_task(self._hold(), name=f"model-call-slot {self.name}")
            self._holders.add(task)
            task.add_done_callback(self._holder_done)

    def _holder_done(self, task: asyncio.Task[None]) -> None:
        self._holders.discard(task)
        if not task.cancelled() and self._waiting:
            with contextlib.suppress(RuntimeError):  # the loop is closing
                self._spawn()

    def _next_waiter(self) -> asyncio.Future[asyncio.Event] | None:
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                return future
        return None

    async def _hold(self) -> None:
        from prefect.concurrency.asyncio import concurrency

        loop = asyncio.get_running_loop()
        acquired = False
        try:
            async with concurrency(self.name, occupy=1, strict=True):
                acquired, since = True, loop.time()
                while loop.time() - since < self.max_hold_s:
                    waiter = self._next_waiter()
                    if waiter is None:
                        await asyncio.sleep(self.linger_s)
                        waiter = self._next_waiter()
                        if waiter is None:
                            return
                    done = asyncio.Event()
                    self._serving += 1
                    try:
                        waiter.set_result(done)
                        await done.wait()
                    finally:
                        self._serving -= 1
        except Exception as error:  # the limit could not be taken: the call waiting fails with why
            if acquired:
                log.warning("giving back a slot of %r failed: %s", self.name, error)
                return
            waiter = self._next_waiter()
            if waiter is not None:
                waiter.set_exception(RuntimeError(f"no slot of the model call limit {self.name!r}: {error}"))

    async def aclose(self) -> None:
        """Hand back any slot still held (normally none: a holder leaves when no call waits)."""
        holders = list(self._holders)
        for task in holders:
            task.cancel()
        await asyncio.gather(*holders, return_exceptions=True)


async def call_in_slot(
    slot: Callable[[], contextlib.AbstractAsyncContextManager[Any]] | None, call: Callable[[], Awaitable[T]]
) -> T:
    """`call()` inside a slot of `slot` (e.g. a `ModelCallGate`), timed as the call alone.

    The wait for the slot stops the enclosing time limit's clock (`call_clock`). A call whose
    caller gives up (a metric's `timeout_ms`, a stopped run) is not abandoned mid-request: it
    goes on in the background and keeps its slot until the server has answered (or its own
    client timeout ends it), so a limit of 1 never has two calls at the server at once.
    """
    if slot is None:
        return await call()
    held = slot()
    with waiting_for_turn():
        await held.__aenter__()
    task = asyncio.ensure_future(call())
    try:
        result = await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.done():
            await held.__aexit__(None, None, None)
        else:
            task.add_done_callback(lambda done: _release_later(held, done))
        raise
    except BaseException as error:
        await held.__aexit__(type(error), error, error.__traceback__)
        raise
    await held.__aexit__(None, None, None)
    return result


_releasing: set[asyncio.Task[Any]] = set()


def _release_later(held: contextlib.AbstractAsyncContextManager[Any], done: asyncio.Future[Any]) -> None:
    """Give back the slot of a call nobody waits for any more, once the server has answered."""
    if not done.cancelled():
        done.exception()  # retrieved, so asyncio does not log it as never retrieved
    with contextlib.suppress(RuntimeError):  # the loop is closing: the slot goes with it
        task = asyncio.get_running_loop().create_task(held.__aexit__(None, None, None))
        _releasing.add(task)
        task.add_done_callback(_releasing.discard)
