"""Faults injected into real runs: the agent, the judge, Slack and the report disk.

Each test runs a real evaluation (Prefect flow or CLI, the real `openai` and `slack_sdk`
clients against local fakes) and ends by checking that every result computed is in the
database and that the failure is visible in the run row, each case's state and errors,
report.md, report.html, junit.xml and the flow's Prefect state or the CLI's exit code.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import get_client
from prefect.states import State

from proctor.agents import load_target
from proctor.cli import EXIT_ERROR, EXIT_FAILED, main
from proctor.models.notify import SlackSettings
from tests.fakes import FakeOpenAI, Fault, judged, prompt_of
from tests.fakes.slack_server import FakeSlack
from tests.resilience.harness import (
    CASES,
    MORE_CASES,
    Reports,
    Stored,
    ended_with_verdict,
    reports,
    run_flow,
    stored,
    write_suite,
)

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

# A deterministic metric every good answer passes, and a judged one: one retry, and a limit
# per attempt far above what the local fake takes, even on a loaded machine.
METRICS = """
- metric: contains
  values: ["We"]
- metric: llm_judge
  threshold: 0.7
  retry_on_failure: 1
  timeout_ms: 20000
"""


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """A judge that agrees with every answer, at the endpoint the judged metrics use."""
    with FakeOpenAI(default=judged(5, "same meaning")) as api:
        monkeypatch.setenv("PROCTOR_JUDGE_BASE_URL", api.base_url)
        monkeypatch.setenv("PROCTOR_JUDGE_API_KEY", "sk-fault-tests")
        yield api


def _request(
    tmp_path: Path,
    sqlite_url: str,
    agent: str,
    *,
    cases: dict[str, tuple[str, str]] | None = None,
    metrics: str = METRICS,
    **fields: Any,
) -> dict[str, Any]:
    """The flow's fields for a run of the fault suite by one of the harness's agents."""
    suite, agents = write_suite(tmp_path / "suite", metrics=metrics, cases=cases)
    return {
        "suite": str(suite),
        "agent": agents + agent,
        "database_url": sqlite_url,
        "report_dir": str(tmp_path / "reports"),
        **fields,
    }


# -- 1-3: the agent ---------------------------------------------------------------------------
RAISED = {
    "opening": "hours service down while answering opening",
    "closing": "RuntimeError",
    "weekend": "agent raised SystemExit: agent called sys.exit on weekend",
    "holiday": "agent raised CancelledError",
}


@pytest.mark.parametrize("agent", ["raises", "raises_async"])
def test_an_agent_that_raises_fails_every_case_and_keeps_what_it_recorded(
    tmp_path: Path, sqlite_url: str, judge: FakeOpenAI, capsys: pytest.CaptureFixture[str], agent: str
) -> None:
    cases = {case_id: MORE_CASES[case_id] for case_id in RAISED}
    request = _request(tmp_path, sqlite_url, agent, cases=cases)
    argv = ["run", request["suite"], "--agent", request["agent"], "--db", sqlite_url]
    code = main([*argv, "--output", request["report_dir"], "--no-progress"])
    out, err = capsys.readouterr()
    assert code == EXIT_FAILED, err
    assert "Traceback" not in out + err
    assert "0/4 passed" in out and "4 errored" in out

    db = stored(sqlite_url)
    assert (db.run.status, db.run.error) == ("completed", None)
    assert (db.run.total_cases, db.run.passed_cases, db.run.errored_cases) == (4, 0, 4)
    assert (db.case_rows, db.metric_rows) == (4, 0)  # no answer, nothing to score
    # A failing agent never crashes the run: it completes, and its gate names why it is red.
    state = _flow_run_state(db.run.flow_run_id)
    assert (state.type.value, state.name, state.message) == (
        "FAILED",
        "Failed cases",
        "0/4 passed, 4 errored",
    )
    report = reports(tmp_path / "reports")
    assert report.junit.get("errors") == "4"
    for case_id, row in db.cases.items():
        why = RAISED[case_id]
        (turn,) = row.turns
        assert (row.state, row.passed, turn["error"], turn["response"]) == ("AGENT_FAILED", False, why, None)
        assert row.errors == [f"agent failed on turn {turn['turn_id']}: {why}"]
        # What the agent recorded before it raised is kept.
        assert [call["name"] for call in row.tool_calls] == ["lookup_hours"]
        assert row.prompt_tokens == 11
        assert report.shows(row.errors[0]), case_id
        error = report.junit_case(case_id).find("error")
        assert error is not None and error.get("type") == "AGENT_FAILED" and why in error.get("message", "")
    assert judge.completions == []  # nothing to judge


@pytest.mark.parametrize("agent", ["hangs", "hangs_sync"])
def test_an_agent_that_hangs_times_out_on_every_case(
    tmp_path: Path, sqlite_url: str, judge: FakeOpenAI, agent: str
) -> None:
    request = _request(tmp_path, sqlite_url, agent, agent_timeout_s=0.2, concurrency=1)
    module = load_target(request["agent"]).__globals__
    try:
        state, summary = run_flow(**request)
    finally:
        module["RELEASE"].set()
    assert ended_with_verdict(state), summary
    # Each case got its own 0.2 s: a hung call before it (a sync agent's thread cannot be
    # stopped) must neither eat its time nor its thread.
    assert sorted(module["CALLED"]) == sorted(CASES)
    assert (summary.total, summary.passed, summary.errored) == (3, 0, 3)

    db = stored(sqlite_url, summary.run_id)
    assert (db.run.status, db.run.errored_cases) == ("completed", 3)
    assert (db.case_rows, db.metric_rows) == (3, 0)
    report = reports(tmp_path / "reports")
    assert report.junit.get("errors") == "3"
    for case_id, row in db.cases.items():
        (turn,) = row.turns
        assert (row.state, turn["error"]) == ("AGENT_FAILED", "agent did not answer within 0.2 s")
        assert turn["latency_ms"] < 1000, "the timeout must count the agent's own time only"
        assert report.shows(row.errors[0]), case_id
        assert report.junit_case(case_id).find("error") is not None


def test_an_agent_that_returns_malformed_data_fails_every_case_with_the_reason(
    tmp_path: Path, sqlite_url: str, judge: FakeOpenAI
) -> None:
    state, summary = run_flow(**_request(tmp_path, sqlite_url, "malformed", cases=MORE_CASES))
    assert ended_with_verdict(state), summary
    assert (summary.total, summary.passed, summary.errored) == (5, 0, 5)

    db = stored(sqlite_url, summary.run_id)
    assert (db.case_rows, db.metric_rows) == (5, 0)
    expected = {
        "opening": "agent returned int; expected str, dict with 'answer', or AgentResponse",
        "closing": "agent returned an invalid dict (answer: Field required)",
        "weekend": "agent returned bytes; expected str, dict with 'answer', or AgentResponse",
        "holiday": "agent returned NoneType; expected str, dict with 'answer', or AgentResponse",
        "typed": "agent returned an invalid dict (answer: Input should be a valid string)",
    }
    report = reports(tmp_path / "reports")
    assert report.junit.get("errors") == "5"
    for case_id, row in db.cases.items():
        (turn,) = row.turns
        assert (row.state, turn["error"], row.response) == ("AGENT_FAILED", expected[case_id], None)
        assert report.shows(row.errors[0]), case_id
    assert judge.completions == []


# -- 4-7: the judge ---------------------------------------------------------------------------
def _judge_errored(db: Stored, report: Reports, expected_errors: list[str]) -> None:
    """Every case: the judged metric errored (no score), the deterministic one still scored."""
    assert (db.case_rows, db.metric_rows) == (3, 6)
    assert (db.run.status, db.run.errored_cases, db.run.passed_cases) == ("completed", 3, 0)
    assert report.junit.get("errors") == "3"
    for case_id, row in db.cases.items():
        judged_row, contains = db.metric(case_id, "llm_judge"), db.metric(case_id, "contains")
        assert (contains.score, contains.passed, contains.error) == (1.0, True, None)
        assert judged_row.score is None and judged_row.passed is False
        assert any(text in (judged_row.error or "") for text in expected_errors), judged_row.error
        assert judged_row.model_used == "judge-model"
        assert row.state == "EVALUATION_FAILED" and row.passed is False and row.response
        assert row.errors == [f"metric llm_judge: {judged_row.error}"]
        assert report.shows(judged_row.error), case_id
        error = report.junit_case(case_id).find("error")
        assert error is not None and error.get("type") == "EVALUATION_FAILED"


def test_a_judge_answering_429_is_retried_after_retry_after(
    tmp_path: Path, sqlite_url: str, judge: FakeOpenAI
) -> None:
    asked: set[str] = set()

    def once_429(body: dict) -> object:
        prompt = prompt_of(body)
        if prompt not in asked:
            asked.add(prompt)
            return Fault.status(429, "slow down", retry_after=0.8)
        return judged(5, "same meaning")

    judge.default = once_429
    state, summary = run_flow(**_request(tmp_path, sqlite_url, "good"))
    assert ended_with_verdict(state), summary
    assert (summary.total, summary.passed, summary.errored) == (3, 3, 0)
    db = stored(sqlite_url, summary.run_id)
    assert (db.case_rows, db.metric_rows) == (3, 6)
    for case_id in CASES:
        row = db.metric(case_id, "llm_judge")
        # the 429 was waited out below the metric (the quota budget): no retry of the metric
        assert (row.score, row.error, row.retry_count, row.judge_calls) == (1.0, None, 0, 1)
        assert row.evaluation_time_ms >= 800, "the server's retry-after (0.8 s) was waited"
    assert len(judge.completions) == 6
    assert reports(tmp_path / "reports").junit.get("errors") == "0"


@pytest.mark.parametrize(
    ("fault", "timeout_ms", "expected_errors"),
    [
        (Fault.status(500, "upstream exploded"), 20000, ["judge returned HTTP 500"]),
        # The runner's limit and the client's both say 200 ms; whichever fires first names it.
        (Fault.hang(60), 200, ["timed out after 200 ms", "judge did not answer within 0.2 s"]),
    ],
    ids=["500", "hang"],
)
def test_a_failing_judge_errors_its_metric_and_spares_the_others(
    tmp_path: Path,
    sqlite_url: str,
    judge: FakeOpenAI,
    fault: Fault,
    timeout_ms: int,
    expected_errors: list[str],
) -> None:
    judge.default = fault
    request = _request(tmp_path, sqlite_url, "good", metrics=METRICS.replace("20000", str(timeout_ms)))
    started = time.perf_counter()
    state, summary = run_flow(**request)
    assert ended_with_verdict(state), summary
    assert time.perf_counter() - started < 30, "a judge hanging 60 s must not hold the run"
    db = stored(sqlite_url, summary.run_id)
    _judge_errored(db, reports(tmp_path / "reports"), expected_errors)
    for case_id in CASES:
        assert db.metric(case_id, "llm_judge").retry_count == 1
    assert len(judge.completions) == 6  # one retry per case


def test_a_judge_replying_with_unparsable_text_errors_its_metric_and_keeps_the_reply(
    tmp_path: Path, sqlite_url: str, judge: FakeOpenAI
) -> None:
    replies = {
        "opening": "I would say this deserves a 4 out of 5.",  # prose, no JSON
        "closing": Fault.malformed(),  # truncated JSON body
        "weekend": Fault.text("<html><body>502 Bad Gateway</body></html>"),  # a proxy's page
    }

    def reply(body: dict) -> object:
        prompt = prompt_of(body)
        return next(r for case_id, r in replies.items() if CASES[case_id][0] in prompt)

    judge.default = reply
    state, summary = run_flow(**_request(tmp_path, sqlite_url, "good"))
    assert ended_with_verdict(state), summary
    db = stored(sqlite_url, summary.run_id)
    _judge_errored(db, reports(tmp_path / "reports"), ["JudgeReplyError: judge reply"])
    errors = {case_id: db.metric(case_id, "llm_judge") for case_id in CASES}
    assert errors["opening"].error == "JudgeReplyError: judge reply is not JSON"
    assert errors["closing"].error.startswith("JudgeReplyError: judge reply body is not JSON")
    assert errors["weekend"].error == (
        "JudgeReplyError: judge reply is not a chat completion (the body is plain text)"
    )
    # The raw reply is kept for the report, whatever shape it came in.
    assert errors["opening"].details["raw_reply"] == replies["opening"]
    assert errors["closing"].details["raw_reply"] == replies["closing"].body
    assert errors["weekend"].details["raw_reply"] == replies["weekend"].body
    assert all(row.retry_count == 1 for row in errors.values())  # asked again, in case it was a blip
    eval_report = json.loads((tmp_path / "reports" / "eval_report.json").read_text())
    (weekend,) = [r for r in eval_report["results"] if r["eval_id"] == "weekend"]
    (criterion,) = [c for c in weekend["criterion_results"] if c["criterion"] == "llm_judge"]
    assert criterion["details"]["raw_reply"] == replies["weekend"].body  # agentflow's report keeps it


# -- 8: Slack ---------------------------------------------------------------------------------
def test_slack_down_loses_nothing_and_the_run_records_it(
    tmp_path: Path, sqlite_url: str, judge: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test-token")
    with FakeSlack() as slack:
        slack.down()
        settings = SlackSettings(
            channel="#agent-evals", api_url=slack.api_url, notify="always", retry_backoff=0.01
        )
        state, summary = run_flow(**_request(tmp_path, sqlite_url, "good", slack=settings))
        attempts = len(slack.requests)
    assert ended_with_verdict(state), summary
    assert summary.notification["status"] == "failed"
    db = stored(sqlite_url, summary.run_id)
    assert (db.case_rows, db.metric_rows, db.run.passed_cases) == (3, 6, 3)
    assert db.run.status == "completed" and db.run.notification["status"] == "failed"
    assert "503" in db.run.notification["error"] or "service_unavailable" in db.run.notification["error"]
    assert attempts == 1 + settings.max_retries, "slack_sdk retried the 503s"
    report = reports(tmp_path / "reports")
    assert "3 passed, 0 failed" in report.markdown and report.junit.get("tests") == "3"


# -- 9: the report disk -----------------------------------------------------------------------
def _folder_that_fails_mid_run(tmp_path: Path) -> Path:
    """A report folder that is fine when the run starts (so the check before the run passes)
    and refuses the reports at the end, as a disk that filled up during the run would.

    A folder named like the report's temporary file stands in the way: opening it for
    writing fails with EISDIR for any user, root included (a read-only mode would not stop
    root, as these tests run in CI containers)."""
    output = tmp_path / "reports"
    (output / "report.json.tmp").mkdir(parents=True)
    return output


def test_an_unwritable_report_folder_keeps_results_and_says_so(
    tmp_path: Path, sqlite_url: str, judge: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    output = _folder_that_fails_mid_run(tmp_path)
    request = _request(tmp_path, sqlite_url, "good")
    argv = ["run", request["suite"], "--agent", request["agent"], "--db", sqlite_url]
    code = main([*argv, "--output", str(output), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == EXIT_ERROR, out + err
    assert "Traceback" not in out + err
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert f"reports could not be written to {output}" in line and "The results are stored" in line
    assert "proctor report" in line

    db = stored(sqlite_url)
    assert (db.case_rows, db.metric_rows, db.run.passed_cases) == (3, 6, 3)  # every result kept
    assert db.run.status == "completed"  # the evaluation finished; its reports did not
    assert db.run.error.startswith(f"reports could not be written to {output}"), db.run.error
    assert db.run.report_dir is None
    assert not (output / "report.md").exists() and not (output / "report.md.tmp").exists()
    state = _flow_run_state(db.run.flow_run_id)
    assert state.is_failed() and f"reports could not be written to {output}" in (state.message or "")

    # The stored run renders again once there is somewhere to write.
    assert main(["report", str(db.run.id)[:8], "--db", sqlite_url]) == 0
    assert "3 passed, 0 failed" in capsys.readouterr().out


def _flow_run_state(flow_run_id: str | None) -> State:
    """The final state Prefect recorded for a flow run the CLI started."""
    assert flow_run_id
    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id).state


def test_a_judge_answering_429_beyond_the_patience_errors_its_metric_as_the_providers(
    tmp_path: Path, sqlite_url: str, judge: FakeOpenAI
) -> None:
    judge.default = Fault.status(429, "quota exhausted", retry_after=0.05)
    state, summary = run_flow(**_request(tmp_path, sqlite_url, "good", quota_patience_s=0.3))
    assert ended_with_verdict(state), summary
    db = stored(sqlite_url, summary.run_id)
    _judge_errored(
        db,
        reports(tmp_path / "reports"),
        ["the provider's rate limit: still HTTP 429 after waiting 0.3 s for quota"],
    )
    assert len(judge.completions) > 6  # each call asked again while the patience lasted
