"""Whatever an agent does, finished answers are stored, the run ends with a true exit code,
and the case that did it is named (issue 26, item 2).

Agents run in Proctor's process, in threads of their own: sync agents on daemon threads,
async ones on an event loop of their own (`proctor.agents.agent_loop`). Each test runs a
real `proctor run --no-prefect` in its own process and reads back the database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proctor.cli import EXIT_FAILED, EXIT_PASSED
from tests.resilience.test_stored_values import rows


def _run(
    folder: Path, agent_code: str, cases: list[str], *extra: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """A HoloDeck suite of `cases` (each expecting `answer q`) run with `agent_code` from
    inside `folder`, with relative paths for the database and the reports."""
    (folder / "agents.py").write_text(agent_code)
    lines = "\n".join(f"  - {{name: {case}, input: 'q', ground_truth: 'answer q'}}" for case in cases)
    (folder / "suite.yaml").write_text(
        f"name: hostile\ntest_cases:\n{lines}\n"
        "evaluations:\n  metrics:\n    - {type: standard, metric: exact_match, threshold: 0.5}\n"
    )
    command = str(Path(sys.executable).with_name("proctor"))
    environment = {**os.environ, **env}
    environment.pop("PREFECT_API_URL", None)
    return subprocess.run(
        [
            command,
            "run",
            "suite.yaml",
            "--agent",
            "agents.py:agent",
            "--db",
            "sqlite:///results.db",
            "--output",
            "reports",
            "--no-progress",
            "--no-prefect",
            *extra,
        ],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,
    )


def _stored(folder: Path) -> dict[str, tuple[str, list[str]]]:
    url = f"sqlite:///{folder / 'results.db'}"
    return {case: (state, json.loads(errors)) for case, _, state, errors, _ in rows(url)}


HOSTILE = """
import asyncio, os

class Custom(BaseException):
    pass

def behave(request):
    case = request.case_id
    if case == "interrupt":
        raise KeyboardInterrupt
    if case == "genexit":
        raise GeneratorExit
    if case == "custom":
        raise Custom("an agent's own BaseException")
    if case == "exiter":
        os._exit(0)
    if case == "forker":
        if os.fork() == 0:
            return "the child's answer"  # back into Proctor's code, in the child
        with open(os.environ["FORK_LOG"], "a") as handle:
            handle.write(f"{os.getpid()}\\n")
    return "answer " + request.input
"""
SYNC = (
    HOSTILE
    + """
def agent(request):
    return behave(request)
"""
)
ASYNC = (
    HOSTILE
    + """
async def agent(request):
    if request.case_id == "stopper":
        asyncio.get_running_loop().stop()
    await asyncio.sleep(0)
    return behave(request)
"""
)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_agent_raising_exiting_stopping_or_forking_fails_only_its_own_case(
    tmp_path: Path, kind: str
) -> None:
    cases = ["good", "interrupt", "genexit", "custom", "exiter", "forker", "later"]
    if kind == "async":
        cases.append("stopper")
    forks = tmp_path / "forks.log"
    done = _run(tmp_path, SYNC if kind == "sync" else ASYNC, cases, "--concurrency", "2", FORK_LOG=str(forks))
    output = done.stdout + done.stderr
    # Before: exit 0 with nothing stored (os._exit), or 0 of N rows and a resume that repeats it.
    assert done.returncode == EXIT_FAILED, output
    stored = _stored(tmp_path)
    assert sorted(stored) == sorted(cases), output
    expected = {
        "interrupt": "agent raised KeyboardInterrupt",
        "genexit": "agent raised GeneratorExit",
        "custom": "agent raised Custom: an agent's own BaseException",
        "exiter": "os._exit(0) called by the agent",
    }
    for case, (state, errors) in stored.items():
        if case in expected:
            assert state == "AGENT_FAILED" and expected[case] in errors[0], (case, errors)
        else:
            assert state == "COMPLETE", (case, state, errors)
    if kind == "async":
        assert "case 'stopper' called loop.stop()" in output
    (child,) = [int(pid) for pid in forks.read_text().split()]
    deadline = time.monotonic() + 120
    while Path(f"/proc/{child}").exists() and "Z" not in _state(child):
        assert time.monotonic() < deadline, f"the agent's forked child {child} is still running Proctor"
        time.sleep(0.2)
    assert "Traceback" not in output


def _state(pid: int) -> str:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "gone"
    return next((line.split()[1] for line in status.splitlines() if line.startswith("State:")), "?")


PROCESS_STATE = """
import os, sys, threading, time

