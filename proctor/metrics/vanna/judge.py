"""Vanna's `LLMAsJudgeEvaluator`, with Vanna 2.0.2's prompt and its reading of the reply.

The prompt (`judges/templates/vanna_judge.j2`) is Vanna's, word for word, sent as the only
message at temperature 0.0 through Proctor's judge client. The reply is read as Vanna reads it:
the first line starting `SCORE:` gives the score (0.5 when there is none or it is not a number),
the first line starting `PASSED:` decides the verdict (`yes`, `true` or `pass`; anything else, or
no such line, fails), the first `REASONING:` line is the reason (else the whole reply). The
judge's PASSED line decides, not the score: `SCORE: 0.9` with `PASSED: no` fails.

Where Proctor differs, on purpose: a SCORE outside 0..1 (Vanna would record 8.0 as the score and
average it into the case's score) is an error, asked again and then recorded as the metric's
error, never stored as a score; a judge that cannot be reached is retried and its error recorded
(Vanna records 0.0). A reply without readable SCORE and PASSED lines is scored as Vanna scores it
(0.5, failed) but not cached, so a later run asks again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from proctor.judges import JudgeReplyError, Usage
from proctor.metrics.base import Metric, MetricContext, Score
from proctor.metrics.vanna.evaluators import agent_failed, final_answer

UNREADABLE_SCORE = 0.5  # Vanna's `_parse_score` default
PASSING_WORDS = ("yes", "true", "pass")


@dataclass(frozen=True)
class VannaJudgment:
    score: float
    passed: bool
    reasoning: str
    readable: bool  # a SCORE line with a number and a PASSED line were both found


def _first_line(text: str, prefix: str) -> str | None:
    for line in text.split("\n"):
        if line.startswith(prefix):
            return line.replace(prefix, "").strip()
    return None


def read_judgment(text: str) -> VannaJudgment:
    """The reply read as Vanna's `_parse_score`, `_parse_passed` and `_parse_reasoning` read it."""
    score_text = _first_line(text, "SCORE:")
    try:
        score = float(score_text) if score_text is not None else UNREADABLE_SCORE
        score_read = score_text is not None
    except ValueError:
        score, score_read = UNREADABLE_SCORE, False
    passed_text = _first_line(text, "PASSED:")
    passed = passed_text is not None and passed_text.lower() in PASSING_WORDS
    reasoning = _first_line(text, "REASONING:")
    return VannaJudgment(
        score=score,
        passed=passed,
        reasoning=text if reasoning is None else reasoning,
        readable=score_read and passed_text is not None,
    )


def _cacheable(text: str) -> VannaJudgment | None:
    """What `Judge.ask_text` caches: only a fully readable reply with a score Proctor can store."""
    judgment = read_judgment(text)
    return judgment if judgment.readable and 0.0 <= judgment.score <= 1.0 else None


class VannaLLMAsJudgeEvaluator(Metric):
    """Vanna's `LLMAsJudgeEvaluator`: an LLM judges the answer against `criteria`."""

    name = "LLMAsJudgeEvaluator"
    kind = "llm"
    default_threshold = 0.7
    own_pass_rule = "the judge's PASSED line decides (Vanna 2.0.2's rule)"
    template: ClassVar[str] = "vanna_judge.j2"
    summary = "Vanna: an LLM judges the answer against the criteria; its PASSED line decides."
    how_it_scores = "Vanna: Vanna's prompt; the judge's `PASSED:` line decides, its `SCORE:` is the score"

    criteria: str = "The answer is correct, complete and helpful for the user's request."

    def evaluate(self, ctx: MetricContext) -> Score:  # judged metrics are async only
        raise NotImplementedError("judged metrics are evaluated with aevaluate")

    async def aevaluate(self, ctx: MetricContext) -> Score:
        if ctx.agent_error is not None:
            return agent_failed(ctx)
        if ctx.judge is None:
            raise RuntimeError(f"metric {self.name!r} needs a judge model, and none is configured")
        message = ctx.case.turns[0].input
        answer = final_answer(ctx)
        usage = Usage()
        _, reply = await ctx.judge.ask_text(
            self.template,
            usage,
            _cacheable,
            temperature=0.0,  # Vanna's `LlmRequest(temperature=0.0)`: deterministic judging
            message=message,
            final_answer=answer,
            criteria=self.criteria,
            input=message,
            output=answer,
        )
        judgment = read_judgment(reply)
        if not math.isfinite(judgment.score) or not 0.0 <= judgment.score <= 1.0:
            raise JudgeReplyError(
                f"judge SCORE {judgment.score:g} is outside 0..1 (Vanna's prompt asks for 0.0 to 1.0)",
                raw=reply,
            )
        return Score(
            value=judgment.score,
            passed=judgment.passed,
            reason=judgment.reasoning,
            details={"judge_response": reply, "readable": judgment.readable},
            model_used=", ".join(sorted(usage.models)) or None,
            judge_calls=usage.calls,
            cached_calls=usage.cached,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
        )
