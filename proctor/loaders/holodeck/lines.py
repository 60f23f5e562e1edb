"""The line of an agent.yaml (or its `test_cases_file`) a problem is about, so every refusal
names file and line.

A problem's location is a path into the document (`test_cases[2].turns[0].files[1].type`). The
file is composed again with PyYAML (nodes keep their marks) and the path walked as far as it
goes: to the key that is wrong, else to the mapping or list entry that lacks what is required.
JSON is YAML here, so a `.json` cases file gets its lines the same way.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from proctor.loaders.errors import Problem

_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
LINE_NOTE = re.compile(r"\(line \d+\)")
_UNION_BRANCH = re.compile(r"[A-Z]\w*|str|int|float|bool|list\[.*\]|dict\[.*\]")


def path_parts(location: str) -> list[str | int]:
    """`test_cases[0].turns[1].input` -> ['test_cases', 0, 'turns', 1, 'input']."""
    return [int(index) if index else name for name, index in _PART.findall(location)]


@lru_cache(maxsize=32)
def _root(file: str, modified: float) -> yaml.Node | None:
    try:
        return yaml.compose(Path(file).read_text(encoding="utf-8", errors="replace"), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        return None


def _child(node: yaml.Node, part: str | int) -> tuple[yaml.Node, yaml.Node] | None:
    """The (key or item, value) nodes `part` names inside `node`, if any."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return key, value
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return node.value[part], node.value[part]
    return None


def line_at(file: str, location: str, *, exact: bool = False) -> int | None:
    """The 1-based line `location` points at in `file` (as far as the path exists; with `exact`,
    only if all of it does), or None."""
    try:
        root = _root(file, Path(file).stat().st_mtime)
    except OSError:
        return None
    if root is None:
        return None
    parts = path_parts(location)
    if parts[:1] == ["test_cases"] and isinstance(root, yaml.SequenceNode):
        parts = parts[1:]  # a test_cases_file that is the list itself
    node, line = root, root.start_mark.line + 1
    for depth, part in enumerate(parts):
        found = _child(node, part)
        if found is None and _UNION_BRANCH.fullmatch(str(part)):
            continue  # Pydantic names the branch of a union it tried (`database.DatabaseConfig.provider`)
        if found is None:
            return line if depth and not exact else None  # a location not in the file names no line
        key, node = found
        line = key.start_mark.line + 1
    return line


# The field a message is about, when its location is the entry around it: "metric 'numeric':
# absolute_tolerance: ...", "metric_type: unknown ...", "unknown key(s) top_pp ...".
_FIELD_FIRST = re.compile(r"(?:metric '[^']*': )?([A-Za-z_]\w*)(?:\.\S*)?: ")
_UNKNOWN_KEYS = re.compile(r"unknown key\(s\) ([A-Za-z_]\w*)")
_NAMED_FIELDS = (("unknown metric type", "type"), ("unknown metric", "metric"))


def _field_in(message: str) -> str | None:
    for pattern in (_UNKNOWN_KEYS, _FIELD_FIRST):
        match = pattern.match(message) if pattern is _FIELD_FIRST else pattern.search(message)
        if match:
            return match.group(1)
    return next((field for phrase, field in _NAMED_FIELDS if message.startswith(phrase)), None)


def problem_line(problem: Problem) -> int | None:
    """The line a problem is about: the field its message names inside its location, if the
    file has it there, else its location."""
    field = _field_in(problem.message)
    if field:
        inner = f"{problem.location}.{field}" if problem.location else field
        line = line_at(problem.file, inner, exact=True)
        if line is not None:
            return line
    return line_at(problem.file, problem.location)


def with_lines(problems: list[Problem]) -> list[Problem]:
    """Every problem with the line it is about, unless it names one already."""
    lined = []
    for problem in problems:
        line = None if LINE_NOTE.search(problem.message) else problem_line(problem)
        lined.append(
            Problem(problem.file, problem.location, f"{problem.message} (line {line})") if line else problem
        )
    return lined


def judge_model_line(file: str, label: str | None, name: str) -> int | None:
    """The line of the model that judges a metric of this agent.yaml, as HoloDeck picks it: the
    metric's own `model` (found by its display name, `metric_type` or metric name), else
    `evaluations.model`, else the agent's `model`; None when the file has none of them."""
    try:
        document = yaml.safe_load(Path(file).read_text(encoding="utf-8", errors="replace"))
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(document, dict):
        return None
    places: list[tuple[str, Any]] = []
    evaluations = document.get("evaluations")
    if isinstance(evaluations, dict):
        places += [(f"evaluations.metrics[{i}]", m) for i, m in enumerate(evaluations.get("metrics") or [])]
    for c, case in enumerate(document.get("test_cases") or []):
        if not isinstance(case, dict):
            continue
        places += [
            (f"test_cases[{c}].evaluations[{i}]", m) for i, m in enumerate(case.get("evaluations") or [])
        ]
        for t, turn in enumerate(case.get("turns") or []):
            if isinstance(turn, dict):
                places += [
                    (f"test_cases[{c}].turns[{t}].evaluations[{i}]", m)
                    for i, m in enumerate(turn.get("evaluations") or [])
                ]
    for location, metric in places:
        if not isinstance(metric, dict) or not metric.get("model"):
            continue
        names = {metric.get("name"), metric.get("metric_type"), metric.get("metric"), metric.get("type")}
        if label in names or name in names:
            return line_at(file, f"{location}.model", exact=True)
    for location in ("evaluations.model", "model"):
        line = line_at(file, location, exact=True)
        if line is not None:
            return line
    return None
