"""Where a run's summary goes and when: Slack settings as a flow parameter (a UI form)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field, model_validator


class NotifyPolicy(StrEnum):
    """When to post: every run, runs with a failing case, runs that regressed, or never."""

    ALWAYS = "always"
    FAILURE = "failure"
    REGRESSION = "regression"
    NEVER = "never"


class SlackSettings(BaseModel):
    """A Slack destination. Secrets are references only: '${ENV_VAR}' or 'secret:<block>'.

    With `channel`, the summary goes through the Web API (`chat.postMessage`, a bot token)
    and the failing cases follow in a thread reply; with only `webhook_url`, through an
    incoming webhook (one message, no thread).
    """

    channel: str | None = Field(default=None, description="Channel id or name for chat.postMessage")
    token: str = Field(
        default="${SLACK_BOT_TOKEN}",
        description="Bot token reference: '${ENV_VAR}' or 'secret:<prefect-secret-block>'",
    )
    webhook_url: str | None = Field(
        default=None, description="Incoming webhook reference ('${ENV_VAR}' or 'secret:<block>')"
    )
    notify: NotifyPolicy = Field(default=NotifyPolicy.FAILURE, description="When to post")
    api_url: str | None = Field(
        default=None, description="Slack Web API base URL; default https://slack.com/api/"
    )
    report_url: str | None = Field(
        default=None, description="Base URL where report folders are served, for the report link"
    )
    max_failures: int = Field(default=20, ge=1, le=200, description="Failing cases listed in the thread")
    max_retries: int = Field(
        default=4, ge=0, le=10, description="Retries on Slack's 429, 5xx or a lost connection"
    )
    retry_backoff: float = Field(
        default=0.5,
        gt=0,
        le=60,
        description="Seconds before the first retry, doubling each time (429 waits Retry-After)",
    )

    @model_validator(mode="after")
    def _has_destination(self) -> SlackSettings:
        if not self.channel and not self.webhook_url:
            raise ValueError("slack needs a channel (Web API) or a webhook_url")
        return self
