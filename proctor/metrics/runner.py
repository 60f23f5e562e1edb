"""Scoring one case with its metrics: thresholds, retries, timeouts, failures as data.

A metric that raises or times out is retried `retry_on_failure` times and then recorded
with its error and no score; it never stops the other metrics unless `fail_on_error`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from proctor.calls.call_clock import limited
from proctor.judges.judge import Usage, spending
from proctor.metrics.base import Measurement, Metric, MetricContext, Score
from proctor.metrics.holodeck.response_path import with_response_at
from proctor.models.case import MetricSpec
from proctor.models.outcome import ScoredMetric
from proctor.user_code import describe_error

if TYPE_CHECKING:
    from proctor.judges import Judge

# Pause before retry n (seconds); judges hit by 429s need the later, longer waits. A server's
# own `retry-after` is honoured when longer, up to MAX_RETRY_AFTER_S.
RETRY_DELAYS_S: tuple[float, ...] = (0.5, 2.0, 5.0)
MAX_RETRY_AFTER_S = 60.0
# Judged metrics call a remote model: without an explicit `retry_on_failure` they retry twice.
DEFAULT_JUDGE_RETRIES = 2


@dataclass(frozen=True)
class BoundMetric:
    """A metric built from its spec (and, for judged metrics, its judge), ready to score cases."""

    spec: MetricSpec
    metric: Metric
    judge: Judge | None = None
    judge_error: str | None = None  # why its judge could not be made (no key): the metric's error

    @functools.cached_property
    def arguments(self) -> dict[str, Any]:
        """The metric's configuration as stored with every result: dumped once per run, not per case."""
        return self.metric.arguments()

    @property
    def threshold(self) -> float | None:
        """The pass mark on the stored 0..1 score; None for an informational metric, which has none.

        A judged metric with a `scale` may state its threshold on that scale (3.5 of 5); it is
        mapped onto 0..1 the same way as the judge's scores.
        """
        if self.metric.informational:
            return None
        threshold = self.spec.threshold
        if threshold is None:
            return self.metric.default_threshold
        scale = self.spec.scale
        if self.metric.kind == "llm" and scale and scale > 1 and threshold > 1:
            return (threshold - 1) / (scale - 1)
        return threshold

    @property
    def retries(self) -> int:
        if self.spec.retry_on_failure is not None:
            return self.spec.retry_on_failure
        return DEFAULT_JUDGE_RETRIES if self.metric.kind == "llm" else 0

    def context(self, ctx: MetricContext) -> MetricContext:
        if self.judge is None:
            return ctx
        return dataclasses.replace(ctx, judge=self.judge, scale=self.spec.scale, threshold=self.threshold)


class _RunnerTimeout(Exception):
    """The runner's own `timeout_ms` expired (a metric's own TimeoutError is reported as such)."""


def _describe(error: BaseException, timeout_ms: int | None) -> str:
    if isinstance(error, _RunnerTimeout):
        return f"timed out after {timeout_ms} ms"
    return describe_error(error)


def _delay(attempt: int, error: BaseException) -> float:
    delay = RETRY_DELAYS_S[min(attempt, len(RETRY_DELAYS_S) - 1)]
    retry_after = getattr(error, "retry_after", None)
    if isinstance(retry_after, int | float) and retry_after > delay:
        delay = min(float(retry_after), MAX_RETRY_AFTER_S)
    return delay


async def _attempt(bound: BoundMetric, ctx: MetricContext) -> Score | Measurement:
    """One try; `timeout_ms` counts the judge's calls, not their waits for a slot or for quota."""
    if bound.spec.timeout_ms is None:
        return await bound.metric.aevaluate(ctx)
    clock = None
    try:
        async with limited(bound.spec.timeout_ms / 1000) as clock:
            return await bound.metric.aevaluate(ctx)
    except TimeoutError:
        # only our own expiry is "timed out after N ms"; a TimeoutError raised inside keeps its own.
        if clock is not None and clock.expired:
            raise _RunnerTimeout from None
        raise


def _failed(bound: BoundMetric) -> dict[str, Any]:
    """How a metric that could not score is recorded: failed, unless it is informational, whose
    result never fails a case (its error is kept on the result, as ADK keeps a metric that
    could not run as NOT_EVALUATED rather than failing the case)."""
    if bound.metric.informational:
        return {"passed": True, "informational": True}
    return {"passed": False}


def _checked(bound: BoundMetric, result: Score | Measurement) -> Score | Measurement:
    """The result of the kind the metric declares: a Measurement exactly when informational."""
    if bound.metric.informational != isinstance(result, Measurement):
        wanted = "a Measurement" if bound.metric.informational else "a Score"
        raise TypeError(f"metric {bound.spec.name!r} returned {type(result).__name__}; expected {wanted}")
    return result


