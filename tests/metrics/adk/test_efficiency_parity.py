"""ADK's efficiency metrics in Proctor against google-adk's own evaluators, to 1e-9.

Each generated conversation is built twice from the same data: as ADK `Invocation`s (with
`InvocationEvents`, as ADK's eval records a run, or with the older `IntermediateData`) handed to
ADK's `_efficiency_evaluators`, and as the `AgentTurn`s Proctor records, scored by Proctor's
metrics as a whole case and turn by turn. The ADK agent's own counting is checked on ADK
`Event`s through ADK's event-to-invocation conversion. Needs the `adk` extra; skipped without it.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

pytestmark = pytest.mark.needs_extra  # CI runs these again with the adk extra installed
pytest.importorskip("google.adk", reason="google-adk is not installed (pip install -e '.[adk]')")

from google.adk.evaluation import _efficiency_evaluators as adk_efficiency  # noqa: E402
from google.adk.evaluation.eval_case import (  # noqa: E402
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
)
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig  # noqa: E402
from google.adk.evaluation.eval_config import get_eval_metrics_from_config  # noqa: E402
from google.adk.evaluation.eval_metrics import EvalMetric  # noqa: E402
from google.adk.evaluation.evaluation_generator import EvaluationGenerator  # noqa: E402
from google.adk.events import Event  # noqa: E402
from google.genai import types as genai_types  # noqa: E402

from proctor.agents.adk_agent import model_call_of  # noqa: E402
from proctor.execution.turn_scoring import rollup_metrics  # noqa: E402
from proctor.metrics import REGISTRY, BoundMetric, score_case  # noqa: E402
from proctor.metrics.adk.names import ADK_EFFICIENCY_METRICS  # noqa: E402
from proctor.models.agentflow import ToolCall  # noqa: E402
from proctor.models.case import MetricSpec, Turn  # noqa: E402
from proctor.models.outcome import AgentTurn, TokenUsage  # noqa: E402
from tests.factories import make_case, make_ctx  # noqa: E402

ADK_EVALUATORS = {
    "tool_call_count_v1": adk_efficiency._ToolCallCountV1Evaluator,
    "inference_call_count_v1": adk_efficiency._InferenceCallCountV1Evaluator,
    "token_usage_v1": adk_efficiency._TokenUsageV1Evaluator,
    "invocation_duration_v1": adk_efficiency._InvocationDurationV1Evaluator,
}


def _maybe(rng: random.Random, low: int, high: int, none_share: float) -> int | None:
    return None if rng.random() < none_share else rng.randint(low, high)


def _turn_data(rng: random.Random, index: int) -> dict[str, Any]:
    """One turn: its model calls (usage counts, some unreported), tool calls and latency."""
    calls = []
    for _ in range(rng.choice([0, 1, 1, 2, 3, 5])):
        reported = rng.random() < 0.8
        calls.append(
            {
                "usage": {
                    "prompt_token_count": _maybe(rng, 1, 4000, 0.1),
                    "tool_use_prompt_token_count": _maybe(rng, 1, 300, 0.7),
                    "candidates_token_count": _maybe(rng, 1, 900, 0.1),
                    "thoughts_token_count": _maybe(rng, 1, 2000, 0.6),
                    "cached_content_token_count": _maybe(rng, 1, 500, 0.7),
                }
                if reported
                else None,
                "tools": [
                    {
                        "name": rng.choice(["roll_die", "check_prime", "lookup"]),
                        "args": {"n": rng.randint(1, 9)},
                    }
                    for _ in range(rng.choice([0, 0, 1, 2]))
                ],
            }
        )
    return {"calls": calls, "latency_ms": rng.uniform(0.5, 9000.0), "index": index}


def _usage(counts: dict[str, int | None] | None) -> genai_types.GenerateContentResponseUsageMetadata | None:
    return None if counts is None else genai_types.GenerateContentResponseUsageMetadata(**counts)


def _adk_invocation(turn: dict[str, Any], events: bool) -> Invocation:
    """The turn as ADK's eval records it: one event per model call (its function calls, or its
    text), one per tool response; or, `events=False`, the older `IntermediateData`."""
    tools = [tool for call in turn["calls"] for tool in call["tools"]]
    if events:
        recorded = []
        for call in turn["calls"]:
            parts = [genai_types.Part(function_call=genai_types.FunctionCall(**t)) for t in call["tools"]]
            recorded.append(
                InvocationEvent(
                    author="dice_agent",
                    content=genai_types.Content(role="model", parts=parts or [genai_types.Part(text="…")]),
                    usage_metadata=_usage(call["usage"]),
                    model_version="gemini-2.5-flash",
                )
            )
            recorded += [
                InvocationEvent(
                    author="dice_agent",
                    content=genai_types.Content(
                        role="user",
                        parts=[
                            genai_types.Part(
                                function_response=genai_types.FunctionResponse(
                                    name=t["name"], response={"r": 1}
                                )
                            )
                        ],
                    ),
                )
                for t in call["tools"]
            ]
        data: Any = InvocationEvents(invocation_events=recorded)
    else:
        data = IntermediateData(tool_uses=[genai_types.FunctionCall(**t) for t in tools])
    return Invocation(
        invocation_id=f"inv_{turn['index']}",
        user_content=genai_types.Content(role="user", parts=[genai_types.Part(text="roll")]),
        intermediate_data=data,
        duration=round(turn["latency_ms"] / 1000, 3),  # ADK times a turn to the millisecond
    )


def _proctor_turn(turn: dict[str, Any], events: bool) -> AgentTurn:
    """The same turn as Proctor records it: its tool calls, its model calls when the agent
    counted them, and their tokens as input (prompt + tool-use) and output (candidates + thoughts)."""
    prompt = completion = 0
    for call in turn["calls"] if events else []:
        usage = call["usage"] or {}
        prompt += (usage.get("prompt_token_count") or 0) + (usage.get("tool_use_prompt_token_count") or 0)
        completion += (usage.get("candidates_token_count") or 0) + (usage.get("thoughts_token_count") or 0)
    return AgentTurn(
        turn_id=f"inv_{turn['index']}",
        input="roll",
        response="…",
        tool_calls=[ToolCall(**tool) for call in turn["calls"] for tool in call["tools"]],
        usage=TokenUsage(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
        ),
        model_calls=len(turn["calls"]) if events else None,
        latency_ms=turn["latency_ms"],
    )


def _conversations() -> list[tuple[list[dict[str, Any]], bool]]:
    rng = random.Random(20260416)
    conversations = []
    for number in range(60):
        turns = [_turn_data(rng, index) for index in range(rng.choice([1, 1, 2, 3, 4, 7]))]
        conversations.append((turns, number % 4 != 3))  # every fourth without events
    no_usage = [{"calls": [{"usage": None, "tools": []}], "latency_ms": 12.3456, "index": 0}]
    no_model_call = [{"calls": [], "latency_ms": 0.4, "index": 0}]
    conversations += [(no_usage, True), (no_model_call, True), (no_usage + no_model_call, True)]
    return conversations


CONVERSATIONS = _conversations()


def _same(ours: float | None, theirs: float | None) -> bool:
    if ours is None or theirs is None:
        return ours is None and theirs is None
    return abs(ours - theirs) <= 1e-9


@pytest.mark.parametrize("name", ADK_EFFICIENCY_METRICS)
def test_every_conversation_gets_adks_values_whole_and_turn_by_turn(name: str) -> None:
    adk = ADK_EVALUATORS[name]()
    metric = REGISTRY.build(MetricSpec(name=name))
    compared = 0
    for turns, events in CONVERSATIONS:
        theirs = adk.evaluate_invocations([_adk_invocation(t, events) for t in turns])
        ours_turns = [_proctor_turn(t, events) for t in turns]
        case = make_case(*[Turn(turn_id=t.turn_id, input=t.input) for t in ours_turns])
        ours = metric.evaluate(make_ctx(case, *ours_turns))
        assert _same(ours.value, theirs.overall_score), (name, turns, ours.value, theirs.overall_score)
        per_invocation = [result.score for result in theirs.per_invocation_results]
        assert all(map(_same, ours.details["per_invocation"], per_invocation)), (name, turns)
        # Scored turn by turn (HoloDeck multi-turn), the roll-up comes to the same value.
        bound = BoundMetric(MetricSpec(name=name), metric)
        scored = [
            AgentTurn(
                **{**turn.model_dump(), "metrics": asyncio.run(score_case([bound], make_ctx(case, turn)))}
            )
            for turn in ours_turns
        ]
        (rolled,) = rollup_metrics(scored, {name: metric})
        assert _same(rolled.score, theirs.overall_score) and rolled.informational and rolled.passed
        compared += 1
    assert compared == len(CONVERSATIONS) > 60


def test_the_breakdowns_proctor_records_match_adks() -> None:
    """Token usage: ADK's input, output and total per turn and averaged; duration: the total."""
    tokens, duration = (
        adk_efficiency._TokenUsageV1Evaluator(),
        adk_efficiency._InvocationDurationV1Evaluator(),
    )
    for turns, events in CONVERSATIONS:
        invocations = [_adk_invocation(t, events) for t in turns]
        ours_turns = [_proctor_turn(t, events) for t in turns]
        ctx = make_ctx(make_case(), *ours_turns)
        theirs = tokens.evaluate_invocations(invocations).overall_token_usage_details
        ours = REGISTRY.build(MetricSpec(name="token_usage_v1")).evaluate(ctx).details["details"]
        for field in ("total_tokens", "input_tokens", "output_tokens"):
            assert _same(ours[field], getattr(theirs, field)), (field, turns)
        theirs_time = duration.evaluate_invocations(invocations).overall_duration_details
        ours_time = REGISTRY.build(MetricSpec(name="invocation_duration_v1")).evaluate(ctx).details["details"]
        assert _same(ours_time["total_seconds"], theirs_time.total_seconds)


