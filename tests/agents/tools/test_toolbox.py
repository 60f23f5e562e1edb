"""Tools answered by a runner (the contract MCP servers and indexes plug into): offered to the
model with their schemas, called, recorded on the turn as function tools are, opened once per
run and closed when it ends, their failures kept to the cases they touch."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from proctor.agents import AgentInvoker, AgentLoadError, AgentRequest, load_target
from proctor.agents.tools import RUNNERS, ToolCallError, ToolContext, ToolOpenError
from proctor.cli import EXIT_FAILED, main
from tests.fakes import FakeOpenAI


class Ledger:
    """A kind of tool for these tests: `<name>_lookup(key)` answers `prefix + key`."""

    def __init__(self, entry: Mapping[str, Any], context: ToolContext, events: list[str]) -> None:
        unknown = set(entry) - {"name", "description", "type", "prefix", "fail"}
        if unknown:
            raise ValueError(f"unknown key(s) {sorted(unknown)}")
        if "prefix" not in entry:
            raise ValueError("prefix: required")
        self.entry, self.events, self.context = entry, events, context

    async def open(self) -> None:
        self.events.append("open")
        await asyncio.sleep(0.05)  # cases arriving meanwhile wait for this one opening
        if self.entry.get("fail") == "open":
            raise ToolOpenError(f"ledger {self.entry['name']!r} did not start: no such book")

    def schemas(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": f"{self.entry['name']}_lookup",
                    "description": self.entry["description"],
                    "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
                },
            }
        ]

    async def call(self, name: str, args: dict[str, Any], request: AgentRequest) -> Any:
        if self.entry.get("fail") == "call" and args["key"] == "gone":
            raise ToolCallError(f"ledger {self.entry['name']!r} is gone")
        return {"key": args["key"], "value": self.entry["prefix"] + args["key"]}

    async def aclose(self) -> None:
        self.events.append("close")


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    log: list[str] = []
    monkeypatch.setitem(RUNNERS, "ledger", lambda entry, context: Ledger(entry, context, log))
    return log


def _agent_yaml(folder: Path, api: FakeOpenAI, ledger: str = "prefix: 'v-'", cases: str = "") -> Path:
    """An `openai:` agent config with a ledger tool, and beside it (`suite.yaml`) its cases: a
    HoloDeck suite holds only HoloDeck's own tool kinds."""
    (folder / "tools.py").write_text("def clock():\n    return '09:00'\n")
    path = folder / "agent.yaml"
    path.write_text(
        textwrap.dedent(f"""
        name: books
        model: {{provider: openai, name: m, endpoint: "{api.base_url}", api_key: "${{BOOKS_KEY}}", temperature: 0}}
        instructions: {{inline: Use the tools.}}
        tools:
          - {{name: clock, description: The time, file: tools.py, function: clock}}
          - {{name: books, description: Look a key up, type: ledger, {ledger}}}
        """)
    )
    (folder / "suite.yaml").write_text(
        "name: books\ntest_cases:\n" + (cases or "  - {name: one, input: 'look up a'}\n")
    )
    return path


def _run(path: Path, *more: str) -> int:
    folder = path.parent
    database = f"sqlite:///{folder / 'r.db'}"
    args = ["--no-prefect", "--no-progress", "--db", database, "--output", str(folder / "out")]
    return main(["run", str(folder / "suite.yaml"), "--agent", f"openai:{path}", *args, *more])


def _invoke(target: str, request: AgentRequest):
    invoker = AgentInvoker(load_target(target), max_threads=2, timeout_s=10)
    try:
        return asyncio.run(invoker.invoke(request))
    finally:
        invoker.close()


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv("BOOKS_KEY", "sk-test")
    with FakeOpenAI(default="done") as fake:
        yield fake


def test_a_runners_tools_are_offered_called_and_recorded_like_function_tools(
    tmp_path: Path, api: FakeOpenAI, events: list[str]
) -> None:
    path = _agent_yaml(tmp_path, api)
    api.script({"tool_calls": [{"name": "books_lookup", "arguments": {"key": "a"}}]}, "a is v-a")
    request = AgentRequest(case_id="c", turn_id="t", input="look up a", thread_id="x")
    response = _invoke(f"openai:{path}", request)
    assert response.answer == "a is v-a"
    assert [(c.name, c.args, c.result) for c in response.tool_calls] == [
        ("books_lookup", {"key": "a"}, {"key": "a", "value": "v-a"})
    ]
    first, second = (r["body"] for r in api.completions)
    assert [tool["function"]["name"] for tool in first["tools"]] == ["clock", "books_lookup"]
    assert second["messages"][-1]["content"] == json.dumps({"key": "a", "value": "v-a"})
    # called outside a run, the tools live for the call: opened, then closed before it returns
    assert events == ["open", "close"]
    declared = response.metadata["adk_app_details"]["books"]["tool_declarations"][0]
    assert [d["name"] for d in declared["function_declarations"]] == ["clock", "books_lookup"]


