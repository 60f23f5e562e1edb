"""`validate` on HoloDeck files refuses what `run` would refuse, before any call; `--agent` says
once what it overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from proctor.cli import EXIT_BAD_INPUT, EXIT_PASSED, main
from proctor.models.request import EvaluationRequest
from proctor.run.preparation import prepare

FULL = Path(__file__).resolve().parents[1] / "data" / "holodeck" / "full_schema" / "agent.yaml"


@pytest.fixture
def support_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPPORT_ENDPOINT", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SUPPORT_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge")


@pytest.mark.usefixtures("support_env")
def test_validate_accepts_the_full_schema_and_names_what_is_not_used(capsys) -> None:
    assert main(["validate", str(FULL)]) == EXIT_PASSED
    err = capsys.readouterr().err
    for section in ("execution", "observability", "deployment"):
        assert f"{section} is not used" in err


def test_validate_refuses_an_agent_run_would_refuse(tmp_path: Path, capsys) -> None:
    (tmp_path / "agent.yaml").write_text(
        "name: a\nmodel: {provider: anthropic, name: claude, auth_provider: vertex}\n"
        "instructions: {inline: hi}\ntest_cases: [{input: q, evaluations: [{metric: contains, values: [x]}]}]\n"
    )
    assert main(["validate", str(tmp_path / "agent.yaml")]) == EXIT_BAD_INPUT
    assert "auth_provider 'vertex' cannot be used" in capsys.readouterr().err


def test_a_missing_instructions_file_is_named_at_its_line(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "agent.yaml").write_text(
        "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions:\n  file: prompts/system.md\n"
        "test_cases: [{input: q, evaluations: [{metric: contains, values: [x]}]}]\n"
    )
    assert main(["validate", str(tmp_path / "agent.yaml")]) == EXIT_BAD_INPUT
    assert "instructions.file (line 4): prompts/system.md: file not found" in capsys.readouterr().err


def test_a_judged_metric_with_no_model_needs_no_key_for_deepevals_default_judge(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """No model on the metric and no evaluations block: HoloDeck 0.7.1's code has DeepEval judge
    with its default, Ollama gpt-oss:20b on localhost, which takes no key; validate says who
    judges instead of asking for OpenAI's key."""
    for name in ("OPENAI_API_KEY", "PROCTOR_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "agent.yaml").write_text(
        "test_cases:\n  - name: c\n    turns:\n      - input: q\n        evaluations: [{type: geval, name: G, criteria: c}]\n"
    )
    assert main(["validate", str(tmp_path / "agent.yaml")]) == EXIT_PASSED
    err = capsys.readouterr().err
    assert "no API key" not in err
    assert "G judged by DeepEval's default judge, Ollama gpt-oss:20b on localhost:11434" in err


def test_a_model_without_its_key_is_named_at_the_line_of_the_model_that_needs_it(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's model and each judge's: the metric's own model, else evaluations.model,
    else DeepEval's default (Ollama, no key), as HoloDeck 0.7.1's code picks the judge."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "agent.yaml").write_text(
        "name: a\n"
        "model: {provider: anthropic, name: claude-sonnet-4-5}\n"
        "instructions: {inline: hi}\n"
        "evaluations:\n"
        "  metrics:\n"
        "    - {type: geval, name: Polite, criteria: c}\n"
        "    - type: rag\n"
        "      metric_type: answer_relevancy\n"
        "      model: {provider: azure_openai, name: judge, endpoint: 'https://x.openai.azure.com'}\n"
        "test_cases: [{input: q, ground_truth: a}]\n"
    )
    assert main(["validate", str(tmp_path / "agent.yaml")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    problems = [line.strip() for line in err.splitlines()[1:]]
    assert any("model (line 2): no API key for provider anthropic" in p for p in problems), err
    assert not any("metric 'geval'" in p for p in problems), err  # DeepEval's default judge: Ollama
    assert any("AZURE_OPENAI_API_KEY" in p and p.endswith("(line 9)") for p in problems), err


@pytest.mark.usefixtures("support_env")
def test_agent_override_is_said_once_and_pass_agent_is_not(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("def agent(request):\n    return 'shipped'\n")
    suite, _, target = prepare(EvaluationRequest(suite=str(FULL), agent=f"{agent}:agent"))
    overrides = [w for w in suite.warnings if "replaces the agent.yaml's" in w]
    assert len(overrides) == 1 and "model, instructions, tools" in overrides[0]
    assert not any("pass --agent" in w for w in suite.warnings)
