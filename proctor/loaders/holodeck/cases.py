"""HoloDeck `agent.yaml`: the evaluations block, test cases (inline, in `test_cases_file`,
single or multi-turn) and `${VAR}` references, brought into the shapes the seed models take.

HoloDeck's typed metrics map onto registry metrics: `standard` (f1_score, bleu, rouge, meteor,
equality, numeric and the legacy AI names), `geval`, `rag` (faithfulness -> groundedness,
answer_relevancy -> relevance) and `code` graders. What Proctor cannot honour yet is reported
as a warning naming the field, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import ValidationError

from proctor.env import expand_env
from proctor.files import URL_SCHEMES, leaves_roots, not_a_regular_file
from proctor.loaders.errors import Problem, found, problems_from_validation
from proctor.loaders.holodeck.keys import EXPECTED_TOOL_KEYS, METRIC_KEYS, TURN_KEYS, unknown_keys
from proctor.loaders.metric_specs import require_text
from proctor.loaders.references import resolve_relative_target
from proctor.metrics.holodeck.expected_tools import validate_matcher
from proctor.models.agentflow import ToolCall
from proctor.models.case import Case, ExpectedTool, MetricSpec, Turn
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
# HoloDeck's RAGMetricType: the contextual ones are HoloDeck's, not scored by Proctor yet (a warning).
RAG_METRIC_TYPES = (
    "faithfulness",
    "contextual_relevancy",
    "contextual_precision",
    "contextual_recall",
    "answer_relevancy",
)
# HoloDeck's NLP evaluators pass whatever they score when no threshold is set (BLEUEvaluator,
# ROUGEEvaluator, METEOREvaluator: `passed = True` without one): a threshold of 0 does the same.
NEVER_FAILING_WITHOUT_THRESHOLD = ("bleu", "rouge", "meteor")
JUDGED_DEFAULT_THRESHOLD = 0.5  # GEvalEvaluator's `threshold or 0.5`; RAGMetric's default
GEVAL_DEFAULT_PARAMS = ["actual_output"]  # GEvalMetric.evaluation_params' default
GEVAL_PARAMS = {
    "input": "input",
    "actual_output": "actual_output",
    "expected_output": "expected_output",
    "context": "context",
    "retrieval_context": "retrieval_context",
}
_SECRET_KEYS = {"api_key", "password"}  # kept as references: resolved only where used (a judge, a server)


UNUSED_SECTIONS = frozenset({"deployment", "observability"})  # not used to evaluate: not substituted


def substitute_env(
    value: Any, problems: list[Problem], file: str, location: str = "", skip: frozenset[str] = frozenset()
) -> Any:
    """`${VAR}` in string values becomes the variable's value, except in `api_key` fields and
    the top-level sections in `skip` (a variable they name need not be set to run)."""
    if isinstance(value, dict):
        return {
            key: item
            if key in _SECRET_KEYS or key in skip
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
    require_text(entry, ("type", "metric", "name", "label", "metric_type"))
    kind = entry.get("type")
    if kind in METRIC_KEYS and set(entry) - METRIC_KEYS[kind]:
        unknown = ", ".join(sorted(set(entry) - METRIC_KEYS[kind]))
        valid = ", ".join(sorted(METRIC_KEYS[kind]))
        raise ValueError(f"unknown key(s) {unknown} for a {kind} metric; valid keys: {valid}")
    entry.pop("type", None)
    if kind is None:
        return EvaluationMetric.model_validate(entry)
    if kind == "standard":
        name = entry.pop("metric", None)
        entry["metric"] = STANDARD_METRICS.get(name, name)
        if name in NEVER_FAILING_WITHOUT_THRESHOLD and entry.get("threshold") is None:
            entry["threshold"] = 0.0
        if name == "rouge":
            entry["tokenizer"] = "rouge_score"  # evaluate's ROUGE, which HoloDeck calls
    elif kind == "geval":
        entry["metric"] = "geval"
        if "name" in entry:
            entry["label"] = entry.pop("name")
        if entry.get("threshold") is None:
            entry["threshold"] = JUDGED_DEFAULT_THRESHOLD
        params = entry.get("evaluation_params", GEVAL_DEFAULT_PARAMS)
        if not isinstance(params, list) or not params:
            raise ValueError(f"evaluation_params: expected a non-empty list of {', '.join(GEVAL_PARAMS)}")
        unknown = sorted({str(param) for param in params} - set(GEVAL_PARAMS))
        if unknown:
            raise ValueError(
                f"evaluation_params: unknown {', '.join(unknown)}; valid: {', '.join(GEVAL_PARAMS)}"
            )
        entry["evaluation_params"] = list(dict.fromkeys(GEVAL_PARAMS[param] for param in params))
        for unsupported in ("strict_mode",):
            if entry.pop(unsupported, None):
                warnings.append(
                    f"{file}: {location}.{unsupported} is not supported yet; the score is not made binary"
                )
    elif kind == "rag":
        metric_type = entry.pop("metric_type", None)
        entry.pop("include_reason", None)  # reasons are always kept
        if metric_type not in RAG_METRIC_TYPES:  # HoloDeck refuses the file: so does Proctor
            raise ValueError(
                f"metric_type: unknown rag metric {metric_type!r}; "
                f"expected one of {', '.join(RAG_METRIC_TYPES)}"
            )
        if entry.get("threshold") is None:
            entry["threshold"] = JUDGED_DEFAULT_THRESHOLD
        entry.setdefault("label", metric_type)  # HoloDeck names the result by its metric_type
        if metric_type not in RAG_METRICS:
            warnings.append(
                f"{file}: {location}: rag metric_type {metric_type!r} is not supported yet and is skipped "
                f"(supported: {', '.join(RAG_METRICS)})"
            )
            return None
        entry["metric"] = RAG_METRICS[metric_type]
        if metric_type == "faithfulness":  # DeepEval's faithfulness reads the retrieval_context only
            entry["context_from"] = "retrieval"
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
    if file_input.path is not None:
        kind = not_a_regular_file(base_dir / file_input.path)
        if kind is not None:  # a FIFO would hang the run, /dev/zero never end
            return [Problem(file, f"{location}.path", f"{file_input.path} {kind}; expected a file to attach")]
    scheme = urlparse(file_input.url).scheme.lower() if file_input.url is not None else "http"
    if scheme not in URL_SCHEMES:
        return [Problem(file, f"{location}.url", f"only http and https URLs are fetched, not {scheme!r}")]
    return []


def expected_tools_from(
    raw: Any, file: str, location: str
) -> tuple[list[ExpectedTool] | None, list[Problem]]:
    """HoloDeck's `expected_tools`: bare names or `{name, args, count}` objects, checked as
    HoloDeck checks them (non-empty name, count >= 1, args a mapping, matchers well formed)."""
    if raw is None:
        return None, []
    if not isinstance(raw, list):
        return None, [
            Problem(
                file, location, f"expected a list of tool names or {{name, args, count}}; found {found(raw)}"
            )
        ]
    tools, problems = [], []
    for index, item in enumerate(raw):
        at = f"{location}[{index}]"
        if isinstance(item, str) and item.strip():
            tools.append(ExpectedTool(name=item))
            continue
        if not isinstance(item, dict):
            problems.append(
                Problem(file, at, f"expected a tool name or {{name, args, count}}; found {found(item)}")
            )
            continue
        key_problems = unknown_keys(file, at, item, EXPECTED_TOOL_KEYS)
        name, count, args = item.get("name"), item.get("count", 1), item.get("args")
        if not isinstance(name, str) or not name.strip():
            key_problems.append(Problem(file, f"{at}.name", "name must be a non-empty string"))
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            key_problems.append(
                Problem(file, f"{at}.count", f"count must be an integer >= 1; found {found(count)}")
            )
        if args is not None and not isinstance(args, dict):
            key_problems.append(Problem(file, f"{at}.args", f"args must be a mapping; found {found(args)}"))
        for key, matcher in (args or {}).items() if isinstance(args, dict) else ():
            problem = validate_matcher(matcher)
            if problem:
                key_problems.append(Problem(file, f"{at}.args.{key}", problem))
        problems += key_problems
        if not key_problems:
            tools.append(ExpectedTool(name=name, args=args, count=count))
    return tools, problems


def literal_calls(expected: list[ExpectedTool] | None) -> list[ToolCall] | None:
    """Expected tools whose arguments are all literals, as calls a trajectory metric can compare."""
    calls = [
        ToolCall(name=tool.name, args=tool.args)
        for tool in expected or []
        if tool.args
        and not any(isinstance(v, dict) and {"fuzzy", "regex"} & set(v) for v in tool.args.values())
    ]
    return calls or None


def retrieval_problems(value: Any, file: str, location: str) -> list[Problem]:
    if value is None or (isinstance(value, list) and all(isinstance(chunk, str) for chunk in value)):
        return []
    return [Problem(file, location, f"expected a list of text chunks; found {found(value)}")]


TurnMetrics = Callable[[Any, str], tuple[list[MetricSpec] | None, list[Problem]]]


def _turn(
    turn: Any, where: str, number: int, file: str, base_dir: Path, turn_metrics: TurnMetrics | None
) -> tuple[Turn | None, list[FileInput], list[Problem]]:
    """One turn of a multi-turn case, with its own expectations and metrics."""
    if not isinstance(turn, dict):
        return None, [], [Problem(file, where, f"expected a mapping with input; found {found(turn)}")]
    problems = unknown_keys(file, where, turn, TURN_KEYS)
    text = turn.get("input")
    if not isinstance(text, str) or not text.strip():
        problems.append(Problem(file, f"{where}.input", "input must be non-empty"))
    ground_truth = turn.get("ground_truth")
    if ground_truth is not None and (not isinstance(ground_truth, str) or not ground_truth.strip()):
        problems.append(
            Problem(
                file, f"{where}.ground_truth", f"expected a non-empty string; found {found(ground_truth)}"
            )
        )
    expected, tool_problems = expected_tools_from(turn.get("expected_tools"), file, f"{where}.expected_tools")
    problems += tool_problems + retrieval_problems(
        turn.get("retrieval_context"), file, f"{where}.retrieval_context"
    )
    turn_config = turn.get("turn_config")
    if turn_config is not None and not isinstance(turn_config, dict):
        problems.append(
            Problem(file, f"{where}.turn_config", f"expected a mapping; found {found(turn_config)}")
        )
    files: list[FileInput] = []
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
    metrics, metric_problems = (
        turn_metrics(turn.get("evaluations"), where) if turn_metrics is not None else (None, [])
    )
    problems += metric_problems
    if problems:
        return None, files, problems
    return (
        Turn(
            turn_id=f"turn_{number + 1}",
            input=text,
            expected_response=ground_truth,
            expected_tool_calls=literal_calls(expected),
            expected_tools=expected,
            retrieval_context=turn.get("retrieval_context"),
            metrics=metrics,
            metadata={"turn_config": turn_config} if turn_config is not None else {},
        ),
        files,
        [],
    )


def multi_turn_case(
    raw: dict[str, Any],
    index: int,
    specs: list[MetricSpec] | None,
    file: str,
    warnings: list[str],
    base_dir: Path | None = None,
    turn_metrics: TurnMetrics | None = None,
) -> tuple[Case | None, list[Problem]]:
    """A HoloDeck case with `turns:` (one session, one exchange per turn, each scored on its
    own); paths resolve against `base_dir`, the agent.yaml's folder (by default, that of `file`)."""
    base_dir = base_dir if base_dir is not None else Path(file).parent
    location = f"test_cases[{index}]"
    problems = [
        Problem(file, f"{location}.{key}", "must not be set when the case has turns; move it onto each turn")
        for key in ("input", "ground_truth", "expected_tools", "files", "retrieval_context")
        if key in raw
    ]
    name = raw.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        problems.append(
            Problem(file, f"{location}.name", f"expected a non-empty string; found {found(name)}")
        )
    raw_turns = raw.get("turns")
    if not isinstance(raw_turns, list) or not raw_turns:
        problems.append(
            Problem(
                file,
                f"{location}.turns",
                f"at least one turn is required (a list of turns); found {found(raw_turns)}",
            )
        )
        raw_turns = []
    turns, files = [], []
    for number, item in enumerate(raw_turns):
        turn, turn_files, turn_problems = _turn(
            item, f"{location}.turns[{number}]", number, file, base_dir, turn_metrics
        )
        problems += turn_problems
        if turn is not None:  # the turn is sent its own files only, as HoloDeck sends them
            turn.metadata["files"] = list(range(len(files), len(files) + len(turn_files)))
        files += turn_files
        if len(turn_files) > MAX_FILES_PER_CASE:  # HoloDeck's limit is per turn (`Turn.files`), not per case
            problems.append(
                Problem(
                    file,
                    f"{location}.turns[{number}].files",
                    f"at most {MAX_FILES_PER_CASE} files per turn; got {len(turn_files)}",
                )
            )
        if turn is not None:
            turns.append(turn)
    if problems:
        return None, problems
    if not files:  # no turn has files: nothing to tell apart
        for turn in turns:
            del turn.metadata["files"]
    names = [tool.name for turn in turns for tool in turn.expected_tools or []]
    any_tools = any(turn.expected_tools is not None for turn in turns)
    return Case(
        case_id=name or f"test_{index + 1}",
        name=name,
        turns=turns,
        files=files,
        metrics=list(specs or []),
        expected_tools=names if any_tools else None,
        source_format="holodeck",
        score_per_turn=True,
    ), []


