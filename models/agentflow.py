"""The agentflow evaluation data models: suites as `.evalset.json` files and their reports.

Field names, defaults and methods follow the agentflow "Data Models" document, so a file
written for agentflow loads here unchanged and `EvalSet.save` writes one agentflow reads.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from proctor.models.adk_config import (
    AdkUserSimulatorConfig,
    JudgeModelOptions,
    LiveModelConfig,
    refuse_custom_metrics,
    simulator_config,
)


class MessageContent(BaseModel):
    """One message: a role and either plain text or structured parts."""

    model_config = ConfigDict(extra="forbid")  # a misspelt field is an error, not a lost expectation

    role: str
    content: str | list[dict[str, Any]]
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def user(cls, text: str, **metadata: Any) -> MessageContent:
        return cls(role="user", content=text, metadata=metadata)

    @classmethod
    def assistant(cls, text: str, **metadata: Any) -> MessageContent:
        return cls(role="assistant", content=text, metadata=metadata)

    def get_text(self) -> str:
        """The text of the message; structured parts contribute their `text` fields."""
        if isinstance(self.content, str):
            return self.content
        texts = [str(part["text"]) for part in self.content if part.get("text") is not None]
        return "\n".join(texts)


class ToolCall(BaseModel):
    """An expected or actual tool call."""

    model_config = ConfigDict(extra="forbid")  # a misspelt field is an error, not a lost expectation

    name: str
    # None: the call was written without arguments (ADK's `FunctionCall.args` unset). Proctor's
    # own metrics read it as {}; ADK's metrics, like ADK, do not (None != {}).
    args: dict[str, Any] | None = Field(default_factory=dict)
    call_id: str | None = None
    result: Any | None = None

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("tool name must be non-empty")
        return value

    def matches(self, other: ToolCall, check_args: bool = True, check_call_id: bool = False) -> bool:
        """Whether `other` is the same call: same name, and args / call id when asked."""
        if self.name != other.name:
            return False
        if check_args and (self.args or {}) != (other.args or {}):
            return False
        return not (check_call_id and self.call_id != other.call_id)


class StepType(StrEnum):
    NODE = "node"
    TOOL = "tool"
    MESSAGE = "message"
    CONDITIONAL = "conditional"


class TrajectoryStep(BaseModel):
    """One step of an execution trajectory (a graph node, a tool call, a message...)."""

    step_type: StepType
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    timestamp: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def node(cls, name: str, timestamp: float | None = None, **metadata: Any) -> TrajectoryStep:
        return cls(step_type=StepType.NODE, name=name, timestamp=timestamp, metadata=metadata)

    @classmethod
    def tool(
        cls,
        name: str,
        args: dict[str, Any] | None = None,
        timestamp: float | None = None,
        **metadata: Any,
    ) -> TrajectoryStep:
        return cls(
            step_type=StepType.TOOL,
            name=name,
            args=args or {},
            timestamp=timestamp,
            metadata=metadata,
        )


class SessionInput(BaseModel):
    """How the agent's session starts: thread id, configuration and initial state."""

    model_config = ConfigDict(extra="forbid")  # a misspelt field is an error, not a lost expectation

    thread_id: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    initial_state: dict[str, Any] = Field(default_factory=dict)


class Invocation(BaseModel):
    """One turn: the user's message and what the agent is expected to do with it."""

    model_config = ConfigDict(extra="forbid")  # a misspelt field is an error, not a lost expectation

    invocation_id: str
    user_content: MessageContent
    expected_tool_trajectory: list[ToolCall] = Field(default_factory=list)
    expected_intermediate_responses: list[MessageContent] = Field(default_factory=list)
    expected_final_response: MessageContent | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class EvalCase(BaseModel):
    """One test scenario: a conversation of one or more turns."""

    model_config = ConfigDict(extra="forbid")  # a misspelt field is an error, not a lost expectation

    eval_id: str
    name: str = ""
    conversation: list[Invocation] = Field(default_factory=list)
    session_input: SessionInput | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)

    @field_validator("eval_id")
    @classmethod
    def _id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("eval_id must be non-empty")
        return value


