"""Secrets reach the service they are for, and nothing else: not the terminal, the logs, the
reports, the database, the Prefect API, Slack's message bodies or any stored error message.

Real runs with real clients against local servers (FakeOpenAI for the judge and the agents,
FakeSlack), with every failure path a key could leak through: a judge answering 500 and 401
(a server that echoes the key, as OpenAI's 401 echoes its first characters), agents refused
with 401, Slack down, and a wrong Slack token. Each secret is a sentinel looked for whole and
by its first 12 characters in everything the runs left behind.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from proctor.cli import EXIT_FAILED, main
from proctor.flows.evaluate import EvaluationRequest, RunSummary, run_evaluation
from proctor.models.notify import SlackSettings
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow
from proctor.storage import get_engine
from tests.fakes import FakeOpenAI, Fault, judged, prompt_of
from tests.fakes.slack_server import FakeSlack

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

JUDGE_KEY = "sk-JUDGE-SENTINEL-7f3a9c2e41d8b6a5"
AGENT_KEY = "sk-AGENT-SENTINEL-5b1d8e7a03c9f2d4"
HTTP_TOKEN = "tok-HTTP-SENTINEL-94e2a6c0d7b1e3f8"
SLACK_TOKEN = "xoxb-SLACK-SENTINEL-0c6f3b9a2d5e7f1"
WRONG_TOKEN = "xoxb-WRONG-SENTINEL-8d2e5a1f7c3b9e6"
WEBHOOK_SECRET = "WEBHOOK-SENTINEL-3a7c9e1b5d2f8a4"  # the secret part of an incoming webhook's URL
SENTINELS = {
    "judge key": JUDGE_KEY,
    "agent key": AGENT_KEY,
    "http agent token": HTTP_TOKEN,
    "slack token": SLACK_TOKEN,
    "wrong slack token": WRONG_TOKEN,
    "slack webhook": WEBHOOK_SECRET,
}
NEEDLES = {
    f"{name}{suffix}": value
    for name, secret in SENTINELS.items()
    for suffix, value in (("", secret), (" (first 12)", secret[:12]))
}

SUITE = """
name: secrets-suite
model: {{name: agent-model, endpoint: "{agent_url}", api_key: "${{PROCTOR_TEST_AGENT_KEY}}"}}
instructions: Answer in one word.
evaluations:
  model: {{name: judge-model}}
  metrics:
    - {{metric: llm_judge, threshold: 0.7, retry_on_failure: 1}}
test_cases:
  - {{name: weather, input: "What is the weather?", ground_truth: "Sunny."}}
  - {{name: judge_down, input: "Answer JUDGE-OUTAGE", ground_truth: "Anything."}}
  - {{name: agent_down, input: "Trigger AGENT-AUTH-FAILURE", ground_truth: "Anything."}}
