"""User code and the user's own keyboard cannot end Proctor in a way that lies or loses work.

An agent or grader calling `sys.exit()` at import is a bad suite (exit 2, one line), not a
pass; a grader calling it while scoring fails its metric only. Ctrl-C stops a run with exit
130, no traceback, and says that `proctor resume` finishes it (it does).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from proctor.cli import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_PASSED
from proctor.storage import get_engine
from tests.factories import echo_suite
from tests.fakes.processes import start, stop

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]


def _proctor(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    from prefect.settings import PREFECT_API_URL

    proctor = str(Path(sys.executable).with_name("proctor"))
    environment = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value()), **env}
    return subprocess.run([proctor, *args], env=environment, capture_output=True, text=True, timeout=600)


def _holodeck(folder: Path, grader: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.py").write_text("def agent(request):\n    return 'We open at 9am.'\n")
    (folder / "graders.py").write_text(grader)
    suite = folder / "agent.yaml"
    suite.write_text(
        "name: graded\ntest_cases:\n  - {name: opening, input: 'When do you open?'}\n"
        "evaluations:\n  metrics:\n    - {type: code, grader: 'graders.py:grade'}\n"
    )
    return suite


def test_an_agent_exiting_at_import_is_a_bad_suite_not_a_pass(tmp_path: Path, sqlite_url: str) -> None:
    suite = _holodeck(tmp_path, "def grade(context):\n    return True\n")
    (tmp_path / "agent.py").write_text("import sys\nsys.exit(0)\n\ndef agent(request):\n    return 'x'\n")
    agent = f"{tmp_path / 'agent.py'}:agent"
    done = _proctor("run", str(suite), "--agent", agent, "--db", sqlite_url, "--no-progress")
    output = done.stdout + done.stderr
    assert done.returncode == EXIT_BAD_INPUT, output  # before: exit 0 and no output, a "pass"
    assert "SystemExit(0)" in output and "Traceback" not in output


def test_a_grader_exiting_fails_validate_at_import_and_its_metric_when_called(
    tmp_path: Path, sqlite_url: str
) -> None:
    at_import = _holodeck(
        tmp_path / "import", "import sys\nsys.exit(7)\n\ndef grade(context):\n    return True\n"
    )
    done = _proctor("validate", str(at_import))
    assert done.returncode == EXIT_BAD_INPUT, done.stdout + done.stderr
    assert "SystemExit(7)" in done.stdout + done.stderr

    when_called = _holodeck(tmp_path / "call", "import sys\n\ndef grade(context):\n    sys.exit(7)\n")
    agent = f"{tmp_path / 'call' / 'agent.py'}:agent"
    done = _proctor("run", str(when_called), "--agent", agent, "--db", sqlite_url, "--no-progress")
    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    with get_engine(sqlite_url).connect() as connection:
        ((state, error),) = connection.execute(
            text("SELECT c.state, m.error FROM case_result c JOIN metric_result m ON m.case_result_id = c.id")
        ).all()
    assert state == "EVALUATION_FAILED" and "the grader called sys.exit(7)" in error


AGENT = """
import os, time

def agent(request):
    with open(os.environ["CALL_LOG"], "a") as handle:
        handle.write(request.case_id + "\\n")
    time.sleep(float(os.environ.get("AGENT_DELAY", "0")))
    return "answer " + request.input
"""


@pytest.mark.parametrize(
    ("stop_signal", "status", "orchestration"),
    [
        (signal.SIGINT, 130, "--prefect"),
        (signal.SIGTERM, 143, "--prefect"),
        (signal.SIGTERM, 143, "--no-prefect"),
    ],
)
def test_ctrl_c_or_sigterm_exits_without_a_traceback_and_names_the_resume(
    tmp_path: Path, sqlite_url: str, stop_signal: int, status: int, orchestration: str
) -> None:
    """Ctrl-C, or SIGTERM from `kill`, a scheduler or a container stopping, in a flow run or
    a run without Prefect: the same message, and `resume` finishes the run."""
    from prefect.settings import PREFECT_API_URL

    calls = tmp_path / "calls.log"
    suite = echo_suite(tmp_path, name="interrupted", cases=20, agent=AGENT, fails=lambda i: False)
    proctor = str(Path(sys.executable).with_name("proctor"))
    env = {
        **os.environ,
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "CALL_LOG": str(calls),
        "AGENT_DELAY": "1",
    }
    log = tmp_path / "run.log"
    command = [
        proctor,
        "run",
        str(suite),
        "--db",
        sqlite_url,
        "--no-progress",
        "--concurrency",
        "2",
        orchestration,
    ]
    process = start([*command, "--output", str(tmp_path / "r")], env=env, log=log)
    try:
        deadline = time.monotonic() + 180
        while not (calls.exists() and len(calls.read_text().split()) >= 4):
            assert time.monotonic() < deadline and process.poll() is None, log.read_text()[-3000:]
            time.sleep(0.1)
        os.kill(process.pid, stop_signal)
        code = process.wait(120)
    finally:
        stop(process)
    output = log.read_text()
    assert code == status, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    with get_engine(sqlite_url).connect() as connection:
        ((run_id,),) = connection.execute(text("SELECT id FROM eval_run")).all()
    assert f"`proctor resume {str(run_id)[:8]}` finishes it" in output, output[-3000:]
    done = _proctor("resume", str(run_id)[:8], "--db", sqlite_url, "--no-progress", CALL_LOG=str(calls))
    assert done.returncode == EXIT_PASSED, done.stdout + done.stderr


SLOW_IMPORT = """
import os, time
open(os.environ["IMPORTING"], "w").close()
time.sleep(120)  # a heavy agent module: Ctrl-C comes while it loads

def agent(request):
    return "hi"
"""


def test_ctrl_c_during_start_up_exits_130_without_a_traceback(tmp_path: Path, sqlite_url: str) -> None:
    suite = echo_suite(tmp_path, name="starting", cases=2, agent=SLOW_IMPORT, fails=lambda i: False)
    marker = tmp_path / "importing"
    proctor = str(Path(sys.executable).with_name("proctor"))
    env = {**os.environ, "IMPORTING": str(marker)}
    env.pop("PREFECT_API_URL", None)
    log = tmp_path / "run.log"
    process = start([proctor, "run", str(suite), "--db", sqlite_url, "--no-prefect"], env=env, log=log)
    try:
        deadline = time.monotonic() + 180
        while not marker.exists():
            assert time.monotonic() < deadline and process.poll() is None, log.read_text()[-3000:]
            time.sleep(0.1)
        os.kill(process.pid, signal.SIGINT)
        code = process.wait(120)
    finally:
        stop(process)
    output = log.read_text()
    assert code == 130, output  # before: a traceback from the import
    assert "Traceback" not in output and "nothing was run" in output, output
