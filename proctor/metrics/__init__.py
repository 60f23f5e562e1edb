"""Metrics: plain, Prefect-free scoring functions behind one explicit registry."""

from typing import Any

from proctor.metrics.base import Metric, MetricContext, Score
from proctor.metrics.registry import REGISTRY, MetricConfigError, MetricRegistry
from proctor.metrics.runner import BoundMetric, score_case, score_metric


def __getattr__(name: str) -> Any:
    """`DEFAULT_METRICS` imports every metric module: only when asked for."""
    if name == "DEFAULT_METRICS":
        from proctor.metrics import registry

        return registry.DEFAULT_METRICS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
