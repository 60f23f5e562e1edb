"""A HoloDeck `type: mcp` tool entry, checked and turned into what the `mcp` SDK's transports
take, field by field as HoloDeck's OpenAI Agents backend builds its servers
(`holodeck.lib.backends.openai_agents_mcp` and `mcp_bridge`):

- stdio: `command` + `args` (an arg starting with `./` or `../` is resolved against the
  agent.yaml's folder), `env` over `env_file` (`${VAR}` in `env` resolved when the server
  starts), `config` passed whole as the `MCP_CONFIG` variable, `encoding`; the server sees only
  the SDK's safe default environment (HOME, LOGNAME, PATH, SHELL, TERM, USER) plus these, and
  starts in the agent.yaml's folder.
- sse / http: `url` and `headers` (`${VAR}` in them resolved when connecting), `timeout` (5 s) and
  `sse_read_timeout` (300 s), the SDK server classes' defaults; http also `terminate_on_close`.
- `config.allowed_tools`: only those of the server's tools are offered (HoloDeck's static filter).
- `request_timeout`: each request's time limit (HoloDeck's model says so; its backend leaves
  the SDK's 5 s).
- websocket: the SDK has no WebSocket client; as HoloDeck does, the server is skipped with a
  warning and none of its tools are offered.

A `command` in HoloDeck's own files is one of `npx`, `node`, `uvx`, `docker` (checked when the
suite loads); Proctor's own `openai:` agent configs may start any executable.
A variable's value never reaches an error: only its name does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from proctor.env import ENV_REFERENCE
from proctor.models.holodeck_tools import MCPTool

DEFAULT_HTTP_TIMEOUT_S = 5.0  # agents.mcp MCPServerSse / MCPServerStreamableHttp defaults
DEFAULT_SSE_READ_TIMEOUT_S = 300.0

_STDIO_ONLY = ("command", "args", "env", "env_file", "encoding", "config")
_URL_ONLY = ("url", "headers", "timeout", "sse_read_timeout", "terminate_on_close")


class McpEntry(MCPTool):
    """HoloDeck's `MCPTool`; the executable is not limited to HoloDeck's four, which its own
    suite loader checks for HoloDeck files."""

    command: str | None = None  # type: ignore[assignment]


@dataclass(frozen=True)
class McpSettings:
    """One MCP tool entry, checked: what its server needs to start or be reached."""

    entry: McpEntry
    base_dir: Path
    url_template: str | None = None  # `url` as written: its `${VAR}`s resolved only to connect

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def skipped(self) -> bool:
        return self.entry.transport == "websocket"

    @property
    def allowed_tools(self) -> frozenset[str] | None:
        allowed = (self.entry.config or {}).get("allowed_tools")
        return frozenset(allowed) if allowed else None

    def args(self) -> list[str]:
        return [
            str((self.base_dir / arg).resolve()) if arg.startswith(("./", "../")) else arg
            for arg in self.entry.args or []
        ]

    def env(self) -> tuple[dict[str, str], list[str]]:
        """The server's extra environment, and the values that came from `${VAR}`s (secrets,
        to be cut out of anything the server prints)."""
        resolved: dict[str, str] = {}
        secrets: list[str] = []
        if self.entry.env_file:
            from_file = read_env_file(self.base_dir / self.entry.env_file)
            resolved.update(from_file)
            secrets += [value for value in from_file.values() if value]
        for key, value in (self.entry.env or {}).items():
            resolved[key] = _resolve(value, secrets)
        if self.entry.config:
            resolved["MCP_CONFIG"] = json.dumps(self.entry.config)
        return resolved, secrets

    def headers(self) -> tuple[dict[str, str], list[str]]:
        secrets: list[str] = []
        return {key: _resolve(value, secrets) for key, value in (self.entry.headers or {}).items()}, secrets

    def url(self, secrets: list[str]) -> str:
        """The server's URL, its `${VAR}`s resolved (their values added to `secrets`)."""
        return _resolve(self.url_template or "", secrets)

    @property
    def timeout_s(self) -> float:
        return self.entry.timeout if self.entry.timeout is not None else DEFAULT_HTTP_TIMEOUT_S

    @property
    def sse_read_timeout_s(self) -> float:
        return (
            self.entry.sse_read_timeout
            if self.entry.sse_read_timeout is not None
            else DEFAULT_SSE_READ_TIMEOUT_S
        )

    def describe(self) -> str:
        """Where the server is, for errors: the command line (no environment) or the URL."""
        if self.entry.transport == "stdio":
            return " ".join([self.entry.command or "", *(self.entry.args or [])])
        return str(self.url_template)  # as written: a variable's value never shows


