"""The explicit metric registry: every metric a suite may name, by name.

Built from one explicit table (name -> module and class) rather than filled as a side effect
of imports, so a worker that imports only a flow still knows every metric, two metrics cannot
share a name, and a metric's module is imported only when a suite names it.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from proctor.metrics.adk.names import ADK_METRICS_NOT_SCORED
from proctor.metrics.base import Metric
from proctor.models.case import MetricSpec

# Every metric, by name: the module (under proctor.metrics) and class that implement it. A
# metric's module, and the libraries it needs (NLTK, sacrebleu, the openai client...), load
# only when a suite uses it.
METRIC_LOCATIONS: dict[str, str] = {
    "trajectory_match": "trajectory:TrajectoryMatch",
    "tools_called": "tools:ToolsCalled",
    "tools_not_called": "tools:ToolsNotCalled",
    "contains": "text:Contains",
    "not_contains": "text:NotContains",
    "response_match": "response:ResponseMatch",
    "semantic_similarity": "semantic:SemanticSimilarity",
    "max_execution_time": "efficiency:MaxExecutionTime",
    "goals_achieved": "efficiency:GoalsAchieved",
    "bleu": "nlp:Bleu",
    "rouge": "nlp:Rouge",
    "meteor": "nlp:Meteor",
    "token_f1": "nlp:TokenF1",
    "exact_match": "nlp:ExactMatch",
    "regex": "nlp:Regex",
    "json_valid": "nlp:JsonValid",
    "equality": "holodeck.deterministic:Equality",
    "numeric": "holodeck.deterministic:Numeric",
    "code": "holodeck.deterministic:CodeGrader",
    "tool_call_count": "budget:ToolCallCount",
    "token_budget": "budget:TokenBudget",
    "cost": "budget:Cost",
    "llm_judge": "judged:LLMJudge",
    "rubric_based": "judged:RubricBased",
    "groundedness": "judged:Groundedness",
    "relevance": "judged:Relevance",
    "coherence": "judged:Coherence",
    "fluency": "judged:Fluency",
    "similarity": "judged:Similarity",
    "hallucination": "judged:Hallucination",
    "safety": "judged:Safety",
    "factual_accuracy": "judged:FactualAccuracy",
    "geval": "judged:GEval",
    "tool_trajectory_avg_score": "adk.criteria:ToolTrajectoryAvgScore",
    "response_match_score": "adk.criteria:ResponseMatchScore",
    "final_response_match_v2": "adk.judged:FinalResponseMatchV2",
    "rubric_based_final_response_quality_v1": "adk.rubric:RubricBasedFinalResponseQualityV1",
    "rubric_based_tool_use_quality_v1": "adk.rubric:RubricBasedToolUseQualityV1",
    "hallucinations_v1": "adk.hallucinations:HallucinationsV1",
    "rubric_based_multi_turn_trajectory_quality_v1": (
        "adk.multi_turn:RubricBasedMultiTurnTrajectoryQualityV1"
    ),
    "per_turn_user_simulator_quality_v1": "adk.simulator_quality:PerTurnUserSimulatorQualityV1",
    "tool_call_count_v1": "adk.efficiency:ToolCallCountV1",
    "inference_call_count_v1": "adk.efficiency:InferenceCallCountV1",
    "token_usage_v1": "adk.efficiency:TokenUsageV1",
    "invocation_duration_v1": "adk.efficiency:InvocationDurationV1",
    "TrajectoryEvaluator": "vanna.evaluators:VannaTrajectoryEvaluator",
    "OutputEvaluator": "vanna.evaluators:VannaOutputEvaluator",
    "EfficiencyEvaluator": "vanna.evaluators:VannaEfficiencyEvaluator",
    "LLMAsJudgeEvaluator": "vanna.judge:VannaLLMAsJudgeEvaluator",
    "proctor_component_bounds": "vanna.evaluators:ProctorComponentBounds",
}


class MetricConfigError(ValueError):
    """A suite names a metric that does not exist or gives it arguments it does not take."""


class MetricRegistry:
    """Metric classes by name; given a mapping of names to `module:Class`, each class is
    imported on first use (and checked to carry the name it is registered under)."""

    def __init__(self, metrics: Iterable[type[Metric]] | Mapping[str, str]) -> None:
        self._by_name: dict[str, type[Metric]] = {}
        self._locations: dict[str, str] = {}
        if isinstance(metrics, Mapping):
            self._locations = dict(metrics)
            return
        for metric in metrics:
            if metric.name in self._by_name:
                raise ValueError(f"two metrics are named {metric.name!r}")
            self._by_name[metric.name] = metric

    def names(self) -> list[str]:
        return sorted({*self._by_name, *self._locations})

    def __contains__(self, name: str) -> bool:
        return name in self._by_name or name in self._locations

    def get(self, name: str) -> type[Metric]:
        metric = self._by_name.get(name)
        if metric is not None:
            return metric
        location = self._locations.get(name)
        if location is None and name in ADK_METRICS_NOT_SCORED:
            raise MetricConfigError(f"ADK metric {name!r}: {ADK_METRICS_NOT_SCORED[name]}")
        if location is None:
            close = difflib.get_close_matches(name, self.names(), n=1, cutoff=0.75)
            guess = f"did you mean {close[0]!r}? " if close else ""
            raise MetricConfigError(
                f"unknown metric {name!r}; {guess}valid metrics are: {', '.join(self.names())}"
            )
        module, _, attribute = location.partition(":")
        metric = getattr(importlib.import_module(f"proctor.metrics.{module}"), attribute)
        if metric.name != name:
            raise ValueError(f"metric {location} is named {metric.name!r}, registered as {name!r}")
        self._by_name[name] = metric
        return metric

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


REGISTRY = MetricRegistry(METRIC_LOCATIONS)


def __getattr__(name: str) -> Any:
    """`DEFAULT_METRICS`, every metric class, is built on first use: it imports them all."""
    if name == "DEFAULT_METRICS":
        return tuple(REGISTRY.get(metric) for metric in METRIC_LOCATIONS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
