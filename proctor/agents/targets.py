"""Finding and calling the agent under test: `module:attr` or `path/to/file.py:attr`."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import queue
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from proctor.agents.agent_loop import AgentTask, abandon_if_busy, on_agent_loop, running_local
from proctor.agents.protocol import AgentRequest, AgentResponse, coerce_response
from proctor.calls.call_clock import limited
from proctor.loaders.references import CONFIGURED_AGENTS, resolve_relative_target
from proctor.user_code import (
    BY_ANOTHER_CASE,
    AgentLoadError,
    describe_error,
    in_forked_child,
    install_exit_guard,
    leave_forked_child,
    load_python_target,
    mark_agent_thread,
)

__all__ = ["AgentLoadError", "load_target", "resolve_relative_target"]


def _configured_agent(kind: str, config: str) -> Callable[..., Any]:
    from pydantic import ValidationError

    from proctor.loaders.errors import SuiteError

    path = Path(config)
    if kind == "adk":  # an ADK agent package folder, run by google-adk's own Runner
        from proctor.agents.adk_agent import load_adk_agent

        return load_adk_agent(path)
    if not path.is_file():
        raise AgentLoadError(f"agent target '{kind}:{config}': config file {path} not found")
    try:
        if kind == "openai":
            from proctor.agents.openai_agent import load_openai_agent

            return load_openai_agent(path)
        from proctor.agents.http_agent import load_http_agent

        return load_http_agent(path)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(top level)'}: {e['msg']}" for e in error.errors()
        )
        raise AgentLoadError(f"agent config {path}: {problems}") from None
    except SuiteError as error:  # unreadable or broken YAML, said as the suite loader says it
        raise AgentLoadError(
            "; ".join(" ".join(str(problem).split()) for problem in error.problems)
        ) from None
    except Exception as error:  # credentials, unreadable instructions
        raise AgentLoadError(f"agent config {path}: {error}") from None


@lru_cache(maxsize=64)
def load_target(target: str) -> Callable[..., Any]:
    """The callable a target names: `module:attr`, `file.py:attr`, `openai:agent.yaml` or
    `http:endpoint.yaml`; errors say what was tried."""
    kind, sep, rest = target.partition(":")
    if sep and kind in CONFIGURED_AGENTS:
        return _configured_agent(kind, rest)
    return load_python_target(target)


class AgentTimeoutError(TimeoutError):
    pass


class AgentAbortError(RuntimeError):
    """The agent raised what asyncio would let end or wedge the whole run: `sys.exit()`,
    `os._exit()`, a `KeyboardInterrupt`, `GeneratorExit` or any other `BaseException`, a stray
    `CancelledError` nobody asked for; or its call was cancelled by another case's code. It
    fails that agent call only, as an exception does."""


class AgentThreadsClosed(RuntimeError):
    """A call arrived after the run let go of its agent: the case did not run (it is not an
    agent failure, and must not be stored as one)."""


class AgentThreads:
    """Daemon threads for sync agents, a new one whenever none is idle.

    A sync agent that hangs cannot be stopped: its call times out and its thread is left
    behind. A fixed pool would then queue the next cases behind it, where their timeouts run
    out before the agent is even called; here they get a fresh thread, so each call's timeout
    counts the agent's own time. Threads are daemons, so a hung agent cannot keep the
    process from exiting. Live threads stay near the run's concurrency plus the hung ones.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, function: Callable[[Any], Any], argument: Any) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            if self._closed:
                raise AgentThreadsClosed("the agent's threads are closed: the run is ending")
            if self._idle:
                self._idle -= 1
            else:
                thread = threading.Thread(target=self._work, name="proctor-agent", daemon=True)
                self._threads = [t for t in self._threads if t.is_alive()] + [thread]
                thread.start()
        self._queue.put((loop, future, function, argument))
        return future

    def _work(self) -> None:
        mark_agent_thread()
        while (item := self._queue.get()) is not None:
            loop, future, function, argument = item
            outcome: tuple[Any, BaseException | None] = (None, None)
            if not future.cancelled():
                try:
                    outcome = (function(argument), None)
                except Exception as error:  # handed to the caller, as an executor does
                    outcome = (None, error)
                except BaseException as error:
                    # Awaited, these (SystemExit, KeyboardInterrupt, GeneratorExit, os._exit,
                    # a custom BaseException) would escape the event loop and end or wedge the
                    # run: raised in the agent's own thread, they end its call only.
                    outcome = (None, AgentAbortError(f"agent raised {_describe(error)}"))
                if in_forked_child():  # the agent forked: its child never runs Proctor's code
                    leave_forked_child()
            with self._lock:  # idle before the caller wakes, so its next call reuses this thread
                self._idle += 1
            with contextlib.suppress(RuntimeError):  # the caller's loop closed meanwhile
                loop.call_soon_threadsafe(_settle, future, *outcome)

    def close(self) -> None:
        """Idle threads exit; hung ones are daemons and die with the process."""
        with self._lock:
            self._closed = True
            count, self._threads = len(self._threads), []
        for _ in range(count):
            self._queue.put(None)


def _describe(error: BaseException) -> str:
    return describe_error(error)


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # the caller timed out and cancelled it
        return
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


