"""The Vanna evaluation models: test cases with expected outcomes, agent results, variants.

`TestCase`, `ExpectedOutcome` and `EvaluationResult` are Pydantic models and `AgentResult`,
`TestCaseResult` and `AgentVariant` dataclasses, as in Vanna's evaluation framework.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class User(BaseModel):
    """The user on whose behalf the agent answers.

    Vanna's `User` keeps unknown fields (`extra="allow"`), but its dataset files never reach
    them: the loader reads only `user_id`, `username`, `email` and `user_groups`. A misspelt
    field here would silently change whose permissions a case tests, so it is an error.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = "test_user"
    username: str | None = None
    email: str | None = None
    group_memberships: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class ExpectedOutcome(BaseModel):
    """What the agent should do for a test case."""

    model_config = ConfigDict(extra="forbid")

    tools_called: list[str] | None = None
    tools_not_called: list[str] | None = None
    final_answer_contains: list[str] | None = None
    final_answer_not_contains: list[str] | None = None
    min_components: int | None = Field(default=None, ge=0)
    max_components: int | None = Field(default=None, ge=0)
    max_execution_time_ms: float | None = Field(default=None, gt=0)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _component_bounds(self) -> ExpectedOutcome:
        if (
            self.min_components is not None
            and self.max_components is not None
            and self.min_components > self.max_components
        ):
            raise ValueError("min_components must not exceed max_components")
        return self


class TestCase(BaseModel):
    """A single evaluation scenario: one message sent by one user."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    id: str
    user: User = Field(default_factory=User)
    message: str
    conversation_id: str | None = None
    expected_outcome: ExpectedOutcome | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", "message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be non-empty")
        return value


TEXT_COMPONENT_TYPES = frozenset({"rich_text", "text"})
"""The component types whose content is the agent's answer: Proctor's `rich_text`, and `text`,
the type Vanna's own `RichTextComponent` carries (`ComponentType.TEXT`)."""


@dataclass
class UiComponent:
    """A component the agent yielded; `rich_text` components carry its answer."""

    type: str
    content: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class AgentResult:
    """Everything that happened while the agent handled one test case."""

    test_case_id: str
    components: list[UiComponent]
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    llm_requests: list[dict[str, Any]] = field(default_factory=list)
    execution_time_ms: float = 0.0
    total_tokens: int = 0
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def get_final_answer(self) -> str:
        """The text of the rich-text components, in order."""
        texts = [c.content for c in self.components if c.type in TEXT_COMPONENT_TYPES and c.content]
        return "\n".join(texts)

    def get_tool_names_called(self) -> list[str]:
        return [str(call.get("name") or call.get("tool_name", "")) for call in self.tool_calls]


class EvaluationResult(BaseModel):
    """One evaluator's verdict on one test case."""

    test_case_id: str
    evaluator_name: str
    passed: bool
    score: float = Field(ge=0.0, le=1.0)
    reasoning: str
    metrics: dict[str, Any] = Field(default_factory=dict)
    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))


@dataclass
class TestCaseResult:
    """A test case, what the agent did, and every evaluator's verdict."""

    __test__ = False

    test_case: TestCase
    agent_result: AgentResult
    evaluations: list[EvaluationResult]
    execution_time_ms: float

    def overall_passed(self) -> bool:
        """All evaluations passed (and the agent did not error)."""
        return self.agent_result.error is None and all(e.passed for e in self.evaluations)

    def overall_score(self) -> float:
        """Average score across evaluations (0.0 when there are none)."""
        if not self.evaluations:
            return 0.0
        return sum(e.score for e in self.evaluations) / len(self.evaluations)


@dataclass
class AgentVariant:
    """A named agent configuration to compare with others over the same suite.

    `agent` is a target such as `"pkg.module:agent"` or `"agent.py:agent"`, or a callable.
    """

    name: str
    agent: str | Callable[..., Any]
    metadata: dict[str, Any] = field(default_factory=dict)


class EvaluationDataset(BaseModel):
    """A named collection of Vanna test cases."""

    model_config = ConfigDict(extra="forbid")

    name: str = "dataset"
    description: str = ""
    test_cases: list[TestCase] = Field(default_factory=list)
