"""A case on its way through the stages: the data the pipeline, the runtime and chunks share.

Kept in a module of its own, which imports no stage, so that what carries cases (chunks) and
what stores them (the runtime) can name it without importing the pipeline that moves them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from proctor.models.case import Case
from proctor.models.outcome import AgentTurn, CaseOutcome


@dataclass
class AgentCheckpoint:
    """What a resumed run reuses of a case whose agent had finished before the run stopped:
    its turns are stored, so the agent is not called again; only its metrics run."""

    turns: list[AgentTurn]
    agent_ms: float
    started_at: datetime


@dataclass
class CaseWork:
    """A case on its way through the stages, with its position in the suite and which
    repeat of it this is (`--repeat N` runs every case N times)."""

    position: int
    case: Case
    attempt: int = 0
    checkpoint: AgentCheckpoint | None = None
    outcome: CaseOutcome = field(init=False)
    # Time in the agent stage that is not the agent's: waiting for a model-call slot, the
    # simulated user's turns. Subtracted, so `agent_ms` (and max_execution_time) is the agent's own.
    not_agent_ms: float = 0.0

    def __post_init__(self) -> None:
        self.outcome = CaseOutcome(case_id=self.case.case_id, attempt=self.attempt)
