"""Efficiency limits: how long the agent took."""

from __future__ import annotations

from pydantic import Field

from proctor.metrics.base import Metric, MetricContext, Score


class MaxExecutionTime(Metric):
    """1 if the agent answered within `max_ms` milliseconds, else 0 (Vanna's efficiency limit)."""

    name = "max_execution_time"
    summary = "The agent's total time stays within max_ms."
    how_it_scores = "1 if the agent's time is within `max_ms`, else 0"

    max_ms: float = Field(gt=0)

    def evaluate(self, ctx: MetricContext) -> Score:
        within = ctx.agent_ms <= self.max_ms
        reason = f"agent took {ctx.agent_ms:.0f} ms (limit {self.max_ms:.0f} ms)"
        return Score(value=1.0 if within else 0.0, reason=reason, details={"agent_ms": ctx.agent_ms})


class GoalsAchieved(Metric):
    """Share of the simulated user's goals the agent achieved (cases played by a simulator)."""

    name = "goals_achieved"
    default_threshold = 1.0
    summary = "Share of the simulated user's goals achieved in the conversation."
    how_it_scores = "share of the simulated user's goals achieved (cases played by a user simulator)"

    def applies_to(self, ctx: MetricContext) -> bool:
        return bool(ctx.turns and ctx.turns[-1].metadata.get("goals"))

    def evaluate(self, ctx: MetricContext) -> Score:
        info = ctx.turns[-1].metadata
        goals, achieved = info["goals"], set(info.get("goals_achieved") or [])
        missing = [goal for goal in goals if goal not in achieved]
        reason = f"{len(goals) - len(missing)} of {len(goals)} goals achieved"
        return Score(
            value=(len(goals) - len(missing)) / len(goals), reason=reason, details={"missing": missing}
        )