def _resolve(value: str, secrets: list[str]) -> str:
    def value_of(match: Any) -> str:
        found = os.environ.get(match.group(1))
        if found is None:  # checked at load; unset since
            raise ValueError(f"environment variable {match.group(1)} is not set")
        secrets.append(found)
        return found

    return ENV_REFERENCE.sub(value_of, value)


def read_env_file(path: Path) -> dict[str, str]:
    """HoloDeck's `load_env_file`: KEY=VALUE lines, `#` comments and blank lines skipped."""
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            found[key.strip()] = value.strip()
    return found


def mcp_settings(entry: Mapping[str, Any], base_dir: Path, warn: Callable[[str], None]) -> McpSettings:
    """The entry checked as HoloDeck's model checks it; what Proctor cannot honour is said."""
    written = dict(entry)
    url_template = written.get("url") if isinstance(written.get("url"), str) else None
    if url_template is not None:  # checked with its variables' values, kept as written
        written["url"] = ENV_REFERENCE.sub(lambda m: os.environ.get(m.group(1), m.group(0)), url_template)
    try:
        tool = McpEntry.model_validate(written)
    except ValidationError as error:
        raise ValueError(
            "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(entry)'}: {e['msg'].removeprefix('Value error, ')}"
                for e in error.errors()
            )
        ) from None
    problems = []
    written_url = {"url": url_template} if url_template else {}
    for where, mapping in (("env", tool.env), ("headers", tool.headers), ("", written_url)):
        for key, value in (mapping or {}).items():
            missing = [name for name in ENV_REFERENCE.findall(value) if name not in os.environ]
            if missing:
                at = f"{where}.{key}" if where else key
                problems.append(f"{at}: environment variable(s) not set: {', '.join(missing)}")
    if tool.env_file and not (base_dir / tool.env_file).is_file():
        problems.append(f"env_file: {base_dir / tool.env_file} not found")
    allowed = (tool.config or {}).get("allowed_tools")
    if allowed is not None and not (isinstance(allowed, list) and all(isinstance(a, str) for a in allowed)):
        problems.append("config.allowed_tools: expected a list of tool names")
    if problems:
        raise ValueError("; ".join(problems))
    _warn_unused(tool, warn)
    return McpSettings(tool, base_dir, url_template)


def _warn_unused(tool: McpEntry, warn: Callable[[str], None]) -> None:
    set_fields = tool.model_fields_set
    prefix = f"MCP tool {tool.name!r}"
    if tool.transport == "websocket":
        warn(
            f"{prefix}: transport websocket: the mcp SDK has no WebSocket client; the server is "
            "skipped and none of its tools are offered (as HoloDeck's OpenAI backend does)"
        )
        return
    unused = _URL_ONLY if tool.transport == "stdio" else _STDIO_ONLY
    if tool.transport == "sse":
        unused += ("terminate_on_close",)
    for field in unused:
        if field in set_fields and not (field == "config" and set(tool.config or {}) <= {"allowed_tools"}):
            what = "MCP_CONFIG is only given to a stdio server" if field == "config" else "not used"
            warn(f"{prefix}: {field} has no effect with transport {tool.transport} ({what})")
    if tool.is_retrieval:
        warn(
            f"{prefix}: is_retrieval counts, as in HoloDeck, only a call named exactly {tool.name!r} (the "
            "entry's name) as retrieval: HoloDeck compares call names with the entry's name, and the "
            "server's tools keep their own names, so their results are not in the RAG judges' "
            "retrieval_context unless one of them is named so"
        )
    if not tool.load_tools:
        warn(
            f"{prefix}: load_tools: false is not honoured (HoloDeck does not read it either): "
            "the server's tools are offered"
        )