"""

ENDPOINT = """
url: "{agent_url}/chat/completions"
headers: {{Authorization: "Bearer ${{PROCTOR_TEST_HTTP_TOKEN}}"}}
request: {{model: http-agent-model, messages: [{{role: user, content: "{{{{ input }}}}"}}]}}
response: {{answer: choices.0.message.content, usage: usage}}
"""


def _echoing_401(key: str) -> Fault:
    """What a careless server (or OpenAI, for the first characters) says about a bad key."""
    return Fault.status(401, f"Incorrect API key provided: {key[:12]}****{key[-4:]}; you sent Bearer {key}")


def _agent_model(body: dict[str, Any]) -> Any:
    key = AGENT_KEY if body.get("model") == "agent-model" else HTTP_TOKEN
    question = prompt_of(body)
    if "AGENT-AUTH-FAILURE" in question:
        return _echoing_401(key)
    return "JUDGE-OUTAGE acknowledged." if "JUDGE-OUTAGE" in question else "Sunny."


def _judge_model() -> Callable[[dict[str, Any]], Any]:
    """A judge that refuses (401) to judge JUDGE-OUTAGE answers and fails its first call with a 500."""
    first = [True]

    def reply(body: dict[str, Any]) -> Any:
        if "JUDGE-OUTAGE" in prompt_of(body):
            return _echoing_401(JUDGE_KEY)
        if first[0]:
            first[0] = False
            return Fault.status(500, f"upstream refused Authorization: Bearer {JUDGE_KEY}")
        return judged(5, "same meaning")

    return reply


@pytest.fixture
def services(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, FakeOpenAI, FakeOpenAI, FakeSlack]]:
    """The judge's and the agents' OpenAI endpoints, Slack, every secret in the environment,
    and the suite: an agent.yaml that is also the `openai:` agent, and an `http:` endpoint."""
    judge, agents, slack = (
        FakeOpenAI(default=_judge_model()),
        FakeOpenAI(default=_agent_model),
        FakeSlack(SLACK_TOKEN),
    )
    with judge, agents, slack:
        monkeypatch.chdir(tmp_path)  # whatever a run writes beside it lands in tmp_path
        monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "DEBUG")
        monkeypatch.setenv("PROCTOR_FILE_CACHE", str(tmp_path / "cache"))
        monkeypatch.setenv("PROCTOR_JUDGE_BASE_URL", judge.base_url)
        monkeypatch.setenv("PROCTOR_JUDGE_API_KEY", JUDGE_KEY)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        monkeypatch.setenv("PROCTOR_TEST_AGENT_KEY", AGENT_KEY)
        monkeypatch.setenv("PROCTOR_TEST_HTTP_TOKEN", HTTP_TOKEN)
        monkeypatch.setenv("SLACK_BOT_TOKEN", SLACK_TOKEN)
        monkeypatch.setenv("PROCTOR_TEST_SLACK_WEBHOOK", _webhook(slack))
        folder = tmp_path / "suite"
        folder.mkdir()
        (folder / "agent.yaml").write_text(SUITE.format(agent_url=agents.base_url))
        (folder / "endpoint.yaml").write_text(ENDPOINT.format(agent_url=agents.base_url))
        yield folder, judge, agents, slack


def _webhook(slack: FakeSlack) -> str:
    """An incoming webhook URL of the fake Slack whose secret part is a sentinel."""
    return f"{slack.webhook_url.rsplit('/', 1)[0]}/{WEBHOOK_SECRET}"


def _flow_run(folder: Path, url: str, out: Path, slack: SlackSettings, **fields: Any) -> RunSummary:
    request = EvaluationRequest(
        suite=str(folder / "agent.yaml"), database_url=url, report_dir=str(out), slack=slack, **fields
    )
    return asyncio.run(run_evaluation(request))


def _database_dump(path: Path) -> str:
    with sqlite3.connect(path) as connection:
        return "\n".join(connection.iterdump())


async def _prefect_records(flow_run_ids: list[str]) -> dict[str, str]:
    """Everything the Prefect API holds about the flow runs: the runs (parameters, states and
    their messages), their task runs, their artifacts and every log line."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterId,
        LogFilter,
        LogFilterFlowRunId,
    )
    from prefect.logging.handlers import APILogHandler

    await APILogHandler.aflush()
    ids = [uuid.UUID(i) for i in flow_run_ids]
    runs = FlowRunFilter(id=FlowRunFilterId(any_=ids))
    async with get_client() as client:
        flow_runs = await client.read_flow_runs(flow_run_filter=runs)
        task_runs = await client.read_task_runs(flow_run_filter=runs)
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=ids))
        )
        logs, offset = [], 0
        while page := await client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids)), limit=200, offset=offset
        ):
            logs += page
            offset += len(page)
    assert len(flow_runs) == len(ids) and task_runs and artifacts and logs  # nothing vacuous
    assert {a.type for a in artifacts} >= {"markdown", "table"}
    return {
        "prefect flow runs": "\n".join(run.model_dump_json() for run in flow_runs),
        "prefect task runs": "\n".join(run.model_dump_json() for run in task_runs),
        "prefect artifacts": "\n".join(artifact.model_dump_json() for artifact in artifacts),
        "prefect logs": "\n".join(log.model_dump_json() for log in logs),
    }


def _leaks(places: dict[str, str | bytes]) -> list[str]:
    found = []
    for place, content in places.items():
        for needle_name, needle in NEEDLES.items():
            hit = needle.encode() in content if isinstance(content, bytes) else needle in content
            if hit:
                found.append(f"{needle_name} in {place}")
    return found


