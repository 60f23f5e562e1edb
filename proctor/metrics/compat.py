"""Metrics under the names Google ADK uses, with its semantics (Vanna's: `metrics/vanna.py`).

ADK criteria (`test_config.json`): `tool_trajectory_avg_score`, `response_match_score`,
`final_response_match_v2`, `rubric_based_final_response_quality_v1`, `hallucinations_v1`.
ADK scores every invocation (turn) and averages; where ADK's own judge silently drops a reply
it cannot parse, these raise, so the failure shows.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, model_validator

from proctor.judges import JudgeReplyError, Usage
from proctor.metrics.base import Metric, MetricContext, Score
from proctor.metrics.judged import (
    JudgeMetric,
    judged_score,
)
from proctor.metrics.response import rouge1_fmeasure
from proctor.metrics.trajectory import trajectory_matches
from proctor.models.agentflow import MatchType

# -- Google ADK ---------------------------------------------------------------------------


class ToolTrajectoryAvgScore(Metric):
    """ADK's `tool_trajectory_avg_score`: every turn 1 or 0 (EXACT by default), averaged.

    Unlike `trajectory_match`, a turn with no expected tool call expects none, as in ADK.
    """

    name = "tool_trajectory_avg_score"
    default_threshold = 1.0
    summary = "ADK: per-turn tool trajectory match (0 or 1), averaged over all turns."

    match_type: MatchType = MatchType.EXACT
    ignore_args: bool = False

    def evaluate(self, ctx: MetricContext) -> Score:
        per_turn = []
        for expected, actual in ctx.paired_turns():
            calls = actual.tool_calls if actual else []
            wanted = expected.expected_tool_calls or []
            per_turn.append(
                float(trajectory_matches(wanted, calls, self.match_type, check_args=not self.ignore_args))
            )
        value = statistics.fmean(per_turn)
        return Score(
            value=value,
            reason=f"{sum(per_turn):g} of {len(per_turn)} turns matched",
            details={"per_turn": per_turn},
        )


class ResponseMatchScore(Metric):
    """ADK's `response_match_score`: ROUGE-1 F per turn, averaged over every turn.

    A turn without an expected answer is compared with the empty text (scores 0), as ADK does.
    """

    name = "response_match_score"
    kind = "nlp"
    default_threshold = 0.8
    summary = "ADK: ROUGE-1 F-measure of each turn's answer, averaged over all turns."

    def evaluate(self, ctx: MetricContext) -> Score:
        per_turn = [
            rouge1_fmeasure((actual.response if actual else None) or "", expected.expected_response or "")
            for expected, actual in ctx.paired_turns()
        ]
        value = statistics.fmean(per_turn)
        return Score(value=value, reason=f"mean ROUGE-1 F {value:.3f}", details={"per_turn": per_turn})


class ValidityVerdict(BaseModel):
    reasoning: str = ""
    is_the_agent_response_valid: Literal["valid", "invalid"]

    example: ClassVar[dict[str, str]] = {
        "reasoning": "<why>",
        "is_the_agent_response_valid": "valid | invalid",
    }


def majority(labels: list[bool]) -> bool:
    """Majority vote; a tie counts as not passed (a judge split evenly is no evidence)."""
    counts = Counter(labels)
    return counts[True] > counts[False]


class FinalResponseMatchV2(JudgeMetric):
    """ADK's `final_response_match_v2`: a judge says valid/invalid per turn, by majority of
    `num_samples` (5) samples; the score is the share of valid turns."""

    name = "final_response_match_v2"
    template = "final_response_match_v2.j2"
    default_threshold = 0.8
    summary = "ADK: an LLM labels each answer valid/invalid against the reference (majority of 5)."

    num_samples: int = Field(default=5, ge=1, le=10)

    def applies_to(self, ctx: MetricContext) -> bool:
        return any(turn.expected_response for turn in ctx.case.turns)

    async def aevaluate(self, ctx: MetricContext) -> Score:
        judge = self._judge(ctx)
        usage = Usage()
        per_turn = []
        for expected, actual in ctx.paired_turns():
            if not expected.expected_response:
                continue
            labels = []
            for sample in range(self.num_samples):
                verdict = await judge.ask(
                    self.template,
                    ValidityVerdict,
                    usage,
                    sample=sample,
                    temperature=self._temperature(judge),
                    prompt=expected.input,
                    response=(actual.response if actual else None) or "",
                    golden_response=expected.expected_response,
                )
                labels.append(verdict.is_the_agent_response_valid == "valid")
            per_turn.append({"turn_id": expected.turn_id, "valid": majority(labels), "votes": labels})
        value = sum(turn["valid"] for turn in per_turn) / len(per_turn)
        score = judged_score(value, value, 1, f"{value:.0%} of answers judged valid", usage, [])
        score.details = {"per_turn": per_turn}
        return score


class AdkRubric(BaseModel):
    """An ADK rubric: `rubricId` and `rubricContent.textProperty` (camelCase or snake_case)."""

    rubric_id: str
    text: str

    @model_validator(mode="before")
    @classmethod
    def _from_adk(cls, value: Any) -> Any:
        if not isinstance(value, dict) or "text" in value:
            return value
        content = value.get("rubricContent") or value.get("rubric_content") or {}
        return {
            "rubric_id": value.get("rubricId") or value.get("rubric_id"),
            "text": content.get("textProperty") or content.get("text_property"),
        }


class RubricVerdictYesNo(BaseModel):
    rubric_id: str
    verdict: Literal["yes", "no"]
    reason: str = ""


class RubricChecklist(BaseModel):
    rubrics: list[RubricVerdictYesNo]

    example: ClassVar[dict[str, Any]] = {
        "rubrics": [{"rubric_id": "<id>", "verdict": "yes | no", "reason": "<one sentence>"}]
    }


def every_rubric_checked(ids: list[str]) -> Callable[[RubricChecklist], None]:
    """The check `Judge.ask` runs before caching a checklist: every rubric has a verdict."""

    def check(verdict: RubricChecklist) -> None:
        given = {item.rubric_id for item in verdict.rubrics}
        missing = [rubric_id for rubric_id in ids if rubric_id not in given]
        if missing:
            raise JudgeReplyError(f"judge reply has no verdict for rubric(s) {', '.join(missing)}")

    return check


class RubricBasedFinalResponseQualityV1(JudgeMetric):
    """ADK's `rubric_based_final_response_quality_v1`: each rubric yes/no per answer, by
    majority of samples; the score is the share of rubrics met, averaged over turns."""

    name = "rubric_based_final_response_quality_v1"
    template = "rubric_checklist.j2"
    default_threshold = 0.8
    summary = "ADK: an LLM checks each rubric yes/no on every answer; the share met is the score."

    rubrics: list[AdkRubric] = Field(min_length=1)

    async def aevaluate(self, ctx: MetricContext) -> Score:
        judge = self._judge(ctx)
        usage = Usage()
        ids = [rubric.rubric_id for rubric in self.rubrics]
        per_turn = []
        for expected, actual in ctx.paired_turns():
            if actual is None or actual.response is None:
                continue
            votes: dict[str, list[bool]] = {rubric_id: [] for rubric_id in ids}
            for sample in range(self.num_samples):
                verdict = await judge.ask(
                    self.template,
                    RubricChecklist,
                    usage,
                    sample=sample,
                    temperature=self._temperature(judge),
                    prompt=expected.input,
                    response=actual.response,
                    rubrics=[rubric.model_dump() for rubric in self.rubrics],
                    check=every_rubric_checked(ids),
                )
                given = {item.rubric_id: item.verdict == "yes" for item in verdict.rubrics}
                for rubric_id in ids:
                    votes[rubric_id].append(given[rubric_id])
            met = {rubric_id: majority(v) for rubric_id, v in votes.items()}
            per_turn.append({"turn_id": expected.turn_id, "met": met, "score": sum(met.values()) / len(met)})
        if not per_turn:
            raise RuntimeError("the agent gave no answer to check against the rubrics")
        value = statistics.fmean(turn["score"] for turn in per_turn)
        score = judged_score(value, value, 1, f"{value:.0%} of rubric checks met", usage, [])
        score.details = {"per_turn": per_turn}
        return score


class SentenceLabel(BaseModel):
    sentence: str
    label: Literal["supported", "unsupported", "contradictory", "disputed", "not_applicable"]


class SentenceLabels(BaseModel):
    sentences: list[SentenceLabel]

    example: ClassVar[dict[str, Any]] = {
        "sentences": [
            {
                "sentence": "<sentence>",
                "label": "supported | unsupported | contradictory | disputed | not_applicable",
            }
        ]
    }


class HallucinationsV1(JudgeMetric):
    """ADK's `hallucinations_v1`: the judge labels each sentence of each answer; the score is
    the share of supported sentences among those that make a claim (1.0 when none do)."""

    name = "hallucinations_v1"
    template = "hallucinations_v1.j2"
    default_threshold = 0.8
    summary = "ADK: share of the answer's sentences supported by the context (tool results, files)."

    async def aevaluate(self, ctx: MetricContext) -> Score:
        judge = self._judge(ctx)
        usage = Usage()
        per_turn = []
        for expected, actual in ctx.paired_turns():
            if actual is None or not actual.response:
                continue
            verdict = await judge.ask(
                self.template,
                SentenceLabels,
                usage,
                temperature=judge.temperature,
                prompt=expected.input,
                response=actual.response,
                context=ctx.context_text,
            )
            counted = [s for s in verdict.sentences if s.label != "not_applicable"]
            supported = sum(1 for s in counted if s.label == "supported")
            per_turn.append(
                {
                    "turn_id": expected.turn_id,
                    "score": supported / len(counted) if counted else 1.0,
                    "labels": [s.model_dump() for s in verdict.sentences],
                }
            )
        if not per_turn:
            raise RuntimeError("the agent gave no answer to check for hallucinations")
        value = statistics.fmean(turn["score"] for turn in per_turn)
        score = judged_score(value, value, 1, f"{value:.0%} of claims supported", usage, [])
        score.details = {"per_turn": per_turn}
        return score


COMPAT_METRICS: tuple[type[Metric], ...] = (
    ToolTrajectoryAvgScore,
    ResponseMatchScore,
    FinalResponseMatchV2,
    RubricBasedFinalResponseQualityV1,
    HallucinationsV1,
)
