"""Google ADK eval files (EvalSet JSON, the legacy list) scored by their `test_config.json`.

As in google-adk 2.13.0 (`eval_config.get_eval_metrics_from_config`), every case also reports the
informational efficiency metrics (tool calls, inference calls, tokens, seconds per turn), which
never pass or fail; naming one in `criteria` is refused, as ADK refuses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from proctor.judges.genai_config import unsent_fields
from proctor.loaders.adk import parse as adk
from proctor.loaders.adk.criteria import config_notes
from proctor.loaders.agentflow import eval_config_for
from proctor.loaders.checks import agent_problems, check_specs, duplicate_ids, long_ids
from proctor.loaders.errors import Problem, SuiteError, found, problems_from_validation
from proctor.loaders.metric_specs import (
    specs_from_eval_config,
)
from proctor.metrics.adk.multi_turn import RubricBasedMultiTurnTrajectoryQualityV1
from proctor.metrics.adk.names import ADK_EFFICIENCY_METRICS
from proctor.metrics.adk.rubric import RUBRIC_METRICS, effective_rubrics
from proctor.metrics.adk.simulator_quality import user_persona
from proctor.metrics.registry import REGISTRY
from proctor.models.adk_config import AdkUserSimulatorConfig, set_fields
from proctor.models.agentflow import EvalConfig, UserSimulatorConfig
from proctor.models.case import Case, MetricSpec, Suite
from proctor.simulated_users.adk_user import instructions_template

RUBRIC_JUDGES = RUBRIC_METRICS | {
    RubricBasedMultiTurnTrajectoryQualityV1.name: RubricBasedMultiTurnTrajectoryQualityV1
}
RUBRIC_TYPES = {metric.rubric_type for metric in RUBRIC_JUDGES.values()}
SIMULATOR_JUDGE = "per_turn_user_simulator_quality_v1"


def scenario_warnings(file: str, cases: list[Case], specs: list[MetricSpec]) -> list[str]:
    """ADK's simulated-user judge scores only `conversation_scenario` cases (ADK reports the
    others NOT_EVALUATED): the cases it will not score are named, never passed silently."""
    if not any(spec.enabled and spec.name == SIMULATOR_JUDGE for spec in specs):
        return []
    unscored = [i for i, case in enumerate(cases) if not case.metadata.get("conversation_scenario")]
    if not unscored:
        return []
    where = ", ".join(f"eval_cases[{i}]" for i in unscored)
    return [f"{file}: {SIMULATOR_JUDGE} scores only conversation_scenario cases; not {where}"]


def not_evaluated_warnings(file: str, cases: list[Case], specs: list[MetricSpec]) -> list[str]:
    """ADK's per-invocation metrics on `conversation_scenario` cases, which have no expected
    conversation: ADK 2.13.0 records them NOT_EVALUATED and decides the case on its other
    metrics. They are named here, since no score of theirs will appear for those cases."""
    scenarios = [i for i, case in enumerate(cases) if case.metadata.get("conversation_scenario")]
    if not scenarios:
        return []
    unevaluated = [
        spec.name
        for spec in specs
        if spec.enabled
        and not REGISTRY.get(spec.name).informational
        and not REGISTRY.build(spec).applies_to_case(cases[scenarios[0]])
    ]
    if not unevaluated:
        return []
    where = ", ".join(f"eval_cases[{i}]" for i in scenarios)
    return [
        f"{file}: {', '.join(unevaluated)} not evaluated on conversation_scenario cases ({where}): "
        "they compare with an expected conversation, which a scenario has none of; as in ADK "
        "(NOT_EVALUATED), those cases pass or fail on their other metrics"
    ]


def persona_problems(file: str, cases: list[Case]) -> list[Problem]:
    """A scenario's `user_persona` the simulated user or its judge cannot read (a malformed
    persona, a prebuilt persona's id without google-adk installed, custom instructions without
    `{{ persona }}`), found before anything runs."""
    problems = []
    for index, case in enumerate(cases):
        scenario = case.metadata.get("conversation_scenario")
        if not scenario:
            continue
        try:
            persona = user_persona(scenario.get("user_persona"))
            instructions_template(case.metadata["adk_user_simulator"].get("custom_instructions"), persona)
        except (ValueError, ValidationError) as error:  # a ValidationError is a ValueError too
            where = f"eval_cases[{index}].conversation_scenario.user_persona"
            problems.append(Problem(file, where, " ".join(str(error).split())))
    return problems


def adk_efficiency_refusal(name: str) -> str:
    """google-adk 2.13.0's answer to an efficiency metric in `criteria` (where every entry carries
    a threshold): it refuses the eval (`_efficiency_evaluators._reject_threshold`)."""
    return (
        f"{name} does not support a threshold: it reports a value and never passes or fails. "
        "Remove it from criteria entirely; it is reported automatically on every eval "
        "(google-adk 2.13.0 refuses it the same way)"
    )


def simulator_config(
    config: EvalConfig, source: str, cases: list[Case], warnings: list[str]
) -> AdkUserSimulatorConfig | Problem:
    """ADK's `user_simulator_config` (LlmBackedUserSimulatorConfig; its defaults when absent),
    kept with every `conversation_scenario` case; agentflow's goals are refused by name."""
    given = config.user_simulator_config
    if isinstance(given, UserSimulatorConfig):
        if given.model_fields_set - {"model"}:
            return Problem(
                source,
                "user_simulator_config",
                "ADK's user simulator takes type, model, model_configuration, max_allowed_invocations, "
                "custom_instructions and include_function_calls; goals, max_invocations and instructions "
                "are agentflow's",
            )
        given = AdkUserSimulatorConfig(model=given.model)
    simulator = given or AdkUserSimulatorConfig()
    if given is not None and not any(case.metadata.get("conversation_scenario") for case in cases):
        warnings.append(f"{source}: user_simulator_config: not used: no case has a conversation_scenario")
    warnings += [
        f"{source}: user_simulator_config.model_configuration.{name}: not sent to the simulator's model; "
        "ignored"
        for name in unsent_fields(set_fields(simulator.model_configuration))
    ]
    for case in cases:
        if case.metadata.get("conversation_scenario"):
            case.metadata["adk_user_simulator"] = simulator.model_dump(mode="json")
    return simulator


