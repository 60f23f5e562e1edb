"""Google ADK eval files: the fixtures from google/adk-python load, and run."""

from __future__ import annotations

import asyncio
import json
import shutil
import textwrap
from pathlib import Path

import pytest

from proctor.loaders import SuiteError, load_suite
from proctor.loaders.adk.parse import snake_keys
from proctor.metrics.adk.names import ADK_EFFICIENCY_METRICS
from tests.conftest import DICE, DICE_CAMEL, LAMP

ROLL_DIE = DICE
LEGACY = LAMP
ADK_INFO = [(name, None) for name in ADK_EFFICIENCY_METRICS]


def test_the_evalset_file_loads_with_its_test_config() -> None:
    suite = load_suite(ROLL_DIE)
    [case] = suite.cases
    assert suite.source_format == "adk" and case.case_id.endswith("dice.test.json")
    assert [t.input for t in case.turns] == [
        "Hello, what are you?",
        "Which tools do you have?",
        "Please roll a die with 6 sides",
    ]
    assert [t.expected_tool_calls for t in case.turns][:2] == [[], []]  # ADK: no tool expected
    assert case.turns[2].expected_tool_calls[0].model_dump(exclude_none=True) == {
        "name": "roll_die",
        "args": {"sides": 6},
    }
    assert case.turns[2].expected_response is None and case.turns[0].expected_response.startswith(
        "I am a dice"
    )
    assert [(s.name, s.threshold) for s in case.metrics] == [
        ("tool_trajectory_avg_score", 1.0),
        ("response_match_score", 0.5),
        *ADK_INFO,  # as ADK, every case also reports its informational efficiency metrics
    ]


def test_the_legacy_file_is_one_conversation() -> None:
    [case] = load_suite(LEGACY).cases
    [turn] = case.turns
    assert turn.input == "Switch off lamp_2 in the Kitchen."
    assert turn.expected_tool_calls[0].model_dump(exclude_none=True) == {
        "name": "set_lamp",
        "args": {"room": "Kitchen", "lamp_id": "lamp_2", "state": "OFF"},
    }
    assert turn.expected_response == "I have switched lamp_2 off."
    assert [s.name for s in case.metrics] == ["tool_trajectory_avg_score", *ADK_EFFICIENCY_METRICS]


def test_a_camel_case_file_loads_as_its_snake_case_twin() -> None:
    assert "evalCases" in DICE_CAMEL.read_text() and "eval_cases" not in DICE_CAMEL.read_text()
    camel, snake = load_suite(DICE_CAMEL), load_suite(ROLL_DIE)
    assert camel.suite_id == snake.suite_id
    assert camel.cases[0].turns == snake.cases[0].turns
    assert camel.cases[0].metrics == snake.cases[0].metrics


def test_googles_own_fixtures_load(shared_adk: Path) -> None:
    """ADK's integration fixtures as Google wrote them (beside the checkout on our machines)."""
    [dice] = load_suite(shared_adk / "hello_world_agent" / "roll_die.test.json").cases
    assert [t.input for t in dice.turns][:2] == ["Hi who are you?", "What can you do?"]
    assert dice.turns[2].expected_tool_calls[0].model_dump(exclude_none=True) == {
        "name": "roll_die",
        "args": {"sides": 6},
    }
    [home] = load_suite(shared_adk / "home_automation_agent" / "simple_test2.test.json").cases
    assert home.turns[0].expected_tool_calls[0].name == "set_device_info"
    assert [s.name for s in home.metrics] == ["tool_trajectory_avg_score", *ADK_EFFICIENCY_METRICS]


def test_camel_case_files_load_the_same(tmp_path: Path) -> None:
    data = json.loads(ROLL_DIE.read_text())

    def camel(value):
        if isinstance(value, list):
            return [camel(v) for v in value]
        if not isinstance(value, dict):
            return value
        out = {}
        for key, item in value.items():
            head, *rest = key.split("_")
            out[head + "".join(p.title() for p in rest)] = item if key == "args" else camel(item)
        return out

    (tmp_path / "camel.test.json").write_text(json.dumps(camel(data)))
    assert load_suite(tmp_path / "camel.test.json").cases[0].turns == load_suite(ROLL_DIE).cases[0].turns


def test_without_a_test_config_adks_default_criteria_apply(tmp_path: Path) -> None:
    shutil.copy(LEGACY, tmp_path / "alone.test.json")
    specs = load_suite(tmp_path / "alone.test.json").cases[0].metrics
    assert [(s.name, s.threshold) for s in specs] == [
        ("tool_trajectory_avg_score", 1.0),
        ("response_match_score", 0.8),
        *ADK_INFO,
    ]


