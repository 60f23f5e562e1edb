"""HoloDeck's global `mcp_servers` join the agent's tools, as HoloDeck's ConfigLoader merges them:
appended unless the agent has a tool of that name, then checked like any tool entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.loaders import SuiteError, load_suite
from proctor.loaders.holodeck.config import with_global_config

AGENT = """\
name: desk
model: {provider: openai, name: gpt-4o}
instructions: {inline: Help.}
tools:
  - {name: memory, type: mcp, description: The agent's own, command: npx, args: [-y, my-memory]}
test_cases:
  - {name: one, input: hi, expected_tools: [search_nodes]}
"""


def _servers(*servers: dict) -> str:
    return json.dumps({"mcp_servers": list(servers)})


def test_global_servers_are_added_unless_the_agent_has_the_name(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        _servers(
            {"name": "memory", "description": "global", "command": "npx", "args": ["-y", "other"]},
            {"name": "files", "description": "global", "command": "npx", "args": ["-y", "fs", "./data"]},
        )
    )
    document, notes = with_global_config(
        {"name": "desk", "tools": [{"name": "memory", "type": "mcp"}]}, tmp_path
    )
    assert document["tools"] == [
        {"name": "memory", "type": "mcp"},  # the agent's own wins
        {
            "type": "mcp",
            "name": "files",
            "description": "global",
            "command": "npx",
            "args": ["-y", "fs", "./data"],
        },
    ]
    assert any("mcp_servers 'memory' not added" in note for note in notes)
    assert any("mcp_servers 'files' added to the agent's tools" in note for note in notes)


def test_a_global_server_is_checked_as_an_agent_tool_is(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(AGENT)
    (tmp_path / "config.yaml").write_text(
        _servers({"name": "files", "description": "d", "command": "python"})
    )
    with pytest.raises(SuiteError) as error:
        load_suite(tmp_path / "agent.yaml")
    assert "tools[1].command" in str(error.value)  # HoloDeck's npx, node, uvx or docker
