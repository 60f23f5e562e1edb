"""What a run opens once in a process and closes when it ends: an agent's tool servers and
indexes (`ToolBox`es), shared by every case of the run.

A `RunScope` belongs to the run's `Runtime` (one per run and event loop: the whole run when
it runs in this process, one chunk on a Dask worker) and reaches the agent on each
`AgentRequest.run_scope`. The runtime closes it when the run's cases are done, however they
ended (`Runtime.aclose`); an agent called outside a run (tests, user code) gets a scope of its
own for that call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar

log = logging.getLogger("proctor.agents.tools")


class Openable(Protocol):
    async def open(self) -> None: ...

    async def aclose(self) -> None: ...


T = TypeVar("T", bound=Openable)


class RunScopeClosed(RuntimeError):
    """A case asked for something after its run began closing: the run is ending."""


class RunScope:
    """Opens each thing once, on first need, in a task of its own (so one case's timeout
    cannot cancel the opening every case waits for); a failed opening is kept, and every
    later case gets its error instead of opening it again."""

    def __init__(self) -> None:
        self._opening: dict[Hashable, tuple[Any, asyncio.Task[None]]] = {}
        self._closed = False
        # Where things were opened: the agents' own loop (`proctor.agents.agent_loop`) when a
        # run's agent opens them, which is not the loop the run closes its scope from.
        self._loop: asyncio.AbstractEventLoop | None = None

    async def open(self, key: Hashable, make: Callable[[], T]) -> T:
        if self._closed:
            raise RunScopeClosed("the run is ending: its tools are closed")
        entry = self._opening.get(key)
        if entry is None:
            thing = make()
            self._loop = asyncio.get_running_loop()
            entry = self._opening[key] = (thing, self._loop.create_task(thing.open()))
        thing, task = entry
        await asyncio.shield(task)
        return thing  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        """Close everything opened (or still opening), the latest first, on the loop it was
        opened on; never raises."""
        self._closed = True
        opened_on = self._loop
        if opened_on is not None and opened_on is not asyncio.get_running_loop() and opened_on.is_running():
            closing = asyncio.run_coroutine_threadsafe(self._close_all(), opened_on)
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(closing)
            return
        await self._close_all()

    async def _close_all(self) -> None:
        entries, self._opening = list(self._opening.values()), {}
        for thing, task in reversed(entries):
            if not task.done():
                task.cancel()
            with contextlib.suppress(BaseException):
                await task
            try:
                await thing.aclose()
            except Exception:  # a close that fails must not keep the others open
                log.exception("closing %r failed", thing)
