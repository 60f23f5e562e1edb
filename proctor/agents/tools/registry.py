"""Which runner answers each HoloDeck tool `type` (see `proctor.agents.tools.runner` for the
contract). `function` tools are not here: the agent calls their Python function itself.

A type listed in `NOT_RUN` is a HoloDeck kind no runner serves yet: its calls are answered
from the case's canned `metadata.tool_results`, and loading the agent warns about it.
Each factory imports its kind's module when called, so an agent without that kind never
imports its dependencies (the `mcp` SDK, a vector store).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proctor.agents.tools.runner import RunnerFactory, ToolContext, ToolRunner


def _vectorstore(entry: Mapping[str, Any], context: ToolContext) -> ToolRunner:
    from proctor.retrieval.runners import VectorstoreRunner

    return VectorstoreRunner(entry, context)


def _mcp(entry: Mapping[str, Any], context: ToolContext) -> ToolRunner:
    from proctor.agents.tools.mcp_runner import mcp_runner

    return mcp_runner(entry, context)


def _hierarchical_document(entry: Mapping[str, Any], context: ToolContext) -> ToolRunner:
    from proctor.retrieval.runners import HierarchicalDocumentRunner

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

# HoloDeck's tool kinds (src/holodeck/models/tool.py, `ToolUnion`) without a runner yet.
NOT_RUN = frozenset({"vectorstore", "hierarchical_document", "mcp", "prompt"} - set(RUNNERS))

HOLODECK_TOOL_TYPES = frozenset({"function", *RUNNERS, *NOT_RUN})