class EvalSet(BaseModel):
    """A collection of evaluation cases, usually stored as `<name>.evalset.json`."""

    model_config = ConfigDict(extra="forbid")  # a misspelt field is an error, not a lost expectation

    eval_set_id: str
    name: str = ""
    description: str = ""
    eval_cases: list[EvalCase] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("eval_cases")
    @classmethod
    def _unique_case_ids(cls, cases: list[EvalCase]) -> list[EvalCase]:
        seen: set[str] = set()
        for case in cases:
            if case.eval_id in seen:
                raise ValueError(f"duplicate eval_id {case.eval_id!r}: case ids must be unique")
            seen.add(case.eval_id)
        return cases

    @classmethod
    def load(cls, path: str | Path) -> EvalSet:
        """Read and validate an `.evalset.json` file."""
        with open(path, encoding="utf-8") as handle:
            return cls.model_validate(json.load(handle))

    def save(self, path: str | Path) -> None:
        """Write the set as indented JSON, the format `load` reads."""
        Path(path).write_text(self.model_dump_json(indent=2), encoding="utf-8")


class MatchType(StrEnum):
    EXACT = "EXACT"
    IN_ORDER = "IN_ORDER"
    ANY_ORDER = "ANY_ORDER"

    @classmethod
    def _missing_(cls, value: object) -> MatchType | None:
        # Suites written by hand use "exact", "in_order", "any-order", "in order" alike; ADK's
        # own `ToolTrajectoryCriterion.MatchType` is numbered EXACT=0, IN_ORDER=1, ANY_ORDER=2.
        if isinstance(value, str):
            return cls.__members__.get(value.strip().upper().replace("-", "_").replace(" ", "_"))
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(cls):
            return list(cls)[value]
        return None

    @classmethod
    def from_adk(cls, value: object) -> object:
        """`value` as a MatchType when ADK would read it as one; otherwise unchanged, for
        validation to reject with the allowed values."""
        try:
            return cls(value)
        except ValueError:
            return value


class Rubric(BaseModel):
    """A custom rubric for LLM-judged evaluation."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    scoring_guide: str
    weight: float = Field(default=1.0, ge=0.0)


class CriterionConfig(BaseModel):
    """Configuration of one criterion.

    Fields beyond the five documented ones are kept and handed to the metric as its
    arguments (for instance `check_args` for trajectory matching); the metric rejects
    the ones it does not know.
    """

    model_config = ConfigDict(extra="allow")

    enabled: bool = True
    threshold: float = Field(default=0.8, ge=0.0)
    match_type: MatchType = MatchType.EXACT
    judge_model: str = "gpt-4o-mini"
    rubrics: list[Rubric] = Field(default_factory=list)
    judge_model_options: JudgeModelOptions | None = None  # ADK's

    @field_validator("judge_model_options", mode="before")
    @classmethod
    def _judge_options_mapping(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, dict | JudgeModelOptions):
            raise ValueError(
                "judge_model_options must be a mapping (judge_model, judge_model_config, num_samples, "
                "parallelism_limit)"
            )
        return value


class UserSimulatorConfig(BaseModel):
    """An LLM that plays the user toward goals (driven by the user-simulator feature)."""

    model_config = ConfigDict(extra="forbid")

    model: str = "gpt-4o-mini"
    goals: list[str] = Field(default_factory=list)
    max_invocations: int = Field(default=5, ge=1)
    instructions: str = ""


_CAMEL_HUMP = re.compile(r"(?<!^)(?=[A-Z])")


def snake_case_fields(fields: Any, nested: bool = True) -> Any:
    """ADK's config and criteria accept camelCase (`matchType`, `ignoreArgs`,
    `judgeModelOptions`...) as well as snake_case; one field written both ways is an error, not a
    silent choice. `nested`: the keys of `judge_model_options` too."""
    if not isinstance(fields, dict):
        return fields
    converted: dict[str, Any] = {}
    for key, value in fields.items():
        name = _CAMEL_HUMP.sub("_", key).lower() if isinstance(key, str) else key
        if name in converted:
            raise ValueError(f"{name!r} is given twice (once in camelCase); give it once")
        converted[name] = snake_case_fields(value) if nested and name == "judge_model_options" else value
    return converted


def _threshold_shorthand(spec: Any) -> Any:
    """A bare number is a threshold; ADK-style rubrics (rubricId/rubricContent) are kept apart
    from agentflow's `Rubric`s, for the metric that reads them."""
    if isinstance(spec, int | float) and not isinstance(spec, bool):
        return {"threshold": spec}
    if isinstance(spec, dict):
        spec = snake_case_fields(spec)
    rubrics = spec.get("rubrics") if isinstance(spec, dict) else None
    adk_ids = {"rubricId", "rubric_id"}
    if isinstance(rubrics, list) and any(isinstance(r, dict) and adk_ids & set(r) for r in rubrics):
        spec = {key: value for key, value in spec.items() if key != "rubrics"} | {"adk_rubrics": rubrics}
    return spec


