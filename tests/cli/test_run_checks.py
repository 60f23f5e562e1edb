"""Settings that would fail only after every case ran are refused before the run starts.

A nightly run that spends its agent and judge budget, then cannot write its reports or post
its summary, is the failure users notice last: each of these exits 2 with one line naming
the setting, and stores nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from proctor.cli import EXIT_BAD_INPUT, EXIT_FAILED, main
from tests.conftest import EXAMPLE_SUITE


def stored_runs(database: Path) -> int:
    if not database.exists():
        return 0
    with sqlite3.connect(database) as connection:
        tables = {row[0] for row in connection.execute("select name from sqlite_master")}
        return (
            connection.execute("select count(*) from eval_run").fetchone()[0] if "eval_run" in tables else 0
        )


def run(tmp_path: Path, *options: str) -> int:
    return main(
        ["run", str(EXAMPLE_SUITE), "--db", f"sqlite:///{tmp_path / 'r.db'}", "--no-prefect", *options]
    )


@pytest.mark.parametrize("output", ["report.txt", "report.txt/nightly"])
def test_an_output_folder_that_is_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture, output: str
) -> None:
    (tmp_path / "report.txt").write_text("not a folder")
    assert run(tmp_path, "--output", str(tmp_path / output), "--no-progress") == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"report_dir (--output): {tmp_path / 'report.txt'} is a file" in err
    assert stored_runs(tmp_path / "r.db") == 0


def test_an_output_folder_that_does_not_exist_yet_is_created(tmp_path: Path) -> None:
    assert run(tmp_path, "--output", str(tmp_path / "a" / "b"), "--no-progress") == EXIT_FAILED
    assert (tmp_path / "a" / "b" / "report.md").exists()


def test_a_slack_channel_without_a_token_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    assert run(tmp_path, "--slack-channel", "C0NIGHTLY", "--no-progress") == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "slack.token: Slack needs a bot token to post to a channel" in err
    assert "SLACK_BOT_TOKEN is not set" in err
    assert stored_runs(tmp_path / "r.db") == 0


def test_a_slack_webhook_variable_that_is_unset_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NIGHTLY_HOOK", raising=False)
    assert run(tmp_path, "--slack-webhook", "${NIGHTLY_HOOK}", "--no-progress") == EXIT_BAD_INPUT
    assert "slack.webhook_url: Slack needs an incoming webhook URL" in capsys.readouterr().err


def test_slack_that_will_never_post_needs_no_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    assert run(tmp_path, "--slack-channel", "C1", "--notify", "never", "--no-progress") == EXIT_FAILED
    assert stored_runs(tmp_path / "r.db") == 1


@pytest.mark.usefixtures("prefect_harness")
def test_a_missing_prefect_secret_block_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert run(tmp_path, "--slack-webhook", "secret:no-such-hook", "--no-progress") == EXIT_BAD_INPUT
    assert "Prefect Secret block 'no-such-hook' could not be loaded" in capsys.readouterr().err
    assert stored_runs(tmp_path / "r.db") == 0


@pytest.mark.usefixtures("prefect_harness")
def test_validate_finds_a_judge_key_in_a_missing_secret_block(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "agent.yaml").write_text(
        "name: capitals\n"
        "model: {provider: openai, name: gpt-4o-mini}\n"
        "evaluations:\n"
        "  model: {provider: openai, name: gpt-4o-mini, api_key: 'secret:no-such-judge-key'}\n"
        "  metrics: [{metric: llm_judge, threshold: 0.7}]\n"
        "test_cases: [{name: france, input: Capital of France, ground_truth: Paris}]\n"
    )
    assert main(["validate", str(tmp_path / "agent.yaml")]) == EXIT_BAD_INPUT
    assert "Prefect Secret block 'no-such-judge-key' could not be loaded" in capsys.readouterr().err
