"""A Proctor turn seen as google-adk 2.13.0 sees an invocation, for the ADK metrics whose
prompts show more than the answer: its events (text, function calls and function responses, in
order, each with its author) and its app details (each agent's instructions and tool
declarations).

The `adk:` runner records both as ADK's eval records them (`AgentTurn.metadata["adk_events"]`
and `["adk_app_details"]`: the events `EvaluationGenerator.convert_events_to_eval_invocations`
keeps, the final answer's event without its content; per agent, the system instruction and
tools of the first model request of the turn). For any other agent, what Proctor records is
laid out as ADK's events would be: the text given before the answer
(`metadata["intermediate_responses"]`) first, then every tool call as an event of its own
followed by its result as another, all authored "agent". What that cannot say: where the texts
fell among the calls, and which calls one model step made together. An `openai:` agent
(proctor/agents/openai_agent.py) reports its app details as ADK would record them for an agent of
its name (its instructions, its tools as function declarations with a JSON schema) and its events
are authored by that name; any other agent's turn has none, as an ADK invocation read back from a
stored session has none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from proctor.metrics.adk.replies import _response_payload
from proctor.models.agentflow import ToolCall
from proctor.models.outcome import AgentTurn

AGENT = "agent"
"""The author of the events Proctor lays out for a non-ADK agent (ADK's own default name)."""


@dataclass(frozen=True)
class AdkEvent:
    """One `InvocationEvent`: `parts` as genai parts dump them ({"text"}, {"function_call"},
    {"function_response"}), None for an event ADK keeps without content (the final answer's)."""

    author: str
    parts: list[dict[str, Any]] | None
    grounding_metadata: dict[str, Any] | None = None

    def texts(self) -> list[str]:
        return [part["text"] for part in self.parts or [] if part.get("text")]

    def calls(self) -> list[dict[str, Any]]:
        return [part["function_call"] for part in self.parts or [] if part.get("function_call")]

    def responses(self) -> list[dict[str, Any]]:
        return [part["function_response"] for part in self.parts or [] if part.get("function_response")]


@dataclass(frozen=True)
class AgentDetails:
    """ADK's `AgentDetails`: the agent's instructions and its tools (genai `Tool` dumps)."""

    instructions: str = ""
    tool_declarations: list[dict[str, Any]] = field(default_factory=list)


def function_call(call: ToolCall) -> dict[str, Any]:
    """A call as genai's `FunctionCall.model_dump(exclude_none=True)` gives it: id, args, name."""
    dumped: dict[str, Any] = {"id": call.call_id} if call.call_id is not None else {}
    if call.args is not None:
        dumped["args"] = call.args
    dumped["name"] = call.name
    return dumped


def function_response(call: ToolCall) -> dict[str, Any]:
    """A result as genai's `FunctionResponse.model_dump(exclude_none=True)`: id, name, response."""
    dumped: dict[str, Any] = {"id": call.call_id} if call.call_id is not None else {}
    return dumped | {"name": call.name, "response": _response_payload(call.result)}


def turn_events(turn: AgentTurn) -> list[AdkEvent]:
    """The turn's `invocation_events`: as recorded by the `adk:` runner, else laid out from the
    intermediate texts and the tool calls (see the module's docstring), authored by the agent
    whose app details the turn reports (an `openai:` agent's name), else "agent"."""
    recorded = turn.metadata.get("adk_events")
    if recorded is not None:
        return [
            AdkEvent(event.get("author") or AGENT, event.get("parts"), event.get("grounding_metadata"))
            for event in recorded
        ]
    reported = turn.metadata.get("adk_app_details") or {}
    author = next(iter(reported)) if len(reported) == 1 else AGENT
    events = [AdkEvent(author, [{"text": text}]) for text in turn.metadata.get("intermediate_responses", [])]
    for call in turn.tool_calls:
        events.append(AdkEvent(author, [{"function_call": function_call(call)}]))
        if call.result is not None:
            events.append(AdkEvent(author, [{"function_response": function_response(call)}]))
    return events


def app_details(turn: AgentTurn) -> dict[str, AgentDetails] | None:
    """ADK's `Invocation.app_details` by agent name, or None when the agent reported none."""
    recorded = turn.metadata.get("adk_app_details")
    if recorded is None:
        return None
    return {
        name: AgentDetails(details.get("instructions") or "", list(details.get("tool_declarations") or []))
        for name, details in recorded.items()
    }


def adk_json(value: Any) -> str:
    """pydantic's `model_dump_json(indent=2)`, as ADK serialises what it shows its judges."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def tool_declarations_json(details: dict[str, AgentDetails]) -> str:
    """ADK's `get_tool_declarations_as_json_str`: every agent's tools, by agent name."""
    return adk_json({"tool_declarations": {name: agent.tool_declarations for name, agent in details.items()}})


def grounding_json(events: list[AdkEvent]) -> str | None:
    """ADK's grounding metadata entries (step, author, metadata) of the events; None if none."""
    grounding = [
        {"step": step, "author": event.author, "grounding_metadata": event.grounding_metadata}
        for step, event in enumerate(events)
        if event.grounding_metadata
    ]
    return adk_json({"grounding_metadata": grounding}) if grounding else None


def developer_instructions(details: dict[str, AgentDetails], turn: AgentTurn) -> str:
    """The instructions ADK's `rubric_based_final_response_quality_v1` shows: those of the agent
    that authored the invocation's first recorded event (an author the app details do not name
    is an error, as in ADK's `AppDetails.get_developer_instructions`), else of the first agent
    (ADK's choice for an invocation without events)."""
    events = turn_events(turn)
    if turn.metadata.get("adk_events") and events:
        name: str | None = events[0].author
        if name not in details:
            raise ValueError(f"`{name}` not found in the agentic system.")
    else:
        name = events[0].author if events and events[0].author in details else next(iter(details), None)
    return details[name].instructions if name is not None else ""
