"""HoloDeck's model providers, each reached through the `openai` package: by the agent under
test and by every judge alike (`judge_client`), so a judge reaches the same host, path, headers
and API version as the agent would with that model.

* `openai`: the endpoint (or `PROCTOR_JUDGE_BASE_URL` / `OPENAI_BASE_URL`), bearer key
  (`api_key`, else `PROCTOR_JUDGE_API_KEY` / `OPENAI_API_KEY`).
* `azure_openai`: `openai.AsyncAzureOpenAI` — `endpoint` is the resource URL, `name` the
  deployment, `api_version` (default below) in the query, the key (`api_key`, else
  `AZURE_OPENAI_API_KEY`) in the `api-key` header.
* `ollama`: its OpenAI-compatible API under `/v1` of the endpoint (default localhost:11434);
  Ollama checks no key, so none is sent unless the model names one (the `openai` package
  needs some string: a placeholder, never a real key, goes in the header).
* `anthropic`: Anthropic's OpenAI SDK compatibility endpoint (`https://api.anthropic.com/v1/`)
  with an API key (`api_key`, else `ANTHROPIC_API_KEY`). Only `auth_provider: api_key` can be
  honoured: the others are refused with the reason (`AUTH_PROVIDERS`).

A key goes only to its own provider (`proctor.judges.credentials.resolve_api_key`).
"""

from __future__ import annotations

from typing import Any

import openai

from proctor.calls.quota_http import http_client
from proctor.judges.client import JudgeClient
from proctor.judges.credentials import resolve_api_key, resolve_base_url
from proctor.models.holodeck import LLMProvider

AZURE_DEFAULT_API_VERSION = "2024-10-21"
OLLAMA_DEFAULT_ENDPOINT = "http://localhost:11434"
ANTHROPIC_OPENAI_ENDPOINT = "https://api.anthropic.com/v1/"
# HoloDeck's `LLMProvider` defaults (models/llm.py): what an agent's model is called with when
# the agent.yaml leaves them unset.
HOLODECK_TEMPERATURE = 0.3
HOLODECK_MAX_TOKENS = 1000
NO_KEY = "no-key"  # what the `openai` package sends Ollama when the model names no key


class ProviderError(ValueError):
    """A provider setting Proctor cannot honour, with the reason."""


def provider_problem(model: LLMProvider | None) -> str | None:
    """Why this model cannot be called through the `openai` package, if it cannot."""
    if model is None:
        return None
    if model.provider == "azure_openai" and not model.endpoint:
        return "provider azure_openai needs an endpoint (the resource URL)"
    if model.provider == "anthropic" and model.auth_provider not in (None, "api_key"):
        return auth_problem(str(model.auth_provider))
    return None


# HoloDeck's `AuthProvider`s (models/claude_config.py) and what its Claude backend does with each
# (lib/backends/validators.py `validate_credentials`): None where Proctor honours it, else why not
# and what to do instead. Proctor calls Anthropic through its OpenAI-compatible endpoint with the
# `openai` package, which sends one bearer API key.
AUTH_PROVIDERS: dict[str, str | None] = {
    "api_key": None,
    "oauth_token": (
        "HoloDeck hands CLAUDE_CODE_OAUTH_TOKEN (a Claude subscription token from `claude setup-token`) "
        "to the Claude Code CLI its Claude backend runs; that token is for Claude Code, and Proctor calls "
        "Anthropic's API itself, which takes an API key"
    ),
    "bedrock": "Claude on Amazon Bedrock needs AWS request signing, which the openai package does not do",
    "vertex": (
        "Claude on Vertex AI needs Google Cloud credentials and its own API, which the openai package "
        "does not speak"
    ),
    "foundry": (
        "Claude on Microsoft Foundry needs its own endpoint and Azure credentials, which Proctor "
        "does not reach"
    ),
    "custom": (
        "HoloDeck sends ANTHROPIC_AUTH_TOKEN to a third-party endpoint speaking Anthropic's Messages API; "
        "Proctor speaks the OpenAI-compatible chat API (if your endpoint offers one, use provider: openai "
        "with its endpoint)"
    ),
}
AUTH_WAY_OUT = "set auth_provider: api_key (or remove it) and put the key in ANTHROPIC_API_KEY or api_key"


