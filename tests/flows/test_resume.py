"""A run stopped in the middle is finished by `proctor resume` or by a retry of its flow run:
finished cases are not run again (their agent is not called again), the others are, and the
report is the one an uninterrupted run writes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from proctor.cli import EXIT_BAD_INPUT, EXIT_FAILED, main
from proctor.flows.evaluate import EvaluationRequest, evaluate
from proctor.models.tables import CaseResultRow, EvalRun, RunStatus
from proctor.storage import get_engine
from tests.factories import echo_suite
from tests.fakes.processes import start, stop

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

CASES = 16
FINAL = ("COMPLETE", "FILES_FAILED", "AGENT_FAILED", "EVALUATION_FAILED")

# The agent logs every call before it answers, so the test counts calls, and is slow enough
# to be killed in the middle.
AGENT = """
import os, time

def agent(request):
    log = os.environ["CALL_LOG"]
    with open(log, "a") as handle:
        handle.write(request.case_id + "\\n")
    time.sleep(float(os.environ.get("AGENT_DELAY", "0")))
    return "answer " + request.input
"""


def _suite(folder: Path) -> Path:
    """Cases whose expected answer the agent gives, except every fourth (those fail)."""
    return echo_suite(folder, name="resume", cases=CASES, agent=AGENT, fails=lambda i: i % 4 == 0)


def _calls(log: Path) -> Counter[str]:
    return Counter(log.read_text().split()) if log.exists() else Counter()


def _rows(url: str) -> list[CaseResultRow]:
    with Session(get_engine(url)) as session:
        return list(session.exec(select(CaseResultRow)).all())


def _finished_so_far(database: Path) -> int:
    """Read-only peek with sqlite3 while the run writes (its tables may not exist yet)."""
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1) as connection:
            marks = ",".join("?" * len(FINAL))
            query = f"SELECT count(*) FROM case_result WHERE state IN ({marks})"
            return connection.execute(query, FINAL).fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _comparable(report_dir: Path) -> list[dict[str, Any]]:
    """A report's results without the timings, which differ between any two runs."""
    results = json.loads((report_dir / "report.json").read_text())["results"]
    timing = ("time", "timestamp", "duration", "_ms")
    return sorted(
        (
            {key: value for key, value in result.items() if not any(word in key for word in timing)}
            | {
                "metric_results": [
                    {k: v for k, v in metric.items() if not any(word in k for word in timing)}
                    for metric in result.get("metric_results", [])
                ]
            }
            for result in results
        ),
        key=lambda result: json.dumps(result, sort_keys=True),
    )


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    suite = _suite(tmp_path)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("CALL_LOG", str(log))
    return {"suite": suite, "log": log, "url": f"sqlite:///{tmp_path / 'results.db'}", "tmp": tmp_path}


