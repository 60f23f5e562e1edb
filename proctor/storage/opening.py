"""Opening the results database: a URL that can never work is one clear line before anything
runs, an unreachable or read-only database is named (never with its password), and a fresh
database's schema is created once even when several Proctor processes start together.

Kept apart from `db.py` so the engine cache stays small; `get_engine` calls in here.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, unquote_plus

from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError, SQLAlchemyError
from sqlmodel import SQLModel

# Any constant works: it only has to be the same in every Proctor process. ("proctor" in ASCII)
SCHEMA_LOCK_KEY = 0x70726F63746F72


class DatabaseProblem(Exception):
    """The results database cannot be used: one line naming it (no password) and what was expected.

    `bad_input` is True when the URL or file can never work as given (exit 2), False when the
    database may work later (unreachable; exit 3)."""

    def __init__(self, message: str, bad_input: bool = True) -> None:
        self.bad_input = bad_input
        super().__init__(message)


DATABASE_URL_ENV = "PROCTOR_DATABASE_URL"


def _userinfo_password(url: str) -> str | None:
    """The password as typed: everything between `user:` and the URL's last `@`. A password
    that is not percent-encoded (`p@ss:w/rd#x`) misleads a URL parser, which takes part of it
    for the host; taking up to the last `@` never shows any of it."""
    _, sep, rest = url.partition("://")
    at = rest.rfind("@")
    if not sep or at == -1 or ":" not in rest[:at]:
        return None
    return rest[:at].split(":", 1)[1]


def query_passwords(url: str) -> list[str]:
    """Passwords given as a query parameter (`?password=...`, read by the PostgreSQL driver as
    the password), however the key was spelt or percent-encoded."""
    query = url.partition("?")[2].partition("#")[0]
    return [
        value
        for key, value in parse_qsl(query, keep_blank_values=True)
        if key.strip().lower() == "password" and value
    ]


def holds_password(url: str) -> bool:
    """Whether the URL carries a password, in its user part or as a query parameter."""
    return bool(_userinfo_password(url)) or bool(query_passwords(url))


def _hide_query_passwords(url: str) -> str:
    head, sep, query = url.partition("?")
    if not sep:
        return url
    query, hash_sign, fragment = query.partition("#")
    pairs = []
    for pair in query.split("&"):
        key, equals, _ = pair.partition("=")
        pairs.append(f"{key}=***" if equals and unquote_plus(key).strip().lower() == "password" else pair)
    return f"{head}?{'&'.join(pairs)}{hash_sign}{fragment}"


def _shown(url: str) -> str:
    """The URL with its password hidden, however it was typed."""
    url = _hide_query_passwords(url)
    scheme, sep, rest = url.partition("://")
    if _userinfo_password(url) is None:
        return url
    at = rest.rfind("@")
    return f"{scheme}{sep}{rest[:at].split(':', 1)[0]}:***@{rest[at + 1 :]}"


def _check_password_encoded(url: str) -> None:
    """A password holding `@` must be percent-encoded, else the URL names another host (and
    the driver's error would show the rest of the password as that host)."""
    typed = _userinfo_password(url)
    if typed is not None and "@" in typed:
        raise DatabaseProblem(
            f"results database {_shown(url)}: the password must be percent-encoded in the URL "
            "(@ as %40; also / as %2F, # as %23, ? as %3F), or give the URL by reference "
            "('${ENV_VAR}' or 'secret:BLOCK')"
        )


class DatabaseUnavailable(RuntimeError):
    """The results database cannot be opened: one line naming it (never its password), the
    driver's reason and what to do, instead of SQLAlchemy's page of traceback."""

    def __init__(self, url: str, error: OperationalError) -> None:
        lines = [line.strip() for line in str(error.orig or error).splitlines() if line.strip()]
        reason = " ".join(" ".join(lines or ["unreachable"]).split())[:300]
        reason = reason.replace("FATAL: ", "").removeprefix("connection failed: ")
        parsed = make_url(url)
        where = f"-h {parsed.host or 'localhost'} -p {parsed.port or 5432} -U postgres"
        role = parsed.username or "postgres"
        if "role" in reason and "does not exist" in reason:  # as the superuser: the role cannot
            fix = f"create the role as the server's superuser: `createuser {where} {role}`" + (
                f", then its database: `createdb {where} -O {role} {parsed.database}`"
                if parsed.database
                else ""
            )
        elif "does not exist" in reason and parsed.database:
            fix = (
                f"create it first, as the server's superuser: `createdb {where} -O {role} {parsed.database}` "
                f"(or CREATE DATABASE {parsed.database} OWNER {role})"
            )
        else:
            fix = "check that the server runs and the URL (PROCTOR_DATABASE_URL or --db) is right"
        super().__init__(f"results database {_shown(url)} cannot be opened: {reason}; {fix}")


def parse_database_url(url: str) -> URL:
    """The URL parsed, its driver importable and, for SQLite, its folder usable."""
    _check_password_encoded(url)
    try:
        parsed = make_url(url)
        parsed.port  # noqa: B018 - SQLAlchemy parses the port lazily; a bad one raises here
    except ArgumentError:
        raise DatabaseProblem(
            f"results database {_shown(url)}: expected a SQLAlchemy URL such as sqlite:///results.db "
            "or postgresql://user@host:5432/name (--db or PROCTOR_DATABASE_URL)"
        ) from None
    except ValueError:
        raise DatabaseProblem(
            f"results database {_shown(url)}: expected a port number after the host"
        ) from None
    try:
        parsed.get_dialect().import_dbapi()
    except NoSuchModuleError:
        raise DatabaseProblem(
            f"results database {_shown(url)}: unknown database kind {parsed.drivername!r}; "
            "expected sqlite or postgresql"
        ) from None
    except ImportError as error:
        raise DatabaseProblem(
            f"results database {_shown(url)}: the driver for {parsed.get_backend_name()} is not installed "
            f"({error.name or error}); install it, or use sqlite or postgresql (psycopg ships with Proctor)"
        ) from None
    if parsed.get_backend_name() == "sqlite":
        _check_sqlite_folder(url, parsed)
    return parsed


def _sqlite_file(parsed: URL) -> Path | None:
    database = parsed.database
    if not database or database == ":memory:":
        return None
    if database.startswith("file:"):  # a SQLite URI (?uri=true)
        database = database[len("file:") :]
    return Path(database)


def _check_sqlite_folder(url: str, parsed: URL) -> None:
    path = _sqlite_file(parsed)
    if path is None:
        return
    for parent in [path.parent, *path.parent.parents]:
        if parent.exists():
            if not parent.is_dir():
                raise DatabaseProblem(f"results database {path}: {parent} is a file, expected a folder")
            break
    if path.is_dir():
        raise DatabaseProblem(f"results database {path}: is a folder, expected a SQLite file")


def check_writable(url: str) -> None:
    """Before a run: a SQLite file (or folder) Proctor cannot write is named now, not after the
    agent has been called."""
    parsed = parse_database_url(url)
    if parsed.get_backend_name() != "sqlite":
        return
    path = _sqlite_file(parsed)
    if path is None:
        return
    read_only_uri = parsed.query.get("mode") == "ro" or "mode=ro" in (parsed.database or "")
    existing = path if path.exists() else next((p for p in path.parents if p.exists()), None)
    if read_only_uri or (existing is not None and not os.access(existing, os.W_OK)):
        raise DatabaseProblem(
            f"results database {path} is read-only; expected a file Proctor can write "
            "(check its permissions or mode=ro, or point --db elsewhere)"
        )


def explain(url: str, error: BaseException) -> DatabaseProblem:
    """A driver's error as one line naming the database (no password, no SQL)."""
    reason = str(getattr(error, "orig", None) or error).split("[SQL:")[0]
    reason = " ".join(" ".join(reason.split("(Background on this error")[0].split()).split())[:300]
    if "readonly database" in reason:
        return DatabaseProblem(f"results database {_shown(url)} is read-only: {reason}")
    return DatabaseProblem(
        f"results database {_shown(url)} cannot be opened: {reason}; check that the server runs and "
        "the URL (--db or PROCTOR_DATABASE_URL) is right",
        bad_input=False,
    )


def create_schema(engine: Engine) -> list[str]:
    """Create the tables once and bring an older database up to date; returns the columns
    added, as `table.column`. On PostgreSQL a transaction-scoped advisory lock makes concurrent
    first starts (and upgrades) wait for each other: CREATE TABLE IF NOT EXISTS alone races on
    the catalog, and two processes adding one column would both try. Anything already there is
    left alone."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    for attempt in range(3):
        try:
            with engine.begin() as connection:
                if engine.dialect.name == "postgresql":
                    connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
                SQLModel.metadata.create_all(connection)
                added = add_missing_columns(connection)
                add_missing_indexes(connection)
                return added
        except OperationalError as error:
            # SQLite: two processes opening a new file at once both saw no table; the one that
            # lost finds it there when it looks again
            if attempt == 2 or "already exists" not in str(error):
                raise
    raise AssertionError("unreachable")


def add_missing_indexes(connection: Connection) -> None:
    """Create the indexes newer Proctor versions added on tables an older one created
    (`create_all` makes a table's indexes only with the table): the history reads of the
    nightly verdict need them on a database that is years old as much as on a new one."""
    for table in SQLModel.metadata.sorted_tables:
        for index in table.indexes:
            index.create(connection, checkfirst=True)


def add_missing_columns(connection: Connection) -> list[str]:
    """Add the columns newer Proctor versions added (always nullable or with a constant
    default), so a stored history keeps working after an upgrade."""
    from sqlalchemy import inspect, text

    inspector = inspect(connection)
    added = []
    for table in SQLModel.metadata.sorted_tables:
        if not inspector.has_table(table.name):
            continue
        present = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in present:
                continue
            kind = column.type.compile(dialect=connection.dialect)
            default = column.default.arg if column.default is not None and column.default.is_scalar else None
            if default is None and not column.nullable:
                default = 0  # every non-null column added so far without a default is a counter
            clause = "" if default is None else f" DEFAULT {_sql_literal(default)}"
            connection.execute(text(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}{clause}'))
            added.append(f"{table.name}.{column.name}")
    return added


def _sql_literal(value: object) -> str:
    """A column default as SQL: booleans as TRUE / FALSE, which PostgreSQL requires for a
    BOOLEAN column (it refuses DEFAULT 0) and SQLite reads as 1 / 0."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return repr(value)


def database_errors() -> tuple[type[BaseException], ...]:
    """What the command line turns into one line about the results database."""
    return (DatabaseProblem, DatabaseUnavailable, SQLAlchemyError)


def password_by_reference(url: str | None) -> str | None:
    """A database URL fit for Prefect's flow-run parameters (stored by its API, shown in its UI):
    a URL carrying a password is moved into this process's `PROCTOR_DATABASE_URL`, which the run
    reads when its `database_url` is None, and None is returned in its place."""
    if not url:
        return url
    try:
        password = make_url(url).password
    except (ArgumentError, ValueError):
        return url  # refused later, with its password hidden
    if not password and not query_passwords(url):
        return url
    os.environ[DATABASE_URL_ENV] = url
    return None
