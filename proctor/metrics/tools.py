"""Which tools the agent called: ones it must call and ones it must not."""

from __future__ import annotations

from pydantic import Field

from proctor.metrics.base import Metric, MetricContext, Score


class ToolsCalled(Metric):
    """Share of the named tools that the agent called at least once (Vanna's `tools_called`)."""

    name = "tools_called"
    summary = "Every named tool was called at least once."
    how_it_scores = "share of the named tools called at least once"

    tools: list[str] = Field(min_length=1)

    def evaluate(self, ctx: MetricContext) -> Score:
        called = set(ctx.tool_names)
        missing = [tool for tool in self.tools if tool not in called]
        value = (len(self.tools) - len(missing)) / len(self.tools)
        reason = "all expected tools called" if not missing else f"not called: {', '.join(missing)}"
        return Score(value=value, reason=reason, details={"missing": missing, "called": ctx.tool_names})


class ToolsNotCalled(Metric):
    """Share of the named tools that the agent left alone (Vanna's `tools_not_called`)."""

    name = "tools_not_called"
    summary = "None of the named tools was called."
    how_it_scores = "share of the named tools not called"

    tools: list[str] = Field(min_length=1)

    def evaluate(self, ctx: MetricContext) -> Score:
        called = set(ctx.tool_names)
        offending = [tool for tool in self.tools if tool in called]
        value = (len(self.tools) - len(offending)) / len(self.tools)
        reason = "no forbidden tool called" if not offending else f"called: {', '.join(offending)}"
        return Score(value=value, reason=reason, details={"called_forbidden": offending})


def tools_matched(expected_tools: list[str] | None, called: list[str]) -> bool | None:
    """HoloDeck's `tools_matched`: every expected tool name was called (None if none expected)."""
    if expected_tools is None:
        return None
    return set(expected_tools) <= set(called)
