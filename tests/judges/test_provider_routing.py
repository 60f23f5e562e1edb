"""Judges reach a HoloDeck model's provider as the agent does, each with its own key only.

`proctor run` on an agent.yaml whose agent and judges (G-Eval, RAG faithfulness, judged by
`evaluations.model`, the same model as the agent's) use Azure OpenAI or Ollama, against a local server that answers only that provider's real path (Azure's
deployment path with `api-version` and an `api-key` header; Ollama's `/v1`): every call, the
agent's and the judges', lands there, and no host ever receives another provider's key.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.cli import EXIT_BAD_INPUT, EXIT_PASSED, main
from proctor.models.tables import MetricResultRow
from proctor.storage import get_engine
from tests.fakes import FakeOpenAI, judged

OPENAI_SECRET = "sk-openai-secret-0123456789"
JUDGE_SECRET = "sk-proctor-judge-secret-0123456789"


def _reply(body: dict) -> str:
    """A judge is asked with Proctor's evaluator prompt; anything else is the agent."""
    first = body["messages"][0]["content"]
    return judged(5, "grounded") if first.startswith("You are an impartial evaluator") else "We open at 9am."


@pytest.fixture(autouse=True)
def _other_providers_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI's and Proctor's judge keys are set: none of them may reach another provider."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_SECRET)
    monkeypatch.setenv("PROCTOR_JUDGE_API_KEY", JUDGE_SECRET)
    for name in ("AZURE_OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "PROCTOR_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _suite(tmp_path: Path, model: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(
        textwrap.dedent(
            """
            name: opening-hours
            model: {model}
            instructions:
              inline: You answer questions about opening hours.
            evaluations:
              model: {model}
              metrics:
                - type: geval
                  name: Correctness
                  criteria: The answer gives the opening time.
                  evaluation_steps: [Check the answer names a time.]
                  threshold: 0.8
                - type: rag
                  metric_type: faithfulness
                  threshold: 0.8
            test_cases:
              - name: hours
                input: When do you open?
                ground_truth: We open at 9am.
                retrieval_context: [The shop opens at 9am.]
            """
        ).format(model=model)
    )
    return path


def _run(tmp_path: Path, suite: Path) -> tuple[int, list[tuple]]:
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    code = main(
        ["run", str(suite), "--no-prefect", "--no-progress", "--db", database, "--output", str(tmp_path)]
    )
    with Session(get_engine(database)) as session:
        rows = session.exec(
            select(
                MetricResultRow.metric_name,
                MetricResultRow.score,
                MetricResultRow.passed,
                MetricResultRow.error,
            )
        ).all()
    return code, sorted(tuple(row) for row in rows)


def _headers_hold_no_foreign_key(api: FakeOpenAI) -> None:
    for request in api.requests:
        sent = " ".join(request["headers"].values())
        assert OPENAI_SECRET not in sent and JUDGE_SECRET not in sent, request["headers"]


SCORED = [("Correctness", 1.0, True, None), ("faithfulness", 1.0, True, None)]


@pytest.mark.parametrize("key_from", ["model", "environment"])
def test_azure_judges_use_the_deployment_path_api_version_and_api_key_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key_from: str
) -> None:
    with FakeOpenAI(default=_reply, speaks="azure") as api:
        root = api.base_url.removesuffix("/v1")
        if key_from == "model":
            monkeypatch.setenv("AZ_KEY", "az-secret")
            key = ', api_key: "${AZ_KEY}"'
        else:
            monkeypatch.setenv("AZURE_OPENAI_API_KEY", "az-secret")
            key = ""
        model = f'{{provider: azure_openai, name: hours-deployment, endpoint: "{root}", api_version: "2024-06-01"{key}}}'
        code, metrics = _run(tmp_path, _suite(tmp_path, model))
        assert (code, metrics) == (EXIT_PASSED, SCORED)
        assert len(api.requests) == 3  # the agent, then the two judges
        for request in api.requests:
            assert (
                request["path"]
                == "/openai/deployments/hours-deployment/chat/completions?api-version=2024-06-01"
            )
            assert request["headers"]["api-key"] == "az-secret"
        agent, *judges = (request["body"] for request in api.requests)
        assert (agent["temperature"], agent["max_tokens"]) == (0.3, 1000)  # HoloDeck's model defaults
        # DeepEval's Azure judge, as HoloDeck builds it: temperature 1.0, no max_tokens
        assert all(judge["temperature"] == 1.0 and "max_tokens" not in judge for judge in judges)
        _headers_hold_no_foreign_key(api)


def test_ollama_judges_use_its_openai_compatible_path_and_are_sent_no_key(tmp_path: Path) -> None:
    with FakeOpenAI(default=_reply, speaks="ollama") as api:
        root = api.base_url.removesuffix("/v1")
        code, metrics = _run(
            tmp_path, _suite(tmp_path, f'{{provider: ollama, name: llama3, endpoint: "{root}"}}')
        )
        assert (code, metrics) == (EXIT_PASSED, SCORED)
        assert [request["path"] for request in api.requests] == ["/v1/chat/completions"] * 3
        judges = [request["body"] for request in api.requests[1:]]
        assert all(judge["temperature"] == 0.0 and "max_tokens" not in judge for judge in judges)
        _headers_hold_no_foreign_key(api)


def test_a_strict_host_answers_a_judge_on_the_wrong_path_with_404(tmp_path: Path) -> None:
    """What judges met before they followed the provider: the 404 every Azure/Ollama host gives
    `<endpoint>/chat/completions` (the fake is as strict as the real host)."""
    import openai

    with FakeOpenAI(default=_reply, speaks="azure") as api:
        client = openai.OpenAI(base_url=api.base_url.removesuffix("/v1"), api_key="k", max_retries=0)
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])


def test_anthropic_without_its_own_key_is_refused_before_any_call(tmp_path: Path, capsys) -> None:
    with FakeOpenAI(default=_reply) as api:
        model = f'{{provider: anthropic, name: claude-sonnet-4-5, endpoint: "{api.base_url}"}}'
        code, metrics = _run(tmp_path, _suite(tmp_path, model))
        assert (code, metrics) == (EXIT_BAD_INPUT, [])
        assert "ANTHROPIC_API_KEY" in capsys.readouterr().err
        assert api.requests == []


def test_anthropic_judges_get_the_anthropic_key_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    with FakeOpenAI(default=_reply) as api:
        model = f'{{provider: anthropic, name: claude-sonnet-4-5, endpoint: "{api.base_url}"}}'
        code, metrics = _run(tmp_path, _suite(tmp_path, model))
        assert (code, metrics) == (EXIT_PASSED, SCORED)
        assert {request["headers"]["authorization"] for request in api.requests} == {"Bearer sk-ant-secret"}
        _headers_hold_no_foreign_key(api)
