"""Which tools were called: tools that must be called, tools that must not, HoloDeck's tools_matched."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from proctor.metrics.tools import ToolsCalled, ToolsNotCalled, tools_matched
from proctor.models.case import Turn
from tests.factories import agent_turn, call, make_case, make_ctx


def _ctx(*tool_names: str):
    return make_ctx(make_case(), agent_turn("done", *(call(name) for name in tool_names)))


def test_tools_called_scores_one_when_every_tool_was_called() -> None:
    score = ToolsCalled(tools=["search", "fetch"]).evaluate(_ctx("fetch", "search", "log"))
    assert score.value == 1.0
    assert score.reason == "all expected tools called"


def test_tools_called_scores_the_share_of_tools_called() -> None:
    score = ToolsCalled(tools=["search", "fetch"]).evaluate(_ctx("search"))
    assert score.value == 0.5
    assert score.details["missing"] == ["fetch"]
    assert score.reason == "not called: fetch"


def test_tools_called_scores_zero_when_no_tool_was_called() -> None:
    assert ToolsCalled(tools=["search", "fetch"]).evaluate(_ctx()).value == 0.0


def test_tools_called_counts_calls_from_every_turn() -> None:
    case = make_case(Turn(turn_id="t1", input="a"), Turn(turn_id="t2", input="b"))
    ctx = make_ctx(
        case, agent_turn("x", call("search"), turn_id="t1"), agent_turn("y", call("fetch"), turn_id="t2")
    )
    assert ToolsCalled(tools=["search", "fetch"]).evaluate(ctx).value == 1.0


def test_tools_called_needs_at_least_one_tool() -> None:
    with pytest.raises(ValidationError):
        ToolsCalled(tools=[])


def test_tools_not_called_scores_one_when_no_named_tool_was_called() -> None:
    score = ToolsNotCalled(tools=["delete_all", "drop_table"]).evaluate(_ctx("search"))
    assert score.value == 1.0
    assert score.reason == "no forbidden tool called"


def test_tools_not_called_scores_zero_when_every_named_tool_was_called() -> None:
    score = ToolsNotCalled(tools=["delete_all"]).evaluate(_ctx("search", "delete_all"))
    assert score.value == 0.0
    assert score.details["called_forbidden"] == ["delete_all"]
    assert score.reason == "called: delete_all"


def test_tools_not_called_scores_the_share_of_tools_left_alone() -> None:
    score = ToolsNotCalled(tools=["delete_all", "drop_table", "shutdown", "reboot"]).evaluate(
        _ctx("reboot", "search")
    )
    assert score.value == 0.75


def test_tools_not_called_needs_at_least_one_tool() -> None:
    with pytest.raises(ValidationError):
        ToolsNotCalled(tools=[])


def test_tools_matched_is_none_when_no_tools_are_expected() -> None:
    assert tools_matched(None, ["search"]) is None


def test_tools_matched_when_every_expected_tool_was_called() -> None:
    assert tools_matched(["search", "fetch"], ["fetch", "log", "search", "search"]) is True


def test_tools_matched_fails_when_an_expected_tool_was_not_called() -> None:
    assert tools_matched(["search", "fetch"], ["search"]) is False


def test_tools_matched_with_an_empty_expectation_is_true() -> None:
    assert tools_matched([], ["anything"]) is True
