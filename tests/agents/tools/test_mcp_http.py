"""MCP tools over HTTP: the same real server, run by the test on 127.0.0.1 (streamable HTTP and
SSE) and stopped by its pid; headers with `${VAR}`s, and a refusal that never shows their value."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proctor.cli import EXIT_PASSED
from tests.agents.tools.conftest import MCP_SERVER, run, write_agent
from tests.fakes import FakeOpenAI
from tests.fakes.processes import free_port, running

pytest.importorskip("mcp", reason="MCP tools need the `mcp` extra: pip install -e '.[mcp]'")
pytestmark = pytest.mark.needs_extra  # CI runs these again with the mcp extra installed

TOKEN = "tok-7f3a9c1e5b"


def _wait_listening(port: int, process, log: Path, timeout: float = 60.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the MCP server exited ({process.returncode}):\n{log.read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"the MCP server did not listen within {timeout} s:\n{log.read_text()}")


@pytest.fixture(params=["http", "sse"])
def http_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The server on a free port, requiring the bearer token; (transport, url)."""
    transport, port = request.param, free_port()
    log = tmp_path / "mcp-server.log"
    command = [sys.executable, str(MCP_SERVER), transport, str(port), "--token", TOKEN]
    with running(command, env=dict(os.environ), log=log) as process:
        _wait_listening(port, process, log)
        yield transport, f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"
    assert process.poll() is not None  # stopped by its pid


def _entry(transport: str, url: str) -> dict:
    return {
        "name": "orders",
        "type": "mcp",
        "description": "The order desk",
        "transport": transport,
        "url": url,
        "headers": {"Authorization": "Bearer ${ORDERS_MCP_TOKEN}"},
    }


def test_a_server_reached_by_url_answers_the_cases(
    tmp_path: Path, api: FakeOpenAI, http_server: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORDERS_MCP_TOKEN", TOKEN)
    agent = write_agent(tmp_path, api, _entry(*http_server))
    code, report = run(agent)
    assert code == EXIT_PASSED, report
    assert {r["test_name"]: r["passed"] for r in report["results"]} == {
        "shipped": True,
        "pending": True,
        "sum": True,
    }
    received = [m["content"] for c in api.completions for m in c["body"]["messages"] if m["role"] == "tool"]
    assert '"carrier": "DHL"' in " ".join(received)


def test_a_refused_connection_fails_every_case_with_the_reason_and_never_the_header(
    tmp_path: Path, api: FakeOpenAI, http_server: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORDERS_MCP_TOKEN", "wrong-secret-4d2c")
    monkeypatch.setenv("ORDERS_URL_KEY", "url-secret-81be")
    transport, url = http_server
    agent = write_agent(tmp_path, api, _entry(transport, url + "?key=${ORDERS_URL_KEY}"))
    code, report = run(agent)
    assert code != EXIT_PASSED
    errors = [" ".join(r["errors"]) for r in report["results"]]
    assert len(errors) == 3 and all(
        "MCP server 'orders' did not start" in e and "401" in e for e in errors
    ), errors
    everything = "".join(p.read_text(errors="replace") for p in (tmp_path / "out").iterdir())
    assert "wrong-secret-4d2c" not in everything and "url-secret-81be" not in everything
    assert "?key=${ORDERS_URL_KEY}" in everything  # the URL as written
    assert api.completions == []
