"""`proctor run --prefect` with no Prefect server configured starts one of its own, which
stops with the command however the command ends, SIGKILL included (Linux)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proctor.cli.temporary_server import ServerDidNotStart, temporary_prefect_server

PROCTOR = str(Path(sys.executable).with_name("proctor"))
SLOW_AGENT = "import time\n\ndef agent(request):\n    time.sleep(2)\n    return 'ok'\n"


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid`, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


def slow_suite(folder: Path, cases: int) -> Path:
    (folder / "slow.py").write_text(SLOW_AGENT)
    turn = {
        "invocation_id": "t",
        "user_content": {"role": "user", "content": "go"},
        "expected_final_response": {"role": "assistant", "content": "ok"},
    }
    suite = {
        "eval_set_id": "slow",
        "metadata": {"agent": "slow.py:agent", "eval_config": {"criteria": {"contains": {"values": ["ok"]}}}},
        "eval_cases": [{"eval_id": f"c{i}", "conversation": [turn]} for i in range(cases)],
    }
    path = folder / "slow.evalset.json"
    path.write_text(json.dumps(suite))
    return path


def no_configured_server(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "PROCTOR_"))}
    env.update(PREFECT_HOME=str(folder / "prefect-home"), HOME=str(folder))
    return env


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the server's parent-death signal is Linux's"
)
def test_a_killed_run_takes_its_temporary_server_with_it(tmp_path: Path) -> None:
    suite = slow_suite(tmp_path, 60)
    command = [PROCTOR, "run", str(suite), "--prefect", "--no-progress", "--concurrency", "1"]
    run = subprocess.Popen(command, cwd=tmp_path, env=no_configured_server(tmp_path), stderr=subprocess.PIPE)
    servers: list[int] = []
    try:
        deadline = time.monotonic() + 240  # a busy machine starts a server slowly
        while not servers and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.5)
            servers = children(run.pid)
        assert servers, "no temporary server was started"
        time.sleep(3)  # the run is under way
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
        deadline = time.monotonic() + 60
        while any(alive(pid) for pid in servers) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not any(alive(pid) for pid in servers), "the temporary server outlived the killed run"
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for pid in servers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if run.stderr:
            run.stderr.close()


def test_a_run_against_its_temporary_server_is_a_flow_run_and_leaves_nothing_behind(tmp_path: Path) -> None:
    suite = slow_suite(tmp_path, 2)
    done = subprocess.run(
        [PROCTOR, "run", str(suite), "--prefect", "--no-progress", "--db", f"sqlite:///{tmp_path / 'r.db'}"],
        cwd=tmp_path,
        env=no_configured_server(tmp_path) | {"PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "240"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "starting a temporary Prefect server for this command" in done.stderr
    assert "Error logging to API" not in done.stderr  # logs were sent before the server stopped
    assert "not a Prefect flow run" not in done.stderr
    import sqlite3

    with sqlite3.connect(tmp_path / "r.db") as connection:
        [(flow_run_id,)] = connection.execute("select flow_run_id from eval_run").fetchall()
    assert flow_run_id


def test_a_server_that_does_not_answer_in_time_names_the_setting() -> None:
    refused = pytest.raises(ServerDidNotStart, match="PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS")
    with refused, temporary_prefect_server(timeout_s=0.0):
        pass
