"""API keys come from the environment or a Prefect Secret block, never from a suite file."""

from __future__ import annotations

import pytest

from proctor.judges import CredentialError, resolve_api_key, resolve_base_url
from proctor.models.holodeck import LLMProvider


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PROCTOR_JUDGE_API_KEY", "OPENAI_API_KEY", "PROCTOR_JUDGE_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert resolve_api_key(None) == "sk-env"
    monkeypatch.setenv("PROCTOR_JUDGE_API_KEY", "sk-proctor")
    assert resolve_api_key(None) == "sk-proctor"


def test_a_metric_may_name_its_own_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_JUDGE_KEY", "sk-team")
    assert resolve_api_key(LLMProvider(name="gpt-4o", api_key="${TEAM_JUDGE_KEY}")) == "sk-team"


def test_a_literal_key_in_a_suite_is_refused() -> None:
    with pytest.raises(CredentialError, match="reference"):
        resolve_api_key(LLMProvider(name="gpt-4o", api_key="sk-live-abc123"))


def test_a_missing_key_says_where_proctor_looked() -> None:
    with pytest.raises(CredentialError, match="PROCTOR_JUDGE_API_KEY or OPENAI_API_KEY"):
        resolve_api_key(None)
    with pytest.raises(CredentialError, match="UNSET_VAR is not set"):
        resolve_api_key(LLMProvider(name="gpt-4o", api_key="${UNSET_VAR}"))


def test_the_endpoint_comes_from_the_model_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_base_url(None) is None
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert resolve_base_url(None) == "http://127.0.0.1:9/v1"
    assert resolve_base_url(LLMProvider(name="m", endpoint="http://h/v1")) == "http://h/v1"


def test_the_key_never_shows_in_a_dumped_model() -> None:
    provider = LLMProvider(name="gpt-4o", api_key="${TEAM_JUDGE_KEY}")
    assert "api_key" not in provider.model_dump() and "TEAM_JUDGE_KEY" not in repr(provider)


@pytest.mark.usefixtures("prefect_harness")
def test_a_prefect_secret_block_holds_the_key() -> None:
    from prefect.blocks.system import Secret

    Secret(value="sk-from-block").save("proctor-test-judge-key", overwrite=True)
    assert (
        resolve_api_key(LLMProvider(name="gpt-4o", api_key="secret:proctor-test-judge-key"))
        == "sk-from-block"
    )
    with pytest.raises(CredentialError, match="Prefect Secret block 'no-such-block' could not be loaded"):
        resolve_api_key(LLMProvider(name="gpt-4o", api_key="secret:no-such-block"))


def test_each_provider_takes_only_its_own_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("PROCTOR_JUDGE_API_KEY", "sk-proctor")
    for name in ("AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert resolve_api_key(LLMProvider(provider="ollama", name="llama3")) is None
    with pytest.raises(CredentialError, match="set AZURE_OPENAI_API_KEY"):
        resolve_api_key(LLMProvider(provider="azure_openai", name="d", endpoint="http://h"))
    with pytest.raises(CredentialError, match="set ANTHROPIC_API_KEY"):
        resolve_api_key(LLMProvider(provider="anthropic", name="claude"))
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "az")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ant")
    assert resolve_api_key(LLMProvider(provider="azure_openai", name="d", endpoint="http://h")) == "az"
    assert resolve_api_key(LLMProvider(provider="anthropic", name="claude")) == "ant"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-proxy/v1")  # OpenAI's host, not Ollama's
    assert resolve_base_url(LLMProvider(provider="ollama", name="llama3")) is None
