"""Google ADK eval files: the `EvalSet` JSON (snake_case or camelCase) and the legacy list
format (`query`, `expected_tool_use`, `reference`), with the `test_config.json` beside them.

ADK semantics are kept: every invocation is a turn, and an empty `tool_uses` expects no tool
call. Without a `test_config.json`, ADK's defaults apply: `tool_trajectory_avg_score` 1.0
and `response_match_score` 0.8.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from models.agentflow import SessionInput, ToolCall
from models.case import Case, MetricSpec, Turn

ADK_DEFAULT_CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake_keys(value: Any) -> Any:
    """camelCase keys to snake_case, recursively (ADK writes either); tool args are kept as given."""
    if isinstance(value, list):
        return [snake_keys(item) for item in value]
    if not isinstance(value, dict):
        return value
    converted = {}
    for key, item in value.items():
        name = _CAMEL.sub("_", key).lower() if isinstance(key, str) else key
        converted[name] = item if name in {"args", "state", "tool_input"} else snake_keys(item)
    return converted


def is_adk_evalset(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    cases = document.get("eval_cases") or document.get("evalCases") or []
    for case in cases if isinstance(cases, list) else []:
        for invocation in (case or {}).get("conversation") or []:
            keys = set(invocation or {})
            if keys & {"final_response", "finalResponse", "intermediate_data", "intermediateData"}:
                return True
            content = invocation.get("user_content") or invocation.get("userContent") or {}
            if isinstance(content, dict) and "parts" in content:
                return True
    return False


def is_adk_legacy(document: Any) -> bool:
    return (
        isinstance(document, list)
        and bool(document)
        and all(isinstance(item, dict) and "query" in item for item in document)
    )


def content_text(content: dict[str, Any] | None) -> str:
    """The text parts of an ADK `Content`, joined as ADK joins them."""
    parts = (content or {}).get("parts") or []
    return "\n".join(str(part["text"]) for part in parts if isinstance(part, dict) and part.get("text"))


def _tool_uses(invocation: dict[str, Any]) -> list[ToolCall]:
    data = invocation.get("intermediate_data") or {}
    uses = data.get("tool_uses") or []
    if not uses and data.get("invocation_events"):  # newer ADK: events with function_call parts
        uses = [
            part["function_call"]
            for event in data["invocation_events"]
            for part in ((event.get("content") or {}).get("parts") or [])
            if part.get("function_call")
        ]
    return [ToolCall(name=use["name"], args=use.get("args") or {}, call_id=use.get("id")) for use in uses]


def cases_from_evalset(document: dict[str, Any], specs: list[MetricSpec]) -> tuple[list[Case], list[str]]:
    document = snake_keys(document)
    cases, warnings = [], []
    for case in document.get("eval_cases") or []:
        turns = [
            Turn(
                turn_id=str(invocation.get("invocation_id") or f"turn_{index + 1}"),
                input=content_text(invocation.get("user_content")),
                expected_tool_calls=_tool_uses(invocation),
                expected_response=content_text(invocation.get("final_response")) or None,
            )
            for index, invocation in enumerate(case.get("conversation") or [])
        ]
        session = case.get("session_input") or {}
        metadata: dict[str, Any] = {}
        if case.get("conversation_scenario"):  # a simulated user plays the conversation
            metadata["conversation_scenario"] = case["conversation_scenario"]
            if not turns:
                scenario = case["conversation_scenario"]
                turns = [
                    Turn(turn_id="sim_1", input=str(scenario.get("starting_prompt") or "(simulated user)"))
                ]
        cases.append(
            Case(
                case_id=str(case["eval_id"]),
                turns=turns,
                metrics=specs,
                metadata=metadata,
                session=SessionInput(
                    initial_state=session.get("state") or {},
                    config={k: session[k] for k in ("app_name", "user_id") if session.get(k)},
                ),
                source_format="adk",
            )
        )
    return cases, warnings


def case_from_legacy(items: list[dict[str, Any]], path: Path, specs: list[MetricSpec]) -> Case:
    """A legacy `.test.json` is one conversation: each entry is a turn, as ADK migrates it."""
    turns = [
        Turn(
            turn_id=f"turn_{index + 1}",
            input=str(item["query"]),
            expected_tool_calls=[
                ToolCall(name=use["tool_name"], args=use.get("tool_input") or {})
                for use in item.get("expected_tool_use") or []
            ],
            expected_response=item.get("reference") or None,
        )
        for index, item in enumerate(items)
    ]
    return Case(case_id=path.name, name=path.stem, turns=turns, metrics=specs, source_format="adk-legacy")
