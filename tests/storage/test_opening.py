"""A results database that cannot be opened is one line naming it (never its password) and what
was expected, exit 2 for a URL that can never work, never a traceback; a fresh PostgreSQL
database survives several Proctor processes creating its schema at once."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

PROCTOR = str(Path(sys.executable).with_name("proctor"))
SUITE = {
    "eval_set_id": "s",
    "metadata": {"agent": "agent.py:agent", "eval_config": {"criteria": {"response_match_score": 0.1}}},
    "eval_cases": [
        {
            "eval_id": "c1",
            "conversation": [
                {
                    "invocation_id": "t1",
                    "user_content": {"role": "user", "content": "hi"},
                    "expected_final_response": {"role": "assistant", "content": "hi"},
                }
            ],
        }
    ],
}


def proctor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PROCTOR, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    import json

    (tmp_path / "agent.py").write_text("def agent(request):\n    return 'hi'\n")
    path = tmp_path / "s.evalset.json"
    path.write_text(json.dumps(SUITE))
    return path


BAD_URLS = {
    "malformed port": ("postgresql://u:pw-secret@127.0.0.1:notaport/x", "expected a port number"),
    "not a URL": ("nonsense", "expected a SQLAlchemy URL such as sqlite:///results.db"),
    "missing driver": ("mysql://u:pw-secret@127.0.0.1/x", "the driver for mysql is not installed"),
    "sqlite parent a file": ("sqlite:///{dir}/afile/results.db", "afile is a file, expected a folder"),
    "reference to an unset variable": (
        "${{PROCTOR_TEST_UNSET_DB}}",  # braces doubled: the URLs go through str.format
        "environment variable PROCTOR_TEST_UNSET_DB is not set",
    ),
}


@pytest.mark.parametrize("name", list(BAD_URLS))
@pytest.mark.parametrize("command", ["run", "history", "compare", "resume", "baseline"])
def test_a_database_url_that_can_never_work_is_one_line_exit_2(
    name: str, command: str, suite: Path, tmp_path: Path
) -> None:
    (tmp_path / "afile").write_text("")
    url, expected = BAD_URLS[name]
    url = url.format(dir=tmp_path)
    argv = {
        "run": ["run", str(suite), "--no-progress", "--output", str(tmp_path / "out")],
        "history": ["history"],
        "compare": ["compare", "a", "b"],
        "resume": ["resume", "abc"],
        "baseline": ["run", str(suite), "--baseline", "abc", "--no-progress"],
    }[command]
    done = proctor(*argv, "--db", url, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "pw-secret" not in done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) <= 2 and expected in done.stderr, done.stderr
    assert "results database" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["history", "compare", "resume", "baseline"])
def test_an_unreachable_database_is_one_line_without_the_password(
    command: str, suite: Path, tmp_path: Path
) -> None:
    url = "postgresql://proctor:pw-secret@127.0.0.1:9/results"
    argv = {
        "history": ["history"],
        "compare": ["compare", "a", "b"],
        "resume": ["resume", "abc"],
        "baseline": ["run", str(suite), "--baseline", "abc", "--no-progress"],
    }[command]
    done = proctor(*argv, "--db", url, cwd=tmp_path)
    assert done.returncode in (2, 3), done.stderr
    assert "Traceback" not in done.stderr and "pw-secret" not in done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) <= 2 and "127.0.0.1:9/results" in done.stderr, done.stderr


def test_a_read_only_database_file_is_named(suite: Path, tmp_path: Path) -> None:
    """Opened read-only (SQLite's `mode=ro`, which holds even for root): the error names the file."""
    database = tmp_path / "results.db"
    assert proctor("history", "--db", f"sqlite:///{database}", cwd=tmp_path).returncode == 0
    url = f"sqlite:///file:{database}?mode=ro&uri=true"
    done = proctor(
        "run", str(suite), "--db", url, "--no-progress", "--output", str(tmp_path / "o"), cwd=tmp_path
    )
    assert done.returncode in (2, 3) and "Traceback" not in done.stderr, done.stderr
    assert str(database) in done.stderr and "read-only" in done.stderr, done.stderr


def test_four_processes_create_a_fresh_postgres_schema_at_once(
    postgres_server_url: str, tmp_path: Path
) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    from proctor.storage.db import normalize_url

    server = make_url(normalize_url(postgres_server_url))
    admin = server.set(drivername="postgresql").render_as_string(hide_password=False)
    name = f"proctor_race_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        url = server.set(database=name).render_as_string(hide_password=False)
        command = [PROCTOR, "history", "--db", url]
        processes = [
            subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(4)
        ]
        results = [(process.wait(timeout=300), process.stderr.read()) for process in processes]
        for process in processes:
            process.stdout.close()
            process.stderr.close()
        assert [code for code, _ in results] == [0, 0, 0, 0], results
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


RACER = """
import sys, time
from proctor.storage.db import get_engine
while time.time() < float(sys.argv[2]):
    time.sleep(0.001)
get_engine(sys.argv[1])
"""


def test_processes_creating_the_schema_at_the_same_instant_all_succeed(
    postgres_server_url: str, tmp_path: Path
) -> None:
    """Started together after their imports, so the CREATE TABLEs really overlap (plain
    create_all fails here with duplicate type/table errors)."""
    import time

    import psycopg
    from sqlalchemy.engine import make_url

    from proctor.storage.db import normalize_url

    server = make_url(normalize_url(postgres_server_url))
    admin = server.set(drivername="postgresql").render_as_string(hide_password=False)
    for _round in range(3):  # the race is timing-dependent: three fresh databases
        name = f"proctor_race_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        try:
            url = server.set(database=name).render_as_string(hide_password=False)
            start = str(time.time() + 8)
            processes = [
                subprocess.Popen([sys.executable, "-c", RACER, url, start], stderr=subprocess.PIPE, text=True)
                for _ in range(6)
            ]
            results = [(process.wait(timeout=300), process.stderr.read()) for process in processes]
            for process in processes:
                process.stderr.close()
            assert [code for code, _ in results] == [0] * 6, [error[-400:] for _, error in results]
        finally:
            with psycopg.connect(admin, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_database_password_reaches_prefect_only_by_reference(monkeypatch) -> None:
    """`run_evaluation` hands the flow (whose parameters Prefect stores and shows) no password:
    the URL goes to PROCTOR_DATABASE_URL of this process and the parameter is None."""
    from proctor.storage.db import DATABASE_URL_ENV, default_database_url
    from proctor.storage.opening import password_by_reference

    monkeypatch.setenv(DATABASE_URL_ENV, "unset")  # so that what the run sets is undone afterwards
    monkeypatch.delenv(DATABASE_URL_ENV)
    url = "postgresql://proctor:pw-secret@127.0.0.1:5432/results"
    assert password_by_reference(url) is None
    assert default_database_url() == url  # what the run opens when its parameter is None
    assert (
        password_by_reference("postgresql://proctor@127.0.0.1/results")
        == "postgresql://proctor@127.0.0.1/results"
    )
    assert password_by_reference("sqlite:///r.db") == "sqlite:///r.db"


def test_a_database_url_given_by_environment_reference_is_used_and_never_shown(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--db '${RESULTS_DB}'`: the URL (and its password) stays in the environment; Prefect's
    parameters, the stored request and the terminal see only the reference."""
    from proctor.storage.opening import password_by_reference

    database = tmp_path / "by-reference.db"
    monkeypatch.setenv("PROCTOR_TEST_RESULTS_DB", f"sqlite:///{database}")
    done = proctor("run", str(suite), "--db", "${PROCTOR_TEST_RESULTS_DB}", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert database.exists() and not (tmp_path / ".proctor" / "proctor.db").exists()
    assert password_by_reference("${PROCTOR_TEST_RESULTS_DB}") == "${PROCTOR_TEST_RESULTS_DB}"
    history = proctor("history", "--db", "${PROCTOR_TEST_RESULTS_DB}", cwd=tmp_path)
    assert history.returncode == 0 and "s" in history.stdout


@pytest.mark.usefixtures("prefect_harness")
def test_a_database_url_in_a_prefect_secret_block(suite: Path, tmp_path: Path) -> None:
    from prefect.blocks.system import Secret

    from proctor.cli import main

    database = tmp_path / "from-secret.db"
    Secret(value=f"sqlite:///{database}").save("proctor-test-results-db", overwrite=True)
    code = main(
        ["run", str(suite), "--db", "secret:proctor-test-results-db", "--no-prefect", "--no-progress"]
    )
    assert code == 0 and database.exists()
    assert main(["history", "--db", "secret:proctor-test-missing-db"]) == 2
