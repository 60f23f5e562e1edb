"""MCP tools over stdio: a real server written with the `mcp` SDK, started once per run by
Proctor, its tools offered with their own schemas, each call answered by it and recorded on the
turn, the server stopped (its own process) when the run ends."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from proctor.agents import AgentInvoker, AgentLoadError, AgentRequest, load_target
from proctor.cli import EXIT_PASSED, main
from tests.agents.tools.conftest import (
    MCP_SERVER,
    SUITE,
    alive,
    run,
    scripted_model,
    started_pids,
    stdio_entry,
    write_agent,
)
from tests.fakes import FakeOpenAI, Fault
from tests.fakes.processes import running

pytest.importorskip("mcp", reason="MCP tools need the `mcp` extra: pip install -e '.[mcp]'")
pytestmark = pytest.mark.needs_extra  # CI runs these again with the mcp extra installed


def test_a_run_starts_the_server_once_and_its_answers_pass_the_cases(tmp_path: Path, api: FakeOpenAI) -> None:
    pidfile = tmp_path / "pids"
    agent = write_agent(tmp_path, api, stdio_entry(pidfile))
    code, report = run(agent, "--concurrency", "3")
    assert code == EXIT_PASSED, report
    assert {r["test_name"]: r["passed"] for r in report["results"]} == {
        "shipped": True,
        "pending": True,
        "sum": True,
    }
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
    tool_messages = [
        m["content"] for c in api.completions for m in c["body"]["messages"] if m["role"] == "tool"
    ]
    assert sorted(tool_messages) == sorted(
        [
            json.dumps({"order_id": "A-100", "status": "shipped", "carrier": "DHL", "total": 42.5}),
            json.dumps({"order_id": "B-200", "status": "pending", "carrier": None, "total": 7.0}),
            "42",
        ]
    )


def test_the_server_gets_its_env_config_and_folder_and_only_the_allowed_tools_are_offered(
    tmp_path: Path, api: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORDERS_GREETING", "bonjour")
    (tmp_path / "srv.py").write_text(
        f"import runpy, sys\nrunpy.run_path({str(MCP_SERVER)!r}, run_name='__main__')\n"
    )
    config = {"allowed_tools": ["whoami", "show_config"], "region": "eu"}
    entry = stdio_entry(tmp_path / "pids", args=["./srv.py", "stdio"], config=config)
    entry["env"] |= {"GREETING": "${ORDERS_GREETING}"}
    suite = (
        "name: env\ntest_cases:\n"
        "  - {name: who, input: whoami, expected_tools: [whoami]}\n"
        "  - {name: config, input: show_config, expected_tools: [show_config]}\n"
    )
    agent = write_agent(tmp_path, api, entry, suite=suite)
    code, report = run(agent, "--concurrency", "1")
    assert code == EXIT_PASSED, report
    [pid] = started_pids(tmp_path / "pids")
    received = {m["content"] for c in api.completions for m in c["body"]["messages"] if m["role"] == "tool"}
    assert json.dumps({"pid": pid, "greeting": "bonjour", "cwd": str(tmp_path)}) in received
    assert json.dumps(config) in received  # the whole config, as MCP_CONFIG (HoloDeck's mcp_bridge)
    offered = [tool["function"]["name"] for tool in api.completions[0]["body"]["tools"]]
    assert offered == ["whoami", "show_config"]


def test_a_server_that_dies_mid_run_fails_only_the_cases_that_need_it_saying_why(
    tmp_path: Path, api: FakeOpenAI
) -> None:
    pidfile = tmp_path / "pids"

    def model(body: dict) -> object:
        asked = body["messages"][1]["content"]
        if asked == "add 2 40 after the crash" and body["messages"][-1]["role"] == "user":
            deadline = time.monotonic() + 60  # this case's call goes to a server that is gone
            while not (started_pids(pidfile) and not alive(started_pids(pidfile)[0])):
                assert time.monotonic() < deadline, "the server never died"
                time.sleep(0.1)
        return scripted_model(body)

    api.default = model
    suite = (
        "name: crash\nevaluations: {metrics: [{type: standard, metric: equality}]}\ntest_cases:\n"
        "  - {name: crash, input: crash, expected_tools: [crash]}\n"
        "  - {name: after, input: add 2 40 after the crash, ground_truth: '42'}\n"
        "  - {name: no_tool, input: hello, ground_truth: no tool needed}\n"
    )
    agent = write_agent(tmp_path, api, stdio_entry(pidfile), suite=suite)
    code, report = run(agent, "--concurrency", "3")
    results = {r["test_name"]: r for r in report["results"]}
    assert results["no_tool"]["passed"] is True
    crash, after = " ".join(results["crash"]["errors"]), " ".join(results["after"]["errors"])
    assert "MCP server 'orders' could not answer 'crash'" in crash
    assert "crash: the test server exits now" in crash  # the server's last words, from its stderr
    assert "MCP server 'orders' could not answer 'add'" in after
    assert len(started_pids(pidfile)) == 1  # not restarted behind the cases' backs


def test_an_entry_that_cannot_work_is_refused_when_the_agent_loads(
    tmp_path: Path, api: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    cases = [
        (
            {"env": {"TOKEN": "${NOT_SET_ANYWHERE}"}},
            "env.TOKEN: environment variable(s) not set: NOT_SET_ANYWHERE",
        ),
        ({"transport": "http"}, "'url' is required for http transport"),
        (
            {"transport": "http", "url": "http://127.0.0.1:9/mcp?k=${NOT_SET_ANYWHERE}"},
            "url: environment variable(s) not set: NOT_SET_ANYWHERE",
        ),
        ({"env_file": "missing.env"}, "env_file: "),
        ({"colour": "red"}, "colour: Extra inputs are not permitted"),
        ({"config": {"allowed_tools": "add"}}, "config.allowed_tools: expected a list of tool names"),
    ]
    for change, message in cases:
        agent = write_agent(tmp_path, api, stdio_entry(tmp_path / "pids") | change)
        with pytest.raises(AgentLoadError) as error:
            load_target.__wrapped__(f"openai:{agent}")
        assert "tools[0] (orders, type mcp)" in str(error.value) and message in str(error.value), str(
            error.value
        )
    assert not (tmp_path / "pids").exists()  # nothing was started to find out


def test_a_websocket_server_is_skipped_with_a_warning_as_holodeck_does(
    tmp_path: Path, api: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    entry = {
        "name": "ws",
        "type": "mcp",
        "description": "d",
        "transport": "websocket",
        "url": "ws://127.0.0.1:9/x",
    }
    agent = write_agent(tmp_path, api, entry, stdio_entry(tmp_path / "pids"))
    loaded = load_target.__wrapped__(f"openai:{agent}")
    assert any("transport websocket" in w and "none of its tools are offered" in w for w in loaded.warnings)
    response = _invoke(loaded, "add 2 40")
    assert response.answer == "42"
    assert "ws" not in {tool["function"]["name"] for tool in api.completions[0]["body"]["tools"]}
    code, _ = run(agent)  # and the run says so, naming the agent's file and the tool
    assert code == EXIT_PASSED
    assert f"{agent}: MCP tool 'ws': transport websocket" in caplog.text


def test_a_command_that_is_not_there_fails_each_case_with_that_reason(
    tmp_path: Path, api: FakeOpenAI
) -> None:
    agent = write_agent(tmp_path, api, stdio_entry(tmp_path / "pids", command="no-such-mcp-server-7"))
    code, report = run(agent)
    assert all(
        "MCP server 'orders' did not start: command 'no-such-mcp-server-7' not found on PATH"
        in " ".join(r["errors"])
        for r in report["results"]
    )
    assert api.completions == []


def test_called_outside_a_run_the_server_lives_for_the_call(tmp_path: Path, api: FakeOpenAI) -> None:
    agent = write_agent(tmp_path, api, stdio_entry(tmp_path / "pids"))
    response = _invoke(load_target.__wrapped__(f"openai:{agent}"), "Where is order A-100?")
    assert response.answer == "shipped via DHL"
    assert [(c.name, c.args) for c in response.tool_calls] == [("lookup_order", {"order_id": "A-100"})]
    assert json.loads(response.tool_calls[0].result)["carrier"] == "DHL"  # recorded as the model got it
    [pid] = started_pids(tmp_path / "pids")
    assert not alive(pid)


def _invoke(agent, text: str):
    invoker = AgentInvoker(agent, max_threads=1, timeout_s=60)
    try:
        return asyncio.run(invoker.invoke(AgentRequest(case_id="c", turn_id="t", input=text, thread_id="x")))
    finally:
        invoker.close()


STOPPED_RUN = """
import sys
from proctor.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_run_stopped_by_a_signal_stops_its_server(tmp_path: Path, api: FakeOpenAI, signum: int) -> None:
    """Ctrl-C and SIGTERM: the run stops its server (closes its stdin, then ends its process
    group). SIGKILL leaves Proctor no say: the server's stdin closes with Proctor, and a server
    that ends at the end of its input, as MCP's stdio shutdown expects, ends."""
    pidfile = tmp_path / "pids"
    api.script(
        {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-100"}}]},
        Fault.hang(120),  # the model is thinking when the run is stopped
    )
    agent = write_agent(tmp_path, api, stdio_entry(pidfile), suite=SUITE.split("  - name: pending")[0])
    args = [
        "run",
        str(tmp_path / "suite.yaml"),
        "--agent",
        f"openai:{agent}",
        "--no-prefect",
        "--no-progress",
    ]
    args += ["--db", f"sqlite:///{tmp_path / 'r.db'}", "--output", str(tmp_path / "out")]
    log = tmp_path / "proctor.log"
    env = {**os.environ, "ORDERS_MODEL_KEY": "sk-orders"}
    with running([sys.executable, "-c", STOPPED_RUN, *args], env=env, log=log) as proctor:
        deadline = time.monotonic() + 120
        while len(api.completions) < 2:  # the tool answered, the model called again
            assert proctor.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        [server] = started_pids(pidfile)
        assert alive(server)
        os.kill(proctor.pid, signum)  # Proctor itself: the server is not in its process group
        proctor.wait(120)
    expected = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}[signum]
    assert proctor.returncode == expected, log.read_text()
    deadline = time.monotonic() + 30
    while alive(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(server), f"the MCP server {server} outlived the run"


def test_mcp_servers_of_the_global_config_join_the_agents_tools_as_holodeck_merges_them(
    tmp_path: Path, api: FakeOpenAI
) -> None:
    server = stdio_entry(tmp_path / "pids")
    del server["type"]  # HoloDeck's global MCPTool: its type is mcp
    (tmp_path / "config.yaml").write_text(json.dumps({"mcp_servers": [server]}))
    agent = write_agent(
        tmp_path, api, {"name": "clock", "description": "The time", "function": "tools.py:clock"}
    )
    (tmp_path / "tools.py").write_text("def clock():\n    return '09:00'\n")
    # the cases apart: a HoloDeck suite beside that config.yaml would get (and check) the server too
    (tmp_path / "cases").mkdir()
    (tmp_path / "suite.yaml").rename(tmp_path / "cases" / "suite.yaml")
    args = [
        "--no-prefect",
        "--no-progress",
        "--db",
        f"sqlite:///{tmp_path / 'r.db'}",
        "--output",
        str(tmp_path / "out"),
    ]
    code = main(["run", str(tmp_path / "cases" / "suite.yaml"), "--agent", f"openai:{agent}", *args])
    assert code == EXIT_PASSED
    assert len(started_pids(tmp_path / "pids")) == 1
    offered = [tool["function"]["name"] for tool in api.completions[0]["body"]["tools"]]
    assert offered[0] == "clock" and "lookup_order" in offered  # the agent's tools, then the global server's
    # an agent tool of the same name wins: the global server is not added
    agent.write_text(agent.read_text().replace("name: clock", "name: orders").replace('"clock"', '"orders"'))
    load_target.cache_clear()
    loaded = load_target(f"openai:{agent}")
    assert [tool.name for tool in loaded.config.tools] == ["orders"] and not loaded.runner_tools


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_a_prefect_flow_run_starts_the_server_once_and_stops_it(tmp_path: Path, api: FakeOpenAI) -> None:
    from proctor.flows.evaluate import run_evaluation
    from proctor.models.request import EvaluationRequest

    agent = write_agent(tmp_path, api, stdio_entry(tmp_path / "pids"))
    request = EvaluationRequest(
        suite=str(tmp_path / "suite.yaml"),
        agent=f"openai:{agent}",
        database_url=f"sqlite:///{tmp_path / 'r.db'}",
        report_dir=str(tmp_path / "out"),
    )
    summary = asyncio.run(run_evaluation(request))
    assert (summary.total, summary.passed) == (3, 3)
    [pid] = started_pids(tmp_path / "pids")
    assert not alive(pid)
