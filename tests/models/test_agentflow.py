"""agentflow's data models: what an `.evalset.json` holds, its config and its report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from proctor.models.agentflow import (
    CriterionConfig,
    CriterionResult,
    EvalCase,
    EvalCaseResult,
    EvalConfig,
    EvalReport,
    EvalSet,
    EvalSummary,
    Invocation,
    MatchType,
    MessageContent,
    Rubric,
    SessionInput,
    StepType,
    ToolCall,
    TrajectoryStep,
)
from tests.conftest import EXAMPLE_SUITE


def error_locations(error: pytest.ExceptionInfo[ValidationError]) -> list[str]:
    return [".".join(str(part) for part in issue["loc"]) for issue in error.value.errors()]


def turn(text: str = "What's the weather in Tokyo?", **fields) -> Invocation:
    return Invocation(invocation_id="turn_1", user_content=MessageContent.user(text), **fields)


def full_evalset() -> EvalSet:
    """Every field set, structured content and non-ASCII text included."""
    return EvalSet(
        eval_set_id="weather_agent_v1",
        name="Weather Agent Tests",
        description="Full suite",
        metadata={"version": "1.0", "author": "team"},
        eval_cases=[
            EvalCase(
                eval_id="basic_weather",
                name="Tokyo",
                tags=["weather", "basic"],
                metadata={"priority": 1},
                session_input=SessionInput(
                    thread_id="t-1", config={"temperature": 0}, initial_state={"user_name": "John"}
                ),
                conversation=[
                    turn(
                        expected_tool_trajectory=[
                            ToolCall(
                                name="get_weather", args={"city": "Tokyo"}, call_id="c1", result={"t": 22}
                            )
                        ],
                        expected_intermediate_responses=[MessageContent.assistant("Looking it up")],
                        expected_final_response=MessageContent.assistant("22°C, clear skies."),
                        metadata={"note": "first"},
                    ),
                    Invocation(
                        invocation_id="turn_2",
                        user_content=MessageContent(
                            role="user", content=[{"type": "text", "text": "And Osaka?"}]
                        ),
                    ),
                ],
            ),
            EvalCase(eval_id="empty_case"),
        ],
    )


# -- EvalSet ------------------------------------------------------------------------------


def test_evalset_defaults_match_the_seed() -> None:
    evalset = EvalSet(eval_set_id="s")
    assert (evalset.name, evalset.description, evalset.eval_cases, evalset.metadata) == ("", "", [], {})


def test_evalset_save_then_load_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "weather.evalset.json"
    full_evalset().save(path)
    assert EvalSet.load(path) == full_evalset()


def test_evalset_save_writes_readable_utf8_json(tmp_path: Path) -> None:
    path = tmp_path / "weather.evalset.json"
    full_evalset().save(str(path))
    assert json.loads(path.read_text(encoding="utf-8"))["eval_set_id"] == "weather_agent_v1"
    assert "22°C" in path.read_text(encoding="utf-8")


def test_the_bundled_example_round_trips(tmp_path: Path) -> None:
    original = EvalSet.load(EXAMPLE_SUITE)
    original.save(tmp_path / "copy.evalset.json")
    assert EvalSet.load(tmp_path / "copy.evalset.json") == original
    assert len(original.eval_cases) == 5


def test_evalset_parses_the_seeds_json_example() -> None:
    data = {
        "eval_set_id": "weather_agent_v1",
        "eval_cases": [
            {
                "eval_id": "basic_weather",
                "session_input": {"thread_id": None, "config": {"temperature": 0}},
                "conversation": [
                    {
                        "invocation_id": "turn_1",
                        "user_content": {"role": "user", "content": "What's the weather in Tokyo?"},
                        "expected_tool_trajectory": [{"name": "get_weather", "args": {"city": "Tokyo"}}],
                    }
                ],
            }
        ],
    }
    case = EvalSet.model_validate(data).eval_cases[0]
    assert case.session_input == SessionInput(config={"temperature": 0})
    assert case.conversation[0].expected_tool_trajectory == [
        ToolCall(name="get_weather", args={"city": "Tokyo"})
    ]


def test_evalset_requires_an_id() -> None:
    with pytest.raises(ValidationError) as error:
        EvalSet.model_validate({"eval_cases": []})
    assert error_locations(error) == ["eval_set_id"]


def test_evalset_rejects_duplicate_case_ids() -> None:
    with pytest.raises(ValidationError, match="duplicate eval_id 'a'"):
        EvalSet(eval_set_id="s", eval_cases=[EvalCase(eval_id="a"), EvalCase(eval_id="a")])


# -- EvalCase and Invocation --------------------------------------------------------------


def test_eval_case_defaults_match_the_seed() -> None:
    case = EvalCase(eval_id="c")
    assert (case.name, case.conversation, case.session_input, case.metadata, case.tags) == (
        "",
        [],
        None,
        {},
        [],
    )


def test_eval_case_id_must_not_be_blank() -> None:
    with pytest.raises(ValidationError) as error:
        EvalCase(eval_id="  ")
    assert error_locations(error) == ["eval_id"]


def test_invocation_defaults_expect_nothing() -> None:
    invocation = turn()
    assert invocation.expected_tool_trajectory == []
    assert invocation.expected_intermediate_responses == []
    assert invocation.expected_final_response is None
    assert invocation.metadata == {}


def test_invocation_requires_user_content() -> None:
    with pytest.raises(ValidationError) as error:
        Invocation.model_validate({"invocation_id": "t1"})
    assert error_locations(error) == ["user_content"]


def test_session_input_defaults_are_empty() -> None:
    assert SessionInput() == SessionInput(thread_id=None, config={}, initial_state={})


# -- MessageContent -----------------------------------------------------------------------


def test_user_and_assistant_helpers_set_role_and_text() -> None:
    user = MessageContent.user("Hello!")
    assistant = MessageContent.assistant("Hi! How can I help?")
    assert (user.role, user.content, user.metadata) == ("user", "Hello!", {})
    assert (assistant.role, assistant.get_text()) == ("assistant", "Hi! How can I help?")


def test_helpers_keep_metadata() -> None:
    assert MessageContent.user("Hi", lang="en").metadata == {"lang": "en"}


def test_get_text_joins_the_text_of_structured_parts() -> None:
    message = MessageContent(
        role="assistant",
        content=[{"type": "text", "text": "It is"}, {"type": "image", "url": "x.png"}, {"text": "sunny."}],
    )
    assert message.get_text() == "It is\nsunny."


def test_get_text_of_parts_without_text_is_empty() -> None:
    assert MessageContent(role="tool", content=[{"function_call": {"name": "f"}}]).get_text() == ""


def test_message_content_requires_role_and_content() -> None:
    with pytest.raises(ValidationError) as error:
        MessageContent.model_validate({})
    assert sorted(error_locations(error)) == ["content", "role"]


# -- ToolCall -----------------------------------------------------------------------------


def test_tool_call_defaults() -> None:
    call = ToolCall(name="get_weather")
    assert (call.args, call.call_id, call.result) == ({}, None, None)


def test_tool_call_name_must_not_be_blank() -> None:
    with pytest.raises(ValidationError) as error:
        ToolCall(name=" ")
    assert error_locations(error) == ["name"]


def test_same_name_and_args_match_by_default() -> None:
    expected = ToolCall(name="get_weather", args={"city": "Tokyo"})
    assert expected.matches(ToolCall(name="get_weather", args={"city": "Tokyo"}))


def test_a_different_name_never_matches() -> None:
    expected = ToolCall(name="get_weather", args={"city": "Tokyo"})
    assert not expected.matches(ToolCall(name="get_forecast", args={"city": "Tokyo"}), check_args=False)


def test_different_args_match_only_without_check_args() -> None:
    expected = ToolCall(name="get_weather", args={"city": "Tokyo"})
    actual = ToolCall(name="get_weather", args={"city": "Osaka"})
    assert not expected.matches(actual)
    assert expected.matches(actual, check_args=False)


def test_call_ids_are_ignored_unless_check_call_id() -> None:
    expected = ToolCall(name="get_weather", call_id="1")
    actual = ToolCall(name="get_weather", call_id="2")
    assert expected.matches(actual)
    assert not expected.matches(actual, check_call_id=True)
    assert expected.matches(ToolCall(name="get_weather", call_id="1"), check_call_id=True)


# -- TrajectoryStep -----------------------------------------------------------------------


def test_step_types_are_the_four_documented() -> None:
    assert {step.name for step in StepType} == {"NODE", "TOOL", "MESSAGE", "CONDITIONAL"}


def test_node_factory_builds_a_node_step() -> None:
    step = TrajectoryStep.node("agent_node", timestamp=1234567890.0)
    assert (step.step_type, step.name, step.timestamp, step.args) == (
        StepType.NODE,
        "agent_node",
        1234567890.0,
        {},
    )


def test_tool_factory_builds_a_tool_step_with_args() -> None:
    step = TrajectoryStep.tool("get_weather", args={"city": "Tokyo"}, timestamp=1234567891.0)
    assert (step.step_type, step.name, step.args, step.timestamp) == (
        StepType.TOOL,
        "get_weather",
        {"city": "Tokyo"},
        1234567891.0,
    )


def test_tool_factory_defaults_to_no_args_and_no_timestamp() -> None:
    step = TrajectoryStep.tool("ping")
    assert (step.args, step.timestamp, step.metadata) == ({}, None, {})


def test_step_type_must_be_known() -> None:
    with pytest.raises(ValidationError) as error:
        TrajectoryStep(step_type="jump", name="x")
    assert error_locations(error) == ["step_type"]


# -- EvalConfig, CriterionConfig, MatchType, Rubric ---------------------------------------


def test_default_config_has_the_three_documented_criteria() -> None:
    criteria = EvalConfig.default().criteria
    assert {name: criterion.threshold for name, criterion in criteria.items()} == {
        "trajectory_match": 0.8,
        "response_match": 0.7,
        "llm_judge": 0.7,
    }
    assert criteria["llm_judge"].judge_model == "gpt-4o-mini"


def test_empty_config_has_no_criteria_and_no_user_simulator() -> None:
    config = EvalConfig()
    assert (config.criteria, config.user_simulator_config) == ({}, None)


def test_criterion_config_defaults() -> None:
    criterion = CriterionConfig()
    assert criterion.enabled is True
    assert criterion.threshold == 0.8
    assert criterion.match_type is MatchType.EXACT
    assert criterion.judge_model == "gpt-4o-mini"
    assert criterion.rubrics == []


def test_adk_numeric_shorthand_is_a_threshold() -> None:
    config = EvalConfig.model_validate(
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0}}
    )
    assert config.criteria["tool_trajectory_avg_score"].threshold == 1.0
    assert config.criteria["response_match_score"].threshold == 0.0


def test_a_boolean_is_not_a_threshold() -> None:
    with pytest.raises(ValidationError) as error:
        EvalConfig.model_validate({"criteria": {"response_match": True}})
    assert error_locations(error) == ["criteria.response_match"]


def test_negative_threshold_is_rejected_naming_the_criterion() -> None:
    with pytest.raises(ValidationError) as error:
        EvalConfig.model_validate({"criteria": {"response_match": {"threshold": -0.1}}})
    assert error_locations(error) == ["criteria.response_match.threshold"]


def test_extra_criterion_fields_are_kept_as_metric_arguments() -> None:
    criterion = EvalConfig.model_validate({"criteria": {"trajectory_match": {"check_args": False}}})
    assert criterion.criteria["trajectory_match"].model_extra == {"check_args": False}


def test_adk_rubrics_are_kept_apart_from_agentflow_rubrics() -> None:
    adk_rubric = {"rubricId": "r1", "rubricContent": {"textProperty": "Is polite"}}
    criterion = EvalConfig.model_validate({"criteria": {"rubric_based": {"rubrics": [adk_rubric]}}}).criteria
    assert criterion["rubric_based"].rubrics == []
    assert criterion["rubric_based"].model_extra == {"adk_rubrics": [adk_rubric]}


def test_eval_config_loads_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "eval_config.json"
    path.write_text(json.dumps({"criteria": {"response_match": {"threshold": 0.6}}}))
    assert EvalConfig.load(path).criteria["response_match"].threshold == 0.6


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("EXACT", MatchType.EXACT),
        ("in_order", MatchType.IN_ORDER),
        ("IN_ORDER", MatchType.IN_ORDER),
        ("any-order", MatchType.ANY_ORDER),
        ("any_order", MatchType.ANY_ORDER),
    ],
)
def test_match_type_accepts_any_case_and_dashes(text: str, expected: MatchType) -> None:
    assert CriterionConfig(match_type=text).match_type is expected


def test_unknown_match_type_is_rejected_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="'EXACT', 'IN_ORDER' or 'ANY_ORDER'") as error:
        CriterionConfig(match_type="sideways")
    assert error_locations(error) == ["match_type"]


def test_rubric_weight_defaults_to_one() -> None:
    assert Rubric(name="clarity", description="Clear?", scoring_guide="5=clear").weight == 1.0


def test_rubric_requires_name_description_and_scoring_guide() -> None:
    with pytest.raises(ValidationError) as error:
        Rubric.model_validate({})
    assert sorted(error_locations(error)) == ["description", "name", "scoring_guide"]


def test_rubrics_configure_a_criterion() -> None:
    rubric = Rubric(name="helpfulness", description="Helpful?", scoring_guide="5=very", weight=2.0)
    config = EvalConfig(criteria={"rubric_based": CriterionConfig(rubrics=[rubric])})
    assert config.criteria["rubric_based"].rubrics[0].weight == 2.0


# -- results ------------------------------------------------------------------------------


def summary(**fields) -> EvalSummary:
    base = {"total_cases": 2, "passed_cases": 1, "failed_cases": 1, "pass_rate": 0.5, "avg_score": 0.5}
    return EvalSummary(**{**base, **fields})


def test_summary_counts_that_add_up_are_accepted() -> None:
    assert summary().criterion_stats == {}


def test_summary_counts_must_add_up() -> None:
    with pytest.raises(ValidationError, match="passed_cases \\+ failed_cases must equal total_cases"):
        summary(total_cases=3)


def test_summary_pass_rate_is_a_fraction() -> None:
    with pytest.raises(ValidationError) as error:
        summary(pass_rate=50.0)
    assert error_locations(error) == ["pass_rate"]


def test_criterion_result_score_is_between_zero_and_one() -> None:
    assert CriterionResult(criterion="c", score=1.0, passed=True, threshold=0.8).details == {}
    with pytest.raises(ValidationError) as error:
        CriterionResult(criterion="c", score=1.2, passed=True, threshold=0.8)
    assert error_locations(error) == ["score"]


def test_a_report_holds_case_results_and_summary() -> None:
    result = EvalCaseResult(eval_id="a", passed=True, duration_seconds=0.5)
    report = EvalReport(
        report_id="r",
        eval_set_id="s",
        results=[result],
        summary=summary(total_cases=1, passed_cases=1, failed_cases=0, pass_rate=1.0),
        duration_seconds=1.0,
    )
    assert (result.name, result.error, result.criterion_results) == (None, None, [])
    assert report.created_at.tzinfo is not None and report.config_used == {}


def test_case_result_duration_cannot_be_negative() -> None:
    with pytest.raises(ValidationError) as error:
        EvalCaseResult(eval_id="a", passed=True, duration_seconds=-1)
    assert error_locations(error) == ["duration_seconds"]
