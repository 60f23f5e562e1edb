"""`load_suite`: finding the format and the criteria, and saying exactly what is wrong with a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proctor.loaders import Problem, SuiteError, load_suite
from proctor.metrics.adk.names import ADK_EFFICIENCY_METRICS
from proctor.metrics.registry import REGISTRY
from tests.conftest import DICE, EXAMPLE_SUITE


def write(folder: Path, name: str, content: str | dict | list) -> Path:
    path = folder / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def problems(path: Path, **kwargs) -> list[Problem]:
    with pytest.raises(SuiteError) as caught:
        load_suite(path, **kwargs)
    return caught.value.problems


def the_problem(path: Path, **kwargs) -> Problem:
    found = problems(path, **kwargs)
    assert len(found) == 1, found
    return found[0]


def case(eval_id: str = "c1", text: str = "hi", **fields) -> dict:
    turn = {"invocation_id": "t1", "user_content": {"role": "user", "content": text}}
    return {"eval_id": eval_id, "conversation": [turn], **fields}


def evalset(*cases: dict, **fields) -> dict:
    return {"eval_set_id": "s", "eval_cases": list(cases) or [case()], **fields}


def inline_config(criteria: dict) -> dict:
    return evalset(metadata={"eval_config": {"criteria": criteria}})


def metric_names(suite) -> list[tuple[str, float | None]]:
    return [(spec.name, spec.threshold) for spec in suite.cases[0].metrics]


# -- the bundled example ------------------------------------------------------------------


@pytest.fixture(scope="module")
def example():
    return load_suite(EXAMPLE_SUITE)


def test_example_loads_five_agentflow_cases(example) -> None:
    assert (example.source_format, example.suite_id, example.name) == (
        "agentflow",
        "weather_agent_v1",
        "Weather Agent Tests",
    )
    assert [c.case_id for c in example.cases] == [
        "basic_weather",
        "paris_conversation",
        "two_cities",
        "greeting",
        "fahrenheit_units",
    ]


def test_example_names_its_agent(example) -> None:
    assert example.agent == "agent.py:weather_agent"


def test_example_criteria_come_from_its_eval_config(example) -> None:
    for loaded in example.cases:
        assert [(spec.name, spec.threshold) for spec in loaded.metrics] == [
            ("trajectory_match", 1.0),
            ("response_match", 0.6),
        ]
    assert example.cases[0].metrics[0].args == {"match_type": "IN_ORDER", "check_args": True}


def test_example_turns_keep_their_expectations(example) -> None:
    paris = example.cases[1]
    assert [turn.turn_id for turn in paris.turns] == ["turn_1", "turn_2", "turn_3"]
    assert paris.turns[1].expected_tool_calls[0].args == {"city": "Paris", "days": 1}
    assert paris.turns[2].expected_tool_calls is None
    assert paris.ground_truth == "Based on the forecast, yes you should bring an umbrella."


def test_example_case_without_trajectory_has_no_tool_expectation(example) -> None:
    greeting = example.cases[3]
    assert greeting.turns[0].expected_tool_calls is None


# -- where the criteria come from ---------------------------------------------------------


def test_explicit_config_wins_over_everything(tmp_path: Path) -> None:
    suite = write(tmp_path, "s.evalset.json", inline_config({"bleu": 0.2}))
    write(tmp_path, "eval_config.json", {"criteria": {"rouge": 0.3}})
    explicit = write(tmp_path, "mine.json", {"criteria": {"exact_match": 0.9}})
    assert metric_names(load_suite(suite, config_path=explicit)) == [("exact_match", 0.9)]


def test_inline_metadata_config_wins_over_files_beside_the_suite(tmp_path: Path) -> None:
    suite = write(tmp_path, "s.evalset.json", inline_config({"bleu": 0.2}))
    write(tmp_path, "eval_config.json", {"criteria": {"rouge": 0.3}})
    assert metric_names(load_suite(suite)) == [("bleu", 0.2)]


def test_metadata_may_name_a_config_file_beside_the_suite(tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    write(tmp_path / "configs", "strict.json", {"criteria": {"exact_match": 1.0}})
    write(tmp_path, "eval_config.json", {"criteria": {"rouge": 0.3}})
    suite = write(tmp_path, "s.evalset.json", evalset(metadata={"eval_config": "configs/strict.json"}))
    assert metric_names(load_suite(suite)) == [("exact_match", 1.0)]


def test_eval_config_json_wins_over_test_config_json(tmp_path: Path) -> None:
    suite = write(tmp_path, "s.evalset.json", evalset())
    write(tmp_path, "test_config.json", {"criteria": {"response_match_score": 0.5}})
    write(tmp_path, "eval_config.json", {"criteria": {"rouge": 0.3}})
    assert metric_names(load_suite(suite)) == [("rouge", 0.3)]


def test_test_config_json_is_used_when_alone(tmp_path: Path) -> None:
    suite = write(tmp_path, "s.evalset.json", evalset())
    write(tmp_path, "test_config.json", {"criteria": {"response_match_score": 0.5}})
    assert metric_names(load_suite(suite)) == [("response_match_score", 0.5)]


def test_without_any_config_the_default_criteria_apply(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, "s.evalset.json", evalset()))
    assert metric_names(suite) == [("trajectory_match", 0.8), ("response_match", 0.7), ("llm_judge", 0.7)]
    judge = suite.cases[0].metrics[2]
    assert judge.model.name == "gpt-4o-mini"


def test_the_config_used_is_recorded_with_the_suite(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, "s.evalset.json", inline_config({"bleu": 0.2})))
    assert suite.metadata["eval_config"]["criteria"]["bleu"]["threshold"] == 0.2


def test_a_disabled_criterion_is_kept_but_marked(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, "s.evalset.json", inline_config({"bleu": {"enabled": False}})))
    assert suite.cases[0].metrics[0].enabled is False


# -- recognising the format ---------------------------------------------------------------


def test_an_evalset_is_recognised_by_content_without_its_suffix(tmp_path: Path) -> None:
    assert load_suite(write(tmp_path, "suite.json", evalset())).source_format == "agentflow"


def test_an_adk_file_loads_with_its_test_config() -> None:
    suite = load_suite(DICE)
    assert suite.source_format == "adk"
    assert metric_names(suite) == [
        ("tool_trajectory_avg_score", 1.0),
        ("response_match_score", 0.5),
        *[(name, None) for name in ADK_EFFICIENCY_METRICS],  # ADK reports them on every eval
    ]


def test_config_path_is_refused_for_formats_without_criteria(tmp_path: Path) -> None:
    dataset = write(tmp_path, "d.json", [{"id": "a", "message": "hi"}])
    config = write(tmp_path, "c.json", {"criteria": {}})
    problem = the_problem(dataset, config_path=config)
    assert (problem.file, problem.message) == (str(config), "--config applies to agentflow evalsets only")


# -- malformed files: which file, where, and what was expected ----------------------------

ELEVEN_FILES = "".join("      - {path: a.pdf, type: pdf}\n" for _ in range(11))

MALFORMED = [
    # (file name, content, location, what the message says)
    ("missing_id.evalset.json", {"eval_cases": [case()]}, "eval_set_id", "required field is missing"),
    (
        "no_user_content.evalset.json",
        evalset({"eval_id": "c", "conversation": [{"invocation_id": "t1"}]}),
        "eval_cases[0].conversation[0].user_content",
        "required field is missing",
    ),
    (
        "string_user_content.evalset.json",
        evalset({"eval_id": "c", "conversation": [{"invocation_id": "t1", "user_content": "hi"}]}),
        "eval_cases[0].conversation[0].user_content",
        "Input should be a valid dictionary or instance of MessageContent; found 'hi'",
    ),
    (
        "tags.evalset.json",
        evalset(case(tags="weather")),
        "eval_cases[0].tags",
        "Input should be a valid list; found 'weather'",
    ),
    ("no_cases.evalset.json", {"eval_set_id": "s", "eval_cases": []}, "eval_cases", "the set has no cases"),
    (
        "no_turns.evalset.json",
        evalset(case("a"), {"eval_id": "b", "conversation": []}),
        "eval_cases[1].conversation",
        "at least one invocation is required",
    ),
    (
        "sideways.evalset.json",
        inline_config({"trajectory_match": {"match_type": "sideways"}}),
        "metadata.eval_config.criteria.trajectory_match.match_type",
        "Input should be 'EXACT', 'IN_ORDER' or 'ANY_ORDER'; found 'sideways'",
    ),
    (
        "no_values.evalset.json",
        inline_config({"contains": {"threshold": 1.0}}),
        "metadata.eval_config.criteria.contains",
        "metric 'contains': values: Field required",
    ),
    (
        "unknown_arg.evalset.json",
        inline_config({"trajectory_match": {"check_argz": True}}),
        "metadata.eval_config.criteria.trajectory_match",
        "metric 'trajectory_match': check_argz: Extra inputs are not permitted",
    ),
    (
        "broken.json",
        '{"eval_set_id": "s",\n  "eval_cases": [}',
        "line 2, column 18",
        "invalid JSON: Expecting value",
    ),
    ("broken.yaml", "test_cases:\n  - input: [unclosed\n", "line 3, column 1", "invalid YAML"),
    ("mystery.json", {"hello": "world"}, "", "unrecognised suite format: expected an agentflow evalset"),
    (
        "files.yaml",
        "test_cases:\n  - input: q\n    files:\n" + ELEVEN_FILES,
        "test_cases[0].files",
        "at most 10 files per test case; got 11",
    ),
    (
        "video.yaml",
        "test_cases:\n  - input: q\n    files: [{path: a.mp4, type: video}]\n",
        "test_cases[0].files[0].type",
        "type must be one of csv, excel, image, pdf, powerpoint, text, word; got 'video'",
    ),
    (
        "path_and_url.yaml",
        "test_cases:\n  - input: q\n    files: [{path: a.pdf, url: 'https://x.test/a.pdf', type: pdf}]\n",
        "test_cases[0].files[0]",
        "exactly one of 'path' or 'url' must be given",
    ),
    ("blank_input.yaml", "test_cases:\n  - input: '  '\n", "test_cases[0].input", "input must be non-empty"),
    (
        "typo.yaml",
        "test_cases:\n  - {input: q, ground_truht: x}\n",
        "test_cases[0].ground_truht",
        "unknown key",
    ),
    (
        "undefined_eval.yaml",
        "test_cases:\n  - {input: q, evaluations: [groundedness]}\n"
        "evaluations:\n  metrics: [{metric: contains, values: [x]}]\n",
        "test_cases[0].evaluations[0]",
        "metric 'groundedness' is not defined in the evaluations block (defined: contains)",
    ),
    (
        "retries.yaml",
        "test_cases:\n  - {input: q}\n"
        "evaluations:\n  metrics: [{metric: contains, values: [x], retry_on_failure: 5}]\n",
        "evaluations.metrics[0].retry_on_failure",
        "Input should be less than or equal to 3",
    ),
    (
        "no_metrics.yaml",
        "test_cases:\n  - {input: q}\nevaluations:\n  metrics: []\n",
        "evaluations.metrics",
        "List should have at least 1 item",
    ),
    (
        "metric_type.yaml",
        "test_cases:\n  - {input: q}\nevaluations:\n  metrics: [{type: fancy, metric: x}]\n",
        "evaluations.metrics[0]",
        "unknown metric type 'fancy'; expected geval, rag, standard or code",
    ),
    (
        "holodeck_dup.yaml",
        "test_cases:\n  - {name: hours, input: q}\n  - {name: hours, input: r}\n",
        "test_cases[1].name",
        "duplicate case id 'hours' (line 3)",
    ),
    (
        "unset_var.yaml",
        "test_cases:\n  - input: 'Hello ${PROCTOR_TEST_SURELY_UNSET}'\n",
        "test_cases[0].input",
        "environment variable PROCTOR_TEST_SURELY_UNSET is not set",
    ),
    (
        "vanna_dup.json",
        [{"id": "a", "message": "x"}, {"id": "a", "message": "y"}],
        "test_cases",
        "duplicate case id 'a'",
    ),
    (
        "vanna_missing.json",
        [{"id": "a", "message": "x"}, {"id": "b"}],
        "test_cases[1].message",
        "required field is missing",
    ),
    (
        "vanna_bounds.yaml",
        "test_cases:\n  - {id: a, message: x, expected_outcome: {min_components: 3, max_components: 1}}\n",
        "test_cases[0].expected_outcome",
        "min_components must not exceed max_components",
    ),
    (
        "vanna_outcome_typo.json",
        [{"id": "a", "message": "x", "expected_outcome": {"tools_caled": ["run_sql"]}}],
        "test_cases[0].expected_outcome.tools_caled",
        "Extra inputs are not permitted",
    ),
    (
        "vanna_empty.yaml",
        "dataset:\n  name: sql\n  test_cases: []\n",
        "dataset.test_cases",
        "at least one test case is required",
    ),
    (
        "vanna_evaluator.yaml",
        "dataset:\n  evaluators: [NopeEvaluator]\n  test_cases: [{id: a, message: x}]\n",
        "dataset.evaluators[0]",
        "unknown metric 'NopeEvaluator'; valid metrics are: ",
    ),
    (
        "vanna_evaluator_args.yaml",
        "dataset:\n  evaluators: [{name: contains}]\n  test_cases: [{id: a, message: x}]\n",
        "dataset.evaluators[0]",
        "metric 'contains': values: Field required",
    ),
]


@pytest.mark.parametrize(("name", "content", "location", "message"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_file_names_file_location_and_expectation(
    tmp_path: Path, name: str, content, location: str, message: str
) -> None:
    path = write(tmp_path, name, content)
    problem = the_problem(path)
    assert (problem.file, problem.location) == (str(path), location)
    assert message in problem.message
    assert str(problem).startswith(f"{path}: {location + ': ' if location else ''}")


def test_an_unknown_metric_lists_every_valid_name(tmp_path: Path) -> None:
    problem = the_problem(write(tmp_path, "s.evalset.json", inline_config({"rogue": 0.5})))
    assert problem.message == (
        f"unknown metric 'rogue'; did you mean 'rouge'? valid metrics are: {', '.join(REGISTRY.names())}"
    )


def test_a_missing_suite_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.evalset.json"
    assert problems(missing) == [Problem(str(missing), "", "file not found")]


def test_a_missing_config_file_named_in_metadata_is_reported(tmp_path: Path) -> None:
    suite = write(tmp_path, "s.evalset.json", evalset(metadata={"eval_config": "gone.json"}))
    assert problems(suite) == [Problem(str(tmp_path / "gone.json"), "", "file not found")]


def test_problems_in_a_config_beside_the_suite_name_that_config(tmp_path: Path) -> None:
    suite = write(tmp_path, "s.evalset.json", evalset())
    config = write(
        tmp_path, "eval_config.json", {"criteria": {"trajectory_match": {"match_type": "sideways"}}}
    )
    problem = the_problem(suite)
    assert (problem.file, problem.location) == (str(config), "criteria.trajectory_match.match_type")
    assert "'EXACT', 'IN_ORDER' or 'ANY_ORDER'" in problem.message


def test_broken_json_in_a_config_names_line_and_column(tmp_path: Path) -> None:
    suite = write(tmp_path, "s.evalset.json", evalset())
    config = write(tmp_path, "eval_config.json", '{"criteria": {\n  "bleu": ,\n}}')
    problem = the_problem(suite)
    assert (problem.file, problem.location) == (str(config), "line 2, column 11")


def test_unknown_metric_in_an_explicit_config_names_that_config(tmp_path: Path) -> None:
    suite = write(tmp_path, "s.evalset.json", evalset())
    config = write(tmp_path, "mine.json", {"criteria": {"rogue": 0.5}})
    problem = the_problem(suite, config_path=config)
    assert (problem.file, problem.location) == (str(config), "criteria.rogue")


def test_every_problem_in_a_file_is_reported_at_once(tmp_path: Path) -> None:
    path = write(tmp_path, "two.yaml", "test_cases:\n  - input: ''\n  - {input: q, files: [{type: pdf}]}\n")
    assert [problem.location for problem in problems(path)] == [
        "test_cases[0].input",
        "test_cases[1].files[0]",
    ]


def test_the_error_text_lists_one_line_per_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "two.yaml", "test_cases:\n  - input: ''\n  - {input: q, files: [{type: pdf}]}\n")
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    lines = str(caught.value).splitlines()
    assert len(lines) == 2 and all(line.startswith(f"{path}: test_cases[") for line in lines)


# -- known bugs ---------------------------------------------------------------------------


def test_duplicate_agentflow_case_ids_are_located(tmp_path: Path) -> None:
    problem = the_problem(write(tmp_path, "dup.evalset.json", evalset(case("a"), case("a"))))
    assert "duplicate eval_id 'a'" in problem.message
    assert problem.location.startswith("eval_cases")


def test_inline_config_metric_problems_carry_the_full_path(tmp_path: Path) -> None:
    problem = the_problem(write(tmp_path, "s.evalset.json", inline_config({"rogue": 0.5})))
    assert problem.location == "metadata.eval_config.criteria.rogue"


def test_a_misspelt_agentflow_field_is_an_error(tmp_path: Path) -> None:
    typo = case("a")
    typo["conversation"][0]["expected_tool_trajectroy"] = [{"name": "get_weather"}]
    problem = the_problem(write(tmp_path, "typo.evalset.json", evalset(typo)))
    assert problem.location == "eval_cases[0].conversation[0].expected_tool_trajectroy"


@pytest.mark.parametrize("body", ["\n  - {id: a, message: x}\n", "\n"], ids=["list", "empty"])
def test_a_dataset_that_is_not_a_mapping_is_a_problem(tmp_path: Path, body: str) -> None:
    problem = the_problem(write(tmp_path, "d.yaml", f"dataset:{body}"))
    assert problem.file == str(tmp_path / "d.yaml") and problem.location.startswith("dataset")


def test_an_evaluations_block_that_is_a_list_is_a_problem(tmp_path: Path) -> None:
    text = "test_cases:\n  - input: q\nevaluations:\n  - {metric: contains, values: [x]}\n"
    assert the_problem(write(tmp_path, "agent.yaml", text)).location.startswith("evaluations")


def test_an_expected_tool_without_name_is_a_problem(tmp_path: Path) -> None:
    text = "test_cases:\n  - input: q\n    expected_tools: [{args: {a: 1}}]\n"
    assert the_problem(write(tmp_path, "agent.yaml", text)).location.startswith(
        "test_cases[0].expected_tools"
    )


def test_expected_tools_given_as_a_string_is_a_problem(tmp_path: Path) -> None:
    text = "test_cases:\n  - input: q\n    expected_tools: get_hours\n"
    assert the_problem(write(tmp_path, "agent.yaml", text)).location == "test_cases[0].expected_tools"


def test_a_turn_that_is_not_a_mapping_is_a_problem(tmp_path: Path) -> None:
    text = "test_cases:\n  - name: chat\n    turns: [hello]\n"
    assert the_problem(write(tmp_path, "agent.yaml", text)).location.startswith("test_cases[0].turns")


# -- informational metrics (ADK's efficiency metrics) in every format -------------------------------


def test_an_informational_metric_takes_no_threshold_scale_or_response_path(tmp_path: Path) -> None:
    config = {"criteria": {"tool_call_count_v1": {"threshold": 2}}}
    problem = the_problem(write(tmp_path, "s.evalset.json", inline_config(config["criteria"])))
    assert problem.location == "metadata.eval_config.criteria.tool_call_count_v1.threshold"
    assert "does not support a threshold: it reports a value and never passes or fails" in problem.message
    for field, value in (("threshold", 0.5), ("scale", 5), ("response_path", "answer")):
        agent = {
            "name": "a",
            "test_cases": [{"input": "hi", "ground_truth": "hi"}],
            "evaluations": {
                "metrics": [{"metric": "exact_match"}, {"metric": "token_usage_v1", field: value}]
            },
        }
        problem = the_problem(write(tmp_path, "agent.yaml", json.dumps(agent)))
        assert problem.location == f"evaluations.metrics[1].{field}"
        assert problem.message.startswith("token_usage_v1 ")


def test_an_informational_metric_without_a_threshold_is_taken_in_agentflow_criteria(tmp_path: Path) -> None:
    answered = case()
    answered["conversation"][0]["expected_final_response"] = {"role": "assistant", "content": "hello"}
    config = {"eval_config": {"criteria": {"response_match": 0.5, "token_usage_v1": {}}}}
    suite = load_suite(write(tmp_path, "s.evalset.json", evalset(answered, metadata=config)))
    assert metric_names(suite) == [("response_match", 0.5), ("token_usage_v1", None)]
    assert not [w for w in suite.warnings if "passes or fails" in w]
    alone = load_suite(write(tmp_path, "t.evalset.json", inline_config({"invocation_duration_v1": {}})))
    [warning] = [w for w in alone.warnings if "passes or fails" in w]
    assert "case 'c1'" in warning and "reported as not scored, never as passed" in warning


def test_validate_warns_once_about_the_cases_no_configured_metric_applies_to(tmp_path: Path) -> None:
    """response_match is configured, but it needs an expected answer: the cases without one
    are not scored by it, and nothing else scores them. Said once, with a count, not per case."""
    answered = case("answered")
    answered["conversation"][0]["expected_final_response"] = {"role": "assistant", "content": "hello"}
    bare = [case(f"bare{i}") for i in range(7)]
    config = {"eval_config": {"criteria": {"response_match": 0.5}}}
    suite = load_suite(write(tmp_path, "s.evalset.json", evalset(answered, *bare, metadata=config)))
    [warning] = [w for w in suite.warnings if "passes or fails" in w]
    assert "7 cases: 'bare0', 'bare1', 'bare2', 'bare3', 'bare4' and 2 more" in warning
    assert "answered" not in warning and "reported as not scored, never as passed" in warning


def test_validate_says_when_expected_intermediate_responses_are_scored_by_nothing(tmp_path: Path) -> None:
    """An agentflow invocation's expected_intermediate_responses are read only by the response
    judges told to include them; with none such, the load says they are kept but unscored, once,
    naming the cases, and says nothing when a metric does read them."""
    said = [
        {"role": "assistant", "content": "Let me check the weather."},
    ]
    staged = case("staged")
    staged["conversation"][0]["expected_intermediate_responses"] = said
    staged["conversation"][0]["expected_final_response"] = {"role": "assistant", "content": "22°C"}
    plain = case("plain")
    plain["conversation"][0]["expected_final_response"] = {"role": "assistant", "content": "22°C"}
    unread = {"eval_config": {"criteria": {"response_match": 0.5}}}
    suite = load_suite(write(tmp_path, "s.evalset.json", evalset(staged, plain, metadata=unread)))
    [warning] = [w for w in suite.warnings if "expected_intermediate_responses" in w]
    assert "in 1 case(s) ('staged') are kept but scored by nothing" in warning
    read = {
        "eval_config": {
            "criteria": {
                "final_response_match_v2": {"threshold": 0.5, "include_intermediate_responses_in_final": True}
            }
        }
    }
    suite = load_suite(write(tmp_path, "t.evalset.json", evalset(staged, plain, metadata=read)))
    assert not [w for w in suite.warnings if "expected_intermediate_responses" in w]
