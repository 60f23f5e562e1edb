"""Google ADK's `hallucinations_v1`, as google-adk 2.13.0 scores it
(google/adk/evaluation/hallucinations_v1.py): for every text the agent gives, a segmenter call
splits it into `<sentence>`s, and a validator call labels each sentence against a context that
ADK builds from the invocation; the text's score is the share of labelled sentences that are
`supported` or `not_applicable`.

The prompts are ADK's (templates adk_hallucinations_v1_*.j2), sent as ADK sends them (one user
message); the parsers, the context and the aggregation are ported from the same file. Copyright
2026 Google LLC, Apache License 2.0 (http://www.apache.org/licenses/LICENSE-2.0).

The context is ADK's: developer instructions, the user prompt, tool definitions, grounding
metadata, then every earlier event's text, `tool_calls` and `tool_outputs`, from the turn as
`adk_invocation` lays it out. For an `adk:` agent that is what ADK builds; for any other agent
the events are laid out from Proctor's record (texts before calls, one call per event); an
`openai:` agent's instructions and tools are its app details, and an agent without them gets
"Agent has no tools." with empty instructions, as ADK's context for an invocation without app
details. Proctor adds nothing else (no attached files, no HoloDeck retrieval context): a score
Proctor gives is the score ADK's prompt gives.

Where ADK logs and drops a step whose judge call raised, Proctor raises: the runner retries the
metric, and records an error rather than a score from the remaining steps.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from typing import Any, ClassVar

from proctor.judges import Usage
from proctor.metrics.adk.invocation import (
    AdkEvent,
    AgentDetails,
    app_details,
    grounding_json,
    tool_declarations_json,
    turn_events,
)
from proctor.metrics.adk.judged import AdkJudgeOptions, unscored
from proctor.metrics.adk.replies import NO_GROUNDING, NO_TOOLS
from proctor.metrics.base import MetricContext, Score
from proctor.metrics.judged import judged_score
from proctor.models.outcome import AgentTurn

_SENTENCE = re.compile(r"<sentence>(.*?)</sentence>", re.DOTALL)
_VALIDATION = re.compile(
    r"sentence:(.*?)\nlabel:(.*?)\nrationale:(.*?)\nsupporting_excerpt:(.*?)\ncontradicting_excerpt:(.*?)(?=\nsentence:|\Z)",
    re.DOTALL | re.IGNORECASE,
)
POSITIVE_LABELS = frozenset(["supported", "not_applicable"])
NEGATIVE_LABELS = frozenset(["unsupported", "contradictory", "disputed"])


def parse_sentences(reply: str) -> list[str]:
    """ADK's `_parse_sentences`: every `<sentence>...</sentence>`, as written."""
    return _SENTENCE.findall(reply)


def parse_validation(reply: str) -> list[dict[str, str | None]]:
    """ADK's `_parse_validation_results`: sentence / label / rationale / supporting_excerpt /
    contradicting_excerpt blocks, in that order (case-insensitive field names); "null" excerpts
    are None."""
    results = []
    for found in _VALIDATION.finditer(reply.strip()):
        sentence, label, rationale, supporting, contradicting = (part.strip() for part in found.groups())
        results.append(
            {
                "sentence": sentence,
                "label": label,
                "rationale": rationale,
                "supporting_excerpt": supporting if supporting.lower() != "null" else None,
                "contradicting_excerpt": contradicting if contradicting.lower() != "null" else None,
            }
        )
    return results


def accuracy(results: list[dict[str, str | None]]) -> float | None:
    """ADK's score for one text: supported and not_applicable count 1, unsupported,
    contradictory and disputed 0, any other label is skipped; None when no label counted."""
    scores = []
    for result in results:
        label = (result.get("label") or "").strip().lower()
        if label in POSITIVE_LABELS:
            scores.append(1)
        elif label in NEGATIVE_LABELS:
            scores.append(0)
    return statistics.mean(scores) if scores else None


def build_context(turn: AgentTurn, details: dict[str, AgentDetails] | None, events: list[AdkEvent]) -> str:
    """ADK's `_create_context_for_step` for the events before the text being checked."""
    instructions, tools = "", NO_TOOLS
    if details is not None:
        instructions = "\n\n".join(
            f"{name}:\n{agent.instructions}" for name, agent in details.items() if agent.instructions
        )
        tools = tool_declarations_json(details)
    parts = [
        f"Developer instructions:\n{instructions}\n",
        f"User prompt:\n{turn.input}\n",
        "Tool definitions:",
        f"{tools}\n",
        "Grounding metadata:",
        f"{grounding_json(events) or NO_GROUNDING}\n",
    ]
    for event in events:
        if not event.parts:
            continue
        if event.texts():
            parts.append("\n".join(event.texts()) + "\n")
        if event.calls():
            parts += ["tool_calls:", json.dumps(event.calls(), indent=2) + "\n"]
        if event.responses():
            parts += ["tool_outputs:", json.dumps(event.responses(), indent=2) + "\n"]
    return "\n".join(parts)


