"""Google ADK's judged metrics under ADK's names: what they share, and `final_response_match_v2`
(ADK 2.13.0's prompt and reply parser, ported). `hallucinations_v1` is in `adk_hallucinations.py`,
the rubric metrics in `adk_rubric.py` and `adk_multi_turn.py`, the user simulator's judge in
`simulator_quality.py`.

ADK scores every invocation (turn) and aggregates as noted on each class; where ADK would give
no score because no reply could be read, these raise an error keeping the raw replies.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar

from pydantic import Field, field_validator

from proctor.judges import Judge, JudgeReplyError, Usage
from proctor.judges.genai_config import call_options
from proctor.metrics.adk.replies import parse_validity, text_with_intermediate
from proctor.metrics.base import MetricContext, Score
from proctor.metrics.judged import JudgeMetric, judged_score
from proctor.models.adk_config import GenerateContentConfig, set_fields
from proctor.models.case import Case, Turn
from proctor.models.outcome import AgentTurn

P = TypeVar("P")
T = TypeVar("T")


class AdkJudgeOptions(JudgeMetric):
    """What ADK's judged criteria share: `include_intermediate_responses_in_final` sends the
    text the agent gave before its tool calls (AgentTurn.metadata["intermediate_responses"],
    recorded by the `adk:` runner) with the final response (read by the metrics ADK reads it
    in); `judge_model_config` (google-genai's GenerateContentConfig, from the criterion's
    `judge_model_options`) is carried by every judge call, as ADK passes it to its judge model.
    `unused_judge_options`: the `judge_model_options` a metric has a field for but ADK's
    evaluator does not read (the loader warns about them)."""

    unused_judge_options: ClassVar[frozenset[str]] = frozenset()

    include_intermediate_responses_in_final: bool = False
    judge_model_config: dict[str, Any] | None = None

    @field_validator("judge_model_config")
    @classmethod
    def _genai_config(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else set_fields(GenerateContentConfig.model_validate(value))

    async def ask_adk(
        self,
        judge: Judge,
        template: str,
        usage: Usage,
        parse: Callable[[str], P | None],
        *,
        sample: int = 0,
        sampled: bool = True,
        **variables: Any,
    ) -> tuple[P | None, str]:
        """One judge call as ADK makes it: `judge_model_config`'s temperature when it sets one
        (else Proctor's sampling temperature for a `sampled` call, else the judge's), and the
        rest of the config (`proctor.judges.genai_config`)."""
        temperature, options = call_options(self.judge_model_config)
        if temperature is None and sampled:
            temperature = self._temperature(judge)
        return await judge.ask_text(
            template, usage, parse, sample=sample, temperature=temperature, options=options, **variables
        )


async def limited(calls: list[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    """The calls' results in order, at most `limit` running at once (ADK's `parallelism_limit`:
    its judge samples run under a semaphore of that size); one failing stops the others."""
    if limit <= 1:
        return [await call() for call in calls]
    semaphore = asyncio.Semaphore(limit)

    async def one(call: Callable[[], Awaitable[T]]) -> T:
        async with semaphore:
            return await call()

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(call)) for call in calls]
    except BaseExceptionGroup as failed:  # the first failure, as a sequential run would raise it
        raise failed.exceptions[0] from None
    return [task.result() for task in tasks]

    def answer_text(self, turn: AgentTurn) -> str:
        if not self.include_intermediate_responses_in_final:
            return turn.response or ""
        return "\n".join([*turn.metadata.get("intermediate_responses", []), turn.response or ""])


def majority(labels: list[bool]) -> bool:
    """Majority vote; a tie counts as not passed (a judge split evenly is no evidence)."""
    counts = Counter(labels)
    return counts[True] > counts[False]


def unscored(name: str, raws: list[str]) -> JudgeReplyError:
    """Where ADK would give no score (every sample unreadable), Proctor records an error that
    keeps the judge's raw text, never a score."""
    return JudgeReplyError(f"{name}: no judge reply could be read as ADK reads it", raw="\n---\n".join(raws))


class FinalResponseMatchV2(AdkJudgeOptions):
    """ADK's `final_response_match_v2`, with ADK's prompt and reply parser: each sample is
    valid (1), invalid (0) or unreadable (dropped); an invocation is valid by strict majority of
    its readable samples (a tie is invalid), and the score is the share of valid invocations
    among those with a readable sample (ADK's `aggregate_invocation_results`)."""

    name = "final_response_match_v2"
    template = "adk_final_response_match_v2.j2"
    default_threshold = 0.8
    summary = "ADK: an LLM labels each answer valid/invalid against the reference (majority of 5)."
    how_it_scores = (
        "same as ADK: ADK 2.13.0's own judge prompt (sent as ADK sends it, one user message) and "
        "reply parser; each sample valid / invalid / unreadable (ADK's label spellings: `true`, "
        "`partially`, the `..._invalid` field); a turn is valid by strict majority of its readable "
        "samples (`num_samples`, 5; a tie is invalid); score = share of valid turns among turns with "
        "a readable reply. No readable reply at all: an error keeping the raw replies, never a score"
    )

    num_samples: int = Field(default=5, ge=1, le=10)
    parallelism_limit: int = Field(default=1, ge=1)

    def applies_to_case(self, case: Case) -> bool:
        return any(turn.expected_response for turn in case.turns)

    def adk_prompt_variables(self, expected: Turn, actual: AgentTurn | None) -> dict[str, str]:
        """What ADK's `format_auto_rater_prompt` fills in for one invocation."""
        include = self.include_intermediate_responses_in_final
        reference = text_with_intermediate(
            expected.expected_intermediate_responses, expected.expected_response, include
        )
        response = (
            text_with_intermediate(
                actual.metadata.get("intermediate_responses", []), actual.response, include
            )
            if actual
            else None
        )
        return {"prompt": expected.input, "response": response or "", "golden_response": reference or ""}

    async def aevaluate(self, ctx: MetricContext) -> Score:
        judge = self._judge(ctx)
        usage = Usage()
        judged = [(expected, actual) for expected, actual in ctx.paired_turns() if expected.expected_response]
        replies = await limited(
            [
                lambda expected=expected, actual=actual, sample=sample: self.ask_adk(
                    judge,
                    self.template,
                    usage,
                    parse_validity,
                    sample=sample,
                    **self.adk_prompt_variables(expected, actual),
                )
                for expected, actual in judged
                for sample in range(self.num_samples)
            ],
            self.parallelism_limit,
        )
        per_turn, raws = [], []
        for index, (expected, _) in enumerate(judged):
            samples = replies[index * self.num_samples : (index + 1) * self.num_samples]
            votes = [vote for vote, _ in samples]
            raws += [raw for vote, raw in samples if vote is None]
            read = [vote == 1.0 for vote in votes if vote is not None]
            valid = majority(read) if read else None
            per_turn.append({"turn_id": expected.turn_id, "valid": valid, "votes": votes})
        decided = [turn["valid"] for turn in per_turn if turn["valid"] is not None]
        if not decided:
            raise unscored(self.name, raws)
        value = sum(decided) / len(decided)
        score = judged_score(value, value, 1, f"{value:.0%} of answers judged valid", usage, [])
        score.details = {"per_turn": per_turn, "unreadable_replies": raws}
        return score


ADK_JUDGED_METRICS = (FinalResponseMatchV2,)
