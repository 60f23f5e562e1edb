"""The MCP server HoloDeck's legal samples give their agents (legal-summarization, legal-assistant:
`npx -y @modelcontextprotocol/server-filesystem ./data`), the real npm package: `./data` is
resolved against the agent.yaml's folder as HoloDeck resolves it, and what the model reads is
the file on disk."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from proctor.cli import EXIT_PASSED
from tests.agents.tools.conftest import run, write_agent
from tests.fakes import FakeOpenAI

pytest.importorskip("mcp", reason="MCP tools need the `mcp` extra: pip install -e '.[mcp]'")
pytestmark = pytest.mark.needs_extra  # CI runs these again with the mcp extra installed
if shutil.which("npx") is None:
    pytest.skip("the server is an npm package: npx is needed", allow_module_level=True)

SUITE = """\
name: clauses
evaluations: {metrics: [{type: standard, metric: equality}]}
test_cases:
  - name: governing_law
    input: Which law governs the NDA on file?
    ground_truth: Delaware
    expected_tools: [list_allowed_directories, {name: read_text_file}]
"""


def test_the_legal_samples_filesystem_server_reads_the_agents_data_folder(
    tmp_path: Path, api: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # npx's cache: this test's own
    agent_dir = tmp_path / "agent"
    (agent_dir / "data").mkdir(parents=True)
    (agent_dir / "data" / "nda.txt").write_text("MUTUAL NDA. Governing law: Delaware.\n")

    def model(body: dict[str, Any]) -> Any:
        messages = body["messages"]
        if messages[-1]["role"] == "user":
            return {"tool_calls": [{"name": "list_allowed_directories", "arguments": {}}]}
        if len([m for m in messages if m["role"] == "tool"]) == 1:
            allowed = messages[-1]["content"].splitlines()[-1].strip()
            return {"tool_calls": [{"name": "read_text_file", "arguments": {"path": f"{allowed}/nda.txt"}}]}
        return messages[-1]["content"].split("Governing law: ")[1].strip(" .\n")

    api.default = model
    entry = {
        "name": "filesystem",
        "type": "mcp",
        "description": "Access and read document files for analysis",
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-filesystem", "./data"],
    }
    agent = write_agent(agent_dir, api, entry, suite=SUITE)
    code, report = run(agent)
    assert code == EXIT_PASSED, report
    received = [m["content"] for c in api.completions for m in c["body"]["messages"] if m["role"] == "tool"]
    assert str((agent_dir / "data").resolve()) in received[0]  # ./data, from the agent.yaml's folder
    assert "Governing law: Delaware." in received[-1]
    [result] = report["results"]
    assert result["tool_calls"] == ["list_allowed_directories", "read_text_file"] and result["passed"] is True
