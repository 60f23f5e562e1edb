"""Reports: HoloDeck's Markdown layout, escaping of agent text, and the stored-run reports."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlmodel import Session

from proctor.execution.pipeline import CaseWork, RunSettings, release_runtime, run_chunk, runtime_for
from proctor.models.agentflow import EvalReport
from proctor.models.case import MetricSpec
from proctor.models.holodeck import MetricResult, ReportSummary, TestReport, TestResult
from proctor.models.tables import EvalRun, RunStatus
from proctor.rendering import md_inline
from proctor.reporting import case_rows, summary_markdown, write_reports
from proctor.storage import get_engine
from proctor.tasks.persist import close_run
from tests.factories import make_case, stored_run


def _report(*results: TestResult) -> TestReport:
    passed = sum(r.passed for r in results)
    return TestReport(
        agent_name="Support Agent",
        agent_config_path="./agent.yaml",
        results=list(results),
        summary=ReportSummary(
            total_tests=len(results),
            passed=passed,
            failed=len(results) - passed,
            pass_rate=100.0 * passed / len(results),
            total_duration_ms=3500,
        ),
        timestamp="2025-11-01T14:30:00Z",
        holodeck_version="0.1.0",
    )


def _result(name: str, response: str, score: float, passed: bool) -> TestResult:
    return TestResult(
        test_name=name,
        test_input="What are your business hours?",
        agent_response=response,
        tool_calls=["get_hours"],
        expected_tools=["get_hours"],
        tools_matched=True,
        metric_results=[
            MetricResult(
                metric_name="groundedness", score=score, threshold=0.7, passed=passed, evaluation_time_ms=1200
            )
        ],
        passed=passed,
        execution_time_ms=3500,
        timestamp="2025-11-01T14:30:00Z",
    )


def test_to_markdown_follows_holodecks_layout() -> None:
    markdown = _report(_result("Business hours query", "Open 9-5", 0.95, True)).to_markdown()
    assert markdown.startswith("# Test Report: Support Agent\n")
    assert "**Tests**: 1 passed, 0 failed (100% pass rate)" in markdown
    assert "| Metric | Avg Score | Pass Rate |" in markdown and "| groundedness | 0.95 | 100% |" in markdown
    assert "### ✅ Test 1: Business hours query (PASSED)" in markdown
    assert "**Tools Called**: get\\_hours ✅ (matched expected)" in markdown
    assert "- Groundedness: 0.95 / 0.70 ✅" in markdown


def test_agent_text_cannot_break_the_markdown() -> None:
    hostile = "ok | injected cell\n# Fake heading\n<script>alert(1)</script> [link](http://x)"
    markdown = _report(_result("hostile", hostile, 0.2, False)).to_markdown()
    assert "\n# Fake heading" not in markdown
    assert "<script>" not in markdown and "\\<script\\>" in markdown
    assert "ok \\| injected cell" in markdown
    assert md_inline("a\nb\n\nc") == "a b c"


def _stored_run(url: str, tmp_path: Path, answers: dict[str, str]) -> EvalRun:
    (tmp_path / "agent.py").write_text(
        f"ANSWERS = {answers!r}\ndef agent(request):\n    return ANSWERS[request.case_id]\n"
    )
    run_id = stored_run(url, suite_id="hours")
    settings = RunSettings(
        run_id=run_id, database_url=url, agent=f"{tmp_path / 'agent.py'}:agent", suite_dir=str(tmp_path)
    )
    spec = [MetricSpec(name="contains", args={"values": ["9"]})]
    works = [CaseWork(i, make_case(case_id=cid, metrics=spec)) for i, cid in enumerate(answers)]
    asyncio.run(run_chunk(works, runtime_for(settings)))
    release_runtime(run_id)
    return close_run(database_url=url, run_id=run_id, status=RunStatus.COMPLETED)


def test_reports_of_a_stored_run_agree_with_the_database(sqlite_url: str, tmp_path: Path) -> None:
    answers = {"a": "Open 9 to 5", "b": "Closed | <b>today</b>", "c": "From 9"}
    run = _stored_run(sqlite_url, tmp_path, answers)
    with Session(get_engine(sqlite_url)) as session:
        files = write_reports(session=session, run=session.get(EvalRun, run.id), directory=tmp_path / "out")
        rows = case_rows(session=session, run=session.get(EvalRun, run.id))
        summary = summary_markdown(session=session, run=session.get(EvalRun, run.id))
    report = TestReport.model_validate_json(files.json.read_text())
    assert [r.test_name for r in report.results] == ["a", "b", "c"]
    assert (report.summary.passed, report.summary.failed) == (2, 1)
    assert report.summary.average_scores["contains"] == 2 / 3
    eval_report = EvalReport.model_validate_json(files.eval_report.read_text())
    assert [r.passed for r in eval_report.results] == [True, False, True]
    markdown = files.markdown.read_text()
    assert "Closed \\| \\<b\\>today\\</b\\>" in markdown and "<b>" not in markdown
    assert "- Contains: 0.00 / 1.00 ❌ (missing: '9')" in markdown
    assert [r["case"] for r in rows] == ["b", "a", "c"]  # failing first
    assert "2/3 passed" in summary and "contains below threshold" in summary
    assert not list(files.directory.glob("*.tmp"))
    assert json.loads(files.json.read_text())["holodeck_version"].startswith("proctor ")
    # the summary's total is the sum of the cases' whole milliseconds as shown, to the ms
    assert report.summary.total_duration_ms == sum(r.execution_time_ms for r in report.results)
    junit = files.junit.read_text()
    assert 'tests="3"' in junit and 'failures="1"' in junit and 'skipped="0"' in junit


def test_verdict_json_carries_the_runs_tokens_calls_and_cost(sqlite_url: str, tmp_path: Path) -> None:
    """report.json and eval_report.json keep HoloDeck's and agentflow's shapes (no field for
    totals); a script reading the run's spend finds it in verdict.json, equal to the stored rows."""
    (tmp_path / "agent.py").write_text(
        "def agent(request):\n"
        "    request.record_usage(prompt_tokens=100, completion_tokens=7)\n"
        "    request.record_usage(prompt_tokens=50, completion_tokens=3)\n"
        "    return 'Open 9 to 5'\n"
    )
    run_id = stored_run(sqlite_url, suite_id="hours")
    settings = RunSettings(
        run_id=run_id,
        database_url=sqlite_url,
        agent=f"{tmp_path / 'agent.py'}:agent",
        suite_dir=str(tmp_path),
    )
    spec = [MetricSpec(name="contains", args={"values": ["9"]})]
    works = [CaseWork(i, make_case(case_id=cid, metrics=spec)) for i, cid in enumerate(["a", "b"])]
    asyncio.run(run_chunk(works, runtime_for(settings)))
    release_runtime(run_id)
    run = close_run(database_url=sqlite_url, run_id=run_id, status=RunStatus.COMPLETED)
    with Session(get_engine(sqlite_url)) as session:
        files = write_reports(session=session, run=session.get(EvalRun, run.id), directory=tmp_path / "out")
    totals = json.loads(files.verdict.read_text())["totals"]
    assert (totals["agent_prompt_tokens"], totals["agent_completion_tokens"]) == (300, 20)
    assert totals["agent_tokens"] == 320 and totals["judge_calls"] == 0 and totals["judge_tokens"] == 0
    assert totals["cost"].startswith("unknown")  # the agent's model is not known: never $0
    assert totals["cost_usd"] is None


