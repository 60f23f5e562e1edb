"""Google ADK 2.13.0's judge-reply parsers and prompt pieces, ported line for line so a judge
reply gives the score ADK would give and the judge sees the text ADK would send.

Ported from google-adk 2.13.0 (google/adk/evaluation/final_response_match_v2.py,
rubric_based_evaluator.py, llm_as_judge_utils.py). Copyright 2025 Google LLC, Apache License 2.0
(http://www.apache.org/licenses/LICENSE-2.0).
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from proctor.models.agentflow import ToolCall

_VALID_LABEL = re.compile(r'"is_the_agent_response_valid":\s*\[*[\n\s]*"*([^"^\]^\s]*)"*[\n\s]*\]*\s*[,\n\}]')
_INVALID_LABEL = re.compile(
    r'"is_the_agent_response_invalid":\s*\[*[\n\s]*"*([^"^\]^\s]*)"*[\n\s]*\]*\s*[,\n\}]'
)
_NEGATIVE = ("invalid", "almost", "false", "partially_valid", "partially valid", "partially")
_POSITIVE = ("valid", "true")


def parse_validity(reply: str) -> float | None:
    """ADK's `_parse_critique` as `convert_auto_rater_response_to_score` uses it: 1.0 valid,
    0.0 invalid, None when the label is missing or unknown (ADK's NOT_FOUND)."""
    if not reply:
        return None
    found = _VALID_LABEL.search(reply)
    if found:
        label = found.group(1).strip().rstrip(",}")
        if label in _NEGATIVE:
            return 0.0
        return 1.0 if label in _POSITIVE else None
    found = _INVALID_LABEL.search(reply)
    if found:
        label = found.group(1).strip().rstrip(",}")
        return 0.0 if label in ("true", "invalid") else 1.0
    return None


_ID = re.compile(r"(?m)^\s*ID: (.*)$")
_PROPERTY = re.compile(r"(?m)^\s*Property: (.*)$")
_RATIONALE = re.compile(r"(?<=Rationale: )(.*)")
_VERDICT = re.compile(r"(?<=Verdict: )(.*)")


@dataclass(frozen=True)
class RubricReply:
    """One rubric as the judge answered it (ADK's `RubricResponse`)."""

    rubric_id: str | None
    property_text: str
    rationale: str
    score: float | None


def parse_rubric_reply(reply: str) -> list[RubricReply]:
    """ADK's `DefaultAutoRaterResponseParser.parse`: Property/Rationale/Verdict blocks; a
    verdict containing "yes" is 1.0, else one containing "no" is 0.0, else None. Counts that
    disagree give nothing (ADK refuses a partial parse)."""
    properties = list(_PROPERTY.finditer(reply))
    ids = list(_ID.finditer(reply))
    rationales = _RATIONALE.findall(reply)
    scores: list[float | None] = []
    for verdict in _VERDICT.findall(reply):
        lowered = verdict.lower()
        scores.append(1.0 if "yes" in lowered else 0.0 if "no" in lowered else None)
    if not len(properties) == len(rationales) == len(scores):
        return []
    replies = []
    for index, (found, rationale, score) in enumerate(zip(properties, rationales, scores, strict=True)):
        previous_start = properties[index - 1].start() if index > 0 else -1
        rubric_id = None
        for id_match in ids:
            if previous_start < id_match.start() < found.start():
                rubric_id = id_match.group(1).strip() or None
        replies.append(RubricReply(rubric_id, found.group(1).strip(), rationale.strip(), score))
    return replies


_SMART_CHARS = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
)
_DECORATION_CHARS = " *_`#>-\u2022\"'"
_WHITESPACE = re.compile(r"\s+")


def normalize_rubric_text(text: object) -> str:
    """ADK's `_normalize_text`: how an echoed rubric text is matched to a rubric."""
    if not isinstance(text, str):
        return ""
    text = unicodedata.normalize("NFKC", text).translate(_SMART_CHARS)
    return _WHITESPACE.sub(" ", text).strip(_DECORATION_CHARS).lower()


def text_with_intermediate(intermediate: list[str], final: str | None, include: bool) -> str | None:
    """ADK's `get_text_from_content(invocation, include_intermediate_responses_in_final=...)`:
    the non-empty intermediate texts, then the final one, joined by newlines; None if none."""
    if not include:
        return final or None
    parts = [text for text in [*intermediate, final] if text]
    return "\n".join(parts) if parts else None


def _response_payload(result: Any) -> Any:
    # ADK's FunctionResponse.response is a dict; a tool returning anything else is wrapped by
    # ADK's function tools as {"result": value}.
    return result if isinstance(result, dict) else {"result": result}


def tool_steps_json(calls: list[ToolCall]) -> str:
    """ADK's `get_tool_calls_and_responses_as_json_str` for one invocation's calls.

    As in ADK, a call's response is looked up by call id, so calls without ids all show the
    last id-less response, and a call with no response shows "None"."""
    if not calls:
        return "No intermediate steps were taken."
    responses: dict[str | None, dict[str, Any]] = {}
    for call in calls:
        if call.result is not None:
            responses[call.call_id] = {
                **({"id": call.call_id} if call.call_id is not None else {}),
                "name": call.name,
                "response": _response_payload(call.result),
            }
    steps = []
    for step, call in enumerate(calls):
        tool_call: dict[str, Any] = {"id": call.call_id} if call.call_id is not None else {}
        if call.args is not None:
            tool_call["args"] = call.args
        tool_call["name"] = call.name
        steps.append(
            {"step": step, "tool_call": tool_call, "tool_response": responses.get(call.call_id, "None")}
        )
    return json.dumps({"tool_calls_and_response": steps}, indent=2, ensure_ascii=False)


NO_GROUNDING = "No grounding metadata was provided."
NO_TOOLS = "Agent has no tools."
