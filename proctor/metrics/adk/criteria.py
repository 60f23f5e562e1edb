"""Google ADK's deterministic criteria, scored as google-adk 2.13.0 scores them.

`tool_trajectory_avg_score` follows `google/adk/evaluation/trajectory_evaluator.py` and
`response_match_score` `final_response_match_v1.py`: every invocation (turn) scores, and the
case's score is their mean. tests/metrics/adk/test_parity.py runs ADK's own evaluators beside
these on generated pairs and asserts equality to 1e-9 (the version: `adk_names.ADK_VERSION`).
"""

from __future__ import annotations

import statistics
from typing import Any

from pydantic import field_validator

from proctor.metrics.base import Metric, MetricContext, Score
from proctor.metrics.response import Tokenizer, rouge1_fmeasure
from proctor.models.agentflow import MatchType, ToolCall
from proctor.models.case import Case


def same_call(expected: ToolCall, actual: ToolCall, ignore_args: bool) -> bool:
    """ADK's test: same name and, unless ignored, `args ==` — where a call written without
    args (None) is not a call with `{}`, as `FunctionCall.args` compares in ADK."""
    return expected.name == actual.name and (ignore_args or expected.args == actual.args)


def adk_trajectory_matches(
    expected: list[ToolCall], actual: list[ToolCall], match_type: MatchType, ignore_args: bool
) -> bool:
    """ADK's EXACT / IN_ORDER / ANY_ORDER, including its edge cases: with IN_ORDER and
    ANY_ORDER an empty expected list matches anything; EXACT then needs no call at all."""
    if match_type is MatchType.EXACT:
        return len(actual) == len(expected) and all(
            same_call(want, got, ignore_args) for want, got in zip(expected, actual, strict=True)
        )
    if not expected:
        return True
    if match_type is MatchType.IN_ORDER:
        position = 0
        for got in actual:
            if same_call(expected[position], got, ignore_args):
                position += 1
                if position == len(expected):
                    return True
        return False
    unused = list(actual)
    for want in expected:
        index = next((i for i, got in enumerate(unused) if same_call(want, got, ignore_args)), None)
        if index is None:
            return False
        unused.pop(index)
    return True


class AdkCriterionFields(Metric):
    """What every ADK criterion (`BaseCriterion`) may say besides its threshold.

    `include_intermediate_responses_in_final` is read by ADK's judged metrics only; the
    deterministic ones accept it and, as in ADK, score the final response alone.
    """

    include_intermediate_responses_in_final: bool = False


class NeedsExpectedConversation(AdkCriterionFields):
    """An ADK metric that compares each invocation with the expected one. A
    `conversation_scenario` case has none: ADK 2.13.0's evaluator raises on it and
    `LocalEvalService` records the metric NOT_EVALUATED, which neither passes nor fails the case
    (`_generate_final_eval_status`); here the metric does not apply to it, and the loader says so."""

    def applies_to_case(self, case: Case) -> bool:
        return not case.metadata.get("conversation_scenario")


class ToolTrajectoryAvgScore(NeedsExpectedConversation):
    """ADK's `tool_trajectory_avg_score`: every turn 1 or 0 (EXACT by default), averaged.

    Unlike `trajectory_match`, a turn with no expected tool call expects none (EXACT), as in ADK.
    `match_type` takes ADK's spellings: EXACT / IN_ORDER / ANY_ORDER in any case, with `-` or
    spaces, or ADK's enum numbers 0 / 1 / 2.
    """

    name = "tool_trajectory_avg_score"
    default_threshold = 1.0
    summary = "ADK: per-turn tool trajectory match (0 or 1), averaged over all turns."
    how_it_scores = (
        "same score as ADK: every turn 1 or 0 (`match_type` EXACT by default, IN_ORDER, ANY_ORDER; "
        "`ignore_args`), averaged over all turns; a turn with no expected call expects none under "
        "EXACT and matches anything under IN_ORDER / ANY_ORDER, as in ADK"
    )

    match_type: MatchType = MatchType.EXACT
    ignore_args: bool = False

    @field_validator("match_type", mode="before")
    @classmethod
    def _adk_spellings(cls, value: Any) -> Any:
        return MatchType.from_adk(value)

    def evaluate(self, ctx: MetricContext) -> Score:
        per_turn, turns = [], []
        for expected, actual in ctx.paired_turns():
            calls = actual.tool_calls if actual else []
            wanted = expected.expected_tool_calls or []
            matched = adk_trajectory_matches(wanted, calls, self.match_type, self.ignore_args)
            per_turn.append(1.0 if matched else 0.0)
            turns.append(  # what the report's expected-against-actual diff reads
                {
                    "turn_id": expected.turn_id,
                    "matched": matched,
                    "expected": [
                        call.model_dump(include={"name"} if self.ignore_args else {"name", "args"})
                        for call in wanted
                    ],
                    "actual": [call.model_dump(include={"name", "args"}) for call in calls],
                }
            )
        value = statistics.fmean(per_turn)
        return Score(
            value=value,
            reason=f"{sum(per_turn):g} of {len(per_turn)} turns matched ({self.match_type.value})",
            details={"per_turn": per_turn, "turns": turns},
        )


class ResponseMatchScore(NeedsExpectedConversation):
    """ADK's `response_match_score`: ROUGE-1 F per turn, averaged over every turn.

    A turn without an expected answer is compared with the empty text (scores 0), as ADK does.
    `tokenizer="ascii"` scores as ADK up to 2.5.0 did (only [a-z0-9] words); the default is
    ADK 2.13.0's Unicode tokenizer.
    """

    name = "response_match_score"
    kind = "nlp"
    default_threshold = 0.8
    summary = "ADK: ROUGE-1 F-measure of each turn's answer, averaged over all turns."
    how_it_scores = (
        "same score as ADK: ROUGE-1 F per turn averaged over all turns, with ADK 2.13's tokenizer "
        "(NFKC; CJK and kana one token per character; Thai, Lao, Khmer, Myanmar per base character; "
        "other scripts by word; ASCII words Porter-stemmed); a turn without an expected answer scores"
        " 0; `tokenizer: ascii` scores as ADK up to 2.5.0"
    )

    tokenizer: Tokenizer = "adk"

    def evaluate(self, ctx: MetricContext) -> Score:
        per_turn = [
            rouge1_fmeasure(
                (actual.response if actual else None) or "", expected.expected_response or "", self.tokenizer
            )
            for expected, actual in ctx.paired_turns()
        ]
        value = statistics.fmean(per_turn)
        return Score(value=value, reason=f"mean ROUGE-1 F {value:.3f}", details={"per_turn": per_turn})