# The judge DeepEval falls back on when HoloDeck hands it no model (`DeepEvalModelConfig`'s
# defaults): HoloDeck 0.7.1's executor does so for a G-Eval or RAG metric with no model of its
# own and no `evaluations.model`, whatever its documentation says of the agent's model.
DEEPEVAL_DEFAULT_JUDGE = LLMProvider(provider="ollama", name="gpt-oss:20b", endpoint="http://localhost:11434")


def deepeval_judge(spec: MetricSpec, judge: LLMProvider | None) -> MetricSpec:
    """A G-Eval or RAG metric's judge called as HoloDeck calls it. `judge` is the metric's own
    model, else `evaluations.model`: HoloDeck hands DeepEval that model's provider, name,
    endpoint and key only (`TestExecutor._build_deepeval_config`), at temperature 0
    (`DeepEvalModelConfig`: 1.0 on Azure, for its reasoning models) and without the model's
    max_tokens or top_p, which are the agent's settings; with neither, DeepEval's default
    judge (`DEEPEVAL_DEFAULT_JUDGE`), never the agent's model. Other metrics pass unchanged."""
    if not (spec.name == "geval" or spec.label in RAG_METRIC_TYPES):
        return spec
    model = judge or DEEPEVAL_DEFAULT_JUDGE
    temperature = 1.0 if model.provider == "azure_openai" else 0.0
    judge = model.model_copy(update={"temperature": temperature, "max_tokens": None, "top_p": None})
    return spec.model_copy(update={"model": judge})


def model_at(mapping: dict[str, Any], location: str, file: str) -> tuple[LLMProvider | None, list[Problem]]:
    """The model under the last key of `location` (the agent's `model`, `evaluations.model`),
    checked as HoloDeck's `LLMProvider` checks it; its problems are named by that location."""
    raw = mapping.get(location.rsplit(".", 1)[-1])
    if not raw:
        return None, []
    try:
        return LLMProvider.model_validate(raw), []
    except ValidationError as error:
        return None, problems_from_validation(file, error, location)
