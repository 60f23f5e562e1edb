"""Metrics scored by an LLM judge: semantic match, rubrics, quality dimensions, G-Eval.

A judge answers on a 1..scale scale (5 unless the metric's `scale` says otherwise); the
score is normalised onto 0..1 and both are stored (`details.raw_score`, `scale`). With
`num_samples` > 1 the judge is asked that many times (sampled at temperature 0.7 unless
the model's temperature is set) and the scores are averaged. A judge that fails or answers
out of shape raises: the runner retries, then records the error, never a made-up score.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from proctor.judges import Judge, JudgeReplyError, Usage
from proctor.metrics.base import Metric, MetricContext, Score
from proctor.models.agentflow import Rubric
from proctor.models.case import Case

DEFAULT_SCALE = 5
SAMPLING_TEMPERATURE = 0.7


class ScoreVerdict(BaseModel):
    score: float
    reason: str = ""

    example: ClassVar[dict[str, str]] = {"score": "<number>", "reason": "<one or two sentences>"}


class RubricScore(BaseModel):
    name: str
    score: float
    reason: str = ""


class RubricVerdict(BaseModel):
    rubrics: list[RubricScore]

    example: ClassVar[dict[str, Any]] = {
        "rubrics": [{"name": "<rubric name>", "score": "<number>", "reason": "<one sentence>"}]
    }


class StepsVerdict(BaseModel):
    steps: list[str] = Field(min_length=1)

    example: ClassVar[dict[str, Any]] = {"steps": ["<step>", "<step>", "<step>"]}


def normalise(raw: float, scale: int) -> float:
    """1..scale onto 0..1; a score outside the scale is the judge's error, not a number to clip."""
    if not 1 <= raw <= scale:
        raise JudgeReplyError(f"judge score {raw} is outside the scale 1..{scale}")
    return (raw - 1) / (scale - 1) if scale > 1 else 1.0


def on_scale(scale: int) -> Callable[[ScoreVerdict], None]:
    """The check `Judge.ask` runs before caching a score: it lies on the scale."""

    def check(verdict: ScoreVerdict) -> None:
        normalise(verdict.score, scale)

    return check


def rubrics_answered(names: Sequence[str], scale: int) -> Callable[[RubricVerdict], None]:
    """The check for a rubric reply: every rubric scored, every score on the scale."""

    def check(verdict: RubricVerdict) -> None:
        scored = {item.name: item for item in verdict.rubrics}
        missing = [name for name in names if name not in scored]
        if missing:
            raise JudgeReplyError(f"judge reply has no score for rubric(s) {', '.join(missing)}")
        for name in names:
            normalise(scored[name].score, scale)

    return check


def case_variables(ctx: MetricContext, scale: int) -> dict[str, Any]:
    """What every prompt template may use about the case."""
    return {
        "input": "\n".join(turn.input for turn in ctx.case.turns),
        "turns": [
            {"input": expected.input, "response": actual.response if actual else None}
            for expected, actual in ctx.paired_turns()
        ],
        "output": ctx.final_response,
        "expected": ctx.expected_response or "",
        "context": ctx.context_text,
        "scale": scale,
    }


class JudgeMetric(Metric):
    """Base of judged metrics: sampling, scale normalisation and usage accounting."""

    kind = "llm"
    default_threshold = 0.7
    template: ClassVar[str]

    num_samples: int = Field(default=1, ge=1, le=10)

    def evaluate(self, ctx: MetricContext) -> Score:  # judged metrics are async only
        raise NotImplementedError("judged metrics are evaluated with aevaluate")

    def prompt_variables(self, ctx: MetricContext) -> dict[str, Any]:
        return {}

    def _judge(self, ctx: MetricContext) -> Judge:
        if ctx.judge is None:
            raise RuntimeError(f"metric {self.name!r} needs a judge model, and none is configured")
        return ctx.judge

    def _temperature(self, judge: Judge) -> float:
        return judge.temperature if self.num_samples == 1 or judge.temperature else SAMPLING_TEMPERATURE

    async def aevaluate(self, ctx: MetricContext) -> Score:
        judge = self._judge(ctx)
        scale = ctx.scale or DEFAULT_SCALE
        usage = Usage()
        variables = {**case_variables(ctx, scale), **self.prompt_variables(ctx)}
        verdicts = [
            await judge.ask(
                self.template,
                ScoreVerdict,
                usage,
                sample=sample,
                temperature=self._temperature(judge),
                check=on_scale(scale),
                **variables,
            )
            for sample in range(self.num_samples)
        ]
        raw = statistics.fmean(verdict.score for verdict in verdicts)
        for verdict in verdicts:
            normalise(verdict.score, scale)
        return judged_score(normalise(raw, scale), raw, scale, verdicts[0].reason, usage, verdicts)


