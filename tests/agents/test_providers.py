"""A HoloDeck agent.yaml run as the agent: ${VAR}s, inline instructions, function tools from
file + function, response_format, top_p, and each provider through the `openai` package —
against a real local server speaking the wire protocol."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from proctor.agents import AgentInvoker, AgentLoadError, AgentRequest, load_target
from tests.fakes import FakeOpenAI

TOOLS = '''
def lookup_order(order_id: int, verbose: bool = False) -> dict:
    """Look up an order by its number.

    Args:
        order_id: The order's number.
        verbose: Include the order's history.
    """
    return {"order_id": order_id, "status": "shipped"}
'''


def _ask(agent_yaml: Path, text: str = "Where is order 42?"):
    load_target.cache_clear()
    invoker = AgentInvoker(load_target(f"openai:{agent_yaml}"), max_threads=1, timeout_s=10)
    try:
        return asyncio.run(invoker.invoke(AgentRequest(case_id="c", turn_id="t", input=text, thread_id="x")))
    finally:
        invoker.close()


def _agent(tmp_path: Path, model: str, extra: str = "") -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    path = tmp_path / "agent.yaml"
    path.write_text(
        textwrap.dedent(
            """
            name: support agent
            model: {model}
            instructions:
              inline: You answer questions about orders.
            tools:
              - name: lookup_order
                type: function
                description: ""
                file: tools.py
                function: lookup_order
            test_cases: [{{input: hi}}]
            """
        ).format(model=model)
        + extra
    )
    return path


def test_an_agent_yaml_runs_with_vars_inline_instructions_and_a_derived_tool_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAI() as api:
        monkeypatch.setenv("SUPPORT_ENDPOINT", api.base_url)
        monkeypatch.setenv("SUPPORT_KEY", "sk-support")
        model = '{provider: openai, name: m, endpoint: "${SUPPORT_ENDPOINT}", api_key: "${SUPPORT_KEY}", top_p: 0.5}'
        extra = "response_format:\n  type: object\n  properties: {answer: {type: string}}\n"
        api.script(
            {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": 42}}]}, '{"answer": "shipped"}'
        )
        response = _ask(_agent(tmp_path, model, extra))
        assert response.answer == '{"answer": "shipped"}'
        assert [(c.name, c.result) for c in response.tool_calls] == [
            ("lookup_order", {"order_id": 42, "status": "shipped"})
        ]
        first = api.completions[0]["body"]
        assert first["messages"][0] == {"role": "system", "content": "You answer questions about orders."}
        function = first["tools"][0]["function"]
        assert function["description"] == "Look up an order by its number."
        assert function["parameters"] == {
            "type": "object",
            "properties": {
                "order_id": {"type": "integer", "description": "The order's number."},
                "verbose": {"type": "boolean", "description": "Include the order's history."},
            },
            "required": ["order_id"],
        }
        assert first["top_p"] == 0.5
        assert first["response_format"]["type"] == "json_schema"
        assert first["response_format"]["json_schema"]["schema"]["properties"] == {
            "answer": {"type": "string"}
        }


def test_azure_openai_uses_the_deployment_api_version_and_api_key_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAI(default="ok") as api:
        monkeypatch.setenv("AZ_KEY", "az-secret")
        root = api.base_url.removesuffix("/v1")
        model = f'{{provider: azure_openai, name: my-deployment, endpoint: "{root}", api_version: "2024-10-21", api_key: "${{AZ_KEY}}"}}'
        assert _ask(_agent(tmp_path, model)).answer == "ok"
        request = api.completions[0]
        assert request["path"] == "/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21"
        assert request["headers"]["api-key"] == "az-secret"


def test_ollama_is_called_under_v1_without_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "PROCTOR_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with FakeOpenAI(default="ok") as api:
        root = api.base_url.removesuffix("/v1")
        assert (
            _ask(_agent(tmp_path, f'{{provider: ollama, name: llama3, endpoint: "{root}"}}')).answer == "ok"
        )
        assert api.completions[0]["path"] == "/v1/chat/completions"


def test_anthropic_goes_through_its_openai_compatible_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAI(default="ok") as api:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        model = f'{{provider: anthropic, name: claude-sonnet-4-5, endpoint: "{api.base_url}"}}'
        assert _ask(_agent(tmp_path, model)).answer == "ok"
        assert api.completions[0]["headers"]["authorization"] == "Bearer sk-ant-test"


def test_anthropic_through_bedrock_is_refused_with_the_reason(tmp_path: Path) -> None:
    model = "{provider: anthropic, name: claude, auth_provider: bedrock}"
    with pytest.raises(AgentLoadError, match="auth_provider 'bedrock' cannot be used"):
        _ask(_agent(tmp_path, model))


def test_the_project_config_yaml_supplies_the_provider_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from proctor.loaders import load_suite

    with FakeOpenAI(default="ok") as api:
        monkeypatch.setenv("AZ_KEY", "az-from-config")
        root = api.base_url.removesuffix("/v1")
        (tmp_path / "config.yaml").write_text(
            f'providers:\n  azure_openai:\n    provider: azure_openai\n    name: unused\n    endpoint: "{root}"\n'
            f'    api_version: "2024-06-01"\n    api_key: "${{AZ_KEY}}"\nexecution: {{llm_timeout: 5}}\n'
        )
        agent = _agent(tmp_path, "{provider: azure_openai, name: support-deployment}")
        assert _ask(agent).answer == "ok"
        request = api.completions[0]
        assert (
            request["path"]
            == "/openai/deployments/support-deployment/chat/completions?api-version=2024-06-01"
        )
        assert request["headers"]["api-key"] == "az-from-config"
        warnings = load_suite(agent).warnings
        assert any("global config read" in w and "config.yaml" in w for w in warnings)
        assert any("execution is not used" in w for w in warnings)


def test_the_agent_is_called_with_holodecks_model_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HoloDeck's `LLMProvider` defaults (temperature 0.3, max_tokens 1000) where the agent.yaml
    sets none; reasoning models get no temperature and cap with `max_completion_tokens`."""
    monkeypatch.setenv("K", "sk-test")
    with FakeOpenAI(default="ok") as api:
        endpoint = f'endpoint: "{api.base_url}", api_key: "${{K}}"'
        _ask(_agent(tmp_path, f"{{provider: openai, name: gpt-4o, {endpoint}}}"))
        _ask(
            _agent(
                tmp_path,
                f"{{provider: openai, name: o3-mini, temperature: 0.9, max_tokens: 200, {endpoint}}}",
            )
        )
        plain, reasoning = (request["body"] for request in api.completions)
    assert (plain["temperature"], plain["max_tokens"]) == (0.3, 1000) and "top_p" not in plain
    assert reasoning["max_completion_tokens"] == 200
    assert not {"temperature", "max_tokens", "top_p"} & set(reasoning)
