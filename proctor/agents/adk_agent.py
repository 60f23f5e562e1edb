"""Google ADK agents run as they are: `--agent adk:path/to/agent_package`.

The package is imported as `adk run` / `adk eval` import it (its parent folder on sys.path, the
package's `root_agent`, found on the package or its `agent` module) and every turn goes
through google-adk's own `Runner` with an in-memory session per case conversation, started
from the case's session state. What ADK's eval records is kept: every function call with its
arguments (as the model gave them) and result, the model calls and their tokens
(`usage_metadata`: input = prompt + tool-use prompt tokens, output = candidates + thoughts, as
ADK's `token_usage_v1` counts them, over the events ADK's eval keeps), the text given before the
final answer, and the session state at the end; for the ADK metrics whose prompts show them, the
turn's events as ADK's eval keeps them (`adk_events`) and each agent's instructions and tools
from its first model request of the turn (`adk_app_details`), see `proctor.metrics.adk.invocation`.
Needs the `adk` extra: `pip install -e '.[adk]'`.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from proctor.agents.protocol import AgentRequest, AgentResponse
from proctor.models.agentflow import ToolCall
from proctor.models.outcome import TokenUsage
from proctor.user_code import AgentLoadError

USER_ID = "proctor"


def _text(content: Any, thoughts: bool = False) -> str:
    """The text parts of a genai `Content`, joined as ADK's evaluators join them; a model's
    thoughts only with `thoughts=True` (ADK's final response keeps them, and its metrics read
    every text part of it)."""
    parts = getattr(content, "parts", None) or []
    return "\n".join(
        part.text for part in parts if part.text and (thoughts or not getattr(part, "thought", False))
    )


def adk_final_response(event: Any) -> tuple[str, bool] | None:
    """The event as ADK's eval reads a final response (`convert_events_to_eval_invocations`):
    its text, every text part, thoughts included, and whether the event keeps its content in
    the invocation's events (only when it also calls tools: ADK drops the final answer's text
    there, as `final_response` carries it). None when it is not a final response with text;
    the last one that is, is the turn's answer."""
    if not (_text(event.content) and event.is_final_response()):
        return None
    return _text(event.content, thoughts=True), bool(event.get_function_calls())


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_unset=True, exclude_defaults=True, exclude_none=True)


def event_record(event: Any) -> dict[str, Any] | None:
    """An ADK event as `adk_events` keeps it: author, its text, function-call and
    function-response parts (genai's dumps) and grounding metadata; None for an event ADK's eval
    drops (`EvaluationGenerator.convert_events_to_eval_invocations`: nothing of those, no media)."""
    parts, media = [], False
    for part in (event.content.parts if event.content else None) or []:
        if part.text:  # a thought is kept, marked: ADK's judges read it, its simulated user does not
            parts.append({"text": part.text} | ({"thought": True} if part.thought else {}))
        elif part.function_call or part.function_response:
            kind = "function_call" if part.function_call else "function_response"
            parts.append({kind: getattr(part, kind).model_dump(mode="json", exclude_none=True)})
        media = media or bool(part.inline_data)
    grounding = _dump(event.grounding_metadata) if event.grounding_metadata is not None else None
    if not parts and not media and grounding is None:
        return None
    return {"author": event.author, "parts": parts} | ({"grounding_metadata": grounding} if grounding else {})


def _agent_details(request: Any) -> dict[str, Any]:
    """ADK's `AgentDetails` from a model request: its system instruction and tools."""
    instruction = request.config.system_instruction if request.config else None
    tools = (request.config.tools if request.config else None) or []
    return {
        "instructions": instruction if isinstance(instruction, str) else _text(instruction),
        "tool_declarations": [_dump(tool) for tool in tools if hasattr(tool, "model_dump")],
    }


def _model_requests() -> Any:
    """A runner plugin keeping, per invocation and agent, the agent's first model request (what
    ADK's eval reads its `AppDetails` from)."""
    from google.adk.plugins.base_plugin import BasePlugin

    class ModelRequests(BasePlugin):
        def __init__(self) -> None:
            super().__init__(name="proctor_model_requests")
            self.seen: dict[str, dict[str, Any]] = {}

        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
            agents = self.seen.setdefault(callback_context.invocation_id, {})
            agents.setdefault(callback_context.agent_name, llm_request)

        def app_details(self, invocation_ids: list[str]) -> dict[str, Any]:
            details = {}
            for invocation_id in dict.fromkeys(invocation_ids):
                for agent, request in self.seen.pop(invocation_id, {}).items():
                    details.setdefault(agent, _agent_details(request))
            return details

    return ModelRequests()


def kept_by_adk_eval(event: Any) -> bool:
    """Whether ADK's eval keeps the event in its invocation (`EvaluationGenerator.
    convert_events_to_eval_invocations`): not the user's, and with a function call or response,
    text or inline data, or grounding metadata. Its efficiency metrics count only these."""
    if (event.author or "agent").lower() == "user":
        return False
    parts = event.content.parts if event.content is not None and event.content.parts else []
    if any(p.function_call or p.function_response or p.text or p.inline_data for p in parts):
        return True
    return event.grounding_metadata is not None


