"""Budgets on tool calls, tokens and cost."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from proctor.metrics.base import Metric, Score
from proctor.metrics.budget import BUDGET_METRICS, DEFAULT_PRICES, Cost, TokenBudget, ToolCallCount
from proctor.models.outcome import AgentTurn, TokenUsage
from tests.factories import agent_turn, call, make_case, make_ctx


def _score(metric: Metric, *turns: AgentTurn) -> Score:
    return metric.evaluate(make_ctx(make_case(), *turns))


def _turn(prompt: int = 0, completion: int = 0, total: int | None = None) -> AgentTurn:
    usage = TokenUsage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion if total is None else total,
    )
    return AgentTurn(turn_id="t", input="x", response="y", usage=usage)


def test_every_metric_has_a_unique_name_and_a_summary() -> None:
    assert [metric.name for metric in BUDGET_METRICS] == ["tool_call_count", "token_budget", "cost"]
    assert all(metric.summary for metric in BUDGET_METRICS)


# -- tool calls --------------------------------------------------------------------------------


def test_tool_call_count_bounds_all_calls() -> None:
    turn = agent_turn("x", call("search"), call("search"), call("book"))
    within = _score(ToolCallCount(max=3), turn)
    assert within.value == 1.0 and within.details["count"] == 3
    assert _score(ToolCallCount(max=2), turn).value == 0.0
    assert _score(ToolCallCount(min=4), turn).value == 0.0
    assert _score(ToolCallCount(min=1), agent_turn("no tools")).value == 0.0


def test_tool_call_count_of_one_tool_over_all_turns() -> None:
    turns = (agent_turn("x", call("search"), turn_id="t1"), agent_turn("y", call("search"), call("book")))
    assert _score(ToolCallCount(tool="search", min=2, max=2), *turns).value == 1.0
    assert _score(ToolCallCount(tool="book", min=2), *turns).value == 0.0
    assert _score(ToolCallCount(tool="cancel", max=0), *turns).value == 1.0


def test_tool_call_count_needs_sensible_bounds() -> None:
    with pytest.raises(ValidationError, match="give min, max or both"):
        ToolCallCount()
    with pytest.raises(ValidationError, match="min must not exceed max"):
        ToolCallCount(min=3, max=1)
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        ToolCallCount(max=-1)


# -- tokens ------------------------------------------------------------------------------------


def test_token_budget_counts_every_turn() -> None:
    assert _score(TokenBudget(max_tokens=500), _turn(300, 100), _turn(50, 50)).value == 1.0
    over = _score(TokenBudget(max_tokens=500), _turn(600, 200), _turn(100, 100))
    assert over.value == pytest.approx(0.5) and over.details["tokens"] == 1000


def test_token_budget_counts_a_bare_total() -> None:
    assert _score(TokenBudget(max_tokens=100), _turn(total=400)).value == pytest.approx(0.25)


def test_token_budget_does_not_apply_without_reported_tokens() -> None:
    metric = TokenBudget(max_tokens=100)
    assert not metric.applies_to(make_ctx(make_case(), agent_turn("x")))
    assert metric.applies_to(make_ctx(make_case(), _turn(total=1)))


def test_token_budget_must_be_positive() -> None:
    with pytest.raises(ValidationError, match="max_tokens"):
        TokenBudget(max_tokens=0)


# -- cost --------------------------------------------------------------------------------------


def test_cost_from_the_built_in_prices() -> None:
    # gpt-4o-mini: $0.15 in, $0.60 out per million; 1M in + 0.5M out = $0.15 + $0.30 = $0.45
    within = _score(Cost(model="gpt-4o-mini", max_usd=0.45), _turn(1_000_000, 500_000))
    assert within.details["usd"] == pytest.approx(0.45) and within.value == 1.0
    over = _score(Cost(model="gpt-4o-mini", max_usd=0.09), _turn(1_000_000, 500_000))
    assert over.value == pytest.approx(0.2) and over.details["usd"] == pytest.approx(0.45)


def test_cost_sums_turns_and_prices_input_and_output_apart() -> None:
    # gpt-4.1: $2 in, $8 out per million; (1000 + 3000) in, (500 + 0) out = $0.008 + $0.004
    score = _score(Cost(model="gpt-4.1", max_usd=0.01), _turn(1000, 500), _turn(3000, 0))
    assert score.details["usd"] == pytest.approx(0.012)
    assert score.value == pytest.approx(0.01 / 0.012)


def test_custom_prices_add_and_override_models() -> None:
    local = {"local-llama": {"input_per_million": 1.0, "output_per_million": 2.0}}
    score = _score(Cost(model="local-llama", max_usd=1.0, prices=local), _turn(500_000, 250_000))
    assert score.details["usd"] == pytest.approx(1.0) and score.value == 1.0
    cheaper = {"gpt-4o": {"input_per_million": 0.0, "output_per_million": 0.0}}
    assert _score(Cost(model="gpt-4o", max_usd=0.01, prices=cheaper), _turn(10**6, 10**6)).value == 1.0


def test_an_unpriced_model_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValidationError, match="no price for model 'mystery'; known: .*gpt-4o-mini") as error:
        Cost(model="mystery", max_usd=1)
    assert all(model in str(error.value) for model in DEFAULT_PRICES)


def test_prices_and_budget_are_validated() -> None:
    with pytest.raises(ValidationError, match="input_per_million"):
        Cost(model="m", max_usd=1, prices={"m": {"input_per_million": -1, "output_per_million": 1}})
    with pytest.raises(ValidationError, match="Extra inputs"):
        Cost(
            model="m", max_usd=1, prices={"m": {"input": 1, "input_per_million": 1, "output_per_million": 1}}
        )
    with pytest.raises(ValidationError, match="max_usd"):
        Cost(model="gpt-4o", max_usd=0)


def test_cost_does_not_apply_without_prompt_or_completion_tokens() -> None:
    metric = Cost(model="gpt-4o", max_usd=1)
    assert not metric.applies_to(make_ctx(make_case(), agent_turn("x")))
    assert not metric.applies_to(make_ctx(make_case(), _turn(total=100)))  # a bare total cannot be priced
    assert metric.applies_to(make_ctx(make_case(), _turn(10, 0)))
