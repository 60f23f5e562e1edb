"""Google ADK's judged metrics under ADK's names: what they share, and `final_response_match_v2`
(ADK 2.13.0's prompt and reply parser, ported). `hallucinations_v1` is in `adk_hallucinations.py`,
the rubric metrics in `adk_rubric.py` and `adk_multi_turn.py`, the user simulator's judge in
`adk_simulator_quality.py`.

ADK scores every invocation (turn) and aggregates as noted on each class; where ADK would give
no score because no reply could be read, these raise an error keeping the raw replies.
"""

from __future__ import annotations

from collections import Counter

from pydantic import Field

from proctor.judges import JudgeReplyError, Usage
from proctor.metrics.adk_replies import parse_validity, text_with_intermediate
from proctor.metrics.base import MetricContext, Score
from proctor.metrics.judged import JudgeMetric, judged_score
from proctor.models.case import Turn
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

    num_samples: int = Field(default=5, ge=1, le=10)

    def applies_to(self, ctx: MetricContext) -> bool:
        return any(turn.expected_response for turn in ctx.case.turns)

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
        per_turn, raws = [], []
        for expected, actual in ctx.paired_turns():
            if not expected.expected_response:
                continue
            votes: list[float | None] = []
            for sample in range(self.num_samples):
                vote, raw = await judge.ask_text(
                    self.template,
                    usage,
                    parse_validity,
                    sample=sample,
                    temperature=self._temperature(judge),
                    **self.adk_prompt_variables(expected, actual),
                )
                votes.append(vote)
                if vote is None:
                    raws.append(raw)
            read = [vote == 1.0 for vote in votes if vote is not None]
            valid = majority(read) if read else None
            per_turn.append({"turn_id": expected.turn_id, "valid": valid, "votes": votes})
        judged = [turn["valid"] for turn in per_turn if turn["valid"] is not None]
        if not judged:
            raise unscored(self.name, raws)
        value = sum(judged) / len(judged)
        score = judged_score(value, value, 1, f"{value:.0%} of answers judged valid", usage, [])
        score.details = {"per_turn": per_turn, "unreadable_replies": raws}
        return score


ADK_JUDGED_METRICS = (FinalResponseMatchV2,)
