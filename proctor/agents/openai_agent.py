"""An agent defined in configuration: a model behind any OpenAI-compatible endpoint, its
instructions and its tools, with Proctor running the tool loop and recording every call.

This is how a HoloDeck `agent.yaml` (model, instructions inline or `file:`, tools) runs:
`--agent openai:agent.yaml`, or nothing at all for an agent.yaml that defines its agent.
A tool is implemented by a Python callable (`function: module:attr` or `file.py:attr`), by a
runner for its HoloDeck `type` (`proctor.agents.tools`: MCP servers, indexes, opened once per
run), or answered with canned results from the case (`metadata.tool_results.<tool name>`).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import re
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import openai
from pydantic import BaseModel, ConfigDict, Field, field_validator

from proctor.agents.protocol import AgentRequest, AgentResponse
from proctor.agents.providers import base_url_of, make_client, sampling
from proctor.agents.tool_schema import schema_from_function
from proctor.agents.tools import (
    HOLODECK_TOOL_TYPES,
    RUNNERS,
    RunnerFactory,
    RunScope,
    ToolBox,
    ToolContext,
    retrieval_tool_names,
)
from proctor.calls.call_clock import WaitLedger, counting_waits
from proctor.calls.quota import quota_error
from proctor.calls.quota_http import patience_of
from proctor.env import expand_env
from proctor.judges.credentials import redact
from proctor.loaders.references import resolve_relative_target
from proctor.models.holodeck import LLMProvider
from proctor.models.outcome import RETRIEVAL_TOOLS
from proctor.user_code import load_python_target


class ToolSpec(BaseModel):
    """A tool the model may call: its JSON-schema signature and how it is answered."""

    model_config = ConfigDict(extra="allow")

    name: str
    description: str = ""
    type: str = "function"  # HoloDeck's tool kind; other kinds are answered by their runner
    parameters: dict[str, Any] | None = None
    function: str | None = None
    file: str | None = None  # HoloDeck: `file: tools.py` + `function: name`


class OpenAIAgentConfig(BaseModel):
    """The agent half of a HoloDeck agent.yaml (other keys are ignored here)."""

    model_config = ConfigDict(extra="ignore")

    name: str = "agent"
    model: LLMProvider
    instructions: str | dict[str, str] = ""
    tools: list[ToolSpec] = Field(default_factory=list)
    response_format: dict[str, Any] | str | None = None
    max_tool_rounds: int = Field(default=8, ge=1, le=50)

    @field_validator("tools", mode="before")
    @classmethod
    def _tool_list(cls, value: Any) -> Any:
        return value or []


class ToolLoopError(RuntimeError):
    pass


class ModelCallError(RuntimeError):
    """The model's endpoint refused or failed a call; the message is the client's, redacted
    (a server may echo the key back, as OpenAI's 401 does with its first characters)."""


@dataclass
class RoundTrips:
    """One agent message's model calls as the wire saw them: the time from each request going
    out to its reply's headers coming in, summed, and how many requests went out. The client's
    own work (building the request, its first-call set-up, reading the reply into objects) and
    its waits between retries are not in it; a request that got no reply counts until it failed."""

    ms: float = 0.0
    requests: int = 0
    calls: int = 0  # `create` calls: requests beyond these are the client's retries
    tools_ms: float = 0.0
    sent_at: float | None = None
    # a request's wait for its turn at the provider's quota (proctor.calls.quota) is not its round trip
    waits: WaitLedger = field(default_factory=WaitLedger)
    waited_at_send: float = 0.0

    def close(self) -> None:
        if self.sent_at is not None:
            waited_s = self.waits.total_s - self.waited_at_send
            self.ms += max(0.0, (time.perf_counter() - self.sent_at - waited_s) * 1000)
            self.sent_at = None


_round_trips: contextvars.ContextVar[RoundTrips | None] = contextvars.ContextVar("round_trips", default=None)


async def _request_sent(request: httpx.Request) -> None:
    trips = _round_trips.get()
    if trips is not None:
        trips.close()
        trips.requests += 1
        trips.sent_at = time.perf_counter()
        trips.waited_at_send = trips.waits.total_s


async def _reply_came(response: httpx.Response) -> None:
    trips = _round_trips.get()
    if trips is not None:
        trips.close()


ROUND_TRIP_HOOKS = {"request": [_request_sent], "response": [_reply_came]}


class OpenAIToolAgent:
    """Calls the model, runs the tools it asks for, and repeats until it answers."""

    def __init__(
        self,
        config: OpenAIAgentConfig,
        base_dir: Path,
        *,
        document: Mapping[str, Any] | None = None,
        runners: Mapping[str, RunnerFactory] = RUNNERS,
    ) -> None:
        self.config = config
        self.instructions = self._instructions(config.instructions, base_dir)
        self.warnings: list[str] = []
        self.tool_context = ToolContext(
            base_dir=base_dir,
            agent_name=config.name,
            model=config.model,
            document=document or {},
            warn=self.warnings.append,
        )
        # Tools a runner answers: each factory checks its entry now (a bad one fails the load),
        # and makes a fresh runner for each run (`_new_toolbox`).
        self.runner_tools = {
            tool.name: (tool.model_dump(exclude_unset=True), runners[tool.type])
            for tool in config.tools
            if tool.type in runners
        }
        for index, tool in enumerate(config.tools):
            if tool.type not in runners and tool.type not in HOLODECK_TOOL_TYPES:
                raise ValueError(
                    f"tools[{index}] ({tool.name}): type {tool.type!r} is not a tool kind; "
                    f"known: {', '.join(sorted(HOLODECK_TOOL_TYPES | set(runners)))}"
                )
            if tool.name in self.runner_tools:
                entry, factory = self.runner_tools[tool.name]
                try:
                    factory(entry, self.tool_context)
                except ValueError as error:
                    raise ValueError(f"tools[{index}] ({tool.name}, type {tool.type}): {error}") from None
        self.implementations = {
            tool.name: resolve_relative_target(_function_target(tool), base_dir)
            for tool in config.tools
            if tool.function and tool.name not in self.runner_tools
        }
        self.schemas = [self._schema(tool) for tool in config.tools if tool.name not in self.runner_tools]
        self.app_details = adk_app_details(config.name, self.instructions, self.schemas)
        # whose results HoloDeck's RAG judges read as the retrieval context (MetricContext)
        self.retrieval_tools = retrieval_tool_names(
            tool.model_dump(exclude_unset=True) for tool in config.tools
        )
        self.response_format = response_format(config.response_format, config.name, base_dir)
        self.base_url = base_url_of(config.model)
        # the provider's client is made here once, so what it cannot do is refused before any case runs
        self._api_key = make_client(config.model)[1]
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def client(self) -> openai.AsyncOpenAI:
        """This event loop's client. The agent is loaded once per process, but each run has
        its own loop (`asyncio.run`), and a client's pooled connections die with the loop they
        were opened on: reused from a later run, they fail with "Event loop is closed"."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = make_client(self.config.model, event_hooks=ROUND_TRIP_HOOKS)[0]
        return client

    @staticmethod
    def _instructions(value: str | dict[str, str], base_dir: Path) -> str:
        if isinstance(value, dict):
            if value.get("inline"):
                return value["inline"]
            if value.get("file"):
                return (base_dir / value["file"]).read_text(encoding="utf-8")
            raise ValueError("instructions need 'file' or 'inline'")
        return value

    def _schema(self, tool: ToolSpec) -> dict[str, Any]:
        """The tool as the model sees it: its parameters as given (a JSON schema, or HoloDeck's
        name -> property map), else derived from the implementing function."""
        parameters, description = tool.parameters, tool.description
        if parameters is None and tool.name in self.implementations:
            derived, doc = schema_from_function(load_python_target(self.implementations[tool.name]))
            parameters, description = derived, description or doc
        elif parameters is not None and "properties" not in parameters:
            required = [name for name, prop in parameters.items() if "default" not in prop]
            parameters = {"type": "object", "properties": parameters, "required": required}
        parameters = parameters or {"type": "object", "properties": {}}
        return {
            "type": "function",
            "function": {"name": tool.name, "description": description, "parameters": parameters},
        }

    def _new_toolbox(self) -> ToolBox:
        """This run's runners (unopened), one per tool entry a runner answers."""
        return ToolBox(
            [
                (name, factory(entry, self.tool_context))
                for name, (entry, factory) in self.runner_tools.items()
            ],
            taken=[tool.name for tool in self.config.tools if tool.name not in self.runner_tools],
        )

    def _tool_schemas(self, toolbox: ToolBox | None = None) -> list[dict[str, Any]]:
        """Every tool the model is offered, in the agent.yaml's order (a runner's tools where
        its entry stands)."""
        if toolbox is None:
            return self.schemas
        schemas, own = [], iter(self.schemas)
        for tool in self.config.tools:
            schemas += toolbox.schemas_of(tool.name) if tool.name in self.runner_tools else [next(own)]
        return schemas

    async def _run_tool(
        self, name: str, args: dict[str, Any], request: AgentRequest, toolbox: ToolBox | None = None
    ) -> Any:
        canned = (request.metadata.get("tool_results") or {}).get(name)
        if name in self.implementations:
            result = load_python_target(self.implementations[name])(**args)
            return await result if hasattr(result, "__await__") else result
        if toolbox is not None and toolbox.answers(name):
            return await toolbox.call(name, args, request)
        if canned is not None:
            return canned
        raise ToolLoopError(f"the model called {name!r}, which has no implementation and no canned result")

    async def __call__(self, request: AgentRequest) -> AgentResponse:
        if not self.runner_tools:
            return await self._timed(request, None)
        if request.run_scope is not None:  # the run's tools, opened by its first case
            return await self._timed(request, await request.run_scope.open(self, self._new_toolbox))
        scope = RunScope()  # called outside a run: the tools live for this call
        try:
            return await self._timed(request, await scope.open(self, self._new_toolbox))
        finally:
            await scope.aclose()

    async def _timed(self, request: AgentRequest, toolbox: ToolBox | None) -> AgentResponse:
        """The tool loop; its own time (`request.own_ms`) is its model calls' round trips and
        its tools' run time, so Proctor's and the client's work (and opening the run's tool
        servers, once) never count as the agent's."""
        trips = RoundTrips()
        token = _round_trips.set(trips)
        try:
            with counting_waits() as waits:
                trips.waits = waits
                return await self._converse(request, toolbox, trips)
        finally:
            _round_trips.reset(token)
            trips.close()
            request.own_ms = trips.ms + trips.tools_ms
            request.retries += max(0, trips.requests - trips.calls)

    async def _converse(
        self, request: AgentRequest, toolbox: ToolBox | None, trips: RoundTrips
    ) -> AgentResponse:
        schemas = self._tool_schemas(toolbox)
        messages: list[dict[str, Any]] = []
        if self.instructions:
            messages.append({"role": "system", "content": self.instructions})
        messages += request.history
        user = request.input
        if request.files:
            user += "\n\nAttached files:\n\n" + request.files_markdown
        messages.append({"role": "user", "content": user})
        model, client = self.config.model, self.client
        for _ in range(self.config.max_tool_rounds):
            trips.calls += 1
            try:
                completion = await client.chat.completions.create(
                    model=model.name,
                    messages=messages,  # type: ignore[arg-type]
                    tools=schemas or openai.NOT_GIVEN,  # type: ignore[arg-type]
                    **sampling(model),
                    response_format=self.response_format or openai.NOT_GIVEN,  # type: ignore[arg-type]
                )
            except openai.APIError as error:  # its message is stored: never with the key in it
                patience = patience_of(error)  # refused past the quota patience: the provider's
                message = quota_error(patience, str(error)) if patience is not None else str(error)
                raise ModelCallError(redact(message, self._api_key)) from None
            # Every completion is one model call, recorded as it comes (a later failure keeps
            # it), with its tokens when the endpoint reports them.
            usage = completion.usage
            request.record_usage(usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0)
            if not completion.choices:
                raise ToolLoopError("the model returned no choices")
            message = completion.choices[0].message
            if not message.tool_calls:
                app_details = (
                    self.app_details
                    if toolbox is None
                    else adk_app_details(self.config.name, self.instructions, schemas)
                )
                metadata: dict[str, Any] = {"adk_app_details": app_details}
                if self.retrieval_tools:
                    metadata[RETRIEVAL_TOOLS] = self.retrieval_tools
                return AgentResponse(answer=message.content or "", metadata=metadata)
            messages.append(message.model_dump(exclude_none=True))
            for tool_call in message.tool_calls:
                try:
                    args = json.loads(tool_call.function.arguments or "{}")
                except json.JSONDecodeError as error:
                    raise ToolLoopError(
                        f"the model sent invalid JSON arguments for {tool_call.function.name}"
                    ) from error
                started = time.perf_counter()
                try:
                    result = await self._run_tool(tool_call.function.name, args, request, toolbox)
                finally:
                    trips.tools_ms += (time.perf_counter() - started) * 1000
                request.record_tool_call(tool_call.function.name, args, result)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": tool_call.id,
                        "content": result if isinstance(result, str) else json.dumps(result, default=str),
                    }
                )
        raise ToolLoopError(f"no answer after {self.config.max_tool_rounds} tool rounds")


