"""Where a model's endpoint and API key come from: the environment or a Prefect Secret block.

A suite names a key only by reference (`${MY_KEY}` or `secret:block-name`), so keys never sit
in suite files, reports or the database; the resolved value lives only in the client.

Each provider takes its own credential and no other: a model's `api_key` reference, else its
provider's own variables (`PROVIDER_KEY_ENV`). OpenAI's key (or Proctor's judge key) is never
sent to Azure, Anthropic or Ollama, and Ollama, which checks no key, is sent none.
"""

from __future__ import annotations

import os

from proctor import secrets
from proctor.env import ENV_REFERENCE
from proctor.models.holodeck import LLMProvider

API_KEY_ENV = ("PROCTOR_JUDGE_API_KEY", "OPENAI_API_KEY")
PROVIDER_KEY_ENV: dict[str, tuple[str, ...]] = {
    "openai": API_KEY_ENV,
    "azure_openai": ("AZURE_OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "ollama": (),  # Ollama checks no key: none is sent unless the model names one
}
BASE_URL_ENV = ("PROCTOR_JUDGE_BASE_URL", "OPENAI_BASE_URL")
ECHOED_PREFIX = secrets.ECHOED_PREFIX


class CredentialError(RuntimeError):
    """No API key could be found for a judge; says where Proctor looked."""


def resolve_reference(reference: str, field: str = "api_key") -> str:
    """The value a `${ENV_VAR}` or `secret:<block>` reference points at; a literal is refused."""
    env = ENV_REFERENCE.fullmatch(reference.strip())
    if env:
        value = os.environ.get(env.group(1))
        if not value:
            raise CredentialError(f"environment variable {env.group(1)} is not set")
        return _remembered(value)
    if reference.startswith("secret:"):
        name = reference.removeprefix("secret:")
        if not name.strip():
            raise CredentialError(f"{field}: 'secret:' needs the name of a Prefect Secret block")
        from prefect.blocks.system import Secret

        try:  # `_sync`: called from async code too (tasks, the pipeline), where `load` would
            # otherwise hand back a coroutine
            return _remembered(str(Secret.load(name, _sync=True).get()))
        except Exception as error:  # the block's name is safe to show, never its value
            raise CredentialError(f"Prefect Secret block {name!r} could not be loaded: {error}") from None
    raise CredentialError(
        f"{field} must be a reference, '${{ENV_VAR}}' or 'secret:<prefect-secret-block>', not a literal value"
    )


def _remembered(value: str) -> str:
    """A resolved secret, known from now on to `proctor.secrets` (scrubbed from everything
    stored, printed or logged); a URL's secret path and password too."""
    if "://" in value:
        secrets.remember_url(value)
    else:
        secrets.remember(value)
    return value


def redact(text: str, *values: str | None) -> str:
    """`text` with every secret cut out: whole, and wherever its first characters appear,
    because servers echo keys back in their errors, whole or masked (OpenAI's 401 says
    "Incorrect API key provided: sk-abc12****wxyz"). Error messages pass through here before
    they are stored, logged or reported; so does everything else, through `secrets.scrub`."""
    return secrets.scrub(secrets.cut(text, [value for value in values if value]))


def resolve_api_key(provider: LLMProvider | None) -> str | None:
    """The key for a model's own provider: its `api_key` reference, else that provider's own
    environment variables (no model: OpenAI's). None only for Ollama without a key."""
    if provider is not None and provider.api_key:
        return resolve_reference(provider.api_key)
    name = provider.provider if provider is not None else "openai"
    variables = PROVIDER_KEY_ENV.get(name, API_KEY_ENV)
    for variable in variables:
        if os.environ.get(variable):
            return _remembered(os.environ[variable])
    if not variables:
        return None
    if name == "openai":
        raise CredentialError(
            f"no API key for the judge: set {' or '.join(API_KEY_ENV)}, or give the metric's model an "
            "api_key reference ('${ENV_VAR}' or 'secret:<prefect-secret-block>')"
        )
    raise CredentialError(
        f"no API key for provider {name}: set {' or '.join(variables)}, or give the model an api_key "
        f"reference ('${{ENV_VAR}}' or 'secret:<prefect-secret-block>'); another provider's key is "
        "never sent to it"
    )


def resolve_base_url(provider: LLMProvider | None) -> str | None:
    """An OpenAI model's endpoint: its own, else `PROCTOR_JUDGE_BASE_URL` or `OPENAI_BASE_URL`
    (the hosts those keys belong to). Other providers' URLs are `proctor.agents.providers`'."""
    if provider is not None and provider.endpoint:
        return provider.endpoint
    if provider is not None and provider.provider != "openai":
        return None
    for name in BASE_URL_ENV:
        if os.environ.get(name):
            return os.environ[name]
    return None
