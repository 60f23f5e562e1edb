"""Contains / NotContains on the final answer, with and without case sensitivity."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from proctor.metrics.text import Contains, NotContains
from proctor.models.case import Turn
from tests.factories import agent_turn, make_case, make_ctx


def _ctx(answer: str | None):
    return make_ctx(make_case(), agent_turn(answer))


ANSWER = "Tokyo is 22°C with CLEAR skies"


def test_contains_is_case_insensitive_by_default() -> None:
    score = Contains(values=["tokyo", "clear", "22°C"]).evaluate(_ctx(ANSWER))
    assert score.value == 1.0
    assert score.reason == "all strings present"


def test_contains_case_sensitive_rejects_another_case() -> None:
    score = Contains(values=["clear"], case_sensitive=True).evaluate(_ctx(ANSWER))
    assert score.value == 0.0
    assert score.details["missing"] == ["clear"]


def test_contains_case_sensitive_accepts_the_exact_case() -> None:
    assert Contains(values=["CLEAR"], case_sensitive=True).evaluate(_ctx(ANSWER)).value == 1.0


def test_contains_scores_the_share_of_strings_found() -> None:
    score = Contains(values=["rain", "Tokyo", "snow", "skies"]).evaluate(_ctx(ANSWER))
    assert score.value == 0.5
    assert score.details["missing"] == ["rain", "snow"]
    assert score.reason == "missing: 'rain', 'snow'"


def test_contains_folds_case_beyond_ascii() -> None:
    assert Contains(values=["straße"]).evaluate(_ctx("HAUPTSTRASSE 5")).value == 1.0


def test_contains_reads_only_the_final_turns_answer() -> None:
    case = make_case(Turn(turn_id="t1", input="a"), Turn(turn_id="t2", input="b"))
    ctx = make_ctx(case, agent_turn("Tokyo", turn_id="t1"), agent_turn("Paris", turn_id="t2"))
    assert Contains(values=["Tokyo"]).evaluate(ctx).value == 0.0


def test_contains_scores_zero_without_an_answer() -> None:
    assert Contains(values=["Tokyo"]).evaluate(_ctx(None)).value == 0.0


def test_contains_needs_at_least_one_value() -> None:
    with pytest.raises(ValidationError):
        Contains(values=[])


def test_not_contains_scores_one_when_nothing_forbidden_is_present() -> None:
    score = NotContains(values=["error", "sorry"]).evaluate(_ctx(ANSWER))
    assert score.value == 1.0
    assert score.reason == "no forbidden string present"


def test_not_contains_is_case_insensitive_by_default() -> None:
    score = NotContains(values=["tokyo"]).evaluate(_ctx(ANSWER))
    assert score.value == 0.0
    assert score.details["present"] == ["tokyo"]
    assert score.reason == "present: 'tokyo'"


def test_not_contains_case_sensitive_ignores_another_case() -> None:
    assert NotContains(values=["tokyo"], case_sensitive=True).evaluate(_ctx(ANSWER)).value == 1.0


def test_not_contains_scores_the_share_of_strings_absent() -> None:
    assert NotContains(values=["error", "Tokyo", "sorry", "skies"]).evaluate(_ctx(ANSWER)).value == 0.5


def test_not_contains_needs_at_least_one_value() -> None:
    with pytest.raises(ValidationError):
        NotContains(values=[])
