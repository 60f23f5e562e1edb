"""SQL tables: one row per evaluation run, per case result and per metric result.

Kept apart from the domain models so the file formats can change without a migration and
the tables can be indexed for history queries without bending the formats.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


def utc_now() -> datetime:
    return datetime.now(UTC)


def _timestamp(nullable: bool = False) -> Any:
    return Field(
        default_factory=utc_now if not nullable else None,
        sa_column=Column(DateTime(timezone=True), nullable=nullable),
    )


def _json(default: Any) -> Any:
    return Field(default_factory=default, sa_column=Column(JSON, nullable=False))


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class EvalRun(SQLModel, table=True):
    """One evaluation of one suite by one agent."""

    __tablename__ = "eval_run"
    # The history of a suite, agent and variant, newest first (`proctor.storage.history`).
    __table_args__ = (Index("ix_eval_run_series", "suite_id", "agent", "variant", "started_at"),)

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    suite_id: str = Field(index=True)
    suite_name: str
    suite_path: str
    source_format: str
    agent: str = Field(index=True)
    variant: str | None = None
    status: RunStatus = Field(default=RunStatus.RUNNING, index=True)
    started_at: datetime = _timestamp()
    finished_at: datetime | None = _timestamp(nullable=True)
    planned_cases: int = 0
    total_cases: int = 0
    passed_cases: int = 0
    failed_cases: int = 0
    errored_cases: int = 0
    pass_rate: float | None = None
    duration_ms: int | None = None
    config: dict[str, Any] = _json(dict)
    environment: dict[str, Any] = _json(dict)
    flow_run_id: str | None = None
    proctor_version: str
    report_dir: str | None = None
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    repeat: int = 1  # runs of every case (`--repeat N`); cases report passes k of n
    # The comparison with the baseline run (`proctor.stats.regression.Regression.to_dict()`), stored
    # with the run so the morning report and `proctor report` show what the notifier saw.
    baseline_run_id: uuid.UUID | None = None
    comparison: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # What became of the Slack notification: sent (channel, ts), skipped or failed (why).
    notification: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # Who runs it now (`host:pid:token`) and when it last said so: one owner at a time, so a
    # `proctor resume` of a live run is refused (`proctor.storage.lease`).
    owner: str | None = None
    heartbeat_at: datetime | None = _timestamp(nullable=True)
    # What the run's cost is computed from, so it reads the same whoever reads it later: the
    # agent's model when Proctor knows it (an `openai:` agent's), and the prices per million
    # tokens (input, output) of every model the run used, as they were when its cases ended
    # (`proctor.costs`). None for runs stored before they were kept: priced with today's table.
    agent_model: str | None = None
    prices: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))

    @property
    def reported_status(self) -> str:
        """What reports and Slack say. A run whose cases have all ended (`finished_at` set)
        is reported as completed while those reports are made; it is *stored* as completed
        only once its reports, artifacts and notification are done or recorded as failed,
        so a run killed in between is finished by `proctor resume`."""
        if self.status is RunStatus.RUNNING and self.finished_at is not None:
            return RunStatus.COMPLETED.value
        return RunStatus(self.status).value


class CaseResultRow(SQLModel, table=True):
    """One case of one run: its final state, what the agent did, timings and tokens."""

    __tablename__ = "case_result"
    __table_args__ = (
        UniqueConstraint("run_id", "case_id", "attempt", name="uq_case_result_run_case_attempt"),
        # The nightly verdict reads, per case, the pass counts of the last runs of its suite
        # (`proctor.storage.history`): this index answers that from the index alone.
        Index("ix_case_result_history", "run_id", "case_id", "passed"),
    )

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    run_id: uuid.UUID = Field(foreign_key="eval_run.id", index=True)
    case_id: str
    attempt: int = 0  # which repeat of the case (`--repeat N`), 0-based
    position: int = 0
    case_name: str | None = None
    state: str = Field(index=True)
    passed: bool | None = None
    input: str = Field(sa_column=Column(Text, nullable=False))
    response: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    ground_truth: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    turns: list[dict[str, Any]] = _json(list)
    tool_calls: list[dict[str, Any]] = _json(list)
    expected_tools: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    tools_matched: bool | None = None
    errors: list[str] = _json(list)
    # What storing the case changed, e.g. characters no database can store replaced (where, how many).
    notes: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    files: list[dict[str, Any]] = _json(list)
    tags: list[str] = _json(list)
    # What a Vanna test case carried besides its message (user, expected_outcome,
    # conversation_id, metadata), so its `TestCaseResult` can be rebuilt; empty for other formats.
    vanna_case: dict[str, Any] = _json(dict)
    files_ms: float = 0.0
    agent_ms: float = 0.0
    evaluation_ms: float = 0.0
    execution_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    agent_retries: int = 0  # requests the agent's client sent again (429, 5xx): paid for, not turns
    started_at: datetime = _timestamp()
    finished_at: datetime | None = _timestamp(nullable=True)


class MetricResultRow(SQLModel, table=True):
    """One metric's score for one case, with the arguments and version that produced it."""

    __tablename__ = "metric_result"

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    run_id: uuid.UUID = Field(foreign_key="eval_run.id", index=True)
    case_result_id: uuid.UUID = Field(foreign_key="case_result.id", index=True)
    case_id: str
    metric_name: str = Field(index=True)
    metric_version: str = "1"
    score: float | None = None
    threshold: float | None = None
    passed: bool
    # A value without a verdict (ADK's efficiency metrics: tool calls, tokens, seconds): its
    # `passed` is always true, as it never fails a case; pass rates and regressions leave it out.
    informational: bool = False
    scale: int | None = None
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    retry_count: int = 0
    evaluation_time_ms: int = 0
    model_used: str | None = None
    judge_calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    saved_prompt_tokens: int = 0  # what the judge cache answered: tokens not paid for again
    saved_completion_tokens: int = 0
    args: dict[str, Any] = _json(dict)
    details: dict[str, Any] = _json(dict)
    reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class JudgeCacheRow(SQLModel, table=True):
    """A judge reply that parsed, keyed by a hash of endpoint, model, prompt and parameters."""

    __tablename__ = "judge_cache"

    key: str = Field(primary_key=True, max_length=64)
    model: str
    reply: str = Field(sa_column=Column(Text, nullable=False))
    prompt_tokens: int = 0
    completion_tokens: int = 0
    created_at: datetime = _timestamp()


