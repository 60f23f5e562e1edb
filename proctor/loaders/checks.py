"""Checks every format's loader makes: metric settings, agent targets, id lengths, duplicates."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from proctor.loaders.adk.criteria import READS_INTERMEDIATE
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


UNSCORED_NAMED = 5  # cases named in the warning; the rest are counted


def unscored_warnings(file: str, cases: list[Case]) -> list[str]:
    """Cases that no metric can pass or fail and that expect no tools, said once with a count:
    a run reports them as not scored, never as passed. A metric counts for a case only if it
    applies to it (`Metric.applies_to_case`: response metrics need an expected answer, ADK's
    per-invocation metrics a conversation), and informational metrics never count."""
    built: dict[int, Any] = {}

    def applies(spec: MetricSpec, case: Case) -> bool:
        if not gives_a_verdict(spec):
            return False
        if id(spec) not in built:
            try:
                built[id(spec)] = REGISTRY.build(spec)
            except Exception:  # a metric that cannot be built here (an extra missing) is not judged
                built[id(spec)] = None
        metric = built[id(spec)]
        if metric is None:
            return True
        try:
            return bool(metric.applies_to_case(case))
        except Exception:  # the run decides then, and records why it could not
            return True

    unscored = []
    for case in cases:
        expects_tools = case.expected_tools is not None or any(
            turn.expected_tools is not None for turn in case.turns
        )
        if expects_tools:
            continue
        # A case scored turn by turn (HoloDeck) is seen as each turn's metrics see it: that turn
        # alone, with its own metrics or else the case's (`turn_scoring._turn_case`).
        views = (
            [(case.model_copy(update={"turns": [turn]}), turn.metrics or case.metrics) for turn in case.turns]
            if case.score_per_turn
            else [(case, case.metrics)]
        )
        if not any(applies(spec, view) for view, specs in views for spec in specs):
            unscored.append(case)
    if not unscored:
        return []
    named = ", ".join(repr(case.display_name) for case in unscored[:UNSCORED_NAMED])
    more = f" and {len(unscored) - UNSCORED_NAMED} more" if len(unscored) > UNSCORED_NAMED else ""
    what = "case" if len(unscored) == 1 else f"{len(unscored)} cases:"
    return [
        f"{file}: {what} {named}{more}: no metric that passes or fails applies to "
        f"{'it' if len(unscored) == 1 else 'them'} (none configured, or each needs what the case "
        "does not state, such as an expected answer) and no tools are expected; reported as not "
        "scored, never as passed"
    ]


def unread_intermediate_warnings(file: str, cases: list[Case]) -> list[str]:
    """Expected intermediate responses that no configured metric reads, said once with a count.
    Only ADK's `final_response_match_v2` and `rubric_based_final_response_quality_v1` read them,
    and only with `include_intermediate_responses_in_final: true` (google-adk 2.13.0); agentflow
    defines the field but no criterion of its own that scores it."""
    unread = []
    for case in cases:
        places = [turn.turn_id for turn in case.turns if turn.expected_intermediate_responses]
        if not places:
            continue
        specs = [*case.metrics, *(spec for turn in case.turns for spec in turn.metrics or [])]
        if not any(
            spec.enabled
            and spec.name in READS_INTERMEDIATE
            and spec.args.get("include_intermediate_responses_in_final") is True
            for spec in specs
        ):
            unread.append(case.display_name)
    if not unread:
        return []
    named = ", ".join(repr(name) for name in unread[:UNSCORED_NAMED])
    more = f" and {len(unread) - UNSCORED_NAMED} more" if len(unread) > UNSCORED_NAMED else ""
    return [
        f"{file}: expected_intermediate_responses in {len(unread)} case(s) ({named}{more}) are kept "
        "but scored by nothing: only final_response_match_v2 and rubric_based_final_response_quality_v1 "
        "with include_intermediate_responses_in_final: true read them"
    ]


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


SHOWN_DUPLICATES = 10  # duplicated ids named one by one; the rest are counted in one line


def duplicate_ids(file: str, cases: list[Case], location: str) -> list[Problem]:
    return repeated_ids(file, [(location, case.case_id) for case in cases])


def repeated_ids(file: str, entries: list[tuple[str, str]]) -> list[Problem]:
    """Each id given more than once, said once with how many times, at its first repeat: a
    suite repeating one id 100,000 times is one line, not 100,000. At most
    `SHOWN_DUPLICATES` ids are named; the rest are counted in one more line."""
    counts: dict[str, int] = {}
    first_repeat: dict[str, str] = {}
    for location, case_id in entries:
        counts[case_id] = counts.get(case_id, 0) + 1
        if counts[case_id] == 2:
            first_repeat[case_id] = location
    repeated = list(first_repeat)
    problems = [
        Problem(
            file,
            first_repeat[case_id],
            f"duplicate case id {case_id!r}"
            + (f" (given {counts[case_id]} times)" if counts[case_id] > 2 else ""),
        )
        for case_id in repeated[:SHOWN_DUPLICATES]
    ]
    if len(repeated) > SHOWN_DUPLICATES:
        problems.append(
            Problem(file, "", f"{len(repeated) - SHOWN_DUPLICATES} more case ids are given more than once")
        )
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
