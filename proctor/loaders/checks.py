"""Checks every format's loader makes: metric settings, agent targets, id lengths, duplicates."""

from __future__ import annotations

from typing import Any

from proctor.loaders.errors import Problem, found
from proctor.loaders.metric_specs import (
    check_spec,
)
from proctor.models.case import Case, MetricSpec

MAX_ID_LENGTH = 200  # ids name database rows (indexed), report folders and Prefect task runs


def check_specs(specs_at: list[tuple[str, str, MetricSpec]]) -> list[Problem]:
    problems = []
    for file, location, spec in specs_at:
        problem = check_spec(spec, file, location)
        if problem is not None:
            problems.append(problem)
    return problems


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