def test_a_run_killed_with_sigkill_is_resumed_without_calling_finished_cases_again(workspace) -> None:
    from prefect.settings import PREFECT_API_URL

    suite, log, url, tmp = workspace["suite"], workspace["log"], workspace["url"], workspace["tmp"]
    proctor = str(Path(sys.executable).with_name("proctor"))
    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value()), "AGENT_DELAY": "0.4"}
    command = [proctor, "run", str(suite), "--db", url, "--output", str(tmp / "killed"), "--concurrency", "2"]
    process = start([*command, "--no-progress"], env=env, log=tmp / "run.log")
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"the run ended before it was killed:\n{(tmp / 'run.log').read_text()}")
            if _finished_so_far(tmp / "results.db") >= 5:
                break
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)  # agent calls under way
        process.wait(10)
    finally:
        stop(process)

    rows_at_kill = _rows(url)
    finished = {row.case_id for row in rows_at_kill if row.state in FINAL}
    checkpointed = {row.case_id for row in rows_at_kill if row.state == "AGENT_COMPLETE"}
    called_at_kill = _calls(log)
    in_flight = set(called_at_kill) - finished - checkpointed  # agent called, answer never stored
    assert 5 <= len(finished) < CASES and len(in_flight) <= 2
    with Session(get_engine(url)) as session:
        (run,) = session.exec(select(EvalRun)).all()
    assert run.status is RunStatus.RUNNING  # killed: nobody closed it

    env_resume = {"AGENT_DELAY": "0"}
    os.environ.update(env_resume)
    try:
        assert (
            main(["resume", str(run.id)[:8], "--db", url, "--output", str(tmp / "resumed"), "--no-progress"])
            == EXIT_FAILED
        )
    finally:
        os.environ.pop("AGENT_DELAY", None)

    calls = _calls(log)
    assert all(calls[case] == 1 for case in finished | checkpointed), calls  # not called again
    assert all(calls[case] == 2 for case in in_flight), calls  # its answer was lost: asked again
    assert sum(calls.values()) == CASES + len(in_flight)
    rows = _rows(url)
    assert len(rows) == CASES and all(row.state in FINAL for row in rows)  # each case once
    with Session(get_engine(url)) as session:
        resumed = session.get(EvalRun, run.id)
    assert (resumed.status, resumed.total_cases, resumed.passed_cases) == (RunStatus.COMPLETED, CASES, 12)

    # The same suite, uninterrupted, writes the same report.
    log.unlink()
    assert (
        main(["run", str(suite), "--db", url, "--output", str(tmp / "whole"), "--no-progress"]) == EXIT_FAILED
    )
    assert _comparable(tmp / "resumed") == _comparable(tmp / "whole")
    assert sum(_calls(log).values()) == CASES


def test_a_retried_flow_run_resumes_its_own_run(workspace, monkeypatch) -> None:
    """A chunk that dies for a reason outside the agent (an agent's own exceptions, any
    BaseException included, fail only its case) fails the flow run; Prefect's retry of that
    flow run resumes the same run. The death is a write refused once, at the seventh case."""
    suite, log, url, tmp = workspace["suite"], workspace["log"], workspace["url"], workspace["tmp"]
    from proctor.execution.runtime import Runtime

    saved, real_save = [], Runtime.save

    async def save_then_die(self, work):
        saved.append(work.case.case_id)
        if len(saved) == 7:
            raise RuntimeError("the worker died")
        return await real_save(self, work)

    monkeypatch.setattr(Runtime, "save", save_then_die)
    request = EvaluationRequest(suite=str(suite), database_url=url, report_dir=str(tmp / "r"), concurrency=2)
    retrying = evaluate.with_options(retries=1, retry_delay_seconds=0)
    summary = retrying(request)
    if hasattr(summary, "__await__"):
        import asyncio

        summary = asyncio.run(summary)
    assert (summary.total, summary.passed) == (CASES, 12)
    with Session(get_engine(url)) as session:
        runs = session.exec(select(EvalRun)).all()
    assert len(runs) == 1 and runs[0].status is RunStatus.COMPLETED  # one run, resumed, not two
    calls = _calls(log)
    again = {case for case, count in calls.items() if count > 1}
    assert 1 <= len(again) <= 2  # the crashed call (and the one beside it in its chunk)
    assert sum(calls.values()) == CASES + len(again)
    assert len(_rows(url)) == CASES


def test_resume_refuses_a_completed_or_unknown_run(workspace, capsys) -> None:
    suite, url, tmp = workspace["suite"], workspace["url"], workspace["tmp"]
    assert main(["run", str(suite), "--db", url, "--output", str(tmp / "a"), "--no-progress"]) == EXIT_FAILED
    with Session(get_engine(url)) as session:
        (run,) = session.exec(select(EvalRun)).all()
    capsys.readouterr()
    assert main(["resume", str(run.id), "--db", url]) == EXIT_BAD_INPUT
    assert "already completed; nothing to resume" in capsys.readouterr().err
    assert main(["resume", "ffffffff", "--db", url]) == EXIT_BAD_INPUT
    assert "no run matches 'ffffffff'" in capsys.readouterr().err
