"""Every refusal of an agent.yaml names the file and the line: 36 mutations of a valid file
(tests/data/holodeck/full_schema), each at one line, each refused with that line named; the
same in a `test_cases_file`; an error in the agent's `model:` is reported under `model`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from proctor.loaders import SuiteError, load_suite

FULL_SCHEMA = Path(__file__).resolve().parents[2] / "data" / "holodeck" / "full_schema"

MUTATIONS = {  # name: (text in the valid file, what it becomes)
    "model provider": ("  provider: openai\n  name: gpt-4o-mini", "  provider: openaii\n  name: gpt-4o-mini"),
    "model temperature": ("  temperature: 0.2", "  temperature: 5.0"),
    "model key": ("  top_p: 0.9", "  top_pp: 0.9"),
    "model max_tokens": ("  max_tokens: 800", "  max_tokens: 0"),
    "top-level key": ("author: Proctor tests", "autor: Proctor tests"),
    "evaluations model": (
        "  model: {provider: openai, name: gpt-4o-mini, temperature: 0.0}",
        "  model: {provider: x, name: m}",
    ),
    "evaluations key": (
        "  metrics:\n    - type: standard\n      metric: equality",
        "  metricz:\n    - type: standard\n      metric: equality",
    ),
    "metric type": (
        "    - type: standard\n      metric: equality",
        "    - type: standad\n      metric: equality",
    ),
    "standard metric name": ("      metric: meteor", "      metric: meteorr"),
    "threshold not a number": (
        "      metric: bleu\n      threshold: 0.2",
        "      metric: bleu\n      threshold: high",
    ),
    "retry_on_failure": ("      retry_on_failure: 1", "      retry_on_failure: 7"),
    "timeout_ms": ("      timeout_ms: 5000", "      timeout_ms: -5"),
    "metric key": ("      strip_whitespace: true", "      strip_whitespac: true"),
    "absolute_tolerance": ("      absolute_tolerance: 0.01", "      absolute_tolerance: -1"),
    "scale": ("      scale: 5", "      scale: 0"),
    "geval criteria": ("      criteria: The answer is polite and on topic", "      criteria: ''"),
    "geval params": (
        "      evaluation_params: [input, actual_output, expected_output, context, retrieval_context]",
        "      evaluation_params: [input, answer]",
    ),
    "geval threshold": ("      threshold: 0.6", "      threshold: 1.6"),
    "rag metric_type": ("      metric_type: faithfulness", "      metric_type: faithfullness"),
    "rag threshold": ("      threshold: 0.7", "      threshold: 1.7"),
    "code grader": ('      grader: "graders.py:mentions_order"', '      grader: "graders.py:nowhere"'),
    "case key": ("    ground_truth: shipped", "    ground_truht: shipped"),
    "expected tool count": ("        count: 1", "        count: 0"),
    "expected tool regex": ('verbose: {regex: "true|false"}', 'verbose: {regex: "(unclosed"}'),
    "retrieval_context": (
        '    retrieval_context: ["Order 42 shipped on 3 May."]',
        "    retrieval_context: 5",
    ),
    "file type": ("        type: text\n        description", "        type: txt\n        description"),
    "file path": ("      - path: order.txt", "      - path: ../../../etc/passwd"),
    "case metric": (
        "        metric: equality\n        case_insensitive: true\n  - name",
        "        metric: equalty\n        case_insensitive: true\n  - name",
    ),
    "duplicate case name": ("  - name: refund_conversation", "  - name: order_status"),
    "input beside turns": (
        "  - name: refund_conversation\n",
        "  - name: refund_conversation\n    input: hi\n",
    ),
    "turn input": ("      - input: How much was order 42?", "      - input: ''"),
    "turn key": ("        turn_config: {turn_program: lookup}", "        turn_confg: {turn_program: lookup}"),
    "turn expected tool key": (
        "[{name: lookup_order, args: {order_id: 42}}]",
        "[{name: lookup_order, argz: {order_id: 42}}]",
    ),
    "turn ground_truth": ('        ground_truth: "19.99"', '        ground_truth: ""'),
    "turn metric": (
        "{type: standard, metric: numeric, absolute_tolerance: 0.001}",
        "{type: standard, metric: numeric, absolute_tolerance: -0.001}",
    ),
    "turn file type": (
        "          - {path: order.txt, type: text}",
        "          - {path: order.txt, type: txt}",
    ),
}


@pytest.fixture
def suite_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SUPPORT_ENDPOINT", "http://127.0.0.1:9/v1")
    folder = tmp_path / "support"
    shutil.copytree(FULL_SCHEMA, folder)
    return folder


def _refusal_lines(path: Path) -> tuple[list[str], set[int]]:
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    problems = [str(problem) for problem in caught.value.problems]
    lines = {int(line) for text in problems for line in re.findall(r"\(line (\d+)\)", text)}
    return problems, lines


def test_the_valid_file_loads(suite_dir: Path) -> None:
    assert len(load_suite(suite_dir / "agent.yaml").cases) == 2


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_every_refusal_names_file_and_line(suite_dir: Path, name: str) -> None:
    old, new = MUTATIONS[name]
    path = suite_dir / "agent.yaml"
    text = path.read_text()
    assert text.count(old) == 1, name
    mutated = text.replace(old, new)
    path.write_text(mutated)
    changed = next(
        number
        for number, (before, after) in enumerate(
            zip(text.splitlines(), mutated.splitlines(), strict=False), 1
        )
        if before != after
    )
    problems, lines = _refusal_lines(path)
    assert all(str(path) in problem and "(line " in problem for problem in problems), problems
    assert changed in lines, (changed, problems)


def test_a_refusal_in_a_test_cases_file_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text("name: a\ntest_cases_file: cases.yaml\n")
    (tmp_path / "cases.yaml").write_text("- name: one\n  input: hi\n- name: two\n  input: ''\n")
    problems, lines = _refusal_lines(tmp_path / "agent.yaml")
    assert lines == {4} and all("cases.yaml: test_cases[1].input" in problem for problem in problems), (
        problems
    )


def test_an_error_in_the_agents_model_is_reported_under_model(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(
        "name: a\nmodel:\n  provider: openai\n  name: gpt-4o\n  temperature: 7\n"
        "instructions: {inline: hi}\nevaluations:\n  metrics: [{type: standard, metric: bleu}]\n"
        "test_cases: [{input: q, ground_truth: a}]\n"
    )
    problems, lines = _refusal_lines(tmp_path / "agent.yaml")
    assert len(problems) == 1 and ": model.temperature: " in problems[0] and lines == {5}, problems


def test_each_misspelt_key_is_named_at_its_own_line_not_the_first_like_it(tmp_path: Path) -> None:
    """The same misspelling in two cases: each refusal names its own case's line (the first
    line spelled like it was named for both)."""
    (tmp_path / "agent.yaml").write_text(
        "name: a\ntest_cases:\n  - input: q\n    ground_truht: a\n  - input: r\n    ground_truht: b\n"
    )
    problems, lines = _refusal_lines(tmp_path / "agent.yaml")
    assert lines == {4, 6} and len(problems) == 2, problems


def test_a_file_edited_and_read_again_in_one_process_gets_its_new_lines(tmp_path: Path) -> None:
    """A worker or a test session reads a file again after it changed: the lines named are the
    file's as it is now, not as it was when first read."""
    path = tmp_path / "agent.yaml"
    path.write_text("name: a\ntest_cases:\n  - input: q\n    ground_truht: a\n")
    assert _refusal_lines(path)[1] == {4}
    path.write_text("name: a\ndescription: longer now\n\ntest_cases:\n  - input: q\n    ground_truht: a\n")
    assert _refusal_lines(path)[1] == {6}


def test_a_field_nested_in_a_tool_entry_is_named_at_its_own_line(tmp_path: Path) -> None:
    (tmp_path / "law.md").write_text("# Law\n\nText.\n")
    (tmp_path / "agent.yaml").write_text(
        "name: a\n"
        "tools:\n"
        "  - name: statutes\n"
        "    type: hierarchical_document\n"
        "    description: Statutes\n"
        "    source: law.md\n"
        "    context_model:\n"
        "      provider: openai\n"
        "      name: gpt-4o-mini\n"
        "      temperature: 5\n"
        "test_cases: [{input: q, ground_truth: a}]\n"
    )
    problems, lines = _refusal_lines(tmp_path / "agent.yaml")
    assert lines == {10} and "tools[0].context_model.temperature" in problems[0], problems


def test_a_missing_test_cases_file_is_named_at_its_line_in_the_agent_yaml(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text("name: a\ndescription: d\ntest_cases_file: cases.yaml\n")
    problems, lines = _refusal_lines(tmp_path / "agent.yaml")
    assert lines == {3} and "agent.yaml: test_cases_file: cases.yaml: file not found" in problems[0], problems
