"""Loading a suite file of any supported format into a validated `Suite`.

Every problem in every file is collected and reported together, each naming the file,
the location and what was expected; nothing runs until the whole suite is valid.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from models.agentflow import EvalConfig, EvalSet
from models.case import Case, MetricSpec, Suite
from models.holodeck import EvaluationMetric, TestCaseModel
from models.vanna import TestCase
from proctor.files import leaves_roots
from proctor.loaders import adk, holodeck
from proctor.loaders.documents import read_document
from proctor.loaders.errors import Problem, SuiteError, found, problems_from_validation
from proctor.loaders.formats import (
    VANNA_DEFAULT_EVALUATORS,
    case_from_test_case_model,
    case_from_vanna,
    cases_from_evalset,
)
from proctor.loaders.metric_specs import (
    check_spec,
    spec_from_evaluation_metric,
    specs_from_eval_config,
)
from proctor.metrics.registry import REGISTRY

CONFIG_NEIGHBOURS = ("eval_config.json", "test_config.json")
HOLODECK_AGENT_FIELDS = ("model", "instructions", "tools", "description", "response_format")
HOLODECK_NAMES = ("agent.yaml", "agent.yml")
VANNA_NAME = re.compile(r"\.dataset\.(json|ya?ml)$")
VANNA_FIELDS = ("name", "description", "metadata", "evaluators", "test_cases")
METRIC_ENTRY = "expected a metric mapping ({metric: name, ...} or {type: standard|geval|rag|code, ...})"
MAX_ID_LENGTH = 200  # ids name database rows (indexed), report folders and Prefect task runs


def detect_format(path: Path, document: Any) -> str:
    if adk.is_adk_evalset(document):
        return "adk"
    if adk.is_adk_legacy(document):
        return "adk-legacy"
    if path.name.endswith(".evalset.json") or (isinstance(document, dict) and "eval_set_id" in document):
        return "agentflow"
    if path.name in HOLODECK_NAMES:
        return "holodeck"
    if VANNA_NAME.search(path.name):
        return "vanna"
    if isinstance(document, dict) and "dataset" in document:
        return "vanna"
    if isinstance(document, dict) and "test_cases_file" in document:
        return "holodeck"
    cases = document.get("test_cases") if isinstance(document, dict) else document
    if isinstance(cases, list) and cases and isinstance(cases[0], dict):
        if "message" in cases[0]:
            return "vanna"
        if "input" in cases[0] or "turns" in cases[0]:
            return "holodeck"
    raise SuiteError(
        [
            Problem(
                str(path),
                "",
                "unrecognised suite format: expected an agentflow evalset (eval_set_id, eval_cases), "
                "a HoloDeck agent.yaml (test_cases with input) or a Vanna dataset (test cases with "
                "id and message)",
            )
        ]
    )


def _eval_config_for(
    path: Path, metadata: dict[str, Any], config_path: Path | None, default: EvalConfig | None = None
) -> tuple[EvalConfig, str, bool]:
    """The set's criteria: an explicit file, the set's metadata, a file beside it, or the default."""
    if config_path is not None:
        return _load_config(config_path), str(config_path), False
    inline = metadata.get("eval_config")
    if isinstance(inline, dict):
        try:
            return EvalConfig.model_validate(inline), str(path), False
        except ValidationError as error:
            raise SuiteError(problems_from_validation(str(path), error, "metadata.eval_config")) from None
    if isinstance(inline, str):
        return _load_config(path.parent / inline), str(path.parent / inline), False
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
            return _load_config(neighbour), str(neighbour), False
    if default is not None:
        return default, "defaults", True
    return EvalConfig.default(), "EvalConfig.default()", True


def _load_config(path: Path) -> EvalConfig:
    document = read_document(path)
    try:
        return EvalConfig.model_validate(document)
    except ValidationError as error:
        raise SuiteError(problems_from_validation(str(path), error)) from None


def _check(specs_at: list[tuple[str, str, MetricSpec]]) -> list[Problem]:
    problems = []
    for file, location, spec in specs_at:
        problem = check_spec(spec, file, location)
        if problem is not None:
            problems.append(problem)
    return problems


def _load_agentflow(path: Path, document: Any, config_path: Path | None) -> Suite:
    try:
        evalset = EvalSet.model_validate(document)
    except ValidationError as error:
        raise SuiteError(problems_from_validation(str(path), error)) from None
    if isinstance(document, dict):
        document.clear()  # the caller still refers to it: free the parsed JSON before building cases
    config, config_source, is_default = _eval_config_for(path, evalset.metadata, config_path)
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
    problems = _check([(config_source, f"{prefix}criteria.{spec.name}", spec) for spec in specs])
    for index, eval_case in enumerate(evalset.eval_cases):
        if not eval_case.conversation:
            problems.append(
                Problem(str(path), f"eval_cases[{index}].conversation", "at least one invocation is required")
            )
    if not evalset.eval_cases:
        problems.append(Problem(str(path), "eval_cases", "the set has no cases"))
    agent = evalset.metadata.get("agent")
    problems += _agent_problems(str(path), agent, "metadata.agent")
    problems += _long_ids(
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
        metadata={**evalset.metadata, "eval_config": config.model_dump(mode="json")},
        warnings=warnings,
    )


def _load_adk(path: Path, document: Any, config_path: Path | None, legacy: bool) -> Suite:
    """ADK eval files, scored by the `test_config.json` beside them or ADK's default criteria."""
    metadata = {} if legacy else (document.get("metadata") or {})
    if not isinstance(metadata, dict):
        raise SuiteError([Problem(str(path), "metadata", f"expected a mapping; found {found(metadata)}")])
    config, config_source, _ = _eval_config_for(
        path, metadata, config_path, default=EvalConfig.model_validate({"criteria": adk.ADK_DEFAULT_CRITERIA})
    )
    specs = specs_from_eval_config(config)
    problems = _check([(config_source, f"criteria.{spec.name}", spec) for spec in specs])
    problems += _agent_problems(str(path), metadata.get("agent"), "metadata.agent")
    warnings: list[str] = []
    try:
        if legacy:
            cases = [adk.case_from_legacy(document, path, specs)]
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
    for index, case in enumerate(cases):
        if not case.turns or not all(turn.input for turn in case.turns):
            where = f"eval_cases[{index}].conversation" if not legacy else "query"
            problems.append(Problem(str(path), where, "every invocation needs user text"))
    snake = adk.snake_keys(document) if not legacy else {}
    suite_id = str(snake.get("eval_set_id") or path.name.removesuffix(".json").removesuffix(".test"))
    problems += _duplicate_ids(str(path), cases, "eval_cases")
    if not legacy:
        problems += _long_ids(
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


def _holodeck_test_cases(path: Path, document: dict[str, Any]) -> tuple[list[Any], list[Problem], Path]:
    """Inline `test_cases`, or those of `test_cases_file` (a list, or a dict with test_cases),
    and the file they are in."""
    reference = document.get("test_cases_file")
    if reference is None:
        inline = document.get("test_cases") or []
        if isinstance(inline, list):
            return inline, [], path
        problem = Problem(str(path), "test_cases", f"expected a list of test cases; found {found(inline)}")
    elif document.get("test_cases"):
        problem = Problem(str(path), "test_cases_file", "give test_cases or test_cases_file, not both")
    elif not isinstance(reference, str) or not reference.strip():
        expected = f"expected a file name relative to the agent.yaml; found {found(reference)}"
        problem = Problem(str(path), "test_cases_file", expected)
    elif leaves_roots(reference, path.parent):
        expected = (
            f"{reference} leaves the suite folder (add its folder to PROCTOR_ALLOWED_FILE_ROOTS to allow it)"
        )
        problem = Problem(str(path), "test_cases_file", expected)
    else:
        return _test_cases_file(path.parent / reference)
    return [], [problem], path


def _test_cases_file(source: Path) -> tuple[list[Any], list[Problem], Path]:
    loaded = read_document(source)
    problems: list[Problem] = []
    loaded = holodeck.substitute_env(loaded, problems, str(source))
    if isinstance(loaded, dict):
        loaded = loaded.get("test_cases")
    if not isinstance(loaded, list):
        problems.append(
            Problem(str(source), "", "expected a list of test cases or a mapping with test_cases")
        )
        return [], problems, source
    return loaded, problems, source


def _load_holodeck(path: Path, document: Any) -> Suite:
    if not isinstance(document, dict):
        raise SuiteError(
            [
                Problem(
                    str(path),
                    "",
                    f"expected a mapping with test_cases (an agent.yaml); found {found(document)}",
                )
            ]
        )
    problems: list[Problem] = []
    warnings: list[str] = []
    document = holodeck.substitute_env(document, problems, str(path))
    evaluations = document.get("evaluations") or None
    if evaluations is not None and not isinstance(evaluations, dict):
        problems.append(Problem(str(path), "evaluations", "expected a mapping with model and metrics"))
        evaluations = None
    metrics: list[EvaluationMetric] = []
    default_model = None
    if evaluations is not None:
        try:
            default_model = holodeck.default_judge_model(document)
        except ValidationError as error:
            problems += problems_from_validation(str(path), error, "evaluations.model")
        block_metrics = evaluations.get("metrics") or []
        if not isinstance(block_metrics, list):
            problems.append(
                Problem(
                    str(path),
                    "evaluations.metrics",
                    f"expected a list of metrics; found {found(block_metrics)}",
                )
            )
            block_metrics = []
        for index, raw in enumerate(block_metrics):
            location = f"evaluations.metrics[{index}]"
            if not isinstance(raw, dict):
                problems.append(Problem(str(path), location, f"{METRIC_ENTRY}; found {found(raw)}"))
                continue
            try:
                metric = holodeck.metric_from_typed(raw, str(path), location, warnings, path.parent)
            except ValidationError as error:
                problems += problems_from_validation(str(path), error, location)
                continue
            except ValueError as error:
                problems.append(Problem(str(path), location, str(error)))
                continue
            if metric is not None:
                metrics.append(metric)
                problems += _check([(str(path), location, spec_from_evaluation_metric(metric))])
        if not evaluations.get("metrics"):
            problems.append(Problem(str(path), "evaluations.metrics", "List should have at least 1 item"))
    block_specs = [spec_from_evaluation_metric(metric, default_model) for metric in metrics]
    by_name = {spec.label or spec.name: spec for spec in block_specs} | {
        spec.name: spec for spec in block_specs
    }
    raw_cases, file_problems, cases_file = _holodeck_test_cases(path, document)
    where = str(cases_file)  # problems in the cases name the file they are in
    problems += file_problems
    cases: list[Case] = []
    for index, raw in enumerate(raw_cases):
        if not isinstance(raw, dict):
            problems.append(Problem(where, f"test_cases[{index}]", f"expected a mapping; found {found(raw)}"))
            continue
        raw = dict(raw)
        entries = raw.get("evaluations") or []
        if not isinstance(entries, list):
            problems.append(
                Problem(
                    where,
                    f"test_cases[{index}].evaluations",
                    f"expected a list of metric names or metrics; found {found(entries)}",
                )
            )
            continue
        named = [e for e in entries if isinstance(e, str)]
        inline_specs = []
        for metric_index, entry in enumerate(entries):
            location = f"test_cases[{index}].evaluations[{metric_index}]"
            if isinstance(entry, str):
                continue
            if not isinstance(entry, dict):
                problems.append(Problem(where, location, f"{METRIC_ENTRY}; found {found(entry)}"))
                continue
            try:
                metric = holodeck.metric_from_typed(entry, where, location, warnings, path.parent)
            except ValidationError as error:
                problems += problems_from_validation(where, error, location)
                continue
            except ValueError as error:
                problems.append(Problem(where, location, str(error)))
                continue
            if metric is not None:
                spec = spec_from_evaluation_metric(metric, default_model)
                problems += _check([(where, location, spec)])
                inline_specs.append(spec)
        for name in named:
            if name not in by_name:
                problems.append(
                    Problem(
                        where,
                        f"test_cases[{index}].evaluations",
                        f"metric {name!r} is not defined in the evaluations block "
                        f"(defined: {', '.join(sorted(by_name)) or 'none'})",
                    )
                )
        case_specs = (
            [by_name[n] for n in named if n in by_name] if raw.get("evaluations") is not None else block_specs
        ) + inline_specs
        if "turns" in raw:
            case, case_problems = holodeck.multi_turn_case(
                raw, index, case_specs, where, warnings, base_dir=path.parent
            )
            problems += case_problems
            if case is not None:
                cases.append(case)
            continue
        extras = {key: raw.pop(key) for key in ("turn_config", "retrieval_context") if key in raw}
        tool_entries = raw.get("expected_tools")
        try:
            names, calls = holodeck._expected_tools(
                tool_entries, where, f"test_cases[{index}].expected_tools", warnings
            )
        except ValueError as error:
            problems.append(Problem(where, f"test_cases[{index}].expected_tools", str(error)))
            continue
        raw["expected_tools"] = names
        raw["evaluations"] = None
        try:
            test_case = TestCaseModel.model_validate(raw)
        except ValidationError as error:
            problems += problems_from_validation(where, error, f"test_cases[{index}]")
            continue
        for file_index, file_input in enumerate(test_case.files or []):
            location = f"test_cases[{index}].files[{file_index}]"
            problems += holodeck.file_problems(file_input, path.parent, where, location)
        case = case_from_test_case_model(test_case, index, None)
        turn = case.turns[0].model_copy(update={"expected_tool_calls": calls, "metadata": extras})
        cases.append(case.model_copy(update={"metrics": case_specs, "turns": [turn]}))
    if not raw_cases and not file_problems:
        problems.append(Problem(where, "test_cases", "at least one test case is required"))
    problems += _duplicate_ids(where, cases, "test_cases")
    name = str(document.get("name") or path.parent.name)
    problems += _long_ids(str(path), [("name", name)]) + _long_ids(
        where, [(f"test_cases[{i}].name", c.case_id) for i, c in enumerate(cases)]
    )
    if problems:
        raise SuiteError(problems)
    agent = None
    if document.get("model") and document.get("instructions") is not None:
        agent = f"openai:{path.name}"  # the agent.yaml defines its agent: run it with the tool loop
        for index, tool in enumerate(document.get("tools") or []):
            if isinstance(tool, dict) and tool.get("type", "function") != "function":
                warnings.append(
                    f"{path}: tools[{index}] is a {tool.get('type')!r} tool, which is not run yet; "
                    "give it canned results in the cases' metadata.tool_results"
                )
    elif any(field in document for field in HOLODECK_AGENT_FIELDS):
        warnings.append(f"{path}: the agent needs both 'model' and 'instructions' to run; pass --agent")
    return Suite(
        suite_id=name,
        name=name,
        description=str(document.get("description") or ""),
        path=str(path),
        source_format="holodeck",
        cases=cases,
        agent=agent,
        warnings=warnings,
    )


def _vanna_evaluators(
    path: Path, body: dict[str, Any], prefix: str
) -> tuple[list[MetricSpec], list[Problem]]:
    """The dataset's `evaluators` (names, or {name, args...}), else Vanna's three defaults."""
    raw = body.get("evaluators")
    if raw is None:
        return [MetricSpec(name=name) for name in VANNA_DEFAULT_EVALUATORS], []
    specs, problems = [], []
    for index, entry in enumerate(raw if isinstance(raw, list) else [raw]):
        location = f"{prefix.rsplit('.', 1)[0] + '.' if '.' in prefix else ''}evaluators[{index}]"
        if isinstance(entry, str):
            spec = MetricSpec(name=entry)
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            arguments = {key: value for key, value in entry.items() if key != "name"}
            try:
                metric = EvaluationMetric.model_validate({"metric": entry["name"], **arguments})
            except ValidationError as error:
                problems += problems_from_validation(str(path), error, location)
                continue
            spec = spec_from_evaluation_metric(metric)
        else:
            problems.append(
                Problem(
                    str(path),
                    location,
                    f"expected an evaluator name or {{name: ..., arguments}}; found {found(entry)}",
                )
            )
            continue
        problem = check_spec(spec, str(path), location)
        if problem:
            problems.append(problem)
        specs.append(spec)
    return specs, problems


def _load_vanna(path: Path, document: Any) -> Suite:
    wrapped = isinstance(document, dict) and "dataset" in document
    where = "dataset." if wrapped else ""
    if not isinstance(document, dict | list):
        raise SuiteError(
            [
                Problem(
                    str(path),
                    "",
                    f"expected a list of test cases or a mapping with test_cases; found {found(document)}",
                )
            ]
        )
    body = (
        document["dataset"]
        if wrapped
        else document
        if isinstance(document, dict)
        else {"test_cases": document}
    )
    prefix = f"{where}test_cases"
    if not isinstance(body, dict):
        raise SuiteError(
            [Problem(str(path), "dataset", "expected a mapping with name, evaluators and test_cases")]
        )
    evaluators, problems = _vanna_evaluators(path, body, prefix)
    problems += [
        Problem(str(path), f"{where}{key}", f"unknown field; expected one of {', '.join(VANNA_FIELDS)}")
        for key in body
        if key not in VANNA_FIELDS
    ]
    raw_cases = body.get("test_cases") or []
    if not isinstance(raw_cases, list):
        problems.append(
            Problem(str(path), prefix, f"expected a list of test cases; found {found(raw_cases)}")
        )
        raw_cases = []
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        problems.append(
            Problem(str(path), f"{where}metadata", f"expected a mapping; found {found(metadata)}")
        )
        metadata = {}
    problems += _agent_problems(str(path), metadata.get("agent"), f"{where}metadata.agent")
    cases: list[Case] = []
    for index, raw in enumerate(raw_cases):
        try:
            test_case = TestCase.model_validate(raw)
        except ValidationError as error:
            problems += problems_from_validation(str(path), error, f"{prefix}[{index}]")
            continue
        cases.append(case_from_vanna(test_case, evaluators))
    if not body.get("test_cases"):
        problems.append(Problem(str(path), prefix, "at least one test case is required"))
    name = str(body.get("name") or path.stem)
    problems += _duplicate_ids(str(path), cases, prefix)
    problems += _long_ids(
        str(path), [(f"{where}name", name)] + [(f"{prefix}[{i}].id", c.case_id) for i, c in enumerate(cases)]
    )
    if problems:
        raise SuiteError(problems)
    return Suite(
        suite_id=name,
        name=name,
        description=str(body.get("description") or ""),
        path=str(path),
        source_format="vanna",
        cases=cases,
        agent=metadata.get("agent"),
        metadata=metadata,
    )


def _agent_problems(file: str, agent: Any, location: str) -> list[Problem]:
    if agent is None or (isinstance(agent, str) and agent.strip()):
        return []
    return [
        Problem(file, location, f"expected an agent target such as 'agent.py:attr'; found {found(agent)}")
    ]


def _long_ids(file: str, ids: list[tuple[str, str]]) -> list[Problem]:
    """Ids too long to name a database row, a report folder or a task run."""
    return [
        Problem(file, location, f"at most {MAX_ID_LENGTH} characters; found {len(value)}")
        for location, value in ids
        if len(value) > MAX_ID_LENGTH
    ]


def _duplicate_ids(file: str, cases: list[Case], location: str) -> list[Problem]:
    seen: set[str] = set()
    problems = []
    for case in cases:
        if case.case_id in seen:
            problems.append(Problem(file, location, f"duplicate case id {case.case_id!r}"))
        seen.add(case.case_id)
    return problems


def load_suite(path: str | Path, *, config_path: str | Path | None = None) -> Suite:
    """Load and validate one suite file, whatever its format."""
    path = Path(path)
    document = read_document(path)
    suite_format = detect_format(path, document)
    if suite_format == "agentflow":
        return _load_agentflow(path, document, Path(config_path) if config_path else None)
    if suite_format in {"adk", "adk-legacy"}:
        return _load_adk(
            path, document, Path(config_path) if config_path else None, suite_format == "adk-legacy"
        )
    if config_path is not None:
        raise SuiteError([Problem(str(config_path), "", "--config applies to agentflow evalsets only")])
    if suite_format == "holodeck":
        return _load_holodeck(path, document)
    return _load_vanna(path, document)


def slug(text: str) -> str:
    """A lowercase identifier for file names and artifact keys."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "suite"
