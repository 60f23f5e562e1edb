"""Where results live: a SQLite file by default, any SQLAlchemy URL otherwise.

The default is `.proctor/proctor.db` under the working directory, so results sit beside
the project that produced them; `PROCTOR_DATABASE_URL` or `--db` point elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlmodel import create_engine

import proctor.models.tables  # noqa: F401 - registers the tables on SQLModel.metadata
from proctor import secrets
from proctor.env import ENV_REFERENCE
from proctor.storage.opening import (
    DATABASE_URL_ENV,
    DatabaseProblem,
    DatabaseUnavailable,
    _shown,
    create_schema,
    explain,
    parse_database_url,
    query_passwords,
)

__all__ = [
    "DATABASE_URL_ENV",
    "DatabaseProblem",
    "DatabaseUnavailable",
    "get_engine",
    "normalize_url",
    "redact_url",
]

DEFAULT_DATABASE_PATH = Path(".proctor") / "proctor.db"

_engines: dict[str, Engine] = {}
_secret_urls: dict[str, str] = {}
_secret_lock = threading.Lock()
_engines_lock = threading.Lock()


def default_database_url() -> str:
    url = os.environ.get(DATABASE_URL_ENV)
    if url:
        return url
    return f"sqlite:///{(Path.cwd() / DEFAULT_DATABASE_PATH).as_posix()}"


def resolve_url_reference(url: str) -> str:
    """The URL a reference names: `${VAR}` from the environment, `secret:BLOCK` from a Prefect
    Secret block (read once per process). So a password never has to be typed on a command
    line, stored in a deployment's parameters or shown in the UI: only the reference is.
    Anything else is returned as it is."""
    text = url.strip()
    if ENV_REFERENCE.fullmatch(text):
        value = os.environ.get(text[2:-1])
        if not value:
            raise DatabaseProblem(f"results database {text}: environment variable {text[2:-1]} is not set")
        return value
    if not text.startswith("secret:"):
        return url
    with _secret_lock:
        if text not in _secret_urls:
            from proctor.judges.credentials import CredentialError, resolve_reference

            try:
                _secret_urls[text] = resolve_reference(text, field="database URL")
            except CredentialError as error:
                raise DatabaseProblem(f"results database {text}: {error}") from None
        return _secret_urls[text]


def normalize_url(url: str) -> str:
    """A reference resolved (see `resolve_url_reference`); `postgresql://` means psycopg 3,
    the driver Proctor installs."""
    url = resolve_url_reference(url)
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def redact_url(url: str) -> str:
    """The URL with its password hidden, for logs and reports."""
    return _shown(normalize_url(url))


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    # WAL lets readers (reports, `proctor history`) work while a run writes; NORMAL sync is
    # durable across process crashes, which is what a killed run needs.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


# JSON columns (turns, tool calls, metric details) are most of a row's cost to read and
# write; orjson does both several times faster than the standard library.
JSON_CODEC = {"json_serializer": _json_dumps, "json_deserializer": orjson.loads}


def get_engine(url: str | None = None) -> Engine:
    """One engine per URL per process, with the tables created on first use."""
    url = normalize_url(url or default_database_url())
    with _engines_lock:
        engine = _engines.get(url)
        if engine is not None:
            return engine
        parsed = parse_database_url(url)
        secrets.remember(parsed.password if isinstance(parsed.password, str) else None)
        for password in query_passwords(url):
            secrets.remember(password)
        if parsed.get_backend_name() == "sqlite":
            database = parsed.database
            if database and database != ":memory:":
                Path(database).parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(
                url, connect_args={"check_same_thread": False, "timeout": 30}, **JSON_CODEC
            )
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5, **JSON_CODEC)
        try:
            create_schema(engine)
        except OperationalError as error:
            engine.dispose()
            raise DatabaseUnavailable(url, error) from None
        except SQLAlchemyError as error:
            engine.dispose()
            raise explain(url, error) from None
        _engines[url] = engine
        return engine


def dispose_engines() -> None:
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


class DatabaseFileLost(RuntimeError):
    """The SQLite file a run writes to was deleted or replaced while it ran: SQLite keeps
    writing to the open (now unlinked) file without a word, so nothing written since is at
    that path, whatever the run then says."""


def sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL names; None for any other database or an in-memory one."""
    parsed = parse_database_url(normalize_url(url))
    database = parsed.database if parsed.get_backend_name() == "sqlite" else None
    return Path(database).resolve() if database and database != ":memory:" else None


def file_identity(url: str) -> tuple[int, int] | None:
    """The (device, inode) of a run's SQLite file, to tell later whether it is still the same."""
    path = sqlite_file(url)
    if path is None:
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _run_row_lost(path: Path, run_id: object) -> bool:
    """Whether the run's own row can no longer be read from the file, by a connection of its
    own: the file was emptied (`: > results.db`) or written over where it stands. A busy or
    locked file is not lost."""
    key = getattr(run_id, "hex", str(run_id))
    uri = f"{path.as_uri()}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=30)) as connection:
            return connection.execute("SELECT 1 FROM eval_run WHERE id = ?", (key,)).fetchone() is None
    except sqlite3.Error as error:
        return not any(word in str(error) for word in ("locked", "busy"))


def check_same_file(url: str, identity: tuple[int, int] | None, run_id: object) -> None:
    """Raise `DatabaseFileLost` when the file at a run's SQLite path is gone, is another
    file than the one the run started writing to, or no longer holds the run."""
    if identity is None:
        return
    now = file_identity(url)
    path = sqlite_file(url)
    if now == identity:
        if path is None or not _run_row_lost(path, run_id):
            return
        what = "emptied or overwritten"  # the same file, truncated or written over in place
    else:
        what = "deleted" if now is None else "replaced by another file"
    raise DatabaseFileLost(
        f"the results database {path} was {what} while run {run_id} was writing to it: its "
        "results are not in that file, and this run cannot be resumed from it. Run the suite again"
    )
