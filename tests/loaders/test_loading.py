"""Loading suites of every format, and one clear message per problem in a bad file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.loaders import SuiteError, load_suite
from tests.conftest import DICE, EXAMPLE_SUITE


def _write(folder: Path, name: str, content: str | dict | list) -> Path:
    path = folder / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _problems(path: Path, **kwargs) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        load_suite(path, **kwargs)
    return [str(problem) for problem in caught.value.problems]


def _case(eval_id: str = "c1", **fields) -> dict:
    return {
        "eval_id": eval_id,
        "conversation": [{"invocation_id": "t1", "user_content": {"role": "user", "content": "hi"}}],
        **fields,
    }


def _evalset(*cases: dict, **fields) -> dict:
    return {"eval_set_id": "s", "eval_cases": list(cases) or [_case()], **fields}


# -- formats ------------------------------------------------------------------------------


def test_the_bundled_example_loads() -> None:
    suite = load_suite(EXAMPLE_SUITE)
    assert (suite.source_format, suite.agent, len(suite.cases)) == ("agentflow", "agent.py:weather_agent", 5)
    assert [spec.name for spec in suite.cases[0].metrics] == ["trajectory_match", "response_match"]
    assert suite.cases[0].metrics[0].args == {"check_args": True, "match_type": "IN_ORDER"}
    paris = next(case for case in suite.cases if case.case_id == "paris_conversation")
    assert [turn.expected_tool_calls is None for turn in paris.turns] == [False, False, True]


def test_criteria_come_from_the_closest_source(tmp_path: Path) -> None:
    suite_path = _write(tmp_path, "s.evalset.json", _evalset())
    default = load_suite(suite_path)
    assert {s.name for s in default.cases[0].metrics} == {"trajectory_match", "response_match", "llm_judge"}
    _write(tmp_path, "test_config.json", {"criteria": {"response_match_score": 0.5}})
    assert [s.name for s in load_suite(suite_path).cases[0].metrics] == ["response_match_score"]
    _write(tmp_path, "eval_config.json", {"criteria": {"contains": {"values": ["x"]}}})
    assert [s.name for s in load_suite(suite_path).cases[0].metrics] == ["contains"]
    inline = _write(
        tmp_path, "i.evalset.json", _evalset(metadata={"eval_config": {"criteria": {"bleu": 0.2}}})
    )
    assert [(s.name, s.threshold) for s in load_suite(inline).cases[0].metrics] == [("bleu", 0.2)]
    explicit = _write(tmp_path, "explicit.json", {"criteria": {"exact_match": {}}})
    assert [s.name for s in load_suite(suite_path, config_path=explicit).cases[0].metrics] == ["exact_match"]


def test_a_holodeck_agent_yaml_becomes_cases(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "agent.yaml",
        """
name: support
model: {provider: openai, name: gpt-4o}
test_cases:
  - name: hours
    input: What are your business hours?
    expected_tools: [get_hours]
    ground_truth: 9 to 5
    evaluations: [contains]
  - input: Anything else?
evaluations:
  model: {name: gpt-4o-mini}
  metrics:
    - {metric: contains, values: ["9"], threshold: 1.0}
    - {metric: response_match, threshold: 0.5}
""",
    )
    suite = load_suite(path)
    hours, other = suite.cases
    assert (suite.source_format, suite.name, hours.case_id, other.case_id) == (
        "holodeck",
        "support",
        "hours",
        "test_2",
    )
    assert hours.expected_tools == ["get_hours"] and hours.ground_truth == "9 to 5"
    assert [s.name for s in hours.metrics] == ["contains"] and len(other.metrics) == 2
    assert hours.metrics[0].args == {"values": ["9"]} and hours.metrics[0].model.name == "gpt-4o-mini"
    assert any("needs both 'model' and 'instructions'" in warning for warning in suite.warnings)


@pytest.mark.parametrize("wrapped", [True, False])
def test_vanna_datasets_use_vannas_evaluators(tmp_path: Path, wrapped: bool) -> None:
    cases = [
        {
            "id": "revenue",
            "message": "Revenue?",
            "conversation_id": "conv-1",
            "expected_outcome": {"tools_called": ["run_sql"], "min_components": 1},
        }
    ]
    path = _write(tmp_path, "d.json", {"dataset": {"name": "sql", "test_cases": cases}} if wrapped else cases)
    suite = load_suite(path)
    case = suite.cases[0]
    assert suite.source_format == "vanna" and case.session.thread_id == "conv-1"
    assert [s.name for s in case.metrics] == [
        "TrajectoryEvaluator",
        "OutputEvaluator",
        "EfficiencyEvaluator",
        "proctor_component_bounds",  # Proctor's own, without a verdict: Vanna does not check bounds
    ]
    assert case.metadata["expected_outcome"] == {
        "tools_called": ["run_sql"],
        "min_components": 1,
        "metadata": {},
    }


def test_a_vanna_dataset_may_choose_its_evaluators(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "d.yaml",
        """
