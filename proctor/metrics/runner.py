"""Scoring one case with its metrics: thresholds, retries, timeouts, failures as data.

A metric that raises or times out is retried `retry_on_failure` times and then recorded
with its error and no score; it never stops the other metrics unless `fail_on_error`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from models.case import MetricSpec
from models.outcome import ScoredMetric
from proctor.metrics.base import Metric, MetricContext, Score

# Pause before retry n (seconds); judges hit by 429s need the later, longer waits.
RETRY_DELAYS_S: tuple[float, ...] = (0.5, 2.0, 5.0)


@dataclass(frozen=True)
class BoundMetric:
    """A metric built from its spec, ready to score cases."""

    spec: MetricSpec
    metric: Metric

    @property
    def threshold(self) -> float:
        return self.spec.threshold if self.spec.threshold is not None else self.metric.default_threshold


def _describe(error: BaseException, timeout_ms: int | None) -> str:
    if isinstance(error, TimeoutError):
        return f"timed out after {timeout_ms} ms"
    return f"{type(error).__name__}: {error}"


async def _attempt(bound: BoundMetric, ctx: MetricContext) -> Score:
    call = bound.metric.aevaluate(ctx)
    if bound.spec.timeout_ms is None:
        return await call
    return await asyncio.wait_for(call, bound.spec.timeout_ms / 1000)


async def score_metric(bound: BoundMetric, ctx: MetricContext) -> ScoredMetric | None:
    """Score one metric; None when it does not apply to the case."""
    if not bound.metric.applies_to(ctx):
        return None
    started = time.perf_counter()
    attempts = 1 + (bound.spec.retry_on_failure or 0)
    error: str | None = None
    score: Score | None = None
    retries = 0
    for attempt in range(attempts):
        try:
            score = await _attempt(bound, ctx)
            error = None
            break
        except Exception as exc:  # a broken metric is data, not a crash
            error = _describe(exc, bound.spec.timeout_ms)
            if attempt + 1 < attempts:
                retries += 1
                await asyncio.sleep(RETRY_DELAYS_S[min(attempt, len(RETRY_DELAYS_S) - 1)])
    elapsed_ms = int((time.perf_counter() - started) * 1000)
    common = {
        "metric_name": bound.spec.name,
        "threshold": bound.threshold,
        "scale": bound.spec.scale,
        "retry_count": retries,
        "evaluation_time_ms": elapsed_ms,
        "args": bound.metric.arguments(),
        "metric_version": bound.metric.version,
    }
    if score is None:
        return ScoredMetric(passed=False, error=error, **common)
    passed = score.passed if score.passed is not None else score.value >= bound.threshold
    return ScoredMetric(
        score=score.value,
        passed=passed,
        model_used=score.model_used,
        details=score.details,
        reason=score.reason,
        **common,
    )


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
