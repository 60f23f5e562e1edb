"""MCP tools over stdio: a real server written with the `mcp` SDK, started once per run by
Proctor, its tools offered with their own schemas, each call answered by it and recorded on the
turn, the server stopped (its own process) when the run ends."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from proctor.cli import EXIT_PASSED
from tests.agents.tools.conftest import alive, run, started_pids, stdio_entry, write_agent
from tests.fakes import FakeOpenAI

pytest.importorskip("mcp", reason="MCP tools need the `mcp` extra: pip install -e '.[mcp]'")
pytestmark = pytest.mark.needs_extra  # CI runs these again with the mcp extra installed


def test_a_run_starts_the_server_once_and_its_answers_pass_the_cases(tmp_path: Path, api: FakeOpenAI) -> None:
    pidfile = tmp_path / "pids"
    agent = write_agent(tmp_path, api, stdio_entry(pidfile))
    code, report = run(agent, "--concurrency", "3")
    assert code == EXIT_PASSED, report
    assert {r["test_name"]: r["passed"] for r in report["results"]} == {"shipped": True, "pending": True, "sum": True}
    [pid] = started_pids(pidfile)  # three cases at once, one server
    assert not alive(pid)  # stopped by the time the run returned
    calls = {r["test_name"]: r["tool_calls"] for r in report["results"]}
    assert calls["sum"] == ["add"]
    # the model was offered the server's own schema, and received the server's own answers
    first = api.completions[0]["body"]
    offered = {tool["function"]["name"]: tool["function"] for tool in first["tools"]}
    assert set(offered) == {"lookup_order", "add", "whoami", "show_config", "refuse", "crash"}
    assert offered["add"]["description"] == "Add two integers."
    assert offered["add"]["parameters"]["required"] == ["a", "b"]
    assert offered["add"]["parameters"]["properties"]["a"]["type"] == "integer"
    tool_messages = [m["content"] for c in api.completions for m in c["body"]["messages"] if m["role"] == "tool"]
    assert sorted(tool_messages) == sorted(
        [
            json.dumps({"order_id": "A-100", "status": "shipped", "carrier": "DHL", "total": 42.5}),
            json.dumps({"order_id": "B-200", "status": "pending", "carrier": None, "total": 7.0}),
            "42",
        ]
    )
