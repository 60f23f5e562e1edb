"""What a run is asked to do (`EvaluationRequest`, the flow's one parameter and so the Prefect
UI's form) and what it reports back (`RunSummary`)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from pydantic import BaseModel, Field, field_validator

from proctor.models.form import SECRET_REFERENCE_PATTERN, FormModel, refused_unless, tabs
from proctor.models.notify import SlackSettings
from proctor.models.quota import DEFAULT_PATIENCE_S, QuotaLimit
from proctor.models.tables import RunStatus

# A Dask scheduler's address, or a local cluster of N (1-9999) worker processes.
DASK_ADDRESS_PATTERN = r"^(local(:[1-9][0-9]{0,3})?|(tcp|tls|ws|wss|inproc|ucx)://[^\s/]+)$"

# A database URL the form and deployment parameters take: a reference (`${VAR}`, `secret:BLOCK`)
# or a URL without a password (`postgresql://user:PASSWORD@host` is refused: Prefect stores and
# shows flow-run parameters). In Python (`run_evaluation`, the CLI) such a URL is moved into the
# process's environment and passed by reference instead.
# A password may also come as a query parameter (`?password=...`, which the PostgreSQL driver
# reads), with its key percent-encoded or not; leading blanks do not hide either form.
URL_WITHOUT_PASSWORD_PATTERN = (
    r"^(?!\s*[A-Za-z][A-Za-z0-9+.-]*://[^/@:]*:[^@]*@)"
    r"(?![^?#]*\?(?:[^#]*&)?(?:[Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd]|[^=&#]*%[^=&#]*)=[^&#])"
)
# What the form says instead of the value (it holds a password) and the patterns above.
URL_WITHOUT_PASSWORD = "a URL without its password, or its name: ${ENV_VAR} or secret:BLOCK_NAME"
DASK_ADDRESS = "a Dask scheduler address such as tcp://host:8786, or local, or local:N for N workers"

# Significance level of the regression test, unless a request sets its own.
DEFAULT_SIGNIFICANCE = 0.05
# Earlier runs a verdict reads by default: a month of nights (proctor.storage.history).
DEFAULT_HISTORY_WINDOW = 30


class VariantSpec(FormModel):
    """One agent configuration to compare, as Vanna's AgentVariant: a name, an agent, metadata."""

    # Bounded: a variant's reports go to a folder named after it (file names stop at 255 bytes).
    name: str = Field(
        min_length=1,
        max_length=100,
        title="Name",
        description="How reports and the comparison name this variant (1 to 100 characters)",
    )
    agent: str = Field(title="Agent", description="Its agent target, as for Agent above ('file.py:attr')")
    metadata: dict[str, Any] = Field(
        default_factory=dict, title="Metadata", description="Stored with the variant's run, as you give it"
    )