def adk_app_details(name: str, instructions: str, schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent as google-adk's eval records an agent's `AppDetails` (its system instruction and
    the tools of its model request, as genai `Tool` dumps: one tool whose function declarations
    carry the JSON schema as `parameters_json_schema`), for ADK's judges that show them."""
    declarations = [
        {**({"description": tool["description"]} if tool.get("description") else {}), "name": tool["name"]}
        | {"parameters_json_schema": tool["parameters"]}
        for tool in (schema["function"] for schema in schemas)
    ]
    tools = [{"function_declarations": declarations}] if declarations else []
    return {name: {"instructions": instructions, "tool_declarations": tools}}


def _function_target(tool: ToolSpec) -> str:
    function = tool.function or ""
    return f"{tool.file}:{function}" if tool.file and ":" not in function else function


def response_format(value: dict[str, Any] | str | None, name: str, base_dir: Path) -> dict[str, Any] | None:
    """HoloDeck's `response_format` (a JSON schema inline or in a file) as the API's
    `response_format`; one already in the API's shape is sent as it is."""
    if value is None:
        return None
    if isinstance(value, str):
        from proctor.loaders.documents import read_document

        value = read_document(base_dir / value)
        if not isinstance(value, dict):
            raise ValueError("response_format file must hold a JSON schema (a mapping)")
    if value.get("type") in ("json_schema", "json_object", "text"):
        return value
    schema_name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "response"
    return {"type": "json_schema", "json_schema": {"name": schema_name, "schema": value}}


# Keys resolved when used (a key, a password, an MCP tool's `env`, `headers` and `url`: their
# values never reach an error), or unused.
_NOT_SUBSTITUTED = {"api_key", "password", "deployment", "observability", "env", "headers", "url"}


def substitute(value: Any, missing: list[str]) -> Any:
    """`${VAR}` in the agent's settings replaced from the environment (keys stay references)."""
    if isinstance(value, dict):
        return {k: v if k in _NOT_SUBSTITUTED else substitute(v, missing) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(item, missing) for item in value]
    if isinstance(value, str):
        return expand_env(value, lambda name: missing.append(name) or f"${{{name}}}")
    return value


def _check_auth_provider(config_path: Path, document: Any) -> None:
    """An Anthropic model whose auth_provider Proctor cannot use is refused with the field, its
    line, the reason and what to do (`proctor.agents.providers.AUTH_PROVIDERS`)."""
    from proctor.agents.providers import auth_problem
    from proctor.loaders.holodeck.keys import line_of

    model = document.get("model") if isinstance(document, dict) else None
    if (
        not isinstance(model, dict)
        or model.get("provider") != "anthropic"
        or model.get("auth_provider") is None
    ):
        return
    problem = auth_problem(str(model["auth_provider"]))
    if problem:
        line = line_of(str(config_path), "model.auth_provider")
        raise ValueError(f"model.auth_provider{f' (line {line})' if line else ''}: {problem}")


def _check_instructions_file(config_path: Path, document: Any) -> None:
    """An `instructions: {file: ...}` that is not there is refused with the field and its line
    (the agent reads it when it is built; a run with `--agent` does not need it)."""
    from proctor.loaders.holodeck.keys import line_of

    instructions = document.get("instructions") if isinstance(document, dict) else None
    reference = instructions.get("file") if isinstance(instructions, dict) else None
    if isinstance(reference, str) and reference.strip() and not (config_path.parent / reference).is_file():
        line = line_of(str(config_path), "instructions.file")
        raise ValueError(
            f"instructions.file{f' (line {line})' if line else ''}: {reference}: file not found "
            "(a path relative to the agent.yaml)"
        )


def load_openai_agent(config_path: Path) -> OpenAIToolAgent:
    from proctor.loaders.documents import read_document
    from proctor.loaders.holodeck.config import with_global_config

    missing: list[str] = []
    document = read_document(config_path)
    if isinstance(document, dict):
        document = with_global_config(document, config_path.parent)[0]
    document = substitute(document, missing)
    if missing:
        raise ValueError(f"environment variable(s) not set: {', '.join(sorted(set(missing)))}")
    _check_auth_provider(config_path, document)
    _check_instructions_file(config_path, document)
    from proctor.judges import CredentialError
    from proctor.loaders.holodeck.keys import line_of

    try:
        agent = OpenAIToolAgent(
            OpenAIAgentConfig.model_validate(document), config_path.parent, document=document
        )
    except CredentialError as error:  # the agent's model has no key: named where the model is
        line = line_of(str(config_path), "model")
        raise CredentialError(f"model{f' (line {line})' if line else ''}: {error}") from None
    agent.warnings = [f"{config_path}: {warning}" for warning in agent.warnings]
    return agent
