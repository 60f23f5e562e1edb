"""The limits a user states for a model provider's quota: data of the run's request, read by
the quota budget in `proctor.calls.quota`."""

from __future__ import annotations

from pydantic import Field

from proctor.models.form import FormModel, tabs

DEFAULT_PATIENCE_S = 600.0  # how long one call may wait out 429s before it is an error


class QuotaLimit(FormModel):
    """A limit the user states for an endpoint: requests and/or tokens per minute."""

    endpoint: str = Field(
        default="*",
        title="Endpoint",
        description="The provider's base URL (the model's endpoint or OPENAI_BASE_URL); * for all",
    )
    rpm: float | None = Field(
        default=None,
        gt=0,
        title="Requests per minute",
        description="The provider's request limit for this endpoint",
        json_schema_extra=tabs("Limit", "Not stated"),
    )
    tpm: float | None = Field(
        default=None,
        gt=0,
        title="Tokens per minute",
        description="The provider's token limit for this endpoint",
        json_schema_extra=tabs("Limit", "Not stated"),
    )

    def matches(self, endpoint: str) -> bool:
        return self.endpoint == "*" or normalized_endpoint(self.endpoint) == normalized_endpoint(endpoint)


def normalized_endpoint(url: str) -> str:
    return url.rstrip("/").lower()
