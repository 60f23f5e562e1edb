"""HoloDeck agent.yaml: typed metrics, ${VAR}, test_cases_file, multi-turn cases, code graders."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from proctor.loaders import SuiteError, load_suite
from proctor.metrics import REGISTRY
from proctor.models.case import MetricSpec
from tests.factories import agent_turn, make_case, make_ctx

AGENT_YAML = """
name: finance-assistant
model: {provider: openai, name: gpt-4o, api_key: "${FINANCE_KEY}"}
instructions: {file: instructions.md}
evaluations:
  model: {provider: openai, name: gpt-4o-mini}
  metrics:
    - {type: geval, name: Helpfulness, criteria: "Helps the user", evaluation_params: [actual_output, input, retrieval_context], threshold: 0.7}
    - {type: rag, metric_type: faithfulness, threshold: 0.8}
    - {type: rag, metric_type: contextual_recall, threshold: 0.7}
    - {type: standard, metric: f1_score, threshold: 0.5}
    - {type: standard, metric: numeric, absolute_tolerance: 0.5, accept_percent: true}
    - {metric: contains, values: ["${CURRENCY}"]}
test_cases_file: data/cases.yaml
"""

CASES = """
- name: single
  input: What was revenue in 2007?
  ground_truth: "60.94"
  expected_tools: [lookup]
  evaluations: [numeric]
- name: conversation
  turns:
    - input: What was the price in 2007?
      ground_truth: "60.94"
      turn_config: {turn_program: "60.94"}
    - input: And the change since 2005?
      ground_truth: "35.8"
      expected_tools:
        - name: subtract
          args: {a: 60.94, b: 25.14}
      evaluations:
        - {type: code, grader: "graders.py:called_subtract", name: Turn program}
"""

GRADER = """
def called_subtract(ctx):
    if ctx.turn_index == 0:
        return ctx.turn_config.get("turn_program") in ctx.agent_response
    ok = any(call.name == "subtract" for call in ctx.tool_invocations)
    return {"score": 1.0 if ok else 0.0, "passed": ok, "reason": "subtract called" if ok else "no subtract"}
