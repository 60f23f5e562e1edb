"""What running a case produced: agent turns, metric scores, the state it ended in.

`CaseOutcome` is the pipeline's own result record; `proctor.reporting.convert` turns it
into HoloDeck's `TestResult`, agentflow's `EvalCaseResult` and Vanna's `TestCaseResult`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from proctor.models.agentflow import ToolCall
from proctor.models.holodeck import MetricResult, ProcessedFileInput


class CaseState(StrEnum):
    """HoloDeck's test execution state machine."""

    PENDING = "PENDING"
    PROCESSING_FILES = "PROCESSING_FILES"
    FILES_READY = "FILES_READY"
    FILES_FAILED = "FILES_FAILED"
    EXECUTING_AGENT = "EXECUTING_AGENT"
    AGENT_COMPLETE = "AGENT_COMPLETE"
    AGENT_FAILED = "AGENT_FAILED"
    EVALUATING = "EVALUATING"
    COMPLETE = "COMPLETE"
    EVALUATION_FAILED = "EVALUATION_FAILED"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATES


FINAL_STATES = frozenset(
    {CaseState.FILES_FAILED, CaseState.AGENT_FAILED, CaseState.COMPLETE, CaseState.EVALUATION_FAILED}
)


class TokenUsage(BaseModel):
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    total_tokens: int = Field(default=0, ge=0)

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


class ScoredMetric(MetricResult):
    """HoloDeck's `MetricResult` plus the provenance needed to replay and compare scores."""

    args: dict[str, Any] = Field(default_factory=dict)
    metric_version: str = "1"
    details: dict[str, Any] = Field(default_factory=dict)
    reason: str | None = None
    judge_calls: int = Field(default=0, ge=0)
    cached_calls: int = Field(default=0, ge=0)
    prompt_tokens: int = Field(default=0, ge=0, description="Judge tokens paid for, failed attempts included")
    completion_tokens: int = Field(default=0, ge=0)
    saved_prompt_tokens: int = Field(default=0, ge=0, description="What the judge cache answered instead")
    saved_completion_tokens: int = Field(default=0, ge=0)

    def to_metric_result(self) -> MetricResult:
        return MetricResult.model_validate(self.model_dump(include=set(MetricResult.model_fields)))


# The turn metadata key under which an agent names the tools whose results are retrieved
# context (HoloDeck's vectorstore, hierarchical_document and `is_retrieval` MCP tools): what
# HoloDeck's RAG judges are shown as `retrieval_context` (`proctor.metrics.base.MetricContext`).
RETRIEVAL_TOOLS = "retrieval_tools"


class AgentTurn(BaseModel):
    """What the agent did with one user message."""

    turn_id: str
    input: str
    response: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    # How many model (inference) calls the agent made for this turn; None when it did not say.
    model_calls: int | None = Field(default=None, ge=0)
    latency_ms: float = Field(default=0.0, ge=0.0)
    error: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Set when the case is scored turn by turn (HoloDeck multi-turn): what this turn was
    # expected to answer, its own metric scores and tool check, and whether it passed.
    expected_response: str | None = None
    metrics: list[ScoredMetric] = Field(default_factory=list)
    tools_matched: bool | None = None
    tool_problems: list[str] = Field(default_factory=list)
    # HoloDeck's expected tools checked against this turn's calls (name, args, count), kept so
    # a report can show expected against actual calls when the check fails.
    expected_tools: list[dict[str, Any]] | None = None
    passed: bool | None = None


class CaseOutcome(BaseModel):
    """One case after the state machine ran: where it ended, why, and everything recorded."""

    model_config = ConfigDict(extra="forbid")

    case_id: str
    attempt: int = Field(default=0, ge=0, description="Which repeat of the case (0-based)")
    state: CaseState = CaseState.PENDING
    processed_files: list[ProcessedFileInput] = Field(default_factory=list)
    turns: list[AgentTurn] = Field(default_factory=list)
    metrics: list[ScoredMetric] = Field(default_factory=list)
    tools_matched: bool | None = None
    errors: list[str] = Field(default_factory=list)
    files_ms: float = 0.0
    agent_ms: float = 0.0
    evaluation_ms: float = 0.0
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None
    checkpointed: bool = Field(default=False, exclude=True)
    # What storing the case changed (characters no database can store, replaced) or could
    # not store, said next to its results rather than dropped silently.
    storage_notes: list[str] = Field(default_factory=list, exclude=True)

    @property
    def final_response(self) -> str | None:
        return self.turns[-1].response if self.turns else None

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for turn in self.turns for call in turn.tool_calls]

    @property
    def usage(self) -> TokenUsage:
        total = TokenUsage()
        for turn in self.turns:
            total = total + turn.usage
        return total

    @property
    def verdict_metrics(self) -> list[ScoredMetric]:
        """The metrics that decide pass or fail: every one but the informational ones."""
        return [metric for metric in self.metrics if not metric.informational]

    @property
    def execution_ms(self) -> float:
        return self.files_ms + self.agent_ms + self.evaluation_ms

    @property
    def passed(self) -> bool:
        """HoloDeck's rule: no errors, every metric passed, and tools matched if expected
        (informational metrics give no verdict and never fail a case)."""
        return (
            self.state is CaseState.COMPLETE
            and not self.errors
            and all(metric.passed for metric in self.verdict_metrics)
            and self.tools_matched is not False
        )
