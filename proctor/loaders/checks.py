"""Checks every format's loader makes: metric settings, agent targets, id lengths, duplicates."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from proctor.loaders.errors import Problem, found
from proctor.loaders.metric_specs import (
    check_spec,
)
from proctor.metrics.registry import REGISTRY
from proctor.models.case import Case, MetricSpec

MAX_ID_LENGTH = 200  # ids name database rows (indexed), report folders and Prefect task runs


def check_specs(specs_at: list[tuple[str, str, MetricSpec]]) -> list[Problem]:
    problems = []
    for file, location, spec in specs_at:
        problem = check_spec(spec, file, location)
        if problem is not None:
            problems.append(problem)
    return problems


def gives_a_verdict(spec: MetricSpec) -> bool:
    """An enabled metric that passes or fails (not an informational value)."""
    return spec.enabled and not (spec.name in REGISTRY and REGISTRY.get(spec.name).informational)


def unscored_warnings(file: str, cases: list[Case]) -> list[str]:
    """Cases no metric can pass or fail and that expect no tools: a run reports them as not
    scored, never as passed; informational metrics (values without a verdict) do not count."""
    warnings = []
    for case in cases:
        specs = [*case.metrics, *(spec for turn in case.turns for spec in turn.metrics or [])]
        expects_tools = case.expected_tools is not None or any(
            turn.expected_tools is not None for turn in case.turns
        )
        if not expects_tools and not any(gives_a_verdict(spec) for spec in specs):
            warnings.append(
                f"{file}: case {case.display_name!r}: no metric that passes or fails scores it "
                "and it expects no tools; it will be reported as not scored, never as passed"
            )
    return warnings


def agent_problems(file: str, agent: Any, location: str) -> list[Problem]:
    if agent is None or (isinstance(agent, str) and agent.strip()):
        return []
    return [
        Problem(file, location, f"expected an agent target such as 'agent.py:attr'; found {found(agent)}")
    ]


def long_ids(file: str, ids: list[tuple[str, str]]) -> list[Problem]:
    """Ids too long to name a database row, a report folder or a task run."""
    return [
        Problem(file, location, f"at most {MAX_ID_LENGTH} characters; found {len(value)}")
        for location, value in ids
        if len(value) > MAX_ID_LENGTH
    ]


def duplicate_ids(file: str, cases: list[Case], location: str) -> list[Problem]:
    seen: set[str] = set()
    problems = []
    for case in cases:
        if case.case_id in seen:
            problems.append(Problem(file, location, f"duplicate case id {case.case_id!r}"))
        seen.add(case.case_id)
    return problems


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogates(value: Any, where: str) -> Iterator[str]:
    """Where in a case's data a lone UTF-16 surrogate sits (JSON allows `"\\ud800"`)."""
    if isinstance(value, str):
        if _SURROGATE.search(value):
            yield where
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _lone_surrogates(key, where)
            yield from _lone_surrogates(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _lone_surrogates(item, f"{where}[{index}]")


def _surrogates_in(case: Case) -> Iterator[str]:
    """Where a lone surrogate sits in a case. Most cases have none, and serialising one to
    JSON (UTF-8, which cannot hold a lone surrogate) proves it ten times faster than walking
    its data; only a case that fails that is walked, to name the place."""
    try:
        case.model_dump_json()
    except ValueError:  # pydantic's serialisation error, or an encoding error, is a ValueError
        yield from _lone_surrogates(case.model_dump(mode="python"), "")


def text_problems(file: str, cases: list[Case]) -> list[Problem]:
    """Text a run could not carry, found before the run: a case id with control characters
    (ids name database rows, report files and task runs), a lone surrogate anywhere (no
    agent, judge or database can receive it as UTF-8), an empty user message (nothing to
    ask; a simulated user's conversation starts from its own prompt)."""
    problems = []
    for case in cases:
        label = f"case {case.case_id!r}"
        if _CONTROL.search(case.case_id) or _SURROGATE.search(case.case_id):
            problems.append(
                Problem(file, label, "a case id may not hold control characters, NUL or lone surrogates")
            )
        for where in _surrogates_in(case):
            problems.append(
                Problem(file, f"{label}{where}", "a lone UTF-16 surrogate is not text any agent can receive")
            )
        simulated = case.metadata.get("user_simulator") or case.metadata.get("conversation_scenario")
        for index, turn in enumerate(case.turns):
            if not simulated and not turn.input.strip():
                problems.append(Problem(file, f"{label}.turns[{index}].input", "an empty user message"))
    return problems