"""


@pytest.fixture
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CURRENCY", "USD")
    (tmp_path / "data").mkdir()
    (tmp_path / "agent.yaml").write_text(AGENT_YAML)
    (tmp_path / "data" / "cases.yaml").write_text(CASES)
    (tmp_path / "graders.py").write_text(textwrap.dedent(GRADER))
    return tmp_path


def test_typed_metrics_map_onto_the_registry(agent_dir: Path) -> None:
    suite = load_suite(agent_dir / "agent.yaml")
    conversation = next(case for case in suite.cases if case.case_id == "conversation")
    names = [(spec.name, spec.label) for spec in conversation.metrics]
    assert names[:5] == [
        ("geval", "Helpfulness"),
        ("groundedness", "faithfulness"),  # named as HoloDeck names the result
        ("token_f1", None),
        ("numeric", None),
        ("contains", None),
    ]
    assert len(names) == 5  # a turn's own evaluations replace the case's for that turn only
    assert conversation.turns[0].metrics is None
    assert [(spec.name, spec.label) for spec in conversation.turns[1].metrics] == [("code", "Turn program")]
    geval = conversation.metrics[0]
    # as given; retrieval_context is HoloDeck's (the retrieval tools' results), not every tool result
    assert geval.args["evaluation_params"] == ["actual_output", "input", "retrieval_context"]
    assert geval.model.name == "gpt-4o-mini"
    assert conversation.metrics[4].args == {"values": ["USD"]}  # ${CURRENCY} substituted
    assert any("contextual_recall" in w and "not supported yet" in w for w in suite.warnings)
    assert suite.agent == "openai:agent.yaml"  # model + instructions: the agent.yaml is the agent


def test_api_key_references_are_kept_not_expanded(agent_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("FINANCE_KEY", "sk-must-not-be-inlined")
    suite = load_suite(agent_dir / "agent.yaml")
    assert "sk-must-not-be-inlined" not in suite.model_dump_json()


def test_cases_come_from_test_cases_file_single_and_multi_turn(agent_dir: Path) -> None:
    single, conversation = load_suite(agent_dir / "agent.yaml").cases
    assert [spec.name for spec in single.metrics] == ["numeric"]  # the case names its metrics
    assert single.expected_tools == ["lookup"] and single.ground_truth == "60.94"
    assert [turn.input for turn in conversation.turns] == [
        "What was the price in 2007?",
        "And the change since 2005?",
    ]
    assert conversation.turns[0].metadata == {"turn_config": {"turn_program": "60.94"}}
    assert conversation.turns[1].expected_tool_calls[0].args == {"a": 60.94, "b": 25.14}
    assert conversation.expected_tools == ["subtract"]


def test_a_code_grader_scores_every_turn(agent_dir: Path) -> None:
    conversation = load_suite(agent_dir / "agent.yaml").cases[1]
    spec = conversation.turns[1].metrics[0]
    grader = REGISTRY.build(spec)
    from tests.factories import call

    good = grader.evaluate(
        make_ctx(
            conversation,
            agent_turn("It was 60.94", turn_id="turn_1"),
            agent_turn("35.8", call("subtract", a=60.94, b=25.14), turn_id="turn_2"),
        )
    )
    bad = grader.evaluate(
        make_ctx(
            conversation, agent_turn("It was 61", turn_id="turn_1"), agent_turn("35.8", turn_id="turn_2")
        )
    )
    assert (good.value, good.passed) == (1.0, True)
    assert (bad.value, bad.passed) == (0.0, False) and "no subtract" in bad.reason


def test_numeric_and_equality_metrics() -> None:
    numeric = REGISTRY.build(
        MetricSpec(
            name="numeric",
            args={"absolute_tolerance": 0.5, "accept_percent": True, "accept_thousands_separators": True},
        )
    )
    ctx = lambda answer, expected: make_ctx(make_case(expected_response=expected), agent_turn(answer))  # noqa: E731
    # HoloDeck's `numeric`: the whole answer is one number (use response_path for a JSON field)
    assert numeric.evaluate(ctx("35.6", "35.8")).value == 1.0
    assert numeric.evaluate(ctx(" 1,234.4 ", "1234")).value == 1.0
    assert numeric.evaluate(ctx("35.8%", "0.358")).value == 1.0
    assert numeric.evaluate(ctx("40", "35.8")).value == 0.0
    assert numeric.evaluate(ctx("The change was 35.6 points", "35.8")).value == 0.0
    equality = REGISTRY.build(
        MetricSpec(name="equality", args={"case_insensitive": True, "strip_whitespace": True})
    )
    assert equality.evaluate(ctx("  YES  ", "yes")).value == 1.0
    assert REGISTRY.build(MetricSpec(name="equality")).evaluate(ctx("Yes", "yes")).value == 0.0


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        (
            "test_cases: [{input: q}]\ntest_cases_file: x.yaml\n",
            "give test_cases or test_cases_file, not both",
        ),
        ("test_cases_file: missing.yaml\n", "missing.yaml: file not found"),
        ("test_cases: [{input: '${NOPE_UNSET}'}]\n", "environment variable NOPE_UNSET is not set"),
        ("test_cases: [{name: c, turns: []}]\n", "test_cases[0].turns: at least one turn is required"),
        (
            "test_cases: [{name: c, input: q, turns: [{input: a}]}]\n",
            "test_cases[0].input: must not be set when the case has turns",
        ),
        (
            "test_cases: [{name: c, turns: [{input: ''}]}]\n",
            "test_cases[0].turns[0].input: input must be non-empty",
        ),
        (
            "test_cases: [{input: q}]\nevaluations:\n  metrics: [{type: vibes}]\n",
            "unknown metric type 'vibes'",
        ),
        (
            "test_cases: [{input: q}]\nevaluations:\n  metrics: [{type: code, grader: 'nowhere.py:grade'}]\n",
            "nowhere.py not found",
        ),
    ],
)
def test_bad_agent_yaml_files(tmp_path: Path, yaml: str, message: str) -> None:
    (tmp_path / "agent.yaml").write_text(yaml)
    with pytest.raises(SuiteError) as caught:
        load_suite(tmp_path / "agent.yaml")
    assert any(message in str(problem) for problem in caught.value.problems), caught.value.problems
