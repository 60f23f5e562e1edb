"""Turning each format's metric configuration into `MetricSpec`s, checked against the registry."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from proctor.loaders.adk.criteria import read_criterion
from proctor.loaders.errors import Problem
from proctor.metrics.holodeck.response_path import is_valid_path
from proctor.metrics.registry import REGISTRY, MetricConfigError
from proctor.models.agentflow import CriterionConfig, EvalConfig
from proctor.models.case import MetricSpec
from proctor.models.holodeck import EvaluationMetric, LLMProvider

TEXT_FIELDS = {"metric": "a metric name (a string)"}


def require_text(entry: dict[str, Any], fields: tuple[str, ...]) -> None:
    """Refuse a metric entry whose names are not strings (`metric: [bleu]`, a geval `name: 5`)
    as a validation error naming the field, before the value is looked up or hashed."""
    details = [
        InitErrorDetails(
            type=PydanticCustomError(
                "wrong_type", "expected {what}", {"what": TEXT_FIELDS.get(key, "a string")}
            ),
            loc=(key,),
            input=entry[key],
        )
        for key in fields
        if key in entry and not isinstance(entry[key], str)
    ]
    if details:
        raise ValidationError.from_exception_data("metric", details)


def spec_from_criterion(name: str, criterion: CriterionConfig) -> MetricSpec:
    """An agentflow or ADK criterion as a metric spec; the fields the metric reads become its
    args (`proctor.loaders.adk.criteria`: ADK's `judge_model_options` give the judge model and
    the metric's `num_samples`, `judge_model_config` and `parallelism_limit`)."""
    args = read_criterion(name, criterion).args
    metric_fields = REGISTRY.get(name).model_fields if name in REGISTRY else {}
    if "match_type" in metric_fields:
        args.setdefault("match_type", criterion.match_type.value)
    if "rubrics" in metric_fields and criterion.rubrics:
        args.setdefault("rubrics", [rubric.model_dump() for rubric in criterion.rubrics])
    options = criterion.judge_model_options
    judge_model = (options.judge_model if options else None) or criterion.judge_model
    model = (
        LLMProvider(name=judge_model)
        if "judge_model" in metric_fields or (name in REGISTRY and REGISTRY.get(name).kind == "llm")
        else None
    )
    # agentflow's criterion defaults its threshold to 0.8; an informational metric takes none and
    # Vanna's evaluators keep their own pass rule, so for them only a threshold the file states
    # is kept (and then refused by `check_spec`).
    metric = REGISTRY.get(name) if name in REGISTRY else None
    keeps_its_own = metric is not None and (metric.informational or metric.own_pass_rule is not None)
    threshold = (
        None if keeps_its_own and "threshold" not in criterion.model_fields_set else criterion.threshold
    )
    return MetricSpec(name=name, threshold=threshold, enabled=criterion.enabled, args=args, model=model)


def specs_from_eval_config(config: EvalConfig) -> list[MetricSpec]:
    return [spec_from_criterion(name, criterion) for name, criterion in config.criteria.items()]


def spec_from_evaluation_metric(
    metric: EvaluationMetric, default_model: LLMProvider | None = None
) -> MetricSpec:
    """A HoloDeck metric as a spec; extra fields are the metric's args."""
    args = metric.extra_args
    return MetricSpec(
        name=metric.metric,
        label=args.pop("label", None),
        response_path=args.pop("response_path", None),
        threshold=metric.threshold,
        enabled=metric.enabled,
        args=args,
        scale=metric.scale,
        model=metric.model or (default_model if metric.metric != "cost" else None),  # cost judges nothing
        fail_on_error=metric.fail_on_error,
        retry_on_failure=metric.retry_on_failure,
        timeout_ms=metric.timeout_ms,
        custom_prompt=metric.custom_prompt,
    )


def check_spec(spec: MetricSpec, file: str, location: str) -> Problem | None:
    """The problem with a spec's name or arguments, found before anything runs."""
    if spec.name == "cost" and spec.model is not None and "pricing_model" not in spec.args:
        return Problem(
            file,
            f"{location}.model",
            "cost prices the agent's tokens: name the priced model in pricing_model; "
            "a metric's model is its judge model",
        )
    try:
        metric = REGISTRY.build(spec)
    except MetricConfigError as error:
        return Problem(file, location, str(error))
    if spec.response_path is not None and not is_valid_path(spec.response_path):
        return Problem(
            file,
            f"{location}.response_path",
            "expected a path such as 'answer', 'result.value' or 'items[0].score'; "
            f"found {spec.response_path!r}",
        )
    if metric.informational:
        return _informational_problem(spec, file, location)
    threshold, scale = spec.threshold, spec.scale
    if metric.own_pass_rule is not None:
        return _own_rule_problem(spec, metric.own_pass_rule, file, location)
    if threshold is not None:
        judged_on_a_scale = metric.kind == "llm" and scale is not None and scale > 1
        top = float(scale) if judged_on_a_scale else 1.0
        if not 0.0 <= threshold <= top:
            return Problem(
                file,
                f"{location}.threshold",
                f"expected a threshold between 0 and {top:g}, got {threshold:g}",
            )
    return None


def _own_rule_problem(spec: MetricSpec, rule: str, file: str, location: str) -> Problem | None:
    """A metric that keeps its upstream system's pass rule (Vanna's evaluators) takes no threshold
    or scale: either would give a verdict that system never gives, or be shown and not applied."""
    for key, value in (("threshold", spec.threshold), ("scale", spec.scale)):
        if value is not None:
            return Problem(file, f"{location}.{key}", f"{spec.name} takes no {key}: {rule}; remove the {key}")
    return None


def informational_refusal(name: str) -> str:
    """google-adk 2.13.0's reason for refusing a threshold on its efficiency metrics, for Proctor."""
    return (
        f"{name} does not support a threshold: it reports a value and never passes or fails "
        "(google-adk 2.13.0 refuses one too); remove the threshold"
    )


def _informational_problem(spec: MetricSpec, file: str, location: str) -> Problem | None:
    """An informational metric reports a value of the whole turn, with no verdict: a threshold,
    a judge's scale or a `response_path` (a field of the answer to grade) has nothing to apply to."""
    if spec.threshold is not None:
        return Problem(file, f"{location}.threshold", informational_refusal(spec.name))
    if spec.scale is not None:
        return Problem(
            file, f"{location}.scale", f"{spec.name} reports a value in its own unit: it takes no scale"
        )
    if spec.response_path is not None:
        return Problem(
            file,
            f"{location}.response_path",
            f"{spec.name} measures the turns (tool calls, tokens, time), not the answer: "
            "response_path does not apply",
        )
    return None