def agent(request):
    if request.case_id == "chdir":
        os.chdir("/")
    if request.case_id == "closer":
        sys.stdout.close()
    if request.case_id == "thread":
        threading.Thread(target=time.sleep, args=(3600,), name="left-behind", daemon=False).start()
    return "answer " + request.input
"""


def test_an_agent_moving_the_working_directory_closing_stdout_or_leaving_a_thread_leaves_a_pass_a_pass(
    tmp_path: Path,
) -> None:
    cases = ["chdir", "closer", "thread", "good"]
    done = _run(tmp_path, PROCESS_STATE, cases, "--concurrency", "1")
    output = done.stdout + done.stderr
    # Before: the run never exited (the thread), wrote no reports (chdir), or exited 1 (stdout).
    assert done.returncode == EXIT_PASSED, output
    assert "4/4 passed" in done.stdout, output  # the summary still reaches standard output
    assert (tmp_path / "reports" / "report.md").is_file() and (tmp_path / "results.db").is_file()
    assert {state for state, _ in _stored(tmp_path).values()} == {"COMPLETE"}
    assert "changed the working directory" in output and "closed standard out" in output
    assert "1 thread(s) started by user code are still running ('left-behind' running time.sleep)" in output


DESCRIPTORS = """
import os

KEPT = []

def agent(request):
    if request.case_id == "closefd":
        os.close(1)  # the descriptor itself, not sys.stdout
    if request.case_id == "opener":  # the next file opened would take descriptor 1
        KEPT.append(open(os.environ["AGENT_FILE"], "w"))
    if request.case_id == "redirect":
        os.dup2(os.open(os.environ["AGENT_FILE"] + ".2", os.O_WRONLY | os.O_CREAT), 2)
    return "answer " + request.input
"""


def test_an_agent_closing_or_redirecting_the_output_descriptors_leaves_the_summary_on_the_terminal(
    tmp_path: Path,
) -> None:
    agent_file = tmp_path / "agent-file.txt"
    cases = ["closefd", "opener", "redirect", "good"]
    done = _run(tmp_path, DESCRIPTORS, cases, "--concurrency", "1", AGENT_FILE=str(agent_file))
    output = done.stdout + done.stderr
    # Before: the summary went into the agent's own file (it had taken descriptor 1), exit 0 and
    # nothing on the terminal; in a Prefect flow run it went into the API's connection instead.
    assert done.returncode == EXIT_PASSED, output
    assert "4/4 passed" in done.stdout, output
    assert "passed" not in agent_file.read_text()
    assert "os.close(1) on standard output; Proctor kept it open" in output
    assert "pointed standard err elsewhere; Proctor put it back" in done.stderr, output
    assert {state for state, _ in _stored(tmp_path).values()} == {"COMPLETE"}


def test_a_command_that_fails_unexpectedly_does_not_wait_for_a_thread_an_agent_left(tmp_path: Path) -> None:
    """The command exits (status 1, its traceback shown) instead of waiting for ever."""
    script = (
        "import importlib, threading, time, sys\n"
        "cli = importlib.import_module('proctor.cli.main')\n"
        "threading.Thread(target=time.sleep, args=(3600,), name='left-behind').start()\n"
        "def broken(argv=None):\n"
        "    raise RuntimeError('something Proctor did not expect')\n"
        "cli.main = broken\n"
        "sys.exit(cli.console_main())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    # Before: the process never exited (the test's timeout ended it).
    assert done.returncode == 1, done.stderr
    assert "RuntimeError: something Proctor did not expect" in done.stderr
    assert "'left-behind' running time.sleep" in done.stderr


BLOCKING = """
import asyncio, time

async def agent(request):
    if request.case_id == "blocker":
        time.sleep(30)  # blocks the event loop, far past --timeout 1
    return "answer " + request.input
"""


def test_an_async_agent_blocking_its_event_loop_times_out_and_is_named(tmp_path: Path) -> None:
    done = _run(tmp_path, BLOCKING, ["blocker"], "--timeout", "1")
    output = done.stdout + done.stderr
    assert done.returncode == EXIT_FAILED, output  # before: it passed, 5 s under a 1 s timeout
    ((state, errors),) = _stored(tmp_path).values()
    assert state == "AGENT_FAILED"
    assert "did not answer within 1 s: it blocked the agents' event loop" in errors[0], errors


HELD_UP = """
import asyncio, os, time

