"""Agents under test: how they are found, called, and what they may return."""

from proctor.agents.protocol import (
    AgentOutputError,
    AgentRequest,
    AgentResponse,
    coerce_response,
    thread_id_for,
)
from proctor.agents.targets import (
    AgentAbortError,
    AgentInvoker,
    AgentLoadError,
    AgentThreadsClosed,
    AgentTimeoutError,
    load_target,
)

__all__ = [
    "AgentAbortError",
    "AgentInvoker",
    "AgentLoadError",
    "AgentOutputError",
    "AgentRequest",
    "AgentResponse",
    "AgentThreadsClosed",
    "AgentTimeoutError",
    "coerce_response",
    "load_target",
    "thread_id_for",
]
