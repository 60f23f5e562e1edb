"""Vanna datasets (`*.dataset.json|yaml`): test cases with expected outcomes, and evaluators."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from proctor.loaders.checks import agent_problems, duplicate_ids, long_ids
from proctor.loaders.errors import Problem, SuiteError, found, problems_from_validation
from proctor.loaders.metric_specs import (
    check_spec,
    require_text,
    spec_from_evaluation_metric,
)
from proctor.models.agentflow import SessionInput
from proctor.models.case import Case, MetricSpec, Suite, Turn
from proctor.models.holodeck import EvaluationMetric
from proctor.models.vanna import TestCase

VANNA_NAME = re.compile(r"\.dataset\.(json|ya?ml)$")


VANNA_FIELDS = ("name", "description", "metadata", "evaluators", "test_cases")


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
                require_text(arguments, ("label",))
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


def load_vanna(path: Path, document: Any) -> Suite:
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
    problems: list[Problem] = []
    if wrapped:  # Vanna reads only `dataset`; a key beside it is a mistake, not data
        problems += [
            Problem(str(path), str(key), "unknown field beside dataset; expected only dataset")
            for key in document
            if key != "dataset"
        ]
    if not isinstance(body, dict):
        raise SuiteError(
            [Problem(str(path), "dataset", "expected a mapping with name, evaluators and test_cases")]
        )
    evaluators, evaluator_problems = _vanna_evaluators(path, body, prefix)
    problems += evaluator_problems
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
    problems += agent_problems(str(path), metadata.get("agent"), f"{where}metadata.agent")
    cases: list[Case] = []
    test_cases: list[TestCase] = []
    for index, raw in enumerate(raw_cases):
        try:
            test_case = TestCase.model_validate(with_vanna_user(raw))
        except ValidationError as error:
            problems += problems_from_validation(str(path), error, f"{prefix}[{index}]")
            continue
        except ValueError as error:  # the user given twice
            problems.append(Problem(str(path), f"{prefix}[{index}]", str(error)))
            continue
        problems += [
            Problem(
                str(path),
                f"{prefix}[{index}].metadata.{key}",
                f"the case's own {key} goes here; give it as the test case's {key}, not in its metadata",
            )
            for key in ("user", "expected_outcome")
            if key in test_case.metadata
        ]
        cases.append(case_from_vanna(test_case, evaluators))
        test_cases.append(test_case)
    if not body.get("test_cases"):
        problems.append(Problem(str(path), prefix, "at least one test case is required"))
    name = str(body.get("name") or path.stem)
    problems += duplicate_ids(str(path), cases, prefix)
    problems += long_ids(
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
        warnings=_dataset_warnings(str(path), test_cases, evaluators),
    )


def _dataset_warnings(file: str, test_cases: list[TestCase], evaluators: list[MetricSpec]) -> list[str]:
    """What a user reading Vanna's design document would not expect: cases without an outcome
    pass by default (Vanna's code), and component bounds do not change Vanna's verdict."""
    warnings = []
    reads_outcome = any(spec.name in VANNA_OUTCOME_EVALUATORS for spec in evaluators)
    unstated = [case.id for case in test_cases if case.expected_outcome is None]
    if unstated and reads_outcome:
        warnings.append(
            f"{file}: {_cases(unstated)} no expected_outcome: Vanna's evaluators pass "
            f"{'it' if len(unstated) == 1 else 'them'} by default (1.0 each), as Vanna 2.0.2 does"
        )
    bounded = [
        case.id
        for case in test_cases
        if case.expected_outcome is not None
        and (
            case.expected_outcome.min_components is not None
            or case.expected_outcome.max_components is not None
        )
    ]
    if bounded:
        warnings.append(
            f"{file}: {_cases(bounded)} min_components/max_components, which Vanna 2.0.2's "
            "EfficiencyEvaluator does not check; Proctor reports them apart as "
            "proctor_component_bounds, without a verdict"
        )
    return warnings


def _cases(ids: list[str]) -> str:
    """`case 'a' has` / `3 cases ('a', 'b', 'c') have`, at most five ids named."""
    if len(ids) == 1:
        return f"case {ids[0]!r} has"
    named = ", ".join(repr(case_id) for case_id in ids[:5]) + (", ..." if len(ids) > 5 else "")
    return f"{len(ids)} cases ({named}) have"


VANNA_DEFAULT_EVALUATORS = ("TrajectoryEvaluator", "OutputEvaluator", "EfficiencyEvaluator")
VANNA_OUTCOME_EVALUATORS = VANNA_DEFAULT_EVALUATORS  # the ones that read the ExpectedOutcome
VANNA_EVALUATORS = (*VANNA_DEFAULT_EVALUATORS, "LLMAsJudgeEvaluator")
COMPONENT_BOUNDS = "proctor_component_bounds"


VANNA_USER_FIELDS = ("user_id", "username", "email", "user_groups")
"""Vanna's dataset files give the user as flat fields of the test case (`EvaluationDataset.
_parse_test_case`); Proctor's own form is a `user:` mapping. Either is read, never both."""


def with_vanna_user(raw: Any) -> Any:
    """The test case with Vanna's flat user fields gathered into `user`, with the defaults
    Vanna's loader gives: id `test_user`, username the id, email `<id>@example.com` (a case
    that gives no user at all gets Vanna's default user, as in Vanna)."""
    if not isinstance(raw, dict):
        return raw
    flat = {key: raw[key] for key in VANNA_USER_FIELDS if key in raw}
    if not flat and "user" in raw:
        return raw
    if "user" in raw:
        raise ValueError(f"give the user either as user: or as {', '.join(flat)}, not both")
    wrong = [
        f"{key}: expected {expected}; found {found(flat[key])}"
        for key, expected, fits in (
            ("user_id", "text", lambda v: isinstance(v, str) and v.strip()),
            ("username", "text or null", lambda v: v is None or isinstance(v, str)),
            ("email", "text or null", lambda v: v is None or isinstance(v, str)),
            (
                "user_groups",
                "a list of group names",
                lambda v: isinstance(v, list) and all(isinstance(g, str) for g in v),
            ),
        )
        if key in flat and not fits(flat[key])
    ]
    if wrong:  # named as the file writes them, not as the `user` they become
        raise ValueError("; ".join(wrong))
    user_id = flat.get("user_id", "test_user")
    user = {
        "id": user_id,
        "username": flat.get("username", user_id),
        "email": flat.get("email", f"{user_id}@example.com"),
        "group_memberships": flat.get("user_groups", []),
    }
    rest = {key: value for key, value in raw.items() if key not in VANNA_USER_FIELDS}
    return {**rest, "user": user}


def case_from_vanna(test_case: TestCase, evaluators: list[MetricSpec]) -> Case:
    """A Vanna test case, scored by Vanna's evaluators, which read its `ExpectedOutcome` (None
    when the case has none; the agent never sees it). A case with component bounds is also
    measured by Proctor's own `proctor_component_bounds`, reported apart without a verdict."""
    outcome = test_case.expected_outcome
    bounded = outcome is not None and (
        outcome.min_components is not None or outcome.max_components is not None
    )
    if bounded and not any(spec.name == COMPONENT_BOUNDS for spec in evaluators):
        evaluators = [*evaluators, MetricSpec(name=COMPONENT_BOUNDS)]
    return Case(
        case_id=test_case.id,
        turns=[Turn(turn_id="turn_1", input=test_case.message)],
        metrics=evaluators,
        metadata={
            **test_case.metadata,
            "user": test_case.user.model_dump(),
            "expected_outcome": outcome.model_dump(exclude_none=True) if outcome is not None else None,
        },
        session=SessionInput(thread_id=test_case.conversation_id),
        source_format="vanna",
    )
