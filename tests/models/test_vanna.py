"""Vanna's evaluation models: test cases, expected outcomes, agent results and variants."""

from __future__ import annotations

from datetime import datetime

import pytest
from pydantic import ValidationError

from proctor.models.vanna import (
    AgentResult,
    AgentVariant,
    EvaluationDataset,
    EvaluationResult,
    ExpectedOutcome,
    TestCase,
    TestCaseResult,
    UiComponent,
    User,
)


def error_locations(error: pytest.ExceptionInfo[ValidationError]) -> list[str]:
    return [".".join(str(part) for part in issue["loc"]) for issue in error.value.errors()]


def revenue_case(**fields) -> TestCase:
    return TestCase(**{"id": "revenue_query", "message": "What was our revenue last month?", **fields})


def verdict(name: str, passed: bool, score: float) -> EvaluationResult:
    return EvaluationResult(
        test_case_id="revenue_query", evaluator_name=name, passed=passed, score=score, reasoning=""
    )


def agent_result(**fields) -> AgentResult:
    return AgentResult(**{"test_case_id": "revenue_query", "components": [], **fields})


# -- TestCase and ExpectedOutcome ---------------------------------------------------------


def test_test_case_defaults() -> None:
    case = revenue_case()
    assert (case.conversation_id, case.expected_outcome, case.metadata) == (None, None, {})
    assert isinstance(case.user, User)


def test_test_case_takes_the_seeds_user() -> None:
    case = revenue_case(user=User(id="test", group_memberships=["admin"]))
    assert (case.user.id, case.user.group_memberships) == ("test", ["admin"])


@pytest.mark.parametrize("field", ["id", "message"])
def test_test_case_id_and_message_are_required(field: str) -> None:
    data = {"id": "a", "message": "hi"}
    del data[field]
    with pytest.raises(ValidationError) as error:
        TestCase.model_validate(data)
    assert error_locations(error) == [field]


@pytest.mark.parametrize("field", ["id", "message"])
def test_test_case_id_and_message_must_not_be_blank(field: str) -> None:
    with pytest.raises(ValidationError) as error:
        TestCase.model_validate({"id": "a", "message": "hi", field: " "})
    assert error_locations(error) == [field]


def test_test_case_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError) as error:
        TestCase.model_validate({"id": "a", "message": "hi", "expected": {}})
    assert error_locations(error) == ["expected"]


def test_expected_outcome_defaults_expect_nothing() -> None:
    outcome = ExpectedOutcome()
    assert outcome.model_dump(exclude={"metadata"}) == dict.fromkeys(
        [
            "tools_called",
            "tools_not_called",
            "final_answer_contains",
            "final_answer_not_contains",
            "min_components",
            "max_components",
            "max_execution_time_ms",
        ]
    )
    assert outcome.metadata == {}


def test_expected_outcome_holds_the_seeds_example() -> None:
    outcome = ExpectedOutcome(
        tools_called=["run_sql"], final_answer_contains=["revenue", "SELECT"], max_execution_time_ms=10000
    )
    assert revenue_case(expected_outcome=outcome).expected_outcome.tools_called == ["run_sql"]


def test_min_components_may_equal_max_components() -> None:
    assert ExpectedOutcome(min_components=2, max_components=2).max_components == 2


def test_min_components_above_max_is_rejected() -> None:
    with pytest.raises(ValidationError, match="min_components must not exceed max_components"):
        ExpectedOutcome(min_components=3, max_components=1)


@pytest.mark.parametrize(
    ("field", "value"), [("min_components", -1), ("max_components", -1), ("max_execution_time_ms", 0)]
)
def test_bounds_must_be_sensible(field: str, value: float) -> None:
    with pytest.raises(ValidationError) as error:
        ExpectedOutcome(**{field: value})
    assert error_locations(error) == [field]


def test_expected_outcome_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError) as error:
        ExpectedOutcome.model_validate({"tools_caled": ["run_sql"]})
    assert error_locations(error) == ["tools_caled"]


def test_bad_outcome_errors_point_into_the_test_case() -> None:
    with pytest.raises(ValidationError) as error:
        TestCase.model_validate({"id": "a", "message": "hi", "expected_outcome": {"tools_called": "run_sql"}})
    assert error_locations(error) == ["expected_outcome.tools_called"]


