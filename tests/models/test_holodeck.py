"""HoloDeck's test execution models: test cases, files, metrics, results and reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from proctor.models.holodeck import (
    EvaluationConfig,
    EvaluationMetric,
    FileInput,
    LLMProvider,
    MetricResult,
    ProcessedFileInput,
    ReportSummary,
    TestCaseModel,
    TestReport,
    TestResult,
)

TIMESTAMP = "2025-11-01T14:30:00Z"


def error_locations(error: pytest.ExceptionInfo[ValidationError]) -> list[str]:
    return [".".join(str(part) for part in issue["loc"]) for issue in error.value.errors()]


def pdf(**fields) -> FileInput:
    return FileInput(**{"path": "doc.pdf", "type": "pdf", **fields})


def metric_result(**fields) -> MetricResult:
    return MetricResult(
        **{"metric_name": "groundedness", "score": 0.9, "passed": True, "evaluation_time_ms": 5, **fields}
    )


def result(**fields) -> TestResult:
    base = {
        "test_input": "What are your business hours?",
        "passed": True,
        "execution_time_ms": 10,
        "timestamp": TIMESTAMP,
    }
    return TestResult(**{**base, **fields})


def summary(**fields) -> ReportSummary:
    return ReportSummary(
        **{"total_tests": 1, "passed": 1, "failed": 0, "pass_rate": 100.0, "total_duration_ms": 10, **fields}
    )


def report(results: list[TestResult] | None = None, **fields) -> TestReport:
    results = [result()] if results is None else results
    base = {
        "agent_name": "Customer Support Agent",
        "agent_config_path": "./agent.yaml",
        "results": results,
        "summary": summary(),
        "timestamp": "2025-11-01T14:35:00Z",
        "holodeck_version": "0.1.0",
    }
    return TestReport(**{**base, **fields})


# -- TestCaseModel ------------------------------------------------------------------------


def test_a_test_case_needs_only_input() -> None:
    case = TestCaseModel(input="What are your business hours?")
    assert (case.name, case.expected_tools, case.ground_truth, case.files, case.evaluations) == (
        None,
        None,
        None,
        None,
        None,
    )


@pytest.mark.parametrize("text", ["", "   "])
def test_test_case_input_must_not_be_empty(text: str) -> None:
    with pytest.raises(ValidationError, match="input must be non-empty") as error:
        TestCaseModel(input=text)
    assert error_locations(error) == ["input"]


def test_test_case_input_is_required() -> None:
    with pytest.raises(ValidationError) as error:
        TestCaseModel.model_validate({"name": "x"})
    assert error_locations(error) == ["input"]


def test_test_case_name_must_not_be_empty_if_given() -> None:
    with pytest.raises(ValidationError, match="name must be non-empty") as error:
        TestCaseModel(input="q", name="")
    assert error_locations(error) == ["name"]


def test_ten_files_are_allowed() -> None:
    assert len(TestCaseModel(input="q", files=[pdf() for _ in range(10)]).files) == 10


def test_eleven_files_are_too_many() -> None:
    with pytest.raises(ValidationError, match="at most 10 files per test case; got 11") as error:
        TestCaseModel(input="q", files=[pdf() for _ in range(11)])
    assert error_locations(error) == ["files"]


def test_test_case_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError) as error:
        TestCaseModel.model_validate({"input": "q", "ground_truht": "x"})
    assert error_locations(error) == ["ground_truht"]


def test_bad_file_errors_point_into_the_files_list() -> None:
    with pytest.raises(ValidationError) as error:
        TestCaseModel.model_validate(
            {"input": "q", "files": [{"path": "a.pdf", "type": "pdf"}, {"path": "v", "type": "video"}]}
        )
    assert error_locations(error) == ["files.1.type"]


# -- FileInput ----------------------------------------------------------------------------


def test_file_needs_a_path_or_a_url() -> None:
    with pytest.raises(ValidationError, match="exactly one of 'path' or 'url'"):
        FileInput(type="pdf")


def test_file_cannot_have_both_path_and_url() -> None:
    with pytest.raises(ValidationError, match="exactly one of 'path' or 'url'"):
        FileInput(path="doc.pdf", url="https://example.com/doc.pdf", type="pdf")


@pytest.mark.parametrize("kind", ["image", "pdf", "text", "excel", "word", "powerpoint", "csv"])
def test_every_documented_file_type_is_accepted(kind: str) -> None:
    assert FileInput(path="f", type=kind).type == kind


def test_an_unknown_file_type_is_rejected_listing_the_valid_ones() -> None:
    with pytest.raises(ValidationError, match="type must be one of csv, excel, image, pdf") as error:
        FileInput(path="clip.mp4", type="video")
    assert error_locations(error) == ["type"]


@pytest.mark.parametrize("pages", [[0], [1, -2]])
def test_pages_must_be_positive(pages: list[int]) -> None:
    with pytest.raises(ValidationError, match="pages must be positive") as error:
        pdf(pages=pages)
    assert error_locations(error) == ["pages"]


def test_excel_sheet_and_range_are_kept() -> None:
    sheet = FileInput(path="q.xlsx", type="excel", sheet="Q1", range="A1:E100", description="Sales")
    assert (sheet.sheet, sheet.range, sheet.description) == ("Q1", "A1:E100", "Sales")


def test_remote_files_are_cached_by_default() -> None:
    assert FileInput(url="https://example.com/doc.pdf", type="pdf").cache is True


def test_remote_files_may_opt_out_of_the_cache() -> None:
    assert FileInput(url="https://example.com/doc.pdf", type="pdf", cache=False).cache is False


def test_local_files_have_no_cache_default() -> None:
    assert pdf().cache is None


def test_file_input_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError) as error:
        pdf(pgaes=[1])
    assert error_locations(error) == ["pgaes"]


# -- EvaluationMetric and EvaluationConfig ------------------------------------------------


def test_metric_defaults() -> None:
    metric = EvaluationMetric(metric="groundedness")
    assert metric.enabled is True
    assert metric.fail_on_error is False
    assert (metric.threshold, metric.scale, metric.model, metric.retry_on_failure) == (None, None, None, None)
    assert (metric.timeout_ms, metric.custom_prompt, metric.extra_args) == (None, None, {})


@pytest.mark.parametrize("name", ["", "  "])
def test_metric_name_must_not_be_empty(name: str) -> None:
    with pytest.raises(ValidationError, match="metric must be non-empty") as error:
        EvaluationMetric(metric=name)
    assert error_locations(error) == ["metric"]


def test_threshold_must_be_numeric() -> None:
    with pytest.raises(ValidationError) as error:
        EvaluationMetric(metric="g", threshold="high")
    assert error_locations(error) == ["threshold"]


@pytest.mark.parametrize("retries", [1, 2, 3])
def test_one_to_three_retries_are_allowed(retries: int) -> None:
    assert EvaluationMetric(metric="g", retry_on_failure=retries).retry_on_failure == retries


@pytest.mark.parametrize("retries", [0, 4])
def test_retries_outside_one_to_three_are_rejected(retries: int) -> None:
    with pytest.raises(ValidationError) as error:
        EvaluationMetric(metric="g", retry_on_failure=retries)
    assert error_locations(error) == ["retry_on_failure"]


@pytest.mark.parametrize("timeout", [0, -100])
def test_timeout_must_be_positive(timeout: int) -> None:
    with pytest.raises(ValidationError) as error:
        EvaluationMetric(metric="g", timeout_ms=timeout)
    assert error_locations(error) == ["timeout_ms"]


def test_extra_metric_fields_are_kept_as_extra_args() -> None:
    metric = EvaluationMetric(metric="contains", values=["9am"], case_sensitive=False)
    assert metric.extra_args == {"values": ["9am"], "case_sensitive": False}


def test_metric_model_may_be_a_bare_model_name() -> None:
    assert EvaluationMetric(metric="g", model="gpt-4o").model == LLMProvider(provider="openai", name="gpt-4o")


def test_llm_provider_keeps_api_key_out_of_dumps() -> None:
    provider = LLMProvider(name="gpt-4o", api_key="${OPENAI_API_KEY}")
    assert "api_key" not in provider.model_dump()
    assert "OPENAI_API_KEY" not in repr(provider)


def test_evaluation_config_needs_at_least_one_metric() -> None:
    with pytest.raises(ValidationError) as error:
        EvaluationConfig(metrics=[])
    assert error_locations(error) == ["metrics"]


def test_evaluation_config_holds_a_default_model_and_metrics() -> None:
    config = EvaluationConfig.model_validate({"model": "gpt-4o-mini", "metrics": [{"metric": "relevance"}]})
    assert config.model.name == "gpt-4o-mini" and config.metrics[0].metric == "relevance"


# -- ProcessedFileInput -------------------------------------------------------------------


def test_processed_file_defaults() -> None:
    processed = ProcessedFileInput(original=pdf(), markdown_content="# Doc", processing_time_ms=150)
    assert (processed.metadata, processed.cached_path, processed.error) == ({}, None, None)


@pytest.mark.parametrize("content", ["", " \n"])
def test_processed_file_needs_markdown_unless_it_failed(content: str) -> None:
    with pytest.raises(ValidationError, match="markdown_content must be non-empty if no error"):
        ProcessedFileInput(original=pdf(), markdown_content=content, processing_time_ms=1)


def test_a_failed_file_may_have_no_markdown() -> None:
    processed = ProcessedFileInput(original=pdf(), markdown_content="", processing_time_ms=1, error="corrupt")
    assert processed.error == "corrupt"


def test_processing_time_cannot_be_negative() -> None:
    with pytest.raises(ValidationError) as error:
        ProcessedFileInput(original=pdf(), markdown_content="x", processing_time_ms=-1)
    assert error_locations(error) == ["processing_time_ms"]


def test_zero_processing_time_is_fine() -> None:
    assert (
        ProcessedFileInput(original=pdf(), markdown_content="x", processing_time_ms=0).processing_time_ms == 0
    )


# -- MetricResult -------------------------------------------------------------------------


def test_metric_result_defaults() -> None:
    metric = MetricResult(metric_name="g", passed=False, evaluation_time_ms=0)
    assert (metric.score, metric.threshold, metric.scale, metric.error, metric.model_used) == (
        None,
        None,
        None,
        None,
        None,
    )
    assert metric.retry_count == 0


def test_score_may_reach_the_top_of_its_scale() -> None:
    assert metric_result(score=5, scale=5).score == 5


@pytest.mark.parametrize("score", [5.5, -1])
def test_score_outside_its_scale_is_rejected(score: float) -> None:
    with pytest.raises(ValidationError, match="outside the scale 0..5"):
        metric_result(score=score, scale=5)


@pytest.mark.parametrize("retries", [0, 3])
def test_retry_count_zero_to_three_is_allowed(retries: int) -> None:
    assert metric_result(retry_count=retries).retry_count == retries


@pytest.mark.parametrize("retries", [-1, 4])
def test_retry_count_outside_zero_to_three_is_rejected(retries: int) -> None:
    with pytest.raises(ValidationError) as error:
        metric_result(retry_count=retries)
    assert error_locations(error) == ["retry_count"]


def test_metric_result_name_must_not_be_empty() -> None:
    with pytest.raises(ValidationError) as error:
        metric_result(metric_name=" ")
    assert error_locations(error) == ["metric_name"]


def test_evaluation_time_cannot_be_negative() -> None:
    with pytest.raises(ValidationError) as error:
        metric_result(evaluation_time_ms=-5)
    assert error_locations(error) == ["evaluation_time_ms"]


# -- TestResult ---------------------------------------------------------------------------


def test_result_defaults() -> None:
    outcome = result()
    assert (outcome.test_name, outcome.agent_response, outcome.expected_tools, outcome.tools_matched) == (
        None,
        None,
        None,
        None,
    )
    assert (outcome.processed_files, outcome.tool_calls, outcome.metric_results, outcome.errors) == (
        [],
        [],
        [],
        [],
    )


def test_tools_matched_is_required_when_tools_were_expected() -> None:
    with pytest.raises(ValidationError, match="tools_matched must be set when expected_tools is provided"):
        result(expected_tools=["get_hours"])


def test_matched_expected_tools_can_pass() -> None:
    assert result(expected_tools=["get_hours"], tool_calls=["get_hours"], tools_matched=True).passed


@pytest.mark.parametrize(
    "fields",
    [
        {"metric_results": [metric_result(), metric_result(metric_name="relevance", passed=False)]},
        {"errors": ["agent timed out"]},
        {"expected_tools": ["get_hours"], "tools_matched": False},
    ],
    ids=["failed-metric", "errors", "tools-not-matched"],
)
def test_result_cannot_pass_when_something_failed(fields: dict) -> None:
    with pytest.raises(ValidationError, match="passed must be False"):
        result(passed=True, **fields)
    assert result(passed=False, **fields).passed is False


def test_metric_counts() -> None:
    outcome = result(
        passed=False,
        metric_results=[
            metric_result(),
            metric_result(metric_name="b", passed=False),
            metric_result(metric_name="c"),
        ],
    )
    assert (outcome.metrics_passed, outcome.metrics_total) == (2, 3)


def test_metric_counts_without_metrics_are_zero() -> None:
    assert (result().metrics_passed, result().metrics_total) == (0, 0)


def test_result_input_must_not_be_empty() -> None:
    with pytest.raises(ValidationError) as error:
        result(test_input="")
    assert error_locations(error) == ["test_input"]


def test_execution_time_cannot_be_negative() -> None:
    with pytest.raises(ValidationError) as error:
        result(execution_time_ms=-1)
    assert error_locations(error) == ["execution_time_ms"]


# -- ReportSummary ------------------------------------------------------------------------


def test_summary_matches_the_seed_example() -> None:
    seed = summary(
        total_tests=10,
        passed=8,
        failed=2,
        pass_rate=80.0,
        total_duration_ms=45000,
        metrics_evaluated={"groundedness": 10},
        average_scores={"groundedness": 0.82},
    )
    assert seed.average_scores == {"groundedness": 0.82}


def test_summary_defaults_have_no_metric_stats() -> None:
    assert (summary().metrics_evaluated, summary().average_scores) == ({}, {})


def test_summary_total_must_equal_passed_plus_failed() -> None:
    with pytest.raises(ValidationError, match="total_tests must equal passed \\+ failed"):
        summary(total_tests=3, passed=1, failed=1)


@pytest.mark.parametrize("rate", [0.0, 100.0])
def test_pass_rate_bounds_are_inclusive(rate: float) -> None:
    assert summary(pass_rate=rate).pass_rate == rate


@pytest.mark.parametrize("rate", [-1.0, 100.5])
def test_pass_rate_outside_zero_to_hundred_is_rejected(rate: float) -> None:
    with pytest.raises(ValidationError) as error:
        summary(pass_rate=rate)
    assert error_locations(error) == ["pass_rate"]


def test_total_duration_cannot_be_negative() -> None:
    with pytest.raises(ValidationError) as error:
        summary(total_duration_ms=-1)
    assert error_locations(error) == ["total_duration_ms"]


# -- TestReport ---------------------------------------------------------------------------


def test_report_needs_at_least_one_result() -> None:
    with pytest.raises(ValidationError) as error:
        report(results=[], summary=summary(total_tests=0, passed=0, failed=0, pass_rate=0.0))
    assert error_locations(error) == ["results"]


def test_summary_total_must_equal_the_number_of_results() -> None:
    with pytest.raises(ValidationError, match="summary.total_tests must equal the number of results"):
        report(results=[result(), result()])


@pytest.mark.parametrize("stamp", ["2025-11-01T14:35:00Z", "2025-11-01T14:35:00+02:00", "2025-11-01"])
def test_iso_timestamps_are_accepted(stamp: str) -> None:
    assert report(timestamp=stamp).timestamp == stamp


@pytest.mark.parametrize("stamp", ["yesterday", "01/11/2025 14:35"])
def test_non_iso_timestamps_are_rejected(stamp: str) -> None:
    with pytest.raises(ValidationError, match="timestamp must be ISO 8601") as error:
        report(timestamp=stamp)
    assert error_locations(error) == ["timestamp"]


def test_environment_defaults_to_empty() -> None:
    assert report().environment == {}


def test_to_json_leaves_out_none_fields() -> None:
    data = json.loads(report().to_json())
    assert "agent_response" not in data["results"][0] and "test_name" not in data["results"][0]
    assert data["agent_name"] == "Customer Support Agent"


def test_to_json_indents_by_two_by_default() -> None:
    assert report().to_json().startswith('{\n  "agent_name"')


def test_to_file_writes_the_json_that_reloads_equal(tmp_path: Path) -> None:
    path = tmp_path / "test-report.json"
    report().to_file(str(path))
    assert path.read_text(encoding="utf-8") == report().to_json()
    assert TestReport.model_validate_json(path.read_text(encoding="utf-8")) == report()


def seed_report() -> TestReport:
    """The seed's Markdown example: one passing test with a matched tool and one metric."""
    passing = result(
        test_name="Business hours query",
        agent_response="We're open Monday-Friday 9AM-5PM EST",
        tool_calls=["lookup"],
        expected_tools=["lookup"],
        tools_matched=True,
        metric_results=[metric_result(score=0.95, threshold=0.7)],
        execution_time_ms=3500,
    )
    return report(results=[passing], summary=summary(total_duration_ms=45000))


