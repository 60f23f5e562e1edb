"""Which runner answers each HoloDeck tool `type` (see `proctor.agents.tools.runner` for the
contract). `function` tools are not here: the agent calls their Python function itself.

Each factory imports its kind's module when called, so an agent without that kind never
imports its dependencies (the `mcp` SDK, a vector store).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from proctor.agents.tools.runner import RunnerFactory, ToolContext, ToolRunner


def _vectorstore(entry: Mapping[str, Any], context: ToolContext) -> ToolRunner:
    from proctor.agents.tools.retrieval.runners import VectorstoreRunner

    return VectorstoreRunner(entry, context)


def _mcp(entry: Mapping[str, Any], context: ToolContext) -> ToolRunner:
    from proctor.agents.tools.mcp_runner import mcp_runner

    return mcp_runner(entry, context)


def _hierarchical_document(entry: Mapping[str, Any], context: ToolContext) -> ToolRunner:
    from proctor.agents.tools.retrieval.runners import HierarchicalDocumentRunner

    return HierarchicalDocumentRunner(entry, context)


def _prompt(entry: Mapping[str, Any], context: ToolContext) -> ToolRunner:
    from proctor.agents.tools.prompt_runner import PromptRunner

    return PromptRunner(entry, context)


RUNNERS: dict[str, RunnerFactory] = {
    "vectorstore": _vectorstore,
    "mcp": _mcp,
    "hierarchical_document": _hierarchical_document,
    "prompt": _prompt,
}

# HoloDeck's tool kinds (src/holodeck/models/tool.py, `ToolUnion`): every one has a runner.
HOLODECK_TOOL_TYPES = frozenset({"function", *RUNNERS})


def retrieval_tool_names(entries: Iterable[Mapping[str, Any]]) -> list[str]:
    """The tool call names whose results are a case's retrieval context (HoloDeck's
    `TestExecutor._get_retrieval_tool_names`): each vectorstore and hierarchical_document tool's
    `<name>_search` (the name HoloDeck's backends give its search), and the `name` of an MCP
    entry marked `is_retrieval`. HoloDeck compares call names with that entry name exactly, so
    of an MCP server's tools, which keep their own names, only one named like the entry counts."""
    names = []
    for entry in entries:
        kind, name = entry.get("type"), entry.get("name")
        if kind in ("vectorstore", "hierarchical_document"):
            names.append(f"{name}_search")
        elif kind == "mcp" and entry.get("is_retrieval"):
            names.append(str(name))
    return sorted(set(names))
