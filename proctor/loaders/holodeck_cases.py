"""HoloDeck `agent.yaml`: the evaluations block, test cases (inline, in `test_cases_file`,
single or multi-turn) and `${VAR}` references, brought into the shapes the seed models take.

HoloDeck's typed metrics map onto registry metrics: `standard` (f1_score, bleu, rouge, meteor,
equality, numeric and the legacy AI names), `geval`, `rag` (faithfulness -> groundedness,
answer_relevancy -> relevance) and `code` graders. What Proctor cannot honour yet is reported
as a warning naming the field, never dropped silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import ValidationError

from proctor.env import expand_env
from proctor.files import URL_SCHEMES, leaves_roots
from proctor.loaders.errors import Problem, found, problems_from_validation
from proctor.loaders.metric_specs import check_spec, spec_from_evaluation_metric
from proctor.loaders.references import resolve_relative_target
from proctor.models.agentflow import ToolCall
from proctor.models.case import Case, MetricSpec, Turn
from proctor.models.holodeck import MAX_FILES_PER_CASE, EvaluationMetric, FileInput, LLMProvider

STANDARD_METRICS = {
    "f1_score": "token_f1",
    "bleu": "bleu",
    "rouge": "rouge",
    "meteor": "meteor",
    "equality": "equality",
    "numeric": "numeric",
}
RAG_METRICS = {"faithfulness": "groundedness", "answer_relevancy": "relevance"}
GEVAL_PARAMS = {
    "input": "input",
    "actual_output": "actual_output",
    "expected_output": "expected_output",
    "context": "context",
    "retrieval_context": "context",
}
_SECRET_KEYS = {"api_key"}  # kept as references: resolved only when a judge is called


def substitute_env(value: Any, problems: list[Problem], file: str, location: str = "") -> Any:
    """`${VAR}` in string values becomes the variable's value, except in `api_key` fields."""
    if isinstance(value, dict):
        return {
            key: item
            if key in _SECRET_KEYS
            else substitute_env(item, problems, file, f"{location}.{key}".strip("."))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [substitute_env(item, problems, file, f"{location}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, str):

        def missing(name: str) -> str:
            problems.append(Problem(file, location, f"environment variable {name} is not set"))
            return f"${{{name}}}"

        return expand_env(value, missing)
    return value


def metric_from_typed(
    raw: dict[str, Any], file: str, location: str, warnings: list[str], base_dir: Path
) -> EvaluationMetric | None:
    """One HoloDeck metric entry as an `EvaluationMetric`; None (with a warning) if unsupported."""
    entry = dict(raw)
    kind = entry.pop("type", None)
    if kind is None:
        return EvaluationMetric.model_validate(entry)
    if kind == "standard":
        name = entry.pop("metric", None)
        entry["metric"] = STANDARD_METRICS.get(name, name)
    elif kind == "geval":
        entry["metric"] = "geval"
        if "name" in entry:
            entry["label"] = entry.pop("name")
        params = entry.get("evaluation_params")
        if params and isinstance(params, list):
            entry["evaluation_params"] = sorted(
                {GEVAL_PARAMS.get(p, p) for p in params if p != "actual_output"} | {"actual_output"}
            )
        for unsupported in ("strict_mode",):
            if entry.pop(unsupported, None):
                warnings.append(
                    f"{file}: {location}.{unsupported} is not supported yet; the score is not made binary"
                )
    elif kind == "rag":
        metric_type = entry.pop("metric_type", None)
        entry.pop("include_reason", None)  # reasons are always kept
        if metric_type not in RAG_METRICS:
            warnings.append(
                f"{file}: {location}: rag metric_type {metric_type!r} is not supported yet and is skipped "
                f"(supported: {', '.join(RAG_METRICS)})"
            )
            return None
        entry["metric"] = RAG_METRICS[metric_type]
    elif kind == "code":
        entry["metric"] = "code"
        if "name" in entry:
            entry["label"] = entry.pop("name")
        entry["grader"] = resolve_relative_target(str(entry.get("grader", "")), base_dir)
    else:
        raise ValueError(f"unknown metric type {kind!r}; expected geval, rag, standard or code")
    return EvaluationMetric.model_validate(entry)


def file_problems(file_input: FileInput, base_dir: Path, file: str, location: str) -> list[Problem]:
    """An attached file the suite may not read, found before anything runs: a path outside the
    suite folder (and PROCTOR_ALLOWED_FILE_ROOTS), or a URL that is not http(s)."""
    if file_input.path is not None and leaves_roots(file_input.path, base_dir):
        return [
            Problem(
                file,
                f"{location}.path",
                f"{file_input.path} leaves the suite folder "
                "(add its folder to PROCTOR_ALLOWED_FILE_ROOTS to allow it)",
            )
        ]
    scheme = urlparse(file_input.url).scheme.lower() if file_input.url is not None else "http"
    if scheme not in URL_SCHEMES:
        return [Problem(file, f"{location}.url", f"only http and https URLs are fetched, not {scheme!r}")]
    return []


def _expected_tools(
    raw: list[Any] | None, file: str, location: str, warnings: list[str]
) -> tuple[list[str] | None, list[ToolCall] | None]:
    """HoloDeck's expected tools: names (for `tools_matched`) and literal-argument calls."""
    if raw is None:
        return None, None
    if not isinstance(raw, list):
        raise ValueError(f"expected a list of tool names or {{name, args}}; found {raw!r}")
    names, calls = [], []
    for index, item in enumerate(raw):
        if isinstance(item, str):
            names.append(item)
            continue
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ValueError(f"entry {index} needs a tool 'name'; found {item!r}")
        names.append(item["name"])
        args = item.get("args") or {}
        if any(isinstance(value, dict) and {"fuzzy", "regex"} & set(value) for value in args.values()):
            warnings.append(
                f"{file}: {location}[{index}].args: fuzzy/regex argument matchers are not checked yet"
            )
        elif args:
            calls.append(ToolCall(name=item["name"], args=args))
    return names, calls or None


def multi_turn_case(
    raw: dict[str, Any],
    index: int,
    specs: list[MetricSpec],
    file: str,
    warnings: list[str],
    base_dir: Path | None = None,
) -> tuple[Case | None, list[Problem]]:
    """A HoloDeck case with `turns:` (one session, one exchange per turn); paths resolve
    against `base_dir`, the agent.yaml's folder (by default, that of `file`)."""
    base_dir = base_dir if base_dir is not None else Path(file).parent
    location = f"test_cases[{index}]"
    problems = [
        Problem(file, f"{location}.{key}", "must not be set when the case has turns")
        for key in ("input", "ground_truth", "expected_tools", "files", "retrieval_context")
        if key in raw
    ]
    name = raw.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        problems.append(
            Problem(file, f"{location}.name", f"expected a non-empty string; found {found(name)}")
        )
    raw_turns = raw.get("turns") or []
    if not isinstance(raw_turns, list):
        problems.append(
            Problem(file, f"{location}.turns", f"expected a list of turns; found {found(raw_turns)}")
        )
        raw_turns = []
    turns, files, expected_names, per_turn_specs = [], [], [], []
    for number, turn in enumerate(raw_turns):
        where = f"{location}.turns[{number}]"
        if not isinstance(turn, dict):
            problems.append(Problem(file, where, f"expected a mapping with input; found {found(turn)}"))
            continue
        text = turn.get("input")
        if not isinstance(text, str) or not text.strip():
            problems.append(Problem(file, f"{where}.input", "input must be non-empty"))
            continue
        ground_truth = turn.get("ground_truth")
        if ground_truth is not None and not isinstance(ground_truth, str):
            problems.append(
                Problem(file, f"{where}.ground_truth", f"expected a string; found {found(ground_truth)}")
            )
            continue
        try:
            names, calls = _expected_tools(
                turn.get("expected_tools"), file, f"{where}.expected_tools", warnings
            )
        except ValueError as error:
            problems.append(Problem(file, f"{where}.expected_tools", str(error)))
            continue
        expected_names += names or []
        turn_files = turn.get("files") or []
        if not isinstance(turn_files, list):
            problems.append(
                Problem(file, f"{where}.files", f"expected a list of files; found {found(turn_files)}")
            )
            turn_files = []
        for file_index, item in enumerate(turn_files):
            try:
                file_input = FileInput.model_validate(item)
            except ValidationError as error:
                problems += problems_from_validation(file, error, f"{where}.files[{file_index}]")
                continue
            files.append(file_input)
            problems += file_problems(file_input, base_dir, file, f"{where}.files[{file_index}]")
        metrics = turn.get("evaluations") or []
        if not isinstance(metrics, list):
            problems.append(
                Problem(file, f"{where}.evaluations", f"expected a list of metrics; found {found(metrics)}")
            )
            metrics = []
        for metric_index, metric in enumerate(metrics):
            at = f"{where}.evaluations[{metric_index}]"
            if not isinstance(metric, dict):
                continue
            try:
                converted = metric_from_typed(metric, file, at, warnings, base_dir)
            except ValidationError as error:
                problems += problems_from_validation(file, error, at)
                continue
            except ValueError as error:
                problems.append(Problem(file, at, str(error)))
                continue
            if converted:
                spec = spec_from_evaluation_metric(converted)
                problem = check_spec(spec, file, at)
                if problem:
                    problems.append(problem)
                per_turn_specs.append(spec)
        turns.append(
            Turn(
                turn_id=f"turn_{number + 1}",
                input=text,
                expected_response=ground_truth,
                expected_tool_calls=calls,
                metadata={k: turn[k] for k in ("turn_config", "retrieval_context") if k in turn},
            )
        )
    if not raw_turns and isinstance(raw.get("turns") or [], list):
        problems.append(Problem(file, f"{location}.turns", "at least one turn is required"))
    if len(files) > MAX_FILES_PER_CASE:
        problems.append(
            Problem(file, location, f"at most {MAX_FILES_PER_CASE} files per case; got {len(files)}")
        )
    if problems:
        return None, problems
    return Case(
        case_id=name or f"test_{index + 1}",
        name=name,
        turns=turns,
        files=files,
        metrics=[*specs, *per_turn_specs],
        expected_tools=expected_names or None,
        source_format="holodeck",
    ), []


def default_judge_model(document: dict[str, Any]) -> LLMProvider | None:
    """HoloDeck's fallback: the evaluations model, else the agent's own model."""
    evaluations = document.get("evaluations")
    block = evaluations if isinstance(evaluations, dict) else {}
    for candidate in (block.get("model"), document.get("model")):
        if candidate:
            return LLMProvider.model_validate(candidate)
    return None
