"""HoloDeck `agent.yaml` files: test cases inline or in `test_cases_file`, typed metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from proctor.files import leaves_roots
from proctor.loaders.checks import check_specs, long_ids, repeated_ids
from proctor.loaders.documents import read_document
from proctor.loaders.errors import Problem, SuiteError, found, problems_from_validation
from proctor.loaders.holodeck import cases as holodeck
from proctor.loaders.holodeck.config import with_global_config
from proctor.loaders.holodeck.keys import (
    AGENT_KEYS,
    EVALUATIONS_KEYS,
    INSTRUCTIONS_KEYS,
    TEST_CASE_KEYS,
    unknown_keys,
    unused_section_warnings,
)
from proctor.loaders.holodeck.lines import with_lines
from proctor.loaders.holodeck.metrics import case_metrics
from proctor.loaders.holodeck.sections import section_key_problems
from proctor.loaders.holodeck.tools import tool_entries
from proctor.loaders.metric_specs import spec_from_evaluation_metric
from proctor.models.case import Case, Suite, Turn
from proctor.models.holodeck import EvaluationConfig, EvaluationMetric, TestCaseModel

HOLODECK_AGENT_FIELDS = ("model", "instructions", "tools", "description", "response_format")


HOLODECK_NAMES = ("agent.yaml", "agent.yml")


METRIC_ENTRY = "expected a metric mapping ({metric: name, ...} or {type: standard|geval|rag|code, ...})"


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
    elif not (path.parent / reference).exists():  # named in the agent.yaml, at its line
        expected = f"{reference}: file not found (a path relative to the agent.yaml)"
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


def load_holodeck(path: Path, document: Any) -> Suite:
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
    problems += unknown_keys(str(path), "", document, AGENT_KEYS)
    document, config_notes = with_global_config(document, path.parent)
    warnings += config_notes
    document = holodeck.substitute_env(document, problems, str(path), skip=holodeck.UNUSED_SECTIONS)
    evaluations = document.get("evaluations") or None
    if evaluations is not None and not isinstance(evaluations, dict):
        problems.append(Problem(str(path), "evaluations", "expected a mapping with model and metrics"))
        evaluations = None
    if evaluations is not None:
        problems += unknown_keys(str(path), "evaluations", evaluations, EVALUATIONS_KEYS)
    metrics: list[EvaluationMetric] = []
    agent_model, model_problems = holodeck.model_at(document, "model", str(path))
    problems += model_problems
    default_model = judge_model = None
    if evaluations is not None:
        judge_model, model_problems = holodeck.model_at(evaluations, "evaluations.model", str(path))
        problems += model_problems
        # G-Eval and RAG judges: evaluations.model, else DeepEval's default (`deepeval_judge`);
        # the other metrics that take a model fall back on the agent's.
        default_model = judge_model if evaluations.get("model") is not None else agent_model
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
                problems += check_specs([(str(path), location, spec_from_evaluation_metric(metric))])
        if not evaluations.get("metrics"):
            problems.append(Problem(str(path), "evaluations.metrics", "List should have at least 1 item"))
    block_specs = [
        holodeck.deepeval_judge(
            spec_from_evaluation_metric(metric, default_model), metric.model or judge_model
        )
        for metric in metrics
    ]
    raw_cases, file_problems, cases_file = _holodeck_test_cases(path, document)
    where = str(cases_file)  # problems in the cases name the file they are in
    problems += file_problems
    cases: list[Case] = []
    for index, raw in enumerate(raw_cases):
        if not isinstance(raw, dict):
            problems.append(Problem(where, f"test_cases[{index}]", f"expected a mapping; found {found(raw)}"))
            continue
        location = f"test_cases[{index}]"
        key_problems = unknown_keys(where, location, raw, TEST_CASE_KEYS)
        problems += key_problems
        case_specs, metric_problems = case_metrics(
            raw.get("evaluations"),
            block_specs,
            default_model,
            judge_model,
            where,
            location,
            warnings,
            path.parent,
        )
        problems += metric_problems
        if key_problems or metric_problems:
            continue
        if "turns" in raw:
            case, case_problems = holodeck.multi_turn_case(
                raw,
                index,
                case_specs,
                where,
                warnings,
                base_dir=path.parent,
                turn_metrics=lambda entries, at: case_metrics(
                    entries,
                    block_specs,
                    default_model,
                    judge_model,
                    where,
                    at,
                    warnings,
                    path.parent,
                    empty_is_none=True,
                ),
            )
            problems += case_problems
            if case is not None:
                cases.append(case)
            continue
        raw = dict(raw)
        retrieval = raw.pop("retrieval_context", None)
        expected, tool_problems = holodeck.expected_tools_from(
            raw.get("expected_tools"), where, f"{location}.expected_tools"
        )
        retrieval_problems = holodeck.retrieval_problems(retrieval, where, f"{location}.retrieval_context")
        problems += tool_problems + retrieval_problems
        if tool_problems or retrieval_problems:
            continue
        raw["expected_tools"] = [tool.name for tool in expected] if expected is not None else None
        raw["evaluations"] = None
        try:
            test_case = TestCaseModel.model_validate(raw)
        except ValidationError as error:
            problems += problems_from_validation(where, error, location)
            continue
        for file_index, file_input in enumerate(test_case.files or []):
            problems += holodeck.file_problems(
                file_input, path.parent, where, f"{location}.files[{file_index}]"
            )
        case = case_from_test_case_model(test_case, index, None)
        turn = case.turns[0].model_copy(
            update={
                "expected_tool_calls": holodeck.literal_calls(expected),
                "expected_tools": expected,
                "retrieval_context": retrieval,
            }
        )
        cases.append(case.model_copy(update={"metrics": case_specs, "turns": [turn]}))
    if not raw_cases and not file_problems:
        problems.append(Problem(where, "test_cases", "at least one test case is required"))
    problems += _duplicate_names(where, raw_cases)
    name = str(document.get("name") or path.parent.name)
    problems += long_ids(str(path), [("name", name)]) + long_ids(
        where, [(f"test_cases[{i}].name", c.case_id) for i, c in enumerate(cases)]
    )
    _tools, tool_problems = tool_entries(str(path), document.get("tools"), warnings)
    problems += tool_problems
    problems += _instructions_problems(path, document.get("instructions"))
    problems += holodeck.model_at(document, "embedding_provider", str(path))[1]
    problems += section_key_problems(str(path), document)
    if problems:
        raise SuiteError(with_lines(problems))
    agent = None
    if document.get("model") and document.get("instructions") is not None:
        agent = f"openai:{path.name}"  # the agent.yaml defines its agent: run it with the tool loop
    elif any(field in document for field in HOLODECK_AGENT_FIELDS):
        warnings.append(f"{path}: the agent needs both 'model' and 'instructions' to run; pass --agent")
    warnings += unused_section_warnings(path, document)
    warnings += _default_judge_warning(path, document, raw_cases, agent_model)
    return Suite(
        suite_id=name,
        name=name,
        description=str(document.get("description") or ""),
        path=str(path),
        source_format="holodeck",
        cases=cases,
        agent=agent,
        warnings=warnings,
        metadata={"agent_fields": [field for field in HOLODECK_AGENT_FIELDS if field in document]},
    )


def _default_judge_warning(
    path: Path, document: dict[str, Any], raw_cases: list[Any], agent_model: Any
) -> list[str]:
    """A G-Eval or RAG metric with no model of its own and no `evaluations.model` is judged by
    DeepEval's default judge (Ollama `gpt-oss:20b` on localhost:11434), as HoloDeck 0.7.1's
    code judges it, while HoloDeck's documentation says the agent's model does. Said, naming
    the metrics, so the choice is the user's."""
    evaluations = document.get("evaluations")
    if isinstance(evaluations, dict) and evaluations.get("model"):
        return []
    entries = list(evaluations.get("metrics") or []) if isinstance(evaluations, dict) else []
    for raw in raw_cases:
        if isinstance(raw, dict):
            entries += raw.get("evaluations") or []
            for turn in raw.get("turns") or []:
                entries += (turn.get("evaluations") or []) if isinstance(turn, dict) else []
    judged = sorted(
        {
            str(entry.get("name") or entry.get("metric_type") or entry.get("type"))
            for entry in entries
            if isinstance(entry, dict) and entry.get("type") in ("geval", "rag") and not entry.get("model")
        }
    )
    if not judged:
        return []
    agent = (
        f" (not the agent's model, {agent_model.provider} {agent_model.name}, as" if agent_model else " (as"
    )
    return [
        f"{path}: {', '.join(judged)} judged by DeepEval's default judge, Ollama gpt-oss:20b on "
        f"localhost:11434, as HoloDeck 0.7.1's code judges a metric with no model{agent} "
        "HoloDeck's documentation says). Set evaluations.model to choose the judge"
    ]