def model_call_of(event: Any) -> tuple[int, int, int]:
    """What one ADK event adds to its turn, as ADK's efficiency metrics count it: (model calls,
    input tokens, output tokens). A kept event with usage metadata or a model version is a model
    call (`_is_model_call_event`); its input is prompt + tool-use prompt tokens and its output
    candidates + thoughts tokens (`telemetry._token_usage.TokenUsage`)."""
    if not kept_by_adk_eval(event):
        return 0, 0, 0
    usage = event.usage_metadata
    called = int(usage is not None or event.model_version is not None)
    if usage is None:
        return called, 0, 0
    prompt = (usage.prompt_token_count or 0) + (usage.tool_use_prompt_token_count or 0)
    return called, prompt, (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)


def import_root_agent(folder: Path) -> Any:
    """The `root_agent` of an ADK agent package, imported the way `adk eval` imports it."""
    if not folder.is_dir():
        raise AgentLoadError(f"agent target 'adk:{folder}': {folder} is not an agent package folder")
    parent = str(folder.resolve().parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    try:
        package = importlib.import_module(folder.resolve().name)
        agent = getattr(package, "root_agent", None)
        if agent is None:
            agent = getattr(importlib.import_module(f"{package.__name__}.agent"), "root_agent", None)
    except ImportError as error:
        raise AgentLoadError(f"agent target 'adk:{folder}': cannot import it: {error}") from None
    if agent is None:
        raise AgentLoadError(f"agent target 'adk:{folder}': no root_agent in the package or its agent.py")
    return agent


class AdkAgent:
    """One ADK root agent behind Proctor's agent protocol; sessions keyed by conversation."""

    def __init__(self, root_agent: Any, app_name: str) -> None:
        from google.adk.apps import App
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService

        self.app_name = app_name
        self.sessions = InMemorySessionService()
        self.requests = _model_requests()
        # As Runner(app_name=..., agent=...) builds its App (any package name is a valid app name).
        app = App.model_construct(name=app_name, root_agent=root_agent, plugins=[self.requests])
        self.runner = Runner(app=app, session_service=self.sessions)
        self._session_ids: dict[str, str] = {}

    async def _session_id(self, request: AgentRequest) -> str:
        known = self._session_ids.get(request.thread_id)
        if known is None:
            session = await self.sessions.create_session(
                app_name=self.app_name, user_id=USER_ID, state=dict(request.state)
            )
            known = self._session_ids[request.thread_id] = session.id
        return known

    async def __call__(self, request: AgentRequest) -> AgentResponse:
        from google.genai import types

        session_id = await self._session_id(request)
        message = types.Content(role="user", parts=[types.Part(text=request.input)])
        calls: list[ToolCall] = []
        results: dict[str, Any] = {}
        texts: list[str] = []
        final = ""
        events: list[dict[str, Any]] = []
        final_event: dict[str, Any] | None = None
        invocation_ids: list[str] = []
        spent = (0, 0, 0)  # model calls, input tokens, output tokens
        async for event in self.runner.run_async(user_id=USER_ID, session_id=session_id, new_message=message):
            invocation_ids.append(event.invocation_id)
            record = event_record(event) if (event.author or "").lower() != "user" else None
            if record is not None:
                events.append(record)
            spent = tuple(a + b for a, b in zip(spent, model_call_of(event), strict=True))
            for call in event.get_function_calls():
                calls.append(ToolCall(name=call.name, args=call.args, call_id=call.id))
            for response in event.get_function_responses():
                results[response.id or response.name] = response.response
            answer = adk_final_response(event)
            if answer is not None:
                final, keeps_content = answer
                final_event = None if keeps_content else record
            elif text := _text(event.content):
                texts.append(text)
        for call in calls:
            call.result = results.get(call.call_id or call.name)
        if final_event is not None:  # ADK's eval keeps the final answer's event without its content
            final_event["parts"] = None
        model_calls, prompt_tokens, completion_tokens = spent
        session = await self.sessions.get_session(
            app_name=self.app_name, user_id=USER_ID, session_id=session_id
        )
        return AgentResponse(
            answer=final,
            tool_calls=calls,
            usage=TokenUsage(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                total_tokens=prompt_tokens + completion_tokens,
            ),
            model_calls=model_calls,
            metadata={
                "session_state": dict(session.state) if session else {},
                "intermediate_responses": texts,
                "adk_events": events,
                "adk_app_details": self.requests.app_details(invocation_ids),
            },
        )


def load_adk_agent(folder: Path) -> AdkAgent:
    try:
        import google.adk  # noqa: F401
    except ImportError:
        raise AgentLoadError(
            f"agent target 'adk:{folder}' needs google-adk: pip install -e '.[adk]'"
        ) from None
    return AdkAgent(import_root_agent(folder), app_name=folder.resolve().name)
