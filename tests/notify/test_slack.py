"""The Slack notifier against a local Slack speaking the real Web API and webhook protocols."""

from __future__ import annotations

import json
import uuid

import pytest
from pydantic import ValidationError

from proctor.models.notify import NotifyPolicy, SlackSettings
from proctor.notify.digest import Digest, FailingCase
from proctor.notify.slack import escape_mrkdwn, notify_slack, should_notify
from proctor.stats.regression import CaseVerdict, MetricChange, Regression
from tests.fakes.slack_server import FakeSlack

TOKEN = "xoxb-sentinel-token-4242"
BASELINE = uuid.UUID("12345678-0000-0000-0000-000000000000")


def digest(
    *,
    failing: int = 2,
    cases: list[FailingCase] | None = None,
    regression: Regression | None = None,
    status: str = "completed",
    **fields,
) -> Digest:
    cases = (
        cases
        if cases is not None
        else [
            FailingCase(
                case_id=f"case_{i}",
                state="failed",
                reason=f"exact_match 0.00 < 1.00 (case {i})",
                response="no",
            )
            for i in range(failing)
        ]
    )
    values = dict(
        run_id=uuid.uuid4(),
        suite_name="weather",
        agent="agent.py:agent",
        variant=None,
        status=status,
        total=10,
        passed=10 - failing,
        failed=failing,
        errored=0,
        pass_rate=100.0 * (10 - failing) / 10,
        failing=cases,
        flow_run_link="http://127.0.0.1:4200/runs/flow-run/abc",
        report_link="https://reports.example/run/report.html",
    )
    values.update(fields)
    return Digest(regression=regression, **values)


def regression(newly_failing: list[str], significant: bool = True, **fields) -> Regression:
    """A verdict naming `newly_failing` (significant ones regress the run), as `judge` makes it."""
    cases = [
        CaseVerdict(
            case,
            "newly_failing",
            0,
            1,
            passed_before=14,
            attempts_before=14,
            runs_before=14,
            streak_runs=1,
            p_value=0.0001,
            significant=significant,
            evidence="passed 14 of the last 14 runs (a 6% chance if nothing changed)",
        )
        for case in newly_failing
    ]
    values = dict(
        baseline_id=BASELINE,
        run_id=uuid.uuid4(),
        pass_rate_before=100.0,
        pass_rate_after=80.0,
        newly_failing=newly_failing,
        cases=cases,
        significant_cases=newly_failing if significant else [],
        metrics=[MetricChange("exact_match", 1.0, 0.8), MetricChange("bleu", 0.5, 0.6)],
        compared=10,
        history_runs=14,
    )
    values.update(fields)
    return Regression(**values)


@pytest.fixture
def slack(monkeypatch) -> FakeSlack:
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    with FakeSlack(token=TOKEN) as fake:
        yield fake


def web_api(slack: FakeSlack, notify: str = "always", **fields) -> SlackSettings:
    return SlackSettings(
        channel="#agent-evals", notify=notify, api_url=slack.api_url, retry_backoff=0.01, **fields
    )