class EvalConfig(BaseModel):
    """Which criteria score a set, and how.

    A bare number as a criterion (`"response_match_score": 0.5`, as ADK's
    `test_config.json` writes it) is read as that criterion's threshold. Unknown fields are
    errors: a misspelt `criteria` would otherwise score nothing and pass every case.
    """

    model_config = ConfigDict(extra="forbid")

    criteria: dict[str, CriterionConfig] = Field(default_factory=dict)
    user_simulator_config: UserSimulatorConfig | AdkUserSimulatorConfig | None = None
    custom_metrics: Any = None  # ADK's: refused with the reason
    live_model_config: LiveModelConfig | None = None  # ADK's: the loaders warn it is not used

    _camel = model_validator(mode="before")(lambda value: snake_case_fields(value, nested=False))
    _simulator = field_validator("user_simulator_config", mode="before")(simulator_config)
    _custom = field_validator("custom_metrics")(refuse_custom_metrics)

    @field_validator("criteria", mode="before")
    @classmethod
    def _thresholds_as_numbers(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {name: _threshold_shorthand(spec) for name, spec in value.items()}
        return value

    @classmethod
    def default(cls) -> EvalConfig:
        """trajectory_match 0.8, response_match 0.7 and llm_judge 0.7 on gpt-4o-mini."""
        return cls(
            criteria={
                "trajectory_match": CriterionConfig(threshold=0.8),
                "response_match": CriterionConfig(threshold=0.7),
                "llm_judge": CriterionConfig(threshold=0.7, judge_model="gpt-4o-mini"),
            }
        )

    @classmethod
    def load(cls, path: str | Path) -> EvalConfig:
        with open(path, encoding="utf-8") as handle:
            return cls.model_validate(json.load(handle))


# The report models live beside these (agentflow_results.py); named here too, as the design names them.
from proctor.models.agentflow_results import (  # noqa: E402
    CriterionResult,
    CriterionStats,
    EvalCaseResult,
    EvalReport,
    EvalSummary,
    InformationalResult,
)

__all__ = [
    "CriterionConfig",
    "CriterionResult",
    "CriterionStats",
    "EvalCase",
    "EvalCaseResult",
    "EvalConfig",
    "EvalReport",
    "EvalSet",
    "EvalSummary",
    "InformationalResult",
    "Invocation",
    "MatchType",
    "MessageContent",
    "Rubric",
    "SessionInput",
    "StepType",
    "ToolCall",
    "TrajectoryStep",
    "UserSimulatorConfig",
]
