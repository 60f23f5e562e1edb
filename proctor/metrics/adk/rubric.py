"""Google ADK 2.13.0's rubric judges under ADK's names: `rubric_based_final_response_quality_v1`
and `rubric_based_tool_use_quality_v1`, with ADK's prompts (templates adk_rubric_*.j2), its
Property/Rationale/Verdict reply parser, majority vote per rubric over samples, and the mean of
every rubric verdict of every invocation, pooled (ADK's `MeanInvocationResultsSummarizer`).

The prompts show the turn's app details as ADK fills them (`proctor.metrics.adk.invocation`): an
`adk:` agent's recorded instructions and tool declarations, an `openai:` agent's own; without
them, empty instructions and "Agent has no tools.", as ADK shows an invocation without any.
"""

from __future__ import annotations

import statistics
from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator

from proctor.judges import Judge, Usage
from proctor.metrics.adk.invocation import (
    app_details,
    developer_instructions,
    grounding_json,
    tool_declarations_json,
    turn_events,
)
from proctor.metrics.adk.judged import AdkJudgeOptions, limited, unscored
from proctor.metrics.adk.replies import (
    NO_GROUNDING,
    NO_TOOLS,
    normalize_rubric_text,
    parse_rubric_reply,
    text_with_intermediate,
    tool_steps_json,
)
from proctor.metrics.base import MetricContext, Score
from proctor.metrics.judged import judged_score
from proctor.models.case import Case, Turn
from proctor.models.outcome import AgentTurn


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


def rubric_scores(reply: str, rubrics: list[AdkRubric]) -> list[tuple[str, float | None]]:
    """ADK's `convert_auto_rater_response_to_score`: each parsed verdict matched to a rubric by
    id, else by normalised text; verdicts matching no rubric are dropped."""
    by_id = {rubric.rubric_id: rubric for rubric in rubrics}
    by_text = {normalize_rubric_text(rubric.text): rubric for rubric in rubrics}
    scores = []
    for answer in parse_rubric_reply(reply) if reply else []:
        rubric = by_id.get(answer.rubric_id) if answer.rubric_id else None
        rubric = rubric or by_text.get(normalize_rubric_text(answer.property_text))
        if rubric is not None:
            scores.append((rubric.rubric_id, answer.score))
    return scores


def majority_per_rubric(samples: list[list[tuple[str, float | None]]]) -> dict[str, float | None]:
    """ADK's `MajorityVotePerInvocationResultsAggregator`: per rubric, yes wins only by a strict
    majority of scored samples; a rubric no sample scored stays None."""
    buckets: dict[str, list[int]] = {}
    for sample in samples:
        for rubric_id, score in sample:
            counts = buckets.setdefault(rubric_id, [0, 0, 0])
            counts[0 if score is None else 1 if score == 1.0 else 2] += 1
    return {
        rubric_id: None if not (yes or no) else 1.0 if yes > no else 0.0
        for rubric_id, (_, yes, no) in buckets.items()
    }


def rubric_list(rubrics: list[AdkRubric]) -> str:
    return "\n".join(f"*  [id: {rubric.rubric_id}] {rubric.text}" for rubric in rubrics)


class AdkRubricMetric(AdkJudgeOptions):
    """What ADK's rubric evaluators share; subclasses give the template, type and variables."""

    rubric_type: ClassVar[str]
    default_threshold = 0.8

    rubrics: list[AdkRubric] = Field(default_factory=list)
    num_samples: int = Field(default=5, ge=1, le=10)
    parallelism_limit: int = Field(default=1, ge=1)

    def adk_prompt_variables(self, actual: AgentTurn, rubrics: list[AdkRubric]) -> dict[str, str]:
        raise NotImplementedError

    async def sample_rubrics(
        self, judge: Judge, usage: Usage, asked: list[tuple[list[AdkRubric], dict[str, str]]]
    ) -> list[tuple[list[list[tuple[str, float | None]]], list[str]]]:
        """Each invocation's `num_samples` verdicts (rubric id, score) and unreadable replies,
        every call under ADK's `parallelism_limit`."""
        replies = await limited(
            [
                lambda rubrics=rubrics, variables=variables, sample=sample: self.ask_adk(
                    judge,
                    self.template,
                    usage,
                    lambda text: rubric_scores(text, rubrics) or None,
                    sample=sample,
                    **variables,
                )
                for rubrics, variables in asked
                for sample in range(self.num_samples)
            ],
            self.parallelism_limit,
        )
        results = []
        for index in range(len(asked)):
            samples = replies[index * self.num_samples : (index + 1) * self.num_samples]
            results.append(
                ([scores or [] for scores, _ in samples], [raw for scores, raw in samples if not scores])
            )
        return results

    async def aevaluate(self, ctx: MetricContext) -> Score:
        judge = self._judge(ctx)
        usage = Usage()
        asked, actuals = [], []
        for expected, actual in ctx.paired_turns():
            if actual is None:
                continue
            rubrics = effective_rubrics(self.rubrics, ctx.case, expected, self.rubric_type)
            if not rubrics:
                raise ValueError("Rubrics are required (none in the criterion, the case or the invocation)")
            asked.append((rubrics, self.adk_prompt_variables(actual, rubrics)))
            actuals.append(actual)
        per_turn, pooled, raws = [], [], []
        for actual, (samples, unread) in zip(
            actuals, await self.sample_rubrics(judge, usage, asked), strict=True
        ):
            raws += unread
            met = majority_per_rubric(samples)
            scored = [value for value in met.values() if value is not None]
            pooled += scored
            per_turn.append(
                {"turn_id": actual.turn_id, "met": met, "score": statistics.mean(scored) if scored else None}
            )
        if not pooled:
            raise unscored(self.name, raws)
        value = statistics.mean(pooled)
        score = judged_score(value, value, 1, f"{value:.0%} of rubric checks met", usage, [])
        score.details = {"per_turn": per_turn, "unreadable_replies": raws}
        return score


