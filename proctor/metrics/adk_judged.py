"""Google ADK's judged metrics under ADK's names: `final_response_match_v2`,
`rubric_based_final_response_quality_v1`, `hallucinations_v1`.

ADK scores every invocation (turn) and aggregates as noted on each class; where ADK's own judge
silently drops a reply it cannot parse, these raise, so the failure shows. The judge is
Proctor's (any OpenAI-compatible model) with Proctor's structured-reply prompts.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, model_validator

from proctor.judges import JudgeReplyError, Usage
from proctor.metrics.base import MetricContext, Score
from proctor.metrics.judged import JudgeMetric, judged_score
from proctor.models.case import Case, Turn
from proctor.models.outcome import AgentTurn


class AdkJudgeOptions(JudgeMetric):
    """What ADK's judged criteria share: `include_intermediate_responses_in_final` sends the
    text the agent gave before its tool calls (AgentTurn.metadata["intermediate_responses"],
    recorded by the `adk:` runner) with the final response."""

    include_intermediate_responses_in_final: bool = False

    def answer_text(self, turn: AgentTurn) -> str:
        if not self.include_intermediate_responses_in_final:
            return turn.response or ""
        return "\n".join([*turn.metadata.get("intermediate_responses", []), turn.response or ""])


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


class FinalResponseMatchV2(AdkJudgeOptions):
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
                    response=self.answer_text(actual) if actual else "",
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
    type: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_adk(cls, value: Any) -> Any:
        if not isinstance(value, dict) or "text" in value:
            return value
        content = value.get("rubricContent") or value.get("rubric_content") or {}
        return {
            "rubric_id": value.get("rubricId") or value.get("rubric_id"),
            "text": content.get("textProperty") or content.get("text_property"),
            "type": value.get("type"),
        }


def effective_rubrics(
    criterion: list[AdkRubric], case: Case, turn: Turn | None, rubric_type: str
) -> list[AdkRubric]:
    """The rubrics ADK 2.13 applies to one invocation: the criterion's, then those on the eval
    case and on the invocation whose `type` is the metric's (ADK drops the others); a rubric id
    given twice is an error, as in ADK."""
    scoped = [
        *case.metadata.get("adk_rubrics", []),
        *((turn.metadata if turn else {}).get("adk_rubrics", [])),
    ]
    chosen = [*criterion, *(r for r in map(AdkRubric.model_validate, scoped) if r.type == rubric_type)]
    ids = [rubric.rubric_id for rubric in chosen]
    twice = sorted({rubric_id for rubric_id in ids if ids.count(rubric_id) > 1})
    if twice:
        raise ValueError(f"rubric id(s) {', '.join(twice)} given more than once")
    return chosen


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


class RubricBasedFinalResponseQualityV1(AdkJudgeOptions):
    """ADK's `rubric_based_final_response_quality_v1`: each rubric yes/no per answer, by
    majority of samples (a tie is "no"); the score is the mean of every rubric verdict of every
    turn, pooled, as ADK's `MeanInvocationResultsSummarizer` computes it.

    Rubrics come from the criterion and from the eval case and invocations (those of type
    FINAL_RESPONSE_QUALITY), so a criterion may give only a threshold."""

    name = "rubric_based_final_response_quality_v1"
    template = "rubric_checklist.j2"
    default_threshold = 0.8
    summary = "ADK: an LLM checks each rubric yes/no on every answer; the share met is the score."
    rubric_type: ClassVar[str] = "FINAL_RESPONSE_QUALITY"

    rubrics: list[AdkRubric] = Field(default_factory=list)

    async def aevaluate(self, ctx: MetricContext) -> Score:
        judge = self._judge(ctx)
        usage = Usage()
        per_turn, pooled = [], []
        for expected, actual in ctx.paired_turns():
            if actual is None or actual.response is None:
                continue
            rubrics = effective_rubrics(self.rubrics, ctx.case, expected, self.rubric_type)
            if not rubrics:
                raise ValueError("Rubrics are required (none in the criterion, the case or the invocation)")
            ids = [rubric.rubric_id for rubric in rubrics]
            votes: dict[str, list[bool]] = {rubric_id: [] for rubric_id in ids}
            for sample in range(self.num_samples):
                verdict = await judge.ask(
                    self.template,
                    RubricChecklist,
                    usage,
                    sample=sample,
                    temperature=self._temperature(judge),
                    prompt=expected.input,
                    response=self.answer_text(actual),
                    rubrics=[rubric.model_dump() for rubric in rubrics],
                    check=every_rubric_checked(ids),
                )
                given = {item.rubric_id: item.verdict == "yes" for item in verdict.rubrics}
                for rubric_id in ids:
                    votes[rubric_id].append(given[rubric_id])
            met = {rubric_id: majority(v) for rubric_id, v in votes.items()}
            pooled += met.values()
            per_turn.append({"turn_id": expected.turn_id, "met": met, "score": sum(met.values()) / len(met)})
        if not per_turn:
            raise RuntimeError("the agent gave no answer to check against the rubrics")
        value = sum(pooled) / len(pooled)
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


class HallucinationsV1(AdkJudgeOptions):
    """ADK's `hallucinations_v1`: the judge labels each sentence of each answer; the score is
    the share of supported sentences among those that make a claim (1.0 when none do)."""

    name = "hallucinations_v1"
    template = "hallucinations_v1.j2"
    default_threshold = 0.8
    summary = "ADK: share of the answer's sentences supported by the context (tool results, files)."

    evaluate_intermediate_nl_responses: bool = False

    def answer_text(self, turn: AgentTurn) -> str:
        """ADK's hallucination criterion names its own flag for the intermediate texts."""
        if self.evaluate_intermediate_nl_responses:
            return "\n".join([*turn.metadata.get("intermediate_responses", []), turn.response or ""])
        return super().answer_text(turn)

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
                response=self.answer_text(actual),
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


ADK_JUDGED_METRICS = (FinalResponseMatchV2, RubricBasedFinalResponseQualityV1, HallucinationsV1)

RUBRIC_METRICS = {RubricBasedFinalResponseQualityV1.name: RubricBasedFinalResponseQualityV1}
RUBRIC_TYPES = {metric.rubric_type for metric in RUBRIC_METRICS.values()}