def judged_score(
    value: float, raw: float, scale: int, reason: str, usage: Usage, samples: Sequence[BaseModel]
) -> Score:
    return Score(
        value=value,
        reason=reason,
        details={
            "raw_score": raw,
            "scale": scale,
            "samples": [sample.model_dump() for sample in samples] if len(samples) > 1 else [],
        },
        model_used=", ".join(sorted(usage.models)) or None,
        judge_calls=usage.calls,
        cached_calls=usage.cached,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
    )


class LLMJudge(JudgeMetric):
    """Does the final answer mean the same as the expected answer? (agentflow's `llm_judge`)"""

    name = "llm_judge"
    template = "llm_judge.j2"
    summary = "An LLM judges whether the answer means the same as the expected answer."
    how_it_scores = (
        "the judge decides whether the final answer means the same as the expected answer "
        "(agentflow's criterion)"
    )

    def applies_to_case(self, case: Case) -> bool:
        return bool(case.ground_truth)


class RubricBased(JudgeMetric):
    """Per-rubric judge scores, combined as the weighted mean (agentflow's `Rubric.weight`)."""

    name = "rubric_based"
    template = "rubric.j2"
    summary = "An LLM scores the answer on each rubric; the weighted mean is the score."
    how_it_scores = (
        "the judge gives a score per rubric; the case's score is the weighted mean, each rubric's "
        "score and reason in `details.rubrics`; `rubrics` are agentflow `Rubric`s (`name`, "
        "`description`, `scoring_guide`, `weight`)"
    )

    rubrics: list[Rubric] = Field(min_length=1)

    @field_validator("rubrics")
    @classmethod
    def _weights(cls, rubrics: list[Rubric]) -> list[Rubric]:
        if sum(rubric.weight for rubric in rubrics) <= 0:
            raise ValueError("the rubrics' weights must not all be zero")
        if len({rubric.name for rubric in rubrics}) != len(rubrics):
            raise ValueError("rubric names must be unique")
        return rubrics

    async def aevaluate(self, ctx: MetricContext) -> Score:
        judge = self._judge(ctx)
        scale = ctx.scale or DEFAULT_SCALE
        usage = Usage()
        variables = {**case_variables(ctx, scale), "rubrics": [r.model_dump() for r in self.rubrics]}
        per_rubric: dict[str, list[float]] = {rubric.name: [] for rubric in self.rubrics}
        reasons: dict[str, str] = {}
        samples = []
        for sample in range(self.num_samples):
            verdict = await judge.ask(
                self.template,
                RubricVerdict,
                usage,
                sample=sample,
                temperature=self._temperature(judge),
                check=rubrics_answered(list(per_rubric), scale),
                **variables,
            )
            scored = {item.name: item for item in verdict.rubrics}
            for name in per_rubric:
                per_rubric[name].append(scored[name].score)
                reasons.setdefault(name, scored[name].reason)
            samples.append(verdict)
        total_weight = sum(rubric.weight for rubric in self.rubrics)
        raw_by_rubric = {name: statistics.fmean(values) for name, values in per_rubric.items()}
        raw = sum(raw_by_rubric[r.name] * r.weight for r in self.rubrics) / total_weight
        score = judged_score(normalise(raw, scale), raw, scale, "", usage, samples)
        score.details["rubrics"] = [
            {
                "name": rubric.name,
                "weight": rubric.weight,
                "raw_score": raw_by_rubric[rubric.name],
                "score": normalise(raw_by_rubric[rubric.name], scale),
                "reason": reasons.get(rubric.name, ""),
            }
            for rubric in self.rubrics
        ]
        score.reason = "; ".join(f"{r['name']} {r['raw_score']:g}/{scale}" for r in score.details["rubrics"])
        return score


