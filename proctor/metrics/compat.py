"""Metrics under the names Google ADK and Vanna use, with their semantics.

ADK criteria (`test_config.json`): `tool_trajectory_avg_score`, `response_match_score`,
`final_response_match_v2`, `rubric_based_final_response_quality_v1`, `hallucinations_v1`.
ADK scores every invocation (turn) and averages; where ADK's own judge silently drops a reply
it cannot parse, these raise, so the failure shows.

Vanna evaluators (`TrajectoryEvaluator`, `OutputEvaluator`, `LLMAsJudgeEvaluator`,
`EfficiencyEvaluator`) read the case's `ExpectedOutcome` and pass only if every check passes;
their score is the share of checks passed, as a Vanna `EvaluationResult` reports it.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, model_validator

from proctor.judges import JudgeReplyError, Usage
from proctor.metrics.base import Metric, MetricContext, Score
from proctor.metrics.judged import JudgeMetric, ScoreVerdict, case_variables, judged_score, normalise
from proctor.metrics.response import rouge1_fmeasure
from proctor.metrics.trajectory import trajectory_matches
from proctor.models.agentflow import MatchType
from proctor.models.vanna import ExpectedOutcome

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
                )
                given = {item.rubric_id: item.verdict == "yes" for item in verdict.rubrics}
                missing = [rubric_id for rubric_id in ids if rubric_id not in given]
                if missing:
                    raise JudgeReplyError(f"judge reply has no verdict for rubric(s) {', '.join(missing)}")
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


# -- Vanna --------------------------------------------------------------------------------


def expected_outcome(ctx: MetricContext) -> ExpectedOutcome:
    """The case's Vanna `ExpectedOutcome` (kept in its metadata by the Vanna loader)."""
    return ExpectedOutcome.model_validate(ctx.case.metadata.get("expected_outcome") or {})


def checks_score(checks: dict[str, bool], what: str) -> Score:
    failed = [name for name, ok in checks.items() if not ok]
    value = (len(checks) - len(failed)) / len(checks)
    reason = f"all {len(checks)} {what} checks passed" if not failed else f"failed: {', '.join(failed)}"
    return Score(value=value, passed=not failed, reason=reason, details={"checks": checks})


class VannaTrajectoryEvaluator(Metric):
    """Vanna's `TrajectoryEvaluator`: `tools_called` were called, `tools_not_called` were not."""

    name = "TrajectoryEvaluator"
    summary = "Vanna: the tools that should be called were, the ones that should not were not."

    def applies_to(self, ctx: MetricContext) -> bool:
        outcome = expected_outcome(ctx)
        return bool(outcome.tools_called or outcome.tools_not_called)

    def evaluate(self, ctx: MetricContext) -> Score:
        outcome, called = expected_outcome(ctx), set(ctx.tool_names)
        checks = {f"called {tool}": tool in called for tool in outcome.tools_called or []}
        checks |= {f"did not call {tool}": tool not in called for tool in outcome.tools_not_called or []}
        return checks_score(checks, "trajectory")


class VannaOutputEvaluator(Metric):
    """Vanna's `OutputEvaluator`: the final answer contains / excludes the keywords (any case)."""

    name = "OutputEvaluator"
    summary = "Vanna: the final answer contains and excludes the expected keywords."

    def applies_to(self, ctx: MetricContext) -> bool:
        outcome = expected_outcome(ctx)
        return bool(outcome.final_answer_contains or outcome.final_answer_not_contains)

    def evaluate(self, ctx: MetricContext) -> Score:
        outcome, answer = expected_outcome(ctx), ctx.final_response.casefold()
        checks = {f"contains {w!r}": w.casefold() in answer for w in outcome.final_answer_contains or []}
        checks |= {
            f"excludes {w!r}": w.casefold() not in answer for w in outcome.final_answer_not_contains or []
        }
        return checks_score(checks, "output")


class VannaEfficiencyEvaluator(Metric):
    """Vanna's `EfficiencyEvaluator`: time within `max_execution_time_ms`, components in bounds.

    A Proctor agent yields one text component per turn with an answer.
    """

    name = "EfficiencyEvaluator"
    summary = "Vanna: execution time and component count within the expected bounds."

    def applies_to(self, ctx: MetricContext) -> bool:
        outcome = expected_outcome(ctx)
        limits = (outcome.max_execution_time_ms, outcome.min_components, outcome.max_components)
        return any(limit is not None for limit in limits)

    def evaluate(self, ctx: MetricContext) -> Score:
        outcome = expected_outcome(ctx)
        components = sum(1 for turn in ctx.turns if turn.response)
        checks = {}
        if outcome.max_execution_time_ms is not None:
            checks[f"time {ctx.agent_ms:.0f} <= {outcome.max_execution_time_ms:g} ms"] = (
                ctx.agent_ms <= outcome.max_execution_time_ms
            )
        if outcome.min_components is not None:
            checks[f"components {components} >= {outcome.min_components}"] = (
                components >= outcome.min_components
            )
        if outcome.max_components is not None:
            checks[f"components {components} <= {outcome.max_components}"] = (
                components <= outcome.max_components
            )
        return checks_score(checks, "efficiency")


class VannaLLMAsJudgeEvaluator(JudgeMetric):
    """Vanna's `LLMAsJudgeEvaluator`: an LLM judges the result's quality against `criteria`."""

    name = "LLMAsJudgeEvaluator"
    template = "vanna_judge.j2"
    summary = "Vanna: an LLM judges the answer's quality against the given criteria."

    criteria: str = "The answer is correct, complete and helpful for the user's request."

    def prompt_variables(self, ctx: MetricContext) -> dict[str, Any]:
        return {"criteria": self.criteria}

    async def aevaluate(self, ctx: MetricContext) -> Score:
        judge = self._judge(ctx)
        scale = ctx.scale or 5
        usage = Usage()
        verdict = await judge.ask(
            self.template, ScoreVerdict, usage, **case_variables(ctx, scale), criteria=self.criteria
        )
        return judged_score(normalise(verdict.score, scale), verdict.score, scale, verdict.reason, usage, [])


COMPAT_METRICS: tuple[type[Metric], ...] = (
    ToolTrajectoryAvgScore,
    ResponseMatchScore,
    FinalResponseMatchV2,
    RubricBasedFinalResponseQualityV1,
    HallucinationsV1,
    VannaTrajectoryEvaluator,
    VannaOutputEvaluator,
    VannaEfficiencyEvaluator,
    VannaLLMAsJudgeEvaluator,
)
