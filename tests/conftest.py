"""Shared fixtures: a Prefect harness per session, databases, the bundled example."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_SUITE = ROOT / "examples" / "weather" / "weather.evalset.json"
# ADK-format files written for these tests: a clone needs nothing beside it.
ADK_DATA = ROOT / "tests" / "data" / "adk"
DICE = ADK_DATA / "dice_agent" / "dice.test.json"
DICE_CAMEL = ADK_DATA / "dice_agent_camel" / "dice.test.json"
LAMP = ADK_DATA / "lamp_agent" / "lamp.test.json"
# Google's own fixtures, on our machines and in CI only; tests of them skip elsewhere.
SHARED_ADK = ROOT.parent / "shared" / "fixtures" / "adk"
POSTGRES_ENV = "PROCTOR_TEST_POSTGRES_URL"

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
# A warm process the developer left running must not run the tests' `proctor` commands:
# tests/warm starts its own, on sockets of its own.
os.environ["PROCTOR_WARM"] = "0"

# Prefect configures logging (`logging.config.dictConfig`) when it is first imported, and that
# closes every handler already installed. absl's handler (rouge-score installs it) then closes
# the stream it holds: under pytest, pytest's capture of that moment, and a later test's output
# fails with "I/O operation on closed file". Configured here, first, the order tests run in
# cannot decide it.
import prefect.main  # noqa: E402,F401


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One ephemeral Prefect API for the whole session (it takes ~10 s to start)."""
    import contextlib

    import httpx
    from prefect.testing.utilities import prefect_test_harness

    # The harness picks a free port, then starts its server on it: under pytest -n, another
    # process's server (a fake model API, a Slack server) can take that port in between, and the
    # harness's health check gets its 404. A new port is picked on each try.
    with contextlib.ExitStack() as stack:
        for attempt in range(3):
            try:
                stack.enter_context(prefect_test_harness(server_startup_timeout=120))
                break
            except httpx.HTTPStatusError:
                if attempt == 2:
                    raise
        yield


@pytest.fixture
def shared_adk() -> Path:
    """Google ADK's own eval files (../shared/fixtures/adk), or a skip that says why."""
    if not SHARED_ADK.is_dir():
        pytest.skip(f"Google's ADK fixtures are not beside this checkout ({SHARED_ADK})")
    return SHARED_ADK


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'results.db'}"


@pytest.fixture(scope="session")
def postgres_server_url() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(
            f"PostgreSQL tests SKIPPED: set {POSTGRES_ENV} (e.g. postgresql://postgres@127.0.0.1:5432/test)"
        )
    return url


@pytest.fixture(scope="session")
def postgres_url(postgres_server_url: str) -> Iterator[str]:
    """A fresh database for this session on the given server, dropped afterwards."""
    import psycopg
    from sqlalchemy.engine import make_url

    from proctor.storage.db import normalize_url

    server = make_url(normalize_url(postgres_server_url))
    name = f"proctor_test_{uuid.uuid4().hex[:10]}"
    admin = server.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    yield server.set(database=name).render_as_string(hide_password=False)
    from proctor.storage.db import dispose_engines
    from proctor.storage.writer import close_writers

    close_writers()
    dispose_engines()
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests of Google's own ADK files carry `needs_shared`, so CI can run exactly those again
    with `../shared` beside the clone (and allow none of them to skip)."""
    for item in items:
        if "shared_adk" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.needs_shared)


def pytest_report_header(config: pytest.Config) -> str:
    url = os.environ.get(POSTGRES_ENV)
    return f"PostgreSQL tests: {'against ' + url if url else 'SKIPPED (no ' + POSTGRES_ENV + ')'}"
