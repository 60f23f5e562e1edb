"""The one case shape the pipeline runs, whatever format the suite was written in.

agentflow evalsets, ADK evalsets, HoloDeck `agent.yaml` test cases and Vanna datasets are
all converted into `Case` objects by `proctor.loaders`; the flow never sees the formats.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from proctor.models.agentflow import SessionInput, ToolCall
from proctor.models.holodeck import MAX_FILES_PER_CASE, FileInput, LLMProvider


class MetricSpec(BaseModel):
    """A metric by registry name, its arguments and how it is called.

    Mirrors HoloDeck's `EvaluationMetric` (threshold, scale, retries, timeout, fail on
    error) plus `args`, the metric's own configuration, validated against the registry
    before anything runs. `label` names the result when a suite gives the metric its own name
    (HoloDeck's `geval` "Coherence", say); otherwise the result is named after the metric.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    label: str | None = None
    threshold: float | None = None
    enabled: bool = True
    args: dict[str, Any] = Field(default_factory=dict)
    scale: int | None = Field(default=None, gt=0)
    model: LLMProvider | None = None
    fail_on_error: bool = False
    retry_on_failure: int | None = Field(default=None, ge=1, le=3)
    timeout_ms: int | None = Field(default=None, gt=0)
    custom_prompt: str | None = None
    response_path: str | None = None  # HoloDeck: grade this field of a JSON answer


class ExpectedTool(BaseModel):
    """A tool the agent must call in a turn (HoloDeck's `ExpectedTool`): the name is a
    case-sensitive substring of the called tool's name; `args` maps each asserted argument to a
    literal, `{fuzzy: ...}` or `{regex: ...}`; at least `count` calls must satisfy them."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None
    count: int = Field(default=1, ge=1)


class Turn(BaseModel):
    """One user message and what is expected of the agent's reply to it.

    `expected_tool_calls` is None when the suite states no expectation for the turn,
    and an empty list when it expects that no tool is called.
    """

    model_config = ConfigDict(extra="forbid")

    turn_id: str
    input: str
    expected_tool_calls: list[ToolCall] | None = None
    expected_response: str | None = None
    expected_intermediate_responses: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # HoloDeck's per-turn expectations: tools checked against this turn's calls only, the
    # retrieved chunks its answer must be faithful to, and metrics replacing the case's.
    expected_tools: list[ExpectedTool] | None = None
    retrieval_context: list[str] | None = None
    metrics: list[MetricSpec] | None = None


GRADING_METADATA = frozenset(
    {
        "expected_outcome",  # Vanna: the tools and keywords the evaluators expect
        "adk_rubrics",  # ADK: the rubrics the judge scores against
        "final_session_state",  # ADK: the state the session should end in
        "conversation_scenario",  # ADK: the simulated user's plan
        "adk_user_simulator",  # ADK: the simulated user's settings
        "user_simulator",  # agentflow: the simulated user's goals and instructions
    }
)
"""Case metadata that says how the case is judged or played, never shown to the agent under test
(`Case.agent_metadata`): an agent that could read its expected outcome would be graded on nothing."""


class Case(BaseModel):
    """A test case ready to run: turns, attached files, metrics and provenance."""

    model_config = ConfigDict(extra="forbid")

    case_id: str
    name: str | None = None
    turns: list[Turn] = Field(min_length=1)
    files: list[FileInput] = Field(default_factory=list)
    metrics: list[MetricSpec] = Field(default_factory=list)
    expected_tools: list[str] | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    session: SessionInput = Field(default_factory=SessionInput)
    source_format: str = "native"
    # HoloDeck multi-turn: each turn is scored on its own and the turn scores rolled up.
    score_per_turn: bool = False

    @field_validator("files")
    @classmethod
    def _at_most_ten_files(cls, value: list[FileInput], info: ValidationInfo) -> list[FileInput]:
        """At most ten files per case; in a case whose turns each name their own files
        (`Turn.metadata["files"]`, positions in `files`: HoloDeck's multi-turn cases), at most
        ten per turn, as HoloDeck limits them."""
        per_turn = [turn.metadata.get("files") for turn in info.data.get("turns") or []]
        if any(positions is not None for positions in per_turn):
            for number, positions in enumerate(per_turn, start=1):
                if len(positions or []) > MAX_FILES_PER_CASE:
                    raise ValueError(
                        f"at most {MAX_FILES_PER_CASE} files per turn; turn {number} has {len(positions)}"
                    )
                if any(not 0 <= position < len(value) for position in positions or []):
                    raise ValueError(f"turn {number} names a file the case does not have")
            return value
        if len(value) > MAX_FILES_PER_CASE:
            raise ValueError(f"at most {MAX_FILES_PER_CASE} files per case; got {len(value)}")
        return value

    def turn_files(self, turn_id: str, processed: list[Any]) -> list[Any]:
        """The processed files one turn is sent: those it names, else all of the case's."""
        turn = next((turn for turn in self.turns if turn.turn_id == turn_id), None)
        positions = turn.metadata.get("files") if turn is not None else None
        if positions is None:
            return processed
        return [processed[position] for position in positions if position < len(processed)]

    @property
    def display_name(self) -> str:
        return self.name or self.case_id

    @property
    def agent_metadata(self) -> dict[str, Any]:
        """The metadata the agent under test receives: the case's own, without what grades it."""
        return {key: value for key, value in self.metadata.items() if key not in GRADING_METADATA}

    @property
    def first_input(self) -> str:
        return self.turns[0].input

    @property
    def ground_truth(self) -> str | None:
        """The expected final answer: the last turn's expected response."""
        return self.turns[-1].expected_response


class Suite(BaseModel):
    """Cases loaded from one file, with where they came from and which agent runs them."""

    model_config = ConfigDict(extra="forbid")

    suite_id: str
    name: str
    path: str
    source_format: str
    cases: list[Case]
    agent: str | None = None
    description: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
