"""HoloDeck's global configuration: `~/.holodeck/config.yaml` and the project's `config.yaml`
beside the agent.yaml (the project's overrides the user's), merged as HoloDeck merges them.

`providers`, `vectorstores` and `mcp_servers` change an evaluation: the entry named by a model's
`provider` (by key, else by its own `provider` field) fills the keys the model does not set, for
the agent's model and the evaluations model; a vectorstore tool's `database: name` becomes the
named store; each of `mcp_servers` is added to the agent's tools unless a tool of the agent has
its name (HoloDeck's `ConfigLoader._merge_mcp_servers`). The other sections are named in a
warning, with why they are not used.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from proctor.loaders.documents import read_document
from proctor.loaders.errors import Problem, SuiteError
from proctor.loaders.holodeck.tools import resolve_database_references

CONFIG_NAMES = ("config.yaml", "config.yml")
USER_CONFIG_DIR = Path.home() / ".holodeck"
GLOBAL_KEYS = frozenset({"providers", "vectorstores", "execution", "deployment", "mcp_servers"})


def _config_in(folder: Path) -> tuple[Path | None, dict[str, Any]]:
    for name in CONFIG_NAMES:
        path = folder / name
        if path.is_file():
            loaded = read_document(path)
            if not isinstance(loaded, dict):
                raise SuiteError([Problem(str(path), "", "expected a mapping (HoloDeck's global config)")])
            unknown = sorted(set(loaded) - GLOBAL_KEYS)
            if unknown:
                valid = ", ".join(sorted(GLOBAL_KEYS))
                raise SuiteError(
                    [Problem(str(path), key, f"unknown key; valid keys: {valid}") for key in unknown]
                )
            return path, loaded
    return None, {}


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> None:
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value)
        else:
            base[key] = value


def _merge_provider(model: Any, providers: dict[str, Any]) -> None:
    if not isinstance(model, dict) or not isinstance(model.get("provider"), str):
        return
    entry = providers.get(model["provider"])
    if entry is None:
        entry = next(
            (p for p in providers.values() if isinstance(p, dict) and p.get("provider") == model["provider"]),
            None,
        )
    for key, value in (entry or {}).items():
        model.setdefault(key, value)


def with_global_config(document: dict[str, Any], agent_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """The agent.yaml with the global providers merged in, and what was read or left unused."""
    user_path, merged = _config_in(USER_CONFIG_DIR)
    project_path, project = _config_in(agent_dir)
    _deep_merge(merged, project)
    read = [str(path) for path in (user_path, project_path) if path is not None]
    if not read:
        return document, []
    document = copy.deepcopy(document)
    providers = merged.get("providers") or {}
    if isinstance(providers, dict):
        _merge_provider(document.get("model"), providers)
        evaluations = document.get("evaluations")
        if isinstance(evaluations, dict):
            _merge_provider(evaluations.get("model"), providers)
    vectorstores = merged.get("vectorstores")
    notes = [f"HoloDeck global config read: {', '.join(read)} (providers merged into the models)"]
    if isinstance(vectorstores, dict):
        where = str(agent_dir / "agent.yaml")
        notes += resolve_database_references(document.get("tools"), vectorstores, where)
    notes += _merge_mcp_servers(document, merged.get("mcp_servers"), " / ".join(read))
    notes += [
        f"{' / '.join(read)}: {key} is not used "
        "(only providers, vectorstores and mcp_servers change an evaluation)"
        for key in sorted(GLOBAL_KEYS - {"providers", "vectorstores", "mcp_servers"})
        if key in merged
    ]
    return document, notes


def _merge_mcp_servers(document: dict[str, Any], servers: Any, source: str) -> list[str]:
    """The global MCP servers appended to the agent's tools, as HoloDeck appends them: skipped
    when an agent tool has the same name (the agent's wins). HoloDeck dumps each as its
    `MCPTool` model, so an entry without `type` is an MCP tool."""
    if not servers:
        return []
    if not isinstance(servers, list) or not all(isinstance(s, dict) for s in servers):
        raise SuiteError([Problem(source, "mcp_servers", "expected a list of MCP tool entries")])
    tools = document.get("tools")
    if not isinstance(tools, list):
        tools = document["tools"] = []
    taken = {tool.get("name") for tool in tools if isinstance(tool, dict)}
    notes = []
    for server in servers:
        if server.get("name") in taken:
            notes.append(
                f"{source}: mcp_servers {server.get('name')!r} not added: the agent has a tool of that name"
            )
            continue
        tools.append({"type": "mcp", **server})
        notes.append(
            f"{source}: mcp_servers {server.get('name')!r} added to the agent's tools (as HoloDeck adds it)"
        )
    return notes