@dataclass(frozen=True)
class Step:
    """One text to check and the context it is checked against (ADK's `EvaluationStep`)."""

    text: str
    context: str


def steps_to_evaluate(turn: AgentTurn, intermediate: bool) -> list[Step]:
    """ADK's `_get_steps_to_evaluate`: with `intermediate`, every text event is checked against
    the events before it (plus its own grounding metadata); the final answer against all."""
    details, events = app_details(turn), turn_events(turn)
    steps: list[Step] = []
    before: list[AdkEvent] = []
    if intermediate:
        for event in events:
            if event.texts():
                seen = (
                    before + [AdkEvent(event.author, None, event.grounding_metadata)]
                    if event.grounding_metadata
                    else before
                )
                context = build_context(turn, details, seen)
                steps += [Step(text, context) for text in event.texts()]
            before.append(event)
    else:
        before = events
    if turn.response:
        steps.append(Step(turn.response, build_context(turn, details, before)))
    return steps


class HallucinationsV1(AdkJudgeOptions):
    """ADK's `hallucinations_v1`: a turn's score is the mean over its checked texts of the
    share of supported (or not_applicable) sentences; texts with no readable label are left
    out, and so are turns with none; the score is the mean over the remaining turns.
    `evaluate_intermediate_nl_responses` also checks the text given before the answer."""

    name = "hallucinations_v1"
    template = "adk_hallucinations_v1_segmenter.j2"
    validator_template: ClassVar[str] = "adk_hallucinations_v1_validator.j2"
    # ADK asks its segmenter and validator once per text, one call at a time
    unused_judge_options: ClassVar[frozenset[str]] = frozenset({"num_samples", "parallelism_limit"})
    default_threshold = 0.8
    summary = "ADK: share of the answer's sentences a judge finds supported by the turn's context."
    how_it_scores = (
        "same as ADK: ADK 2.13.0's two steps and prompts, each sent as ADK sends it: a segmenter "
        "splits each answer into `<sentence>`s, a validator labels them against ADK's context "
        "(developer instructions, the user prompt, tool definitions, grounding metadata, then the "
        "turn's earlier text, `tool_calls` and `tool_outputs`); `supported` and `not_applicable` "
        "count 1, `unsupported`, `contradictory`, `disputed` 0, other labels are skipped; a turn's "
        "score is the mean over its checked texts, the case's the mean over turns with a score; "
        "`evaluate_intermediate_nl_responses` also checks the text given before the answer, each "
        "against what came before it. With `--agent adk:` the context is ADK's own (the runner "
        "records the turn's events and each agent's instructions and tools); with any other agent "
        "Proctor lays its record out as ADK's events (the text before the answer first, then each "
        "tool call and result as events of their own, author `agent`, or an `openai:` agent's name), "
        "with an `openai:` agent's instructions and tools as its app details and none for other "
        'agents ("Agent has no tools.", as ADK\'s context for an invocation without app details); '
        "attached files and HoloDeck `retrieval_context` are not part of ADK's context and are not "
        "added. No readable label at all: an error keeping the raw replies"
    )

    evaluate_intermediate_nl_responses: bool = False

    async def _check(self, ctx: MetricContext, step: Step, usage: Usage, raws: list[str]) -> dict[str, Any]:
        judge = self._judge(ctx)
        sentences, raw = await self.ask_adk(
            judge,
            self.template,
            usage,
            lambda text: parse_sentences(text) or None,
            sampled=False,
            response=step.text,
        )
        if not sentences:
            raws.append(raw)
            return {"text": step.text, "score": None, "problem": "No sentences produced by segmenter."}
        tagged = "\n".join(f"<sentence>{sentence}</sentence>" for sentence in sentences)
        labels, raw = await self.ask_adk(
            judge,
            self.validator_template,
            usage,
            lambda text: parse_validation(text) or None,
            sampled=False,
            context=step.context,
            sentences=tagged,
        )
        score = accuracy(labels or [])
        if score is None:
            raws.append(raw)
        return {"text": step.text, "score": score, "labels": labels or []}

    async def aevaluate(self, ctx: MetricContext) -> Score:
        usage = Usage()
        per_turn, raws = [], []
        for turn in ctx.turns:
            checked = [
                await self._check(ctx, step, usage, raws)
                for step in steps_to_evaluate(turn, self.evaluate_intermediate_nl_responses)
            ]
            scored = [item["score"] for item in checked if item["score"] is not None]
            per_turn.append(
                {
                    "turn_id": turn.turn_id,
                    "score": statistics.mean(scored) if scored else None,
                    "texts": checked,
                }
            )
        judged = [turn["score"] for turn in per_turn if turn["score"] is not None]
        if not judged:
            if not raws:
                raise RuntimeError("the agent gave no text to check for hallucinations")
            raise unscored(self.name, raws)
        value = statistics.mean(judged)
        score = judged_score(value, value, 1, f"{value:.0%} of sentences supported", usage, [])
        score.details = {"per_turn": per_turn, "unreadable_replies": raws}
        return score
