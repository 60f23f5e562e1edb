"""Expected against actual tool calls, per turn: what a failed trajectory did differently.

`diff_calls` is plain: it pairs each expected call with an actual one (same name and
arguments first, then same name alone) and marks every call and argument as `match`,
`mismatch`, `missing` or `unexpected`, so a report can show why a tool metric failed without
re-running it. `case_tool_diffs` collects the diffs of one stored case's failing tool checks
from what the metrics already stored (`details.turns`) and the turns' own tool checks.
Values are shown as compact JSON, cut to `VALUE_CHARS` with their full size said.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from proctor.metrics.holodeck.expected_tools import match_arg

VALUE_CHARS = 200
# Metrics whose `details.turns` hold `{turn_id, matched, expected, actual}` per turn.
TRAJECTORY_METRICS = ("trajectory_match", "tool_trajectory_avg_score", "TrajectoryEvaluator")

NameTest = Callable[[str, str], bool]
ArgTest = Callable[[Any, Any], bool]


def shown(value: Any, limit: int = VALUE_CHARS) -> str:
    """A value as compact JSON (so "42" and 42 differ visibly), cut to `limit` characters
    with the full size of its JSON said."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def _same_name(expected: str, actual: str) -> bool:
    return expected == actual


def _equal(expected: Any, actual: Any) -> bool:
    return bool(expected == actual)


def _args_match(want: dict[str, Any], got: dict[str, Any], exact: bool, arg_matches: ArgTest) -> bool:
    if want.get("args") is None:  # written without arguments: they are not checked
        return True
    expected, actual = want["args"], got.get("args") or {}
    if exact and set(expected) != set(actual):
        return False
    return all(key in actual and arg_matches(value, actual[key]) for key, value in expected.items())


def _arg_rows(want: dict[str, Any], got: dict[str, Any], exact: bool, arg_matches: ArgTest) -> list[dict]:
    expected, actual = want.get("args"), got.get("args") or {}
    if expected is None:
        return [{"key": k, "status": "not checked", "actual": shown(v)} for k, v in actual.items()]
    rows = []
    for key, value in expected.items():
        if key not in actual:
            rows.append({"key": key, "status": "missing", "expected": shown(value)})
        else:
            ok = arg_matches(value, actual[key])
            rows.append(
                {
                    "key": key,
                    "status": "match" if ok else "mismatch",
                    "expected": shown(value),
                    "actual": shown(actual[key]),
                }
            )
    for key, value in actual.items():
        if key not in expected:
            rows.append(
                {"key": key, "status": "unexpected" if exact else "not checked", "actual": shown(value)}
            )
    return rows


def diff_calls(
    expected: list[dict[str, Any]],
    actual: list[dict[str, Any]],
    *,
    exact_args: bool = True,
    name_matches: NameTest = _same_name,
    arg_matches: ArgTest = _equal,
    forbidden: list[str] | None = None,
) -> dict[str, Any]:
    """Each expected call paired with an actual one, or marked missing; actual calls nobody
    expected are `unexpected` (when `forbidden` is given, only calls of those tools are).

    Calls are `{"name", "args"}` dicts; an expected call without `args` checks the name only.
    `exact_args` says whether an actual argument the expectation does not name is a difference
    (agentflow, ADK) or merely not checked (HoloDeck). `order_differs` is true when the paired
    actual calls come in another order than the expected ones.
    """
    paired: dict[int, int] = {}
    free = list(range(len(actual)))
    for strict in (True, False):  # same name and arguments first, then same name alone
        for i, want in enumerate(expected):
            if i in paired:
                continue
            for j in free:
                got = actual[j]
                if name_matches(want["name"], got["name"]) and (
                    not strict or _args_match(want, got, exact_args, arg_matches)
                ):
                    paired[i] = j
                    free.remove(j)
                    break
    calls = []
    for i, want in enumerate(expected):
        if i not in paired:
            calls.append(
                {"status": "missing", "name": want["name"], "args": _arg_rows(want, {}, False, arg_matches)}
            )
            continue
        got = actual[paired[i]]
        ok = _args_match(want, got, exact_args, arg_matches)
        calls.append(
            {
                "status": "match" if ok else "mismatch",
                "name": want["name"] if want["name"] == got["name"] else f"{want['name']} → {got['name']}",
                "position": paired[i] + 1,
                "args": _arg_rows(want, got, exact_args, arg_matches),
            }
        )
    for j in free:
        got = actual[j]
        checked = forbidden is None or got["name"] in forbidden
        calls.append(
            {
                "status": "unexpected" if checked else "not checked",
                "name": got["name"],
                "position": j + 1,
                "args": [
                    {"key": k, "status": "unexpected", "actual": shown(v)}
                    for k, v in (got.get("args") or {}).items()
                ],
            }
        )
    order = [paired[i] for i in sorted(paired)]
    return {"calls": calls, "order_differs": order != sorted(order)}


def _holodeck_arg(matcher: Any, value: Any) -> bool:
    return match_arg(matcher, value)[0]


def _expanded(expected_tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """HoloDeck's `count: n` as n expected calls."""
    return [
        {"name": tool["name"], "args": tool.get("args")}
        for tool in expected_tools
        for _ in range(int(tool.get("count") or 1))
    ]


def case_tool_diffs(turns: list[Any], metrics: list[Any]) -> list[dict[str, Any]]:
    """The failing tool checks of one stored case, each with a diff per failing turn.

    `turns` are the case's `AgentTurn`s, `metrics` its metric rows (with `details`).
    """
    found = []
    for metric in metrics:
        if metric.passed or metric.metric_name not in TRAJECTORY_METRICS:
            continue
        details = metric.details or {}
        exact = details.get("exact_args", True)
        diffs = [
            {
                "turn": turn.get("turn_id") or str(index + 1),
                **diff_calls(
                    turn.get("expected") or [],
                    turn.get("actual") or [],
                    exact_args=exact,
                    forbidden=turn.get("forbidden"),
                ),
            }
            for index, turn in enumerate(details.get("turns") or [])
            if not turn.get("matched", True)
        ]
        if diffs:
            found.append({"metric": metric.metric_name, "turns": diffs})
    holodeck = [
        {
            "turn": str(index + 1),
            **diff_calls(
                _expanded(turn.expected_tools),
                [call.model_dump(include={"name", "args"}) for call in turn.tool_calls],
                exact_args=False,
                name_matches=lambda want, got: want in got,
                arg_matches=_holodeck_arg,
                forbidden=[],
            ),
        }
        for index, turn in enumerate(turns)
        if turn.expected_tools is not None and (turn.tools_matched is False or turn.tool_problems)
    ]
    if holodeck:
        found.append({"metric": "expected_tools", "turns": holodeck})
    return found
