"""Nothing lost, for real: a write the database refuses, text it cannot store, a second
process on the same run, a kill while reports are written.

Each test runs real runs (the CLI in this process, or `proctor` in a subprocess) on SQLite
and, with PROCTOR_TEST_POSTGRES_URL, on a fresh PostgreSQL database of its own, and then
checks the database: every case stored exactly once, with the reason when it failed, and
`proctor resume` running exactly what had not run.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from proctor.cli import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_PASSED
from proctor.storage import get_engine
from tests.factories import echo_suite
from tests.fakes.processes import start, stop

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

CASES = 30
FINAL = ("COMPLETE", "FILES_FAILED", "AGENT_FAILED", "EVALUATION_FAILED")
AGENT = """
import os, time

def agent(request):
    with open(os.environ["CALL_LOG"], "a") as handle:
        handle.write(request.case_id + "\\n")
    time.sleep(float(os.environ.get("AGENT_DELAY", "0")))
    if request.case_id == os.environ.get("POISONED", ""):
        return "poison for " + request.input
    return "answer " + request.input
"""

# Refuses any case row whose answer says "poison": a database refusing one case's write,
# whatever the cause (a constraint, a trigger, a value too large, a character it rejects).
SQLITE_REFUSAL = [
    "CREATE TRIGGER refuse_insert BEFORE INSERT ON case_result WHEN NEW.response LIKE '%poison%' "
    "BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END",
]
POSTGRES_REFUSAL = [
    "CREATE FUNCTION refuse_poison() RETURNS trigger AS $$ BEGIN IF NEW.response LIKE '%poison%' "
    "THEN RAISE EXCEPTION 'refused by the test trigger'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
    "CREATE TRIGGER refuse_insert BEFORE INSERT OR UPDATE ON case_result FOR EACH ROW "
    "EXECUTE FUNCTION refuse_poison()",
]


@pytest.fixture
def fresh_postgres() -> Iterator[str]:
    """A database of this test's own on the given server (triggers stay in it), dropped after."""
    import psycopg
    from sqlalchemy.engine import make_url

    from proctor.storage.db import dispose_engines, normalize_url
    from proctor.storage.writer import close_writers

    server = os.environ.get("PROCTOR_TEST_POSTGRES_URL")
    if not server:
        pytest.skip("PostgreSQL tests SKIPPED: set PROCTOR_TEST_POSTGRES_URL")
    base = make_url(normalize_url(server))
    name = f"proctor_integrity_{uuid.uuid4().hex[:10]}"
    admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    yield base.set(drivername="postgresql", database=name).render_as_string(hide_password=False)
    close_writers()
    dispose_engines()
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'results.db'}"
    return request.getfixturevalue("fresh_postgres")


def _execute(url: str, *statements: str) -> list[tuple]:
    with get_engine(url).begin() as connection:
        rows: list[tuple] = []
        for statement in statements:
            result = connection.execute(text(statement))
            rows = [tuple(row) for row in result] if result.returns_rows else []
        return rows


def _rows(url: str) -> list[tuple]:
    return _execute(url, "SELECT case_id, attempt, state, errors FROM case_result ORDER BY case_id")


def _errors(value: object) -> list[str]:
    return json.loads(value) if isinstance(value, str) else list(value or [])


def _proctor(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """The `proctor` command in its own process, against this session's Prefect API."""
    from prefect.settings import PREFECT_API_URL

    proctor = str(Path(sys.executable).with_name("proctor"))
    environment = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value()), **env}
    return subprocess.run([proctor, *args], env=environment, capture_output=True, text=True, timeout=600)


def _run_args(suite: Path, url: str, tmp_path: Path, *extra: str) -> list[str]:
    return ["run", str(suite), "--db", url, "--output", str(tmp_path / "reports"), "--no-progress", *extra]


