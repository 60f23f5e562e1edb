"""Every field of google-adk 2.13.0's criterion, JudgeModelOptions and EvalConfig models is
honoured, warned about by name, or refused with the reason; none is dropped without a word."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from proctor.loaders import SuiteError, load_suite
from proctor.metrics import REGISTRY
from tests.conftest import ROOT


def _write(folder: Path, config: dict[str, Any], cases: list[dict[str, Any]] | None = None) -> Path:
    invocation = {
        "invocation_id": "i1",
        "user_content": {"parts": [{"text": "Roll a die"}]},
        "final_response": {"parts": [{"text": "Rolled a 4."}]},
    }
    cases = cases or [{"eval_id": "a", "conversation": [invocation]}]
    path = folder / "set.test.json"
    path.write_text(json.dumps({"eval_set_id": "s", "eval_cases": cases}), encoding="utf-8")
    (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


def _spec(suite: Any, name: str) -> Any:
    [spec] = [spec for spec in suite.cases[0].metrics if spec.name == name]
    return spec


def test_judge_model_config_and_parallelism_limit_reach_the_judged_metric(tmp_path: Path) -> None:
    options = {
        "judgeModel": "judge-x",
        "judgeModelConfig": {"temperature": 0.0, "maxOutputTokens": 256, "seed": 7, "topK": 3},
        "parallelismLimit": 4,
        "numSamples": 3,
    }
    suite = load_suite(
        _write(
            tmp_path,
            {"criteria": {"final_response_match_v2": {"threshold": 0.5, "judgeModelOptions": options}}},
        )
    )
    spec = _spec(suite, "final_response_match_v2")
    metric = REGISTRY.build(spec)
    assert spec.model.name == "judge-x" and (metric.num_samples, metric.parallelism_limit) == (3, 4)
    assert metric.judge_model_config == {"temperature": 0.0, "max_output_tokens": 256, "seed": 7, "top_k": 3}
    # top_k is ADK's (LiteLLM passes it on) but the OpenAI chat API has no such parameter: named
    [warning] = suite.warnings
    assert (
        "criteria.final_response_match_v2.judge_model_options.judge_model_config.top_k: not sent" in warning
    )


@pytest.mark.parametrize(
    ("criterion", "name", "expected"),
    [
        (
            {"judge_model_options": {"parallelism_limit": 2}},
            "hallucinations_v1",
            "parallelism_limit: not used by hallucinations_v1 (ADK's evaluator does not read it either)",
        ),
        (
            {"judge_model_options": {"num_samples": 3}},
            "hallucinations_v1",
            "num_samples: not used by hallucinations_v1",
        ),
        (
            {"judge_model_options": {"parallelism_limit": 2}},
            "per_turn_user_simulator_quality_v1",
            "parallelism_limit: not used",
        ),
        (
            {"judge_model_options": {"num_samples": 3, "judge_model": "m"}},
            "tool_trajectory_avg_score",
            "num_samples: not used by tool_trajectory_avg_score",
        ),
        (
            {"judge_model_options": {"judge_model": "m"}},
            "response_match_score",
            "judge_model_options.judge_model: response_match_score calls no judge",
        ),
        (
            {"include_intermediate_responses_in_final": True},
            "response_match_score",
            "response_match_score scores without the intermediate responses, as ADK's",
        ),
        (
            {"include_intermediate_responses_in_final": True},
            "hallucinations_v1",
            "include_intermediate_responses_in_final: hallucinations_v1 scores without",
        ),
        (
            {"rubrics": [{"rubricId": "r", "rubricContent": {"textProperty": "Polite."}}]},
            "final_response_match_v2",
            "criteria.final_response_match_v2.rubrics: not read by final_response_match_v2",
        ),
        (
            {"evaluate_intermediate_nl_responses": True},
            "final_response_match_v2",
            "evaluate_intermediate_nl_responses: not read",
        ),
        ({"stop_signal": "<done>"}, "hallucinations_v1", "stop_signal: not read by hallucinations_v1"),
        ({"ignore_args": True}, "response_match_score", "ignore_args: not read by response_match_score"),
        ({"match_type": "IN_ORDER"}, "response_match_score", "match_type: not read by response_match_score"),
    ],
)
def test_an_adk_field_the_metric_does_not_read_is_named(tmp_path: Path, criterion, name, expected) -> None:
    """ADK accepts every criterion field on every metric and ignores what the metric does not
    read; Proctor loads the same config and says what is ignored."""
    suite = load_suite(_write(tmp_path, {"criteria": {name: {"threshold": 0.5, **criterion}}}))
    assert any(
        expected in warning and warning.startswith(str(tmp_path / "test_config.json"))
        for warning in suite.warnings
    ), suite.warnings
    assert REGISTRY.build(_spec(suite, name))  # and the metric is built without it


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {
                "criteria": {
                    "final_response_match_v2": {
                        "threshold": 0.5,
                        "judge_model_options": {"judge_model_config": {"temprature": 0.1}},
                    }
                }
            },
            r"judge_model_config\.temprature: Extra inputs are not permitted",
        ),
        (
            {
                "criteria": {
                    "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"parallelism": 2}}
                }
            },
            r"judge_model_options\.parallelism: Extra inputs are not permitted",
        ),
        (
            {
                "criteria": {
                    "final_response_match_v2": {
                        "threshold": 0.5,
                        "judge_model_options": {"parallelism_limit": 0},
                    }
                }
            },
            r"parallelism_limit: Input should be greater than or equal to 1",
        ),
        (
            {
                "criteria": {
                    "final_response_match_v2": {
                        "threshold": 0.5,
                        "judge_model_options": {"judge_model_config": {"temperature": 3}},
                    }
                }
            },
            r"temperature: Input should be less than or equal to 2",
        ),
        (
            {"criteria": {}, "customMetrics": {"m": {"code_config": {"name": "a.b"}}}},
            r"custom_metrics: Value error, ADK custom metrics .* are not run by Proctor",
        ),
        (
            {"criteria": {}, "userSimulatorConfig": {"type": "llm_audio"}},
            r"ADK's audio user simulator \(llm_audio\) .* text conversations only",
        ),
        (
            {"criteria": {}, "user_simulator_config": {"max_allowed_invocations": 0}},
            r"max_allowed_invocations: .*0 would run no conversation",
        ),
        (
            {"criteria": {}, "user_simulator_config": {"custom_instructions": "Say {{ stop_signal }}"}},
            r"custom_instructions must contain .*conversation_plan",
        ),
        (
            {"criteria": {}, "user_simulator_config": {"goals": ["book"], "model": "m"}},
            r"user_simulator_config: ADK's user simulator takes type, model, .*goals, max_invocations and instructions are agentflow's",
        ),
        (
            {"criteria": {}, "user_simulator_config": {"max_allowed_invocations": 3, "temperature": 1}},
            r"user_simulator_config\.temperature: Extra inputs are not permitted",
        ),
    ],
)
def test_what_adk_would_refuse_or_proctor_cannot_run_is_refused_with_the_reason(
    tmp_path: Path, config, message
) -> None:
    with pytest.raises(SuiteError, match=message):
        load_suite(_write(tmp_path, config))


def test_adks_top_level_config_fields_are_read_in_either_spelling(tmp_path: Path) -> None:
    config = {
        "criteria": {"response_match_score": 0.5},
        "liveModelConfig": {"timeoutSeconds": 30},
        "userSimulatorConfig": {
            "model": "sim-x",
            "maxAllowedInvocations": 4,
            "modelConfiguration": {"temperature": 0.3, "thinkingConfig": {"thinkingBudget": 10}},
        },
    }
    scenario = {
        "eval_id": "sim",
        "conversation_scenario": {"starting_prompt": "Hi", "conversation_plan": "Say hi."},
    }
    suite = load_suite(_write(tmp_path, config, [scenario]))
    simulator = suite.cases[0].metadata["adk_user_simulator"]
    assert (simulator["model"], simulator["max_allowed_invocations"]) == ("sim-x", 4)
    assert simulator["model_configuration"]["temperature"] == 0.3
    notes = " | ".join(suite.warnings)
    assert "live_model_config: not used: ADK reads it only to evaluate Live API models" in notes
    assert (
        "user_simulator_config.model_configuration.thinking_config: not sent to the simulator's model"
        in notes
    )


def test_a_simulator_config_without_scenarios_is_named(tmp_path: Path) -> None:
    suite = load_suite(
        _write(tmp_path, {"criteria": {"response_match_score": 0.5}, "user_simulator_config": {"model": "m"}})
    )
    assert any(
        "user_simulator_config: not used: no case has a conversation_scenario" in w for w in suite.warnings
    )


def test_an_agentflow_evalset_refuses_adks_simulator_config(tmp_path: Path) -> None:
    evalset = {
        "eval_set_id": "s",
        "eval_cases": [
            {
                "eval_id": "a",
                "conversation": [{"invocation_id": "i", "user_content": {"role": "user", "content": "Hi"}}],
            }
        ],
    }
    (tmp_path / "s.evalset.json").write_text(json.dumps(evalset))
    (tmp_path / "eval_config.json").write_text(
        json.dumps(
            {"criteria": {"response_match": 0.5}, "user_simulator_config": {"max_allowed_invocations": 3}}
        )
    )
    with pytest.raises(
        SuiteError,
        match=r"user_simulator_config: ADK's LLM-backed user simulator plays the conversation_scenario",
    ):
        load_suite(tmp_path / "s.evalset.json")


def test_proctors_list_of_genai_config_fields_is_google_genais() -> None:
    genai = pytest.importorskip("google.genai.types", reason="google-adk is not installed")
    from proctor.models.adk_config import GENERATE_CONTENT_CONFIG_FIELDS

    assert list(GENERATE_CONTENT_CONFIG_FIELDS) == list(genai.GenerateContentConfig.model_fields)


def test_the_manual_says_what_proctor_does_with_every_field_of_adks_config_models() -> None:
    """The field table of docs/suites/adk.md names every field of ADK's models, so a field google-adk adds
    (or one Proctor forgot) fails here instead of being dropped unnoticed."""
    pytest.importorskip("google.adk", reason="google-adk is not installed")
    from google.adk.evaluation import eval_config, eval_metrics
    from google.adk.evaluation.simulation.llm_backed_user_simulator import LlmBackedUserSimulatorConfig

    page = (ROOT / "docs" / "suites" / "adk.md").read_text(encoding="utf-8")
    table = page[page.index("| ADK model | field |") :].split("\n\n")[0]
    rows = {
        tuple(cell.replace("`", "").strip() for cell in line.split("|")[1:3])
        for line in table.splitlines()[2:]
    }
    models = [
        eval_config.EvalConfig,
        eval_metrics.BaseCriterion,
        eval_metrics.LlmAsAJudgeCriterion,
        eval_metrics.RubricsBasedCriterion,
        eval_metrics.HallucinationsCriterion,
        eval_metrics.ToolTrajectoryCriterion,
        eval_metrics.LlmBackedUserSimulatorCriterion,
        eval_metrics.JudgeModelOptions,
        LlmBackedUserSimulatorConfig,
        eval_config.LiveModelConfig,
    ]
    missing = []
    for model in models:
        for name in model.model_fields:
            owner = next(cls for cls in model.__mro__ if name in cls.__dict__.get("__annotations__", {}))
            if not any(
                owner.__name__ in re.split(r"[ ,/]+", model_cell) and name in re.split(r"[ ,/.]+", field_cell)
                for model_cell, field_cell in rows
            ):
                missing.append(f"{owner.__name__}.{name}")
    assert not missing, f"fields the ADK table of docs/suites/adk.md does not cover: {missing}"


def test_custom_instructions_without_the_persona_are_refused_for_a_persona_scenario(tmp_path: Path) -> None:
    """ADK raises when it first builds such a prompt; Proctor refuses the set before the run."""
    persona = {"id": "p", "description": "Polite.", "behaviors": []}
    scenario = {"starting_prompt": "Hi", "conversation_plan": "Say hi.", "user_persona": persona}
    config = {
        "criteria": {},
        "user_simulator_config": {
            "custom_instructions": "{{ stop_signal }} {{ conversation_plan }} {{ conversation_history }}"
        },
    }
    with pytest.raises(
        SuiteError, match=r"eval_cases\[0\]\.conversation_scenario\.user_persona: .*\{\{ persona \}\}"
    ):
        load_suite(_write(tmp_path, config, [{"eval_id": "a", "conversation_scenario": scenario}]))
