"""Google ADK's informational efficiency metrics, valued as google-adk 2.13.0 values them.

`tool_call_count_v1`, `inference_call_count_v1`, `token_usage_v1` and `invocation_duration_v1`
follow `google/adk/evaluation/_efficiency_evaluators.py`: a value per invocation (turn), and the
case's value is their average, never a per-case total. They report a value (lower is better)
and never pass or fail: `informational`, so the runner stores them without a verdict, and a
threshold is refused as ADK refuses it. ADK reports them for every eval; so does Proctor for
every ADK case (`loaders/adk/loader.py`). tests/metrics/adk/test_efficiency_parity.py runs ADK's own
evaluators on `Invocation`s built from the same turns and asserts equality to 1e-9.

ADK reads them off its `Invocation`; Proctor off the `AgentTurn` it recorded:

- tool calls: ADK's `get_all_tool_calls` (every function call of the invocation), here the
  turn's recorded `tool_calls`.
- inference calls: ADK counts the invocation's events that carry usage metadata or a model
  version (None when the invocation holds no events); here the turn's `model_calls`, which the
  ADK agent counts by that same rule, the OpenAI agent per completion, and a Python agent per
  `record_usage` call or as `model_calls` in its response (None when it reports neither).
- tokens: ADK's input (prompt + tool-use prompt tokens) plus output (candidates + thoughts) over
  the model calls; here the turn's prompt plus completion tokens (the ADK agent records input and
  output that way). A turn whose agent reported no prompt or completion tokens is n/a, as ADK's
  is when no call reported usage; the breakdown ADK gives below input and output (cached,
  tool-use, reasoning...) is not recorded by Proctor and is left null.
- seconds: ADK's `Invocation.duration` (wall clock of the turn, measured while it ran, rounded
  to milliseconds); here the turn's `latency_ms` (the agent's own time, without any wait for a
  concurrency slot) in seconds, rounded the same way. ADK's model / tool / framework split is
  not measured by Proctor and is left null, as ADK leaves it for an invocation it did not time.
"""

from __future__ import annotations

from typing import Any, ClassVar

from proctor.metrics.base import Measurement, Metric, MetricContext
from proctor.models.outcome import AgentTurn


def mean_of_reported(values: list[float | None]) -> float | None:
    """ADK's `_evaluate_efficiency_metric`: the mean of the invocations that have a value (n/a
    ones left out); None when none has."""
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None


