"""Tool trajectory matching: the three match types, argument checking and per-turn averaging."""

from __future__ import annotations

import json

import pytest

from proctor.metrics import REGISTRY
from proctor.metrics.trajectory import TrajectoryMatch, trajectory_matches
from proctor.models.agentflow import MatchType, ToolCall
from proctor.models.case import MetricSpec, Turn
from tests.conftest import DICE
from tests.factories import agent_turn, call, make_case, make_ctx

WEATHER = call("get_weather", city="Paris")
FORECAST = call("get_forecast", city="Paris", days=1)
LOG = call("log")


# -- trajectory_matches -----------------------------------------------------------------


def test_exact_accepts_the_same_calls_in_the_same_order() -> None:
    assert trajectory_matches([WEATHER, FORECAST], [WEATHER, FORECAST], MatchType.EXACT)


def test_exact_rejects_an_extra_call() -> None:
    assert not trajectory_matches([WEATHER, FORECAST], [WEATHER, LOG, FORECAST], MatchType.EXACT)
    assert not trajectory_matches([WEATHER], [WEATHER, LOG], MatchType.EXACT)


def test_exact_rejects_a_missing_call() -> None:
    assert not trajectory_matches([WEATHER, FORECAST], [WEATHER], MatchType.EXACT)


def test_exact_rejects_the_same_calls_in_another_order() -> None:
    assert not trajectory_matches([WEATHER, FORECAST], [FORECAST, WEATHER], MatchType.EXACT)


def test_exact_with_no_expected_calls_means_no_call_at_all() -> None:
    assert trajectory_matches([], [], MatchType.EXACT)
    assert not trajectory_matches([], [LOG], MatchType.EXACT)


def test_in_order_allows_extra_calls_between_and_around() -> None:
    assert trajectory_matches([WEATHER, FORECAST], [LOG, WEATHER, LOG, FORECAST, LOG], MatchType.IN_ORDER)


def test_in_order_rejects_the_expected_calls_reversed() -> None:
    assert not trajectory_matches([WEATHER, FORECAST], [FORECAST, WEATHER], MatchType.IN_ORDER)


def test_in_order_rejects_a_missing_call() -> None:
    assert not trajectory_matches([WEATHER, FORECAST], [WEATHER, LOG], MatchType.IN_ORDER)


def test_in_order_needs_one_actual_call_per_repeated_expected_call() -> None:
    assert not trajectory_matches([WEATHER, WEATHER], [WEATHER], MatchType.IN_ORDER)
    assert trajectory_matches([WEATHER, WEATHER], [WEATHER, LOG, WEATHER], MatchType.IN_ORDER)


def test_any_order_accepts_any_order_with_extra_calls() -> None:
    assert trajectory_matches([WEATHER, FORECAST], [FORECAST, LOG, WEATHER], MatchType.ANY_ORDER)


def test_any_order_rejects_a_missing_call() -> None:
    assert not trajectory_matches([WEATHER, FORECAST], [FORECAST, LOG], MatchType.ANY_ORDER)


def test_any_order_needs_a_distinct_actual_call_for_each_identical_expected_call() -> None:
    assert not trajectory_matches([WEATHER, WEATHER], [WEATHER], MatchType.ANY_ORDER)
    assert trajectory_matches([WEATHER, WEATHER], [WEATHER, LOG, WEATHER], MatchType.ANY_ORDER)


@pytest.mark.parametrize("match_type", list(MatchType))
def test_args_are_compared_by_default(match_type: MatchType) -> None:
    assert not trajectory_matches([WEATHER], [call("get_weather", city="Rome")], match_type)


@pytest.mark.parametrize("match_type", list(MatchType))
def test_check_args_false_ignores_args_but_not_names(match_type: MatchType) -> None:
    assert trajectory_matches([WEATHER], [call("get_weather", city="Rome")], match_type, check_args=False)
    assert not trajectory_matches(
        [WEATHER], [call("get_forecast", city="Paris")], match_type, check_args=False
    )


def test_call_ids_and_results_do_not_take_part_in_matching() -> None:
    actual = ToolCall(name="get_weather", args={"city": "Paris"}, call_id="c-17", result={"temp": 21})
    assert trajectory_matches([WEATHER], [actual], MatchType.EXACT)


# -- TrajectoryMatch ----------------------------------------------------------------------


def _turns(*expected: list[ToolCall] | None) -> list[Turn]:
    return [
        Turn(turn_id=f"t{i}", input=f"message {i}", expected_tool_calls=calls)
        for i, calls in enumerate(expected, start=1)
    ]


def test_trajectory_match_scores_one_when_every_turn_matches() -> None:
    case = make_case(*_turns([WEATHER], [FORECAST]))
    ctx = make_ctx(case, agent_turn("a", WEATHER, turn_id="t1"), agent_turn("b", FORECAST, turn_id="t2"))
    score = TrajectoryMatch().evaluate(ctx)
    assert score.value == 1.0
    assert score.reason == "all 2 turn(s) matched (EXACT)"


def test_trajectory_match_scores_zero_and_names_the_turn_when_nothing_matches() -> None:
    case = make_case(*_turns([WEATHER]))
    score = TrajectoryMatch().evaluate(make_ctx(case, agent_turn("a", FORECAST, turn_id="t1")))
    assert score.value == 0.0
    assert score.reason == "trajectory mismatch (EXACT) in turn(s): t1"


