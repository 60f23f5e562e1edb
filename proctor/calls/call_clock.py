"""Time limits that count a model call, not the wait for its turn.

A judge's `timeout_ms` and an agent's timeout say how long the *call* may take. A call that
first waits for a slot under `--model-call-limit`, or for the provider's quota, has not started
yet: counting that wait made judges time out behind other cases' calls (24 cases, judges at
150 ms, `timeout_ms` 5000 and a limit of 1 errored 11 cases). `limited(seconds)` is a timeout
whose clock stops while a call inside it waits for its turn (`waiting_for_turn()`), unless
another call inside it is in flight meanwhile (samples asked in parallel still count).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar


class CallClock:
    """The running time of one limited operation, stopped while it only waits for its turn."""

    def __init__(self, seconds: float, timeout: asyncio.Timeout) -> None:
        self.seconds = seconds
        self._timeout = timeout
        self._loop = asyncio.get_running_loop()
        self._spent = 0.0
        self._since: float | None = self._loop.time()
        self._waiting = 0
        self._in_flight = 0
        self.waited_s = 0.0
        self._wait_started: float | None = None
        self._lock = threading.Lock()
        self._done = False  # the block has ended: a late update must not reschedule anything

    @property
    def expired(self) -> bool:
        """Whether this clock's time ran out (not a TimeoutError raised by the work inside)."""
        return self._timeout.expired()

    @property
    def ticking(self) -> bool:
        return self._waiting == 0 or self._in_flight > 0

    def _update(self) -> None:
        if self._timeout.expired() or self._done:
            return
        now = self._loop.time()
        if self.ticking and self._since is None:
            self._since = now
            self._timeout.reschedule(now + max(0.0, self.seconds - self._spent))
        elif not self.ticking and self._since is not None:
            self._spent += now - self._since
            self._since = None
            self._timeout.reschedule(None)
        if self._waiting and self._wait_started is None:
            self._wait_started = now
        elif not self._waiting and self._wait_started is not None:
            self.waited_s += now - self._wait_started
            self._wait_started = None

    def _changed(self, waiting: int = 0, in_flight: int = 0) -> None:
        """Counts changed, maybe from another thread (an agent's calls run on the agents' own
        loop): the timeout is rescheduled on the loop it belongs to."""
        with self._lock:
            self._waiting += waiting
            self._in_flight += in_flight
        try:
            on_own_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_own_loop = False
        if on_own_loop:
            self._update()
        else:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing left to time
                self._loop.call_soon_threadsafe(self._update)

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        self._changed(waiting=1)
        try:
            yield
        finally:
            self._changed(waiting=-1)

    @contextlib.contextmanager
    def in_flight(self) -> Iterator[None]:
        self._changed(in_flight=1)
        try:
            yield
        finally:
            self._changed(in_flight=-1)


_clock: ContextVar[CallClock | None] = ContextVar("proctor_call_clock", default=None)


@contextlib.asynccontextmanager
async def limited(seconds: float | None) -> AsyncIterator[CallClock | None]:
    """`asyncio.timeout(seconds)` whose clock stops while the work inside only waits for a
    turn; raises TimeoutError when the time runs out (`expired(clock)` tells it was ours)."""
    if seconds is None:
        yield None
        return
    async with asyncio.timeout(seconds) as timeout:
        clock = CallClock(seconds, timeout)
        token = _clock.set(clock)
        try:
            yield clock
        finally:
            clock._done = True
            _clock.reset(token)


class WaitLedger:
    """The time spent waiting for turns inside a `counting_waits()` block (an agent's model
    calls, whose round trips must not include their wait for quota)."""

    def __init__(self) -> None:
        self.total_s = 0.0


_ledger: ContextVar[WaitLedger | None] = ContextVar("proctor_wait_ledger", default=None)


@contextlib.contextmanager
def counting_waits() -> Iterator[WaitLedger]:
    ledger = WaitLedger()
    token = _ledger.set(ledger)
    try:
        yield ledger
    finally:
        _ledger.reset(token)


@contextlib.contextmanager
def waiting_for_turn() -> Iterator[None]:
    """Around a wait for a slot or for quota: the enclosing `limited` clock stops meanwhile,
    and the enclosing `counting_waits()` ledger counts it."""
    clock, ledger = _clock.get(), _ledger.get()
    started = time.monotonic()
    try:
        if clock is None:
            yield
        else:
            with clock.waiting():
                yield
    finally:
        if ledger is not None:
            ledger.total_s += time.monotonic() - started


@contextlib.contextmanager
def calling() -> Iterator[None]:
    """Around the call itself: the clock runs, even while a parallel sibling waits."""
    clock = _clock.get()
    if clock is None:
        yield
        return
    with clock.in_flight():
        yield
