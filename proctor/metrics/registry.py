"""The explicit metric registry: every metric a suite may name, by name.

Built from one tuple rather than filled as a side effect of imports, so a worker that
imports only a flow still knows every metric, and two metrics cannot share a name.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import ValidationError

from proctor.metrics.base import Metric
from proctor.metrics.budget import BUDGET_METRICS
from proctor.metrics.compat import COMPAT_METRICS
from proctor.metrics.deterministic import DETERMINISTIC_METRICS
from proctor.metrics.efficiency import GoalsAchieved, MaxExecutionTime
from proctor.metrics.judged import JUDGED_METRICS
from proctor.metrics.nlp import NLP_METRICS
from proctor.metrics.response import ResponseMatch
from proctor.metrics.semantic import SemanticSimilarity
from proctor.metrics.text import Contains, NotContains
from proctor.metrics.tools import ToolsCalled, ToolsNotCalled
from proctor.metrics.trajectory import TrajectoryMatch
from proctor.models.case import MetricSpec

DEFAULT_METRICS: tuple[type[Metric], ...] = (
    TrajectoryMatch,
    ToolsCalled,
    ToolsNotCalled,
    Contains,
    NotContains,
    ResponseMatch,
    SemanticSimilarity,
    MaxExecutionTime,
    GoalsAchieved,
    *NLP_METRICS,
    *DETERMINISTIC_METRICS,
    *BUDGET_METRICS,
    *JUDGED_METRICS,
    *COMPAT_METRICS,
)


class MetricConfigError(ValueError):
    """A suite names a metric that does not exist or gives it arguments it does not take."""


class MetricRegistry:
    def __init__(self, metrics: Iterable[type[Metric]]) -> None:
        self._by_name: dict[str, type[Metric]] = {}
        for metric in metrics:
            if metric.name in self._by_name:
                raise ValueError(f"two metrics are named {metric.name!r}")
            self._by_name[metric.name] = metric

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def get(self, name: str) -> type[Metric]:
        try:
            return self._by_name[name]
        except KeyError:
            raise MetricConfigError(
                f"unknown metric {name!r}; valid metrics are: {', '.join(self.names())}"
            ) from None

    def build(self, spec: MetricSpec) -> Metric:
        """The configured metric for `spec`; bad arguments name the metric and the field."""
        metric_class = self.get(spec.name)
        try:
            return metric_class.model_validate(spec.args)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in issue['loc']) or '(arguments)'}: {issue['msg']}"
                for issue in error.errors()
            )
            raise MetricConfigError(f"metric {spec.name!r}: {problems}") from None


REGISTRY = MetricRegistry(DEFAULT_METRICS)