def test_trajectory_match_averages_binary_verdicts_over_turns() -> None:
    case = make_case(*_turns([WEATHER], [FORECAST]))
    ctx = make_ctx(case, agent_turn("a", WEATHER, turn_id="t1"), agent_turn("b", LOG, turn_id="t2"))
    score = TrajectoryMatch().evaluate(ctx)
    assert score.value == 0.5
    assert [(t["turn_id"], t["matched"]) for t in score.details["turns"]] == [("t1", True), ("t2", False)]


def test_turns_without_expected_calls_are_not_scored() -> None:
    case = make_case(*_turns([WEATHER], None, [FORECAST]))
    ctx = make_ctx(
        case,
        agent_turn("a", WEATHER, turn_id="t1"),
        agent_turn("b", LOG, LOG, turn_id="t2"),
        agent_turn("c", LOG, turn_id="t3"),
    )
    score = TrajectoryMatch().evaluate(ctx)
    assert score.value == 0.5
    assert [t["turn_id"] for t in score.details["turns"]] == ["t1", "t3"]


def test_trajectory_match_does_not_apply_when_no_turn_has_expectations() -> None:
    ctx = make_ctx(make_case(*_turns(None, None)), agent_turn("a", WEATHER))
    assert TrajectoryMatch().applies_to(ctx) is False


def test_an_empty_expected_trajectory_is_an_expectation() -> None:
    case = make_case(*_turns([]))
    metric = TrajectoryMatch()
    assert metric.applies_to(make_ctx(case, agent_turn("a"))) is True
    assert metric.evaluate(make_ctx(case, agent_turn("a", turn_id="t1"))).value == 1.0
    assert metric.evaluate(make_ctx(case, agent_turn("a", LOG, turn_id="t1"))).value == 0.0


def test_a_turn_the_agent_never_reached_counts_as_no_calls() -> None:
    case = make_case(*_turns([WEATHER], [FORECAST]))
    assert TrajectoryMatch().evaluate(make_ctx(case, agent_turn("a", WEATHER, turn_id="t1"))).value == 0.5


def test_trajectory_match_uses_its_match_type() -> None:
    case = make_case(*_turns([WEATHER, FORECAST]))
    ctx = make_ctx(case, agent_turn("a", WEATHER, LOG, FORECAST, turn_id="t1"))
    assert TrajectoryMatch(match_type=MatchType.EXACT).evaluate(ctx).value == 0.0
    assert TrajectoryMatch(match_type=MatchType.IN_ORDER).evaluate(ctx).value == 1.0


def test_trajectory_match_with_check_args_false_ignores_args() -> None:
    case = make_case(*_turns([WEATHER]))
    ctx = make_ctx(case, agent_turn("a", call("get_weather", city="Rome"), turn_id="t1"))
    assert TrajectoryMatch().evaluate(ctx).value == 0.0
    assert TrajectoryMatch(check_args=False).evaluate(ctx).value == 1.0


def test_the_registry_reads_a_hand_written_match_type() -> None:
    metric = REGISTRY.build(MetricSpec(name="trajectory_match", args={"match_type": "any-order"}))
    assert metric.match_type is MatchType.ANY_ORDER


# -- ADK's tool_trajectory_avg_score on an ADK-format dice conversation ---------------------------------


def _roll_die_invocations() -> list[dict]:
    data = json.loads(DICE.read_text())
    [eval_case] = data["eval_cases"]
    return eval_case["conversation"]


def _roll_die_case():
    turns = [
        Turn(
            turn_id=inv["invocation_id"],
            input=inv["user_content"]["parts"][0]["text"],
            expected_tool_calls=[
                ToolCall(name=use["name"], args=use["args"] or {})
                for use in inv["intermediate_data"]["tool_uses"]
            ],
        )
        for inv in _roll_die_invocations()
    ]
    return make_case(*turns)


def _faithful_turns(case) -> list:
    return [agent_turn("ok", *turn.expected_tool_calls, turn_id=turn.turn_id) for turn in case.turns]


def test_roll_die_fixture_has_a_tool_free_turn_and_a_tool_turn() -> None:
    case = _roll_die_case()
    assert [len(turn.expected_tool_calls) for turn in case.turns] == [0, 0, 1]
    assert case.turns[2].expected_tool_calls == [call("roll_die", sides=6)]


def test_adk_trajectory_scores_one_when_every_invocation_matches() -> None:
    case = _roll_die_case()
    assert TrajectoryMatch().evaluate(make_ctx(case, *_faithful_turns(case))).value == 1.0


def test_adk_trajectory_with_wrong_args_in_one_invocation_scores_two_thirds() -> None:
    case = _roll_die_case()
    turns = _faithful_turns(case)
    turns[2] = agent_turn("ok", call("roll_die", sides=20), turn_id=turns[2].turn_id)
    assert TrajectoryMatch().evaluate(make_ctx(case, *turns)).value == pytest.approx(2 / 3)


def test_adk_trajectory_with_a_call_where_none_was_expected_scores_two_thirds() -> None:
    case = _roll_die_case()
    turns = _faithful_turns(case)
    turns[0] = agent_turn("ok", call("roll_die", sides=6), turn_id=turns[0].turn_id)
    assert TrajectoryMatch().evaluate(make_ctx(case, *turns)).value == pytest.approx(2 / 3)
