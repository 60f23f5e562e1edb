"""Trajectory, tool, text, response and time metrics: where each must pass and must fail."""

from __future__ import annotations

import pytest

from models.agentflow import MatchType
from models.case import MetricSpec, Turn
from proctor.metrics import DEFAULT_METRICS, REGISTRY, MetricConfigError, MetricRegistry
from proctor.metrics.response import rouge1_fmeasure
from proctor.metrics.trajectory import trajectory_matches
from tests.factories import agent_turn, call, make_case, make_ctx


def _metric(name: str, **args):
    return REGISTRY.build(MetricSpec(name=name, args=args))


WEATHER, FORECAST, EXTRA = (
    call("get_weather", city="Paris"),
    call("get_forecast", city="Paris", days=1),
    call("log"),
)


@pytest.mark.parametrize(
    ("match_type", "actual", "matches"),
    [
        (MatchType.EXACT, [WEATHER, FORECAST], True),
        (MatchType.EXACT, [WEATHER, EXTRA, FORECAST], False),
        (MatchType.EXACT, [FORECAST, WEATHER], False),
        (MatchType.IN_ORDER, [WEATHER, EXTRA, FORECAST], True),
        (MatchType.IN_ORDER, [FORECAST, WEATHER], False),
        (MatchType.ANY_ORDER, [FORECAST, EXTRA, WEATHER], True),
        (MatchType.ANY_ORDER, [WEATHER], False),
    ],
)
def test_match_types(match_type: MatchType, actual: list, matches: bool) -> None:
    assert trajectory_matches([WEATHER, FORECAST], actual, match_type) is matches


def test_any_order_needs_a_distinct_call_for_each_expected_call() -> None:
    assert not trajectory_matches([WEATHER, WEATHER], [WEATHER], MatchType.ANY_ORDER)
    assert trajectory_matches([WEATHER, WEATHER], [WEATHER, EXTRA, WEATHER], MatchType.ANY_ORDER)


def test_args_are_compared_unless_told_otherwise() -> None:
    other_city = call("get_weather", city="Rome")
    assert not trajectory_matches([WEATHER], [other_city], MatchType.EXACT)
    assert trajectory_matches([WEATHER], [other_city], MatchType.EXACT, check_args=False)


def test_trajectory_match_averages_turns_with_expectations() -> None:
    case = make_case(
        Turn(turn_id="t1", input="a", expected_tool_calls=[WEATHER]),
        Turn(turn_id="t2", input="b", expected_tool_calls=[FORECAST]),
        Turn(turn_id="t3", input="c"),  # no expectation: not scored
    )
    turns = [
        agent_turn("x", WEATHER, turn_id="t1"),
        agent_turn("y", WEATHER, turn_id="t2"),
        agent_turn("z", EXTRA, turn_id="t3"),
    ]
    score = _metric("trajectory_match").evaluate(make_ctx(case, *turns))
    assert score.value == 0.5 and "t2" in score.reason
    assert [t["turn_id"] for t in score.details["turns"]] == ["t1", "t2"]


def test_trajectory_match_does_not_apply_without_expectations() -> None:
    assert not _metric("trajectory_match").applies_to(make_ctx(make_case(), agent_turn("x")))


def test_a_missing_turn_counts_as_no_calls() -> None:
    case = make_case(
        Turn(turn_id="t1", input="a", expected_tool_calls=[WEATHER]),
        Turn(turn_id="t2", input="b", expected_tool_calls=[]),
    )
    assert (
        _metric("trajectory_match").evaluate(make_ctx(case, agent_turn("x", WEATHER, turn_id="t1"))).value
        == 1.0
    )


def test_tools_called_and_not_called() -> None:
    ctx = make_ctx(make_case(), agent_turn("x", WEATHER, EXTRA))
    assert _metric("tools_called", tools=["get_weather", "log"]).evaluate(ctx).value == 1.0
    assert _metric("tools_called", tools=["get_weather", "get_forecast"]).evaluate(ctx).value == 0.5
    assert _metric("tools_not_called", tools=["delete_all"]).evaluate(ctx).value == 1.0
    assert _metric("tools_not_called", tools=["log", "delete_all"]).evaluate(ctx).value == 0.5


def test_contains_and_not_contains() -> None:
    ctx = make_ctx(make_case(), agent_turn("Tokyo is 22°C with CLEAR skies"))
    assert _metric("contains", values=["clear", "22°C"]).evaluate(ctx).value == 1.0
    assert _metric("contains", values=["clear"], case_sensitive=True).evaluate(ctx).value == 0.0
    assert _metric("contains", values=["rain", "Tokyo"]).evaluate(ctx).value == 0.5
    assert _metric("not_contains", values=["error", "sorry"]).evaluate(ctx).value == 1.0
    assert _metric("not_contains", values=["tokyo"]).evaluate(ctx).value == 0.0


def test_rouge1_by_hand_and_with_stemming() -> None:
    assert rouge1_fmeasure("the cat sat", "the cat sat on the mat") == pytest.approx(2 / 3)
    assert rouge1_fmeasure("running dogs", "run dog") == 1.0
    assert rouge1_fmeasure("", "anything") == 0.0


def test_non_latin_text_is_not_stemmed() -> None:
    from proctor.metrics.response import is_mostly_latin

    assert is_mostly_latin("running dogs") and not is_mostly_latin("東京の天気は晴れです")


def test_response_match_scores_turns_with_an_expected_answer() -> None:
    case = make_case(
        Turn(turn_id="t1", input="a"), Turn(turn_id="t2", input="b", expected_response="rain tomorrow")
    )
    turns = [agent_turn("whatever", turn_id="t1"), agent_turn("rain tomorrow", turn_id="t2")]
    metric = _metric("response_match")
    assert metric.evaluate(make_ctx(case, *turns)).value == 1.0
    assert not metric.applies_to(make_ctx(make_case(), agent_turn("x")))


def test_max_execution_time() -> None:
    ctx_fast, ctx_slow = (make_ctx(make_case(), agent_turn("x"), agent_ms=ms) for ms in (90, 110))
    assert _metric("max_execution_time", max_ms=100).evaluate(ctx_fast).value == 1.0
    assert _metric("max_execution_time", max_ms=100).evaluate(ctx_slow).value == 0.0


def test_the_registry_is_explicit_and_strict() -> None:
    assert len({metric.name for metric in DEFAULT_METRICS}) == len(DEFAULT_METRICS)
    assert all(metric.summary and 0 <= metric.default_threshold <= 1 for metric in DEFAULT_METRICS)
    with pytest.raises(ValueError, match="two metrics are named 'contains'"):
        MetricRegistry([*DEFAULT_METRICS, DEFAULT_METRICS[3]])
    with pytest.raises(MetricConfigError, match="unknown metric 'contain'; valid metrics are: .*contains"):
        REGISTRY.get("contain")
    with pytest.raises(
        MetricConfigError, match="metric 'contains': case_senstive: Extra inputs are not permitted"
    ):
        REGISTRY.build(MetricSpec(name="contains", args={"values": ["x"], "case_senstive": True}))
