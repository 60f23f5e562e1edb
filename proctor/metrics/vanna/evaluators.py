"""Metrics under the names Vanna's evaluation framework uses, scored as Vanna 2.0.2 scores them.

Ported from Vanna's own code (`vanna/core/evaluation/evaluators.py`, 2.0.2), branch by branch,
with its reason texts: where the code and Vanna's design document disagree, the code decides
(docs/suites/vanna.md lists where). `tests/metrics/vanna/test_parity.py` runs Vanna's own
evaluators beside these on generated cases and asserts equal scores and verdicts.

- `TrajectoryEvaluator` / `OutputEvaluator`: 1.0, less 0.5/len(list) for each expected tool
  (keyword) missing and for each forbidden one present; clamped to 0..1; passed at >= 0.7.
- `EfficiencyEvaluator`: 1.0, less 0.33 for the evaluator's own time limit exceeded, 0.33 for its
  token limit, 0.34 for the case's `max_execution_time_ms`; passed at >= 0.7. It does not look
  at `min_components`/`max_components` (the design document says it does): Proctor reports those
  bounds apart, as its own informational `proctor_component_bounds`, which never changes a verdict.
- A Vanna case without an expected outcome passes each evaluator by default with 1.0, as in
  Vanna, and the reason says so. A case whose agent failed scores 0.0 on the trajectory and
  output evaluators (the efficiency evaluator, as Vanna's, ignores the error; the case fails).

The LLM judge (`LLMAsJudgeEvaluator`) is in `vanna_judge.py`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from proctor.metrics.base import Measurement, Metric, MetricContext, Score
from proctor.models.outcome import AgentTurn
from proctor.models.vanna import TEXT_COMPONENT_TYPES, ExpectedOutcome

VANNA_PASS_MARK = 0.7  # every Vanna evaluator's own `passed = score >= 0.7`
NO_OUTCOME = "No expected outcome specified, passing by default"


def is_vanna_case(ctx: MetricContext) -> bool:
    return ctx.case.source_format == "vanna"


def expected_outcome(ctx: MetricContext) -> ExpectedOutcome | None:
    """The case's Vanna `ExpectedOutcome` (kept by the Vanna loader, never shown to the agent);
    None when the case has none."""
    raw = ctx.case.metadata.get("expected_outcome")
    return None if raw is None else ExpectedOutcome.model_validate(raw)


def has_outcome(ctx: MetricContext) -> bool:
    """A Vanna case is always scored (without an outcome it passes by default, as in Vanna); a
    case of another format only when it states an outcome, so it never passes on nothing."""
    return is_vanna_case(ctx) or ctx.case.metadata.get("expected_outcome") is not None


def components_of(turn: AgentTurn) -> list[dict[str, Any]]:
    """The components the agent reported for a turn, else its answer as one `rich_text`
    component (as Vanna's agent yields its text reply)."""
    reported = turn.metadata.get("components")
    if reported:
        return list(reported)
    return [{"type": "rich_text", "content": turn.response}] if turn.response else []


def final_answer(ctx: MetricContext) -> str:
    """Vanna's `AgentResult.get_final_answer`: the text components' contents, one per line."""
    texts = [
        component.get("content") or ""
        for turn in ctx.turns
        for component in components_of(turn)
        if component.get("type") in TEXT_COMPONENT_TYPES
    ]
    return "\n".join(text for text in texts if text)


def total_tokens(ctx: MetricContext) -> int:
    return sum(turn.usage.total_tokens for turn in ctx.turns)


def agent_failed(ctx: MetricContext) -> Score:
    return Score(value=0.0, passed=False, reason=f"Agent execution failed: {ctx.agent_error}")


def passed_by_default() -> Score:
    return Score(value=1.0, passed=True, reason=NO_OUTCOME, details={"no_expected_outcome": True})


def vanna_score(score: float, what: str, issues: list[str], clean: str, details: dict[str, Any]) -> Score:
    """Clamped to 0..1 and passed at 0.7, with Vanna's reasoning: the issues, else `clean`."""
    score = max(0.0, min(1.0, score))
    reasoning = f"{what} evaluation: " + ("; ".join(issues) if issues else clean)
    return Score(value=score, passed=score >= VANNA_PASS_MARK, reason=reasoning, details=details)


class VannaTrajectoryEvaluator(Metric):
    """Vanna's `TrajectoryEvaluator`: `tools_called` were called, `tools_not_called` were not."""

    name = "TrajectoryEvaluator"
    default_threshold = VANNA_PASS_MARK
    own_pass_rule = "it passes at a fixed 0.7 (Vanna 2.0.2: `passed = score >= 0.7`)"
    summary = "Vanna: 1 less 0.5/n per expected tool not called and per forbidden tool called; passes at 0.7."
    how_it_scores = (
        "Vanna: 1.0 less `0.5/len(list)` per expected tool (keyword) missing and per forbidden one "
        "present; passes at 0.7"
    )

    def applies_to(self, ctx: MetricContext) -> bool:
        return has_outcome(ctx)

    def evaluate(self, ctx: MetricContext) -> Score:
        if ctx.agent_error is not None:
            return agent_failed(ctx)
        expected = expected_outcome(ctx)
        if expected is None:
            return passed_by_default()
        called = ctx.tool_names
        issues: list[str] = []
        score = 1.0
        if expected.tools_called:
            for tool in expected.tools_called:
                if tool not in called:
                    issues.append(f"Expected tool '{tool}' was not called")
                    score -= 0.5 / len(expected.tools_called)
        if expected.tools_not_called:
            for tool in expected.tools_not_called:
                if tool in called:
                    issues.append(f"Unexpected tool '{tool}' was called")
                    score -= 0.5 / len(expected.tools_not_called)
        result = vanna_score(
            score,
            "Trajectory",
            issues,
            "All expected tools called, no unexpected tools",
            {"tools_called": called, "num_tools_called": len(called), "issues": issues},
        )
        result.details["turns"] = [  # the whole conversation at once, as Vanna checks it
            {
                "turn_id": "all turns",
                "matched": not issues,
                "expected": [{"name": tool} for tool in expected.tools_called or []],
                "actual": [call.model_dump(include={"name", "args"}) for call in ctx.tool_calls],
                "forbidden": list(expected.tools_not_called or []),
            }
        ]
        return result


class VannaOutputEvaluator(Metric):
    """Vanna's `OutputEvaluator`: the final answer contains / excludes the keywords (`lower()`)."""

    name = "OutputEvaluator"
    default_threshold = VANNA_PASS_MARK
    own_pass_rule = "it passes at a fixed 0.7 (Vanna 2.0.2: `passed = score >= 0.7`)"
    summary = "Vanna: 1 less 0.5/n per expected keyword missing and per forbidden one present; passes at 0.7."
    how_it_scores = (
        "Vanna: 1.0 less `0.5/len(list)` per expected tool (keyword) missing and per forbidden one "
        "present; passes at 0.7"
    )

    def applies_to(self, ctx: MetricContext) -> bool:
        return has_outcome(ctx)

    def evaluate(self, ctx: MetricContext) -> Score:
        if ctx.agent_error is not None:
            return agent_failed(ctx)
        expected = expected_outcome(ctx)
        if expected is None:
            return passed_by_default()
        answer = final_answer(ctx).lower()
        issues: list[str] = []
        score = 1.0
        if expected.final_answer_contains:
            for content in expected.final_answer_contains:
                if content.lower() not in answer:
                    issues.append(f"Expected content '{content}' not found in output")
                    score -= 0.5 / len(expected.final_answer_contains)
        if expected.final_answer_not_contains:
            for content in expected.final_answer_not_contains:
                if content.lower() in answer:
                    issues.append(f"Forbidden content '{content}' found in output")
                    score -= 0.5 / len(expected.final_answer_not_contains)
        return vanna_score(
            score,
            "Output",
            issues,
            "All expected content present, no forbidden content",
            {"output_length": len(answer), "issues": issues},
        )


class VannaEfficiencyEvaluator(Metric):
    """Vanna's `EfficiencyEvaluator`: its own limits (`max_execution_time_ms`, `max_tokens`, as
    Vanna's constructor takes them) and the case's `max_execution_time_ms`. The time is the
    agent's measured time for the case; the tokens are those the agent reported."""

    name = "EfficiencyEvaluator"
    default_threshold = VANNA_PASS_MARK
    own_pass_rule = "it passes at a fixed 0.7 (Vanna 2.0.2: `passed = score >= 0.7`)"
    summary = (
        "Vanna: 1 less 0.33 per evaluator limit exceeded (time, tokens), 0.34 over the case's time limit."
    )
    how_it_scores = (
        "Vanna: 1.0 less 0.33 per own limit exceeded, 0.34 over the case's `max_execution_time_ms`; "
        "passes at 0.7"
    )

    max_execution_time_ms: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)

    def applies_to(self, ctx: MetricContext) -> bool:
        return has_outcome(ctx) or bool(self.max_execution_time_ms or self.max_tokens)

    def evaluate(self, ctx: MetricContext) -> Score:
        elapsed, tokens = ctx.agent_ms, total_tokens(ctx)
        issues: list[str] = []
        score = 1.0
        if self.max_execution_time_ms and elapsed > self.max_execution_time_ms:
            issues.append(f"Execution time {elapsed:.0f}ms exceeded limit {self.max_execution_time_ms:.0f}ms")
            score -= 0.33
        if self.max_tokens and tokens > self.max_tokens:
            issues.append(f"Token usage {tokens} exceeded limit {self.max_tokens}")
            score -= 0.33
        expected = expected_outcome(ctx)
        if expected and expected.max_execution_time_ms and elapsed > expected.max_execution_time_ms:
            limit = expected.max_execution_time_ms
            issues.append(f"Execution time {elapsed:.0f}ms exceeded test case limit {limit:.0f}ms")
            score -= 0.34
        return vanna_score(
            score,
            "Efficiency",
            issues,
            "Within resource limits",
            {"execution_time_ms": elapsed, "total_tokens": tokens, "issues": issues},
        )