async def agent(request):
    with open(os.environ["CALL_LOG"], "a") as handle:
        handle.write(request.case_id + "\\n")
    if request.case_id == "blocker":
        time.sleep(8)  # blocks the event loop the other case's call waits on
    else:
        await asyncio.sleep(0.5)
    return "answer " + request.input
"""


def test_a_case_held_up_by_another_cases_blocking_code_is_run_again_by_resume(tmp_path: Path) -> None:
    calls = tmp_path / "calls.log"
    done = _run(
        tmp_path, HELD_UP, ["blocker", "held"], "--timeout", "3", "--concurrency", "2", CALL_LOG=str(calls)
    )
    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    stored = _stored(tmp_path)
    assert "blocked by the agent code of case 'blocker'" in stored["held"][1][0], stored
    ((run_id,),) = rows(f"sqlite:///{tmp_path / 'results.db'}", "SELECT id FROM eval_run")
    before = calls.read_text().split()  # 'held' too, unless the blocked loop never started it
    command = str(Path(sys.executable).with_name("proctor"))
    environment = {**os.environ, "CALL_LOG": str(calls)}
    environment.pop("PREFECT_API_URL", None)
    resumed = subprocess.run(
        [command, "resume", str(run_id)[:8], "--db", "sqlite:///results.db", "--no-progress", "--no-prefect"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert resumed.returncode == EXIT_FAILED, resumed.stdout + resumed.stderr  # the blocker's own failure
    stored = _stored(tmp_path)
    # Before: the held-up case kept another case's failure for good; resume ran nothing.
    assert stored["held"][0] == "COMPLETE", stored
    assert stored["blocker"][0] == "AGENT_FAILED"
    assert calls.read_text().split()[len(before) :] == ["held"]  # the held-up case alone, once


CANCELLING = """
import asyncio

STARTED = asyncio.Event()

async def agent(request):
    if request.case_id == "victim":
        STARTED.set()
        await asyncio.sleep(60)
    else:
        await asyncio.wait_for(STARTED.wait(), 120)
        for task in asyncio.all_tasks():  # every task but its own: Proctor's too, if it could
            if task is not asyncio.current_task():
                task.cancel()
    return "answer " + request.input
"""


def test_an_agent_cancelling_other_tasks_fails_only_the_calls_it_cancelled_and_is_named(
    tmp_path: Path,
) -> None:
    done = _run(tmp_path, CANCELLING, ["victim", "canceller"], "--concurrency", "2")
    output = done.stdout + done.stderr
    assert done.returncode == EXIT_FAILED, output  # before: the run itself was cancelled
    stored = _stored(tmp_path)
    assert stored["canceller"][0] == "COMPLETE", stored
    assert stored["victim"][0] == "AGENT_FAILED"
    assert "cancelled by the agent code of case 'canceller'" in stored["victim"][1][0], stored


MOVING = """
import os

def agent(request):
    if request.case_id == "first":
        os.chdir("/")  # before the second case's attached file is read
    return "answer q"
"""


def test_files_attached_relative_to_the_suite_are_read_after_an_agent_moved_the_working_directory(
    tmp_path: Path,
) -> None:
    (tmp_path / "agents.py").write_text(MOVING)
    (tmp_path / "notes.txt").write_text("opening hours")
    (tmp_path / "suite.yaml").write_text(
        "name: moving\ntest_cases:\n  - {name: first, input: 'q', ground_truth: 'answer q'}\n"
        "  - {name: second, input: 'q', ground_truth: 'answer q', files: [{path: notes.txt, type: text}]}\n"
        "evaluations:\n  metrics:\n    - {type: standard, metric: exact_match, threshold: 0.5}\n"
    )
    command = str(Path(sys.executable).with_name("proctor"))
    environment = {key: value for key, value in os.environ.items() if key != "PREFECT_API_URL"}
    done = subprocess.run(
        [
            command,
            "run",
            "suite.yaml",
            "--agent",
            "agents.py:agent",
            "--db",
            "sqlite:///results.db",
            "--no-progress",
            "--no-prefect",
            "--concurrency",
            "1",
        ],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == EXIT_PASSED, done.stdout + done.stderr  # before: "notes.txt: file not found"
