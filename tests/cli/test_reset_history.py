"""`proctor reset-history`: later verdicts of a suite read only the runs after it."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, col, select

from proctor.cli import EXIT_BAD_INPUT, EXIT_PASSED, main
from proctor.models.notify import SlackSettings
from proctor.models.tables import EvalRun
from proctor.notify.digest import build_digest
from proctor.notify.slack import notify_slack
from proctor.stats.regression import record_comparison
from proctor.storage import get_engine
from tests.conftest import EXAMPLE_SUITE
from tests.factories import seed_run
from tests.fakes.slack_server import FakeSlack


def test_a_reset_starts_the_history_afresh(sqlite_url, capsys) -> None:
    with Session(get_engine(sqlite_url), expire_on_commit=False) as session:
        session.info["suite_id"] = "weather-agent-v1"
        for night in range(5):
            seed_run(session, outcomes={"a": [True]}, started=datetime.now(UTC) - timedelta(days=5 - night))
    assert main(["reset-history", "nowhere", "--db", sqlite_url]) == EXIT_BAD_INPUT
    assert "no stored run of suite 'nowhere'" in capsys.readouterr().err
    assert (
        main(["reset-history", "weather-agent-v1", "--reason", "new prompt", "--db", sqlite_url])
        == EXIT_PASSED
    )
    assert (
        "for suite weather-agent-v1 · every agent: later runs start a new history" in capsys.readouterr().out
    )
    with Session(get_engine(sqlite_url), expire_on_commit=False) as session:
        session.info["suite_id"] = "weather-agent-v1"
        first = seed_run(session, outcomes={"a": [False]}, started=datetime.now(UTC) + timedelta(minutes=1))
        assert record_comparison(session=session, run=first) is None  # five passes before the reset: gone
        second = seed_run(session, outcomes={"a": [False]}, started=datetime.now(UTC) + timedelta(minutes=2))
        verdict = record_comparison(session=session, run=second)
        assert verdict is not None and verdict.history_runs == 1 and verdict.still_failing == ["a"]


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_the_first_run_after_a_reset_says_so_everywhere(sqlite_url, tmp_path, capsys, monkeypatch) -> None:
    """Where a verdict would be, a run without history says why: the first run of its suite
    and agent, or the first since its history was reset (when, and why): in the terminal,
    report.md, report.html and Slack."""
    monkeypatch.setenv("COLUMNS", "300")

    def run(folder: str) -> str:
        main(
            [
                "run",
                str(EXAMPLE_SUITE),
                "--db",
                sqlite_url,
                "--no-progress",
                "--output",
                str(tmp_path / folder),
            ]
        )
        return capsys.readouterr().out

    first = "No baseline yet: this is the first run of this suite and agent, so nothing is compared"
    assert first in run("one")
    assert "No baseline yet" not in run("two")
    assert main(["reset-history", "weather_agent_v1", "--reason", "new prompt", "--db", sqlite_url]) == 0
    out = run("three")
    said = re.search(
        r"No baseline yet: this is the first run of this suite and agent since its history was reset on "
        r"\d{4}-\d\d-\d\d \d\d:\d\d UTC \(new prompt\), so nothing is compared; the next run is judged "
        r"against this one\.",
        out,
    )
    assert said is not None, out
    assert said.group(0) in (tmp_path / "three" / "report.md").read_text()
    assert said.group(0) in (tmp_path / "three" / "report.html").read_text()
    with Session(get_engine(sqlite_url)) as session:
        run_row = session.exec(select(EvalRun).order_by(col(EvalRun.started_at).desc())).first()
        digest = build_digest(session=session, run=run_row, regression=None)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-reset-test")
    with FakeSlack(token="xoxb-reset-test") as slack:
        settings = SlackSettings(channel="#agent-evals", notify="always", api_url=slack.api_url)
        assert notify_slack(settings, digest).status == "sent"
        text = json.dumps(slack.messages()[0]["blocks"], ensure_ascii=False)
    assert "since its history was reset on" in text and "(new prompt)" in text