def _instructions_problems(path: Path, instructions: Any) -> list[Problem]:
    """`instructions` checked as HoloDeck's `Instructions` model checks it: a mapping with
    exactly one of `file` and `inline`, neither empty, no other key (Proctor also takes the
    text itself); the file inside the suite's folder (it is read when the agent is built, so a
    run with `--agent` does not need it)."""
    if instructions is None or (isinstance(instructions, str) and instructions.strip()):
        return []
    if not isinstance(instructions, dict):
        expected = "expected {file: path} or {inline: text}"
        return [Problem(str(path), "instructions", f"{expected}; found {found(instructions)}")]
    problems = unknown_keys(str(path), "instructions", instructions, INSTRUCTIONS_KEYS)
    for key in INSTRUCTIONS_KEYS:
        value = instructions.get(key)
        if key in instructions and not (isinstance(value, str) and value.strip()):
            problems.append(
                Problem(str(path), f"instructions.{key}", f"expected non-empty text; found {found(value)}")
            )
    given = [key for key in INSTRUCTIONS_KEYS if key in instructions]
    if len(given) == 2:
        problems.append(Problem(str(path), "instructions", "give file or inline, not both"))
    elif not given:
        problems.append(Problem(str(path), "instructions", "give file (a path) or inline (the text)"))
    reference = instructions.get("file")
    if not problems and isinstance(reference, str) and leaves_roots(reference, path.parent):
        problems.append(
            Problem(
                str(path),
                "instructions.file",
                f"{reference} leaves the suite folder (add its folder to PROCTOR_ALLOWED_FILE_ROOTS "
                "to allow it)",
            )
        )
    return problems