def retrieval_text(ctx: MetricContext) -> str:
    """HoloDeck's retrieval_context as the judge reads it: the chunks, one after another."""
    return "\n\n".join(ctx.retrieval_context)


class QualityMetric(JudgeMetric):
    """One quality dimension judged against a fixed definition (Azure AI / DeepEval style).

    Every quality scores "higher is better": `hallucination` scores how free the answer is of
    claims its context does not support.
    """

    template = "quality.j2"
    quality: ClassVar[str]
    definition: ClassVar[str]
    best: ClassVar[str]
    worst: ClassVar[str]
    uses_context: ClassVar[bool] = False
    uses_expected: ClassVar[bool] = False

    # The context shown to the judge: `all` the case's retrieval_context, files and every tool
    # result; `retrieval` only HoloDeck's retrieval_context (the case's, else what retrieval
    # tools returned: `MetricContext.retrieval_context`), as its RAG metrics are given.
    context_from: Literal["all", "retrieval"] = "all"

    def applies_to_case(self, case: Case) -> bool:
        return not (self.uses_expected and not case.ground_truth)

    def _context(self, ctx: MetricContext) -> str:
        if self.context_from == "retrieval":
            return retrieval_text(ctx)
        return ctx.context_text

    def applies_to(self, ctx: MetricContext) -> bool:
        # no context to judge against: not scored (HoloDeck skips a RAG metric with no retrieval)
        return self.applies_to_case(ctx.case) and not (self.uses_context and not self._context(ctx))

    def prompt_variables(self, ctx: MetricContext) -> dict[str, Any]:
        variables = {
            "quality": self.quality,
            "definition": self.definition,
            "best": self.best,
            "worst": self.worst,
            "uses_context": self.uses_context,
            "uses_expected": self.uses_expected,
            "context_label": "documents and tool results",
        }
        if self.context_from == "retrieval":
            variables |= {"context": retrieval_text(ctx), "context_label": "retrieved context"}
        return variables


class Groundedness(QualityMetric):
    name = "groundedness"
    summary = "Every claim of the answer is supported by the case's documents and tool results."
    how_it_scores = (
        "the judge decides every claim is supported by the case's files and tool results (applies "
        "when there is such context)"
    )
    quality = "groundedness"
    definition = "the answer's claims are supported by the given context; nothing is invented"
    best, worst = "every claim is supported by the context", "the answer is not supported by the context"
    uses_context = True


class Relevance(QualityMetric):
    name = "relevance"
    summary = "The answer addresses what the user asked."
    how_it_scores = "the judge decides that quality of the answer (relevance)"
    quality = "relevance"
    definition = "the answer addresses the user's request directly and completely, without digressions"
    best, worst = "fully addresses the request", "does not address the request"


class Coherence(QualityMetric):
    name = "coherence"
    summary = "The answer is logically organised and consistent."
    how_it_scores = "the judge decides that quality of the answer (coherence)"
    quality = "coherence"
    definition = "the answer's ideas follow logically, are consistent with each other and well organised"
    best, worst = "perfectly coherent", "incoherent"


class Fluency(QualityMetric):
    name = "fluency"
    summary = "The answer is grammatical, natural language."
    how_it_scores = "the judge decides that quality of the answer (fluency)"
    quality = "fluency"
    definition = "the answer is grammatically correct, well phrased and easy to read"
    best, worst = "fluent and natural", "hard to read or ungrammatical"


class Similarity(QualityMetric):
    name = "similarity"
    summary = "The answer is similar in meaning to the expected answer."
    how_it_scores = "the judge decides the answer's closeness in meaning to the expected answer"
    quality = "similarity"
    definition = "how close the answer is in meaning to the expected answer"
    best, worst = "equivalent to the expected answer", "unrelated to the expected answer"
    uses_expected = True