async def score_metric(bound: BoundMetric, ctx: MetricContext) -> ScoredMetric | None:
    """Score one metric; None when it does not apply to the case."""
    started = time.perf_counter()
    try:
        applies = bound.metric.applies_to(ctx)
    except Exception as exc:  # deciding applicability can fail too (bad case metadata): data, not a crash
        return ScoredMetric(
            metric_name=bound.spec.label or bound.spec.name,
            threshold=bound.threshold,
            scale=bound.spec.scale,
            **_failed(bound),
            error=f"could not decide whether the metric applies: {_describe(exc, None)}",
            evaluation_time_ms=int((time.perf_counter() - started) * 1000),
            args=bound.arguments,
            metric_version=bound.metric.version,
        )
    if not applies:
        return None
    if bound.judge_error is not None:
        return ScoredMetric(
            metric_name=bound.spec.label or bound.spec.name,
            threshold=bound.threshold,
            scale=bound.spec.scale,
            **_failed(bound),
            error=bound.judge_error,
            evaluation_time_ms=0,
            args=bound.arguments,
            metric_version=bound.metric.version,
        )
    ctx = bound.context(ctx)
    if bound.spec.response_path is not None and ctx.turns:
        extracted, problem = with_response_at(ctx, bound.spec.response_path)
        if extracted is None:  # HoloDeck: a failed result with the reason; the metric is not called
            return ScoredMetric(
                metric_name=bound.spec.label or bound.spec.name,
                score=0.0,
                threshold=bound.threshold,
                scale=bound.spec.scale,
                passed=False,
                reason=problem,
                evaluation_time_ms=int((time.perf_counter() - started) * 1000),
                args=bound.arguments,
                metric_version=bound.metric.version,
            )
        ctx = extracted
    attempts = 1 + bound.retries
    ledger = Usage()  # every judge answer of every attempt, failed ones included
    token = spending.set(ledger)
    try:
        score, error, raw_reply, retries = await _attempts(bound, ctx, attempts)
    finally:
        spending.reset(token)
    elapsed_ms = int((time.perf_counter() - started) * 1000)
    common = {
        "metric_name": bound.spec.label or bound.spec.name,
        "threshold": bound.threshold,
        "scale": bound.spec.scale,
        "retry_count": retries,
        "evaluation_time_ms": elapsed_ms,
        "args": bound.arguments,
        "metric_version": bound.metric.version,
        "judge_calls": ledger.calls,
        "cached_calls": ledger.cached,
        "prompt_tokens": ledger.prompt_tokens,
        "completion_tokens": ledger.completion_tokens,
        "saved_prompt_tokens": ledger.saved_prompt_tokens,
        "saved_completion_tokens": ledger.saved_completion_tokens,
    }
    if score is None:
        model = ", ".join(sorted(ledger.models)) or (bound.judge.model if bound.judge is not None else None)
        details = {"raw_reply": raw_reply[:4000]} if raw_reply else {}
        return ScoredMetric(**_failed(bound), error=error, model_used=model, details=details, **common)
    if isinstance(score, Measurement):  # a value without a verdict: never fails the case
        return ScoredMetric(
            score=score.value,
            passed=True,
            informational=True,
            details=score.details,
            reason=score.reason,
            **common,
        )
    threshold = bound.threshold if bound.threshold is not None else bound.metric.default_threshold
    passed = score.passed if score.passed is not None else score.value >= threshold
    return ScoredMetric(
        score=score.value,
        passed=passed,
        model_used=score.model_used,
        details=score.details,
        reason=score.reason,
        **common,
    )


async def _attempts(
    bound: BoundMetric, ctx: MetricContext, attempts: int
) -> tuple[Score | Measurement | None, str | None, str | None, int]:
    """The metric tried up to `attempts` times: its score (or None), last error, raw reply, retries."""
    error: str | None = None
    raw_reply: str | None = None
    score: Score | Measurement | None = None
    retries = 0
    for attempt in range(attempts):
        try:
            score = _checked(bound, await _attempt(bound, ctx))
            error = None
            break
        except Exception as exc:  # a broken metric is data, not a crash
            error = _describe(exc, bound.spec.timeout_ms)
            raw_reply = getattr(exc, "raw", None)
            if attempt + 1 < attempts:
                retries += 1
                await asyncio.sleep(_delay(attempt, exc))
    return score, error, raw_reply, retries


async def score_case(metrics: list[BoundMetric], ctx: MetricContext) -> list[ScoredMetric]:
    """Score every enabled metric in order; stop early only after a `fail_on_error` failure."""
    results: list[ScoredMetric] = []
    for bound in metrics:
        if not bound.spec.enabled:
            continue
        result = await score_metric(bound, ctx)
        if result is None:
            continue
        results.append(result)
        if result.error is not None and bound.spec.fail_on_error:
            break
    return results
