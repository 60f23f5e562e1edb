"""The evaluation flow end to end under a Prefect test harness: database, reports, artifacts."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.flows.evaluate import EvaluationRequest, run_evaluation
from proctor.models.agentflow import EvalReport
from proctor.models.holodeck import TestReport
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow, RunStatus
from proctor.storage import get_engine
from tests.conftest import EXAMPLE_SUITE

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

FLAKY_AGENT = """
import asyncio

def agent(request):
    text = request.input
    if text == "raise":
        request.record_tool_call("half_done", {"step": 1})
        raise ValueError("the agent broke")
    if text == "garbage":
        return 42
    if text == "hang":
        import time
        time.sleep(3)
    return "fine, " + text
"""

FLAKY_SUITE = """
dataset:
  name: flaky
  metadata: {agent: "flaky_agent.py:agent"}
  test_cases:
    - {id: ok_1, message: "one", expected_outcome: {final_answer_contains: ["fine"]}}
    - {id: raises, message: "raise", expected_outcome: {final_answer_contains: ["fine"]}}
    - {id: garbage, message: "garbage", expected_outcome: {final_answer_contains: ["fine"]}}
    - {id: hangs, message: "hang", expected_outcome: {final_answer_contains: ["fine"]}}
    - {id: ok_2, message: "two", expected_outcome: {final_answer_contains: ["not in answer"]}}
"""


def _run(request: EvaluationRequest):
    return asyncio.run(run_evaluation(request))


def _rows(url: str, run_id) -> dict[str, CaseResultRow]:
    with Session(get_engine(url)) as session:
        return {
            r.case_id: r for r in session.exec(select(CaseResultRow).where(CaseResultRow.run_id == run_id))
        }


def test_example_suite_is_stored_and_reported(sqlite_url: str, tmp_path: Path) -> None:
    summary = _run(
        EvaluationRequest(suite=str(EXAMPLE_SUITE), database_url=sqlite_url, report_dir=str(tmp_path / "r"))
    )
    assert (summary.status, summary.total, summary.passed, summary.failed) == (RunStatus.COMPLETED, 5, 4, 1)
    rows = _rows(sqlite_url, summary.run_id)
    assert set(rows) == {"basic_weather", "paris_conversation", "two_cities", "greeting", "fahrenheit_units"}
    assert rows["fahrenheit_units"].passed is False and rows["fahrenheit_units"].state == "COMPLETE"
    paris = rows["paris_conversation"]
    assert [t["input"] for t in paris.turns] == [
        "What's the weather in Paris?",
        "What about tomorrow?",
        "Should I bring an umbrella?",
    ]
    assert [c["name"] for c in paris.tool_calls] == ["get_weather", "get_forecast", "get_forecast"]
    assert paris.total_tokens > 0 and paris.agent_ms >= 0
    with Session(get_engine(sqlite_url)) as session:
        metrics = session.exec(select(MetricResultRow).where(MetricResultRow.run_id == summary.run_id)).all()
        run = session.get(EvalRun, summary.run_id)
    assert len(metrics) == 9  # greeting has no expected trajectory, so no trajectory_match
    assert run.flow_run_id and run.planned_cases == 5 and run.report_dir == str(tmp_path / "r")

    report = TestReport.model_validate_json((tmp_path / "r" / "report.json").read_text())
    assert report.summary.total_tests == 5 and report.summary.passed == 4
    assert [r.test_name for r in report.results][0] == "Tokyo weather lookup"
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "# Test Report: agent.py:weather\\_agent" in markdown
    assert "### ❌ Test 5: New York in Fahrenheit" in markdown
    eval_report = EvalReport.model_validate_json((tmp_path / "r" / "eval_report.json").read_text())
    assert eval_report.summary.pass_rate == pytest.approx(0.8)


def test_artifacts_are_published_under_a_stable_key(sqlite_url: str, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    summary = _run(
        EvaluationRequest(suite=str(EXAMPLE_SUITE), database_url=sqlite_url, report_dir=str(tmp_path))
    )

    async def read() -> list:
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["proctor-weather-agent-v1"]))
            )

    ours = [a for a in asyncio.run(read()) if str(summary.run_id) in a.data]
    assert len(ours) == 1 and "4/5 passed" in ours[0].data and "fahrenheit" in ours[0].data.lower()


def test_a_failing_agent_fails_its_case_never_the_run(sqlite_url: str, tmp_path: Path) -> None:
    (tmp_path / "flaky_agent.py").write_text(textwrap.dedent(FLAKY_AGENT))
    suite = tmp_path / "flaky.yaml"
    suite.write_text(FLAKY_SUITE)
    summary = _run(
        EvaluationRequest(
            suite=str(suite),
            database_url=sqlite_url,
            agent_timeout_s=1.0,
            chunk_size=2,
            report_dir=str(tmp_path / "r"),
        )
    )
    assert summary.status is RunStatus.COMPLETED
    assert (summary.total, summary.passed, summary.failed, summary.errored) == (5, 1, 4, 3)
    rows = _rows(sqlite_url, summary.run_id)
    assert {k: r.state for k, r in rows.items()} == {
        "ok_1": "COMPLETE",
        "raises": "AGENT_FAILED",
        "garbage": "AGENT_FAILED",
        "hangs": "AGENT_FAILED",
        "ok_2": "COMPLETE",
    }
    assert "the agent broke" in rows["raises"].errors[0]
    assert rows["raises"].tool_calls == [{"name": "half_done", "args": {"step": 1}}]
    assert "returned int" in rows["garbage"].errors[0]
    assert "within 1 s" in rows["hangs"].errors[0]
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert sum(1 for r in report["results"] if r["errors"]) == 3
