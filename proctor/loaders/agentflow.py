"""agentflow `.evalset.json` files, and the `EvalConfig` criteria every evalset-like format reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from proctor.files import leaves_roots
from proctor.loaders.adk.criteria import config_notes
from proctor.loaders.checks import agent_problems, check_specs, long_ids
from proctor.loaders.documents import read_document
from proctor.loaders.errors import Problem, SuiteError, found, problems_from_validation
from proctor.loaders.metric_specs import (
    specs_from_eval_config,
)
from proctor.metrics.registry import REGISTRY
from proctor.models.adk_config import AdkUserSimulatorConfig
from proctor.models.agentflow import EvalConfig, EvalSet, SessionInput
from proctor.models.case import Case, MetricSpec, Suite, Turn

CONFIG_NEIGHBOURS = ("eval_config.json", "test_config.json")

_SIMULATED_USER = (
    "in an agentflow evalset a simulated user is set for the whole set, by "
    "metadata.eval_config.user_simulator_config (goals); an ADK eval set gives each case a "
    "conversation_scenario of its own"
)
RESERVED_METADATA = {
    "conversation_scenario": f"ADK's field, not read from a case's metadata: {_SIMULATED_USER}",
    "user_simulator": f"set by Proctor from the config, not from a case's metadata: {_SIMULATED_USER}",
    "adk_user_simulator": "Proctor's own key for ADK's simulator settings; not a case's metadata",
    "adk_rubrics": "Proctor's own key for ADK rubrics; give rubrics in the criterion instead",
}
"""Keys of a case's free-form metadata that Proctor itself sets and reads: one written by hand
would change how the case runs (or be replaced), so it is refused with the reason."""


def eval_config_for(
    path: Path, metadata: dict[str, Any], config_path: Path | None, default: EvalConfig | None = None
) -> tuple[EvalConfig, str, bool]:
    """The set's criteria: an explicit file, the set's metadata, a file beside it, or the default."""
    if config_path is not None:
        return load_config(config_path), str(config_path), False
    inline = metadata.get("eval_config")
    if isinstance(inline, dict):
        try:
            return EvalConfig.model_validate(inline), str(path), False
        except ValidationError as error:
            raise SuiteError(problems_from_validation(str(path), error, "metadata.eval_config")) from None
    if isinstance(inline, str):
        if leaves_roots(inline, path.parent):  # the same folder rules as attached files
            raise SuiteError(
                [
                    Problem(
                        str(path),
                        "metadata.eval_config",
                        f"{inline} leaves the suite folder {path.parent.resolve()}; expected a config file "
                        "inside it (add its folder to PROCTOR_ALLOWED_FILE_ROOTS to allow it)",
                    )
                ]
            )
        return load_config(path.parent / inline, echo=False), str(path.parent / inline), False
    if inline is not None:
        raise SuiteError(
            [
                Problem(
                    str(path),
                    "metadata.eval_config",
                    f"expected a config file name or an inline config with criteria; found {found(inline)}",
                )
            ]
        )
    for name in CONFIG_NEIGHBOURS:
        neighbour = path.parent / name
        if neighbour.exists():
            return load_config(neighbour), str(neighbour), False
    if default is not None:
        return default, "defaults", True
    return EvalConfig.default(), "EvalConfig.default()", True


def load_config(path: Path, echo: bool = True) -> EvalConfig:
    """An eval config file; `echo=False` when a suite named it, so a wrong file's contents are
    never quoted back."""
    document = read_document(path)
    try:
        return EvalConfig.model_validate(document)
    except ValidationError as error:
        raise SuiteError(problems_from_validation(str(path), error, echo=echo)) from None


def load_agentflow(path: Path, document: Any, config_path: Path | None) -> Suite:
    try:
        evalset = EvalSet.model_validate(document)
    except ValidationError as error:
        raise SuiteError(problems_from_validation(str(path), error)) from None
    if isinstance(document, dict):
        document.clear()  # the caller still refers to it: free the parsed JSON before building cases
    config, config_source, is_default = eval_config_for(path, evalset.metadata, config_path)
    warnings = []
    if is_default:
        for name in [n for n in config.criteria if n not in REGISTRY]:
            del config.criteria[name]
            warnings.append(
                f"{path}: the default criterion {name!r} is not available in this version and "
                "was skipped; pass --config to choose criteria"
            )
    specs = specs_from_eval_config(config)
    prefix = "metadata.eval_config." if config_source == str(path) else ""
    warnings += [f"{config_source}: {prefix}{note}" for note in config_notes(config)]
    problems = check_specs([(config_source, f"{prefix}criteria.{spec.name}", spec) for spec in specs])
    if isinstance(config.user_simulator_config, AdkUserSimulatorConfig):
        problems.append(
            Problem(
                config_source,
                f"{prefix}user_simulator_config",
                "ADK's LLM-backed user simulator plays the conversation_scenario cases of ADK eval sets; "
                "an agentflow evalset's simulated user takes model, goals, max_invocations and instructions",
            )
        )
    for index, eval_case in enumerate(evalset.eval_cases):
        if not eval_case.conversation:
            problems.append(
                Problem(str(path), f"eval_cases[{index}].conversation", "at least one invocation is required")
            )
    if not evalset.eval_cases:
        problems.append(Problem(str(path), "eval_cases", "the set has no cases"))
    for index, eval_case in enumerate(evalset.eval_cases):
        problems += [
            Problem(str(path), f"eval_cases[{index}].metadata.{key}", RESERVED_METADATA[key])
            for key in eval_case.metadata
            if key in RESERVED_METADATA
        ]
    agent = evalset.metadata.get("agent")
    problems += agent_problems(str(path), agent, "metadata.agent")
    problems += long_ids(
        str(path),
        [("eval_set_id", evalset.eval_set_id)]
        + [(f"eval_cases[{i}].eval_id", case.eval_id) for i, case in enumerate(evalset.eval_cases)],
    )
    if problems:
        raise SuiteError(problems)
    cases = cases_from_evalset(evalset, specs)
    if config.user_simulator_config is not None:  # every case is played by the simulated user
        simulator = config.user_simulator_config.model_dump()
        cases = [
            case.model_copy(update={"metadata": {**case.metadata, "user_simulator": simulator}})
            for case in cases
        ]
    return Suite(
        suite_id=evalset.eval_set_id,
        name=evalset.name or evalset.eval_set_id,
        description=evalset.description,
        path=str(path),
        source_format="agentflow",
        cases=cases,
        agent=agent if isinstance(agent, str) else None,
        metadata={
            **evalset.metadata,
            "eval_config": config.model_dump(mode="json"),
            # where the criteria came from, for errors about a metric the user never wrote
            **({"criteria_source": config_source} if is_default else {}),
        },
        warnings=warnings,
    )


def cases_from_evalset(evalset: EvalSet, specs: list[MetricSpec]) -> list[Case]:
    """agentflow cases; every case is scored with the set's criteria.

    An empty `expected_tool_trajectory` is agentflow's default and so means "no
    expectation", not "no tool may be called" (use `tools_not_called` for that).
    """
    cases = []
    for eval_case in evalset.eval_cases:
        turns = [
            Turn(
                turn_id=invocation.invocation_id,
                input=invocation.user_content.get_text(),
                expected_tool_calls=list(invocation.expected_tool_trajectory) or None,
                expected_response=(
                    invocation.expected_final_response.get_text()
                    if invocation.expected_final_response
                    else None
                ),
                expected_intermediate_responses=[
                    message.get_text() for message in invocation.expected_intermediate_responses
                ],
                metadata=invocation.metadata,
            )
            for invocation in eval_case.conversation
        ]
        cases.append(
            Case(
                case_id=eval_case.eval_id,
                name=eval_case.name or None,
                turns=turns,
                metrics=specs,
                tags=eval_case.tags,
                metadata=eval_case.metadata,
                session=eval_case.session_input or SessionInput(),
                source_format="agentflow",
            )
        )
    return cases