def rubric_problems(
    file: str, cases: list[Case], specs: list[MetricSpec], warnings: list[str]
) -> list[Problem]:
    """ADK's rubric metrics need rubrics for every invocation they judge (criterion, case or
    invocation; the multi-turn one judges only the last); a case or invocation rubric whose
    `type` no configured rubric metric reads is named, since ADK would skip it without a word."""
    problems: list[Problem] = []
    metrics = [REGISTRY.build(spec) for spec in specs if spec.enabled and spec.name in RUBRIC_JUDGES]
    read_types = {metric.rubric_type for metric in metrics}
    for index, case in enumerate(cases):
        scoped = [*case.metadata.get("adk_rubrics", [])]
        scoped += [rubric for turn in case.turns for rubric in turn.metadata.get("adk_rubrics", [])]
        unread = sorted({str(r.get("rubric_id")) for r in scoped if r.get("type") not in read_types})
        if unread:
            warnings.append(
                f"{file}: eval_cases[{index}]: rubric(s) {', '.join(unread)} are read by no configured "
                "metric: ADK's rubric metrics read only rubrics of their own type "
                f"({', '.join(sorted(RUBRIC_TYPES))})"
            )
        for metric in metrics:
            whole = getattr(metric, "whole_conversation", False)
            for turn in case.turns[-1:] if whole else case.turns:
                try:
                    found_rubrics = effective_rubrics(metric.rubrics, case, turn, metric.rubric_type)
                except ValueError as error:
                    problems.append(Problem(file, f"eval_cases[{index}].rubrics", str(error)))
                    break
                if not found_rubrics:
                    problems.append(
                        Problem(
                            file,
                            f"eval_cases[{index}]",
                            f"{metric.name} needs rubrics: give them in its criterion, or on the case "
                            f"or invocation with type {metric.rubric_type}",
                        )
                    )
                    break
    return problems


