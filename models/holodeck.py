"""HoloDeck's test execution models: `agent.yaml` test cases, metrics, results and reports.

Every field, default and validation rule of HoloDeck's "Data Model: Test Execution
Framework" is here, so a HoloDeck report written by Proctor validates against the same rules.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_FILES_PER_CASE = 10
PROVIDERS = ("openai", "azure_openai", "anthropic", "ollama")  # HoloDeck's ProviderEnum
FILE_TYPES = frozenset({"image", "pdf", "text", "excel", "word", "powerpoint", "csv"})


class LLMProvider(BaseModel):
    """Which model answers: provider, model name and call settings.

    A bare string (`model: gpt-4o`) is accepted as the model name. `api_key` holds a
    reference such as `${OPENAI_API_KEY}`, never a literal key written into a report.
    """

    model_config = ConfigDict(extra="forbid")

    provider: str = "openai"
    name: str
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    endpoint: str | None = None
    api_key: str | None = Field(default=None, exclude=True, repr=False)
    api_version: str | None = None  # Azure OpenAI
    auth_provider: str | None = None  # Anthropic: api_key, bedrock, vertex or foundry

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        if value not in PROVIDERS:
            raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}; got {value!r}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value


class FileInput(BaseModel):
    """A file attached to a test case: a local path or a URL, and what to extract."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = None
    url: str | None = None
    type: str
    description: str | None = None
    pages: list[int] | None = None
    sheet: str | None = None
    range: str | None = None
    cache: bool | None = None

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in FILE_TYPES:
            raise ValueError(f"type must be one of {', '.join(sorted(FILE_TYPES))}; got {value!r}")
        return value

    @field_validator("pages")
    @classmethod
    def _positive_pages(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and any(page < 1 for page in value):
            raise ValueError("pages must be positive integers (the first page is 1)")
        return value

    @model_validator(mode="after")
    def _path_xor_url(self) -> FileInput:
        if (self.path is None) == (self.url is None):
            raise ValueError("exactly one of 'path' or 'url' must be given")
        if self.url is not None and self.cache is None:
            self.cache = True
        return self


class TestCaseModel(BaseModel):
    """One test scenario of an `agent.yaml`."""

    __test__ = False  # not a pytest class
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    input: str
    expected_tools: list[str] | None = None
    ground_truth: str | None = None
    files: list[FileInput] | None = None
    evaluations: list[str] | None = None

    @field_validator("input")
    @classmethod
    def _input_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("input must be non-empty")
        return value

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("name must be non-empty if provided")
        return value

    @field_validator("files")
    @classmethod
    def _at_most_ten_files(cls, value: list[FileInput] | None) -> list[FileInput] | None:
        if value is not None and len(value) > MAX_FILES_PER_CASE:
            raise ValueError(f"at most {MAX_FILES_PER_CASE} files per test case; got {len(value)}")
        return value


class EvaluationMetric(BaseModel):
    """One metric to score with: name, threshold and how to call it.

    Fields beyond the documented ones are kept and handed to the metric as arguments;
    the metric rejects the ones it does not know.
    """

    model_config = ConfigDict(extra="allow")

    metric: str
    threshold: float | None = None
    enabled: bool = True
    scale: int | None = Field(default=None, gt=0)
    model: LLMProvider | None = None
    fail_on_error: bool = False
    retry_on_failure: int | None = Field(default=None, ge=1, le=3)
    timeout_ms: int | None = Field(default=None, gt=0)
    custom_prompt: str | None = None

    @field_validator("metric")
    @classmethod
    def _metric_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("metric must be non-empty")
        return value

    @property
    def extra_args(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class EvaluationConfig(BaseModel):
    """The metrics a suite is scored with, and the default judge model."""

    model_config = ConfigDict(extra="forbid")

    model: LLMProvider | None = None
    metrics: list[EvaluationMetric] = Field(min_length=1)


class ProcessedFileInput(BaseModel):
    """Processed file with extracted markdown content."""

    model_config = ConfigDict(extra="forbid")

    original: FileInput
    markdown_content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    cached_path: str | None = None
    processing_time_ms: int = Field(ge=0)
    error: str | None = None

    @model_validator(mode="after")
    def _content_unless_error(self) -> ProcessedFileInput:
        if self.error is None and not self.markdown_content.strip():
            raise ValueError("markdown_content must be non-empty if no error")
        return self


class MetricResult(BaseModel):
    """Result of evaluating a single metric.

    `kind` and `reasoning`, and `scale` as text ("0-1"), are HoloDeck 0.7.1's own
    (holodeck/models/test_result.py), where its code and the seed document differ: a HoloDeck
    suite's report.json carries them so it validates against HoloDeck's `TestReport`."""

    model_config = ConfigDict(extra="forbid")

    metric_name: str
    kind: Literal["standard", "rag", "geval", "code"] | None = None
    score: float | None = None
    threshold: float | None = None
    passed: bool
    scale: int | str | None = None
    error: str | None = None
    retry_count: int = Field(default=0, ge=0, le=3)
    evaluation_time_ms: int = Field(ge=0)
    model_used: str | None = None
    reasoning: str | None = None
    # Proctor's addition: True for a value reported without a verdict (ADK's efficiency metrics:
    # tool calls, tokens, seconds), whose `passed` is always true because it never fails a case.
    # Absent (None) on every other result, so HoloDeck's own results are written unchanged.
    informational: bool | None = None

    @field_validator("metric_name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("metric_name must be non-empty")
        return value

    @model_validator(mode="after")
    def _score_within_scale(self) -> MetricResult:
        if self.score is not None and isinstance(self.scale, int) and not (0.0 <= self.score <= self.scale):
            raise ValueError(f"score {self.score} is outside the scale 0..{self.scale}")
        return self


class TurnResult(BaseModel):
    """One turn of a multi-turn case, scored on its own (HoloDeck's `TurnResult`)."""

    model_config = ConfigDict(extra="forbid")

    turn_index: int = Field(ge=0)
    input: str
    response: str | None = None
    ground_truth: str | None = None
    expected_tools: list[Any] | None = None
    tool_calls: list[str] = Field(default_factory=list)
    tools_matched: bool | None = None
    metric_results: list[MetricResult] = Field(default_factory=list)
    passed: bool
    execution_time_ms: int = Field(ge=0)
    errors: list[str] = Field(default_factory=list)


class TestResult(BaseModel):
    """Result of executing a single test case."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    test_name: str | None = None
    test_input: str
    processed_files: list[ProcessedFileInput] = Field(default_factory=list)
    agent_response: str | None = None
    tool_calls: list[str] = Field(default_factory=list)
    expected_tools: list[str] | None = None
    tools_matched: bool | None = None
    metric_results: list[MetricResult] = Field(default_factory=list)
    ground_truth: str | None = None
    passed: bool
    execution_time_ms: int = Field(ge=0)
    errors: list[str] = Field(default_factory=list)
    timestamp: str
    turns: list[TurnResult] | None = None  # multi-turn cases: each turn's own result

    @field_validator("test_input")
    @classmethod
    def _input_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("test_input must be non-empty")
        return value

    @model_validator(mode="after")
    def _consistent_outcome(self) -> TestResult:
        if self.expected_tools is not None and self.tools_matched is None:
            raise ValueError("tools_matched must be set when expected_tools is provided")
        if self.passed and (
            self.errors
            or any(not metric.passed for metric in self.metric_results)
            or self.tools_matched is False
        ):
            raise ValueError("passed must be False when a metric failed or errors exist")
        return self

    @property
    def metrics_passed(self) -> int:
        """Number of metrics that passed."""
        return sum(1 for metric in self.metric_results if metric.passed)

    @property
    def metrics_total(self) -> int:
        """Total number of metrics evaluated."""
        return len(self.metric_results)


class ReportSummary(BaseModel):
    """Summary statistics for test execution."""

    model_config = ConfigDict(extra="forbid")

    total_tests: int = Field(ge=0)
    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    pass_rate: float = Field(ge=0.0, le=100.0)
    total_duration_ms: int = Field(ge=0)
    metrics_evaluated: dict[str, int] = Field(default_factory=dict)
    average_scores: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _counts_add_up(self) -> ReportSummary:
        if self.total_tests != self.passed + self.failed:
            raise ValueError("total_tests must equal passed + failed")
        return self


class TestReport(BaseModel):
    """Complete test execution report."""

    __test__ = False
    model_config = ConfigDict(extra="forbid")

    agent_name: str
    agent_config_path: str
    results: list[TestResult] = Field(min_length=1)
    summary: ReportSummary
    timestamp: str
    holodeck_version: str
    environment: dict[str, str] = Field(default_factory=dict)

    @field_validator("timestamp")
    @classmethod
    def _iso_timestamp(cls, value: str) -> str:
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as error:
            raise ValueError(f"timestamp must be ISO 8601; got {value!r}") from error
        return value

    @model_validator(mode="after")
    def _summary_matches_results(self) -> TestReport:
        if self.summary.total_tests != len(self.results):
            raise ValueError("summary.total_tests must equal the number of results")
        return self

    def to_json(self, indent: int = 2) -> str:
        """Serialize to JSON string."""
        return self.model_dump_json(indent=indent, exclude_none=True)

    def to_file(self, file_path: str) -> None:
        """Write report to JSON file."""
        with open(file_path, "w", encoding="utf-8") as handle:
            handle.write(self.to_json())

    def to_markdown(self) -> str:
        """The Markdown layout of HoloDeck's reporter, rendered from a Jinja2 template."""
        from proctor.rendering import holodeck_report_markdown

        return holodeck_report_markdown(self)
