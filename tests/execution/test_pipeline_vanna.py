"""The stages for Vanna datasets and what every agent is shown: the agent under test never sees
its expected outcome; a case whose agent failed keeps Vanna's scores; one without an outcome
passes by default and its results say why."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

from sqlmodel import Session, select

from proctor.execution.pipeline import CaseWork, RunSettings, release_runtime, run_chunk, runtime_for
from proctor.loaders import load_suite
from proctor.models.case import GRADING_METADATA
from proctor.models.tables import CaseResultRow, MetricResultRow
from proctor.storage import get_engine
from tests.factories import stored_run

DATASET = """
dataset:
  name: sql
  test_cases:
    - id: revenue
      message: Revenue by region?
      user_id: analyst
      metadata: {area: sales}
      expected_outcome:
        tools_called: [run_sql, visualize_data]
        final_answer_contains: [SECRET-KEYWORD]
    - id: crash
      message: crash
      expected_outcome: {tools_called: [run_sql], max_execution_time_ms: 600000}
    - id: chat
      message: Hello
"""

# Tells what it was shown: its answer is the request's metadata as JSON.
AGENT = """
import json

def agent(request):
    if request.input == "crash":
        raise RuntimeError("database is down")
    request.record_tool_call("run_sql", {"sql": "select 1"})
    return json.dumps(request.metadata)
"""


def _run(url: str, tmp_path: Path, suite_text: str) -> uuid.UUID:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "sql.dataset.yaml").write_text(suite_text)
    suite = load_suite(tmp_path / "sql.dataset.yaml")
    agent = f"{tmp_path / 'agent.py'}:agent"
    settings = RunSettings(
        run_id=stored_run(url, agent=agent),
        database_url=url,
        agent=agent,
        suite_dir=str(tmp_path),
        concurrency=2,
        agent_timeout_s=30,
    )
    works = [CaseWork(index, case) for index, case in enumerate(suite.cases)]
    asyncio.run(run_chunk(works, runtime_for(settings)))
    release_runtime(settings.run_id)
    return settings.run_id


def _stored(
    url: str, run_id: uuid.UUID
) -> tuple[dict[str, CaseResultRow], dict[tuple[str, str], MetricResultRow]]:
    with Session(get_engine(url)) as session:
        rows = {
            r.case_id: r for r in session.exec(select(CaseResultRow).where(CaseResultRow.run_id == run_id))
        }
        by_id = {row.id: case_id for case_id, row in rows.items()}
        metrics = {
            (by_id[m.case_result_id], m.metric_name): m
            for m in session.exec(select(MetricResultRow).where(MetricResultRow.run_id == run_id))
        }
    return rows, metrics


def test_the_agent_is_never_shown_the_expected_outcome(sqlite_url: str, tmp_path: Path) -> None:
    rows, _ = _stored(sqlite_url, _run(sqlite_url, tmp_path, DATASET))
    shown = json.loads(rows["revenue"].response)
    assert "expected_outcome" not in shown and "SECRET-KEYWORD" not in rows["revenue"].response
    assert shown["area"] == "sales" and shown["user"]["id"] == "analyst"  # the case's own metadata stays


def test_vannas_scores_are_stored_and_the_reasons_say_what_happened(sqlite_url: str, tmp_path: Path) -> None:
    rows, metrics = _stored(sqlite_url, _run(sqlite_url, tmp_path, DATASET))
    trajectory = metrics[("revenue", "TrajectoryEvaluator")]
    assert (trajectory.score, trajectory.passed) == (0.75, True)  # one of two tools called
    assert trajectory.reason == "Trajectory evaluation: Expected tool 'visualize_data' was not called"
    output = metrics[("revenue", "OutputEvaluator")]
    assert (output.score, output.passed) == (0.5, False)
    assert rows["revenue"].passed is False
    # no expected outcome: every evaluator passes it by default with 1.0, as Vanna does, and says so
    chat = [metrics[("chat", name)] for name in ("TrajectoryEvaluator", "OutputEvaluator")]
    assert [(m.score, m.passed, m.reason) for m in chat] == [
        (1.0, True, "No expected outcome specified, passing by default")
    ] * 2
    assert rows["chat"].passed is True


def test_a_case_whose_agent_failed_keeps_vannas_scores_and_fails(sqlite_url: str, tmp_path: Path) -> None:
    rows, metrics = _stored(sqlite_url, _run(sqlite_url, tmp_path, DATASET))
    assert rows["crash"].state == "AGENT_FAILED" and rows["crash"].passed is False
    trajectory = metrics[("crash", "TrajectoryEvaluator")]
    assert (trajectory.score, trajectory.passed) == (0.0, False)
    assert trajectory.reason == "Agent execution failed: database is down"
    efficiency = metrics[("crash", "EfficiencyEvaluator")]  # Vanna's ignores the agent's error
    assert (efficiency.score, efficiency.passed) == (1.0, True)


ADK_EVAL_SET = {
    "eval_set_id": "s",
    "eval_cases": [
        {
            "eval_id": "c",
            "conversation": [
                {
                    "invocation_id": "i1",
                    "user_content": {"role": "user", "parts": [{"text": "Turn the lamp on"}]},
                    "final_response": {"role": "model", "parts": [{"text": "The lamp is on."}]},
                }
            ],
            "rubrics": [
                {
                    "rubric_id": "r",
                    "rubric_content": {"text_property": "Says the lamp is on."},
                    "type": "FINAL_RESPONSE_QUALITY",
                }
            ],
            "final_session_state": {"lamp": "on"},
            "session_input": {"app_name": "a", "user_id": "u", "state": {}},
        }
    ],
}


def test_no_format_shows_the_agent_what_grades_it(tmp_path: Path) -> None:
    """ADK's rubrics and expected final state, like Vanna's outcome, stay with the case, not the agent."""
    (tmp_path / "lamp.evalset.json").write_text(json.dumps(ADK_EVAL_SET))
    (case,) = load_suite(tmp_path / "lamp.evalset.json").cases
    assert {"adk_rubrics", "final_session_state"} <= set(case.metadata) <= GRADING_METADATA
    assert case.agent_metadata == {}
