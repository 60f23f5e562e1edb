"""Where a run's summary goes and when: Slack settings as a flow parameter (a UI form)."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from proctor.models.form import SECRET_REFERENCE_PATTERN, FormModel, number_properties

# In the schema too, so the Prefect UI refuses at submit a Slack setting with nowhere to post.
NEEDS_DESTINATION = {
    "if": {"properties": {"webhook_url": {"type": "null"}}},
    "then": {"required": ["channel"], "properties": {"channel": {"type": "string", "minLength": 1}}},
}


def _form_schema(schema: dict[str, Any], model: type | None = None) -> None:
    number_properties(schema, model)
    schema.update(NEEDS_DESTINATION)


class NotifyPolicy(StrEnum):
    """When to post: every run, runs with a failing case, runs that regressed, or never."""

    ALWAYS = "always"
    FAILURE = "failure"
    REGRESSION = "regression"
    NEVER = "never"


class SlackSettings(FormModel):
    """A Slack destination. Secrets are named, never written in: `${ENV_VAR}` or `secret:BLOCK_NAME`.

    With `channel`, the summary goes through the Web API (`chat.postMessage`, a bot token)
    and the failing cases follow in a thread reply; with only `webhook_url`, through an
    incoming webhook (one message, no thread).
    """

    model_config = FormModel.model_config | {"json_schema_extra": _form_schema}

    channel: str | None = Field(default=None, description="Channel id or name for chat.postMessage")
    token: str = Field(
        default="${SLACK_BOT_TOKEN}",
        description="Bot token, named, never typed in: `${ENV_VAR}` or `secret:BLOCK_NAME` "
        "(a Prefect Secret block)",
        json_schema_extra={"pattern": SECRET_REFERENCE_PATTERN},
    )
    webhook_url: str | None = Field(
        default=None,
        description="Incoming webhook URL, named: `${ENV_VAR}` or `secret:BLOCK_NAME`",
        json_schema_extra={"pattern": SECRET_REFERENCE_PATTERN},
    )
    notify: NotifyPolicy = Field(
        default=NotifyPolicy.FAILURE,
        title="Notify",
        description="When to post: always, failure (a case failed or the run did not complete), "
        "regression, never",
    )
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

    @field_validator("token", "webhook_url")
    @classmethod
    def _reference_only(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A secret typed into a form or a file would be stored with the run: only its name is taken."""
        if value is None or re.fullmatch(SECRET_REFERENCE_PATTERN, value.strip()):
            return value.strip() if value else value
        raise ValueError(
            f"{info.field_name} must name a secret, '${{ENV_VAR}}' or 'secret:BLOCK_NAME', not hold its value"
        )

    @model_validator(mode="after")
    def _has_destination(self) -> SlackSettings:
        if not self.channel and not self.webhook_url:
            raise ValueError("slack needs a channel (Web API) or a webhook_url")
        return self
