"""HoloDeck metrics mean in Proctor what HoloDeck 0.7.1's own code makes them mean: the
thresholds it applies when none is written, G-Eval's default parameters, the RAG metric types
it accepts, and the normalisations of `equality` and `numeric` (the parity test against
holodeck-ai's own evaluators is tests/metrics/holodeck/test_parity.py)."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from proctor.loaders import SuiteError, load_suite
from proctor.metrics import REGISTRY, BoundMetric, score_metric
from tests.factories import agent_turn, make_case, make_ctx


def _specs(tmp_path: Path, metrics: str) -> dict[str, object]:
    (tmp_path / "agent.yaml").write_text(
        "evaluations:\n  model: {provider: openai, name: gpt-4o-mini}\n  metrics:\n"
        + textwrap.indent(textwrap.dedent(metrics), "    ")
        + "test_cases: [{input: q, ground_truth: a}]\n"
    )
    return {spec.label or spec.name: spec for spec in load_suite(tmp_path / "agent.yaml").cases[0].metrics}


def _scored(spec, answer: str, expected: str):
    ctx = make_ctx(make_case(expected_response=expected), agent_turn(answer))
    return asyncio.run(score_metric(BoundMetric(spec, REGISTRY.build(spec)), ctx))


def test_nlp_metrics_without_a_threshold_never_fail_as_in_holodeck(tmp_path: Path) -> None:
    specs = _specs(
        tmp_path,
        """
        - {type: standard, metric: bleu}
        - {type: standard, metric: meteor}
        - {type: standard, metric: rouge, threshold: 0.9}
        """,
    )
    bleu = _scored(specs["bleu"], "Completely unrelated words here.", "The cat sat on the mat.")
    assert bleu.score < 0.1 and bleu.passed is True  # HoloDeck's BLEUEvaluator: passed without a threshold
    assert _scored(specs["meteor"], "Nothing alike.", "The cat sat on the mat.").passed is True
    rouge = _scored(specs["rouge"], "The cat sat.", "The cat sat on the mat.")
    assert rouge.passed is False and rouge.threshold == 0.9  # a written threshold still applies


def test_rouge_is_tokenized_as_holodeck_tokenizes_it_without_stemming(tmp_path: Path) -> None:
    rouge = _specs(tmp_path, "- {type: standard, metric: rouge}\n")["rouge"]
    assert rouge.args["tokenizer"] == "rouge_score"
    # rouge-score's tokenizer unstemmed: "running" is not "runs"; "Zürich" loses its "ü"
    assert _scored(rouge, "The dogs running", "The dog runs").score == pytest.approx(1 / 3)
    assert _scored(rouge, "Zürich", "Zrich").score == 0.0  # "z" + "rich" against "zrich"


def test_geval_defaults_to_the_answer_alone_and_half_marks(tmp_path: Path) -> None:
    specs = _specs(
        tmp_path,
        """
        - {type: geval, name: Tone, criteria: Polite}
        - {type: geval, name: Facts, criteria: Correct, evaluation_params: [input, retrieval_context, expected_output]}
        - {type: rag, metric_type: faithfulness}
        """,
    )
    assert specs["Tone"].args["evaluation_params"] == ["actual_output"]  # GEvalMetric's default
    assert specs["Facts"].args["evaluation_params"] == ["input", "retrieval_context", "expected_output"]
    assert specs["Tone"].threshold == specs["faithfulness"].threshold == 0.5


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ("{type: rag, metric_type: faithfullness}", "unknown rag metric 'faithfullness'; expected one of"),
        ("{type: geval, name: T, criteria: c, evaluation_params: [answer]}", "unknown answer"),
        ("{type: geval, name: T, criteria: c, evaluation_params: []}", "expected a non-empty list"),
    ],
)
def test_metrics_holodeck_refuses_are_refused(tmp_path: Path, metric: str, message: str) -> None:
    with pytest.raises(SuiteError) as caught:
        _specs(tmp_path, f"- {metric}\n")
    assert any(message in str(problem) for problem in caught.value.problems), caught.value.problems


def test_equality_folds_case_as_holodeck_does(tmp_path: Path) -> None:
    equality = _specs(tmp_path, "- {type: standard, metric: equality, case_insensitive: true}\n")["equality"]
    assert _scored(equality, "STRASSE", "straße").passed is True  # casefold, not lower


def test_numeric_on_a_yes_no_truth_fails_the_metric_as_holodeck_does(tmp_path: Path) -> None:
    numeric = _specs(tmp_path, "- {type: standard, metric: numeric}\n")["numeric"]
    result = _scored(numeric, "yes", "yes")
    assert (result.score, result.passed, result.error) == (0.0, False, None)
    assert "not a number" in result.reason


def test_deepeval_judges_take_holodecks_settings_not_the_agents(tmp_path: Path) -> None:
    """With no evaluations model G-Eval and RAG are judged as HoloDeck 0.7.1's code judges them:
    by DeepEval's default judge (Ollama gpt-oss:20b on localhost), not the agent's model, at
    HoloDeck's DeepEval settings: temperature 0 (1.0 on Azure), without the agent's
    max_tokens; a metric's own model is its judge."""
    (tmp_path / "agent.yaml").write_text(
        "model: {provider: openai, name: gpt-4o, temperature: 0.7, max_tokens: 50}\n"
        "instructions: {inline: hi}\n"
        "evaluations:\n  metrics:\n"
        "    - {type: geval, name: Tone, criteria: Polite}\n"
        "    - {type: rag, metric_type: faithfulness}\n"
        "    - {type: geval, name: Azure, criteria: Polite, model: {provider: azure_openai, name: d, endpoint: 'http://h'}}\n"
        "test_cases: [{input: q, ground_truth: a}]\n"
    )
    specs = {spec.label: spec for spec in load_suite(tmp_path / "agent.yaml").cases[0].metrics}
    for label, temperature in (("Tone", 0.0), ("faithfulness", 0.0), ("Azure", 1.0)):
        assert (specs[label].model.temperature, specs[label].model.max_tokens) == (temperature, None)
    for label in ("Tone", "faithfulness"):
        judge = specs[label].model
        assert (judge.provider, judge.name, judge.endpoint) == (
            "ollama",
            "gpt-oss:20b",
            "http://localhost:11434",
        )
    assert (specs["Azure"].model.provider, specs["Azure"].model.name) == ("azure_openai", "d")


