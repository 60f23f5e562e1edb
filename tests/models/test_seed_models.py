"""The three seed designs' models: fields, defaults, methods and validation rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from models.agentflow import (
    CriterionConfig,
    EvalCase,
    EvalConfig,
    EvalSet,
    EvalSummary,
    Invocation,
    MatchType,
    MessageContent,
    Rubric,
    StepType,
    ToolCall,
    TrajectoryStep,
)
from models.holodeck import (
    EvaluationConfig,
    EvaluationMetric,
    FileInput,
    MetricResult,
    ProcessedFileInput,
    ReportSummary,
    TestCaseModel,
    TestReport,
    TestResult,
)
from models.vanna import (
    AgentResult,
    AgentVariant,
    EvaluationResult,
    ExpectedOutcome,
    TestCase,
    TestCaseResult,
    UiComponent,
)

# -- agentflow ----------------------------------------------------------------------------


def _evalset() -> EvalSet:
    return EvalSet(
        eval_set_id="weather_v1",
        name="Weather",
        eval_cases=[
            EvalCase(
                eval_id="tokyo",
                conversation=[
                    Invocation(
                        invocation_id="turn_1",
                        user_content=MessageContent.user("What's the weather in Tokyo?"),
                        expected_tool_trajectory=[ToolCall(name="get_weather", args={"city": "Tokyo"})],
                        expected_final_response=MessageContent.assistant("22°C and clear."),
                    )
                ],
                tags=["weather"],
            )
        ],
        metadata={"version": "1.0"},
    )


def test_an_evalset_round_trips_through_its_file(tmp_path: Path) -> None:
    path = tmp_path / "weather.evalset.json"
    _evalset().save(path)
    assert EvalSet.load(path) == _evalset()


def test_message_content_helpers() -> None:
    assert MessageContent.user("Hello!").role == "user"
    assert MessageContent.assistant("Hi").get_text() == "Hi"
    parts = MessageContent(role="model", content=[{"text": "a"}, {"function_call": {}}, {"text": "b"}])
    assert parts.get_text() == "a\nb"


def test_tool_calls_match_on_name_args_and_optionally_id() -> None:
    expected = ToolCall(name="get_weather", args={"city": "Tokyo"}, call_id="1")
    assert expected.matches(ToolCall(name="get_weather", args={"city": "Tokyo"}, call_id="2"))
    assert not expected.matches(ToolCall(name="get_weather", args={"city": "Osaka"}))
    assert expected.matches(ToolCall(name="get_weather", args={"city": "Osaka"}), check_args=False)
    assert not expected.matches(
        ToolCall(name="get_weather", args={"city": "Tokyo"}, call_id="2"), check_call_id=True
    )
    assert not expected.matches(ToolCall(name="get_forecast", args={"city": "Tokyo"}))


def test_trajectory_step_factories() -> None:
    node = TrajectoryStep.node("agent_node", timestamp=1.0)
    tool = TrajectoryStep.tool("get_weather", args={"city": "Tokyo"}, timestamp=2.0)
    assert (node.step_type, node.name, node.timestamp) == (StepType.NODE, "agent_node", 1.0)
    assert (tool.step_type, tool.args) == (StepType.TOOL, {"city": "Tokyo"})


def test_default_eval_config_has_the_three_documented_criteria() -> None:
    criteria = EvalConfig.default().criteria
    assert {name: c.threshold for name, c in criteria.items()} == {
        "trajectory_match": 0.8,
        "response_match": 0.7,
        "llm_judge": 0.7,
    }
    assert criteria["llm_judge"].judge_model == "gpt-4o-mini"


def test_criterion_defaults_and_adk_shorthand() -> None:
    criterion = CriterionConfig()
    assert (
        criterion.enabled,
        criterion.threshold,
        criterion.match_type,
        criterion.judge_model,
        criterion.rubrics,
    ) == (True, 0.8, MatchType.EXACT, "gpt-4o-mini", [])
    config = EvalConfig.model_validate(
        {"criteria": {"tool_trajectory_avg_score": 1.0, "x": {"match_type": "in_order"}}}
    )
    assert config.criteria["tool_trajectory_avg_score"].threshold == 1.0
    assert config.criteria["x"].match_type is MatchType.IN_ORDER


def test_rubric_weight_defaults_to_one() -> None:
    assert Rubric(name="clarity", description="clear?", scoring_guide="5=clear").weight == 1.0


def test_evalset_rejects_duplicate_case_ids_and_blank_ids() -> None:
    case = _evalset().eval_cases[0]
    with pytest.raises(ValidationError, match="duplicate eval_id 'tokyo'"):
        EvalSet(eval_set_id="s", eval_cases=[case, case])
    with pytest.raises(ValidationError, match="eval_id"):
        EvalCase(eval_id=" ")


def test_eval_summary_counts_must_add_up() -> None:
    with pytest.raises(ValidationError, match="must equal total_cases"):
        EvalSummary(total_cases=3, passed_cases=1, failed_cases=1, pass_rate=0.3, avg_score=0.5)


# -- HoloDeck -----------------------------------------------------------------------------


def _file(**fields) -> FileInput:
    return FileInput(**{"type": "pdf", "path": "doc.pdf", **fields})


def test_test_case_rules() -> None:
    with pytest.raises(ValidationError, match="input must be non-empty"):
        TestCaseModel(input="  ")
    with pytest.raises(ValidationError, match="name must be non-empty"):
        TestCaseModel(input="q", name="")
    with pytest.raises(ValidationError, match="at most 10 files"):
        TestCaseModel(input="q", files=[_file() for _ in range(11)])
    assert TestCaseModel(input="q", files=[_file() for _ in range(10)]).files


def test_file_input_rules() -> None:
    with pytest.raises(ValidationError, match="exactly one of 'path' or 'url'"):
        FileInput(type="pdf")
    with pytest.raises(ValidationError, match="exactly one of 'path' or 'url'"):
        _file(url="https://x/doc.pdf")
    with pytest.raises(ValidationError, match="type must be one of"):
        _file(type="video")
    with pytest.raises(ValidationError, match="pages must be positive"):
        _file(pages=[0, 1])
    assert FileInput(url="https://x/doc.pdf", type="pdf").cache is True
    assert _file().cache is None


def test_evaluation_metric_rules() -> None:
    metric = EvaluationMetric(metric="groundedness")
    assert (metric.enabled, metric.fail_on_error, metric.threshold) == (True, False, None)
    for bad in ({"retry_on_failure": 4}, {"retry_on_failure": 0}, {"timeout_ms": 0}, {"metric": ""}):
        with pytest.raises(ValidationError):
            EvaluationMetric(**{"metric": "groundedness", **bad})
    assert EvaluationMetric(metric="contains", values=["x"]).extra_args == {"values": ["x"]}
    with pytest.raises(ValidationError, match="at least 1"):
        EvaluationConfig(metrics=[])
    assert EvaluationConfig(model="gpt-4o", metrics=[metric]).model.name == "gpt-4o"


def test_processed_file_and_metric_result_rules() -> None:
    with pytest.raises(ValidationError, match="markdown_content must be non-empty"):
        ProcessedFileInput(original=_file(), markdown_content="", processing_time_ms=1)
    assert ProcessedFileInput(original=_file(), markdown_content="", processing_time_ms=1, error="bad").error
    with pytest.raises(ValidationError):
        ProcessedFileInput(original=_file(), markdown_content="x", processing_time_ms=-1)
    with pytest.raises(ValidationError, match="outside the scale"):
        MetricResult(metric_name="g", score=6, scale=5, passed=True, evaluation_time_ms=1)
    with pytest.raises(ValidationError):
        MetricResult(metric_name="g", score=1, passed=True, evaluation_time_ms=1, retry_count=4)


def _result(**fields) -> TestResult:
    base = {"test_input": "q", "passed": True, "execution_time_ms": 10, "timestamp": "2025-11-01T14:30:00Z"}
    return TestResult(**{**base, **fields})


def test_test_result_rules_and_counts() -> None:
    metrics = [
        MetricResult(metric_name="a", score=1, passed=True, evaluation_time_ms=1),
        MetricResult(metric_name="b", score=0, passed=False, evaluation_time_ms=1),
    ]
    result = _result(passed=False, metric_results=metrics)
    assert (result.metrics_passed, result.metrics_total) == (1, 2)
    with pytest.raises(ValidationError, match="passed must be False"):
        _result(metric_results=metrics)
    with pytest.raises(ValidationError, match="passed must be False"):
        _result(errors=["boom"])
    with pytest.raises(ValidationError, match="tools_matched must be set"):
        _result(expected_tools=["get_hours"])
    with pytest.raises(ValidationError, match="passed must be False"):
        _result(expected_tools=["get_hours"], tools_matched=False)
    with pytest.raises(ValidationError, match="test_input must be non-empty"):
        _result(test_input="")


def test_report_rules_and_serialisation(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="total_tests must equal"):
        ReportSummary(total_tests=2, passed=1, failed=0, pass_rate=50, total_duration_ms=1)
    with pytest.raises(ValidationError):
        ReportSummary(total_tests=1, passed=1, failed=0, pass_rate=101, total_duration_ms=1)
    summary = ReportSummary(total_tests=1, passed=1, failed=0, pass_rate=100, total_duration_ms=10)
    fields = {
        "agent_name": "a",
        "agent_config_path": "agent.yaml",
        "summary": summary,
        "holodeck_version": "0.1",
    }
    with pytest.raises(ValidationError, match="at least 1"):
        TestReport(results=[], timestamp="2025-11-01T14:30:00Z", **fields)
    with pytest.raises(ValidationError, match="ISO 8601"):
        TestReport(results=[_result()], timestamp="yesterday", **fields)
    report = TestReport(results=[_result()], timestamp="2025-11-01T14:30:00Z", **fields)
    assert "agent_response" not in report.to_json()  # None fields are left out
    report.to_file(str(tmp_path / "r.json"))
    assert TestReport.model_validate_json((tmp_path / "r.json").read_text()) == report


# -- Vanna --------------------------------------------------------------------------------


def test_vanna_models() -> None:
    case = TestCase(
        id="revenue",
        message="Revenue last month?",
        expected_outcome=ExpectedOutcome(tools_called=["run_sql"], max_execution_time_ms=10000),
    )
    assert case.user.id and case.conversation_id is None
    with pytest.raises(ValidationError, match="min_components must not exceed"):
        ExpectedOutcome(min_components=3, max_components=1)
    agent = AgentResult(
        test_case_id="revenue",
        components=[
            UiComponent("rich_text", "Revenue was"),
            UiComponent("chart"),
            UiComponent("rich_text", "$5"),
        ],
        tool_calls=[{"name": "run_sql", "args": {}}],
    )
    assert agent.get_final_answer() == "Revenue was\n$5" and agent.get_tool_names_called() == ["run_sql"]
    evaluations = [
        EvaluationResult(test_case_id="revenue", evaluator_name=n, passed=p, score=s, reasoning="")
        for n, p, s in (("a", True, 1.0), ("b", False, 0.5))
    ]
    result = TestCaseResult(test_case=case, agent_result=agent, evaluations=evaluations, execution_time_ms=5)
    assert result.overall_passed() is False and result.overall_score() == 0.75
    assert TestCaseResult(case, agent, [], 1).overall_score() == 0.0
    assert AgentVariant(name="gpt-4", agent="agent.py:agent").metadata == {}
    with pytest.raises(ValidationError):
        EvaluationResult(test_case_id="x", evaluator_name="e", passed=True, score=1.5, reasoning="")