dataset:
  name: sql
  evaluators: [OutputEvaluator, {name: LLMAsJudgeEvaluator, criteria: "Uses SQL"}]
  test_cases: [{id: a, message: hi}]
""",
    )
    specs = load_suite(path).cases[0].metrics
    assert [(s.name, s.threshold, s.args) for s in specs] == [
        ("OutputEvaluator", None, {}),
        ("LLMAsJudgeEvaluator", None, {"criteria": "Uses SQL"}),
    ]


@pytest.mark.parametrize(
    ("entry", "location", "rule"),
    [
        ("{name: LLMAsJudgeEvaluator, threshold: 0.6}", "threshold", "the judge's PASSED line decides"),
        ("{name: OutputEvaluator, threshold: 0.9}", "threshold", "it passes at a fixed 0.7"),
        ("{name: TrajectoryEvaluator, scale: 5}", "scale", "it passes at a fixed 0.7"),
    ],
)
def test_a_vanna_evaluator_takes_no_threshold(tmp_path: Path, entry: str, location: str, rule: str) -> None:
    """Vanna's evaluators decide their own verdicts; a threshold would give one Vanna never gives."""
    path = _write(
        tmp_path, "d.yaml", f"dataset:\n  evaluators: [{entry}]\n  test_cases: [{{id: a, message: hi}}]\n"
    )
    with pytest.raises(SuiteError) as raised:
        load_suite(path)
    (problem,) = raised.value.problems
    assert problem.location == f"dataset.evaluators[0].{location}" and rule in problem.message


def test_a_vanna_evaluator_named_as_a_criterion_keeps_vannas_pass_mark(tmp_path: Path) -> None:
    """agentflow's criterion defaults its threshold to 0.8; a Vanna evaluator passes at 0.7 by its
    own rule, so the stored and shown threshold is 0.7, the one that decides the verdict."""
    suite_path = _write(tmp_path, "s.evalset.json", _evalset())
    _write(tmp_path, "eval_config.json", {"criteria": {"TrajectoryEvaluator": {}, "OutputEvaluator": {}}})
    (case,) = load_suite(suite_path).cases
    from proctor.metrics.registry import REGISTRY

    assert [(s.name, s.threshold) for s in case.metrics] == [
        ("TrajectoryEvaluator", None),
        ("OutputEvaluator", None),
    ]
    assert {REGISTRY.get(s.name).default_threshold for s in case.metrics} == {0.7}
    _write(tmp_path, "eval_config.json", {"criteria": {"TrajectoryEvaluator": 0.8}})
    (problem,) = _problems(suite_path)
    assert "criteria.TrajectoryEvaluator.threshold" in problem and "it passes at a fixed 0.7" in problem


def test_the_adk_test_config_criteria_are_known_metrics() -> None:
    config = json.loads((DICE.parent / "test_config.json").read_text())
    from proctor.loaders.metric_specs import check_spec, specs_from_eval_config
    from proctor.models.agentflow import EvalConfig

    specs = specs_from_eval_config(EvalConfig.model_validate(config))
    assert all(check_spec(spec, "test_config.json", "") is None for spec in specs)


# -- errors: file, location, what was expected -------------------------------------------

