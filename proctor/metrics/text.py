"""Plain text checks on the final answer: what it must and must not contain."""

from __future__ import annotations

from pydantic import Field

from proctor.metrics.base import Metric, MetricContext, Score


def _found(answer: str, values: list[str], case_sensitive: bool) -> list[str]:
    haystack = answer if case_sensitive else answer.casefold()
    return [v for v in values if (v if case_sensitive else v.casefold()) in haystack]


class Contains(Metric):
    """Share of the given strings found in the final answer (Vanna's `final_answer_contains`)."""

    name = "contains"
    summary = "The final answer contains every given string."
    how_it_scores = "share of the strings (`values`) present in the final answer"

    values: list[str] = Field(min_length=1)
    case_sensitive: bool = False

    def evaluate(self, ctx: MetricContext) -> Score:
        found = _found(ctx.final_response, self.values, self.case_sensitive)
        missing = [v for v in self.values if v not in found]
        reason = "all strings present" if not missing else f"missing: {', '.join(map(repr, missing))}"
        return Score(value=len(found) / len(self.values), reason=reason, details={"missing": missing})


class NotContains(Metric):
    """Share of the given strings absent from the final answer (`final_answer_not_contains`)."""

    name = "not_contains"
    summary = "The final answer contains none of the given strings."
    how_it_scores = "share of the strings (`values`) absent from the final answer"

    values: list[str] = Field(min_length=1)
    case_sensitive: bool = False

    def evaluate(self, ctx: MetricContext) -> Score:
        found = _found(ctx.final_response, self.values, self.case_sensitive)
        reason = "no forbidden string present" if not found else f"present: {', '.join(map(repr, found))}"
        value = (len(self.values) - len(found)) / len(self.values)
        return Score(value=value, reason=reason, details={"present": found})
