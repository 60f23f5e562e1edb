"""Metrics: plain, Prefect-free scoring functions behind one explicit registry."""

from proctor.metrics.base import Metric, MetricContext, Score
from proctor.metrics.registry import DEFAULT_METRICS, REGISTRY, MetricConfigError, MetricRegistry
from proctor.metrics.runner import BoundMetric, score_case, score_metric

__all__ = [
    "DEFAULT_METRICS",
    "REGISTRY",
    "BoundMetric",
    "Metric",
    "MetricConfigError",
    "MetricContext",
    "MetricRegistry",
    "Score",
    "score_case",
    "score_metric",
]
