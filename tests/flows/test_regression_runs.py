"""Nightly-style runs end to end: repeats counted k of n, the comparison with the baseline
stored and reported, the exit code as a CI gate, and the Slack summary."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.cli import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_PASSED, main
from proctor.flows.evaluate import EvaluationRequest, run_evaluation
from proctor.models.notify import SlackSettings
from proctor.models.tables import CaseResultRow, EvalRun
from proctor.storage import get_engine
from tests.conftest import EXAMPLE_SUITE, ROOT
from tests.factories import seed_run, stored_run
from tests.fakes.slack_server import FakeSlack

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

WEATHER = f"{ROOT / 'examples' / 'weather' / 'agent.py'}:weather_agent"
BROKEN = """
from examples.weather.agent import weather_agent

def agent(request):
    if request.case_id == "basic_weather":
        return "Sorry, the weather service is down."
    return weather_agent(request)
"""


@pytest.fixture
def broken_agent(tmp_path: Path) -> str:
    (tmp_path / "broken.py").write_text(BROKEN)
    return f"{tmp_path / 'broken.py'}:agent"


def run(url: str, out: Path, *extra: str, agent: str = WEATHER) -> int:
    return main(
        [
            "run",
            str(EXAMPLE_SUITE),
            "--db",
            url,
            "--no-progress",
            "--output",
            str(out),
            "--agent",
            agent,
            *extra,
        ]
    )


def runs(url: str) -> list[EvalRun]:
    with Session(get_engine(url)) as session:
        return list(session.exec(select(EvalRun).order_by(EvalRun.started_at)).all())


def test_repeats_a_a_rerun_and_a_real_regression(sqlite_url, tmp_path, broken_agent, capsys) -> None:
    # Night 1: six repeats of every case; the weather agent fails one case every time.
    assert run(sqlite_url, tmp_path / "n1", "--repeat", "6", "--min-pass-rate", "75") == EXIT_PASSED
    first = runs(sqlite_url)[-1]
    assert (first.repeat, first.total_cases, first.passed_cases, first.comparison) == (6, 30, 24, None)
    with Session(get_engine(sqlite_url)) as session:
        rows = session.exec(select(CaseResultRow).where(CaseResultRow.run_id == first.id)).all()
    assert sorted({row.attempt for row in rows}) == list(range(6)) and len(rows) == 30
    report = (tmp_path / "n1" / "report.md").read_text()
    assert "every case ran 6 times" in report and "Tokyo weather lookup (repeat 6)" in report
    assert "| `fahrenheit_units` | 0/6 |" in report  # k of n for the cases that did not always pass
    capsys.readouterr()

    # Night 2, same agent: an A/A rerun. Compared with night 1, no alarm; the gate holds.
    assert run(sqlite_url, tmp_path / "n2", "--repeat", "6", "--min-pass-rate", "75") == EXIT_PASSED
    second = runs(sqlite_url)[-1]
    assert second.baseline_run_id == first.id and second.comparison["regressed"] is False
    assert "No regression" in (tmp_path / "n2" / "report.md").read_text()
    capsys.readouterr()

    # Night 3, another agent with one case broken: 18/30 = 60%, above the 50% gate. Baselines
    # are per suite and agent, so it has none yet and nothing to regress from: exit 0.
    assert (
        run(sqlite_url, tmp_path / "n3", "--repeat", "6", "--min-pass-rate", "50", agent=broken_agent)
        == EXIT_PASSED
    )
    out = capsys.readouterr().out
    third = runs(sqlite_url)[-1]
    assert third.baseline_run_id is None  # another agent: no baseline of its own yet
    assert "regression" not in out.lower()

    # Pinned against night 2, the broken agent's run is judged against the weather agent's
    # history up to night 2 (12 of 12 attempts passed): a significant break.
    assert (
        run(
            sqlite_url,
            tmp_path / "n4",
            "--repeat",
            "6",
            "--min-pass-rate",
            "50",
            "--baseline",
            str(second.id)[:8],
            agent=broken_agent,
        )
        == EXIT_FAILED
    )
    out = capsys.readouterr().out
    fourth = runs(sqlite_url)[-1]
    comparison = fourth.comparison
    assert fourth.baseline_run_id == second.id and comparison["regressed"] is True
    assert comparison["significant_cases"] == ["basic_weather"] and comparison["history_runs"] == 2
    (case,) = [c for c in comparison["cases"] if c["case_id"] == "basic_weather"]
    assert (case["label"], case["passed_before"], case["attempts_before"], case["passed_now"]) == (
        "newly_failing",
        12,
        12,
        0,
    )
    # P(6 of 6 fail | 12 of 12 passed, uniform prior) = 6! 13! / 19!
    assert case["p_value"] == pytest.approx(720 / (14 * 15 * 16 * 17 * 18 * 19))
    assert "newly failing: basic_weather — passed 12 of the last 12 attempts" in out and "significant" in out
    report = (tmp_path / "n4" / "report.md").read_text()
    assert "**Regressed**" in report
    assert "| `basic_weather` | newly failing ⚠ significant | passed 12 of the last 12 attempts" in report
    html = (tmp_path / "n4" / "report.html").read_text()
    assert "basic_weather" in html and "newly failing (significant)" in html

    # `proctor compare` says the same from the stored runs.
    assert main(["compare", str(second.id), str(fourth.id), "--db", sqlite_url]) == EXIT_FAILED
    assert "basic_weather" in capsys.readouterr().out


def test_bad_baseline_and_repeat_values_are_input_errors(sqlite_url, tmp_path, capsys) -> None:
    assert run(sqlite_url, tmp_path, "--baseline", "deadbeef") == EXIT_BAD_INPUT
    assert "--baseline" in capsys.readouterr().err
    other = stored_run(sqlite_url, suite_id="another-suite")
    assert run(sqlite_url, tmp_path, "--baseline", str(other)) == EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert "is a run of suite 'another-suite'" in err and "a baseline must be a run of the same suite" in err
    assert len(runs(sqlite_url)) == 1  # nothing was run
    assert run(sqlite_url, tmp_path, "--history-window", "0") == EXIT_BAD_INPUT
    assert "history_window" in capsys.readouterr().err
    assert run(sqlite_url, tmp_path, "--repeat", "0") == EXIT_BAD_INPUT
    assert "repeat" in capsys.readouterr().err
    assert run(sqlite_url, tmp_path, "--min-pass-rate", "150") == EXIT_BAD_INPUT


def test_flow_posts_to_slack_and_records_it(sqlite_url, tmp_path, broken_agent, monkeypatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-flow-test")
    with FakeSlack(token="xoxb-flow-test") as slack:
        settings = SlackSettings(channel="#agent-evals", notify="always", api_url=slack.api_url)
        for agent, folder in ((WEATHER, "a"), (WEATHER, "b")):
            request = EvaluationRequest(
                suite=str(EXAMPLE_SUITE),
                agent=agent,
                database_url=sqlite_url,
                report_dir=str(tmp_path / folder),
                slack=settings,
            )
            summary = asyncio.run(run_evaluation(request))
        assert summary.notification["status"] == "sent"
        summary_post, thread = slack.messages()[-2:]
        text = json.dumps(summary_post["blocks"])
        assert "80.0% (4/5 passed" in text and "no regression" in text
        assert (tmp_path / "b" / "report.html").as_uri() in text
        assert thread["thread_ts"] and "fahrenheit" in json.dumps(thread["blocks"]).lower()

        slack.down()  # Slack is down: the run, its results and its reports are intact
        request = EvaluationRequest(
            suite=str(EXAMPLE_SUITE),
            agent=broken_agent,
            database_url=sqlite_url,
            report_dir=str(tmp_path / "c"),
            slack=settings.model_copy(update={"retry_backoff": 0.01}),
        )
        summary = asyncio.run(run_evaluation(request))
    assert summary.status.value == "completed" and summary.total == 5
    assert summary.notification["status"] == "failed" and "503" in summary.notification["error"]
    stored = runs(sqlite_url)[-1]
    assert stored.notification["status"] == "failed" and stored.passed_cases == 3
    assert (tmp_path / "c" / "report.html").exists()
    assert "xoxb-flow-test" not in json.dumps(stored.notification)


def test_every_view_gives_the_same_labels_and_counts(sqlite_url, tmp_path, capsys, monkeypatch) -> None:
    """One real flow run after five stored nights: its labels, counts and evidence read the same
    in the terminal, report.md, report.html, verdict.json, both Prefect artifacts (read back
    through the API), `proctor compare` and Slack."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from proctor.cli.console import print_regression
    from proctor.stats.regression import Regression

    cases = ["basic_weather", "paris_conversation", "two_cities", "greeting", "fahrenheit_units"]
    start = datetime.now(UTC) - timedelta(days=6)
    with Session(get_engine(sqlite_url), expire_on_commit=False) as session:
        session.info["suite_id"] = "weather_agent_v1"
        for night in range(5):
            outcomes = {case: [True] for case in cases} | ({"retired": [True]} if night == 4 else {})
            baseline = seed_run(
                session,
                outcomes=outcomes,
                started=start + timedelta(days=night),
                agent="agent.py:weather_agent",
            )
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-labels-test")
    with FakeSlack(token="xoxb-labels-test") as slack:
        request = EvaluationRequest(
            suite=str(EXAMPLE_SUITE),
            database_url=sqlite_url,
            report_dir=str(tmp_path / "r"),
            slack=SlackSettings(channel="#agent-evals", notify="always", api_url=slack.api_url),
        )
        summary = asyncio.run(run_evaluation(request))
        summary_post, thread = slack.messages()
    counts = "newly failing 1 · still failing 0 · flaky 0 · fixed 0 · added 0 · removed 1"
    evidence = "passed 5 of the last 5 runs (a 14% chance if nothing changed)"
    assert summary.regression["baseline_id"] == str(baseline.id)

    print_regression(Regression.from_dict(summary.regression))  # what `proctor run` prints
    terminal = " ".join(capsys.readouterr().out.split())
    assert counts in terminal and f"newly failing: fahrenheit_units — {evidence}" in terminal
    assert "removed: retired — in the baseline, not in this run" in terminal

    assert main(["compare", str(baseline.id), str(summary.run_id), "--db", sqlite_url]) == EXIT_PASSED
    compared = " ".join(capsys.readouterr().out.split())
    assert counts in compared and f"newly failing: fahrenheit_units — {evidence}" in compared

    markdown = (tmp_path / "r" / "report.md").read_text()
    assert counts in markdown and f"| `fahrenheit_units` | newly failing | {evidence} |" in markdown
    assert "| `retired` | removed | in the baseline, not in this run |" in markdown
    html = (tmp_path / "r" / "report.html").read_text()
    assert counts in html and "<td>fahrenheit_units</td><td>newly failing</td>" in html
    assert evidence in html and "<td>retired</td><td>removed</td>" in html
    verdict = json.loads((tmp_path / "r" / "verdict.json").read_text())["comparison"]
    assert " · ".join(f"{name.replace('_', ' ')} {n}" for name, n in verdict["counts"].items()) == counts
    assert [(c["case_id"], c["label"], c["evidence"]) for c in verdict["cases"]] == [
        ("fahrenheit_units", "newly_failing", evidence),
        ("retired", "removed", "in the baseline, not in this run"),
    ]

    async def artifacts() -> list:
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(
                    key=ArtifactFilterKey(any_=["proctor-weather-agent-v1", "proctor-weather-agent-v1-cases"])
                )
            )

    published = asyncio.run(artifacts())
    (markdown_artifact,) = [a for a in published if a.type == "markdown" and str(summary.run_id) in a.data]
    assert counts in markdown_artifact.data
    assert f"| `fahrenheit_units` | newly failing | {evidence} |" in markdown_artifact.data
    tables = [a for a in published if a.type == "table" and a.flow_run_id == markdown_artifact.flow_run_id]
    table = json.loads(tables[0].data) if isinstance(tables[0].data, str) else tables[0].data
    labels = {row["case"]: (row["label"], row["evidence"]) for row in table}  # cases by their names
    assert labels.pop("New York in Fahrenheit (fails on purpose: the agent ignores units)") == (
        "newly failing",
        evidence,
    )
    assert set(labels.values()) == {("passing", "")} and len(labels) == 4

    text = json.dumps(summary_post["blocks"], ensure_ascii=False)
    assert counts in text and f"`fahrenheit_units` — {evidence}" in text
    assert f"newly failing: {evidence}" in json.dumps(thread["blocks"], ensure_ascii=False)
