"""The agentflow report models: how each case and each criterion did, and the set's summary
(`EvalReport`, written as `eval_report.json`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field, model_validator


class CriterionResult(BaseModel):
    criterion: str
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    threshold: float
    details: dict[str, Any] = Field(default_factory=dict)


class InformationalResult(BaseModel):
    """Proctor's addition to agentflow's case result: a value reported without a verdict (ADK's
    efficiency metrics), in its own unit (tool calls, tokens, seconds), null when not available.
    Kept apart from `criterion_results`, whose scores are 0..1 verdicts."""

    criterion: str
    value: float | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class CriterionStats(BaseModel):
    """How one criterion did across a set (`informational`: a value without a verdict, whose
    `passed` count is 0 and whose scores are in its own unit)."""

    evaluated: int = 0
    passed: int = 0
    avg_score: float = 0.0
    min_score: float = 0.0
    max_score: float = 0.0
    informational: bool | None = None


class EvalCaseResult(BaseModel):
    eval_id: str
    name: str | None = None
    passed: bool
    criterion_results: list[CriterionResult] = Field(default_factory=list)
    informational: list[InformationalResult] | None = None  # Proctor's: values without a verdict
    error: str | None = None
    duration_seconds: float = Field(ge=0.0)


class EvalSummary(BaseModel):
    total_cases: int = Field(ge=0)
    passed_cases: int = Field(ge=0)
    failed_cases: int = Field(ge=0)
    pass_rate: float = Field(ge=0.0, le=1.0)
    avg_score: float
    criterion_stats: dict[str, CriterionStats] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _counts_add_up(self) -> EvalSummary:
        if self.passed_cases + self.failed_cases != self.total_cases:
            raise ValueError("passed_cases + failed_cases must equal total_cases")
        return self


class EvalReport(BaseModel):
    report_id: str
    eval_set_id: str
    eval_set_name: str | None = None
    results: list[EvalCaseResult]
    summary: EvalSummary
    config_used: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    duration_seconds: float = Field(ge=0.0)
