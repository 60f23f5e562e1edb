"""An agent's tools that runners answer (MCP servers, indexes, prompt tools), opened together
for one run: the schemas the model is offered and who answers each call."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from proctor.agents.tools.runner import ToolOpenError, ToolRunner

if TYPE_CHECKING:
    from proctor.agents.protocol import AgentRequest


class ToolBox:
    """The runners of one agent, each given as (its entry's name, runner)."""

    def __init__(self, runners: Sequence[tuple[str, ToolRunner]], taken: Sequence[str] = ()) -> None:
        self.runners = list(runners)
        self._taken = list(taken)  # names the agent's function tools already use
        self._by_tool: dict[str, ToolRunner] = {}
        self._schemas: dict[str, list[dict[str, Any]]] = {}
        self._closed = False

    async def open(self) -> None:
        """Every runner at once; if one fails, the others are closed and its reason raised."""
        outcomes = await asyncio.gather(
            *(runner.open() for _, runner in self.runners), return_exceptions=True
        )
        failures = [
            (entry, outcome) for (entry, _), outcome in zip(self.runners, outcomes, strict=True) if outcome
        ]
        try:
            if failures:
                for _, outcome in failures:
                    if not isinstance(outcome, Exception):  # Ctrl-C, cancellation: not a tool's failure
                        raise outcome
                raise ToolOpenError("; ".join(_reason(entry, error) for entry, error in failures))
            self._index()
        except BaseException:
            await self.aclose()
            raise

    def _index(self) -> None:
        owners = {name: "a function tool" for name in self._taken}
        for entry, runner in self.runners:
            schemas = runner.schemas()
            for schema in schemas:
                name = schema["function"]["name"]
                if name in owners:
                    raise ToolOpenError(
                        f"tool {entry!r} offers a tool named {name!r}, as {owners[name]} does: "
                        "the model could not tell them apart"
                    )
                owners[name] = f"tool {entry!r}"
                self._by_tool[name] = runner
            self._schemas[entry] = schemas

    def schemas_of(self, entry: str) -> list[dict[str, Any]]:
        """The function tools the entry named `entry` offers (after `open`)."""
        return self._schemas.get(entry, [])

    def answers(self, name: str) -> bool:
        return name in self._by_tool

    async def call(self, name: str, args: dict[str, Any], request: AgentRequest) -> Any:
        return await self._by_tool[name].call(name, args, request)

    async def aclose(self) -> None:
        """Close every runner once (a failed opening closes them at once; the run's end again)."""
        if self._closed:
            return
        self._closed = True
        for _, runner in reversed(self.runners):
            with contextlib.suppress(Exception):
                await runner.aclose()


def _reason(entry: str, error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if isinstance(error, ToolOpenError) else f"tool {entry!r} could not be opened: {text}"
