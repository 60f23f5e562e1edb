"""Where results go and how a database URL is shown."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from proctor.storage.db import DATABASE_URL_ENV, default_database_url, get_engine, normalize_url, redact_url


def test_default_database_is_a_sqlite_file_under_the_working_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_database_url() == f"sqlite:///{tmp_path.as_posix()}/.proctor/proctor.db"


def test_environment_variable_overrides_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, "postgresql://u@h/db")
    assert default_database_url() == "postgresql://u@h/db"


def test_postgres_urls_use_psycopg3() -> None:
    assert normalize_url("postgresql://u@h:5432/db") == "postgresql+psycopg://u@h:5432/db"
    assert normalize_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_url("sqlite:///x.db") == "sqlite:///x.db"


def test_passwords_never_show_in_a_displayed_url() -> None:
    shown = redact_url("postgresql://user:s3cret-pass@db.example:5432/results")
    assert "s3cret-pass" not in shown and "user" in shown and "results" in shown


def test_an_older_database_gains_the_new_columns(tmp_path: Path) -> None:
    """A results database written by an earlier Proctor keeps working after an upgrade."""
    import sqlite3

    from sqlmodel import Session, select

    from proctor.models.tables import EvalRun
    from proctor.storage.db import get_engine

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as connection:  # eval_run as the first release wrote it
        connection.execute(
            "CREATE TABLE eval_run (id CHAR(32) PRIMARY KEY, suite_id VARCHAR NOT NULL, suite_name VARCHAR NOT NULL,"
            " suite_path VARCHAR NOT NULL, source_format VARCHAR NOT NULL, agent VARCHAR NOT NULL,"
            " status VARCHAR NOT NULL, started_at DATETIME NOT NULL, finished_at DATETIME, total_cases INTEGER NOT NULL,"
            " passed_cases INTEGER NOT NULL, failed_cases INTEGER NOT NULL, errored_cases INTEGER NOT NULL,"
            " pass_rate FLOAT, duration_ms INTEGER, config JSON NOT NULL, environment JSON NOT NULL, flow_run_id VARCHAR,"
            " proctor_version VARCHAR NOT NULL, report_dir VARCHAR, error TEXT)"
        )
    engine = get_engine(f"sqlite:///{path}")
    with Session(engine) as session:
        session.add(
            EvalRun(
                suite_id="s",
                suite_name="s",
                suite_path="s",
                source_format="native",
                agent="a:b",
                proctor_version="new",
                variant="v2",
                planned_cases=3,
            )
        )
        session.commit()
        run = session.exec(select(EvalRun)).one()
    assert (run.variant, run.planned_cases) == ("v2", 3)


def test_an_older_metric_table_gains_informational_and_its_rows_stay_verdicts(tmp_path: Path) -> None:
    """Metric rows stored before informational metrics existed read as verdicts (pass counts kept)."""
    import sqlite3
    import uuid

    from sqlalchemy import create_engine
    from sqlmodel import Session, SQLModel

    from proctor.storage.opening import create_schema
    from proctor.storage.runs import metric_stats

    path = tmp_path / "old.db"
    SQLModel.metadata.create_all(create_engine(f"sqlite:///{path}"))
    run_id, case_id = uuid.uuid4(), uuid.uuid4()
    with sqlite3.connect(path) as connection:
        connection.execute("ALTER TABLE metric_result DROP COLUMN informational")
        connection.execute(
            "INSERT INTO metric_result (id, run_id, case_result_id, case_id, metric_name, metric_version, score,"
            " passed, retry_count, evaluation_time_ms, judge_calls, cached_calls, prompt_tokens,"
            " completion_tokens, saved_prompt_tokens, saved_completion_tokens, args, details)"
            " VALUES (?, ?, ?, 'c', 'rouge', '1', 0.9, 1, 0, 0, 0, 0, 0, 0, 0, 0, '{}', '{}')",
            (uuid.uuid4().hex, run_id.hex, case_id.hex),
        )
    engine = create_engine(f"sqlite:///{path}")
    assert create_schema(engine) == ["metric_result.informational"]
    assert create_schema(engine) == []  # once
    with Session(engine) as session:
        stats = metric_stats(session=session, run_id=run_id)
    assert (stats["rouge"]["informational"], stats["rouge"]["passed"]) == (False, 1)


def test_a_missing_results_database_is_one_line_naming_it_and_the_fix(postgres_server_url) -> None:
    from sqlalchemy.engine import make_url

    from proctor.storage.db import DatabaseUnavailable

    server = make_url(postgres_server_url)
    missing = server.set(database=f"proctor_missing_{uuid.uuid4().hex[:8]}", password="s3cret-pw")
    url = missing.render_as_string(hide_password=False)
    with pytest.raises(DatabaseUnavailable) as refused:
        get_engine(url)
    message = str(refused.value)
    assert "\n" not in message and "s3cret-pw" not in message
    assert f'{missing.database}" does not exist' in message
    assert f"createdb -h {server.host} -p {server.port or 5432}" in message and missing.database in message


def test_an_unreachable_results_database_says_what_to_check() -> None:
    from proctor.storage.db import DatabaseUnavailable

    with pytest.raises(DatabaseUnavailable) as refused:
        get_engine("postgresql://proctor:hunter2@127.0.0.1:9/results")
    message = str(refused.value)
    assert "\n" not in message and "hunter2" not in message and "127.0.0.1:9/results" in message
    assert "Connection refused" in message and "PROCTOR_DATABASE_URL" in message


def test_an_older_postgres_database_is_upgraded_once_by_concurrent_starts(postgres_server_url) -> None:
    """PostgreSQL refuses `BOOLEAN DEFAULT 0`, and two processes adding one column at once would
    both try: the upgrade runs under the schema lock with a boolean default PostgreSQL takes."""
    import threading

    import psycopg
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlmodel import SQLModel

    from proctor.storage.db import normalize_url
    from proctor.storage.opening import create_schema

    server = make_url(normalize_url(postgres_server_url))
    name = f"proctor_upgrade_{uuid.uuid4().hex[:8]}"
    admin = server.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    url = server.set(database=name).render_as_string(hide_password=False)
    try:
        old = create_engine(url)
        SQLModel.metadata.create_all(old)
        with old.begin() as connection:
            connection.execute(text("ALTER TABLE metric_result DROP COLUMN informational"))
            connection.execute(text("ALTER TABLE eval_run DROP COLUMN agent_model"))
            connection.execute(text("ALTER TABLE eval_run DROP COLUMN prices"))
        old.dispose()
        results: list[object] = []

        def start() -> None:
            engine = create_engine(url)
            try:
                results.append(create_schema(engine))
            except Exception as error:  # noqa: BLE001 - the assertion below names it
                results.append(error)
            finally:
                engine.dispose()

        threads = [threading.Thread(target=start) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        added = "['eval_run.agent_model', 'eval_run.prices', 'metric_result.informational']"
        assert sorted(map(str, results)) == sorted(["[]", "[]", "[]", added])
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