# -- 1: one refused write ---------------------------------------------------------------------
def test_a_refused_write_fails_only_its_own_case_with_the_reason(database: str, tmp_path: Path) -> None:
    calls = tmp_path / "calls.log"
    suite = echo_suite(tmp_path, name="refusal", cases=CASES, agent=AGENT, fails=lambda i: False)
    _execute(database, *(SQLITE_REFUSAL if database.startswith("sqlite") else POSTGRES_REFUSAL))

    done = _proctor(
        _run_args(suite, database, tmp_path, "--chunk-size", "10", "--concurrency", "2"),
        CALL_LOG=str(calls),
        POISONED="c05",
    )
    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr  # one case failed, the run completed
    rows = _rows(database)
    assert [row[0] for row in rows] == [f"c{i:02d}" for i in range(CASES)]  # every case, once
    states = {case_id: (state, _errors(errors)) for case_id, _, state, errors in rows}
    poisoned_state, poisoned_errors = states.pop("c05")
    assert poisoned_state == "EVALUATION_FAILED"
    (why,) = poisoned_errors
    assert why.startswith("the case's results could not be stored:") and "refused by the test trigger" in why
    assert all(state == ("COMPLETE", []) for state in states.values()), states
    assert Counter(calls.read_text().split()) == Counter(f"c{i:02d}" for i in range(CASES))
    ((status, total, passed),) = _execute(database, "SELECT status, total_cases, passed_cases FROM eval_run")
    assert (status.lower(), total, passed) == ("completed", CASES, CASES - 1)
    report = (tmp_path / "reports" / "report.md").read_text()
    assert "refused by the test trigger" in report


def test_a_case_whose_run_is_ending_is_not_stored_as_an_agent_failure(
    sqlite_url: str, tmp_path: Path
) -> None:
    """Its agent was never called: it must stay unfinished, so `proctor resume` runs it."""
    from proctor.agents import AgentThreadsClosed
    from proctor.execution.pipeline import CaseWork, RunSettings, execute_agent, release_runtime, runtime_for
    from tests.factories import make_case, stored_run

    (tmp_path / "agent.py").write_text("def agent(request):\n    return 'answer'\n")
    run_id = stored_run(sqlite_url)
    settings = RunSettings(
        run_id=run_id,
        database_url=sqlite_url,
        agent=f"{tmp_path / 'agent.py'}:agent",
        suite_dir=str(tmp_path),
    )

    async def scenario() -> list[CaseWork]:
        runtime = runtime_for(settings)
        runtime.invoker.close()  # the run let go of its agent while these cases were queued
        works = [CaseWork(position, make_case(case_id=f"c{position}")) for position in range(3)]
        for work in works:
            work.outcome.state = work.outcome.state.FILES_READY
        with pytest.raises(AgentThreadsClosed):
            await execute_agent(works, runtime)
        release_runtime(run_id)
        return works

    works = asyncio.run(scenario())
    assert all(not work.outcome.state.is_final for work in works)
    assert _execute(sqlite_url, "SELECT count(*) FROM case_result") == [(0,)]


