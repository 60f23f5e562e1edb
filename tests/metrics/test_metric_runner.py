"""Scoring a case: thresholds, retries, timeouts and failures recorded as data."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

from models.case import MetricSpec
from proctor.metrics import BoundMetric, Metric, MetricContext, Score, runner, score_case
from tests.factories import agent_turn, make_case, make_ctx


class Flaky(Metric):
    """Fails `failures` times, then scores `value`; counts its calls per instance id."""

    name = "flaky_test_metric"
    calls: ClassVar[dict[str, int]] = {}
    key: str
    failures: int = 0
    value: float = 1.0
    delay_s: float = 0.0
    label: bool | None = None

    async def aevaluate(self, ctx: MetricContext) -> Score:
        Flaky.calls[self.key] = Flaky.calls.get(self.key, 0) + 1
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if Flaky.calls[self.key] <= self.failures:
            raise ConnectionError("judge unreachable")
        return Score(value=self.value, passed=self.label)


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "RETRY_DELAYS_S", (0.0, 0.0, 0.0))
    Flaky.calls.clear()


def _run(*bound: BoundMetric):
    return asyncio.run(score_case(list(bound), make_ctx(make_case(), agent_turn("x"))))


def _bound(key: str, *, failures: int = 0, value: float = 1.0, delay_s: float = 0.0, label=None, **spec):
    metric = Flaky(key=key, failures=failures, value=value, delay_s=delay_s, label=label)
    return BoundMetric(MetricSpec(name="flaky_test_metric", **spec), metric)


def test_the_threshold_decides_unless_the_metric_gives_a_label() -> None:
    [low, high, labelled] = _run(
        _bound("a", value=0.6, threshold=0.7),
        _bound("b", value=0.7, threshold=0.7),
        _bound("c", value=0.1, threshold=0.7, label=True),
    )
    assert (low.passed, high.passed, labelled.passed) == (False, True, True)
    assert low.threshold == 0.7 and low.args["key"] == "a" and low.metric_version == "1"


def test_a_failure_is_retried_and_counted() -> None:
    [result] = _run(_bound("a", failures=2, retry_on_failure=2))
    assert (result.score, result.retry_count, result.error) == (1.0, 2, None)
    assert Flaky.calls["a"] == 3


def test_after_the_last_retry_the_error_is_recorded_without_a_score() -> None:
    [result] = _run(_bound("a", failures=5, retry_on_failure=1))
    assert (result.score, result.passed, result.retry_count) == (None, False, 1)
    assert result.error == "ConnectionError: judge unreachable"


def test_a_slow_metric_times_out() -> None:
    [result] = _run(_bound("a", delay_s=1.0, timeout_ms=50))
    assert result.error == "timed out after 50 ms" and result.score is None


def test_fail_on_error_stops_the_cases_other_metrics() -> None:
    results = _run(_bound("a", failures=9, fail_on_error=True), _bound("b"))
    assert [r.args["key"] for r in results] == ["a"] and "b" not in Flaky.calls
    results = _run(_bound("c", failures=9), _bound("d"))
    assert [(r.args["key"], r.passed) for r in results] == [("c", False), ("d", True)]


def test_disabled_metrics_are_skipped() -> None:
    assert _run(_bound("a", enabled=False)) == []


def test_a_servers_retry_after_is_honoured_up_to_a_limit() -> None:
    class RateLimited(Exception):
        retry_after = 3.0

    assert runner._delay(0, RateLimited()) == 3.0
    RateLimited.retry_after = 600.0
    assert runner._delay(0, RateLimited()) == runner.MAX_RETRY_AFTER_S
    assert runner._delay(1, ValueError()) == runner.RETRY_DELAYS_S[1]
