"""Tools an agent's tool loop runs besides Python functions: the runner contract, the
registry of kinds, and their per-run lifetime."""

from proctor.agents.tools.registry import HOLODECK_TOOL_TYPES, RUNNERS, retrieval_tool_names
from proctor.agents.tools.runner import (
    RunnerFactory,
    ToolCallError,
    ToolContext,
    ToolOpenError,
    ToolRunner,
)
from proctor.agents.tools.scope import RunScope, RunScopeClosed
from proctor.agents.tools.toolbox import ToolBox

__all__ = [
    "HOLODECK_TOOL_TYPES",
    "RUNNERS",
    "RunScope",
    "RunScopeClosed",
    "RunnerFactory",
    "ToolBox",
    "ToolCallError",
    "ToolContext",
    "ToolOpenError",
    "ToolRunner",
    "retrieval_tool_names",
]