class HistoryReset(SQLModel, table=True):
    """`proctor reset-history`: runs of this suite (and agent, and variant, when given) that
    started before `reset_at` are no longer evidence for later verdicts (the agent changed)."""

    __tablename__ = "history_reset"

    id: uuid.UUID = Field(default_factory=uuid.uuid4, primary_key=True)
    suite_id: str = Field(index=True)
    agent: str | None = None  # None: every agent of the suite
    variant: str | None = None  # None: every variant
    reset_at: datetime = _timestamp()
    reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class QuotaShareRow(SQLModel, table=True):
    """The request and token budget of one model endpoint and key, shared by every process that
    calls it with this results database (`proctor.calls.quota_share`): a token bucket, its
    levels as of `at`, taken from in small grants by compare-and-swap on `version`."""

    __tablename__ = "quota_share"

    budget: str = Field(primary_key=True, max_length=64)  # a hash of endpoint and key, never the key
    endpoint: str = Field(default="", max_length=500)  # for a reader: the endpoint without query
    requests: float = 0.0  # requests the bucket holds at `at`
    tokens: float = 0.0  # tokens it holds (negative: spent ahead, by answers larger than estimated)
    at: float = 0.0  # epoch seconds
    paused_until: float = 0.0  # epoch seconds: a 429's Retry-After, for every process
    version: int = 0
