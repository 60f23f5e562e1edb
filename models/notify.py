"""Where a run's summary goes and when: Slack settings as a flow parameter (a UI form)."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from proctor.models.form import SECRET_REFERENCE_PATTERN, FormModel, number_properties, refused_unless, tabs

# What the form says for a secret typed in where its name belongs (never the value back).
NAMED_SECRET = "a name such as ${SLACK_BOT_TOKEN} or secret:BLOCK_NAME, never the secret itself"
# What the form says when Slack is on with nowhere to post (not "None is not of type 'string'").
CHANNEL_NEEDED = "a channel such as #agent-evals or its id, or else a Webhook URL"

# In the schema too, so the Prefect UI refuses at submit a Slack setting with nowhere to post.
NEEDS_DESTINATION = {
    "if": {"properties": {"webhook_url": {"type": "null"}}},
    "then": {
        "required": ["channel"],
        "properties": {
            "channel": {"if": {"not": {"type": "string", "minLength": 1}}, "then": {"const": CHANNEL_NEEDED}}
        },
    },
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
    """Where the run's summary is posted. With a channel, through Slack's Web API with a bot
    token, the failing cases in a thread reply; with only a webhook URL, in one message.
    Secrets are named, never typed in: ${ENV_VAR} or secret:BLOCK_NAME."""

    model_config = FormModel.model_config | {"json_schema_extra": _form_schema, "title": "Slack settings"}

    channel: str | None = Field(
        default=None,
        title="Channel",
        description="Where the summary goes (#agent-evals or a channel id), posted with the bot token; "
        "or leave it out and give a Webhook URL",
        json_schema_extra=tabs("Channel", "Webhook only"),
    )
    token: str = Field(
        default="${SLACK_BOT_TOKEN}",
        title="Bot token (its name)",
        description="The name of the bot token, never the token: ${ENV_VAR} (read where the run "
        "executes) or secret:BLOCK_NAME (a Prefect Secret block)",
        json_schema_extra={"format": "password"} | refused_unless(SECRET_REFERENCE_PATTERN, NAMED_SECRET),
    )
    webhook_url: str | None = Field(
        default=None,
        title="Webhook URL (its name)",
        description="Instead of a channel: the name of an incoming webhook URL, ${ENV_VAR} or "
        "secret:BLOCK_NAME; one message, no thread",
        json_schema_extra=tabs(
            "Name", "None", format="password", beside=refused_unless(SECRET_REFERENCE_PATTERN, NAMED_SECRET)
        ),
    )
    notify: NotifyPolicy = Field(
        default=NotifyPolicy.FAILURE,
        title="Notify",
        description="When to post: always, failure (a case failed or the run did not complete), "
        "regression, never",
    )
    api_url: str | None = Field(
        default=None,
        title="Slack API URL",
        description="Slack's Web API base URL; default https://slack.com/api/",
        json_schema_extra=tabs("URL", "slack.com"),
    )
    report_url: str | None = Field(
        default=None,
        title="Report link",
        description="Base URL where the report folders are served; the message links the run's report",
        json_schema_extra=tabs("URL", "No link"),
    )
    max_failures: int = Field(
        default=20,
        ge=1,
        le=200,
        title="Failing cases listed",
        description="Failing cases listed in the thread (1-200)",
    )
    max_retries: int = Field(
        default=4,
        ge=0,
        le=10,
        title="Retries",
        description="Retries on Slack's 429, 5xx or a lost connection (0-10)",
    )
    retry_backoff: float = Field(
        default=0.5,
        gt=0,
        le=60,
        title="First retry after (s)",
        description="Seconds before the first retry, doubling each time (a 429 waits its Retry-After)",
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