SEED = Path(__file__).resolve().parents[2] / ".." / "shared" / "seeds" / "agentflow-evaluation-data-models.md"
SEED_MODELS = ("EvalReport", "EvalSummary", "EvalCaseResult", "CriterionResult")


def _seed_models() -> dict[str, type]:
    """The agentflow seed's own result models, executed from its code blocks as written
    (its `CriterionStats` is not given there: any mapping)."""
    import re
    from datetime import datetime
    from typing import Any

    from pydantic import BaseModel

    namespace: dict[str, object] = {
        "BaseModel": BaseModel, "Any": Any, "datetime": datetime, "CriterionStats": dict[str, Any]
    }  # fmt: skip
    for block in re.findall(r"```python\n(.*?)```", SEED.read_text(encoding="utf-8"), flags=re.S):
        if any(f"class {name}(BaseModel)" in block for name in SEED_MODELS):
            exec("\n".join(line for line in block.splitlines() if not line.startswith("from ")), namespace)
    for name in ("CriterionResult", "EvalCaseResult", "EvalSummary", "EvalReport"):
        namespace[name].model_rebuild(_types_namespace=namespace)  # type: ignore[attr-defined]
    return {name: namespace[name] for name in SEED_MODELS}  # type: ignore[misc]


@pytest.mark.needs_shared
def test_eval_report_json_validates_against_the_agentflow_seeds_own_models(
    sqlite_url: str, tmp_path: Path
) -> None:
    if not SEED.is_file():
        pytest.skip(f"needs ../shared (the agentflow seed, {SEED.name})")
    run = _stored_run(sqlite_url, tmp_path, {"a": "Open 9 to 5", "b": "Closed"})
    with Session(get_engine(sqlite_url)) as session:
        files = write_reports(session=session, run=session.get(EvalRun, run.id), directory=tmp_path / "out")
    written = json.loads(files.eval_report.read_text())
    report = _seed_models()["EvalReport"].model_validate(written)
    assert [(r.eval_id, r.name, r.error, r.passed) for r in report.results] == [
        ("a", None, None, True),
        ("b", None, None, False),
    ]
