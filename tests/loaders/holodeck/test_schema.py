"""HoloDeck's whole agent.yaml schema: every field loads, is honoured or named; unknown keys are
errors at every level; metric names resolve exactly."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from proctor.loaders import SuiteError, load_suite
from proctor.metrics import REGISTRY
from proctor.metrics.judged import case_variables
from proctor.models.case import MetricSpec
from tests.factories import agent_turn, make_case, make_ctx

DATA = Path(__file__).resolve().parents[2] / "data" / "holodeck"


@pytest.fixture
def full_schema(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SUPPORT_ENDPOINT", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SUPPORT_API_KEY", "sk-test")
    return load_suite(DATA / "full_schema" / "agent.yaml")


def test_a_file_using_every_field_loads(full_schema) -> None:
    single, conversation = full_schema.cases
    assert [spec.name for spec in single.metrics] == ["equality"]
    (turn,) = single.turns
    assert turn.retrieval_context == ["Order 42 shipped on 3 May."]
    assert [(t.name, t.count) for t in turn.expected_tools] == [("lookup_order", 1), ("lookup_order", 1)]
    assert turn.expected_tools[1].args["verbose"] == {"regex": "true|false"}
    assert single.files[0].description == "The order record"
    first, second = conversation.turns
    assert conversation.score_per_turn
    assert first.metadata == {"turn_config": {"turn_program": "lookup"}, "files": [0]}  # its own file
    assert [spec.args for spec in first.metrics] == [{"absolute_tolerance": 0.001}]
    assert second.expected_response == "100%" and second.metrics[0].args == {"accept_percent": True}
    # with no evaluations of its own the case takes the whole block, labels kept
    labels = [spec.label or spec.name for spec in conversation.metrics]
    assert labels == [
        "equality",
        "numeric",
        "bleu",
        "rouge",
        "meteor",
        "coherence",
        "Politeness",
        "faithfulness",
        "answer_relevancy",
        "Mentions order",
    ]


def test_variables_of_unused_sections_need_not_be_set(full_schema) -> None:
    # observability and deployment name ${...} variables that are not set: the file still loads
    assert full_schema.cases


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("yaml", "where", "line"),
    [
        (
            "name: a\nevaluation:\n  metrics: [{metric: contains, values: [x]}]\ntest_cases: [{input: q}]\n",
            "evaluation",
            2,
        ),
        (
            "evaluations:\n  metric: [{metric: contains, values: [x]}]\ntest_cases: [{input: q}]\n",
            "evaluations.metric",
            2,
        ),
        ("test_cases:\n  - input: q\n    groundtruth: a\n", "test_cases[0].groundtruth", 3),
        (
            "test_cases:\n  - name: c\n    turns:\n      - input: q\n        expected_tool: [x]\n",
            "test_cases[0].turns[0].expected_tool",
            5,
        ),
        (
            "test_cases:\n  - input: q\n    expected_tools:\n      - {name: t, arg: {a: 1}}\n",
            "test_cases[0].expected_tools[0].arg",
            None,
        ),
    ],
)
def test_unknown_keys_are_errors_with_line_and_valid_keys(
    tmp_path: Path, yaml: str, where: str, line: int | None
) -> None:
    with pytest.raises(SuiteError) as raised:
        load_suite(_write(tmp_path, yaml))
    message = str(raised.value)
    assert f"{where}: unknown key" in message and "valid keys:" in message
    if line is not None:
        assert f"(line {line})" in message


def test_an_unknown_metric_field_is_an_error(tmp_path: Path) -> None:
    yaml = "evaluations:\n  metrics: [{type: geval, name: G, criteria: c, strictmode: true}]\ntest_cases: [{input: q}]\n"
    with pytest.raises(SuiteError, match="unknown key\\(s\\) strictmode for a geval metric"):
        load_suite(_write(tmp_path, yaml))


LABELS = """
evaluations:
  metrics:
    - {metric: contains, values: [Paris]}
    - {metric: contains, values: [London], label: contains_london}
test_cases:
  - {name: plain, input: q, evaluations: [contains]}
  - {name: labeled, input: q, evaluations: [contains_london]}
