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

from proctor.loaders.errors import found
from proctor.models.agentflow import SessionInput, ToolCall
from proctor.models.case import Case, MetricSpec, Turn

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


class AdkFormatError(ValueError):
    """A field of an ADK eval file that is missing or of the wrong type, and where it is."""

    def __init__(self, field: str | None, where: str, expected: str, value: Any = None) -> None:
        at = f" at {where}" if where else ""
        got = f"; found {found(value)}" if value is not None else ""
        what = f"missing or malformed field {field!r}" if field else "malformed entry"
        super().__init__(f"{what}{at}: expected {expected}{got}")


def _field(mapping: dict[str, Any], name: str, where: str, kind: type, expected: str) -> Any:
    """`mapping[name]` if it is a `kind`; absent or null is the kind's empty value."""
    value = mapping.get(name)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise AdkFormatError(name, where, expected, value)
    return value


def _entry(value: Any, where: str, expected: str = "a mapping") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AdkFormatError(None, where, expected, value)
    return value


def _name(mapping: dict[str, Any], key: str, where: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value.strip():
        raise AdkFormatError(key, where, "the tool's name (a non-empty string)", value)
    return value


def is_adk_evalset(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    cases = document.get("eval_cases") or document.get("evalCases") or []
    for case in cases if isinstance(cases, list) else []:
        conversation = case.get("conversation") if isinstance(case, dict) else None
        for invocation in conversation if isinstance(conversation, list) else []:
            if not isinstance(invocation, dict):
                continue
            if set(invocation) & {"final_response", "finalResponse", "intermediate_data", "intermediateData"}:
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


def content_text(content: dict[str, Any] | None, where: str = "") -> str:
    """The text parts of an ADK `Content`, joined as ADK joins them."""
    parts = _field(content or {}, "parts", where, list, "a list of parts")
    texts = []
    for index, part in enumerate(parts):
        text = _entry(part, f"{where}.parts[{index}]").get("text")
        if isinstance(text, dict | list):
            raise AdkFormatError("text", f"{where}.parts[{index}]", "a string", text)
        if text:
            texts.append(str(text))
    return "\n".join(texts)


def _tool_call(use: Any, where: str) -> ToolCall:
    use = _entry(use, where, "a function call {name, args}")
    call_id = use.get("id")
    return ToolCall(
        name=_name(use, "name", where),
        args=_field(use, "args", where, dict, "a mapping of arguments"),
        call_id=None if call_id is None else str(call_id),
    )


def _tool_uses(invocation: dict[str, Any], where: str) -> list[ToolCall]:
    data = _field(invocation, "intermediate_data", where, dict, "a mapping with tool_uses")
    where = f"{where}.intermediate_data"
    uses = _field(data, "tool_uses", where, list, "a list of function calls")
    if uses:
        return [_tool_call(use, f"{where}.tool_uses[{index}]") for index, use in enumerate(uses)]
    calls = []  # newer ADK: events with function_call parts
    events = _field(data, "invocation_events", where, list, "a list of events")
    for number, event in enumerate(events):
        at = f"{where}.invocation_events[{number}]"
        content = _field(_entry(event, at), "content", at, dict, "a Content mapping")
        for index, part in enumerate(_field(content, "parts", f"{at}.content", list, "a list of parts")):
            call = _entry(part, f"{at}.content.parts[{index}]").get("function_call")
            if call:
                calls.append(_tool_call(call, f"{at}.content.parts[{index}].function_call"))
    return calls


def _case_id(case: dict[str, Any], where: str) -> str:
    eval_id = case.get("eval_id")
    if eval_id is None or isinstance(eval_id, dict | list | bool) or not str(eval_id).strip():
        raise AdkFormatError("eval_id", where, "the case's id (a non-empty string)", eval_id)
    return str(eval_id)


def cases_from_evalset(document: dict[str, Any], specs: list[MetricSpec]) -> tuple[list[Case], list[str]]:
    document = snake_keys(document)
    cases, warnings = [], []
    for number, case in enumerate(_field(document, "eval_cases", "", list, "a list of eval cases")):
        where = f"eval_cases[{number}]"
        case = _entry(case, where, "an eval case mapping")
        turns = []
        conversation = _field(case, "conversation", where, list, "a list of invocations")
        for index, invocation in enumerate(conversation):
            at = f"{where}.conversation[{index}]"
            invocation = _entry(invocation, at, "an invocation mapping")
            user = _field(invocation, "user_content", at, dict, "a Content mapping with parts")
            final = _field(invocation, "final_response", at, dict, "a Content mapping with parts")
            turns.append(
                Turn(
                    turn_id=str(invocation.get("invocation_id") or f"turn_{index + 1}"),
                    input=content_text(user, f"{at}.user_content"),
                    expected_tool_calls=_tool_uses(invocation, at),
                    expected_response=content_text(final, f"{at}.final_response") or None,
                )
            )
        session = _field(case, "session_input", where, dict, "a mapping with app_name, user_id, state")
        state = _field(session, "state", f"{where}.session_input", dict, "a mapping")
        metadata: dict[str, Any] = {}
        scenario = _field(case, "conversation_scenario", where, dict, "a mapping with starting_prompt")
        if scenario:  # a simulated user plays the conversation
            metadata["conversation_scenario"] = scenario
            if not turns:
                turns = [
                    Turn(turn_id="sim_1", input=str(scenario.get("starting_prompt") or "(simulated user)"))
                ]
        cases.append(
            Case(
                case_id=_case_id(case, where),
                turns=turns,
                metrics=specs,
                metadata=metadata,
                session=SessionInput(
                    initial_state=state,
                    config={k: str(session[k]) for k in ("app_name", "user_id") if session.get(k)},
                ),
                source_format="adk",
            )
        )
    return cases, warnings


def case_from_legacy(items: list[dict[str, Any]], path: Path, specs: list[MetricSpec]) -> Case:
    """A legacy `.test.json` is one conversation: each entry is a turn, as ADK migrates it."""
    turns = []
    for index, item in enumerate(items):
        where = f"[{index}]"
        query, reference = item.get("query"), item.get("reference")
        if not isinstance(query, str | int | float) or isinstance(query, bool):
            raise AdkFormatError("query", where, "the user's message (a string)", query)
        if reference is not None and not isinstance(reference, str):
            raise AdkFormatError("reference", where, "the expected answer (a string)", reference)
        calls = []
        uses = _field(item, "expected_tool_use", where, list, "a list of {tool_name, tool_input}")
        for number, use in enumerate(uses):
            at = f"{where}.expected_tool_use[{number}]"
            use = _entry(use, at, "a mapping with tool_name and tool_input")
            args = _field(use, "tool_input", at, dict, "a mapping of arguments")
            calls.append(ToolCall(name=_name(use, "tool_name", at), args=args))
        turns.append(
            Turn(
                turn_id=f"turn_{index + 1}",
                input=str(query),
                expected_tool_calls=calls,
                expected_response=reference or None,
            )
        )
    return Case(case_id=path.name, name=path.stem, turns=turns, metrics=specs, source_format="adk-legacy")
