"""Every value an agent returns is stored, and a write that failed for the infrastructure's
reasons is never a case's verdict (issue 26, items 1, 4 and 6).

Runs are real `proctor run --no-prefect` commands in their own process; each test then
reads the database back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from proctor.cli import EXIT_BAD_INPUT, EXIT_ERROR, EXIT_FAILED, EXIT_PASSED
from proctor.storage import get_engine
from tests.factories import echo_suite


def proctor(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """The `proctor` command in its own process, without Prefect."""
    command = str(Path(sys.executable).with_name("proctor"))
    environment = {**os.environ, **env}
    environment.pop("PREFECT_API_URL", None)
    return subprocess.run(
        [command, *args, "--no-progress"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )


def rows(url: str, query: str = "SELECT case_id, attempt, state, errors, notes FROM case_result") -> list:
    with get_engine(url).connect() as connection:
        return [tuple(row) for row in connection.execute(text(query))]


def _json(value: object) -> list:
    return json.loads(value) if isinstance(value, str) else list(value or [])


UNSTORABLE = """
class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message for you")


def agent(request):
    number = int(request.input.split()[-1])
    if number == 0:  # tool arguments holding an object and a set
        request.record_tool_call("lookup", {"handle": object(), "tags": {"a", "b"}}, {"raw": object()})
    if number == 1:  # token counts no 64-bit column holds
        request.record_usage(prompt_tokens=2**70, completion_tokens=1)
    if number == 2:  # an error whose message cannot be shown
        raise Unprintable()
    if number == 3:  # a whole number past 64 bits in a tool's result
        request.record_tool_call("count", {"n": 10**30}, 10**40)
    return "answer " + request.input
"""


def test_values_no_database_can_store_are_stored_with_a_note_and_the_run_ends(
    tmp_path: Path, sqlite_url: str
) -> None:
    suite = echo_suite(tmp_path, name="unstorable", cases=6, agent=UNSTORABLE, fails=lambda i: False)
    done = proctor("run", str(suite), "--db", sqlite_url, "--output", str(tmp_path / "reports"))
    output = done.stdout + done.stderr
    # Before: "Unable to serialize unknown type: object", exit 3, and every resume the same.
    assert done.returncode == EXIT_FAILED, output  # case 2's agent failed; every other case passed
    stored = {
        case_id: (state, _json(errors), _json(notes)) for case_id, _, state, errors, notes in rows(sqlite_url)
    }
    assert sorted(stored) == [f"c{i:02d}" for i in range(6)], output
    assert stored["c02"][0] == "AGENT_FAILED"
    assert "Unprintable (its message cannot be shown" in stored["c02"][1][0]
    for case_id in ("c00", "c01", "c03", "c04", "c05"):
        assert stored[case_id][0] == "COMPLETE", (case_id, stored[case_id])
    # the note names where the value was (before: only its type)
    assert any(note.startswith("tool_calls[0]: a value of type object") for note in stored["c00"][2]), stored
    assert any("64 bits" in note for note in stored["c01"][2]), stored["c01"]
    assert any("64 bits" in note for note in stored["c03"][2]), stored["c03"]
    ((tool_calls,),) = rows(sqlite_url, "SELECT tool_calls FROM case_result WHERE case_id = 'c00'")
    (call,) = _json(tool_calls)
    assert sorted(call["args"]["tags"]) == ["a", "b"] and call["args"]["handle"].startswith("<object object")
    ((tool_calls,),) = rows(sqlite_url, "SELECT tool_calls FROM case_result WHERE case_id = 'c03'")
    assert _json(tool_calls)[0]["args"]["n"] == str(10**30)
    assert "Traceback" not in output


SESSIONS = """
def agent(request):
    with open(__file__ + ".threads", "a") as handle:
        handle.write(request.thread_id + "\\n")
    return "answer " + request.input
