"""A real MCP server (tests/fakes/mcp_server.py, written with the `mcp` SDK) and a scripted
OpenAI-compatible model that calls its tools."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proctor.cli import main
from tests.fakes import FakeOpenAI

MCP_SERVER = Path(__file__).resolve().parents[2] / "fakes" / "mcp_server.py"

SUITE = """\
name: orders-mcp
evaluations:
  metrics:
    - {type: standard, metric: equality}
test_cases:
  - name: shipped
    input: Where is order A-100?
    ground_truth: shipped via DHL
    expected_tools: [{name: lookup_order, args: {order_id: A-100}}]
  - name: pending
    input: Where is order B-200?
    ground_truth: pending
    expected_tools: [{name: lookup_order, args: {order_id: B-200}}]
  - name: sum
    input: add 2 40
    ground_truth: "42"
    expected_tools: [{name: add, args: {a: 2, b: 40}}]
"""


def scripted_model(body: dict[str, Any]) -> Any:
    """Asks the server's tools what the user asked, then answers from what they returned (so a
    right answer can only come from the server's data)."""
    messages = body["messages"]
    asked = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    last = messages[-1]
    if last["role"] == "tool":
        content = last["content"]
        order = json.loads(content) if content.startswith('{"order_id"') else None
        if order is None:
            return content
        return f"{order['status']} via {order['carrier']}" if order.get("carrier") else order["status"]
    if match := re.search(r"order (\S+?)\?", asked):
        return {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": match.group(1)}}]}
    if match := re.match(r"add (\d+) (\d+)", asked):
        return {"tool_calls": [{"name": "add", "arguments": {"a": int(match[1]), "b": int(match[2])}}]}
    if asked in ("whoami", "show_config", "crash"):
        return {"tool_calls": [{"name": asked, "arguments": {}}]}
    return "no tool needed"


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv("ORDERS_MODEL_KEY", "sk-orders")
    with FakeOpenAI(default=scripted_model) as fake:
        yield fake


def stdio_entry(pidfile: Path, **more: Any) -> dict[str, Any]:
    entry = {
        "name": "orders",
        "type": "mcp",
        "description": "The order desk",
        "command": sys.executable,
        "args": [str(MCP_SERVER), "stdio"],
        "env": {"MCP_TEST_PIDFILE": str(pidfile)},
    }
    return entry | more


def write_agent(folder: Path, api: FakeOpenAI, *entries: dict[str, Any], suite: str = SUITE) -> Path:
    """A Proctor `openai:` agent config with the given tool entries, and its suite beside it."""
    tools = "".join(f"  - {json.dumps(entry)}\n" for entry in entries)
    path = folder / "agent.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: orders
        model: {{provider: openai, name: m, endpoint: "{api.base_url}", api_key: "${{ORDERS_MODEL_KEY}}", temperature: 0}}
        instructions: {{inline: Answer from the order desk.}}
        tools:
        """)
        + tools
    )
    (folder / "suite.yaml").write_text(suite)
    return path


def run(agent: Path, *more: str) -> tuple[int, dict[str, Any]]:
    """`proctor run` of the suite beside `agent` (in this process); its exit code and report."""
    folder = agent.parent
    out = folder / "out"
    args = ["--no-prefect", "--no-progress", "--db", f"sqlite:///{folder / 'r.db'}", "--output", str(out)]
    code = main(["run", str(folder / "suite.yaml"), "--agent", f"openai:{agent}", *args, *more])
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return code, report


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


def started_pids(pidfile: Path) -> list[int]:
    return [int(line) for line in pidfile.read_text().split()] if pidfile.exists() else []