class ProctorComponentBounds(Metric):
    """Proctor's own check of `min_components`/`max_components`, which Vanna's design document
    says `EfficiencyEvaluator` checks and Vanna 2.0.2's code does not. Informational: the count
    and whether it lies within the bounds are shown apart from Vanna's scores, and never change a
    score or a verdict."""

    name = "proctor_component_bounds"
    informational = True
    summary = (
        "Proctor: the UI components the agent showed, against the case's min/max_components (no verdict)."
    )
    how_it_scores = "Proctor's own: the case's `min_components`/`max_components`, reported apart, no verdict"

    def applies_to(self, ctx: MetricContext) -> bool:
        expected = expected_outcome(ctx)
        return expected is not None and (
            expected.min_components is not None or expected.max_components is not None
        )

    def evaluate(self, ctx: MetricContext) -> Measurement:
        expected = expected_outcome(ctx)
        assert expected is not None
        count = sum(len(components_of(turn)) for turn in ctx.turns)
        low, high = expected.min_components, expected.max_components
        within = (low is None or count >= low) and (high is None or count <= high)
        bounds = f"{'' if low is None else low}..{'' if high is None else high}"
        verdict = "within" if within else "outside"
        return Measurement(
            value=count,
            reason=f"{count} components, {verdict} the expected {bounds} "
            "(Proctor's check; Vanna 2.0.2 does not check component bounds, so no verdict)",
            details={"min_components": low, "max_components": high, "within_bounds": within},
        )

    def aggregate(self, per_turn: list[float | None]) -> float | None:
        return None if any(value is None for value in per_turn) else sum(v or 0.0 for v in per_turn)


VANNA_METRICS_NAMES = ("TrajectoryEvaluator", "OutputEvaluator", "EfficiencyEvaluator", "LLMAsJudgeEvaluator")