def auth_problem(auth_provider: str) -> str | None:
    """Why an Anthropic model's auth_provider cannot be used, and what to do (None: it can)."""
    reason = AUTH_PROVIDERS.get(auth_provider, f"{auth_provider!r} is not one of HoloDeck's auth providers")
    if reason is None:
        return None
    return f"auth_provider {auth_provider!r} cannot be used: {reason}; {AUTH_WAY_OUT}"


def _ollama_base_url(endpoint: str | None) -> str:
    base = (endpoint or OLLAMA_DEFAULT_ENDPOINT).rstrip("/")
    return base if base.endswith("/v1") else f"{base}/v1"


def base_url_of(model: LLMProvider | None) -> str | None:
    """Where a model's calls go, as one string (for the judge cache and reports); None: OpenAI's
    default. Azure's names the deployment and API version, which the path and query carry."""
    if model is None or model.provider == "openai":
        return resolve_base_url(model)
    if model.provider == "azure_openai":
        endpoint = (model.endpoint or "").rstrip("/")
        version = model.api_version or AZURE_DEFAULT_API_VERSION
        return f"{endpoint}/openai/deployments/{model.name}?api-version={version}"
    if model.provider == "ollama":
        return _ollama_base_url(model.endpoint)
    return model.endpoint or ANTHROPIC_OPENAI_ENDPOINT


def make_client(
    model: LLMProvider | None, max_retries: int = 2, event_hooks: dict[str, list[Any]] | None = None
) -> tuple[openai.AsyncOpenAI, str]:
    """The client for a model's provider (no model: OpenAI's), and the key it holds ("" for
    none), to redact from errors; `event_hooks` are httpx's, called as each request goes out
    and each reply comes in."""
    problem = provider_problem(model)
    if problem:
        raise ProviderError(problem)
    key = resolve_api_key(model) or ""
    # every request through the endpoint's quota budget, shared by agent and judges (proctor.calls.quota)
    http: dict[str, Any] = {"http_client": http_client(base_url_of(model), key, event_hooks=event_hooks)}
    if model is not None and model.provider == "azure_openai":
        client: openai.AsyncOpenAI = openai.AsyncAzureOpenAI(
            azure_endpoint=model.endpoint or "",
            api_version=model.api_version or AZURE_DEFAULT_API_VERSION,
            api_key=key,
            max_retries=max_retries,
            **http,
        )
        return client, key
    client = openai.AsyncOpenAI(
        base_url=base_url_of(model), api_key=key or NO_KEY, max_retries=max_retries, **http
    )
    return client, key


def judge_client(model: LLMProvider | None) -> JudgeClient:
    """A judge's client for its model's provider; retries are the metric runner's (none here)."""
    client, key = make_client(model, max_retries=0)
    return JudgeClient(base_url=base_url_of(model), api_key=key, client=client)


def is_reasoning_model(name: str) -> bool:
    """HoloDeck's rule (`_is_reasoning_model`): o1/o3/o4 and gpt-5 models take no temperature
    or top_p, and cap their output with `max_completion_tokens` in the chat API."""
    return name.strip().lower().startswith(("o1", "o3", "o4", "gpt-5"))


def sampling(model: LLMProvider) -> dict[str, Any]:
    """The agent's sampling settings as HoloDeck sends them: its defaults (temperature 0.3,
    max_tokens 1000) where the model sets none; none of temperature/top_p for reasoning models."""
    max_tokens = model.max_tokens or HOLODECK_MAX_TOKENS
    if is_reasoning_model(model.name):
        return {"max_completion_tokens": max_tokens}
    settings: dict[str, Any] = {
        "temperature": HOLODECK_TEMPERATURE if model.temperature is None else model.temperature,
        "max_tokens": max_tokens,
    }
    if model.top_p is not None:
        settings["top_p"] = model.top_p
    return settings
