"""Scoring a case's metrics: thresholds, labels, retries, timeouts, fail_on_error, provenance."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

from proctor.metrics import BoundMetric, Metric, MetricContext, Score, runner, score_case, score_metric
from proctor.metrics.base import Measurement
from proctor.models.case import MetricSpec
from proctor.models.outcome import ScoredMetric
from tests.factories import agent_turn, make_case, make_ctx

# -- test doubles of metrics ---------------------------------------------------------------------


class Fixed(Metric):
    """Scores `value`, with an optional pass/fail label."""

    name = "fixed_test_metric"
    version = "7"
    value: float = 1.0
    label: bool | None = None

    def evaluate(self, ctx: MetricContext) -> Score:
        return Score(value=self.value, passed=self.label, reason="fixed")


class Flaky(Metric):
    """Raises ConnectionError `failures` times, then scores 1; counts its calls by `key`."""

    name = "flaky_test_metric"
    calls: ClassVar[dict[str, int]] = {}
    key: str
    failures: int = 0

    def evaluate(self, ctx: MetricContext) -> Score:
        Flaky.calls[self.key] = Flaky.calls.get(self.key, 0) + 1
        if Flaky.calls[self.key] <= self.failures:
            raise ConnectionError("judge unreachable")
        return Score(value=1.0)


class FlakyJudge(Flaky):
    name = "flaky_judge_test_metric"
    kind = "llm"


class Slow(Metric):
    """Sleeps `delay_s` (asynchronously), then scores 1."""

    name = "slow_test_metric"
    delay_s: float

    async def aevaluate(self, ctx: MetricContext) -> Score:
        await asyncio.sleep(self.delay_s)
        return Score(value=1.0)


class NotApplicable(Fixed):
    name = "not_applicable_test_metric"

    def applies_to(self, ctx: MetricContext) -> bool:
        return False


class LlmScaled(Fixed):
    name = "llm_scaled_test_metric"
    kind = "llm"


class RaisesInAppliesTo(Fixed):
    name = "raises_in_applies_to_test_metric"

    def applies_to(self, ctx: MetricContext) -> bool:
        raise KeyError("expected_outcome")


class RaisesTimeoutError(Metric):
    """A metric whose own I/O times out (a socket read, say): TimeoutError, no runner timeout."""

    name = "raises_timeout_test_metric"

    def evaluate(self, ctx: MetricContext) -> Score:
        raise TimeoutError("read timed out")


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "RETRY_DELAYS_S", (0.0, 0.0, 0.0))
    Flaky.calls.clear()


def _bound(metric: Metric, **spec) -> BoundMetric:
    return BoundMetric(MetricSpec(name=metric.name, **spec), metric)


def _ctx() -> MetricContext:
    return make_ctx(make_case(), agent_turn("done"))


def _score(bound: BoundMetric) -> ScoredMetric | None:
    return asyncio.run(score_metric(bound, _ctx()))


def _score_case(*bound: BoundMetric) -> list[ScoredMetric]:
    return asyncio.run(score_case(list(bound), _ctx()))


# -- thresholds and labels -----------------------------------------------------------------------


def test_without_a_threshold_in_the_spec_the_metrics_default_applies() -> None:
    result = _score(_bound(Fixed(value=0.9)))
    assert (result.threshold, result.score, result.passed) == (1.0, 0.9, False)


def test_the_threshold_in_the_spec_overrides_the_default() -> None:
    result = _score(_bound(Fixed(value=0.9), threshold=0.5))
    assert (result.threshold, result.score, result.passed) == (0.5, 0.9, True)


def test_a_score_equal_to_the_threshold_passes() -> None:
    assert _score(_bound(Fixed(value=0.7), threshold=0.7)).passed is True


def test_a_score_just_below_the_threshold_fails() -> None:
    assert _score(_bound(Fixed(value=0.69), threshold=0.7)).passed is False


def test_a_pass_label_overrides_a_low_score() -> None:
    result = _score(_bound(Fixed(value=0.1, label=True), threshold=0.7))
    assert (result.score, result.passed) == (0.1, True)


def test_a_fail_label_overrides_a_high_score() -> None:
    result = _score(_bound(Fixed(value=1.0, label=False), threshold=0.7))
    assert (result.score, result.passed) == (1.0, False)


def test_a_judged_metrics_threshold_on_its_scale_is_mapped_onto_0_to_1() -> None:
    result = _score(_bound(LlmScaled(value=0.7), threshold=3.5, scale=5))
    assert result.threshold == pytest.approx(0.625)
    assert result.passed is True


def test_a_deterministic_metrics_threshold_is_not_mapped() -> None:
    result = _score(_bound(Fixed(value=1.0), threshold=3.5, scale=5))
    assert (result.threshold, result.passed) == (3.5, False)


# -- retries ---------------------------------------------------------------------------------------


def test_a_failing_attempt_is_retried_and_counted() -> None:
    result = _score(_bound(Flaky(key="a", failures=2), retry_on_failure=3))
    assert (result.score, result.passed, result.error, result.retry_count) == (1.0, True, None, 2)
    assert Flaky.calls["a"] == 3


def test_after_the_last_retry_the_error_is_recorded_without_a_score() -> None:
    result = _score(_bound(Flaky(key="a", failures=99), retry_on_failure=2))
    assert (result.score, result.passed, result.retry_count) == (None, False, 2)
    assert result.error == "ConnectionError: judge unreachable"
    assert Flaky.calls["a"] == 3


def test_a_deterministic_metric_is_not_retried_unless_asked() -> None:
    result = _score(_bound(Flaky(key="a", failures=1)))
    assert (result.score, result.retry_count) == (None, 0)
    assert Flaky.calls["a"] == 1


def test_a_judged_metric_is_retried_twice_by_default() -> None:
    result = _score(_bound(FlakyJudge(key="j", failures=2)))
    assert (result.score, result.retry_count) == (1.0, runner.DEFAULT_JUDGE_RETRIES)
    assert runner.DEFAULT_JUDGE_RETRIES == 2


def test_retries_wait_the_backoff_delays_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []

    async def record(delay: float) -> None:
        waits.append(delay)

    monkeypatch.setattr(runner, "RETRY_DELAYS_S", (0.5, 2.0, 5.0))
    monkeypatch.setattr(runner.asyncio, "sleep", record)
    _score(_bound(Flaky(key="a", failures=99), retry_on_failure=3))
    assert waits == [0.5, 2.0, 5.0]


def test_the_last_backoff_delay_repeats_beyond_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "RETRY_DELAYS_S", (0.5, 2.0))
    assert [runner._delay(attempt, ValueError()) for attempt in range(4)] == [0.5, 2.0, 2.0, 2.0]


def test_a_longer_retry_after_is_honoured_up_to_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    class RateLimited(Exception):
        def __init__(self, retry_after: float) -> None:
            self.retry_after = retry_after

    monkeypatch.setattr(runner, "RETRY_DELAYS_S", (0.5, 2.0, 5.0))
    assert runner._delay(0, RateLimited(0.1)) == 0.5
    assert runner._delay(0, RateLimited(7)) == 7.0
    assert runner._delay(0, RateLimited(600)) == runner.MAX_RETRY_AFTER_S


# -- timeouts --------------------------------------------------------------------------------------


def test_a_slow_metric_times_out() -> None:
    result = _score(_bound(Slow(delay_s=5.0), timeout_ms=20))
    assert (result.score, result.passed, result.error) == (None, False, "timed out after 20 ms")


def test_a_timeout_is_retried_like_any_failure() -> None:
    result = _score(_bound(Slow(delay_s=5.0), timeout_ms=20, retry_on_failure=1))
    assert (result.error, result.retry_count) == ("timed out after 20 ms", 1)


def test_a_metric_within_its_timeout_is_scored() -> None:
    result = _score(_bound(Slow(delay_s=0.0), timeout_ms=2000))
    assert (result.score, result.error) == (1.0, None)


def test_a_metrics_own_timeout_error_without_a_spec_timeout_is_not_reported_as_none_ms() -> None:
    result = _score(_bound(RaisesTimeoutError()))
    assert result.score is None and result.error is not None
    assert "None ms" not in result.error


# -- score_case ------------------------------------------------------------------------------------


def test_fail_on_error_stops_the_remaining_metrics() -> None:
    results = _score_case(_bound(Flaky(key="a", failures=99), fail_on_error=True), _bound(Flaky(key="b")))
    assert [r.args["key"] for r in results] == ["a"]
    assert "b" not in Flaky.calls


def test_without_fail_on_error_the_remaining_metrics_still_run() -> None:
    results = _score_case(_bound(Flaky(key="a", failures=99)), _bound(Flaky(key="b")))
    assert [(r.args["key"], r.passed, r.error is None) for r in results] == [
        ("a", False, False),
        ("b", True, True),
    ]


def test_fail_on_error_does_not_stop_on_a_low_score() -> None:
    results = _score_case(_bound(Fixed(value=0.0), fail_on_error=True), _bound(Flaky(key="b")))
    assert [r.passed for r in results] == [False, True]


def test_disabled_metrics_are_skipped() -> None:
    results = _score_case(_bound(Flaky(key="a"), enabled=False), _bound(Flaky(key="b")))
    assert [r.args["key"] for r in results] == ["b"]
    assert "a" not in Flaky.calls


def test_a_metric_that_does_not_apply_is_not_recorded() -> None:
    assert _score(_bound(NotApplicable())) is None
    assert [r.metric_name for r in _score_case(_bound(NotApplicable()), _bound(Fixed()))] == [
        "fixed_test_metric"
    ]


def test_the_metrics_args_and_version_are_recorded() -> None:
    result = _score(_bound(Fixed(value=0.5, label=True), threshold=0.4))
    assert result.metric_name == "fixed_test_metric"
    assert result.args == {"value": 0.5, "label": True}
    assert result.metric_version == "7"
    assert result.reason == "fixed"


def test_args_and_version_are_recorded_for_a_failed_metric_too() -> None:
    result = _score(_bound(Flaky(key="z", failures=99)))
    assert result.args == {"key": "z", "failures": 99}
    assert result.metric_version == "1"


def test_a_metric_whose_applies_to_raises_is_recorded_as_an_error() -> None:
    results = _score_case(_bound(RaisesInAppliesTo()), _bound(Fixed()))
    assert [(r.metric_name, r.score, r.passed) for r in results] == [
        ("raises_in_applies_to_test_metric", None, False),
        ("fixed_test_metric", 1.0, True),
    ]
    assert "KeyError" in results[0].error


# -- informational metrics: a value, never a verdict -------------------------------------------


class Counted(Metric):
    """Informational: measures `value` (any size: tokens, seconds), or raises when `broken`."""

    name = "counted_test_metric"
    informational = True
    value: float | None = 1234.0
    broken: bool = False

    def evaluate(self, ctx: MetricContext) -> Measurement:
        if self.broken:
            raise ValueError("no turns recorded")
        return Measurement(value=self.value, reason="counted")


class CountedWithAScore(Counted):
    name = "counted_with_a_score_test_metric"

    def evaluate(self, ctx: MetricContext) -> Score:  # type: ignore[override]
        return Score(value=1.0)


class FixedWithAMeasurement(Fixed):
    name = "fixed_with_a_measurement_test_metric"

    def evaluate(self, ctx: MetricContext) -> Measurement:  # type: ignore[override]
        return Measurement(value=3.0)


def test_an_informational_value_is_stored_as_it_is_without_a_threshold_or_a_verdict() -> None:
    result = _score(_bound(Counted()))
    assert (result.score, result.threshold, result.informational, result.reason) == (
        1234.0,
        None,
        True,
        "counted",
    )
    assert result.passed is True  # by convention: it never fails a case
    assert _score(_bound(Counted(value=None))).score is None  # n/a, not zero


def test_an_informational_metric_that_breaks_keeps_its_error_and_still_gives_no_verdict() -> None:
    result = _score(_bound(Counted(broken=True)))
    assert result.error == "ValueError: no turns recorded" and result.score is None
    assert result.informational and result.passed


def test_a_metric_returning_the_other_kind_of_result_is_an_error_not_a_verdict() -> None:
    measured = _score(_bound(CountedWithAScore()))
    assert "returned Score; expected a Measurement" in measured.error and measured.informational
    scored = _score(_bound(FixedWithAMeasurement()))
    assert "returned Measurement; expected a Score" in scored.error and scored.passed is False


def test_a_verdict_metric_is_never_marked_informational() -> None:
    result = _score(_bound(Fixed(value=0.4)))
    assert not result.informational and result.passed is False and result.threshold == 1.0
