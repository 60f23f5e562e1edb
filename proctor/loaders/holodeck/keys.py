"""The keys HoloDeck's own models accept at each level of an `agent.yaml`, and the check that
refuses any other: a misspelled `evaluation:` must not make a wrong answer pass.

The sets mirror HoloDeck's Pydantic models (all `extra="forbid"`): `Agent`, `EvaluationConfig`,
`TestCaseModel`, `Turn`, `ExpectedTool`, `EvaluationMetric`, `GEvalMetric`, `RAGMetric`,
`CodeMetric`, `LLMProvider` and `Instructions` (the sections Proctor does not use are in
`sections.py`). `test_cases_file` is Proctor's own addition.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proctor.loaders.errors import Problem
from proctor.loaders.holodeck.lines import line_at

AGENT_KEYS = frozenset(
    {
        "name",
        "description",
        "author",
        "model",
        "instructions",
        "response_format",
        "tools",
        "evaluations",
        "test_cases",
        "test_cases_file",
        "execution",
        "observability",
        "deployment",
        "embedding_provider",
        "claude",
        "openai",
    }
)
EVALUATIONS_KEYS = frozenset({"model", "metrics", "optimizer"})
INSTRUCTIONS_KEYS = ("file", "inline")  # HoloDeck's `Instructions`: exactly one of them
TEST_CASE_KEYS = frozenset(
    {"name", "input", "expected_tools", "ground_truth", "files", "retrieval_context", "evaluations", "turns"}
)
TURN_KEYS = frozenset(
    {"input", "ground_truth", "expected_tools", "files", "retrieval_context", "evaluations", "turn_config"}
)
EXPECTED_TOOL_KEYS = frozenset({"name", "args", "count"})
_COMMON_METRIC_KEYS = {"type", "threshold", "enabled", "model", "fail_on_error"}
METRIC_KEYS = {
    "standard": frozenset(
        _COMMON_METRIC_KEYS
        | {
            "metric",
            "scale",
            "retry_on_failure",
            "timeout_ms",
            "custom_prompt",
            "case_insensitive",
            "strip_whitespace",
            "strip_punctuation",
            "absolute_tolerance",
            "relative_tolerance",
            "accept_percent",
            "accept_thousands_separators",
            "response_path",
        }
    ),
    "geval": frozenset(
        _COMMON_METRIC_KEYS | {"name", "criteria", "evaluation_steps", "evaluation_params", "strict_mode"}
    ),
    "rag": frozenset(_COMMON_METRIC_KEYS | {"metric_type", "include_reason"}),
    "code": frozenset(_COMMON_METRIC_KEYS | {"grader", "name"}),
}


def line_of(file: str, location: str) -> int | None:
    """The line of `file` where the key at `location` (`model.auth_provider`) is written, read
    from the file's YAML nodes as the file is now (`lines.line_at`); None if it is not there."""
    return line_at(file, location, exact=True)


def unknown_keys(file: str, location: str, mapping: dict[str, Any], valid: frozenset[str]) -> list[Problem]:
    """One problem per key HoloDeck would refuse, with its line and the keys that are valid."""
    problems = []
    for key in mapping:
        if key in valid:
            continue
        where = f"{location}.{key}" if location else str(key)
        line = line_at(file, where, exact=True)  # this key in this mapping, not the first like it
        at = f" (line {line})" if line else ""
        problems.append(Problem(file, where, f"unknown key{at}; valid keys: {', '.join(sorted(valid))}"))
    return problems


# Sections HoloDeck reads that do not change how Proctor evaluates, and why they are not used.
UNUSED_SECTIONS = {
    "execution": "Proctor's own settings apply: --concurrency, --timeout, --case-timeout",
    "observability": "Proctor stores every result in its database; no telemetry is exported",
    "deployment": "deployment is not part of an evaluation",
    "claude": "Claude Agent SDK settings: Proctor calls the model through the openai package",
    "openai": "OpenAI Agents SDK settings: Proctor runs its own tool loop",
}


def unused_section_warnings(path: Path, document: dict[str, Any]) -> list[str]:
    """One warning per HoloDeck section present that Proctor does not use, with the reason;
    and the model settings it cannot honour."""
    warnings = [
        f"{path}: {key} is not used ({why})" for key, why in UNUSED_SECTIONS.items() if key in document
    ]
    model = document.get("model")
    if "embedding_provider" in document and not (
        isinstance(model, dict) and model.get("provider") == "anthropic"
    ):
        warnings.append(
            f"{path}: embedding_provider is not used: HoloDeck embeds with the agent's own model unless its "
            "provider is anthropic"
        )
    for location, mapping in (("model", model), ("evaluations.model", _judge_model(document))):
        # HoloDeck's LLMProvider warns the same; an anthropic model's is refused when the agent loads
        if (
            isinstance(mapping, dict)
            and mapping.get("auth_provider") is not None
            and mapping.get("provider") != "anthropic"
        ):
            warnings.append(
                f"{path}: {location}.auth_provider {mapping['auth_provider']!r} has no effect: it is "
                "only relevant for the anthropic provider"
            )
    return warnings


def _judge_model(document: dict[str, Any]) -> Any:
    evaluations = document.get("evaluations")
    return evaluations.get("model") if isinstance(evaluations, dict) else None