def test_no_invocation_is_no_value_as_in_adk() -> None:
    for name, evaluator in ADK_EVALUATORS.items():
        assert evaluator().evaluate_invocations([]).overall_score is None
        assert REGISTRY.build(MetricSpec(name=name)).evaluate(make_ctx(make_case())).value is None


def _event(author: str, **fields: Any) -> Event:
    return Event(invocation_id="inv_1", author=author, **fields)


def test_the_adk_agent_counts_model_calls_and_tokens_as_adks_eval_does() -> None:
    """The ADK agent's per-event counting against ADK's own conversion of the same events."""
    usage = genai_types.GenerateContentResponseUsageMetadata
    call = genai_types.Part(
        function_call=genai_types.FunctionCall(name="roll_die", args={"sides": 6}, id="c1")
    )
    answer = genai_types.Part(
        function_response=genai_types.FunctionResponse(name="roll_die", response={"result": 4}, id="c1")
    )
    events = [
        _event("user", content=genai_types.Content(role="user", parts=[genai_types.Part(text="Roll a d6")])),
        _event(
            "dice_agent",
            content=genai_types.Content(role="model", parts=[call]),
            usage_metadata=usage(
                prompt_token_count=120, tool_use_prompt_token_count=7, candidates_token_count=9
            ),
            model_version="gemini-2.5-flash",
        ),
        _event("dice_agent", content=genai_types.Content(role="user", parts=[answer])),
        # usage without any content: ADK's eval drops the event, and with it these tokens
        _event("dice_agent", usage_metadata=usage(prompt_token_count=50, candidates_token_count=1)),
        _event(
            "dice_agent",
            content=genai_types.Content(role="model", parts=[genai_types.Part(text="You rolled a 4.")]),
            usage_metadata=usage(prompt_token_count=150, candidates_token_count=6, thoughts_token_count=30),
            model_version="gemini-2.5-flash",
        ),
    ]
    [invocation] = EvaluationGenerator.convert_events_to_eval_invocations(events)
    counted = [sum(values) for values in zip(*(model_call_of(event) for event in events), strict=True)]
    model_calls, prompt, completion = counted
    turn = AgentTurn(
        turn_id="inv_1",
        input="Roll a d6",
        tool_calls=[ToolCall(name="roll_die", args={"sides": 6})],
        usage=TokenUsage(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
        ),
        model_calls=model_calls,
    )
    ctx = make_ctx(make_case(), turn)
    for name in ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1"):
        theirs = ADK_EVALUATORS[name]().evaluate_invocations([invocation]).overall_score
        assert REGISTRY.build(MetricSpec(name=name)).evaluate(ctx).value == theirs
    assert (model_calls, prompt + completion) == (2, 120 + 7 + 9 + 150 + 6 + 30)


def test_adk_refuses_a_threshold_and_reports_the_four_on_every_eval_as_proctor_does() -> None:
    for name, evaluator in ADK_EVALUATORS.items():
        with pytest.raises(ValueError, match="does not support a threshold"):
            evaluator(EvalMetric(metric_name=name, threshold=1.0))
    appended = get_eval_metrics_from_config(AdkEvalConfig(criteria={"response_match_score": 0.8}))
    assert [m.metric_name for m in appended] == ["response_match_score", *ADK_EFFICIENCY_METRICS]
    assert all(REGISTRY.get(name).informational for name in ADK_EFFICIENCY_METRICS)
