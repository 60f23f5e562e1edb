"""Google ADK eval files: the `EvalSet` JSON (snake_case or camelCase) and the legacy list
format (`query`, `expected_tool_use`, `reference`), with the `test_config.json` beside them.

ADK semantics are kept: every invocation is a turn, and an empty `tool_uses` expects no tool
call. Without a `test_config.json`, ADK's defaults apply: `tool_trajectory_avg_score` 1.0
and `response_match_score` 0.8.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from proctor.loaders.errors import found
from proctor.models.agentflow import SessionInput, ToolCall
from proctor.models.case import Case, MetricSpec, Turn

ADK_DEFAULT_CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
KEEP_AS_GIVEN = {"args", "state", "tool_input", "final_session_state", "response"}  # user data, not fields

# The fields google-adk 2.13.0's models define (eval_set.py, eval_case.py, eval_rubrics.py,
# conversation_scenarios.py); `metadata` on the set is Proctor's (agent, eval_config).
EVAL_SET_FIELDS = {"eval_set_id", "name", "description", "eval_cases", "creation_timestamp", "metadata"}
EVAL_CASE_FIELDS = {
    "eval_id",
    "conversation",
    "conversation_scenario",
    "session_input",
    "creation_timestamp",
    "rubrics",
    "final_session_state",
}
INVOCATION_FIELDS = {
    "invocation_id",
    "user_content",
    "final_response",
    "intermediate_data",
    "creation_timestamp",
    "duration",
    "model_duration",
    "tool_duration",
    "rubrics",
    "app_details",
}
INTERMEDIATE_FIELDS = {"tool_uses", "tool_responses", "intermediate_responses", "invocation_events"}
SCENARIO_FIELDS = {"starting_prompt", "conversation_plan", "user_persona"}
SESSION_FIELDS = {"app_name", "user_id", "session_id", "state"}
RUBRIC_FIELDS = {"rubric_id", "rubric_content", "description", "type"}
# google.genai's FunctionCall (extra="forbid", so ADK refuses any other key, `arguments` for
# `args` among them). `partial_args` and `will_continue` stream a call in parts: ADK's metrics
# compare name and args only, and so does Proctor.
FUNCTION_CALL_FIELDS = {"id", "name", "args", "partial_args", "will_continue"}
# The legacy `.test.json` list as google-adk 2.13.0 migrates it
# (`local_eval_sets_manager._convert_invocation_to_pydantic_schema`).
LEGACY_FIELDS = {"query", "expected_tool_use", "reference", "expected_intermediate_agent_responses"}
LEGACY_TOOL_FIELDS = {"tool_name", "tool_input", "mock_tool_output"}
LEGACY_RESPONSE_FIELDS = {"author", "text"}


def snake_keys(value: Any, where: str = "") -> Any:
    """camelCase keys to snake_case, recursively (ADK writes either); tool args and state are
    kept as given. A key written both ways (`eval_cases` and `evalCases`) is an error."""
    if isinstance(value, list):
        return [snake_keys(item, f"{where}[{index}]") for index, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    converted = {}
    for key, item in value.items():
        name = _CAMEL.sub("_", key).lower() if isinstance(key, str) else key
        if name in converted:
            raise AdkFormatError(
                name, where, f"one spelling of the field, not both {name!r} and its camelCase form"
            )
        at = f"{where}.{name}" if where else str(name)
        converted[name] = item if name in KEEP_AS_GIVEN else snake_keys(item, at)
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


def check_fields(mapping: dict[str, Any], allowed: set[str], where: str) -> None:
    """An unknown key is an error naming it (and the field it was probably meant to be)."""
    for key in mapping:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise AdkFormatError(
                None, where, f"one of the fields {', '.join(sorted(allowed))}; {key!r} is unknown{hint}"
            )


def _entry(value: Any, where: str, expected: str = "a mapping") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AdkFormatError(None, where, expected, value)
    return value


def _name(mapping: dict[str, Any], key: str, where: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value.strip():
        raise AdkFormatError(key, where, "the tool's name (a non-empty string)", value)
    return value


# Keys only ADK's EvalSet and EvalCase define (agentflow's models forbid them), in either spelling:
# an eval set carrying one is ADK's even when nothing else in it is (ADK's own empty eval set).
ADK_ONLY_SET_KEYS = {"creation_timestamp", "creationTimestamp", "evalSetId", "evalCases"}
ADK_ONLY_CASE_KEYS = {
    "conversation_scenario",
    "conversationScenario",
    "creation_timestamp",
    "creationTimestamp",
    "rubrics",
    "final_session_state",
    "finalSessionState",
    "evalId",
    "sessionInput",
}
ADK_ONLY_SESSION_KEYS = {"app_name", "appName", "user_id", "userId", "state", "session_id", "sessionId"}


def _adk_only_keys(document: dict[str, Any], cases: list[Any]) -> bool:
    if ADK_ONLY_SET_KEYS & set(document):
        return True
    if any(key in document and document[key] is None for key in ("name", "description")):
        return True  # ADK's EvalSet allows null name and description; agentflow's needs text
    for case in cases:
        if not isinstance(case, dict):
            continue
        if ADK_ONLY_CASE_KEYS & set(case):
            return True
        session = case.get("session_input")
        if isinstance(session, dict) and ADK_ONLY_SESSION_KEYS & set(session):
            return True
    return False


def is_adk_evalset(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    cases = document.get("eval_cases") or document.get("evalCases") or []
    if _adk_only_keys(document, cases if isinstance(cases, list) else []):
        return True
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
    check_fields(use, FUNCTION_CALL_FIELDS, where)
    call_id, args = use.get("id"), use.get("args")
    if args is not None and not isinstance(args, dict):
        raise AdkFormatError("args", where, "a mapping of arguments", args)
    return ToolCall(
        name=_name(use, "name", where), args=args, call_id=None if call_id is None else str(call_id)
    )


def _tool_uses(invocation: dict[str, Any], where: str) -> list[ToolCall]:
    data = _field(invocation, "intermediate_data", where, dict, "a mapping with tool_uses")
    where = f"{where}.intermediate_data"
    check_fields(data, INTERMEDIATE_FIELDS, where)
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


def _rubrics(owner: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """ADK `Rubric`s (rubric_id, rubric_content.text_property, description, type), checked."""
    rubrics = _field(owner, "rubrics", where, list, "a list of rubrics")
    for index, rubric in enumerate(rubrics):
        at = f"{where}.rubrics[{index}]"
        check_fields(_entry(rubric, at, "a rubric {rubric_id, rubric_content}"), RUBRIC_FIELDS, at)
        _name(rubric, "rubric_id", at)
        content = _field(rubric, "rubric_content", at, dict, "a mapping with text_property")
        check_fields(content, {"text_property"}, f"{at}.rubric_content")
    return rubrics


def _intermediate_texts(invocation: dict[str, Any], where: str) -> list[str]:
    """The texts of `intermediate_data.intermediate_responses`: [(author, [parts])]."""
    data = _field(invocation, "intermediate_data", where, dict, "a mapping with tool_uses")
    texts = []
    for index, entry in enumerate(_field(data, "intermediate_responses", where, list, "a list")):
        if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[1], list):
            raise AdkFormatError(
                "intermediate_responses", f"{where}[{index}]", "a pair [author, [parts]]", entry
            )
        text = content_text({"parts": entry[1]}, f"{where}.intermediate_responses[{index}]")
        if text:
            texts.append(text)
    return texts


def _turns(conversation: list[Any], where: str) -> list[Turn]:
    turns = []
    for index, invocation in enumerate(conversation):
        at = f"{where}.conversation[{index}]"
        invocation = _entry(invocation, at, "an invocation mapping")
        check_fields(invocation, INVOCATION_FIELDS, at)
        user = _field(invocation, "user_content", at, dict, "a Content mapping with parts")
        final = _field(invocation, "final_response", at, dict, "a Content mapping with parts")
        rubrics = _rubrics(invocation, at)
        turns.append(
            Turn(
                turn_id=str(invocation.get("invocation_id") or f"turn_{index + 1}"),
                input=content_text(user, f"{at}.user_content"),
                expected_tool_calls=_tool_uses(invocation, at),
                expected_response=content_text(final, f"{at}.final_response") or None,
                expected_intermediate_responses=_intermediate_texts(invocation, at),
                metadata={"adk_rubrics": rubrics} if rubrics else {},
            )
        )
    return turns


def _scenario_turns(scenario: dict[str, Any], where: str) -> list[Turn]:
    """A `conversation_scenario` case: the simulated user opens with `starting_prompt`."""
    at = f"{where}.conversation_scenario"
    check_fields(scenario, SCENARIO_FIELDS, at)
    for name in ("starting_prompt", "conversation_plan"):
        if not isinstance(scenario.get(name), str) or not scenario[name].strip():
            raise AdkFormatError(name, at, "a non-empty string", scenario.get(name))
    return [Turn(turn_id="sim_1", input=scenario["starting_prompt"])]


def cases_from_evalset(document: dict[str, Any], specs: list[MetricSpec]) -> tuple[list[Case], list[str]]:
    """ADK `EvalCase`s as cases. A case has a `conversation` or a `conversation_scenario` (a
    simulated user plays it), not both, as ADK's own validator requires."""
    document = snake_keys(document)
    check_fields(document, EVAL_SET_FIELDS, "")
    cases, warnings = [], []
    for number, case in enumerate(_field(document, "eval_cases", "", list, "a list of eval cases")):
        where = f"eval_cases[{number}]"
        case = _entry(case, where, "an eval case mapping")
        check_fields(case, EVAL_CASE_FIELDS, where)
        conversation = case.get("conversation")
        scenario = case.get("conversation_scenario")
        if (conversation is None) == (scenario is None):
            raise AdkFormatError(
                None, where, "exactly one of conversation and conversation_scenario (as ADK requires)"
            )
        metadata: dict[str, Any] = {}
        if scenario is not None:
            scenario = _field(case, "conversation_scenario", where, dict, "a mapping with starting_prompt")
            turns = _scenario_turns(scenario, where)
            metadata["conversation_scenario"] = scenario
        else:
            turns = _turns(_field(case, "conversation", where, list, "a list of invocations"), where)
            if not turns:
                raise AdkFormatError("conversation", where, "at least one invocation to run")
        rubrics = _rubrics(case, where)
        if rubrics:
            metadata["adk_rubrics"] = rubrics
        if case.get("final_session_state"):
            metadata["final_session_state"] = case["final_session_state"]
            warnings.append(
                f"{where}.final_session_state is kept with the case but not scored: "
                "no ADK 2.13.0 metric reads it"
            )
        session = _field(case, "session_input", where, dict, "a mapping with app_name, user_id, state")
        check_fields(session, SESSION_FIELDS, f"{where}.session_input")
        state = _field(session, "state", f"{where}.session_input", dict, "a mapping")
        cases.append(
            Case(
                case_id=_case_id(case, where),
                turns=turns,
                metrics=specs,
                metadata=metadata,
                session=SessionInput(
                    thread_id=str(session["session_id"]) if session.get("session_id") else None,
                    initial_state=state,
                    config={k: str(session[k]) for k in ("app_name", "user_id") if session.get(k)},
                ),
                source_format="adk",
            )
        )
    return cases, warnings


