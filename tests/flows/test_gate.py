"""How a night ends, as Prefect and Slack see it: a gate that does not hold is a Failed flow
run named after why (and not retried), a run that ends early still tells Slack why with the
flow run's link, and repeated cases are shown once each with their pass counts."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from pathlib import Path

import pytest
from prefect.states import State

from proctor.flows.evaluate import EvaluationRequest, GateFailed, evaluate, run_evaluation
from proctor.models.notify import SlackSettings
from tests.conftest import EXAMPLE_SUITE
from tests.fakes.slack_server import FakeSlack

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

TOKEN = "xoxb-gate-test"
# The bundled weather agent fails one of the example's five cases on purpose.
FAILING_CASE = "fahrenheit_units"


@pytest.fixture
def slack(monkeypatch) -> FakeSlack:
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    with FakeSlack(token=TOKEN) as fake:
        yield fake


def _state(**fields) -> State:
    return asyncio.run(evaluate(EvaluationRequest(**fields), return_state=True))


def test_a_gate_that_does_not_hold_is_a_failed_flow_run_named_after_why(sqlite_url, tmp_path) -> None:
    request = {"suite": str(EXAMPLE_SUITE), "database_url": sqlite_url}
    failed = _state(**request, report_dir=str(tmp_path / "a"))
    assert (failed.type.value, failed.name, failed.message) == (
        "FAILED",
        "Failed cases",
        "4/5 passed, 0 errored",
    )
    verdict = failed.result(raise_on_failure=False)
    assert isinstance(verdict, GateFailed) and verdict.summary.passed == 4  # everything was stored

    below = _state(**request, report_dir=str(tmp_path / "b"), min_pass_rate=90)
    assert (below.type.value, below.name) == ("FAILED", "Below pass rate")
    held = _state(**request, report_dir=str(tmp_path / "c"), min_pass_rate=80)
    assert held.type.value == "COMPLETED"
    # In-process callers (the CLI) get the summary back either way.
    summary = asyncio.run(run_evaluation(EvaluationRequest(**request, report_dir=str(tmp_path / "d"))))
    assert (summary.passed, summary.total, summary.all_passed) == (4, 5, False)


def test_a_gate_failure_is_not_retried_even_with_retries(sqlite_url, tmp_path) -> None:
    retrying = evaluate.with_options(retries=2, retry_delay_seconds=0)
    request = EvaluationRequest(suite=str(EXAMPLE_SUITE), database_url=sqlite_url, report_dir=str(tmp_path))
    state = asyncio.run(retrying(request, return_state=True))
    assert (state.type.value, state.name) == ("FAILED", "Failed cases")
    from sqlmodel import Session, select

    from proctor.models.tables import EvalRun
    from proctor.storage import get_engine

    with Session(get_engine(sqlite_url)) as session:
        assert len(session.exec(select(EvalRun)).all()) == 1  # one run: Prefect did not run it again


@pytest.mark.parametrize("policy", ["failure", "regression", "always"])
def test_a_run_that_cannot_start_tells_slack_why(slack, sqlite_url, policy, caplog) -> None:
    missing = f"examples/{uuid.uuid4().hex}.evalset.json"
    from prefect.settings import PREFECT_UI_URL, temporary_settings

    settings = SlackSettings(channel="#agent-evals", notify=policy, api_url=slack.api_url)
    with temporary_settings({PREFECT_UI_URL: "http://prefect.example:4200"}):
        state = _state(suite=missing, database_url=sqlite_url, slack=settings)
    assert state.type.value == "FAILED" and "file not found" in (state.message or "")
    (message,) = slack.messages()
    text = json.dumps(message["blocks"])
    assert Path(missing).name in text and "file not found" in text and ":boom:" in text
    assert f"http://prefect.example:4200/runs/flow-run/{state.state_details.flow_run_id}" in text
    assert TOKEN not in json.dumps(slack.messages())


def test_a_run_whose_database_is_unreachable_tells_slack_and_logs_when_slack_fails_too(
    slack, tmp_path, caplog, monkeypatch
) -> None:
    settings = SlackSettings(
        channel="#agent-evals", notify="failure", api_url=slack.api_url, retry_backoff=0.01, max_retries=1
    )
    # A flow run takes a database password by reference only (a literal one is refused).
    monkeypatch.setenv("PROCTOR_TEST_UNREACHABLE_DB", "postgresql://proctor:hunter2@127.0.0.1:9/results")
    unreachable = "${PROCTOR_TEST_UNREACHABLE_DB}"
    request = {"suite": str(EXAMPLE_SUITE), "database_url": unreachable, "slack": settings}
    state = _state(**request, report_dir=str(tmp_path / "a"))
    assert state.type.value == "FAILED"
    (message,) = slack.messages()
    text = json.dumps(message["blocks"])
    assert "127.0.0.1:9" in text and "hunter2" not in text

    slack.down()
    with caplog.at_level(logging.ERROR):
        state = _state(**request, report_dir=str(tmp_path / "b"))
    assert state.type.value == "FAILED"
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "Slack notification of the failed run failed too" in logged, logged
    assert "hunter2" not in logged


def test_never_means_never_even_for_a_run_that_cannot_start(slack, sqlite_url) -> None:
    settings = SlackSettings(channel="#agent-evals", notify="never", api_url=slack.api_url)
    state = _state(suite="examples/nowhere.evalset.json", database_url=sqlite_url, slack=settings)
    assert state.type.value == "FAILED" and slack.messages() == []


def test_slack_shows_each_repeated_case_once_with_its_pass_count(slack, sqlite_url, tmp_path) -> None:
    settings = SlackSettings(channel="#agent-evals", notify="always", api_url=slack.api_url)
    request = EvaluationRequest(
        suite=str(EXAMPLE_SUITE), database_url=sqlite_url, report_dir=str(tmp_path), repeat=3, slack=settings
    )
    summary = asyncio.run(run_evaluation(request))
    assert (summary.total, summary.passed) == (15, 12)
    summary_post, thread = slack.messages()
    assert thread["thread_ts"] and not summary_post.get("thread_ts")
    blocks = json.dumps(thread["blocks"])
    assert "1 case(s) did not pass every repeat" in blocks and "3 case(s)" not in blocks
    assert blocks.count(f"`{FAILING_CASE}`") == 1 and "passed 0 of 3" in blocks
    assert thread["text"] == "1 case(s) did not pass"


def test_a_run_that_finished_is_not_lost_when_prefect_records_its_end_late(sqlite_url, tmp_path) -> None:
    """The API commits the Failed state but answers after the client's timeout: the client's
    retry is rejected as a duplicate and the engine is left with the server's copy of the
    state, which holds no summary. The CLI once called such a run an error (exit 3)."""
    from prefect.settings import PREFECT_API_REQUEST_TIMEOUT, PREFECT_API_URL, temporary_settings

    from tests.fakes.held_api import HeldApi

    def final_failed_state(path: str, body: bytes) -> bool:
        return path.endswith("/set_state") and b'"FAILED"' in body

    request = EvaluationRequest(
        suite=str(EXAMPLE_SUITE), database_url=sqlite_url, report_dir=str(tmp_path / "r")
    )
    with HeldApi(PREFECT_API_URL.value(), final_failed_state, hold_seconds=4) as api:  # noqa: SIM117
        with temporary_settings({PREFECT_API_URL: api.url, PREFECT_API_REQUEST_TIMEOUT: 1.5}):
            summary = asyncio.run(run_evaluation(request))
    assert api.held, "the proxy never saw the flow run's Failed state"
    assert (summary.passed, summary.total, summary.all_passed) == (4, 5, False)
    assert (tmp_path / "r" / "report.md").is_file()


def test_a_significant_break_is_a_red_regressed_flow_run(sqlite_url, tmp_path) -> None:
    """Two stored nights where every case passed six repeats of six; tonight the weather agent
    fails fahrenheit_units six of six: significant for that case alone, so the flow run ends
    Failed, named "Regressed", even though the pass rate holds the gate's 50 %."""
    from datetime import UTC, datetime, timedelta

    from sqlmodel import Session

    from proctor.storage import get_engine
    from tests.factories import seed_run

    cases = ["basic_weather", "paris_conversation", "two_cities", "greeting", FAILING_CASE]
    with Session(get_engine(sqlite_url), expire_on_commit=False) as session:
        session.info["suite_id"] = "weather_agent_v1"
        for night in (2, 1):
            seed_run(
                session,
                outcomes={case: [True] * 6 for case in cases},
                started=datetime.now(UTC) - timedelta(days=night),
                agent="agent.py:weather_agent",
            )
    state = _state(
        suite=str(EXAMPLE_SUITE),
        database_url=sqlite_url,
        report_dir=str(tmp_path),
        repeat=6,
        min_pass_rate=50,
    )
    assert (state.type.value, state.name) == ("FAILED", "Regressed")
    assert state.message == "24/30 passed, 0 errored, regressed against its history"
    summary = state.result(raise_on_failure=False).summary
    assert summary.regression["significant_cases"] == [FAILING_CASE] and summary.pass_rate == 80.0
