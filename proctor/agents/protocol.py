"""What an agent under test receives and may return.

An agent is any callable `agent(request: AgentRequest)`, sync or async. It may return
the answer as a plain string, a dict with `answer` (and optionally `tool_calls`, `usage`
and `components`), or an `AgentResponse`. `components` are the UI components the agent
showed (Vanna's `UiComponent`: `type`, `content`, `metadata`); without them a turn with an
answer counts as one `rich_text` component. Tool calls and tokens can also be reported while it
works, through `request.record_tool_call` and `request.record_usage` (one call per model call: each
counts as one inference call, what ADK's `inference_call_count_v1` reports); `model_calls` in the
response says how many model calls the turn made when the agent counts them itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from proctor.agents.tools.scope import RunScope
from proctor.models.agentflow import ToolCall
from proctor.models.holodeck import ProcessedFileInput
from proctor.models.outcome import TokenUsage


class Component(BaseModel):
    """A UI component the agent yielded (Vanna's `UiComponent`)."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(min_length=1)
    content: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class AgentResponse(BaseModel):
    """The agent's reply to one user message."""

    model_config = ConfigDict(extra="forbid")

    answer: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    model_calls: int | None = Field(default=None, ge=0)  # None: the agent did not count them
    components: list[Component] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


@dataclass
class AgentRequest:
    """One user message for the agent, with the session it belongs to."""

    case_id: str
    turn_id: str
    input: str
    thread_id: str
    history: list[dict[str, str]] = field(default_factory=list)
    files: list[ProcessedFileInput] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    recorded_tool_calls: list[ToolCall] = field(default_factory=list)
    recorded_usage: TokenUsage = field(default_factory=TokenUsage)
    recorded_model_calls: int = 0
    # What the run opened once for all its cases (an agent's MCP servers, indexes); None when the
    # agent is called outside a run. See `proctor.agents.tools.scope`.
    run_scope: RunScope | None = None
    # The agent's own time for this message, in ms: what `max_execution_time` and ADK's
    # `invocation_duration_v1` read. Set by the invoker (the call's time in the agent's thread or
    # on the agents' loop), or by an agent that measures it closer to the model: the OpenAI
    # agent's round trips and tools, the HTTP agent's request, without Proctor's own work.
    own_ms: float | None = None
    retries: int = 0  # requests the agent's client repeated (a 429, a 5xx, a dropped connection)

    def record_tool_call(self, name: str, args: dict[str, Any] | None = None, result: Any = None) -> None:
        """Report a tool call as it happens (kept even if the agent later fails)."""
        self.recorded_tool_calls.append(ToolCall(name=name, args=args or {}, result=result))

    def record_usage(
        self, prompt_tokens: int = 0, completion_tokens: int = 0, *, model_calls: int = 1
    ) -> None:
        """Report one model call and its tokens, as it happens (kept even if the agent later fails);
        `model_calls` when the tokens are of several calls, or 0 when how many is not known."""
        self.recorded_model_calls += model_calls
        self.recorded_usage = self.recorded_usage + TokenUsage(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        )

    @property
    def files_markdown(self) -> str:
        """The attached files as one markdown text, for agents that just want to read them."""
        return "\n\n".join(f.markdown_content for f in self.files if f.error is None)


def thread_id_for(run_id: Any, case_id: str, attempt: int) -> str:
    """One conversation per case and repeat, so repeats never share an agent's session."""
    return f"{run_id}:{case_id}" if attempt == 0 else f"{run_id}:{case_id}#{attempt}"


class AgentOutputError(ValueError):
    """The agent returned something that is not an answer."""


def coerce_response(value: Any, request: AgentRequest) -> AgentResponse:
    """Accept the return shapes agents use; anything else is the agent's error, named."""
    if isinstance(value, AgentResponse):
        response = value
    elif isinstance(value, str):
        response = AgentResponse(answer=value)
    elif isinstance(value, dict):
        data = dict(value)
        for alias in ("output", "response", "text"):
            if "answer" not in data and alias in data:
                data["answer"] = data.pop(alias)
        try:
            response = AgentResponse.model_validate(data)
        except ValidationError as error:
            fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
            raise AgentOutputError(f"agent returned an invalid dict ({fields})") from None
    else:
        raise AgentOutputError(
            f"agent returned {type(value).__name__}; expected str, dict with 'answer', or AgentResponse"
        )
    if request.recorded_tool_calls or request.recorded_usage.total_tokens or request.recorded_model_calls:
        response = response.model_copy(
            update={
                "tool_calls": [*request.recorded_tool_calls, *response.tool_calls],
                "usage": response.usage + request.recorded_usage,
                "model_calls": recorded_model_calls(request, response.model_calls),
            }
        )
    return response


def recorded_model_calls(request: AgentRequest, returned: int | None = None) -> int | None:
    """The turn's model calls: those reported through `record_usage` plus any the response
    counts; None when neither said anything (not known, which is not zero)."""
    if returned is None and not request.recorded_model_calls:
        return None
    return (returned or 0) + request.recorded_model_calls
