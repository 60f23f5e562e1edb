"""Where results go and how a database URL is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctor.storage.db import DATABASE_URL_ENV, default_database_url, normalize_url, redact_url


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
