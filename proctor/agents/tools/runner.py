"""The contract between an agent's tool loop and a kind of tool it cannot answer with a Python
function: a HoloDeck `vectorstore`, `hierarchical_document`, `mcp` or `prompt` tool.

A kind plugs in with a **runner factory** listed in `proctor.agents.tools.registry.RUNNERS`
under the HoloDeck `type` it serves:

    factory(entry: Mapping[str, Any], context: ToolContext) -> ToolRunner

- `entry` is the tool's mapping from the agent.yaml (`name`, `description`, `type` and the
  kind's own fields; `${VAR}`s in it are already replaced, except under `env`, `headers` and
  `api_key`, which stay references for the runner to resolve when it opens, so no secret is
  ever part of an error). The factory validates it (unknown keys are errors; a field HoloDeck
  reads that Proctor cannot honour is refused or warned about, by name, through
  `context.warn`), and raises `ValueError` naming the field: that error is the agent's
  load error, seen by `proctor validate` before any case runs.
- The factory does no I/O. It is called once when the agent loads (to validate) and again for
  every run, in every process and event loop the run's cases use: each call gives a fresh,
  unopened runner.

A runner's life is one run in one process (one Dask chunk on a Dask worker, where each chunk
has its event loop):

1. `await runner.open()`: build the index, start the server. Called once, in a task of its
   own, the first time a case of the run needs the agent's tools; every case waits for it.
   Raise `ToolOpenError` with the reason: each case of the run then fails with it (nothing is
   opened again for every case).
2. `runner.schemas()`: the function tools it offers the model, as the Chat Completions API
   takes them (`{"type": "function", "function": {"name", "description", "parameters"}}`);
   asked after `open()`. Names must be unique across all of the agent's tools.
3. `await runner.call(name, args, request)`: answer one call of one of its tools, concurrently
   with others. Return the result (a string, or anything JSON can hold): it is what the model
   receives and what is recorded on the turn, with the call's name and arguments, exactly as a
   function tool's (`request.record_tool_call`), so `expected_tools`, reports and the HTML tool
   diff treat it alike. A tool's own error (an MCP `isError` result, no hit) is a result, not an
   exception. Raise `ToolCallError` only when the tool cannot answer at all (its server died):
   that case's turn fails with the reason, other cases go on.
4. `await runner.aclose()`: release everything (stop the server, by its own process), however
   the run ends: its cases done, an error, Ctrl-C or SIGTERM. It may be called when `open()`
   failed or never finished, and must not raise.

Anything worth keeping between runs of one process (an index whose sources and settings have
not changed) is the kind's own cache, keyed by what it depends on; nothing loop-bound in it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from proctor.agents.protocol import AgentRequest
    from proctor.models.holodeck import LLMProvider


class ToolOpenError(RuntimeError):
    """A tool could not be made ready for the run (its server did not start, its sources did not
    index): every case of the run that uses the agent fails with this reason."""


class ToolCallError(RuntimeError):
    """A tool could not answer a call at all (its server is gone): the case's turn fails with
    this reason; the other cases go on."""


@dataclass(frozen=True)
class ToolContext:
    """What a runner may need besides its own entry."""

    base_dir: Path  # the agent.yaml's folder: relative `source`, `file` and stdio `args` paths
    agent_name: str
    model: LLMProvider  # the agent's model: endpoint and credentials for prompt tools, embeddings
    document: Mapping[str, Any] = field(default_factory=dict)  # the whole agent.yaml (global config merged)
    warn: Callable[[str], None] = field(default=lambda message: None)


@runtime_checkable
class ToolRunner(Protocol):
    """One tool entry of an agent, for one run in one process (see the module's docstring)."""

    async def open(self) -> None: ...

    def schemas(self) -> list[dict[str, Any]]: ...

    async def call(self, name: str, args: dict[str, Any], request: AgentRequest) -> Any: ...

    async def aclose(self) -> None: ...


RunnerFactory = Callable[[Mapping[str, Any], ToolContext], ToolRunner]