def test_a_run_opens_its_tools_once_for_every_case_and_closes_them_at_its_end(
    tmp_path: Path, api: FakeOpenAI, events: list[str], capsys: pytest.CaptureFixture
) -> None:
    cases = "".join(
        f"  - name: case_{key}\n    input: 'look up {key}'\n"
        f"    expected_tools: [{{name: books_lookup, args: {{key: {key}}}}}]\n"
        for key in "abcd"
    )

    def model(body: dict[str, Any]) -> Any:  # looks up the key it was asked for, once
        asked = body["messages"][1]["content"].split()[-1]
        if body["messages"][-1]["role"] == "tool":
            return "found " + json.loads(body["messages"][-1]["content"])["value"]
        return {
            "tool_calls": [{"name": "books_lookup", "arguments": {"key": "x" if asked == "d" else asked}}]
        }

    api.default = model
    path = _agent_yaml(tmp_path, api, cases=cases)
    assert _run(path, "--concurrency", "4") == EXIT_FAILED
    assert events == ["open", "close"]  # four cases at once, one opening
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    results = {r["test_name"]: r for r in report["results"]}
    assert {name: r["passed"] for name, r in results.items()} == {
        "case_a": True,
        "case_b": True,
        "case_c": True,
        "case_d": False,  # called with the wrong key
    }
    assert "3/4 passed" in capsys.readouterr().out


def test_a_tool_that_cannot_open_fails_each_case_with_its_reason_and_is_tried_once(
    tmp_path: Path, api: FakeOpenAI, events: list[str]
) -> None:
    cases = "".join(f"  - {{name: case_{i}, input: 'look up {i}'}}\n" for i in range(3))
    path = _agent_yaml(tmp_path, api, ledger="prefix: 'v-', fail: open", cases=cases)
    _run(path)
    assert events == ["open", "close"]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    errors = [r["errors"] for r in report["results"]]
    assert len(errors) == 3 and all(
        any("ledger 'books' did not start: no such book" in e for e in case) for case in errors
    )
    assert api.completions == []  # no model call without the tools the agent is written with


def test_a_tool_that_cannot_answer_fails_only_the_case_that_called_it(
    tmp_path: Path, api: FakeOpenAI, events: list[str]
) -> None:
    cases = (
        "  - {name: fine, input: 'look up a', expected_tools: [books_lookup]}\n"
        "  - {name: broken, input: 'look up gone', expected_tools: [books_lookup]}\n"
    )

    def model(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return "ok"
        return {
            "tool_calls": [
                {"name": "books_lookup", "arguments": {"key": body["messages"][1]["content"].split()[-1]}}
            ]
        }

    api.default = model
    path = _agent_yaml(tmp_path, api, ledger="prefix: 'v-', fail: call", cases=cases)
    _run(path)
    report = {
        r["test_name"]: r for r in json.loads((tmp_path / "out" / "report.json").read_text())["results"]
    }
    assert (report["fine"]["passed"], report["fine"]["errors"]) == (True, [])
    assert report["broken"]["passed"] is False
    assert any("ledger 'books' is gone" in e for e in report["broken"]["errors"])
    assert events == ["open", "close"]


@pytest.mark.parametrize(
    ("ledger", "message"),
    [
        ("prefix: 'v-', colour: red", "tools[1] (books, type ledger): unknown key(s) ['colour']"),
        ("fail: never", "tools[1] (books, type ledger): prefix: required"),
    ],
)
def test_an_entry_its_kind_refuses_fails_the_agents_load_naming_the_tool(
    tmp_path: Path, api: FakeOpenAI, events: list[str], ledger: str, message: str
) -> None:
    path = _agent_yaml(tmp_path, api, ledger=ledger)
    with pytest.raises(
        AgentLoadError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")
    ):
        load_target.__wrapped__(f"openai:{path}")
    assert events == []  # validated without opening anything


def test_a_tool_kind_nobody_knows_is_refused(tmp_path: Path, api: FakeOpenAI) -> None:
    path = _agent_yaml(tmp_path, api)
    path.write_text(path.read_text().replace("type: ledger", "type: telepathy"))
    with pytest.raises(AgentLoadError, match="type 'telepathy' is not a tool kind; known: function, "):
        load_target.__wrapped__(f"openai:{path}")


def test_two_tools_of_one_name_are_refused_when_opened(
    tmp_path: Path, api: FakeOpenAI, events: list[str]
) -> None:
    path = _agent_yaml(tmp_path, api)
    path.write_text(path.read_text().replace("name: clock,", "name: books_lookup,"))
    request = AgentRequest(case_id="c", turn_id="t", input="x", thread_id="x")
    with pytest.raises(
        ToolOpenError, match="tool 'books' offers a tool named 'books_lookup', as a function tool does"
    ):
        _invoke(f"openai:{path}", request)
    assert events == ["open", "close"]


def test_an_mcp_tool_without_the_mcp_extra_is_refused_when_the_agent_loads_saying_how_to_get_it(
    tmp_path: Path, api: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _agent_yaml(tmp_path, api, cases="")
    path.write_text(
        path.read_text().replace("type: ledger, prefix: 'v-'", "type: mcp, command: npx, args: [x]")
    )
    monkeypatch.setitem(sys.modules, "mcp", None)  # as on a machine without the extra
    with pytest.raises(AgentLoadError, match=r"MCP tools need the mcp package: pip install 'proctor\[mcp\]'"):
        load_target.__wrapped__(f"openai:{path}")