"""


def test_a_case_named_like_another_cases_repeat_keeps_its_own_row_and_session(
    tmp_path: Path, sqlite_url: str
) -> None:
    suite = echo_suite(tmp_path, name="hashes", cases=2, agent=SESSIONS, fails=lambda i: False)
    data = json.loads(suite.read_text())
    data["eval_cases"][0]["eval_id"], data["eval_cases"][1]["eval_id"] = "x", "x#1"
    suite.write_text(json.dumps(data))
    done = proctor("run", str(suite), "--db", sqlite_url, "--repeat", "2", "--output", str(tmp_path / "r"))
    assert done.returncode == EXIT_PASSED, done.stdout + done.stderr  # before: exit 3, a row lost
    stored = sorted((case_id, attempt, state) for case_id, attempt, state, _, _ in rows(sqlite_url))
    assert stored == [
        ("x", 0, "COMPLETE"),
        ("x", 1, "COMPLETE"),
        ("x#1", 0, "COMPLETE"),
        ("x#1", 1, "COMPLETE"),
    ]
    threads = (tmp_path / "agent.py.threads").read_text().split()
    assert len(threads) == 4 and len(set(threads)) == 4, threads  # no two share a conversation


# Every fourth case records a large tool result: when one no longer fits, a small row
# still does, which is how a passing case used to be stored as failed "disk full".
FILLER = """
def agent(request):
    big = int(request.input.split()[-1]) % 4 == 3
    request.record_tool_call("fetch_page", {"url": "https://example.com"}, "x" * (150_000 if big else 100))
    return "answer " + request.input
"""


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 1 MB filesystem of this test's own (tmpfs), grown later by `remount`; needs root."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {done.stderr.decode().strip()}")

    def grow() -> None:
        subprocess.run(["mount", "-o", "remount,size=64m", str(mount)], check=True)

    try:
        yield mount, grow
    finally:
        from proctor.storage.db import dispose_engines

        dispose_engines()
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_fails_the_run_not_the_cases_and_resume_redoes_them(tmp_path: Path, small_disk) -> None:
    mount, grow = small_disk
    url = f"sqlite:///{mount / 'results.db'}"
    suite = echo_suite(tmp_path, name="filler", cases=40, agent=FILLER, fails=lambda i: False)
    done = proctor("run", str(suite), "--db", url, "--output", str(tmp_path / "reports"), "--chunk-size", "5")
    output = done.stdout + done.stderr
    assert done.returncode == EXIT_ERROR, output  # the run could not finish: not a verdict on cases
    assert "full" in output, output
    stored = rows(url) if (mount / "results.db").exists() else []
    # Before: passing cases stored as EVALUATION_FAILED "could not be stored: disk full", for good.
    assert all("could not be stored" not in " ".join(_json(errors)) for *_, errors, _ in stored), stored
    assert all(state == "COMPLETE" for _, _, state, _, _ in stored), stored
    assert len(stored) < 40, "the disk was never full: the test proves nothing"
    run_id = rows(url, "SELECT id FROM eval_run")[0][0]

    grow()
    done = proctor("resume", str(run_id)[:8], "--db", url)
    output = done.stdout + done.stderr
    assert done.returncode == EXIT_PASSED, output
    stored = rows(url)
    assert len(stored) == 40 and all(state == "COMPLETE" for _, _, state, _, _ in stored), stored


# The agent of c06 kills its own process (as an OOM kill would), once the answers already
# given are stored or after 60 s: a chunk that holds them until all its cases answer never
# stores them, and the kill then finds nothing.
KILLED = """
import os, signal, sqlite3, time

def agent(request):
    with open(os.environ["CALL_LOG"], "a") as handle:
        handle.write(request.case_id + "\\n")
    if request.case_id == os.environ.get("KILL_AT") and not os.path.exists(os.environ["CALL_LOG"] + ".killed"):
        open(os.environ["CALL_LOG"] + ".killed", "w").close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with sqlite3.connect(os.environ["RESULTS"]) as db:
                if db.execute("SELECT count(*) FROM case_result").fetchone()[0] >= 6:
                    break
            time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGKILL)
    return "answer " + request.input
"""


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_a_worker_killed_mid_chunk_in_a_flow_run_keeps_every_answer_already_given(
    tmp_path: Path, sqlite_url: str
) -> None:
    from prefect.settings import PREFECT_API_URL

    calls = tmp_path / "calls.log"
    suite = echo_suite(tmp_path, name="killed", cases=10, agent=KILLED, fails=lambda i: False)
    env = {
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "CALL_LOG": str(calls),
        "KILL_AT": "c06",
        "RESULTS": sqlite_url.removeprefix("sqlite:///"),
    }
    args = ["--db", sqlite_url, "--chunk-size", "10", "--concurrency", "1", "--output", str(tmp_path / "r")]
    done = proctor("run", str(suite), *args, "--prefect", **env)
    assert done.returncode == -9, done.stdout + done.stderr
    stored = sorted((case_id, state) for case_id, _, state, _, _ in rows(sqlite_url))
    # Before: a chunk of a flow run wrote its quick-metric cases only when all had answered: 0 rows.
    assert stored == [(f"c{i:02d}", "COMPLETE") for i in range(6)], stored

    ((run_id,),) = rows(sqlite_url, "SELECT id FROM eval_run")
    done = proctor("resume", str(run_id)[:8], "--db", sqlite_url, "--prefect", **env)
    assert done.returncode == EXIT_PASSED, done.stdout + done.stderr
    called = calls.read_text().split()
    assert sorted(called) == sorted([f"c{i:02d}" for i in range(10)] + ["c06"]), called  # c06 twice only
    assert len(rows(sqlite_url)) == 10


VANISHING = """
import os, sqlite3, time