"""


def test_a_metric_name_resolves_exactly_not_to_a_later_label(tmp_path: Path) -> None:
    plain, labeled = load_suite(_write(tmp_path, LABELS)).cases
    assert [(s.name, s.label, s.args.get("values")) for s in plain.metrics] == [("contains", None, ["Paris"])]
    assert [(s.name, s.label, s.args.get("values")) for s in labeled.metrics] == [
        ("contains", "contains_london", ["London"])
    ]


def test_an_ambiguous_metric_name_is_an_error(tmp_path: Path) -> None:
    yaml = (
        "evaluations:\n  metrics:\n    - {type: geval, name: A, criteria: a}\n"
        "    - {type: geval, name: B, criteria: b}\ntest_cases: [{input: q, evaluations: [geval]}]\n"
    )
    with pytest.raises(SuiteError, match="metric name 'geval' is ambiguous"):
        load_suite(_write(tmp_path, yaml))


def test_validate_warns_about_a_case_nothing_scores(tmp_path: Path) -> None:
    suite = load_suite(_write(tmp_path, "test_cases: [{name: lonely, input: q}]\n"))
    assert any("'lonely'" in w and "not scored" in w for w in suite.warnings)


def test_retrieval_context_grounds_faithfulness_and_geval(tmp_path: Path) -> None:
    yaml = (
        "evaluations:\n  metrics:\n    - {type: rag, metric_type: faithfulness}\n"
        "    - {type: geval, name: G, criteria: c, evaluation_params: [actual_output, retrieval_context]}\n"
        "test_cases:\n  - {input: q, retrieval_context: [The store opens at 9.]}\n"
    )
    (case,) = load_suite(_write(tmp_path, yaml)).cases
    groundedness, geval = (REGISTRY.build(spec) for spec in case.metrics)
    ctx = make_ctx(case, agent_turn("It opens at 9."))
    assert groundedness.applies_to(ctx)  # recorded, not skipped for want of context
    assert groundedness.context_from == "retrieval"  # faithfulness: the retrieval_context alone
    assert groundedness.prompt_variables(ctx)["context"] == "The store opens at 9."
    assert "retrieval_context" in geval.evaluation_params
    assert geval.prompt_variables(ctx)["retrieval_context"] == "The store opens at 9."  # not "(none)"
    assert case_variables(ctx, 5)["context"] == "The store opens at 9."


@pytest.mark.parametrize(
    ("answer", "expected", "score"),
    [
        ("1557", "1557", 1.0),
        ("12, 1557 or 99999", "1557", 0.0),  # any number matching is not a match
        ("The answer is 2, as computed.", "2", 0.0),  # the whole answer must be the number
        ("2", "2", 1.0),
        ("1,557", "1557", 0.0),  # a separator needs accept_thousands_separators
    ],
)
def test_numeric_follows_holodeck(answer: str, expected: str, score: float) -> None:
    numeric = REGISTRY.build(MetricSpec(name="numeric"))
    result = numeric.evaluate(make_ctx(make_case(expected_response=expected), agent_turn(answer)))
    assert result.value == score


def test_response_path_grades_one_field_of_a_json_answer(tmp_path: Path) -> None:
    yaml = (
        "evaluations:\n  metrics:\n    - {type: standard, metric: numeric, response_path: 'result.items[0].total'}\n"
        "test_cases:\n  - {input: q, ground_truth: '1557'}\n"
    )
    (case,) = load_suite(_write(tmp_path, yaml)).cases
    (spec,) = case.metrics
    from proctor.metrics.runner import BoundMetric, score_metric

    bound = BoundMetric(spec, REGISTRY.build(spec))

    def score(answer: str):
        return asyncio.run(score_metric(bound, make_ctx(case, agent_turn(answer))))

    assert score('{"result": {"items": [{"total": 1557}]}}').passed is True
    assert score('{"result": {"items": [{"total": 12}]}}').passed is False
    missing = score("Total: 1557")  # not JSON: failed with the reason, the metric not called
    assert missing.passed is False and "not JSON" in missing.reason


def test_a_malformed_response_path_is_refused(tmp_path: Path) -> None:
    yaml = "evaluations:\n  metrics: [{type: standard, metric: equality, response_path: 'a..b'}]\ntest_cases: [{input: q}]\n"
    with pytest.raises(SuiteError, match="response_path: expected a path"):
        load_suite(_write(tmp_path, yaml))


def test_cost_names_its_priced_model_unambiguously(tmp_path: Path) -> None:
    judged = "evaluations:\n  model: {name: gpt-4o-mini}\n  metrics: [{metric: cost, max_usd: 0.01, model: gpt-4o}]\n"
    with pytest.raises(SuiteError, match="name the priced model in pricing_model"):
        load_suite(_write(tmp_path, judged + "test_cases: [{input: q}]\n"))
    priced = "evaluations:\n  model: {name: gpt-4o-mini}\n  metrics: [{metric: cost, max_usd: 0.01, pricing_model: gpt-4o}]\n"
    (case,) = load_suite(_write(tmp_path, priced + "test_cases: [{input: q}]\n")).cases
    assert REGISTRY.build(case.metrics[0]).model == "gpt-4o" and case.metrics[0].model is None