class RubricBasedFinalResponseQualityV1(AdkRubricMetric):
    """ADK's `rubric_based_final_response_quality_v1`: rubrics of type FINAL_RESPONSE_QUALITY
    checked on each answer, with the tool calls and results shown as evidence."""

    name = "rubric_based_final_response_quality_v1"
    template = "adk_rubric_based_final_response_quality_v1.j2"
    summary = "ADK: an LLM checks each rubric yes/no on every answer; the share met is the score."
    how_it_scores = (
        "same as ADK: ADK 2.13.0's own prompt (the turn's tool calls and results as ADK's JSON steps;"
        " the developer instructions of the agent that spoke first and every agent's tool "
        "declarations, as ADK fills them from the invocation's app details: with `--agent adk:` those"
        " the runner records, with an `openai:` agent.yaml agent its instructions and tools as ADK "
        "would record them (function declarations with `parameters_json_schema`), with other agents "
        'none, so empty instructions and "Agent has no tools.", as ADK for an invocation without app '
        "details; grounding metadata of `adk:` runs) and its ID / Property / Rationale / Verdict "
        "parser (a verdict is matched to a rubric by id, else by its normalised text; a partial reply"
        " is dropped as ADK drops it); rubrics from the criterion (`rubricId`, "
        "`rubricContent.textProperty`) and from the case and invocations whose `type` is "
        "`FINAL_RESPONSE_QUALITY` (others named in a warning, as ADK skips them); a threshold alone "
        "is enough when the case has rubrics; each rubric by majority of `num_samples` (5); score = "
        "mean of every verdict of every turn, pooled"
    )
    rubric_type: ClassVar[str] = "FINAL_RESPONSE_QUALITY"

    def adk_prompt_variables(self, actual: AgentTurn, rubrics: list[AdkRubric]) -> dict[str, str]:
        """ADK's `format_auto_rater_prompt`: the turn's app details (the instructions of the agent
        that spoke first, every agent's tools) and grounding metadata, when it has them."""
        final = text_with_intermediate(
            actual.metadata.get("intermediate_responses", []),
            actual.response,
            self.include_intermediate_responses_in_final,
        )
        details, events = app_details(actual), turn_events(actual)
        return {
            "developer_instructions": developer_instructions(details, actual) if details is not None else "",
            "tool_declarations": tool_declarations_json(details) if details is not None else NO_TOOLS,
            "user_input": actual.input,
            "response_steps": tool_steps_json(actual.tool_calls),
            "grounding_metadata": grounding_json(events) or NO_GROUNDING,
            "final_response": final or "",
            "rubrics": rubric_list(rubrics),
        }


class RubricBasedToolUseQualityV1(AdkRubricMetric):
    """ADK's `rubric_based_tool_use_quality_v1`: rubrics of type TOOL_USE_QUALITY checked on
    each invocation's tool calls and results."""

    name = "rubric_based_tool_use_quality_v1"
    template = "adk_rubric_based_tool_use_quality_v1.j2"
    summary = "ADK: an LLM checks each rubric yes/no on every turn's tool use; the share met is the score."
    how_it_scores = (
        "same as ADK: ADK 2.13.0's own tool-use prompt (the tool declarations as for "
        "`rubric_based_final_response_quality_v1`) and the same parser and aggregation, rubrics of "
        "`type` `TOOL_USE_QUALITY`"
    )
    rubric_type: ClassVar[str] = "TOOL_USE_QUALITY"

    def adk_prompt_variables(self, actual: AgentTurn, rubrics: list[AdkRubric]) -> dict[str, str]:
        details = app_details(actual)
        return {
            "tool_declarations": tool_declarations_json(details) if details is not None else NO_TOOLS,
            "user_input": actual.input,
            "tool_usage": tool_steps_json(actual.tool_calls),
            "rubrics": rubric_list(rubrics),
        }


RUBRIC_METRICS: dict[str, type[AdkRubricMetric]] = {
    metric.name: metric for metric in (RubricBasedFinalResponseQualityV1, RubricBasedToolUseQualityV1)
}
RUBRIC_TYPES = {metric.rubric_type for metric in RUBRIC_METRICS.values()}