def load_adk(path: Path, document: Any, config_path: Path | None, legacy: bool) -> Suite:
    """ADK eval files, scored by the `test_config.json` beside them or ADK's default criteria."""
    metadata = {} if legacy else (document.get("metadata") or {})
    if not isinstance(metadata, dict):
        raise SuiteError([Problem(str(path), "metadata", f"expected a mapping; found {found(metadata)}")])
    config, config_source, _ = eval_config_for(
        path, metadata, config_path, default=EvalConfig.model_validate({"criteria": adk.ADK_DEFAULT_CRITERIA})
    )
    named = specs_from_eval_config(config)
    problems = [
        Problem(config_source, f"criteria.{spec.name}", adk_efficiency_refusal(spec.name))
        for spec in named
        if spec.name in ADK_EFFICIENCY_METRICS
    ]
    specs = [spec for spec in named if spec.name not in ADK_EFFICIENCY_METRICS]
    problems += check_specs([(config_source, f"criteria.{spec.name}", spec) for spec in specs])
    specs += [MetricSpec(name=name) for name in ADK_EFFICIENCY_METRICS]  # ADK reports them on every eval
    problems += agent_problems(str(path), metadata.get("agent"), "metadata.agent")
    warnings: list[str] = [f"{config_source}: {note}" for note in config_notes(config)]
    try:
        if legacy:
            legacy_case, case_warnings = adk.case_from_legacy(document, path, specs)
            cases = [legacy_case]
            warnings += [f"{path}: {warning}" for warning in case_warnings]
        else:
            cases, case_warnings = adk.cases_from_evalset(document, specs)
            warnings += [f"{path}: {warning}" for warning in case_warnings]
    except (adk.AdkFormatError, ValidationError) as error:
        detail = (
            "; ".join(f"{p.location}: {p.message}" for p in problems_from_validation(str(path), error))
            if isinstance(error, ValidationError)
            else str(error)
        )
        problems.append(Problem(str(path), "", f"not a valid ADK eval file: {detail}"))
        cases = []
    if not cases and not problems:  # ADK writes an empty set (`adk eval_set create`); nothing to run
        where = "eval_cases" if not legacy else ""
        problems.append(Problem(str(path), where, "the set has no cases: add eval cases before running it"))
    problems += rubric_problems(str(path), cases, specs, warnings)
    warnings += scenario_warnings(str(path), cases, specs)
    if not problems:
        warnings += not_evaluated_warnings(str(path), cases, specs)
    simulator = simulator_config(config, config_source, cases, warnings)
    problems += [simulator] if isinstance(simulator, Problem) else persona_problems(str(path), cases)
    for index, case in enumerate(cases):
        if not case.turns or not all(turn.input for turn in case.turns):
            where = f"eval_cases[{index}].conversation" if not legacy else "query"
            problems.append(Problem(str(path), where, "every invocation needs user text"))
    snake = adk.snake_keys(document) if not legacy and not problems else {}
    suite_id = str(snake.get("eval_set_id") or path.name.removesuffix(".json").removesuffix(".test"))
    problems += duplicate_ids(str(path), cases, "eval_cases")
    if not legacy:
        problems += long_ids(
            str(path),
            [("eval_set_id", suite_id)]
            + [(f"eval_cases[{i}].eval_id", c.case_id) for i, c in enumerate(cases)],
        )
    if problems:
        raise SuiteError(problems)
    return Suite(
        suite_id=suite_id,
        name=str(snake.get("name") or suite_id),
        description=str(snake.get("description") or ""),
        path=str(path),
        source_format="adk",
        cases=cases,
        agent=metadata.get("agent"),
        metadata={"eval_config": config.model_dump(mode="json")},
        warnings=warnings,
    )
