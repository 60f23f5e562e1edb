"""The results database goes away in the middle of a run: a PostgreSQL of the test's own
(initdb and pg_ctl in a temporary folder, on another port) is stopped and started again.

Whatever happens, completed results survive and no case is recorded twice: the run waits
and retries while the database is back within `PROCTOR_DB_RETRY_S`, or fails with a clear
error (exit 3) and is finished later by `proctor resume`.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.factories import echo_suite
from tests.fakes.processes import free_port, start, stop

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

BINARIES = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
CASES = 16
FINAL = ("COMPLETE", "FILES_FAILED", "AGENT_FAILED", "EVALUATION_FAILED")
AGENT = """
import os, time

def agent(request):
    with open(os.environ["CALL_LOG"], "a") as handle:
        handle.write(request.case_id + "\\n")
    time.sleep(float(os.environ.get("AGENT_DELAY", "0")))
    return "answer " + request.input
"""


class OwnPostgres:
    """A throwaway PostgreSQL cluster run as the `postgres` user, controlled by its data folder."""

    def __init__(self) -> None:
        self.bin = Path(BINARIES[-1])
        self.folder = Path(tempfile.mkdtemp(prefix="proctor-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        shutil.chown(self.folder, "postgres", "postgres")
        self._as_postgres(
            str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync"
        )

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _as_postgres(self, *command: str) -> None:
        done = subprocess.run(
            ["runuser", "-u", "postgres", "--", *command], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{command[0]}: {done.stdout}{done.stderr}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.folder / "log"),
            "-w",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def pid(self) -> int | None:
        pid_file = self.data / "postmaster.pid"
        return int(pid_file.read_text().split()[0]) if pid_file.exists() else None

    def destroy(self) -> None:
        pid = self.pid()
        if pid:
            try:
                os.kill(pid, signal.SIGQUIT)  # immediate shutdown of this cluster only
                for _ in range(100):
                    os.kill(pid, 0)
                    time.sleep(0.05)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    if not BINARIES or not shutil.which("runuser"):
        pytest.skip("needs PostgreSQL's server binaries and runuser")
    server = OwnPostgres()
    server.start()
    try:
        yield server
    finally:
        server.destroy()


def _suite(folder: Path) -> Path:
    return echo_suite(folder, name="db", cases=CASES, agent=AGENT, fails=lambda i: False)


def _query(url: str, sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, connect_timeout=2) as connection:
        return connection.execute(sql).fetchall()


def _finished(url: str) -> int:
    try:
        marks = ",".join(f"'{state}'" for state in FINAL)
        return _query(url, f"SELECT count(*) FROM case_result WHERE state IN ({marks})")[0][0]
    except Exception:  # noqa: BLE001 - not created yet, or the server is down
        return 0


def _start_run(tmp_path: Path, url: str, **env: str) -> tuple[subprocess.Popen, Path]:
    from prefect.settings import PREFECT_API_URL

    proctor = str(Path(sys.executable).with_name("proctor"))
    suite = _suite(tmp_path)
    environment = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value()), **env}
    log = tmp_path / "run.log"
    command = [proctor, "run", str(suite), "--db", url, "--output", str(tmp_path / "r"), "--concurrency", "2"]
    return start([*command, "--no-progress"], env=environment, log=log), log


def _wait_for(condition, timeout: float, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if process.poll() is not None:
            pytest.fail(f"the run ended early ({process.returncode}):\n{log.read_text()[-3000:]}")
        time.sleep(0.05)
    pytest.fail(f"timed out:\n{log.read_text()[-3000:]}")


def _case_rows(url: str) -> list[tuple]:
    return _query(url, "SELECT case_id, attempt, state FROM case_result")


def test_the_run_waits_for_a_database_that_comes_back(own_postgres: OwnPostgres, tmp_path: Path) -> None:
    calls = tmp_path / "calls.log"
    process, log = _start_run(tmp_path, own_postgres.url, CALL_LOG=str(calls), AGENT_DELAY="0.3")
    try:
        _wait_for(lambda: _finished(own_postgres.url) >= 4, 120, process, log)
        own_postgres.stop("fast")  # connections cut mid-run
        time.sleep(3)
        own_postgres.start()
        assert process.wait(180) == 0, log.read_text()[-3000:]
    finally:
        stop(process)
    rows = _case_rows(own_postgres.url)
    assert len(rows) == CASES and len({(case, attempt) for case, attempt, _ in rows}) == CASES
    assert all(state == "COMPLETE" for _, _, state in rows)
    ((status, total, passed),) = _query(
        own_postgres.url, "SELECT status, total_cases, passed_cases FROM eval_run"
    )
    assert (status.lower(), total, passed) == ("completed", CASES, CASES)
    assert "database unavailable" in log.read_text()  # it said what it was waiting for
    assert sum(Counter(calls.read_text().split()).values()) == CASES  # no agent call repeated


def test_a_database_gone_too_long_fails_clearly_and_the_run_resumes(
    own_postgres: OwnPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from proctor.cli import EXIT_ERROR, EXIT_PASSED, main

    calls = tmp_path / "calls.log"
    process, log = _start_run(
        tmp_path, own_postgres.url, CALL_LOG=str(calls), AGENT_DELAY="0.3", PROCTOR_DB_RETRY_S="2"
    )
    try:
        _wait_for(lambda: _finished(own_postgres.url) >= 4, 120, process, log)
        own_postgres.stop("fast")
        code = process.wait(120)
    finally:
        stop(process)
    output = log.read_text()
    assert code == EXIT_ERROR, output[-3000:]
    assert "could not complete: run " in output and "did not finish" in output
    assert "could not write results to postgresql+psycopg://postgres@127.0.0.1" in output
    assert "`proctor resume " in output
    assert "Traceback" not in output.split("error: the run")[-1]

    own_postgres.start()
    survived = _case_rows(own_postgres.url)
    finished = {case for case, _, state in survived if state in FINAL}
    assert len(finished) >= 4  # committed before the database went away: still there
    ((run_id, status),) = _query(own_postgres.url, "SELECT id, status FROM eval_run")
    assert status.lower() in ("running", "failed")  # the end could not be recorded either

    monkeypatch.setenv("CALL_LOG", str(calls))
    capsys.readouterr()
    assert main(["resume", str(run_id), "--db", own_postgres.url, "--no-progress"]) == EXIT_PASSED
    rows = _case_rows(own_postgres.url)
    assert len(rows) == CASES and len({(case, attempt) for case, attempt, _ in rows}) == CASES
    counted = Counter(calls.read_text().split())
    assert all(counted[case] == 1 for case in finished)  # finished cases were not run again
    ((status, total, passed),) = _query(
        own_postgres.url, "SELECT status, total_cases, passed_cases FROM eval_run"
    )
    assert (status.lower(), total, passed) == ("completed", CASES, CASES)
