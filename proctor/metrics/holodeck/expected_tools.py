"""HoloDeck's expected-tool check for one turn: names, `count` and argument matchers.

Follows HoloDeck's `tool_arg_matcher`: an expected name is a case-sensitive substring of the
called tool's name; literal arguments compare with int/float equivalence and strict booleans;
`{fuzzy: ...}` ignores case, whitespace and thousands separators and compares numbers;
`{regex: ...}` must match the whole value. At least `count` calls must satisfy every asserted
argument. Only the turn's own calls count: an earlier turn's call earns no credit.
"""

from __future__ import annotations

import math
import re
from typing import Any

from proctor.models.agentflow import ToolCall
from proctor.models.case import ExpectedTool

_SEPARATORS = re.compile(r"[,_ ]")
_WHITESPACE = re.compile(r"\s+")


def match_literal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(map(match_literal, expected, actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return set(expected) == set(actual) and all(match_literal(expected[k], actual[k]) for k in expected)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return float(expected) == float(actual)
    return bool(expected == actual)


def _normalize(text: str) -> str:
    return _WHITESPACE.sub(" ", _SEPARATORS.sub("", text.strip().lower()))


def _number(text: str) -> float | None:
    percent = text.endswith("%")
    text = (text[:-1].strip() if percent else text).replace(" ", "")
    try:
        value = float(text)
    except ValueError:
        return None
    return value / 100 if percent else value


def match_fuzzy(pattern: str, actual: Any) -> bool:
    expected, found = _normalize(pattern), _normalize(str(actual))
    expected_number, found_number = _number(expected), _number(found)
    if expected_number is not None and found_number is not None:
        return math.isclose(expected_number, found_number, rel_tol=0.0, abs_tol=1e-9)
    return expected == found


def match_arg(matcher: Any, actual: Any) -> tuple[bool, str | None]:
    """One asserted argument against the called value; the reason when it does not match."""
    if isinstance(matcher, dict) and set(matcher) == {"fuzzy"}:
        ok = match_fuzzy(str(matcher["fuzzy"]), actual)
        return ok, None if ok else f"expected ≈{matcher['fuzzy']!r}, got {actual!r}"
    if isinstance(matcher, dict) and set(matcher) == {"regex"}:
        ok = re.fullmatch(str(matcher["regex"]), str(actual)) is not None
        return ok, None if ok else f"expected regex {matcher['regex']!r}, got {actual!r}"
    ok = match_literal(matcher, actual)
    return ok, None if ok else f"expected {matcher!r}, got {actual!r}"


def _call_problem(call: ToolCall, args: dict[str, Any]) -> str | None:
    for key, matcher in args.items():
        if key not in call.args:
            return f"arg '{key}' missing"
        ok, reason = match_arg(matcher, call.args[key])
        if not ok:
            return f"arg '{key}' mismatch: {reason}"
    return None


def check_expected_tools(
    expected: list[ExpectedTool] | None, calls: list[ToolCall]
) -> tuple[bool | None, list[str]]:
    """Whether the calls satisfy every expected tool (None when nothing is expected), and what
    is missing, one line per unmet expectation."""
    if expected is None:
        return None, []
    problems: list[str] = []
    for tool in expected:
        args = tool.args or {}
        satisfying, last_reason = 0, None
        named = [call for call in calls if tool.name in call.name]
        for call in named:
            reason = _call_problem(call, args)
            if reason is None:
                satisfying += 1
            else:
                last_reason = reason
        if satisfying >= tool.count:
            continue
        if not named:
            problems.append(f"expected tool not called: {tool.name}")
        elif satisfying:
            problems.append(f"expected {tool.count} matching call(s) of {tool.name}, got {satisfying}")
        else:
            problems.append(f"expected {tool.name}: {last_reason or 'no call satisfied all args'}")
    return not problems, problems


def validate_matcher(value: Any) -> str | None:
    """What is wrong with an argument matcher as written, found before anything runs."""
    if not isinstance(value, dict) or not {"fuzzy", "regex"} & set(value):
        return None
    if set(value) not in ({"fuzzy"}, {"regex"}):
        return f"a matcher has exactly one key, fuzzy or regex; found {sorted(value)}"
    pattern = next(iter(value.values()))
    if not isinstance(pattern, str):
        return f"a {next(iter(value))} pattern must be a string; found {pattern!r}"
    if "regex" in value:
        try:
            re.compile(pattern)
        except re.error as error:
            return f"cannot compile regex {pattern!r}: {error}"
    return None
