"""HoloDeck's model providers, each reached through the `openai` package.

* `openai`: the endpoint (or `OPENAI_BASE_URL`), bearer key.
* `azure_openai`: `openai.AsyncAzureOpenAI` — `endpoint` is the resource URL, `name` the
  deployment, `api_version` (default below) in the query, the key in the `api-key` header.
* `ollama`: its OpenAI-compatible API under `/v1` of the endpoint (default localhost:11434);
  Ollama ignores the key, so none is required.
* `anthropic`: Anthropic's OpenAI SDK compatibility endpoint (`https://api.anthropic.com/v1/`)
  with an API key (`api_key`, else `ANTHROPIC_API_KEY`). Only `auth_provider: api_key` can be
  honoured: Bedrock, Vertex AI and Foundry need their own SDKs and signing, which the `openai`
  package does not do, so they are refused with that reason.
"""

from __future__ import annotations

import os

import openai

from proctor.judges.credentials import CredentialError, resolve_api_key, resolve_base_url
from proctor.models.holodeck import LLMProvider

AZURE_DEFAULT_API_VERSION = "2024-10-21"
OLLAMA_DEFAULT_ENDPOINT = "http://localhost:11434"
ANTHROPIC_OPENAI_ENDPOINT = "https://api.anthropic.com/v1/"


class ProviderError(ValueError):
    """A provider setting Proctor cannot honour, with the reason."""


def provider_problem(model: LLMProvider) -> str | None:
    """Why this model cannot be called through the `openai` package, if it cannot."""
    if model.provider == "azure_openai" and not model.endpoint:
        return "provider azure_openai needs an endpoint (the resource URL)"
    if model.provider == "anthropic" and model.auth_provider not in (None, "api_key"):
        return (
            f"auth_provider {model.auth_provider!r} cannot be used: Proctor calls Anthropic through its "
            "OpenAI-compatible endpoint, which takes an API key only (auth_provider: api_key)"
        )
    return None


def _ollama_base_url(endpoint: str | None) -> str:
    base = (endpoint or OLLAMA_DEFAULT_ENDPOINT).rstrip("/")
    return base if base.endswith("/v1") else f"{base}/v1"


def _api_key(model: LLMProvider) -> str:
    if model.provider == "ollama":
        try:
            return resolve_api_key(model)
        except CredentialError:
            return "ollama"  # Ollama accepts any key
    if model.provider == "anthropic" and not model.api_key and os.environ.get("ANTHROPIC_API_KEY"):
        return os.environ["ANTHROPIC_API_KEY"]
    if model.provider == "azure_openai" and not model.api_key and os.environ.get("AZURE_OPENAI_API_KEY"):
        return os.environ["AZURE_OPENAI_API_KEY"]
    return resolve_api_key(model)


def make_client(model: LLMProvider, max_retries: int = 2) -> tuple[openai.AsyncOpenAI, str]:
    """The client for a model's provider, and the key it holds (to redact from errors)."""
    problem = provider_problem(model)
    if problem:
        raise ProviderError(problem)
    key = _api_key(model)
    if model.provider == "azure_openai":
        client: openai.AsyncOpenAI = openai.AsyncAzureOpenAI(
            azure_endpoint=model.endpoint or "",
            api_version=model.api_version or AZURE_DEFAULT_API_VERSION,
            api_key=key,
            max_retries=max_retries,
        )
        return client, key
    if model.provider == "ollama":
        base_url = _ollama_base_url(model.endpoint)
    elif model.provider == "anthropic":
        base_url = model.endpoint or ANTHROPIC_OPENAI_ENDPOINT
    else:
        base_url = resolve_base_url(model)
    return openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=max_retries), key