def test_a_judge_left_to_deepevals_default_is_said(tmp_path: Path) -> None:
    """No `evaluations.model` and no model on the metric: Proctor judges as HoloDeck 0.7.1's
    code does, with DeepEval's default judge (Ollama gpt-oss:20b), where HoloDeck's
    documentation says the agent's model. The load says so, naming the metrics; with a judge
    named, nothing is said."""
    agent = "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: Be brief.}\n"
    metrics = (
        "evaluations:\n  metrics:\n    - {type: geval, name: Polite, criteria: Polite}\n"
        "    - {type: rag, metric_type: answer_relevancy}\n    - {type: standard, metric: bleu}\n"
        "test_cases: [{input: q, ground_truth: a}]\n"
    )
    (tmp_path / "agent.yaml").write_text(agent + metrics)
    [warning] = [w for w in load_suite(tmp_path / "agent.yaml").warnings if "DeepEval's default" in w]
    assert "Polite, answer_relevancy judged by DeepEval's default judge, Ollama gpt-oss:20b" in warning
    assert "not the agent's model, openai gpt-4o" in warning and "bleu" not in warning
    named = metrics.replace("  metrics:", "  model: {provider: openai, name: gpt-4o-mini}\n  metrics:")
    (tmp_path / "agent.yaml").write_text(agent + named)
    assert not [w for w in load_suite(tmp_path / "agent.yaml").warnings if "DeepEval's default" in w]