BAD_FILES = [
    (
        "missing_id.evalset.json",
        {"eval_cases": [_case()]},
        "missing_id.evalset.json: eval_set_id: required field is missing",
    ),
    (
        "no_invocation_id.evalset.json",
        _evalset({"eval_id": "c", "conversation": [{"user_content": {"role": "user", "content": "x"}}]}),
        "eval_cases[0].conversation[0].invocation_id: required field is missing",
    ),
    (
        "bad_type.evalset.json",
        _evalset(_case(tags="weather")),
        "eval_cases[0].tags: Input should be a valid list; found 'weather'",
    ),
    ("dup.evalset.json", _evalset(_case("a"), _case("a")), "duplicate eval_id 'a'"),
    ("empty.evalset.json", {"eval_set_id": "s", "eval_cases": []}, "eval_cases: the set has no cases"),
    (
        "no_turns.evalset.json",
        _evalset({"eval_id": "c", "conversation": []}),
        "eval_cases[0].conversation: at least one invocation is required",
    ),
    (
        "unknown_metric.evalset.json",
        _evalset(metadata={"eval_config": {"criteria": {"rogue": 0.5}}}),
        "criteria.rogue: unknown metric 'rogue'; did you mean 'rouge'? valid metrics are: ",
    ),
    (
        "bad_arg.evalset.json",
        _evalset(metadata={"eval_config": {"criteria": {"trajectory_match": {"match_type": "sideways"}}}}),
        "Input should be 'EXACT', 'IN_ORDER' or 'ANY_ORDER'",
    ),
    (
        "missing_arg.evalset.json",
        _evalset(metadata={"eval_config": {"criteria": {"contains": {}}}}),
        "metric 'contains': values: Field required",
    ),
    (
        "threshold.evalset.json",
        _evalset(metadata={"eval_config": {"criteria": {"contains": {"threshold": -1, "values": ["x"]}}}}),
        "criteria.contains.threshold: Input should be greater than or equal to 0",
    ),
    (
        "broken.json",
        '{"eval_set_id": "s",\n  "eval_cases": [}',
        "broken.json: line 2, column 18: invalid JSON",
    ),
    ("broken.yaml", "test_cases:\n  - input: [unclosed\n", "broken.yaml: line 3, column 1: invalid YAML"),
    ("mystery.json", {"hello": "world"}, "unrecognised suite format"),
    (
        "files.yaml",
        "test_cases:\n  - input: q\n    files:\n"
        + "".join("      - {path: a.pdf, type: pdf}\n" for _ in range(11)),
        "test_cases[0].files: Value error, at most 10 files per test case; got 11",
    ),
    (
        "filetype.yaml",
        "test_cases:\n  - input: q\n    files: [{path: a.mp4, type: video}]\n",
        "test_cases[0].files[0].type",
    ),
    (
        "path_and_url.yaml",
        "test_cases:\n  - input: q\n    files: [{path: a.pdf, url: 'https://x/a.pdf', type: pdf}]\n",
        "exactly one of 'path' or 'url' must be given",
    ),
    (
        "blank_input.yaml",
        "test_cases:\n  - input: '  '\n",
        "test_cases[0].input: Value error, input must be non-empty",
    ),
    (
        "undefined_eval.yaml",
        "test_cases:\n  - {input: q, evaluations: [groundedness]}\nevaluations:\n  metrics: [{metric: contains, values: [x]}]\n",
        "test_cases[0].evaluations[0]: metric 'groundedness' is not defined in the evaluations block (defined: contains)",
    ),
    (
        "retries.yaml",
        "test_cases:\n  - {input: q}\nevaluations:\n  metrics: [{metric: contains, values: [x], retry_on_failure: 5}]\n",
        "evaluations.metrics[0].retry_on_failure: Input should be less than or equal to 3",
    ),
    (
        "no_metrics.yaml",
        "test_cases:\n  - {input: q}\nevaluations:\n  metrics: []\n",
        "evaluations.metrics: List should have at least 1 item",
    ),
    (
        "typo.yaml",
        "test_cases:\n  - {input: q, ground_truht: x}\n",
        "test_cases[0].ground_truht: unknown key",
    ),
    ("vanna_dup.json", [{"id": "a", "message": "x"}, {"id": "a", "message": "y"}], "duplicate case id 'a'"),
    (
        "vanna_missing.json",
        [{"id": "a", "message": "x"}, {"id": "b"}],
        "test_cases[1].message: required field is missing",
    ),
    (
        "vanna_evaluator.yaml",
        "dataset:\n  evaluators: [NopeEvaluator]\n  test_cases: [{id: a, message: x}]\n",
        "evaluators[0]: unknown metric 'NopeEvaluator'",
    ),
]


@pytest.mark.parametrize(("name", "content", "message"), BAD_FILES, ids=[entry[0] for entry in BAD_FILES])
def test_a_bad_file_says_where_and_what(tmp_path: Path, name: str, content, message: str) -> None:
    problems = _problems(_write(tmp_path, name, content))
    assert any(message in problem for problem in problems), problems
    assert all(problem.startswith(str(tmp_path / name)) or "config" in problem for problem in problems)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = _write(tmp_path, "two.yaml", "test_cases:\n  - input: ''\n  - {input: q, files: [{type: pdf}]}\n")
    problems = _problems(path)
    assert (
        len(problems) == 2
        and "test_cases[0].input" in problems[0]
        and "test_cases[1].files[0]" in problems[1]
    )


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    assert _problems(tmp_path / "nope.evalset.json") == [f"{tmp_path / 'nope.evalset.json'}: file not found"]


def test_a_vanna_dataset_says_what_vannas_code_does_that_its_document_does_not(tmp_path: Path) -> None:
    """Cases without an outcome pass by default, and component bounds give no verdict: said once."""
    cases = [
        {"id": "hello", "message": "hi"},
        {"id": "bye", "message": "bye"},
        {"id": "chart", "message": "chart", "expected_outcome": {"min_components": 2}},
    ]
    warnings = load_suite(_write(tmp_path, "d.json", cases)).warnings
    assert any(
        "2 cases ('hello', 'bye') have no expected_outcome" in w and "pass them by default" in w
        for w in warnings
    )
    assert any("case 'chart' has min_components/max_components" in w for w in warnings)
    only_judged = {"dataset": {"evaluators": ["LLMAsJudgeEvaluator"], "test_cases": cases[:1]}}
    assert not any(
        "expected_outcome" in w for w in load_suite(_write(tmp_path, "j.json", only_judged)).warnings
    )
