"""Metrics under the names Vanna's evaluation framework uses, with its semantics.

Vanna evaluators (`TrajectoryEvaluator`, `OutputEvaluator`, `LLMAsJudgeEvaluator`,
`EfficiencyEvaluator`) read the case's `ExpectedOutcome` and pass only if every check passes;
their score is the share of checks passed, as a Vanna `EvaluationResult` reports it.
"""

from __future__ import annotations

from typing import Any

from proctor.judges import Usage
from proctor.metrics.base import Metric, MetricContext, Score
from proctor.metrics.judged import (
    JudgeMetric,
    ScoreVerdict,
    case_variables,
    judged_score,
    normalise,
    on_scale,
)
from proctor.models.outcome import AgentTurn
from proctor.models.vanna import ExpectedOutcome


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
        score = checks_score(checks, "trajectory")
        score.details["turns"] = [  # the whole conversation at once, as Vanna checks it
            {
                "turn_id": "all turns",
                "matched": score.passed,
                "expected": [{"name": tool} for tool in outcome.tools_called or []],
                "actual": [call.model_dump(include={"name", "args"}) for call in ctx.tool_calls],
                "forbidden": list(outcome.tools_not_called or []),
            }
        ]
        return score


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


def component_count(turn: AgentTurn) -> int:
    reported = turn.metadata.get("components")
    if reported:
        return len(reported)
    return 1 if turn.response else 0


class VannaEfficiencyEvaluator(Metric):
    """Vanna's `EfficiencyEvaluator`: time within `max_execution_time_ms`, components in bounds.

    Components are those the agent reported (`AgentResponse.components`); a turn that reported
    none but answered counts as one `rich_text` component, as Vanna's text reply would.
    """

    name = "EfficiencyEvaluator"
    summary = "Vanna: execution time and component count within the expected bounds."

    def applies_to(self, ctx: MetricContext) -> bool:
        outcome = expected_outcome(ctx)
        limits = (outcome.max_execution_time_ms, outcome.min_components, outcome.max_components)
        return any(limit is not None for limit in limits)

    def evaluate(self, ctx: MetricContext) -> Score:
        outcome = expected_outcome(ctx)
        components = sum(component_count(turn) for turn in ctx.turns)
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
            self.template,
            ScoreVerdict,
            usage,
            check=on_scale(scale),
            **case_variables(ctx, scale),
            criteria=self.criteria,
        )
        return judged_score(normalise(verdict.score, scale), verdict.score, scale, verdict.reason, usage, [])


VANNA_METRICS: tuple[type[Metric], ...] = (
    VannaTrajectoryEvaluator,
    VannaOutputEvaluator,
    VannaEfficiencyEvaluator,
    VannaLLMAsJudgeEvaluator,
)
