"""`proctor run` with no Prefect API configured: the flow's steps run in-process, Prefect is never
imported, and the run is stored, reported, notified and ends with the same exit code as a flow run."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.cli import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED, main
from proctor.models.notify import SlackSettings
from proctor.models.request import EvaluationRequest
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow
from proctor.run.local_run import evaluate_in_process
from proctor.storage import get_engine
from tests.conftest import EXAMPLE_SUITE
from tests.fakes.slack_server import FakeSlack

pytestmark = pytest.mark.flow

# Libraries the weather example has no use for: no model is called (openai, httpx), no file is
# attached (markitdown), its metrics need no NLTK, numpy, sacrebleu or embeddings, and nothing
# orchestrates it (prefect, dask).
NOT_NEEDED = (
    "prefect",
    "openai",
    "httpx",
    "markitdown",
    "nltk",
    "numpy",
    "scipy",
    "pandas",
    "sklearn",
    "sacrebleu",
    "sentence_transformers",
    "torch",
    "distributed",
    "dask",
    "slack_sdk",
)

RUN_AND_LIST_MODULES = """
import json, sys
from proctor.cli import main
code = main(["run", sys.argv[1], "--no-progress"])
print("MODULES " + json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
sys.exit(code)
"""


def _without_prefect_config(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "PROCTOR_"))}
    env["HOME"] = str(home)  # no ~/.prefect/profiles.toml naming a server
    return env


def test_the_example_runs_without_prefect_and_imports_only_what_it_uses(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST_MODULES, str(EXAMPLE_SUITE)],
        cwd=tmp_path,
        env=_without_prefect_config(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == EXIT_FAILED, done.stderr
    assert "4/5 passed" in done.stdout and "Traceback" not in done.stderr
    modules = set(json.loads(done.stdout.split("MODULES ", 1)[1]))
    assert {"proctor", "sqlmodel", "rouge_score"} <= modules  # it did run, and scored ROUGE
    assert sorted(modules & set(NOT_NEEDED)) == []
    assert "not a Prefect flow run" in done.stderr and "prefect server start" in done.stderr

    database = f"sqlite:///{tmp_path / '.proctor' / 'proctor.db'}"
    with Session(get_engine(database)) as session:
        run = session.exec(select(EvalRun)).one()
        assert run.flow_run_id is None and run.total_cases == 5 and run.passed_cases == 4
    assert list((tmp_path / ".proctor" / "reports").rglob("report.html"))


def _stored(database_url: str) -> tuple[EvalRun, list[tuple], list[tuple]]:
    with Session(get_engine(database_url)) as session:
        run = session.exec(select(EvalRun)).one()
        cases = session.exec(
            select(CaseResultRow.case_id, CaseResultRow.state, CaseResultRow.passed).order_by(
                CaseResultRow.case_id
            )
        ).all()
        metrics = session.exec(
            select(MetricResultRow.metric_name, MetricResultRow.score, MetricResultRow.passed).order_by(
                MetricResultRow.metric_name, MetricResultRow.score
            )
        ).all()
    return run, [tuple(row) for row in cases], [tuple(row) for row in metrics]


def _report_cases(folder: Path) -> list[dict]:
    """report.json's cases without what differs between any two runs (times)."""
    results = json.loads((folder / "report.json").read_text())["results"]
    for case in results:
        case.pop("timestamp"), case.pop("execution_time_ms")
        for metric in case["metric_results"]:
            metric.pop("evaluation_time_ms")
    return results


@pytest.mark.usefixtures("prefect_harness")
def test_without_prefect_a_run_stores_reports_and_notifies_as_a_flow_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from proctor.flows.evaluate import run_evaluation

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-local-test")
    summaries = {}
    with FakeSlack(token="xoxb-local-test") as slack:
        for mode, run in (("flow", run_evaluation), ("local", evaluate_in_process)):
            request = EvaluationRequest(
                suite=str(EXAMPLE_SUITE),
                database_url=f"sqlite:///{tmp_path / mode}.db",
                report_dir=str(tmp_path / mode),
                slack=SlackSettings(channel="#evals", notify="always", api_url=slack.api_url),
            )
            summaries[mode] = asyncio.run(run(request))
        posts = [message for message in slack.messages() if not message.get("thread_ts")]
    flow, local = summaries["flow"], summaries["local"]
    assert (local.total, local.passed, local.failed, local.status) == (5, 4, 1, flow.status)
    assert local.all_passed is flow.all_passed is False  # the same exit code: 1
    assert local.notification["status"] == flow.notification["status"] == "sent"
    assert len(posts) == 2 and all("80.0% (4/5 passed" in json.dumps(post["blocks"]) for post in posts)

    flow_run, flow_cases, flow_metrics = _stored(f"sqlite:///{tmp_path / 'flow'}.db")
    local_run, local_cases, local_metrics = _stored(f"sqlite:///{tmp_path / 'local'}.db")
    assert flow_run.flow_run_id and local_run.flow_run_id is None
    assert local_cases == flow_cases and local_metrics == flow_metrics
    assert (local_run.passed_cases, local_run.status) == (flow_run.passed_cases, flow_run.status)
    assert local_run.notification["status"] == "sent"
    assert _report_cases(tmp_path / "local") == _report_cases(tmp_path / "flow")
    for name in ("report.md", "report.html", "junit.xml", "eval_report.json"):
        assert (tmp_path / "local" / name).exists(), name


def test_exit_codes_without_prefect(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    database = f"sqlite:///{tmp_path / 'r.db'}"
    common = ["--no-prefect", "--no-progress", "--db", database, "--output", str(tmp_path / "out")]
    passing = ["--case", "basic_weather", "--case", "greeting"]
    assert main(["run", str(EXAMPLE_SUITE), *common, *passing]) == EXIT_PASSED
    assert "2/2 passed" in capsys.readouterr().out
    assert main(["run", str(EXAMPLE_SUITE), *common]) == EXIT_FAILED
    unreachable = ["--db", "postgresql://postgres@127.0.0.1:9/none"]
    assert main(["run", str(EXAMPLE_SUITE), "--no-prefect", "--no-progress", *unreachable]) == EXIT_ERROR
    assert "could not complete" in capsys.readouterr().err


def test_without_prefect_a_run_that_cannot_complete_tells_slack_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the flow does: the reason in Slack, per the notify policy, and no password in it."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-local-test")
    with FakeSlack(token="xoxb-local-test") as slack:
        request = EvaluationRequest(
            suite=str(EXAMPLE_SUITE),
            database_url="postgresql://proctor:hunter2@127.0.0.1:9/results",
            report_dir=str(tmp_path / "r"),
            slack=SlackSettings(channel="#evals", notify="failure", api_url=slack.api_url),
        )
        with pytest.raises(Exception, match="127.0.0.1"):
            asyncio.run(evaluate_in_process(request))
        messages = slack.messages()
    assert len(messages) == 1
    text = json.dumps(messages[0]["blocks"])
    assert "weather.evalset.json" in text and "127.0.0.1" in text and "hunter2" not in text


SLOW_AND_QUICK_AGENT = """
import asyncio

async def agent(request):
    if request.case_id == "slow":
        await asyncio.sleep(1.5)
    return "done"
"""


def test_a_quick_case_is_scored_and_stored_while_a_slow_one_is_still_with_its_agent(tmp_path: Path) -> None:
    """In one chunk, each case goes on to scoring as soon as its agent answers: a case is not
    held back by the slowest agent call of its chunk (nor would a crash there cost it)."""
    (tmp_path / "agent.py").write_text(SLOW_AND_QUICK_AGENT)
    cases = [
        {
            "eval_id": case_id,
            "conversation": [
                {
                    "invocation_id": "t",
                    "user_content": {"role": "user", "content": "go"},
                    "expected_final_response": {"role": "assistant", "content": "done"},
                }
            ],
        }
        for case_id in ("slow", "quick")
    ]
    suite = tmp_path / "s.evalset.json"
    criteria = {"criteria": {"contains": {"threshold": 1.0, "values": ["done"]}}}
    suite.write_text(
        json.dumps(
            {
                "eval_set_id": "s",
                "metadata": {"agent": "agent.py:agent", "eval_config": criteria},
                "eval_cases": cases,
            }
        )
    )
    url = f"sqlite:///{tmp_path / 'r.db'}"
    request = EvaluationRequest(
        suite=str(suite), database_url=url, chunk_size=2, report_dir=str(tmp_path / "out")
    )
    summary = asyncio.run(evaluate_in_process(request))
    assert summary.passed == 2
    with Session(get_engine(url)) as session:
        rows = {row.case_id: row for row in session.exec(select(CaseResultRow))}
    slow_agent_answered = rows["slow"].started_at.timestamp() + 1.5
    assert rows["quick"].finished_at.timestamp() < slow_agent_answered - 0.5