class AgentInvoker:
    """Calls one agent: async agents on the agents' own loop (`agent_loop`), sync ones on
    `AgentThreads`; either way the call is timed where it runs (`AgentRequest.own_ms`).

    The run's concurrency (the pipeline's limiter) bounds how many calls are in flight, so
    sync agents get the same parallelism as async ones (asyncio's default pool would cap
    them at a handful of threads). `max_threads` is kept for callers; threads are made as
    calls need them.
    """

    def __init__(self, agent: Callable[..., Any], *, max_threads: int, timeout_s: float | None) -> None:
        self.agent = agent
        self.timeout_s = timeout_s
        self.max_threads = max_threads
        self._is_async = inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(
            getattr(agent, "__call__", None)  # noqa: B004 - callable objects with async __call__
        )
        self._threads = None if self._is_async else AgentThreads()
        install_exit_guard()  # os._exit() in an agent's thread fails its call, not the run

    async def _call(self, request: AgentRequest) -> Any:
        try:
            if self._threads is None:
                return await on_agent_loop(self._timed_async(request))
            value = await self._threads.submit(self._timed_sync, request)
            if inspect.isawaitable(value):  # a sync callable that returned a coroutine
                return await on_agent_loop(self._awaited(value, request))
            return value
        except SystemExit as error:
            # Caught here, inside the call's task: past a task boundary asyncio re-raises it
            # out of the event loop, which would end the whole run. (A KeyboardInterrupt here
            # is the user's Ctrl-C and goes on; a sync agent's own is wrapped by its thread.)
            raise AgentAbortError(f"agent raised {_describe(error)}") from None
        except asyncio.CancelledError as error:
            task = asyncio.current_task()
            if task is None or task.cancelling():  # a timeout or the run's own cancellation
                raise
            raise AgentAbortError(f"agent raised {_describe(error)}") from None

    async def _timed_async(self, request: AgentRequest) -> Any:
        """The agent's call on the agents' loop, timed there: only the agent runs on that loop,
        so the time is the agent's, whatever Proctor's own loop is busy with."""
        started = time.perf_counter()
        task = asyncio.current_task()
        if task is not None:
            task.set_name(f"case {request.case_id!r}")  # who cancels or stops, in messages
        try:
            return await self.agent(request)
        except asyncio.CancelledError as error:
            by = task.cancelled_by if isinstance(task, AgentTask) else None
            if by is not None and by != task.get_name():  # type: ignore[union-attr]
                culprit = by.removeprefix("case ")  # the task's name: "case 'x'"
                raise AgentAbortError(f"the agent's call was cancelled {BY_ANOTHER_CASE}{culprit}") from None
            if task is None or task.cancelling():  # the caller's timeout or cancellation
                raise
            raise AgentAbortError(f"agent raised {_describe(error)}") from None
        except Exception:
            raise
        except BaseException as error:
            # Raised out of a task, these (KeyboardInterrupt, SystemExit, GeneratorExit, a
            # custom BaseException, os._exit) would stop the agents' loop itself or escape it
            # (no Ctrl-C is delivered to its thread: a KeyboardInterrupt there is the agent's own).
            raise AgentAbortError(f"agent raised {_describe(error)}") from None
        finally:
            if request.own_ms is None:
                request.own_ms = (time.perf_counter() - started) * 1000
            if in_forked_child():  # the agent forked: its child never runs Proctor's code
                leave_forked_child()

    @staticmethod
    async def _awaited(awaitable: Any, request: AgentRequest) -> Any:
        started = time.perf_counter()
        try:
            return await awaitable
        finally:
            request.own_ms = (request.own_ms or 0.0) + (time.perf_counter() - started) * 1000

    def _timed_sync(self, request: AgentRequest) -> Any:
        """A sync agent's call, timed in its own thread (not when Proctor's loop notices it)."""
        started = time.perf_counter()
        try:
            return self.agent(request)
        finally:
            if request.own_ms is None:
                request.own_ms = (time.perf_counter() - started) * 1000

    async def invoke(self, request: AgentRequest) -> AgentResponse:
        try:  # the timeout counts the agent's work, not its model calls' waits for quota
            async with limited(self.timeout_s):
                value = await self._call(request)
        except TimeoutError:
            raise AgentTimeoutError(self._timeout_message(request)) from None
        return coerce_response(value, request)

    def _timeout_message(self, request: AgentRequest) -> str:
        """Why a call timed out; when the agents' loop is stuck in a case's code (a blocking call
        in async code), which case: found on the loop thread's stack."""
        message = f"agent did not answer within {self.timeout_s:g} s"
        running = running_local(AgentInvoker._timed_async.__code__, "request") if self._is_async else None
        blocker = getattr(running, "case_id", None)
        if blocker == request.case_id:
            return (
                f"{message}: it blocked the agents' event loop "
                "(a blocking call, such as time.sleep, in async code)"
            )
        if blocker is not None:
            return f"{message}: the agents' event loop was blocked {BY_ANOTHER_CASE}{blocker!r}"
        return message

    def close(self) -> None:
        if self._threads is not None:
            self._threads.close()
        abandon_if_busy(AgentInvoker._timed_async.__code__)