def test_no_secret_leaves_the_services_it_is_for(
    services, sqlite_url: str, tmp_path: Path, capfd, caplog
) -> None:
    folder, judge, agents, slack = services
    caplog.set_level(logging.DEBUG)
    for name in ("prefect", "openai", "httpx", "httpcore", "slack_sdk", "proctor"):
        caplog.set_level(logging.DEBUG, logger=name)

    # 1. The CLI, two agent variants (OpenAI tool loop, HTTP endpoint), Slack by webhook.
    code = main(
        [
            "run",
            str(folder / "agent.yaml"),
            "--db",
            sqlite_url,
            "--output",
            str(tmp_path / "cli"),
            "--no-progress",
            "-v",
            "--variant",
            f"openai=openai:{folder / 'agent.yaml'}",
            "--variant",
            f"http=http:{folder / 'endpoint.yaml'}",
            "--slack-webhook",
            "${PROCTOR_TEST_SLACK_WEBHOOK}",
            "--notify",
            "always",
        ]
    )
    assert code == EXIT_FAILED

    # 2. The flow with Slack's Web API: the right token, Slack down, a wrong token (from a
    # Prefect Secret block, the other way a token is given).
    settings = SlackSettings(
        channel="#agent-evals", notify="always", api_url=slack.api_url, retry_backoff=0.01
    )
    sent = _flow_run(folder, sqlite_url, tmp_path / "sent", settings)
    slack.down()
    down = _flow_run(folder, sqlite_url, tmp_path / "down", settings, cases=["agent_down"])
    slack.up()
    from prefect.blocks.system import Secret

    Secret(value=WRONG_TOKEN).save("proctor-security-wrong-slack-token", overwrite=True)
    wrong = _flow_run(
        folder,
        sqlite_url,
        tmp_path / "wrong",
        settings.model_copy(update={"token": "secret:proctor-security-wrong-slack-token"}),
        cases=["agent_down"],
    )
    assert sent.notification["status"] == "sent"
    assert down.notification["status"] == "failed" and "503" in down.notification["error"]
    assert wrong.notification["status"] == "failed" and "invalid_auth" in wrong.notification["error"]

    # The failure paths really ran: the judge's 500 and 401, the agents' 401s.
    with Session(get_engine(sqlite_url)) as session:
        runs = session.exec(select(EvalRun)).all()
        cases = session.exec(select(CaseResultRow)).all()
        metrics = session.exec(select(MetricResultRow)).all()
    assert len(runs) == 5 and all(run.flow_run_id for run in runs)
    assert {run.notification["status"] for run in runs} == {"sent", "failed"}
    failed_agents = [case for case in cases if case.case_id == "agent_down"]
    assert len(failed_agents) == 5 and all(case.state == "AGENT_FAILED" for case in failed_agents)
    assert all("401" in " ".join(case.errors) for case in failed_agents), [c.errors for c in failed_agents]
    judge_errors = [m.error for m in metrics if m.error]
    assert judge_errors and all("HTTP 401" in error for error in judge_errors)
    assert any(m.passed and m.retry_count == 1 for m in metrics)  # the 500, retried

    # The secrets did reach the services they are for, and only those.
    judge_auth = {r["headers"].get("authorization") for r in judge.requests}
    assert judge_auth == {f"Bearer {JUDGE_KEY}"}
    agent_auth = {(r["body"]["model"], r["headers"].get("authorization")) for r in agents.requests}
    assert agent_auth == {
        ("agent-model", f"Bearer {AGENT_KEY}"),
        ("http-agent-model", f"Bearer {HTTP_TOKEN}"),
    }
    slack_auth = {r["headers"].get("Authorization") for r in slack.requests if r["path"].startswith("/api/")}
    assert slack_auth == {f"Bearer {SLACK_TOKEN}", f"Bearer {WRONG_TOKEN}"}
    assert any(r["path"].endswith(f"/{WEBHOOK_SECRET}") for r in slack.requests)

    # Everything the runs left behind.
    captured = capfd.readouterr()
    places: dict[str, str | bytes] = {
        "CLI stdout": captured.out,
        "CLI stderr": captured.err,
        "Python logging": caplog.text,
        "log record arguments": "\n".join(repr((r.msg, r.args)) for r in caplog.records),
        "database rows": _database_dump(Path(sqlite_url.removeprefix("sqlite:///"))),
        "run summaries": "\n".join(s.model_dump_json() for s in (sent, down, wrong)),
        "Slack request bodies": json.dumps([r["body"] for r in slack.requests]),
        "judge request bodies": json.dumps([r["body"] for r in judge.requests]),
        "agent request bodies": json.dumps([r["body"] for r in agents.requests]),
    }
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert {"report.md", "report.html", "junit.xml", "report.json", "eval_report.json", "comparison.md"} <= {
        path.name for path in written
    }
    assert any(path.name.startswith("results.db") for path in written)
    places |= {f"file {path.relative_to(tmp_path)}": path.read_bytes() for path in written}
    places |= asyncio.run(_prefect_records(sorted({run.flow_run_id for run in runs})))
    assert "agent_down" in places["Slack request bodies"] and "401" in places["database rows"]
    assert not _leaks(places), _leaks(places)


def test_the_webhook_url_is_not_logged_when_slack_retries(caplog, monkeypatch) -> None:
    from proctor.notify.digest import Digest
    from proctor.notify.slack import notify_slack

    caplog.set_level(logging.INFO)
    with FakeSlack() as slack:
        monkeypatch.setenv("PROCTOR_TEST_SLACK_WEBHOOK", _webhook(slack))
        slack.fail(503)  # answered 503 once, then retried
        settings = SlackSettings(
            webhook_url="${PROCTOR_TEST_SLACK_WEBHOOK}", notify="always", retry_backoff=0.01
        )
        digest = Digest(uuid.uuid4(), "suite", "agent.py:agent", None, "completed", 1, 1, 0, 0, 100.0)
        result = notify_slack(settings, digest)
    assert result.status == "sent" and result.attempts == 2
    assert any(r["path"].endswith(WEBHOOK_SECRET) for r in slack.requests)
    assert not _leaks({"Python logging": caplog.text})


def test_redact_cuts_keys_out_whole_and_as_echoed() -> None:
    from proctor.judges import redact

    message = f"Incorrect API key provided: {JUDGE_KEY[:12]}****{JUDGE_KEY[-4:]}; sent 'Bearer {JUDGE_KEY}'"
    assert redact(message, JUDGE_KEY, None, "") == "Incorrect API key provided: ***; sent 'Bearer ***'"
    assert redact("short key abc", "abc") == "short key ***"  # too short to match by its first characters
    assert redact("nothing secret here", JUDGE_KEY) == "nothing secret here"