def test_markdown_has_the_seeds_header_and_summary_table() -> None:
    markdown = seed_report().to_markdown()
    assert markdown.startswith("# Test Report: Customer Support Agent\n")
    assert "**Tests**: 1 passed, 0 failed (100% pass rate)" in markdown
    assert "**Duration**: 45.0s" in markdown
    assert "## Summary" in markdown
    assert "| Metric | Avg Score | Pass Rate |" in markdown
    assert "| groundedness | 0.95 | 100% |" in markdown


def test_markdown_shows_each_test_in_the_seeds_layout() -> None:
    markdown = seed_report().to_markdown()
    assert "## Test Results" in markdown
    assert "### ✅ Test 1: Business hours query (PASSED)" in markdown
    assert "**Input**: What are your business hours?" in markdown
    assert "**Tools Called**: lookup ✅ (matched expected)" in markdown
    assert "**Execution Time**: 3.5s" in markdown
    assert "**Metrics**:\n- Groundedness: 0.95 / 0.70 ✅" in markdown


def test_markdown_marks_failed_tests_and_metrics() -> None:
    failing = result(
        test_name="Refunds",
        passed=False,
        metric_results=[metric_result(metric_name="relevance", score=0.4, threshold=0.7, passed=False)],
    )
    markdown = report(results=[failing], summary=summary(passed=0, failed=1, pass_rate=0.0)).to_markdown()
    assert "### ❌ Test 1: Refunds (FAILED)" in markdown
    assert "- Relevance: 0.40 / 0.70 ❌" in markdown


def test_markdown_shows_metric_errors() -> None:
    errored = result(
        passed=False, metric_results=[metric_result(score=None, passed=False, error="judge timed out")]
    )
    markdown = report(results=[errored], summary=summary(passed=0, failed=1, pass_rate=0.0)).to_markdown()
    assert "- Groundedness: error: judge timed out ❌" in markdown


def test_markdown_renders_a_metric_without_score_or_error() -> None:
    unscored = result(passed=False, metric_results=[metric_result(score=None, passed=False)])
    markdown = report(results=[unscored], summary=summary(passed=0, failed=1, pass_rate=0.0)).to_markdown()
    assert "- Groundedness:" in markdown
