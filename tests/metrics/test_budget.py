"""Budgets on tool calls, tokens and cost."""

from __future__ import annotations

import pytest

from models.case import MetricSpec
from models.outcome import AgentTurn, TokenUsage
from proctor.metrics import REGISTRY, MetricConfigError
from tests.factories import agent_turn, call, make_case, make_ctx


def _score(name: str, *turns: AgentTurn, **args):
    return REGISTRY.build(MetricSpec(name=name, args=args)).evaluate(make_ctx(make_case(), *turns))


def _turn(prompt: int, completion: int) -> AgentTurn:
    return AgentTurn(
        turn_id="t",
        input="x",
        response="y",
        usage=TokenUsage(
            prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
        ),
    )


def test_tool_call_count_bounds() -> None:
    turn = agent_turn("x", call("search"), call("search"), call("book"))
    assert _score("tool_call_count", turn, max=3).value == 1.0
    assert _score("tool_call_count", turn, max=2).value == 0.0
    assert _score("tool_call_count", turn, tool="search", min=2, max=2).value == 1.0
    assert _score("tool_call_count", turn, tool="book", min=2).value == 0.0


def test_tool_call_count_needs_sensible_bounds() -> None:
    with pytest.raises(MetricConfigError, match="give min, max or both"):
        REGISTRY.build(MetricSpec(name="tool_call_count"))
    with pytest.raises(MetricConfigError, match="min must not exceed max"):
        REGISTRY.build(MetricSpec(name="tool_call_count", args={"min": 3, "max": 1}))


def test_token_budget_counts_every_turn() -> None:
    assert _score("token_budget", _turn(300, 100), _turn(50, 50), max_tokens=500).value == 1.0
    over = _score("token_budget", _turn(600, 200), _turn(100, 100), max_tokens=500)
    assert over.value == pytest.approx(0.5) and over.details["tokens"] == 1000


def test_cost_from_the_price_table() -> None:
    # gpt-4o-mini: $0.15 in, $0.60 out per million -> 1M in + 0.5M out = $0.45
    result = _score("cost", _turn(1_000_000, 500_000), model="gpt-4o-mini", max_usd=0.45)
    assert result.details["usd"] == pytest.approx(0.45) and result.value == 1.0
    over = _score("cost", _turn(1_000_000, 500_000), model="gpt-4o-mini", max_usd=0.09)
    assert over.value == pytest.approx(0.2)


def test_custom_prices_price_other_models() -> None:
    prices = {"local-llama": {"input_per_million": 1.0, "output_per_million": 2.0}}
    result = _score("cost", _turn(500_000, 250_000), model="local-llama", max_usd=1.0, prices=prices)
    assert result.details["usd"] == pytest.approx(1.0) and result.value == 1.0


def test_an_unpriced_model_is_refused_with_the_known_ones() -> None:
    with pytest.raises(MetricConfigError, match="no price for model 'mystery'; known: .*gpt-4o-mini"):
        REGISTRY.build(MetricSpec(name="cost", args={"model": "mystery", "max_usd": 1}))