# -- AgentResult --------------------------------------------------------------------------


def test_agent_result_defaults() -> None:
    outcome = agent_result()
    assert (outcome.tool_calls, outcome.llm_requests, outcome.metadata) == ([], [], {})
    assert (outcome.execution_time_ms, outcome.total_tokens, outcome.error) == (0.0, 0, None)


def test_final_answer_is_the_rich_text_components_in_order() -> None:
    components = [
        UiComponent("rich_text", "Revenue was"),
        UiComponent("table", "| a |"),
        UiComponent("rich_text", "$5M."),
    ]
    assert agent_result(components=components).get_final_answer() == "Revenue was\n$5M."


def test_final_answer_without_rich_text_is_empty() -> None:
    assert agent_result(components=[UiComponent("chart")]).get_final_answer() == ""


def test_tool_names_are_listed_in_call_order() -> None:
    calls = [{"name": "run_sql", "args": {}}, {"tool_name": "plot"}, {"name": "run_sql"}]
    assert agent_result(tool_calls=calls).get_tool_names_called() == ["run_sql", "plot", "run_sql"]


def test_no_tool_calls_means_no_names() -> None:
    assert agent_result().get_tool_names_called() == []


# -- EvaluationResult and TestCaseResult ---------------------------------------------------


def test_evaluation_result_gets_a_timestamp_and_empty_metrics() -> None:
    result = verdict("OutputEvaluator", True, 1.0)
    assert isinstance(result.timestamp, datetime) and result.metrics == {}


@pytest.mark.parametrize("score", [-0.1, 1.1])
def test_evaluation_score_is_between_zero_and_one(score: float) -> None:
    with pytest.raises(ValidationError) as error:
        verdict("OutputEvaluator", True, score)
    assert error_locations(error) == ["score"]


def case_result(*evaluations: EvaluationResult, error: str | None = None) -> TestCaseResult:
    return TestCaseResult(
        test_case=revenue_case(),
        agent_result=agent_result(error=error),
        evaluations=list(evaluations),
        execution_time_ms=12.0,
    )


def test_overall_passed_when_every_evaluation_passed() -> None:
    assert case_result(verdict("a", True, 1.0), verdict("b", True, 0.9)).overall_passed() is True


def test_overall_failed_when_one_evaluation_failed() -> None:
    assert case_result(verdict("a", True, 1.0), verdict("b", False, 0.2)).overall_passed() is False


def test_overall_failed_when_the_agent_errored() -> None:
    assert case_result(verdict("a", True, 1.0), error="boom").overall_passed() is False


def test_overall_score_is_the_average_of_the_evaluations() -> None:
    assert case_result(verdict("a", True, 1.0), verdict("b", False, 0.5)).overall_score() == 0.75


def test_overall_score_without_evaluations_is_zero() -> None:
    assert case_result().overall_score() == 0.0


# -- AgentVariant and EvaluationDataset ---------------------------------------------------


def test_agent_variant_metadata_defaults_to_empty() -> None:
    variant = AgentVariant(name="gpt-4", agent="agent.py:agent")
    assert (variant.name, variant.agent, variant.metadata) == ("gpt-4", "agent.py:agent", {})


def test_agent_variant_may_wrap_a_callable() -> None:
    def agent(message: str) -> str:
        return message

    variant = AgentVariant(name="echo", agent=agent, metadata={"model": "none"})
    assert variant.agent("hi") == "hi" and variant.metadata == {"model": "none"}


def test_dataset_collects_test_cases() -> None:
    dataset = EvaluationDataset.model_validate({"test_cases": [{"id": "a", "message": "hi"}]})
    assert (dataset.name, dataset.description, [c.id for c in dataset.test_cases]) == ("dataset", "", ["a"])


def test_dataset_errors_point_at_the_case() -> None:
    with pytest.raises(ValidationError) as error:
        EvaluationDataset.model_validate({"test_cases": [{"id": "a", "message": "hi"}, {"id": "b"}]})
    assert error_locations(error) == ["test_cases.1.message"]
