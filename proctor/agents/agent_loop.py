"""The agents' own event loop, in a thread of its own, so the time an agent is given is its own.

Async agents (the OpenAI and HTTP agents, ADK's `Runner`, a Python `async def`) run here, not on
the loop that runs Proctor's stages. On that loop, a reply that has arrived waits until whatever
runs there yields: scoring other cases, writing results, a client's first-call set-up. Measured
there, calls a server answered in under 1 ms were recorded at 6-894 ms, by how much depending on
the machine's load, and `max_execution_time` verdicts with it. Here nothing but agents runs, so a
reply is read when it comes (within the interpreter's thread switch interval, 5 ms, when
Proctor's own thread is busy).

One loop per process, kept for the process's life: an agent's clients bound to it stay usable
from run to run, as a worker runs flow after flow. A forked child makes its own.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any

_lock = threading.Lock()
_current: tuple[int, asyncio.AbstractEventLoop, threading.Thread] | None = None


def agent_loop() -> asyncio.AbstractEventLoop:
    """The process's agent loop, started on first use (and again in a forked child)."""
    global _current
    with _lock:
        if _current is None or _current[0] != os.getpid() or not _current[2].is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="proctor-agent-loop", daemon=True)
            thread.start()
            _current = (os.getpid(), loop, thread)
        return _current[1]


async def on_agent_loop(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Await `coroutine` run on the agent loop, in the caller's context (its context variables
    go with it); cancelling the caller cancels it there."""
    future = asyncio.run_coroutine_threadsafe(coroutine, agent_loop())
    return await asyncio.wrap_future(future)
