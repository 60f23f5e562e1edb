"""The warm process: commands forked from a process that has Proctor and Prefect imported run
as they would on their own (output, exit code, folder, environment, signals), and a command
it cannot run that way runs on its own. Each test starts its own warm process on a socket of
its own and stops it by its process id."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLE_SUITE

PROCTOR = str(Path(sys.executable).with_name("proctor"))
SLOW_AGENT = (
    "import os, pathlib, time\n\n"
    "def agent(request):\n"
    "    pathlib.Path(os.environ['MARK']).write_text(str(os.getpid()))\n"
    "    time.sleep(60)\n"
    "    return 'ok'\n"
)


class Warm:
    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder = folder
        self.env = env
        self.pid = 0

    def proctor(self, *args: str, cwd: Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [PROCTOR, *args],
            cwd=cwd,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def served(self) -> int:
        status = self.proctor("warm", "status", cwd=self.folder)
        assert status.returncode == 0, status.stdout + status.stderr
        return int(status.stdout.split(": ", 1)[1].split(" command")[0])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended


def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not true within {timeout:.0f} s")
        time.sleep(0.1)


@pytest.fixture
def warm() -> Iterator[Warm]:
    # A short folder of its own: a Unix socket's path is limited to 107 bytes.
    folder = Path(tempfile.mkdtemp(prefix="pw", dir="/tmp"))
    # A module the warm process loads from a folder of the test's (Python imports
    # `sitecustomize` at start-up), so a test can change "Proctor's code" without touching it.
    (folder / "site").mkdir()
    (folder / "site" / "sitecustomize.py").write_text("LOADED = True\n")
    env = {
        **os.environ,
        "PROCTOR_WARM": "1",
        "PROCTOR_WARM_SOCKET": str(folder / "warm.sock"),
        "PYTHONPATH": str(folder / "site"),
    }
    # As a shell would start them: not with the settings in-process tests left in os.environ.
    for name in ("PREFECT_API_URL", "PREFECT_LOGGING_LEVEL"):
        env.pop(name, None)
    handle = Warm(folder, env)
    started = handle.proctor("warm", "start", cwd=folder)
    assert started.returncode == 0, started.stdout + started.stderr
    handle.pid = int(started.stdout.split("warm process ")[1].split()[0])
    try:
        yield handle
    finally:
        if alive(handle.pid):
            os.kill(handle.pid, signal.SIGTERM)
            try:
                wait_until(lambda: not alive(handle.pid), 30, "the warm process stopped")
            except AssertionError:
                os.kill(handle.pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


def one_case_suite(tmp_path: Path, name: str, agent: str) -> Path:
    """An agent file and a one-case suite scored by response_match (no judge): the agent is
    expected to answer 'ok'."""
    (tmp_path / "agent.py").write_text(agent)
    suite = tmp_path / f"{name}.evalset.json"
    case = {
        "eval_id": "a",
        "conversation": [
            {
                "invocation_id": "t",
                "user_content": {"role": "user", "content": "hi"},
                "expected_final_response": {"role": "assistant", "content": "ok"},
            }
        ],
    }
    criteria = {"eval_config": {"criteria": {"response_match": 0.5}}}
    suite.write_text(json.dumps({"eval_set_id": name, "metadata": criteria, "eval_cases": [case]}))
    return suite


def summary(output: str) -> str:
    return next(line for line in output.splitlines() if " passed (" in line).split(" · run ")[0]


def test_a_command_it_runs_is_the_command_run_on_its_own(warm: Warm, tmp_path: Path) -> None:
    (tmp_path / "warm").mkdir()
    (tmp_path / "cold").mkdir()
    shutil.copytree(EXAMPLE_SUITE.parent, tmp_path / "weather")
    before = warm.served()
    hot = warm.proctor("run", "../weather/weather.evalset.json", "--no-progress", cwd=tmp_path / "warm")
    assert warm.served() == before + 1  # the warm process ran it
    cold = warm.proctor(
        "run", "../weather/weather.evalset.json", "--no-progress", cwd=tmp_path / "cold", PROCTOR_WARM="0"
    )
    assert warm.served() == before + 1
    assert (hot.returncode, cold.returncode) == (1, 1), hot.stdout + hot.stderr  # one case fails on purpose
    assert summary(hot.stdout) == summary(cold.stdout) == "4/5 passed (80.0%), 0 errored"
    # Stored and reported in the command's own folder, not the warm process's.
    assert (tmp_path / "warm" / ".proctor" / "proctor.db").is_file()
    assert list((tmp_path / "warm" / ".proctor" / "reports").rglob("report.md"))

    # The command's environment decides (here, where results go), and its errors reach its stderr.
    database = tmp_path / "elsewhere.db"
    hot = warm.proctor(
        "run",
        "../weather/weather.evalset.json",
        "--no-progress",
        cwd=tmp_path / "warm",
        PROCTOR_DATABASE_URL=f"sqlite:///{database}",
    )
    assert hot.returncode == 1 and database.is_file(), hot.stdout + hot.stderr
    bad = tmp_path / "bad.evalset.json"
    bad.write_text('{"eval_set_id": "x", "eval_cases": [{"eval_id": 3}]}')
    refused = warm.proctor("validate", str(bad), cwd=tmp_path)
    assert refused.returncode == 2 and "bad.evalset.json" in refused.stderr + refused.stdout
    assert warm.served() == before + 3


def test_a_run_against_a_prefect_server_is_a_flow_run(warm: Warm, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from proctor.cli.temporary_server import temporary_prefect_server

    def flow_runs(api: str) -> list[Any]:
        with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            return client.read_flow_runs()

    with temporary_prefect_server() as api:
        earlier = {run.id for run in flow_runs(api)}  # the server's database may hold other tests' runs
        hot = warm.proctor("run", str(EXAMPLE_SUITE), "--no-progress", cwd=tmp_path, PREFECT_API_URL=api)
        assert hot.returncode == 1 and "4/5 passed" in hot.stdout, hot.stdout + hot.stderr
        # Prefect's logging follows the command's settings, not those the warm process started with.
        assert "Task run 'execute-agent" not in hot.stdout + hot.stderr
        verbose = warm.proctor(
            "run", str(EXAMPLE_SUITE), "--no-progress", "--verbose", cwd=tmp_path, PREFECT_API_URL=api
        )
        assert "Task run 'execute-agent" in verbose.stdout + verbose.stderr, verbose.stdout + verbose.stderr
        runs = [run for run in flow_runs(api) if run.id not in earlier]
        assert [run.state.name for run in runs] == ["Failed cases"] * 2


def test_ctrl_c_and_a_killed_command_reach_the_run(warm: Warm, tmp_path: Path) -> None:
    suite = one_case_suite(tmp_path, "slow", SLOW_AGENT)
    for how in ("ctrl-c", "kill"):
        mark = tmp_path / f"{how}.pid"
        command = subprocess.Popen(
            [PROCTOR, "run", str(suite), "--agent", f"{tmp_path / 'agent.py'}:agent", "--no-progress"],
            cwd=tmp_path,
            env={**warm.env, "MARK": str(mark)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            wait_until(
                lambda: (mark.exists() and mark.read_text()) or command.poll() is not None,  # noqa: B023
                120,
                "the agent called",
            )
            assert command.poll() is None, command.communicate()[0]
            run_pid = int(mark.read_text())
            assert run_pid != command.pid  # the run is the warm process's child, not the command
            if how == "ctrl-c":
                command.send_signal(signal.SIGINT)  # what the terminal sends on Ctrl-C
                output, _ = command.communicate(timeout=120)
                assert command.returncode == 130, output
                assert "resume" in output, output  # as the command says on its own
            else:
                command.kill()  # SIGKILL: nothing relays; the warm process stops the run itself
                command.wait(timeout=30)
            wait_until(lambda: not alive(run_pid), 120, "the run's process ended")  # noqa: B023
        finally:
            if command.poll() is None:
                command.kill()
    assert alive(warm.pid)


def test_changed_code_or_other_python_settings_run_on_their_own(warm: Warm, tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE_SUITE.parent, tmp_path, dirs_exist_ok=True)
    before = warm.served()
    other = warm.proctor("validate", "weather.evalset.json", cwd=tmp_path, PYTHONWARNINGS="ignore")
    assert other.returncode == 0 and other.stderr == "", other.stdout + other.stderr
    assert warm.served() == before  # refused quietly, run on its own

    site = warm.folder / "site" / "sitecustomize.py"
    site.write_text("LOADED = 'changed'\n")
    changed = warm.proctor("validate", "weather.evalset.json", cwd=tmp_path)
    assert changed.returncode == 0, changed.stdout + changed.stderr
    assert "sitecustomize.py changed since it started" in changed.stderr
    wait_until(lambda: not alive(warm.pid), 60, "the stale warm process stopped")
    assert not Path(warm.env["PROCTOR_WARM_SOCKET"]).exists()
    again = warm.proctor("validate", "weather.evalset.json", cwd=tmp_path)
    assert again.returncode == 0 and again.stderr == "", again.stderr


def test_stop_and_a_vanished_warm_process(warm: Warm, tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE_SUITE.parent, tmp_path, dirs_exist_ok=True)
    os.kill(warm.pid, signal.SIGKILL)  # its socket file stays behind
    wait_until(lambda: not alive(warm.pid), 30, "the warm process was killed")
    assert Path(warm.env["PROCTOR_WARM_SOCKET"]).exists()
    ran = warm.proctor("validate", "weather.evalset.json", cwd=tmp_path)
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr  # runs on its own, nothing said
    status = warm.proctor("warm", "status", cwd=tmp_path)
    assert status.returncode == 1 and "no warm process is running" in status.stdout

    started = warm.proctor("warm", "start", cwd=tmp_path)
    warm.pid = int(started.stdout.split("warm process ")[1].split()[0])
    assert warm.proctor("warm", "start", cwd=tmp_path).stdout.startswith("already running")
    second = subprocess.run(  # started by hand beside it: it leaves the first one its socket
        [sys.executable, "-m", "proctor.warm.server"],
        env=warm.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert second.returncode == 1 and "another warm process is already listening" in second.stderr
    assert warm.proctor("warm", "status", cwd=tmp_path).stdout.startswith(f"warm process {warm.pid} ")
    stopped = warm.proctor("warm", "stop", cwd=tmp_path)
    assert stopped.returncode == 0 and f"stopping warm process {warm.pid}" in stopped.stdout
    wait_until(lambda: not alive(warm.pid), 60, "the warm process stopped")
    assert not Path(warm.env["PROCTOR_WARM_SOCKET"]).exists()


def test_a_command_in_a_deleted_folder_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "gone"
    folder.mkdir()
    command = f"cd {folder} && rmdir {folder} && {PROCTOR} history"
    for warm in ("0", "1"):
        done = subprocess.run(
            ["bash", "-c", command], env={**os.environ, "PROCTOR_WARM": warm}, capture_output=True, text=True
        )
        assert (done.returncode, done.stderr) == (
            2,
            "error: the current folder no longer exists: cd to one that does\n",
        )
        folder.mkdir()


LIMITS_AGENT = (
    "import os, resource, signal\n\n"
    "def agent(request):\n"
    "    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
    "    hup = 'ignored' if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN else 'default'\n"
    "    open(os.environ['MARK'], 'w').write(f'{soft} {hard} {hup}')\n"
    "    return 'ok'\n"
)


def test_the_run_has_the_commands_limits_and_ignored_signals(warm: Warm, tmp_path: Path) -> None:
    """`ulimit -n 300` and `nohup` (SIGHUP ignored) apply to the run as they would on its own."""
    suite = one_case_suite(tmp_path, "limits", LIMITS_AGENT)
    seen = {}
    before = warm.served()
    for mode in ("1", "0"):
        mark = tmp_path / f"mark{mode}"
        command = (
            f"ulimit -n 300 && trap '' HUP && exec {PROCTOR} run {suite} "
            f"--agent {tmp_path / 'agent.py'}:agent --no-progress"
        )
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env={**warm.env, "PROCTOR_WARM": mode, "MARK": str(mark)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        seen[mode] = mark.read_text()
    assert seen["1"] == seen["0"] == "300 300 ignored"
    assert warm.served() == before + 1


def test_a_socket_in_a_folder_others_can_enter_is_never_used(warm: Warm, tmp_path: Path) -> None:
    """A command sends its environment (keys included) and its terminal: never to a socket in a
    folder another user could have put it in, or replaced it in."""
    shutil.copytree(EXAMPLE_SUITE.parent, tmp_path, dirs_exist_ok=True)
    before = warm.served()
    warm.folder.chmod(0o755)
    ran = warm.proctor("validate", "weather.evalset.json", cwd=tmp_path)
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr  # on its own, as if none were up
    refused = warm.proctor("warm", "start", cwd=tmp_path)
    assert refused.returncode == 3 and "is not yours alone" in refused.stderr, refused.stdout
    warm.folder.chmod(0o700)
    assert warm.served() == before  # it was up all along, and never used