def _legacy_responses(item: dict[str, Any], where: str) -> list[str]:
    """`expected_intermediate_agent_responses`: [{author, text}], as ADK migrates them."""
    texts = []
    entries = _field(item, "expected_intermediate_agent_responses", where, list, "a list of {author, text}")
    for number, entry in enumerate(entries):
        at = f"{where}.expected_intermediate_agent_responses[{number}]"
        entry = _entry(entry, at, "a mapping with author and text")
        check_fields(entry, LEGACY_RESPONSE_FIELDS, at)
        text = entry.get("text")
        if not isinstance(text, str) or not isinstance(entry.get("author"), str):
            raise AdkFormatError(None, at, "author and text, both strings", entry)
        texts.append(text)
    return texts


LEGACY_NEEDS = {
    "tool_trajectory_avg_score": ("expected_tool_use",),
    "response_match_score": ("reference",),
}
"""What google-adk 2.13.0 requires of a legacy file's first entry for each criterion
(`AgentEvaluator._validate_input`: it checks the first entry only)."""


def case_from_legacy(
    items: list[dict[str, Any]], path: Path, specs: list[MetricSpec]
) -> tuple[Case, list[str]]:
    """A legacy `.test.json` is one conversation: each entry is a turn, as ADK migrates it.

    Unknown keys are refused, as a typo (`expected_tool_uses`) would otherwise leave a turn
    expecting no tool call at all; `mock_tool_output` is read by no google-adk 2.13.0 code and is
    named in a warning."""
    warnings: list[str] = []
    for name, needed in LEGACY_NEEDS.items():
        if items and any(spec.enabled and spec.name == name for spec in specs):
            for key in needed:
                if key not in items[0]:
                    raise AdkFormatError(
                        key,
                        "[0]",
                        f"the key {key!r} in the first entry: {name} compares with it (as ADK requires)",
                    )
    turns = []
    for index, item in enumerate(items):
        where = f"[{index}]"
        check_fields(item, LEGACY_FIELDS, where)
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
            check_fields(use, LEGACY_TOOL_FIELDS, at)
            if "tool_input" not in use:
                raise AdkFormatError("tool_input", at, "the call's arguments (a mapping; ADK requires it)")
            if "mock_tool_output" in use:
                warnings.append(
                    f"{at}.mock_tool_output is ignored: google-adk 2.13.0 reads no mocked tool output "
                    "from a legacy file, and neither does Proctor"
                )
            args = _field(use, "tool_input", at, dict, "a mapping of arguments")
            calls.append(ToolCall(name=_name(use, "tool_name", at), args=args))
        turns.append(
            Turn(
                turn_id=f"turn_{index + 1}",
                input=str(query),
                expected_tool_calls=calls,
                expected_response=reference or None,
                expected_intermediate_responses=_legacy_responses(item, where),
            )
        )
    case = Case(case_id=path.name, name=path.stem, turns=turns, metrics=specs, source_format="adk-legacy")
    return case, warnings