def test_adk_rubrics_and_judge_options_in_a_test_config(tmp_path: Path) -> None:
    shutil.copy(LEGACY, tmp_path / "s.test.json")
    (tmp_path / "test_config.json").write_text(
        json.dumps(
            {
                "criteria": {
                    "rubric_based_final_response_quality_v1": {
                        "threshold": 0.8,
                        "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 3},
                        "rubrics": [
                            {"rubricId": "polite", "rubricContent": {"textProperty": "The answer is polite."}}
                        ],
                    }
                }
            }
        )
    )
    spec, *efficiency = load_suite(tmp_path / "s.test.json").cases[0].metrics
    assert [s.name for s in efficiency] == list(ADK_EFFICIENCY_METRICS)
    assert spec.model.name == "gemini-2.5-flash" and spec.args["num_samples"] == 3
    assert spec.args["rubrics"] == [
        {"rubricId": "polite", "rubricContent": {"textProperty": "The answer is polite."}}
    ]


def test_a_conversation_scenario_becomes_adks_simulated_user(tmp_path: Path) -> None:
    from proctor.simulated_users.adk_user import AdkSimulation
    from proctor.simulated_users.llm_user import SimulationPlan

    data = json.loads(ROLL_DIE.read_text())
    data["eval_cases"][0]["conversation"] = None  # as ADK writes a simulated-user case
    data["eval_cases"][0]["conversation_scenario"] = {
        "starting_prompt": "Hi",
        "conversation_plan": "Roll twice",
    }
    (tmp_path / "s.test.json").write_text(json.dumps(data))
    metadata = load_suite(tmp_path / "s.test.json").cases[0].metadata
    simulation = AdkSimulation.for_case(metadata)
    assert (simulation.starting_prompt, simulation.conversation_plan) == ("Hi", "Roll twice")
    # without a user_simulator_config: ADK's defaults (20 invocations, the starting prompt counted)
    assert simulation.config.max_allowed_invocations == 20 and simulation.persona is None
    assert SimulationPlan.for_case(metadata) is None  # not agentflow's goal-driven simulator


def test_a_case_with_both_a_conversation_and_a_scenario_is_refused_as_adk_refuses_it(tmp_path: Path) -> None:
    data = json.loads(ROLL_DIE.read_text())
    data["eval_cases"][0]["conversation_scenario"] = {"starting_prompt": "Hi", "conversation_plan": "Roll"}
    (tmp_path / "s.test.json").write_text(json.dumps(data))
    with pytest.raises(SuiteError, match=r"eval_cases\[0\]: expected exactly one of conversation and"):
        load_suite(tmp_path / "s.test.json")


def test_a_broken_adk_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.test.json").write_text(
        json.dumps([{"query": "hi", "reference": "hello", "expected_tool_use": [{"tool_input": {}}]}])
    )
    with pytest.raises(
        SuiteError, match=r"bad.test.json: not a valid ADK eval file: missing or malformed field 'tool_name'"
    ):
        load_suite(tmp_path / "bad.test.json")


def test_snake_keys_leave_tool_arguments_alone() -> None:
    assert snake_keys({"toolUses": [{"args": {"deviceId": 3}}]}) == {"tool_uses": [{"args": {"deviceId": 3}}]}


DIE_AGENT = """
def agent(request):
    text = request.input.lower()
    if "roll" in text:
        request.record_tool_call("roll_die", {"sides": 6}, 4)
        return "I rolled a 4."
    if "what are you" in text:
        return "I am a dice agent. I roll dice of any size and tell you whether a roll is a prime number. What shall I roll?"
    return ("I have two tools: one rolls a die with as many sides as you ask for, the other checks which numbers are prime. "
            "I remember earlier rolls too, so you can check those later.")
"""


@pytest.mark.flow
@pytest.mark.usefixtures("prefect_harness")
def test_the_adk_file_runs(tmp_path: Path, sqlite_url: str) -> None:
    from proctor.flows.evaluate import EvaluationRequest, evaluate

    (tmp_path / "die_agent.py").write_text(textwrap.dedent(DIE_AGENT))
    summary = asyncio.run(
        evaluate(
            EvaluationRequest(
                suite=str(ROLL_DIE),
                agent=f"{tmp_path / 'die_agent.py'}:agent",
                database_url=sqlite_url,
                report_dir=str(tmp_path / "r"),
            )
        )
    )
    assert (summary.total, summary.passed) == (1, 1)
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    metrics = {m["metric_name"]: m for m in report["results"][0]["metric_results"]}
    assert metrics["tool_trajectory_avg_score"]["score"] == 1.0
    # ADK scores the third turn, which has no reference text, as 0: (1 + 1 + 0) / 3.
    assert metrics["response_match_score"]["score"] == pytest.approx(2 / 3)