def all_text(blocks: list[dict]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def test_summary_then_failing_cases_in_its_thread(slack) -> None:
    result = notify_slack(web_api(slack), digest(failing=2, regression=regression(["case_0"])))
    assert (result.status, result.via, result.channel, result.attempts) == (
        "sent",
        "web_api",
        "C0AGENTEVAL",
        1,
    )
    summary, reply = slack.messages()
    assert slack.requests[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert summary["channel"] == "#agent-evals" and "thread_ts" not in summary
    text = all_text(summary["blocks"])
    assert (
        summary["blocks"][0]["type"] == "header"
        and ":rotating_light:" in summary["blocks"][0]["text"]["text"]
    )
    assert "80.0% (8/10 passed, 2 failed, 0 errored)" in text
    assert "-20.0 points vs baseline `12345678`" in text and "*regressed*" in text
    assert "Regressed" in summary["blocks"][0]["text"]["text"] and "*Regressions*" in text
    assert "`case_0` — passed 14 of the last 14 runs" in text and "*(significant)*" in text
    assert "history: 14 earlier runs (window 30)" in text
    assert "`exact_match`: 1.00 → 0.80 (-0.20)" in text and "bleu" not in text  # only metrics that fell
    assert "<http://127.0.0.1:4200/runs/flow-run/abc|Prefect flow run>" in text
    assert "<https://reports.example/run/report.html|Report>" in text
    assert reply["thread_ts"] == result.ts == "1700000000.000001" and result.thread_ts == "1700000000.000002"
    reply_text = all_text(reply["blocks"])
    assert "2 case(s) did not pass" in reply_text and "`case_1` (failed)" in reply_text


def test_a_clean_run_has_no_thread_and_says_so(slack) -> None:
    result = notify_slack(web_api(slack), digest(failing=0, regression=regression([], pass_rate_after=100.0)))
    assert result.status == "sent" and result.thread_ts is None
    (summary,) = slack.messages()
    assert ":white_check_mark:" in summary["blocks"][0]["text"]["text"]
    assert "no regression" in all_text(summary["blocks"])
    # the counts of every label, as the terminal and the reports show them, zeros included
    assert "newly failing 0 · still failing 0 · flaky 0 · fixed 0 · added 0 · removed 0" in all_text(
        summary["blocks"]
    )


def test_first_run_has_no_baseline(slack) -> None:
    notify_slack(web_api(slack), digest(failing=1))
    assert "no baseline yet" in all_text(slack.messages()[0]["blocks"])


def test_flaky_failures_are_listed_apart_and_nothing_is_a_regression(slack) -> None:
    flaky = CaseVerdict(
        "case_1", "flaky", 0, 1, 9, 13, 13, 1, 0.3, False, "passed 9 of 14 runs, tonight's included"
    )
    # A metric whose mean fell, even visibly, is no regression of a run that did not regress.
    fell = [MetricChange("bleu", 0.5, 0.4999), MetricChange("rouge", 0.9, 0.6)]
    quiet = regression(["case_0"], significant=False, flaky=["case_1"], metrics=fell)
    quiet.cases.append(flaky)
    notify_slack(web_api(slack), digest(failing=2, regression=quiet))
    summary, reply = slack.messages()
    text = all_text(summary["blocks"])
    assert "no regression" in text and "Regressions" not in text and "-0.00" not in text
    assert "rouge" not in text and "-0.30" not in text
    assert "newly failing 1 · still failing 0 · flaky 1 · fixed 0 · added 0 · removed 0" in text
    assert "*Newly failing*" in text and "*Flaky (not regressions)*" in text
    assert "`case_1` — passed 9 of 14 runs" in text
    assert ":rotating_light:" not in summary["blocks"][0]["text"]["text"]


def test_a_drop_of_the_whole_run_says_how_many_failed_against_what_history_expected(slack) -> None:
    broad = regression(
        [],
        broad_p_value=0.0004,
        observed_failures=31,
        expected_failures=14.2,
        metrics=[MetricChange("exact_match", 1.0, 0.8), MetricChange("bleu", 0.5, 0.49999)],
    )
    notify_slack(web_api(slack), digest(regression=broad))
    text = all_text(slack.messages()[0]["blocks"])
    assert "*Regressions*" in text and "31 failed attempts where history expected 14.2 (p = 0.0004)" in text
    # Under a regression, a metric that fell by less than the two decimals shown is not listed
    # as -0.00; one that visibly fell is.
    assert "`exact_match`: 1.00 → 0.80 (-0.20)" in text and "bleu" not in text and "-0.00" not in text


@pytest.mark.parametrize(
    ("policy", "failing", "regressed", "status", "expected"),
    [
        ("always", 0, False, "completed", True),
        ("failure", 0, False, "completed", False),
        ("failure", 1, False, "completed", True),
        ("failure", 0, False, "failed", True),
        ("regression", 1, False, "completed", False),
        ("regression", 1, True, "completed", True),
        ("regression", 0, False, "failed", True),
        ("never", 5, True, "failed", False),
    ],
)
def test_notify_policy(policy, failing, regressed, status, expected) -> None:
    which = regression(["case_0"] if regressed else [])
    assert (
        should_notify(NotifyPolicy(policy), digest(failing=failing, regression=which, status=status))
        is expected
    )


def test_a_skipped_notification_posts_nothing(slack) -> None:
    result = notify_slack(web_api(slack, notify="regression"), digest(failing=1, regression=regression([])))
    assert (result.status, result.reason) == ("skipped", "notify policy 'regression'")
    assert slack.requests == []


def test_rate_limits_and_server_errors_are_retried(slack) -> None:
    slack.fail(429, retry_after=0).fail(503).fail(500)
    result = notify_slack(web_api(slack), digest(failing=1))
    assert result.status == "sent" and result.thread_ts is not None
    statuses = [r["status"] for r in slack.requests]
    assert statuses == [429, 503, 500, 200, 200]
    assert result.attempts == 4


def test_slack_staying_down_is_recorded_not_raised(slack) -> None:
    slack.down()
    result = notify_slack(web_api(slack), digest(failing=1))
    assert result.status == "failed" and "503" in (result.error or "")
    assert result.attempts == 5 and len(slack.requests) == 5  # first try and four retries
    assert TOKEN not in json.dumps(result.to_dict())


def test_slack_unreachable_is_recorded_not_raised(monkeypatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    with FakeSlack() as gone:
        url = gone.api_url
    result = notify_slack(
        SlackSettings(channel="#x", notify="always", api_url=url, retry_backoff=0.01), digest()
    )
    assert result.status == "failed" and result.error and TOKEN not in result.error


def test_thread_reply_failing_after_the_summary_is_partial(slack) -> None:
    slack.fail(503, times=5, after=1)  # the summary goes out, the thread reply never does
    result = notify_slack(web_api(slack), digest(failing=1))
    assert (result.status, result.ts, result.thread_ts) == ("partial", "1700000000.000001", None)
    assert "503" in (result.error or "") and len(slack.requests) == 6


def test_a_wrong_token_is_an_error_that_does_not_show_the_token(slack, monkeypatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-wrong-secret-value")
    result = notify_slack(web_api(slack), digest())
    assert result.status == "failed" and result.error == "Slack API error 200: invalid_auth"
    assert "xoxb-wrong-secret-value" not in json.dumps(result.to_dict())


def test_a_missing_token_names_the_variable(monkeypatch) -> None:
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    result = notify_slack(SlackSettings(channel="#x", notify="always"), digest())
    assert result.status == "failed" and result.error == "environment variable SLACK_BOT_TOKEN is not set"


def test_a_literal_token_is_refused() -> None:
    with pytest.raises(ValidationError) as refused:
        SlackSettings(channel="#x", notify="always", token="xoxb-literal")
    (problem,) = refused.value.errors()
    assert problem["loc"] == ("token",) and "must name a secret" in problem["msg"]
    assert "xoxb-literal" not in problem["msg"]
    # One that got past validation anyway (built without it) is still refused at posting time.
    smuggled = SlackSettings.model_construct(
        **(SlackSettings(channel="#x", notify="always").__dict__ | {"token": "xoxb-literal"})
    )
    result = notify_slack(smuggled, digest())
    assert result.status == "failed" and "slack.token must be a reference" in (result.error or "")
    assert "xoxb-literal" not in (result.error or "")


def test_agent_text_is_escaped_for_slack(slack) -> None:
    hostile = "<!channel> *bold* <https://evil.example|click> & `code`"
    failing = [FailingCase(case_id="<@U123>", state="failed", reason=hostile, response=hostile)]
    notify_slack(web_api(slack), digest(failing=0, failed=1, passed=9, cases=failing))
    reply = all_text(slack.messages()[1]["blocks"])
    assert "<!channel>" not in reply and "<@U123>" not in reply and "<https://evil" not in reply
    assert "&lt;!channel&gt;" in reply and "&amp;" in reply and "`&lt;@U123&gt;`" in reply
    assert "*bold*" not in reply and "`code`" not in reply
    assert escape_mrkdwn("*bold*") == "*\u200bbold*\u200b"


def test_a_command_in_a_runs_error_copies_as_typed() -> None:
    from proctor.notify.slack import escape_keeping_commands

    error = (
        "results database cannot be opened: create it first: `createdb -U postgres -O proc_tor proc_db` <now>"
    )
    shown = escape_keeping_commands(error)
    assert "`createdb -U postgres -O proc_tor proc_db`" in shown  # a code span: no zero-width space
    assert "\u200b" not in shown and "&lt;now&gt;" in shown
    assert escape_keeping_commands("a_b `<!here>`") == "a_\u200bb `&lt;!here&gt;`"


def test_a_long_failure_list_stays_within_slacks_limits(slack) -> None:
    many = [FailingCase(case_id=f"c{i}", state="failed", reason="x" * 5000) for i in range(60)]
    long = digest(failing=0, failed=120, passed=0, total=120, cases=many, more_failing=60)
    result = notify_slack(web_api(slack), long)
    assert result.status == "sent"  # the fake refuses what Slack would refuse
    reply = slack.messages()[1]["blocks"]
    assert len(reply) == 50 and "… and 72 more in the report" in all_text(reply)


def test_incoming_webhook_alternative(slack, monkeypatch) -> None:
    monkeypatch.setenv("SLACK_WEBHOOK_URL", slack.webhook_url)
    slack.fail(429, retry_after=0)
    settings = SlackSettings(webhook_url="${SLACK_WEBHOOK_URL}", notify="always", retry_backoff=0.01)
    result = notify_slack(settings, digest(failing=2))
    assert (result.status, result.via, result.attempts) == ("sent", "webhook", 2)
    body = slack.requests[-1]["body"]
    assert slack.requests[-1]["path"] == "/webhook/T000/B000/secretpart"
    assert "8/10 passed" in body["text"] and "`case_1` (failed)" in all_text(body["blocks"])


def test_webhook_down_never_shows_its_url(slack, monkeypatch) -> None:
    monkeypatch.setenv("SLACK_WEBHOOK_URL", slack.webhook_url)
    slack.down()
    result = notify_slack(
        SlackSettings(webhook_url="${SLACK_WEBHOOK_URL}", notify="always", retry_backoff=0.01), digest()
    )
    assert result.status == "failed" and "503" in (result.error or "")
    assert "secretpart" not in json.dumps(result.to_dict())


def test_settings_need_a_destination() -> None:
    with pytest.raises(ValueError, match="slack needs a channel"):
        SlackSettings(notify="always")
