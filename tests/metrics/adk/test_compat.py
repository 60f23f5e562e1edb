"""ADK's deterministic criteria, with their own semantics (Vanna's evaluators: test_vanna.py)."""

from __future__ import annotations

import json

import pytest
from rouge_score import rouge_scorer

from proctor.metrics import REGISTRY
from proctor.models.agentflow import ToolCall
from proctor.models.case import MetricSpec, Turn
from proctor.models.outcome import AgentTurn
from tests.conftest import DICE
from tests.factories import call, make_case, make_ctx


def _metric(name: str, **args):
    return REGISTRY.build(MetricSpec(name=name, args=args))


def _adk_invocations() -> list[dict]:
    data = json.loads(DICE.read_text())
    return data["eval_cases"][0]["conversation"]


def _text(content: dict | None) -> str:
    return (
        "\n".join(p["text"] for p in (content or {}).get("parts") or [] if p.get("text")) if content else ""
    )


def _adk_case():
    turns = [
        Turn(
            turn_id=inv["invocation_id"],
            input=_text(inv["user_content"]),
            expected_tool_calls=[
                ToolCall(name=t["name"], args=t["args"]) for t in inv["intermediate_data"]["tool_uses"]
            ],
            expected_response=_text(inv["final_response"]) or None,
        )
        for inv in _adk_invocations()
    ]
    return make_case(*turns)


def test_tool_trajectory_avg_score_scores_every_turn_like_adk() -> None:
    case = _adk_case()
    right = [
        AgentTurn(turn_id=t.turn_id, input=t.input, response="r", tool_calls=t.expected_tool_calls)
        for t in case.turns
    ]
    assert _metric("tool_trajectory_avg_score").evaluate(make_ctx(case, *right)).value == 1.0
    # A tool call in a turn that expects none fails that turn only: 2 of 3.
    chatty = [right[0].model_copy(update={"tool_calls": [call("roll_die", sides=6)]}), *right[1:]]
    assert _metric("tool_trajectory_avg_score").evaluate(make_ctx(case, *chatty)).value == pytest.approx(
        2 / 3
    )
    wrong_args = [*right[:2], right[2].model_copy(update={"tool_calls": [call("roll_die", sides=20)]})]
    assert _metric("tool_trajectory_avg_score").evaluate(make_ctx(case, *wrong_args)).value == pytest.approx(
        2 / 3
    )
    assert (
        _metric("tool_trajectory_avg_score", ignore_args=True).evaluate(make_ctx(case, *wrong_args)).value
        == 1.0
    )


def test_response_match_score_is_adks_rouge_over_every_turn() -> None:
    case = _adk_case()
    answers = [
        "I am an agent that rolls dice and checks primes.",
        "I roll dice of any size and check primes.",
        "Rolled a 4.",
    ]
    turns = [
        AgentTurn(turn_id=t.turn_id, input=t.input, response=a)
        for t, a in zip(case.turns, answers, strict=True)
    ]
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    expected = [
        scorer.score(_text(inv["final_response"]), answer)["rouge1"].fmeasure
        for inv, answer in zip(_adk_invocations(), answers, strict=True)
    ]
    assert expected[2] == 0.0  # ADK compares the third turn with its empty reference
    result = _metric("response_match_score").evaluate(make_ctx(case, *turns))
    assert result.value == pytest.approx(sum(expected) / 3)
