"""`proctor run` on an ADK eval set whose test_config.json names ADK's conversation judges
(hallucinations_v1, rubric_based_multi_turn_trajectory_quality_v1,
per_turn_user_simulator_quality_v1): a static case and a simulated-user case, the judges and the
simulated user on the local OpenAI-compatible server, the scores stored per case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.cli import EXIT_PASSED, main
from proctor.metrics.adk.names import ADK_EFFICIENCY_METRICS
from proctor.models.tables import MetricResultRow
from proctor.storage import get_engine
from tests.fakes import FakeOpenAI, prompt_of

AGENT = """
def agent(request):
    request.record_tool_call("book_table", {"people": 2}, {"status": "booked"})
    return "Booked."
"""

SET = {
    "eval_set_id": "tables",
    "eval_cases": [
        {
            "eval_id": "static",
            "conversation": [
                {"invocation_id": "i1", "user_content": {"parts": [{"text": "A table for two, please."}]}},
                {"invocation_id": "i2", "user_content": {"parts": [{"text": "At 7pm."}]}},
            ],
        },
        {
            "eval_id": "simulated",
            "conversation_scenario": {
                "starting_prompt": "I need a table.",
                "conversation_plan": "Book a table for two. Stop once it is booked.",
            },
        },
    ],
}
CONFIG = {
    "criteria": {
        "hallucinations_v1": {"threshold": 0.5},
        "rubric_based_multi_turn_trajectory_quality_v1": {
            "threshold": 0.5,
            "judgeModelOptions": {"numSamples": 1},
            "rubrics": [{"rubricId": "r1", "rubricContent": {"textProperty": "Stays on topic."}}],
        },
        "per_turn_user_simulator_quality_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}},
    }
}
REPLIES = {  # a phrase of the prompt -> the reply
    "You are a Simulated User designed to test an AI Agent": lambda prompt: (
        "</finished>"
        if "For two, please." in prompt.split("# Conversation History")[-1]
        else "For two, please."
    ),
    "evaluating the quality of a User Simulator": lambda prompt: '{"criteria": [], "is_valid": true}',
    "segment the provided response": lambda prompt: "<sentence>Booked.</sentence>",
    "analyze sentence by sentence": lambda prompt: (
        "sentence: Booked.\nlabel: supported\nrationale: the tool booked it.\n"
        "supporting_excerpt: booked\ncontradicting_excerpt: null"
    ),
    "AI agent in a multi-turn conversation": lambda prompt: (
        "ID: r1\nProperty: Stays on topic.\nRationale: ok\nVerdict: yes"
    ),
}


def _reply(body: dict) -> str:
    prompt = prompt_of(body)
    return next((reply(prompt) for phrase, reply in REPLIES.items() if phrase in prompt), "unexpected prompt")


def test_proctor_run_scores_adks_conversation_judges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "tables.evalset.json").write_text(json.dumps(SET))
    (tmp_path / "test_config.json").write_text(json.dumps(CONFIG))
    database = f"sqlite:///{tmp_path / 'results.db'}"
    with FakeOpenAI(default=_reply) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-run")
        code = main(
            [
                "run",
                str(tmp_path / "tables.evalset.json"),
                "--agent",
                f"{tmp_path / 'agent.py'}:agent",
                "--no-prefect",
                "--no-progress",
                "--db",
                database,
                "--output",
                str(tmp_path / "out"),
            ]
        )
        prompts = [prompt_of(request["body"]) for request in api.completions]
    assert code == EXIT_PASSED
    assert not any("unexpected prompt" in p for p in prompts)
    with Session(get_engine(database)) as session:
        rows = session.exec(select(MetricResultRow)).all()
    scores = {
        (row.case_id, row.metric_name): (row.score, row.passed, row.error)
        for row in rows
        if not row.informational  # ADK's four efficiency measures, reported on every ADK case
    }
    assert {row.metric_name for row in rows if row.informational} == set(ADK_EFFICIENCY_METRICS)
    assert scores == {
        ("static", "hallucinations_v1"): (1.0, True, None),
        ("static", "rubric_based_multi_turn_trajectory_quality_v1"): (1.0, True, None),
        ("simulated", "hallucinations_v1"): (1.0, True, None),
        ("simulated", "rubric_based_multi_turn_trajectory_quality_v1"): (1.0, True, None),
        ("simulated", "per_turn_user_simulator_quality_v1"): (1.0, True, None),
    }
    simulator_judged = [p for p in prompts if "evaluating the quality of a User Simulator" in p]
    assert len(simulator_judged) == 2  # the second user message, then the stop signal
    assert simulator_judged[0].endswith("# Generated User Response\nFor two, please.")
    assert "user: I need a table.\n\nmodel: Booked." in simulator_judged[0]


def test_a_scenario_case_is_decided_by_its_other_metrics_as_adk_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """response_match_score and tool_trajectory_avg_score compare with an expected conversation,
    which a conversation_scenario case has none of: ADK records them NOT_EVALUATED and decides
    the case on its other metrics. Proctor scored them 0.0 and failed the case."""
    (tmp_path / "agent.py").write_text(AGENT)
    only_scenario = {"eval_set_id": "tables", "eval_cases": [SET["eval_cases"][1]]}
    (tmp_path / "tables.evalset.json").write_text(json.dumps(only_scenario))
    config = {
        "criteria": {
            "response_match_score": 0.8,
            "tool_trajectory_avg_score": 1.0,
            "hallucinations_v1": {"threshold": 0.5},
        }
    }
    (tmp_path / "test_config.json").write_text(json.dumps(config))
    database = f"sqlite:///{tmp_path / 'results.db'}"
    with FakeOpenAI(default=_reply) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-run")
        arguments = [str(tmp_path / "tables.evalset.json"), "--agent", f"{tmp_path / 'agent.py'}:agent"]
        code = main(
            ["run", *arguments, "--no-prefect", "--no-progress", "--db", database, "--output", str(tmp_path)]
        )
    assert code == EXIT_PASSED
    with Session(get_engine(database)) as session:
        rows = session.exec(select(MetricResultRow)).all()
    assert {(row.metric_name, row.passed) for row in rows if not row.informational} == {
        ("hallucinations_v1", True)
    }
