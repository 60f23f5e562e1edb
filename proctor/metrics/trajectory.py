"""Tool trajectory matching: EXACT, IN_ORDER or ANY_ORDER, with or without arguments."""

from __future__ import annotations

from proctor.metrics.base import Metric, MetricContext, Score
from proctor.models.agentflow import MatchType, ToolCall
from proctor.models.case import Case


def trajectory_matches(
    expected: list[ToolCall],
    actual: list[ToolCall],
    match_type: MatchType,
    check_args: bool = True,
) -> bool:
    """Whether the actual calls satisfy the expected trajectory under `match_type`.

    EXACT: the same calls in the same order, nothing more. IN_ORDER: every expected call
    appears in order, other calls may come between. ANY_ORDER: every expected call
    appears, each matched by a distinct actual call, in any order.
    """
    if match_type is MatchType.EXACT:
        return len(expected) == len(actual) and all(
            want.matches(got, check_args=check_args) for want, got in zip(expected, actual, strict=True)
        )
    if match_type is MatchType.IN_ORDER:
        remaining = iter(actual)
        return all(any(want.matches(got, check_args=check_args) for got in remaining) for want in expected)
    unused = list(actual)
    for want in expected:
        hit = next((got for got in unused if want.matches(got, check_args=check_args)), None)
        if hit is None:
            return False
        unused.remove(hit)
    return True


class TrajectoryMatch(Metric):
    """Share of turns whose tool calls match the expected trajectory (each turn 0 or 1).

    Only turns that state an expected trajectory are scored, so a suite can leave some
    turns free; an empty expected trajectory means "no tool call" for EXACT matching.
    """

    name = "trajectory_match"
    default_threshold = 0.8
    summary = "Tool calls match the expected trajectory (EXACT / IN_ORDER / ANY_ORDER)."
    how_it_scores = (
        "share of turns with an expected trajectory whose calls match: EXACT the same calls in order "
        "and nothing else; IN_ORDER the expected calls in order, others may come between; ANY_ORDER "
        "each expected call matched by a distinct call; `match_type` EXACT, IN_ORDER or ANY_ORDER"
    )

    match_type: MatchType = MatchType.EXACT
    check_args: bool = True

    def applies_to_case(self, case: Case) -> bool:
        return any(turn.expected_tool_calls is not None for turn in case.turns)

    def evaluate(self, ctx: MetricContext) -> Score:
        verdicts = []
        for expected, actual in ctx.paired_turns():
            if expected.expected_tool_calls is None:
                continue
            calls = actual.tool_calls if actual else []
            matched = trajectory_matches(
                expected.expected_tool_calls, calls, self.match_type, self.check_args
            )
            verdicts.append(
                {
                    "turn_id": expected.turn_id,
                    "matched": matched,
                    "expected": [
                        call.model_dump(include={"name", "args"} if self.check_args else {"name"})
                        for call in expected.expected_tool_calls
                    ],
                    "actual": [call.model_dump(include={"name", "args"}) for call in calls],
                }
            )
        value = sum(v["matched"] for v in verdicts) / len(verdicts)
        missed = [v["turn_id"] for v in verdicts if not v["matched"]]
        reason = (
            f"all {len(verdicts)} turn(s) matched ({self.match_type.value})"
            if not missed
            else f"trajectory mismatch ({self.match_type.value}) in turn(s): {', '.join(missed)}"
        )
        return Score(value=value, reason=reason, details={"turns": verdicts})
