"""ADK eval sets and configs as ADK 2.13 writes them load; what ADK would not accept, or
would silently ignore, is named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from proctor.loaders import SuiteError, load_suite
from proctor.metrics import REGISTRY
from proctor.metrics.adk.names import ADK_EFFICIENCY_METRICS
from proctor.models.agentflow import MatchType
from tests.factories import agent_turn, call, make_ctx


def _invocation(text: str = "Roll a die", **fields: Any) -> dict[str, Any]:
    return {
        "invocation_id": "inv_1",
        "user_content": {"role": "user", "parts": [{"text": text}]},
        "final_response": {"role": "model", "parts": [{"text": "Rolled a 4."}]},
        "intermediate_data": {"tool_uses": [{"name": "roll_die", "args": {"sides": 6}}]},
        **fields,
    }


def _write(
    folder: Path, cases: list[dict[str, Any]], config: dict[str, Any] | None = None, **top: Any
) -> Path:
    path = folder / "set.test.json"
    path.write_text(json.dumps({"eval_set_id": "s", "eval_cases": cases, **top}), encoding="utf-8")
    if config is not None:
        (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


SCENARIO = {"starting_prompt": "I need a die roll.", "conversation_plan": "Ask for a d20, then thank."}


def test_an_eval_set_of_only_conversation_scenarios_loads(tmp_path: Path) -> None:
    cases = [
        {"eval_id": "sim_a", "conversation": None, "conversation_scenario": SCENARIO},
        {
            "evalId": "sim_b",
            "conversationScenario": {"startingPrompt": "Hi", "conversationPlan": "Roll once"},
        },
    ]
    suite = load_suite(_write(tmp_path, cases))
    assert [case.case_id for case in suite.cases] == ["sim_a", "sim_b"]
    assert [case.turns[0].input for case in suite.cases] == ["I need a die roll.", "Hi"]
    assert suite.cases[1].metadata["conversation_scenario"]["conversation_plan"] == "Roll once"


def test_a_scenario_without_its_plan_is_refused(tmp_path: Path) -> None:
    cases = [{"eval_id": "a", "conversation_scenario": {"starting_prompt": "Hi"}}]
    with pytest.raises(SuiteError, match=r"'conversation_plan' at eval_cases\[0\]\.conversation_scenario"):
        load_suite(_write(tmp_path, cases))


def test_eval_cases_written_both_ways_is_an_error(tmp_path: Path) -> None:
    case = {"eval_id": "a", "conversation": [_invocation()]}
    path = _write(tmp_path, [case], evalCases=[case])
    with pytest.raises(SuiteError, match=r"not both 'eval_cases' and its camelCase form"):
        load_suite(path)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            {"eval_id": "a", "conversaton": [_invocation()], "conversation": [_invocation()]},
            r"at eval_cases\[0\]: .*'conversaton' is unknown \(did you mean 'conversation'\?\)",
        ),
        (
            {"eval_id": "a", "conversation": [_invocation(final_reponse={"parts": []})]},
            r"at eval_cases\[0\]\.conversation\[0\]: .*'final_reponse' is unknown \(did you mean 'final_response'\?\)",
        ),
        (
            {"eval_id": "a", "conversation": [_invocation(intermediate_data={"tool_use": []})]},
            r"intermediate_data: .*'tool_use' is unknown \(did you mean 'tool_uses'\?\)",
        ),
        (
            {"eval_id": "a", "conversation": [_invocation()], "session_input": {"app_name": "x", "stat": {}}},
            r"session_input: .*'stat' is unknown \(did you mean 'state'\?\)",
        ),
    ],
)
def test_a_misspelt_adk_field_is_named(tmp_path: Path, case: dict[str, Any], message: str) -> None:
    with pytest.raises(SuiteError, match=message):
        load_suite(_write(tmp_path, [case]))


def _metric(path: Path, name: str):
    [spec] = [spec for spec in load_suite(path).cases[0].metrics if spec.name == name]
    return REGISTRY.build(spec), spec


@pytest.mark.parametrize(
    ("criterion", "match_type", "ignore_args"),
    [
        ({"threshold": 1.0, "matchType": "IN_ORDER", "ignoreArgs": True}, MatchType.IN_ORDER, True),
        ({"threshold": 1.0, "match_type": 1}, MatchType.IN_ORDER, False),
        ({"threshold": 1.0, "matchType": 2}, MatchType.ANY_ORDER, False),
        ({"threshold": 1.0, "match_type": "any order"}, MatchType.ANY_ORDER, False),
        ({"threshold": 1.0, "match_type": 0, "ignore_args": False}, MatchType.EXACT, False),
    ],
)
def test_adk_spellings_of_the_trajectory_criterion_are_read(
    tmp_path: Path, criterion: dict[str, Any], match_type: MatchType, ignore_args: bool
) -> None:
    path = _write(
        tmp_path,
        [{"eval_id": "a", "conversation": [_invocation()]}],
        {"criteria": {"tool_trajectory_avg_score": criterion}},
    )
    metric, _ = _metric(path, "tool_trajectory_avg_score")
    assert (metric.match_type, metric.ignore_args) == (match_type, ignore_args)


def test_a_criterion_field_given_in_both_spellings_is_an_error(tmp_path: Path) -> None:
    config = {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "matchType": 1, "match_type": 2}}}
    with pytest.raises(SuiteError, match=r"'match_type' is given twice"):
        load_suite(_write(tmp_path, [{"eval_id": "a", "conversation": [_invocation()]}], config))


def test_an_unknown_match_type_is_refused(tmp_path: Path) -> None:
    config = {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": 7}}}
    with pytest.raises(SuiteError, match=r"match_type"):
        load_suite(_write(tmp_path, [{"eval_id": "a", "conversation": [_invocation()]}], config))


def test_include_intermediate_responses_in_final_is_accepted_by_adk_criteria(tmp_path: Path) -> None:
    flag = {"threshold": 0.5, "includeIntermediateResponsesInFinal": True}
    config = {
        "criteria": {
            "response_match_score": flag,
            "final_response_match_v2": {**flag, "judgeModelOptions": {"judgeModel": "m", "numSamples": 3}},
        }
    }
    path = _write(tmp_path, [{"eval_id": "a", "conversation": [_invocation()]}], config)
    judge, spec = _metric(path, "final_response_match_v2")
    assert judge.include_intermediate_responses_in_final is True and judge.num_samples == 3
    assert spec.model.name == "m"
    assert _metric(path, "response_match_score")[0].include_intermediate_responses_in_final is True


def _rubric(rubric_id: str, text: str, kind: str | None = "FINAL_RESPONSE_QUALITY") -> dict[str, Any]:
    return {"rubricId": rubric_id, "rubricContent": {"textProperty": text}, "type": kind}


def test_a_rubric_metric_with_only_a_threshold_uses_the_rubrics_on_the_case(tmp_path: Path) -> None:
    case = {
        "eval_id": "a",
        "conversation": [_invocation(rubrics=[_rubric("polite", "The answer is polite.")])],
        "rubrics": [_rubric("number", "The answer names the number rolled.")],
    }
    path = _write(tmp_path, [case], {"criteria": {"rubric_based_final_response_quality_v1": 0.7}})
    suite = load_suite(path)
    assert [r["rubric_id"] for r in suite.cases[0].metadata["adk_rubrics"]] == ["number"]
    assert [r["rubric_id"] for r in suite.cases[0].turns[0].metadata["adk_rubrics"]] == ["polite"]
    spec, *efficiency = suite.cases[0].metrics
    assert (spec.name, spec.threshold) == ("rubric_based_final_response_quality_v1", 0.7)
    assert [s.name for s in efficiency] == list(ADK_EFFICIENCY_METRICS)  # ADK reports them on every eval


def test_a_rubric_metric_without_any_rubric_is_refused_and_untyped_rubrics_are_named(tmp_path: Path) -> None:
    case = {"eval_id": "a", "conversation": [_invocation()], "rubrics": [_rubric("r1", "Short.", None)]}
    path = _write(tmp_path, [case], {"criteria": {"rubric_based_final_response_quality_v1": 0.7}})
    with pytest.raises(SuiteError, match=r"rubric_based_final_response_quality_v1 needs rubrics"):
        load_suite(path)
    (tmp_path / "test_config.json").write_text(
        json.dumps(
            {
                "criteria": {
                    "rubric_based_final_response_quality_v1": {
                        "threshold": 0.7,
                        "rubrics": [_rubric("r2", "Names the number.")],
                    }
                }
            }
        )
    )
    suite = load_suite(path)
    assert any("rubric(s) r1 are read by no configured metric" in warning for warning in suite.warnings)


def test_an_expected_call_without_args_is_not_a_call_with_empty_args(tmp_path: Path) -> None:
    invocation = _invocation(intermediate_data={"tool_uses": [{"name": "list_devices"}]})
    suite = load_suite(_write(tmp_path, [{"eval_id": "a", "conversation": [invocation]}]))
    case = suite.cases[0]
    assert case.turns[0].expected_tool_calls[0].args is None
    trajectory = REGISTRY.build(case.metrics[0])
    assert trajectory.name == "tool_trajectory_avg_score"
    with_empty_args = make_ctx(case, agent_turn("Rolled a 4.", call("list_devices"), turn_id="inv_1"))
    assert trajectory.evaluate(with_empty_args).value == 0.0  # as ADK 2.13: None != {}
    assert (
        REGISTRY.build(case.metrics[0].model_copy(update={"args": {"ignore_args": True}}))
        .evaluate(with_empty_args)
        .value
        == 1.0
    )


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("sets/a.test.json:c1,c2", ("sets/a.test.json", ["c1", "c2"])),
        ("sets/a.test.json:c1,,c2,", ("sets/a.test.json", ["c1", "c2"])),
        ("sets/a.test.json:c1:ignored", ("sets/a.test.json", ["c1"])),
        ("sets/a.test.json", ("sets/a.test.json", [])),
        ("C:/sets/a.test.json:c1", ("C:/sets/a.test.json", ["c1"])),
    ],
)
def test_file_colon_case_ids_splits_as_adk_eval_does(target: str, expected: tuple[str, list[str]]) -> None:
    from proctor.loaders.discover import split_case_selector

    assert split_case_selector(target) == expected


def test_an_existing_path_with_a_colon_is_not_split(tmp_path: Path) -> None:
    from proctor.loaders.discover import split_case_selector

    odd = tmp_path / "a:b.test.json"
    odd.write_text("[]")
    assert split_case_selector(str(odd)) == (str(odd), [])


def test_an_adk_metric_proctor_cannot_score_as_adk_is_refused_with_the_reason(tmp_path: Path) -> None:
    config = {"criteria": {"safety_v1": 0.8}}
    with pytest.raises(
        SuiteError, match=r"ADK metric 'safety_v1': google-adk 2.13.0 scores it with Vertex AI"
    ):
        load_suite(_write(tmp_path, [{"eval_id": "a", "conversation": [_invocation()]}], config))


def test_adk_conversation_judges_read_their_adk_spellings(tmp_path: Path) -> None:
    """camelCase criteria (judgeModelOptions, stopSignal, evaluateIntermediateNlResponses,
    rubricId / rubricContent) and snake_case ones load as ADK reads them."""
    config = {
        "criteria": {
            "rubric_based_multi_turn_trajectory_quality_v1": {
                "threshold": 0.6,
                "judgeModelOptions": {"judgeModel": "judge-x", "numSamples": 3},
                "rubrics": [
                    {"rubricId": "r1", "rubricContent": {"textProperty": "Stays on topic."}},
                ],
            },
            "per_turn_user_simulator_quality_v1": {
                "threshold": 0.9,
                "stopSignal": "<done>",
                "judge_model_options": {"num_samples": 1},
            },
            "hallucinations_v1": {"threshold": 0.7, "evaluateIntermediateNlResponses": True},
        }
    }
    cases = [
        {"eval_id": "static", "conversation": [_invocation()]},
        {"eval_id": "sim", "conversation_scenario": SCENARIO},
    ]
    suite = load_suite(_write(tmp_path, cases, config))
    specs = {spec.name: spec for spec in suite.cases[0].metrics}
    multi = REGISTRY.build(specs["rubric_based_multi_turn_trajectory_quality_v1"])
    assert [(r.rubric_id, r.text) for r in multi.rubrics] == [("r1", "Stays on topic.")]
    assert (
        multi.num_samples == 3
        and specs["rubric_based_multi_turn_trajectory_quality_v1"].model.name == "judge-x"
    )
    simulator = REGISTRY.build(specs["per_turn_user_simulator_quality_v1"])
    assert (simulator.stop_signal, simulator.num_samples) == ("<done>", 1)
    assert REGISTRY.build(specs["hallucinations_v1"]).evaluate_intermediate_nl_responses is True
    assert any(
        "per_turn_user_simulator_quality_v1 scores only conversation_scenario cases; not eval_cases[0]" in w
        for w in suite.warnings
    )


def test_the_multi_turn_rubric_judge_needs_rubrics_only_for_the_last_invocation(tmp_path: Path) -> None:
    trajectory = "TRAJECTORY_QUALITY"
    first, last = _invocation(), _invocation(rubrics=[_rubric("done", "Finishes the task.", trajectory)])
    config = {"criteria": {"rubric_based_multi_turn_trajectory_quality_v1": 0.8}}
    suite = load_suite(_write(tmp_path, [{"eval_id": "a", "conversation": [first, last]}], config))
    assert not any("read by no configured metric" in warning for warning in suite.warnings)
    with pytest.raises(SuiteError, match=r"rubric_based_multi_turn_trajectory_quality_v1 needs rubrics"):
        load_suite(_write(tmp_path, [{"eval_id": "a", "conversation": [last, first]}], config))


def test_a_scenario_persona_the_simulator_judge_cannot_read_is_refused(tmp_path: Path) -> None:
    config = {"criteria": {"per_turn_user_simulator_quality_v1": 0.8}}
    persona = {"id": "p", "description": "Terse.", "behaviors": [{"name": "terse"}]}
    cases = [{"eval_id": "sim", "conversation_scenario": SCENARIO | {"user_persona": persona}}]
    with pytest.raises(
        SuiteError, match=r"eval_cases\[0\]\.conversation_scenario\.user_persona.*description"
    ):
        load_suite(_write(tmp_path, cases, config))


# -- ADK's efficiency metrics: reported on every eval, refused in criteria -------------------------


@pytest.mark.parametrize("criterion", [1.0, {"threshold": 5}, {}, {"matchType": "EXACT"}])
def test_an_efficiency_metric_in_criteria_is_refused_as_adk_refuses_it(
    tmp_path: Path, criterion: Any
) -> None:
    """ADK gives every criterion a threshold, and its efficiency metrics refuse one: the eval
    fails. So does loading the set, naming the criterion and saying why."""
    config = {"criteria": {"response_match_score": 0.8, "token_usage_v1": criterion}}
    path = _write(tmp_path, [{"eval_id": "a", "conversation": [_invocation()]}], config)
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    [problem] = caught.value.problems
    assert (problem.file, problem.location) == (str(tmp_path / "test_config.json"), "criteria.token_usage_v1")
    assert "does not support a threshold" in problem.message
    assert "reported automatically on every eval" in problem.message


def test_every_adk_case_reports_the_four_and_a_case_only_they_measure_is_warned_about(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"eval_id": "a", "conversation": [_invocation()]}], {"criteria": {}})
    suite = load_suite(path)
    assert [(s.name, s.threshold) for s in suite.cases[0].metrics] == [
        (name, None) for name in ADK_EFFICIENCY_METRICS
    ]
    assert any("no metric that passes or fails applies" in warning for warning in suite.warnings)
    scored = _write(tmp_path, [{"eval_id": "a", "conversation": [_invocation()]}], {"criteria": {}})
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.5}}))
    assert not any("passes or fails" in warning for warning in load_suite(scored).warnings)
