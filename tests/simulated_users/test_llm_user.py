"""A simulated user (an LLM on the local OpenAI server) talks to the agent toward its goals."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from proctor.execution.pipeline import CaseWork, RunSettings, release_runtime, run_chunk, runtime_for
from proctor.metrics import REGISTRY
from proctor.metrics.base import MetricContext
from proctor.models.case import MetricSpec
from tests.factories import make_case, stored_run
from tests.fakes import FakeOpenAI, prompt_of

AGENT = """
def agent(request):
    text = request.input.lower()
    if "refund" in text:
        return "Your refund for order 42 is approved."
    return "Hello! How can I help?"
"""

GOALS = ["Get a refund for order 42", "Learn when the money arrives"]


def _simulator(body: dict) -> str:
    """Plays the user: asks for the refund, then for the timing; it never learns the timing."""
    prompt = prompt_of(body)
    if "refund for order 42 is approved" in prompt:
        return json.dumps(
            {
                "goals_achieved": [GOALS[0]],
                "done": "[assistant] Hello" in prompt.split("refund")[-1],
                "next_message": "When will the money arrive?",
            }
        )
    return json.dumps({"goals_achieved": [], "done": False, "next_message": "I want a refund for order 42."})


@pytest.fixture
def simulated(tmp_path: Path, sqlite_url: str, monkeypatch):
    with FakeOpenAI(default=_simulator) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-sim")
        (tmp_path / "agent.py").write_text(AGENT)
        agent = f"{tmp_path / 'agent.py'}:agent"
        settings = RunSettings(
            run_id=stored_run(sqlite_url, agent=agent),
            database_url=sqlite_url,
            agent=agent,
            suite_dir=str(tmp_path),
        )
        yield api, settings


def test_the_simulated_user_talks_until_it_stops_and_goals_are_recorded(simulated) -> None:
    api, settings = simulated
    plan = {
        "goals": GOALS,
        "max_invocations": 4,
        "model": "sim-model",
        "instructions": "an impatient customer",
    }
    case = make_case(
        input="Hi there", metadata={"user_simulator": plan}, metrics=[MetricSpec(name="goals_achieved")]
    )
    [work] = asyncio.run(run_chunk([CaseWork(0, case)], runtime_for(settings)))
    release_runtime(settings.run_id)
    turns = work.outcome.turns
    assert [t.input for t in turns][:2] == ["Hi there", "I want a refund for order 42."]
    assert turns[1].response == "Your refund for order 42 is approved."
    assert len(turns) <= 4 and turns[-1].metadata["goals_achieved"] == [GOALS[0]]
    assert turns[-1].metadata["goals"] == GOALS and turns[-1].metadata["simulator_calls"] == len(turns)
    [metric] = work.outcome.metrics
    assert (metric.metric_name, metric.score, metric.passed) == ("goals_achieved", 0.5, False)
    first = api.completions[0]["body"]
    assert first["model"] == "sim-model" and "an impatient customer" in prompt_of(first)


def test_a_simulator_that_fails_fails_the_case_with_the_reason(simulated) -> None:
    api, settings = simulated
    api.default = "not json"
    case = make_case(metadata={"user_simulator": {"goals": GOALS, "max_invocations": 3}})
    [work] = asyncio.run(run_chunk([CaseWork(0, case)], runtime_for(settings)))
    release_runtime(settings.run_id)
    assert work.outcome.state.value == "AGENT_FAILED"
    assert "user simulator failed" in work.outcome.errors[0]


def test_goals_achieved_needs_a_simulated_conversation() -> None:
    metric = REGISTRY.build(MetricSpec(name="goals_achieved"))
    assert not metric.applies_to(MetricContext(case=make_case(), turns=[]))
