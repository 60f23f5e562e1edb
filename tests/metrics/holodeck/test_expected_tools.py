"""HoloDeck's expected-tool matchers: literal, fuzzy and regex arguments, and `count`."""

from __future__ import annotations

import pytest

from proctor.metrics.holodeck.expected_tools import check_expected_tools, match_arg
from proctor.models.case import ExpectedTool
from tests.factories import call


@pytest.mark.parametrize(
    ("matcher", "actual", "ok"),
    [
        (42, 42.0, True),  # int and float are the same number
        (True, 1, False),  # booleans are strict
        ([1, 2], [1.0, 2.0], True),
        ({"fuzzy": "1,234.5"}, "1234.50", True),
        ({"fuzzy": "Damaged Item"}, "damaged  item", True),
        ({"fuzzy": "50%"}, 0.5, True),
        ({"regex": "ORD-\\d+"}, "ORD-17", True),
        ({"regex": "ORD-\\d+"}, "xORD-17", False),  # the whole value must match
        ("Paris", "paris", False),
    ],
)
def test_argument_matchers(matcher, actual, ok: bool) -> None:
    assert match_arg(matcher, actual)[0] is ok


def test_names_match_as_substrings_and_count_needs_enough_matching_calls() -> None:
    calls = [call("search_orders", q="a"), call("search_orders", q="b")]
    assert check_expected_tools([ExpectedTool(name="search")], calls) == (True, [])
    assert check_expected_tools([ExpectedTool(name="search", count=2)], calls)[0] is True
    matched, problems = check_expected_tools([ExpectedTool(name="search", args={"q": "a"}, count=2)], calls)
    assert not matched and problems == ["expected 2 matching call(s) of search, got 1"]
    assert check_expected_tools(None, calls) == (None, [])
