"""What google-adk 2.13.0 refuses in an eval file, Proctor refuses too, naming the place: a typo
inside a function call, any unknown key of the legacy list, a legacy file whose first entry
lacks what a criterion compares with. A typo there used to be dropped silently: a legacy file
saying `expected_tool_uses` expected no tool call, so an agent that never called the tool passed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.loaders import SuiteError, load_suite


def _problem(path: Path) -> str:
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    [problem] = caught.value.problems
    return f"{problem.location}: {problem.message}"


def _legacy(folder: Path, items: list[dict[str, Any]], criteria: dict[str, Any] | None = None) -> Path:
    path = folder / "dice.test.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    if criteria is not None:
        (folder / "test_config.json").write_text(json.dumps({"criteria": criteria}), encoding="utf-8")
    return path


ROLL = {"tool_name": "roll_die", "tool_input": {"sides": 6}}


@pytest.mark.parametrize(
    ("item", "named"),
    [
        (
            {"query": "Roll", "reference": "4", "expected_tool_uses": [ROLL]},
            "'expected_tool_uses' is unknown",
        ),
        (
            {
                "query": "Roll",
                "reference": "4",
                "expected_tool_use": [{"tool_name": "roll_die", "tool_inputs": {}}],
            },
            "'tool_inputs' is unknown (did you mean 'tool_input'?)",
        ),
        ({"query": "Roll", "refrence": "4", "expected_tool_use": []}, "'refrence' is unknown"),
    ],
)
def test_a_typo_in_the_legacy_list_is_refused(tmp_path: Path, item: dict[str, Any], named: str) -> None:
    second = {"query": "Again", "reference": "5", "expected_tool_use": [ROLL]}
    problem = _problem(_legacy(tmp_path, [second, item], {"tool_trajectory_avg_score": 1.0}))
    assert named in problem and "[1]" in problem


def test_a_typo_inside_an_expected_function_call_is_refused(tmp_path: Path) -> None:
    invocation = {
        "invocation_id": "i1",
        "user_content": {"parts": [{"text": "Roll a die"}]},
        "intermediate_data": {"tool_uses": [{"name": "roll_die", "arguments": {"sides": 6}}]},
    }
    path = tmp_path / "dice.evalset.json"
    path.write_text(
        json.dumps({"eval_set_id": "s", "eval_cases": [{"eval_id": "a", "conversation": [invocation]}]})
    )
    problem = _problem(path)
    assert "eval_cases[0].conversation[0].intermediate_data.tool_uses[0]" in problem
    assert "'arguments' is unknown" in problem


def test_the_first_legacy_entry_must_carry_what_each_criterion_compares_with(tmp_path: Path) -> None:
    """ADK's `_validate_input`: tool_trajectory_avg_score needs `expected_tool_use` and
    response_match_score `reference` in the first entry (and ADK checks only the first)."""
    no_tools = _legacy(tmp_path, [{"query": "Roll", "reference": "4"}], {"tool_trajectory_avg_score": 1.0})
    assert "'expected_tool_use'" in _problem(no_tools)
    no_reference = _legacy(
        tmp_path, [{"query": "Roll", "expected_tool_use": []}], {"response_match_score": 0.8}
    )
    assert "'reference'" in _problem(no_reference)
    later = [{"query": "Roll", "expected_tool_use": []}, {"query": "Again"}]
    assert (
        load_suite(_legacy(tmp_path, later, {"tool_trajectory_avg_score": 1.0}))
        .cases[0]
        .turns[1]
        .expected_tool_calls
        == []
    )


def test_legacy_intermediate_responses_are_read_and_mock_outputs_named(tmp_path: Path) -> None:
    item = {
        "query": "Roll",
        "reference": "4",
        "expected_tool_use": [{**ROLL, "mock_tool_output": 4}],
        "expected_intermediate_agent_responses": [{"author": "roller", "text": "Rolling now."}],
    }
    suite = load_suite(_legacy(tmp_path, [item], {"tool_trajectory_avg_score": 1.0}))
    assert suite.cases[0].turns[0].expected_intermediate_responses == ["Rolling now."]
    assert any("[0].expected_tool_use[0].mock_tool_output is ignored" in w for w in suite.warnings)
    assert any("expected_intermediate_responses in 1 case(s)" in w for w in suite.warnings)


@pytest.mark.needs_extra
def test_adk_itself_refuses_the_same_files(tmp_path: Path) -> None:
    """The refusals above are ADK's: google-adk 2.13.0's own loaders fail on the same inputs."""
    pytest.importorskip("google.adk", reason="the adk extra (google-adk 2.13.0) is not installed")
    from google.adk.evaluation.agent_evaluator import AgentEvaluator
    from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema
    from google.genai import types
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        types.FunctionCall.model_validate({"name": "roll_die", "arguments": {"sides": 6}})
    with pytest.raises(KeyError):
        data = [{"query": "Roll", "expected_tool_use": [{"tool_name": "roll_die", "tool_inputs": {}}]}]
        convert_eval_set_to_pydantic_schema("s", [{"name": "s", "data": data, "initial_session": {}}])
    with pytest.raises(ValueError, match="expected_tool_use"):
        AgentEvaluator._validate_input(
            [[{"query": "Roll", "expected_tool_uses": []}]], {"tool_trajectory_avg_score": 1.0}
        )
    with pytest.raises(ValueError, match="reference"):
        AgentEvaluator._validate_input(
            [[{"query": "Roll", "expected_tool_use": []}]], {"response_match_score": 0.8}
        )


@pytest.mark.parametrize(
    ("document", "named"),
    [
        (  # what `adk eval_set create` writes
            {
                "eval_set_id": "empty",
                "name": "empty",
                "description": None,
                "eval_cases": [],
                "creation_timestamp": 1.0,
            },
            "eval_cases: the set has no cases",
        ),
        (  # no null name or description to tell it by: its creation_timestamp alone is ADK's
            {"eval_set_id": "empty", "eval_cases": [], "creation_timestamp": 1.0},
            "eval_cases: the set has no cases",
        ),
        (
            {
                "eval_set_id": "s",
                "eval_cases": [{"eval_id": "a", "session_input": {"app_name": "x", "user_id": "u"}}],
            },
            "not a valid ADK eval file: malformed entry at eval_cases[0]: expected exactly one of conversation and "
            "conversation_scenario",
        ),
        (
            {
                "eval_set_id": "s",
                "eval_cases": [{"eval_id": "a", "creation_timestamp": 0.0, "conversation": []}],
            },
            "'conversation' at eval_cases[0]: expected at least one invocation to run",
        ),
    ],
)
def test_an_eval_set_with_only_adk_fields_is_read_as_adk(tmp_path: Path, document: dict, named: str) -> None:
    """Nothing in these is an invocation ADK-style, but their fields are ADK's alone: the errors
    speak of the ADK format, not of agentflow fields being 'extra'."""
    path = tmp_path / "s.evalset.json"
    path.write_text(json.dumps(document))
    problem = _problem(path)
    assert named in problem and "Extra inputs" not in problem