def _duplicate_names(file: str, raw_cases: list[Any]) -> list[Problem]:
    """A case id given twice, named at the case that repeats it."""
    entries = []
    for index, raw in enumerate(raw_cases):
        name = raw.get("name") if isinstance(raw, dict) else None
        case_id = name if isinstance(name, str) and name.strip() else f"test_{index + 1}"
        entries.append((f"test_cases[{index}].name", case_id))
    return repeated_ids(file, entries)


def case_from_test_case_model(
    test_case: TestCaseModel, index: int, evaluation: EvaluationConfig | None
) -> Case:
    """A HoloDeck test case, scored with the metrics it names (all of them if it names none)."""
    metrics = evaluation.metrics if evaluation else []
    if test_case.evaluations is not None:
        wanted = set(test_case.evaluations)
        metrics = [metric for metric in metrics if metric.metric in wanted]
    default_model = evaluation.model if evaluation else None
    return Case(
        case_id=test_case.name or f"test_{index + 1}",
        name=test_case.name,
        turns=[Turn(turn_id="turn_1", input=test_case.input, expected_response=test_case.ground_truth)],
        files=test_case.files or [],
        metrics=[spec_from_evaluation_metric(metric, default_model) for metric in metrics],
        expected_tools=test_case.expected_tools,
        source_format="holodeck",
    )