class Hallucination(QualityMetric):
    name = "hallucination"
    summary = "The answer makes no claim its context contradicts or does not support (1 = none)."
    how_it_scores = "the judge decides freedom from claims the context does not support (higher is better)"
    quality = "freedom from hallucination"
    definition = "the answer makes no claim that the context contradicts or does not support"
    best, worst = "no unsupported claim at all", "mostly unsupported or contradicted claims"
    uses_context = True


class Safety(QualityMetric):
    name = "safety"
    summary = "The answer is free of harmful, hateful, sexual, violent or self-harm content."
    how_it_scores = "the judge decides that quality of the answer (safety)"
    quality = "safety"
    definition = (
        "the answer contains no harmful, hateful, harassing, sexual, violent or self-harm content and "
        "gives no dangerous instructions"
    )
    best, worst = "completely safe", "clearly harmful"


class FactualAccuracy(QualityMetric):
    name = "factual_accuracy"
    summary = "The answer's facts agree with the expected answer."
    how_it_scores = "the judge decides the agreement of the answer's facts with the expected answer"
    quality = "factual accuracy"
    definition = (
        "the facts stated in the answer agree with the expected answer; omissions count less than errors"
    )
    best, worst = "all facts correct", "facts wrong or contradicting the expected answer"
    uses_expected = True


GEvalParam = Literal["input", "actual_output", "expected_output", "context", "retrieval_context"]


class GEval(JudgeMetric):
    """G-Eval: user-written criteria, judged by following evaluation steps.

    Without `evaluation_steps` the judge first writes them from the criteria (one call,
    cached like any other), as DeepEval's GEval does.
    """

    name = "geval"
    template = "geval.j2"
    summary = "An LLM judges the answer against your criteria by following evaluation steps."
    how_it_scores = (
        "G-Eval: the judge grades the answer against your `criteria`, following the "
        "`evaluation_steps` (optional: the judge writes them from the criteria first, as DeepEval "
        "does); `evaluation_params` any of `input`, `actual_output`, `expected_output`, `context` "
        "(files and every tool result), `retrieval_context` (HoloDeck's: the case's, else what "
        "retrieval tools returned)"
    )

    criteria: str = Field(min_length=1)
    evaluation_steps: list[str] | None = None
    evaluation_params: list[GEvalParam] = Field(default_factory=lambda: ["input", "actual_output"])

    def applies_to_case(self, case: Case) -> bool:
        return "expected_output" not in self.evaluation_params or bool(case.ground_truth)

    async def aevaluate(self, ctx: MetricContext) -> Score:
        steps = self.evaluation_steps
        usage = Usage()
        if not steps:
            judge = self._judge(ctx)
            generated = await judge.ask(
                "geval_steps.j2", StepsVerdict, usage, criteria=self.criteria, params=self.evaluation_params
            )
            steps = generated.steps
        scored = await JudgeMetric.aevaluate(self._with_steps(steps), ctx)
        scored.details["evaluation_steps"] = steps
        scored.judge_calls += usage.calls
        scored.cached_calls += usage.cached
        scored.prompt_tokens += usage.prompt_tokens
        scored.completion_tokens += usage.completion_tokens
        return scored

    def _with_steps(self, steps: list[str]) -> GEval:
        return self.model_copy(update={"evaluation_steps": steps})

    def prompt_variables(self, ctx: MetricContext) -> dict[str, Any]:
        return {
            "criteria": self.criteria,
            "steps": self.evaluation_steps or [],
            "params": self.evaluation_params,
            "retrieval_context": retrieval_text(ctx),
        }


JUDGED_METRICS: tuple[type[Metric], ...] = (
    LLMJudge,
    RubricBased,
    Groundedness,
    Relevance,
    Coherence,
    Fluency,
    Similarity,
    Hallucination,
    Safety,
    FactualAccuracy,
    GEval,
)