# -- 3: one owner per run ---------------------------------------------------------------------
def test_resume_of_a_live_run_is_refused_and_of_a_killed_one_runs_the_rest(
    sqlite_url: str, tmp_path: Path
) -> None:
    from prefect.settings import PREFECT_API_URL

    calls = tmp_path / "calls.log"
    suite = echo_suite(tmp_path, name="owned", cases=CASES, agent=AGENT, fails=lambda i: False)
    proctor = str(Path(sys.executable).with_name("proctor"))
    env = {
        **os.environ,
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "CALL_LOG": str(calls),
        "AGENT_DELAY": "3",  # 45 s of cases: time for a second `proctor` process to start
    }
    log = tmp_path / "run.log"
    process = start(
        [proctor, *_run_args(suite, sqlite_url, tmp_path, "--concurrency", "2")], env=env, log=log
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            done = _execute(sqlite_url, "SELECT count(*) FROM case_result") if _has_runs(sqlite_url) else []
            if done and done[0][0] >= 4:
                break
            assert process.poll() is None, log.read_text()[-3000:]
            time.sleep(0.1)
        ((run_id,),) = _execute(sqlite_url, "SELECT id FROM eval_run")
        refused = _proctor(
            ["resume", str(run_id)[:8], "--db", sqlite_url, "--no-progress"], CALL_LOG=str(calls)
        )
        err = refused.stderr
        assert refused.returncode == EXIT_BAD_INPUT, refused.stdout + err
        assert "is still running (process " in " ".join(err.split()) and str(process.pid) in err
        assert process.poll() is None, "the refused resume must leave the live run alone"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
    finally:
        stop(process)
    finished = {row[0] for row in _rows(sqlite_url) if row[2] in FINAL}
    resumed = _proctor(
        ["resume", str(run_id)[:8], "--db", sqlite_url, "--no-progress", "--concurrency", "16"],
        CALL_LOG=str(calls),
        AGENT_DELAY="0.1",
    )
    assert resumed.returncode == EXIT_PASSED, resumed.stdout + resumed.stderr
    counted = Counter(calls.read_text().split())
    assert all(counted[case] == 1 for case in finished)  # finished cases were not run again
    assert set(counted) == {f"c{i:02d}" for i in range(CASES)}  # the rest ran (those in flight again)
    rows = _rows(sqlite_url)
    assert len(rows) == CASES and {row[2] for row in rows} == {"COMPLETE"}
    ((status, passed),) = _execute(sqlite_url, "SELECT status, passed_cases FROM eval_run")
    assert (status.lower(), passed) == ("completed", CASES)


def _has_runs(url: str) -> bool:
    try:
        return bool(_execute(url, "SELECT count(*) FROM eval_run")[0][0])
    except Exception:  # noqa: BLE001 - the run has not created its tables yet
        return False


def test_a_claim_is_refused_while_its_holder_lives_and_taken_once_it_is_gone(sqlite_url: str) -> None:
    from proctor.storage.lease import RunBusy, claim, release
    from tests.factories import stored_run

    run_id = stored_run(sqlite_url)
    engine = get_engine(sqlite_url)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive = f"{os.uname().nodename}:{sleeper.pid}:other"
        _execute(sqlite_url, f"UPDATE eval_run SET owner = '{alive}'")
        with pytest.raises(RunBusy, match=f"process {sleeper.pid}"):
            claim(engine, run_id, "me:1:a")
    finally:
        sleeper.kill()
        sleeper.wait()
    mine = f"{os.uname().nodename}:{os.getpid()}:mine"
    claim(engine, run_id, mine)  # its holder is gone: taken over
    assert _execute(sqlite_url, "SELECT owner FROM eval_run") == [(mine,)]
    # Another host's holder is alive while its heartbeat is fresh, gone once it is stale.
    _execute(sqlite_url, "UPDATE eval_run SET owner = 'elsewhere:1:x', heartbeat_at = CURRENT_TIMESTAMP")
    with pytest.raises(RunBusy, match="on elsewhere"):
        claim(engine, run_id, mine)
    _execute(sqlite_url, "UPDATE eval_run SET heartbeat_at = '2000-01-01 00:00:00'")
    claim(engine, run_id, mine)
    release(engine, run_id, mine)
    assert _execute(sqlite_url, "SELECT owner FROM eval_run") == [(None,)]


# -- 4: killed while reports are written ------------------------------------------------------
def test_a_run_killed_while_its_reports_are_written_is_finished_by_resume(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped just after its cases' tallies were recorded: the run is not `completed` (its
    reports are missing), and `proctor resume` writes them and completes it, calling no agent."""
    from proctor.tasks import report

    calls = tmp_path / "calls.log"
    monkeypatch.setenv("CALL_LOG", str(calls))
    suite = echo_suite(tmp_path, name="reports", cases=3, agent=AGENT, fails=lambda i: False)

    def killed(**_: object) -> None:
        raise ProcessKilled  # as with a SIGKILL, nothing after this point runs

    monkeypatch.setattr(report, "render_reports", killed)
    with pytest.raises(ProcessKilled):
        asyncio.run(_run_flow(suite, sqlite_url, tmp_path))
    monkeypatch.undo()
    ((run_id, status, total),) = _execute(sqlite_url, "SELECT id, status, total_cases FROM eval_run")
    assert (status.lower(), total) == ("running", 3)  # its cases are done, its reports are not
    assert not (tmp_path / "reports" / "report.md").exists()
    # Its process is gone (the lease names this process, which no longer holds it).
    resumed = _proctor(["resume", str(run_id)[:8], "--db", sqlite_url, "--no-progress"], CALL_LOG=str(calls))
    assert resumed.returncode == EXIT_PASSED, resumed.stdout + resumed.stderr
    assert (tmp_path / "reports" / "report.md").exists() and (tmp_path / "reports" / "junit.xml").exists()
    assert _execute(sqlite_url, "SELECT status FROM eval_run")[0][0].lower() == "completed"
    assert len(calls.read_text().split()) == 3  # no agent was called again


class ProcessKilled(Exception):
    pass


async def _run_flow(suite: Path, url: str, tmp_path: Path) -> object:
    from proctor.flows.evaluate import EvaluationRequest, evaluate

    return await evaluate(
        EvaluationRequest(suite=str(suite), database_url=url, report_dir=str(tmp_path / "reports"))
    )
