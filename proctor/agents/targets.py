"""Finding and calling the agent under test: `module:attr` or `path/to/file.py:attr`."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any

from proctor.agents.protocol import AgentRequest, AgentResponse, coerce_response


class AgentLoadError(ValueError):
    """The agent target cannot be imported or is not callable."""


def resolve_relative_target(target: str, base_dir: Path) -> str:
    """`file.py:attr` and `openai:`/`http:` config files resolve against `base_dir`."""
    kind, sep, rest = target.partition(":")
    if sep and kind in CONFIGURED_AGENTS and not Path(rest).is_absolute():
        return f"{kind}:{(base_dir / rest).resolve()}"
    module, sep, attr = target.rpartition(":")
    if sep and module.endswith(".py") and not Path(module).is_absolute():
        return f"{(base_dir / module).resolve()}:{attr}"
    return target


def _configured_agent(kind: str, config: str) -> Callable[..., Any]:
    from pydantic import ValidationError

    path = Path(config)
    if not path.is_file():
        raise AgentLoadError(f"agent target '{kind}:{config}': config file {path} not found")
    try:
        if kind == "openai":
            from proctor.agents.openai_agent import load_openai_agent

            return load_openai_agent(path)
        from proctor.agents.http_agent import load_http_agent

        return load_http_agent(path)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise AgentLoadError(f"agent config {path}: {problems}") from None
    except Exception as error:  # credentials, unreadable instructions, bad YAML
        raise AgentLoadError(f"agent config {path}: {error}") from None


CONFIGURED_AGENTS = ("openai", "http")


@lru_cache(maxsize=64)
def load_target(target: str) -> Callable[..., Any]:
    """The callable a target names: `module:attr`, `file.py:attr`, `openai:agent.yaml` or
    `http:endpoint.yaml`; errors say what was tried."""
    kind, sep, rest = target.partition(":")
    if sep and kind in CONFIGURED_AGENTS:
        return _configured_agent(kind, rest)
    module_ref, sep, attr = target.rpartition(":")
    if not sep or not module_ref or not attr:
        raise AgentLoadError(
            f"agent target {target!r} must look like 'package.module:attr' or 'file.py:attr'"
        )
    if module_ref.endswith(".py"):
        path = Path(module_ref)
        if not path.is_file():
            raise AgentLoadError(f"agent target {target!r}: file {path} not found")
        name = f"proctor_agent_{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise AgentLoadError(f"agent target {target!r}: cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as error:
            del sys.modules[name]
            raise AgentLoadError(f"agent target {target!r}: importing {path} failed: {error!r}") from error
    else:
        try:
            module = importlib.import_module(module_ref)
        except Exception as error:
            raise AgentLoadError(f"agent target {target!r}: cannot import {module_ref}: {error!r}") from error
    try:
        agent = getattr(module, attr)
    except AttributeError:
        raise AgentLoadError(f"agent target {target!r}: {module_ref} has no attribute {attr!r}") from None
    if not callable(agent):
        raise AgentLoadError(f"agent target {target!r} is a {type(agent).__name__}, not a callable")
    return agent


class AgentTimeoutError(TimeoutError):
    pass


class AgentInvoker:
    """Calls one agent: async agents on the event loop, sync ones on a bounded thread pool.

    The pool is sized to the run's concurrency so sync agents get the same parallelism as
    async ones (asyncio's default pool would cap them at a handful of threads).
    """

    def __init__(self, agent: Callable[..., Any], *, max_threads: int, timeout_s: float | None) -> None:
        self.agent = agent
        self.timeout_s = timeout_s
        self._is_async = inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(
            getattr(agent, "__call__", None)  # noqa: B004 - callable objects with async __call__
        )
        self._pool = None if self._is_async else ThreadPoolExecutor(max_workers=max_threads)

    async def _call(self, request: AgentRequest) -> Any:
        if self._is_async:
            return await self.agent(request)
        loop = asyncio.get_running_loop()
        value = await loop.run_in_executor(self._pool, self.agent, request)
        return await value if inspect.isawaitable(value) else value

    async def invoke(self, request: AgentRequest) -> AgentResponse:
        try:
            if self.timeout_s is None:
                value = await self._call(request)
            else:
                value = await asyncio.wait_for(self._call(request), self.timeout_s)
        except TimeoutError:
            raise AgentTimeoutError(f"agent did not answer within {self.timeout_s:g} s") from None
        return coerce_response(value, request)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