def emptied(results):
    # What is committed is moved from the write-ahead log into the file (retried while the
    # run's writer holds a read), then the file is emptied where it stands: the same inode.
    for _ in range(600):
        connection = sqlite3.connect(results, timeout=30)
        busy = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        connection.close()
        if not busy:
            break
        time.sleep(0.05)
    os.truncate(results, 0)

def agent(request):
    if request.case_id == "c03" and os.environ["HOW"] == "emptied":
        emptied(os.environ["RESULTS"])
    elif request.case_id == "c03":
        results = os.environ["RESULTS"]
        os.remove(results)
        for suffix in ("-wal", "-shm"):
            if os.path.exists(results + suffix):
                os.remove(results + suffix)
        if os.environ["HOW"] == "replaced":
            open(results, "w").close()  # an empty file where the results were
    return "answer " + request.input
"""


@pytest.mark.parametrize("how", ["deleted", "replaced", "emptied"])
def test_a_sqlite_file_deleted_or_replaced_mid_run_is_said_and_exits_3(
    tmp_path: Path, sqlite_url: str, how: str
) -> None:
    suite = echo_suite(tmp_path, name="vanishing", cases=6, agent=VANISHING, fails=lambda i: False)
    results = sqlite_url.removeprefix("sqlite:///")
    done = proctor(
        "run",
        str(suite),
        "--db",
        sqlite_url,
        "--output",
        str(tmp_path / "r"),
        "--concurrency",
        "1",
        RESULTS=results,
        HOW=how,
    )
    output = done.stdout + done.stderr
    # Before: exit 0 and "everything above is stored" while the file was gone or empty.
    assert done.returncode == EXIT_ERROR, output
    said = {"deleted": "deleted", "replaced": "replaced by another file", "emptied": "emptied or overwritten"}
    # Emptied where it stands, before: exit 3 all the same, saying "Its finished cases are stored".
    assert f"was {said[how]} while run" in output, output
    assert "everything above is stored" not in output and "finished cases are stored" not in output, output
    assert "Traceback" not in output, output


STOPS = """
import os, signal

def agent(request):
    if request.case_id == "c03" and os.environ.get("STOP_AT_C03"):
        os.kill(os.getpid(), signal.SIGKILL)  # the run dies here, to be resumed
    return "answer " + request.input
"""


def test_resume_after_the_suite_changed_is_refused_naming_the_changed_cases(
    tmp_path: Path, sqlite_url: str
) -> None:
    suite = echo_suite(tmp_path, name="edited", cases=6, agent=STOPS, fails=lambda i: False)
    args = ["--db", sqlite_url, "--output", str(tmp_path / "r"), "--concurrency", "1"]
    done = proctor("run", str(suite), *args, STOP_AT_C03="1")
    assert done.returncode != EXIT_PASSED, done.stdout + done.stderr
    ((run_id,),) = rows(sqlite_url, "SELECT id FROM eval_run")
    stored_before = rows(sqlite_url)

    data = json.loads(suite.read_text())
    data["eval_cases"][0]["conversation"][0]["expected_final_response"]["content"] = "a new expected answer"
    added = json.loads(json.dumps(data["eval_cases"][5]))
    added["eval_id"] = "c99"
    data["eval_cases"] = [*data["eval_cases"][:5], added]  # c05 removed, c99 added
    suite.write_text(json.dumps(data))
    done = proctor("resume", str(run_id)[:8], "--db", sqlite_url)
    output = done.stdout + done.stderr
    # Before: resumed against the new version, mixing the two (17 of 31 cases in the report).
    assert done.returncode == EXIT_BAD_INPUT, output
    assert "the suite changed since run" in output and "nothing was run" in output, output
    assert "1 changed: 'c00'" in output and "1 added: 'c99'" in output and "1 removed: 'c05'" in output
    assert rows(sqlite_url) == stored_before  # nothing was run or stored

    original = echo_suite(tmp_path, name="edited", cases=6, agent=STOPS, fails=lambda i: False)
    assert original == suite  # the suite as it was: the resume finishes the run
    done = proctor("resume", str(run_id)[:8], "--db", sqlite_url)
    assert done.returncode == EXIT_PASSED, done.stdout + done.stderr
    assert len(rows(sqlite_url)) == 6