class EvaluationRequest(FormModel):
    """What to evaluate and how; every field has a sensible default but the suite."""

    suite: str = Field(
        min_length=1,
        title="Suite",
        description="Path of the suite file, from the checkout the run executes in "
        "(.evalset.json, agent.yaml, Vanna dataset), or a folder of them",
    )
    agent: str | None = Field(
        default=None,
        title="Agent",
        description="The agent to evaluate: 'module:attr', 'file.py:attr', 'openai:agent.yaml' or "
        "'http:endpoint.yaml'; The suite's: the one the suite names",
        json_schema_extra=tabs("Target", "The suite's"),
    )
    config: str | None = Field(
        default=None,
        title="Evaluation config",
        description="An agentflow eval_config.json (criteria and thresholds); The suite's: its "
        "metadata.eval_config, or an eval_config.json beside it",
        json_schema_extra=tabs("File", "The suite's"),
    )
    database_url: str | None = Field(
        default=None,
        title="Results database",
        description=(
            "SQLAlchemy URL with no password in it (postgresql://proctor@db.example:5432/proctor), "
            "or its name: ${ENV_VAR} or secret:BLOCK_NAME. "
            "The worker's: PROCTOR_DATABASE_URL where the run executes (on a worker, the worker's), "
            "else .proctor/proctor.db there"
        ),
        json_schema_extra=tabs(
            "URL", "The worker's", beside=refused_unless(URL_WITHOUT_PASSWORD_PATTERN, URL_WITHOUT_PASSWORD)
        ),
    )
    report_dir: str | None = Field(
        default=None,
        title="Report folder",
        description="Where the reports are written, where the run executes; "
        "default .proctor/reports/SUITE/RUN",
        json_schema_extra=tabs("Folder", "Default"),
    )
    concurrency: int = Field(
        default=8, ge=1, le=1024, title="Concurrency", description="Cases whose agent runs at once (1-1024)"
    )
    chunk_size: int | None = Field(
        default=None,
        ge=1,
        title="Cases per task run",
        description="How many cases one Prefect task run takes; Automatic: sized from the suite",
        json_schema_extra=tabs("Cases", "Automatic"),
    )
    agent_timeout_s: float | None = Field(
        default=300.0,
        gt=0,
        title="Agent timeout (s)",
        description="Seconds one agent turn may take before the case errors",
        json_schema_extra=tabs("Seconds", "No limit"),
    )
    judge_cache: bool = Field(
        default=True,
        title="Judge cache",
        description="Answer a judge call identical to an earlier one from the cache",
    )
    case_timeout_s: float | None = Field(
        default=None,
        gt=0,
        title="Case timeout (s)",
        description="Seconds a whole case's conversation may take",
        json_schema_extra=tabs("Seconds", "No limit"),
    )
    model_call_limit: str | None = Field(
        default=None,
        title="Model call limit",
        description="Name of a Prefect global concurrency limit capping agent and judge calls across workers",
        json_schema_extra=tabs("Limit name", "None"),
    )
    variants: list[VariantSpec] = Field(
        default_factory=list,
        title="Variants",
        description="Agent variants to run over the same suite and compare (instead of one Agent)",
    )
    tags: list[str] = Field(
        default_factory=list, title="Tags", description="Run only cases with any of these tags"
    )
    cases: list[str] = Field(default_factory=list, title="Case ids", description="Run only these case ids")
    metadata: dict[str, str] = Field(
        default_factory=dict,
        title="Case metadata",
        description="Run only cases whose metadata has these values (key: value)",
    )
    repeat: int = Field(
        default=1,
        ge=1,
        le=100,
        title="Repeats",
        description="Run every case this many times (1-100); cases report passes k of n",
    )
    baseline_run_id: uuid.UUID | None = Field(
        default=None,
        title="Baseline run",
        description="Judge against the history up to this run (its id); Latest runs: the last completed "
        "runs of the suite",
        json_schema_extra=tabs("Run id", "Latest runs"),
    )
    significance: float = Field(
        default=DEFAULT_SIGNIFICANCE,
        gt=0,
        lt=1,
        title="Significance",
        description="Chance of a false 'Regressed' verdict on a night when nothing changed (between 0 and 1)",
    )
    history_window: int = Field(
        default=DEFAULT_HISTORY_WINDOW,
        ge=1,
        le=365,
        title="History window (runs)",
        description="Earlier runs of the suite (same agent and variant) each case's history is "
        "read from (1-365)",
    )
    agent_version: str | None = Field(
        default=None,
        max_length=200,
        title="Agent version",
        description="The agent's version; once a run of a new version exists, older versions' "
        "runs are no longer its history",
        json_schema_extra=tabs("Version", "Not given"),
    )
    min_pass_rate: float | None = Field(
        default=None,
        ge=0,
        le=100,
        title="Minimum pass rate (%)",
        description="The run passes its gate at this pass rate, in percent (0-100); "
        "Every case: every case must pass",
        json_schema_extra=tabs("Percent", "Every case"),
    )
    slack: SlackSettings | None = Field(
        default=None,
        title="Slack",
        description="Post the summary to Slack: choose Slack settings and give a channel or a webhook",
        json_schema_extra=tabs("Slack settings", "Off"),
    )
    dask_address: str | None = Field(
        default=None,
        title="Dask cluster",
        description="Spread case chunks over a Dask cluster: its scheduler (tcp://host:8786), "
        "or 'local' / 'local:N' for a local cluster of N worker processes",
        json_schema_extra=tabs(
            "Address", "No Dask", beside=refused_unless(DASK_ADDRESS_PATTERN, DASK_ADDRESS)
        ),
    )
    resume_run_id: uuid.UUID | None = Field(
        default=None,
        title="Resume run",
        description="Resume this stopped run (its id): its finished cases are kept, the others run "
        "(as proctor resume does)",
        json_schema_extra=tabs("Run id", "New run"),
    )
    # -- the model provider's quota (proctor.calls.quota): learned from its answers; these state it --
    rate_limits: list[QuotaLimit] = Field(
        default_factory=list,
        title="Rate limits",
        description="The provider's quota per endpoint (requests and/or tokens per minute), if you know "
        "it; otherwise Proctor learns it from the provider's rate-limit headers and 429 answers",
    )
    quota_patience_s: float = Field(
        default=DEFAULT_PATIENCE_S,
        gt=0,
        title="Quota patience (s)",
        description="How long one model call may wait out the provider's 429 answers before it is an error",
    )

    def for_storage(self) -> dict[str, Any]:
        """The request as stored with the run and written into reports: without the database
        URL (it may hold a password), and with any secret that is not a reference cut out,
        should one ever arrive past validation (a constructed model, an old stored request)."""
        stored = self.model_dump(mode="json", exclude={"database_url"})
        for key in ("token", "webhook_url"):
            value = (stored.get("slack") or {}).get(key)
            if value is not None and not re.fullmatch(SECRET_REFERENCE_PATTERN, str(value).strip()):
                stored["slack"][key] = "***"
        return stored

    @field_validator("dask_address")
    @classmethod
    def _dask_address(cls, value: str | None) -> str | None:
        if value is None or re.fullmatch(DASK_ADDRESS_PATTERN, value):
            return value
        raise ValueError("expected a Dask scheduler address such as tcp://host:8786, or 'local' or 'local:N'")


class RunSummary(BaseModel):
    run_id: uuid.UUID
    variant: str | None = None
    suite_name: str
    status: RunStatus
    total: int
    passed: int
    failed: int
    errored: int
    pass_rate: float | None
    duration_ms: int | None
    report_dir: str | None
    database: str
    error: str | None = None
    variants: list[RunSummary] = Field(default_factory=list)
    best_variant: str | None = None
    comparison_dir: str | None = None
    repeat: int = 1
    min_pass_rate: float | None = None
    regression: dict[str, Any] | None = None
    notification: dict[str, Any] | None = None
    quota: dict[str, Any] | None = None  # the provider's quota as this run saw it (proctor.calls.quota)

    @property
    def gate_passed(self) -> bool:
        """Completed, no regression against the baseline, and every case passed (or, with
        `min_pass_rate`, the pass rate reached it): the CLI's exit code 0."""
        if self.status is not RunStatus.COMPLETED or (self.regression or {}).get("regressed"):
            return False
        if self.min_pass_rate is None:
            return self.failed == 0
        return (self.pass_rate or 0.0) >= self.min_pass_rate

    @property
    def all_passed(self) -> bool:
        return all(run.gate_passed for run in self.variants or [self])

    @property
    def regressed(self) -> bool:
        return any((run.regression or {}).get("regressed", False) for run in self.variants or [self])