def _shown(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"


class AdkEfficiencyMetric(Metric):
    """One of ADK's efficiency metrics: a value per turn, combined by `aggregate`."""

    informational = True
    unit: ClassVar[str]
    averaging: ClassVar[str] = "averaged over the turns that report it"

    def turn_value(self, turn: AgentTurn) -> float | None:
        raise NotImplementedError

    def aggregate(self, per_turn: list[float | None]) -> float | None:
        return mean_of_reported(per_turn)

    def turn_details(self, turn: AgentTurn) -> dict[str, Any]:
        return {}

    def evaluate(self, ctx: MetricContext) -> Measurement:
        per_turn = [self.turn_value(turn) for turn in ctx.turns]
        value = self.aggregate(per_turn)
        details: dict[str, Any] = {"unit": self.unit, "per_invocation": per_turn}
        breakdown = [self.turn_details(turn) for turn in ctx.turns]
        if any(breakdown):
            details["per_invocation_details"] = breakdown
            details["details"] = self.aggregate_details(breakdown)
        reason = (
            f"{_shown(value)} {self.unit} per turn, {self.averaging} "
            f"(per turn: {', '.join(_shown(v) for v in per_turn) or 'none'}); informational: "
            "never passes or fails"
        )
        return Measurement(value=value, reason=reason, details=details)

    def aggregate_details(self, breakdown: list[dict[str, Any]]) -> dict[str, Any]:
        return {}


class ToolCallCountV1(AdkEfficiencyMetric):
    """ADK's `tool_call_count_v1`: tool (function) calls per turn, averaged."""

    name = "tool_call_count_v1"
    unit = "tool calls"
    summary = "ADK, informational: tool calls per turn, averaged over the turns; never passes or fails."
    how_it_scores = (
        "same value as ADK, informational (never passes or fails): the turn's tool (function) calls, "
        "averaged over the turns"
    )

    def turn_value(self, turn: AgentTurn) -> float | None:
        return float(len(turn.tool_calls))


class InferenceCallCountV1(AdkEfficiencyMetric):
    """ADK's `inference_call_count_v1`: model calls per turn, averaged over the turns whose
    agent reported them (n/a when none did)."""

    name = "inference_call_count_v1"
    unit = "inference calls"
    summary = "ADK, informational: model (inference) calls per turn, averaged; never passes or fails."
    how_it_scores = (
        "same value as ADK, informational: the turn's model calls, averaged over the turns whose "
        "agent reported them (ADK agent: the events ADK counts, those with usage metadata or a model "
        "version; OpenAI agent: one per completion; Python agent: one per `record_usage` call, or "
        "`model_calls` in its reply; HTTP agent: not known), n/a if none did"
    )

    def turn_value(self, turn: AgentTurn) -> float | None:
        return None if turn.model_calls is None else float(turn.model_calls)


TOKEN_FIELDS = (
    "total_tokens",
    "input_tokens",
    "prompt_tokens",
    "cached_tokens",
    "tool_use_tokens",
    "output_tokens",
    "candidates_tokens",
    "reasoning_tokens",
)
"""ADK's `TokenUsageDetails`, in its order; Proctor records input and output only."""


class TokenUsageV1(AdkEfficiencyMetric):
    """ADK's `token_usage_v1`: input plus output tokens per turn; the case's value is their sum
    over every turn divided by the number of turns (a turn that reported nothing counts in the
    denominator, as in ADK's `_TokenUsageV1Evaluator._average`), n/a when no turn reported."""

    name = "token_usage_v1"
    unit = "tokens"
    averaging = "summed over the turns that report it and divided by all turns"
    summary = "ADK, informational: input + output tokens per turn, averaged; never passes or fails."
    how_it_scores = (
        "same value as ADK, informational: the turn's input + output tokens (ADK agent: prompt + "
        "tool-use prompt tokens, candidates + thoughts tokens, as ADK counts them; others: prompt + "
        "completion tokens), summed over the turns that report tokens and divided by all turns, n/a "
        "if none did; `details` has ADK's breakdown where Proctor records it (input, output, total; "
        "the finer counts are null)"
    )

    def turn_value(self, turn: AgentTurn) -> float | None:
        return self.turn_details(turn)["total_tokens"]

    def turn_details(self, turn: AgentTurn) -> dict[str, Any]:
        details: dict[str, Any] = dict.fromkeys(TOKEN_FIELDS)
        prompt, completion = turn.usage.prompt_tokens, turn.usage.completion_tokens
        if prompt or completion:  # a usage of all zeros is what an agent that reports none leaves
            details.update(
                input_tokens=float(prompt),
                output_tokens=float(completion),
                total_tokens=float(prompt + completion),
            )
        return details

    def aggregate(self, per_turn: list[float | None]) -> float | None:
        present = [value for value in per_turn if value is not None]
        return sum(present) / len(per_turn) if present else None

    def aggregate_details(self, breakdown: list[dict[str, Any]]) -> dict[str, Any]:
        return {field: self.aggregate([turn[field] for turn in breakdown]) for field in TOKEN_FIELDS}


DURATION_FIELDS = ("total_seconds", "model_seconds", "tool_seconds", "framework_seconds")
"""ADK's `DurationDetails`; Proctor measures the total only."""


class InvocationDurationV1(AdkEfficiencyMetric):
    """ADK's `invocation_duration_v1`: seconds per turn (rounded to milliseconds, as ADK rounds
    what it measures); the case's value is their mean, rounded to milliseconds."""

    name = "invocation_duration_v1"
    unit = "seconds"
    summary = "ADK, informational: wall-clock seconds per turn, averaged; never passes or fails."
    how_it_scores = (
        "same value as ADK, informational: the turn's wall-clock seconds (the agent's own time, as in"
        " [The agent's time](../agents.md#the-agents-time): without waiting for a concurrency slot or"
        " Proctor's own work), each to the millisecond, averaged and rounded to the millisecond; "
        "ADK's model / tool / framework split is not measured (null)"
    )

    def turn_value(self, turn: AgentTurn) -> float | None:
        return round(turn.latency_ms / 1000, 3)

    def turn_details(self, turn: AgentTurn) -> dict[str, Any]:
        return {**dict.fromkeys(DURATION_FIELDS), "total_seconds": self.turn_value(turn)}

    def aggregate(self, per_turn: list[float | None]) -> float | None:
        mean = mean_of_reported(per_turn)
        return None if mean is None else round(mean, 3)

    def aggregate_details(self, breakdown: list[dict[str, Any]]) -> dict[str, Any]:
        return {field: self.aggregate([turn[field] for turn in breakdown]) for field in DURATION_FIELDS}


ADK_EFFICIENCY: tuple[type[Metric], ...] = (
    ToolCallCountV1,
    InferenceCallCountV1,
    TokenUsageV1,
    InvocationDurationV1,
)
