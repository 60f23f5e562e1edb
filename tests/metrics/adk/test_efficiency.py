"""ADK's efficiency metrics on the turns Proctor records: what each value is, when it is n/a, and
how turns are averaged (ADK's own evaluators check the same values in test_adk_efficiency_parity)."""

from __future__ import annotations

import pytest

from proctor.metrics import REGISTRY
from proctor.metrics.adk.names import ADK_EFFICIENCY_METRICS, ADK_METRICS_NOT_SCORED
from proctor.models.agentflow import ToolCall
from proctor.models.case import MetricSpec
from proctor.models.outcome import AgentTurn, TokenUsage
from tests.factories import make_case, make_ctx


def _turn(
    calls: int = 0, prompt: int = 0, completion: int = 0, model_calls: int | None = None, ms: float = 0
):
    return AgentTurn(
        turn_id="t",
        input="x",
        tool_calls=[ToolCall(name="roll_die", args={"sides": 6})] * calls,
        usage=TokenUsage(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
        ),
        model_calls=model_calls,
        latency_ms=ms,
    )


def _measure(name: str, *turns: AgentTurn):
    return REGISTRY.build(MetricSpec(name=name)).evaluate(make_ctx(make_case(), *turns))


def test_the_four_are_registered_informational_and_no_longer_refused() -> None:
    for name in ADK_EFFICIENCY_METRICS:
        assert name in REGISTRY and name not in ADK_METRICS_NOT_SCORED
        assert REGISTRY.get(name).informational
    assert not REGISTRY.get("tool_trajectory_avg_score").informational


def test_tool_calls_per_turn_are_averaged() -> None:
    measured = _measure("tool_call_count_v1", _turn(calls=3), _turn(calls=0), _turn(calls=2))
    assert measured.value == pytest.approx(5 / 3)
    assert measured.details["per_invocation"] == [3.0, 0.0, 2.0]
    assert "never passes or fails" in measured.reason


def test_inference_calls_average_only_the_turns_whose_agent_counted_them() -> None:
    assert (
        _measure("inference_call_count_v1", _turn(model_calls=4), _turn(), _turn(model_calls=1)).value == 2.5
    )
    assert _measure("inference_call_count_v1", _turn(), _turn()).value is None  # n/a, not 0


def test_tokens_are_input_plus_output_over_every_turn_and_na_when_none_were_reported() -> None:
    measured = _measure("token_usage_v1", _turn(prompt=100, completion=20), _turn(), _turn(prompt=40))
    # ADK: a turn that reported nothing stays in the denominator (160 tokens over 3 turns)
    assert measured.value == pytest.approx(160 / 3)
    assert measured.details["per_invocation"] == [120.0, None, 40.0]
    assert measured.details["details"]["input_tokens"] == pytest.approx(140 / 3)
    assert measured.details["details"]["output_tokens"] == pytest.approx(20 / 3)
    assert measured.details["details"]["reasoning_tokens"] is None  # not recorded by Proctor
    assert _measure("token_usage_v1", _turn(), _turn()).value is None


def test_seconds_are_per_turn_to_the_millisecond_and_averaged_to_the_millisecond() -> None:
    measured = _measure("invocation_duration_v1", _turn(ms=1234.5678), _turn(ms=10.0004), _turn(ms=2))
    assert measured.details["per_invocation"] == [1.235, 0.01, 0.002]
    assert measured.value == round((1.235 + 0.01 + 0.002) / 3, 3) == 0.416
    assert measured.details["details"] == {
        "total_seconds": 0.416,
        "model_seconds": None,  # ADK splits the turn; Proctor does not measure the parts
        "tool_seconds": None,
        "framework_seconds": None,
    }


def test_a_case_without_turns_has_no_value() -> None:
    for name in ADK_EFFICIENCY_METRICS:
        assert _measure(name).value is None
