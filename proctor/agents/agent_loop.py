"""The agents' own event loop, in a thread of its own, so the time an agent is given is its own
and nothing an agent does there reaches the run.

Async agents (the OpenAI and HTTP agents, ADK's `Runner`, a Python `async def`) run here, not on
the loop that runs Proctor's stages. On that loop, a reply that has arrived waits until whatever
runs there yields: scoring other cases, writing results, a client's first-call set-up. Measured
there, calls a server answered in under 1 ms were recorded at 6-894 ms, by how much depending on
the machine's load, and `max_execution_time` verdicts with it. Here nothing but agents runs, so a
reply is read when it comes (within the interpreter's thread switch interval, 5 ms, when
Proctor's own thread is busy).

It is also where agent code is kept from the run (issue 26): awaited on Proctor's loop, an
agent's `KeyboardInterrupt` or other `BaseException` escaped the loop, its `loop.stop()` ended
the run, cancelling "all tasks" cancelled Proctor's, and a blocking call froze every timeout.
Here `stop()` from agent code is ignored (and logged, naming the case), a task remembers whose
code cancelled it (`cancelled_by`), the loop survives whatever escapes a task, and the run's
timeouts, on Proctor's loop, still fire while this one is blocked.

One loop per process, kept for the process's life: an agent's clients bound to it stay usable
from run to run, as a worker runs flow after flow. A forked child makes its own; a loop an agent
left blocked when a run ended is abandoned, and the next run gets a new one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Coroutine
from types import CodeType
from typing import Any

from proctor.user_code import describe_error, mark_agent_thread

log = logging.getLogger("proctor.agent")


class AgentTask(asyncio.Task):  # type: ignore[type-arg]
    """A task of the agent loop that remembers whose code cancelled it: another case's agent
    (the name of its task, `case 'x'`), or None when Proctor did (a timeout, the run ending)."""

    cancelled_by: str | None = None

    def cancel(self, msg: Any = None) -> bool:
        try:
            culprit = asyncio.current_task()
        except RuntimeError:  # called from another thread: Proctor's own cancellation
            culprit = None
        if culprit is not None and self.cancelled_by is None:
            self.cancelled_by = culprit.get_name()
        return super().cancel(msg)


class _AgentEventLoop(asyncio.SelectorEventLoop):
    """An event loop only Proctor stops: an agent's `loop.stop()` is logged and ignored."""

    def stop(self) -> None:
        try:
            culprit = asyncio.current_task(self)
        except RuntimeError:
            culprit = None
        who = culprit.get_name() if culprit is not None else "agent code"
        log.warning("%s called loop.stop() on the agents' event loop; ignored, the run goes on", who)


def _task_factory(loop: asyncio.AbstractEventLoop, coro: Any, **options: Any) -> asyncio.Task[Any]:
    return AgentTask(coro, loop=loop, **options)


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    mark_agent_thread()
    asyncio.set_event_loop(loop)
    while True:  # Proctor never stops it: the loop lives as long as the process
        try:
            loop.run_forever()
        except BaseException as error:  # noqa: BLE001 - nothing an agent raises ends this loop
            log.warning("the agents' event loop raised %s; it goes on", describe_error(error))


_lock = threading.Lock()
_current: tuple[int, asyncio.AbstractEventLoop, threading.Thread] | None = None


def agent_loop() -> asyncio.AbstractEventLoop:
    """The process's agent loop, started on first use (and again in a forked child, or after
    the last one was abandoned)."""
    global _current
    with _lock:
        if _current is None or _current[0] != os.getpid() or not _current[2].is_alive():
            loop = _AgentEventLoop()
            loop.set_task_factory(_task_factory)
            thread = threading.Thread(target=_serve, args=(loop,), name="proctor-agent-loop", daemon=True)
            thread.start()
            _current = (os.getpid(), loop, thread)
        return _current[1]


async def on_agent_loop(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Await `coroutine` run on the agent loop, in the caller's context (its context variables
    go with it); cancelling the caller cancels it there."""
    future = asyncio.run_coroutine_threadsafe(coroutine, agent_loop())
    return await asyncio.wrap_future(future)


def running_local(code: CodeType, name: str) -> Any:
    """The local `name` of a frame of `code` on the agent loop thread's stack right now: who
    is running there (when the loop is busy rather than waiting), else None."""
    with _lock:
        current = _current
    if current is None:
        return None
    frame = sys._current_frames().get(current[2].ident or -1)
    while frame is not None:
        if frame.f_code is code:
            return frame.f_locals.get(name)
        frame = frame.f_back
    return None


def abandon_if_busy(code: CodeType) -> None:
    """At a run's end: a loop still running a frame of `code` (an agent that never returned
    from a blocking call) is left to its daemon thread; the next run gets a fresh one."""
    global _current
    if running_local(code, "request") is None:
        return
    with _lock:
        _current = None
