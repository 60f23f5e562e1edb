"""MaxExecutionTime: 1 within the limit, 0 beyond it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from proctor.metrics.efficiency import MaxExecutionTime
from tests.factories import agent_turn, make_case, make_ctx


def _ctx(agent_ms: float):
    return make_ctx(make_case(), agent_turn("done"), agent_ms=agent_ms)


def test_within_the_limit_scores_one() -> None:
    score = MaxExecutionTime(max_ms=100).evaluate(_ctx(90))
    assert score.value == 1.0
    assert score.reason == "agent took 90 ms (limit 100 ms)"
    assert score.details == {"agent_ms": 90}


def test_exactly_at_the_limit_scores_one() -> None:
    assert MaxExecutionTime(max_ms=100).evaluate(_ctx(100)).value == 1.0


def test_over_the_limit_scores_zero() -> None:
    assert MaxExecutionTime(max_ms=100).evaluate(_ctx(100.5)).value == 0.0
    score = MaxExecutionTime(max_ms=100).evaluate(_ctx(150))
    assert score.value == 0.0
    assert score.reason == "agent took 150 ms (limit 100 ms)"


@pytest.mark.parametrize("max_ms", [0, -5])
def test_the_limit_must_be_positive(max_ms: float) -> None:
    with pytest.raises(ValidationError, match="greater than 0"):
        MaxExecutionTime(max_ms=max_ms)
