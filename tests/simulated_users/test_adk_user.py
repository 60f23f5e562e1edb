"""The simulated user of an ADK `conversation_scenario` case plays it as google-adk 2.13.0's
`LlmBackedUserSimulator` does: the same conversation with the same ADK agent, driven once by
ADK's own `EvaluationGenerator` and simulator and once by Proctor (`adk:` runner), each on its
own local OpenAI-compatible server answering by the prompt, sends the simulated user's model
the same prompts, and stops where ADK stops. The ADK half needs the `adk` extra."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from proctor.execution.pipeline import CaseWork, RunSettings, release_runtime, run_chunk, runtime_for
from proctor.models.case import MetricSpec
from tests.factories import make_case, stored_run
from tests.fakes import FakeOpenAI, prompt_of

AGENT_PY = '''
"""A dice agent for ADK; its model is the OpenAI-compatible endpoint in ADK_TEST_BASE_URL."""
import json
import os

import openai
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types


class OpenAICompatible(BaseLlm):
    async def generate_content_async(self, llm_request, stream=False):
        client = openai.AsyncOpenAI(base_url=os.environ["ADK_TEST_BASE_URL"], api_key="test-key")
        messages = [{"role": "system", "content": "dice agent"}]
        for content in llm_request.contents:
            for part in content.parts or []:
                if part.text:
                    messages.append({"role": "assistant" if content.role == "model" else "user", "content": part.text})
                elif part.function_call:
                    function = {"name": part.function_call.name, "arguments": json.dumps(part.function_call.args)}
                    messages.append({"role": "assistant", "content": None, "tool_calls": [
                        {"id": part.function_call.id, "type": "function", "function": function}]})
                elif part.function_response:
                    messages.append({"role": "tool", "tool_call_id": part.function_response.id,
                                     "content": json.dumps(part.function_response.response)})
        reply = await client.chat.completions.create(model=self.model, messages=messages)
        message = reply.choices[0].message
        parts = [types.Part(text=message.content)] if message.content else []
        for call in message.tool_calls or []:
            parts.append(types.Part(function_call=types.FunctionCall(
                id=call.id, name=call.function.name, args=json.loads(call.function.arguments))))
        yield LlmResponse(content=types.Content(role="model", parts=parts))


def roll_die(sides: int) -> dict:
    """Rolls a die."""
    return {"result": 4, "sides": sides}


root_agent = LlmAgent(name="dice", model=OpenAICompatible(model="dice-model"), instruction="Roll.", tools=[roll_die])
'''

PLAN = "Ask for a d6 roll. Then ask for a d20 roll. Then end the conversation."
PERSONA = {
    "id": "terse_gamer",
    "description": "A terse tabletop gamer.",
    "behaviors": [
        {
            "name": "Terse (ends with {{ stop_signal }})",
            "description": "Uses few words.",
            "behavior_instructions": ["Write at most five words.", "Say {{ stop_signal }} when done."],
            "violation_rubrics": ["The user rambles."],
        }
    ],
}
CUSTOM = (
    "Play {{ persona.id }}. Plan: {{ conversation_plan }}\nSo far:\n{{ conversation_history }}\n"
    "Finish with {{ stop_signal }}."
)


def _is_simulator(body: dict[str, Any]) -> bool:
    return len(body["messages"]) == 1 and not body.get("tools")  # the agent always sends its system prompt


def reply(body: dict[str, Any]) -> Any:
    """The agent's model and the simulated user's model, answering by what they are shown."""
    if _is_simulator(body):
        said = re.findall(r"^user: ", prompt_of(body), re.M)
        return "Now a d20 please." if len(said) == 1 else "Thanks, bye. </FINISHED>"
    last = body["messages"][-1]
    if last["role"] == "tool":
        return f"You rolled a 4 on the d{json.loads(last['content'])['sides']}."
    sides = 20 if "d20" in last["content"] else 6
    return {"content": "Let me roll.", "tool_calls": [{"name": "roll_die", "arguments": {"sides": sides}}]}


def _package(tmp_path: Path) -> Path:
    folder = tmp_path / f"sim_dice_{tmp_path.name.replace('-', '_')}"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(textwrap.dedent(AGENT_PY))
    return folder


def _adk_conversation(
    package: Path, scenario: dict[str, Any], config: dict[str, Any], base_url: str
) -> list[Any]:
    """ADK's own loop: EvaluationGenerator with ADK's LlmBackedUserSimulator, whose model is the
    test server (as tests/judges/adk_backend.py drives ADK's judges)."""
    from google.adk.evaluation.conversation_scenarios import ConversationScenario
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator
    from google.adk.evaluation.simulation.llm_backed_user_simulator import (
        LlmBackedUserSimulator,
        LlmBackedUserSimulatorConfig,
    )

    from tests.judges.adk_backend import OpenAIJudge

    simulator = LlmBackedUserSimulator(
        config=LlmBackedUserSimulatorConfig.model_validate({k: v for k, v in config.items() if k != "model"}),
        conversation_scenario=ConversationScenario.model_validate(scenario),
    )
    simulator._llm = OpenAIJudge(model="sim-model", base_url=base_url)
    root_agent = sys.modules[f"{package.name}.agent"].root_agent
    return asyncio.run(
        EvaluationGenerator._generate_inferences_from_root_agent(root_agent, user_simulator=simulator)
    )


def _proctor_conversation(
    package: Path, scenario: dict[str, Any], config: dict[str, Any], sqlite_url: str, tmp_path: Path
) -> CaseWork:
    agent = f"adk:{package}"
    settings = RunSettings(
        run_id=stored_run(sqlite_url, agent=agent),
        database_url=sqlite_url,
        agent=agent,
        suite_dir=str(tmp_path),
    )
    case = make_case(
        input=scenario["starting_prompt"],
        metadata={"conversation_scenario": scenario, "adk_user_simulator": config},
        # A metric that reads the answer only: ADK's per-invocation metrics (response_match_score)
        # do not apply to a scenario, which has no expected conversation.
        metrics=[MetricSpec(name="regex", args={"pattern": "rolled"})],
    )
    [work] = asyncio.run(run_chunk([CaseWork(0, case)], runtime_for(settings)))
    release_runtime(settings.run_id)
    return work


@pytest.mark.needs_extra
@pytest.mark.parametrize(
    ("persona", "config", "asked", "status"),
    [
        (None, {"model": "sim-model"}, 2, "stop_signal_detected"),
        (PERSONA, {"model": "sim-model", "include_function_calls": True}, 2, "stop_signal_detected"),
        (PERSONA, {"model": "sim-model", "custom_instructions": CUSTOM}, 2, "stop_signal_detected"),
        (None, {"model": "sim-model", "max_allowed_invocations": 2}, 1, "turn_limit_reached"),
        ("NOVICE", {"model": "sim-model"}, 2, "stop_signal_detected"),  # a prebuilt persona, by id
    ],
    ids=["plan", "persona-with-tool-calls", "custom-instructions", "turn-limit", "prebuilt-persona"],
)
def test_the_simulated_user_sends_adks_prompts_and_stops_where_adk_stops(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch, persona, config, asked, status
) -> None:
    pytest.importorskip("google.adk", reason="google-adk is not installed (pip install -e '.[adk]')")
    scenario = {"starting_prompt": "Roll a d6 for me.", "conversation_plan": PLAN}
    scenario |= {"user_persona": persona} if persona else {}
    package = _package(tmp_path)
    with FakeOpenAI(default=reply) as proctor_api, FakeOpenAI(default=reply) as adk_api:
        monkeypatch.setenv("OPENAI_BASE_URL", proctor_api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-sim")
        monkeypatch.setenv("ADK_TEST_BASE_URL", proctor_api.base_url)
        work = _proctor_conversation(package, scenario, config, sqlite_url, tmp_path)
        monkeypatch.setenv("ADK_TEST_BASE_URL", adk_api.base_url)
        invocations = _adk_conversation(package, scenario, config, adk_api.base_url)
        sent = [prompt_of(r["body"]) for r in proctor_api.completions if _is_simulator(r["body"])]
        adk_sent = [prompt_of(r["body"]) for r in adk_api.completions if _is_simulator(r["body"])]
        simulator_models = {r["body"]["model"] for r in proctor_api.completions if _is_simulator(r["body"])}

    assert work.outcome.errors == [] and simulator_models == {"sim-model"}
    assert sent == adk_sent and len(sent) == asked  # the starting prompt is sent without a model call
    turns = work.outcome.turns
    assert [t.input for t in turns] == [i.user_content.parts[0].text for i in invocations]
    assert [t.input for t in turns] == ["Roll a d6 for me.", "Now a d20 please."]
    assert (
        turns[-1].response == "You rolled a 4 on the d20."
        and turns[-1].metadata["simulation_status"] == status
    )
    # ADK's view of the conversation: the user's message, the agent's texts, its answer last
    assert "user: Roll a d6 for me.\n\ndice: Let me roll.\n\n" in sent[0]
    assert sent[0].endswith("dice: You rolled a 4 on the d6.") or "custom_instructions" in config
    if persona == "NOVICE":
        assert "while role-playing as the given Persona" in sent[0] and "{{" not in sent[0]
    if persona == PERSONA and "custom_instructions" not in config:
        assert "A terse tabletop gamer." in sent[0] and "## Terse (ends with </finished>)" in sent[0]
        assert "  * Say </finished> when done." in sent[0]
    if config.get("include_function_calls"):
        assert "dice called tool 'roll_die' with args: {'sides': 6}" in sent[0]
        assert "Tool 'roll_die' returned: {'result': 4, 'sides': 6}" in sent[0]
    else:
        assert "called tool" not in sent[0]
    if "custom_instructions" in config:
        assert sent[0].startswith("Play terse_gamer. Plan: Ask for a d6 roll.")


BOOKING_AGENT = """
def agent(request):
    request.record_tool_call("book_table", {"people": 2}, {"status": "booked"})
    return "Booked for two." if "two" in request.input else "For how many people?"
"""
BOOKING_PERSONA = {
    "id": "hurried_diner",
    "description": "A diner in a hurry who answers in few words.",
    "behaviors": [
        {
            "name": "Hurried",
            "description": "Answers only what is asked.",
            "behavior_instructions": ["Answer in five words or fewer."],
            "violation_rubrics": ["The user writes more than five words."],
        }
    ],
}


def _booking_reply(body: dict[str, Any]) -> str:
    prompt = prompt_of(body)
    if prompt.startswith("You are a data scientist tasked with evaluating the quality of a User Simulator"):
        return '{"is_valid": true}'
    if "Booked for two." in prompt.split("# Conversation History")[-1]:
        return "Great, thanks. </finished>"
    return "For two people."


def test_proctor_run_plays_a_scenario_with_a_persona_as_adk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlmodel import Session, select

    from proctor.cli import EXIT_PASSED, main
    from proctor.models.tables import CaseResultRow, MetricResultRow
    from proctor.storage import get_engine

    scenario = {
        "starting_prompt": "I need a table tonight.",
        "conversation_plan": "Book a table for two. End once it is booked.",
        "user_persona": BOOKING_PERSONA,
    }
    evalset = {
        "eval_set_id": "booking",
        "eval_cases": [{"eval_id": "hurried", "conversation_scenario": scenario}],
    }
    config = {
        "criteria": {
            "per_turn_user_simulator_quality_v1": {"threshold": 0.8, "judgeModelOptions": {"numSamples": 1}}
        },
        "userSimulatorConfig": {
            "model": "sim-model",
            "includeFunctionCalls": True,
            "maxAllowedInvocations": 5,
        },
    }
    (tmp_path / "agent.py").write_text(BOOKING_AGENT)
    (tmp_path / "booking.evalset.json").write_text(json.dumps(evalset))
    (tmp_path / "test_config.json").write_text(json.dumps(config))
    database = f"sqlite:///{tmp_path / 'results.db'}"
    with FakeOpenAI(default=_booking_reply) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-run")
        code = main(
            [
                "run",
                str(tmp_path / "booking.evalset.json"),
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
        requests = [(r["body"]["model"], prompt_of(r["body"])) for r in api.completions]
    assert code == EXIT_PASSED
    simulated = [prompt for model, prompt in requests if model == "sim-model"]
    assert len(simulated) == 2  # after each of the agent's two answers; the second reply ends it
    first = simulated[0]
    assert first.startswith("You are a Simulated User designed to test an AI Agent.\n\nYour single most")
    assert "while role-playing as the given Persona" in first
    assert "# Persona Description\n\nA diner in a hurry who answers in few words." in first
    assert (
        "## Hurried\nAnswers only what is asked.\n\nInstructions:\n  * Answer in five words or fewer."
        in first
    )
    assert first.endswith(
        "# Conversation History\n\nuser: I need a table tonight.\n\n"
        "agent called tool 'book_table' with args: {'people': 2}\n\n"
        "Tool 'book_table' returned: {'status': 'booked'}\n\nagent: For how many people?"
    )
    judged = [prompt for model, prompt in requests if model != "sim-model"]
    assert len(judged) == 2 and all("The user writes more than five words." in p for p in judged)
    with Session(get_engine(database)) as session:
        [row] = [row for row in session.exec(select(MetricResultRow)).all() if not row.informational]
        [case] = session.exec(select(CaseResultRow)).all()
    assert (row.metric_name, row.score, row.passed) == ("per_turn_user_simulator_quality_v1", 1.0, True)
    assert [turn["input"] for turn in case.turns] == ["I need a table tonight.", "For two people."]


def test_an_empty_reply_from_the_simulated_user_is_the_cases_error(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADK raises "Failed to generate a user message" for an empty reply; Proctor records it."""
    (tmp_path / "agent.py").write_text(BOOKING_AGENT)
    agent = f"{tmp_path / 'agent.py'}:agent"
    settings = RunSettings(
        run_id=stored_run(sqlite_url, agent=agent),
        database_url=sqlite_url,
        agent=agent,
        suite_dir=str(tmp_path),
    )
    scenario = {"starting_prompt": "I need a table.", "conversation_plan": "Book for two."}
    case = make_case(input="I need a table.", metadata={"conversation_scenario": scenario})
    with FakeOpenAI(default="") as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-sim")
        [work] = asyncio.run(run_chunk([CaseWork(0, case)], runtime_for(settings)))
        release_runtime(settings.run_id)
        [simulator_call] = api.completions
    assert simulator_call["body"]["model"] == "gpt-4o-mini"  # no user_simulator_config: Proctor's default
    assert work.outcome.state.value == "AGENT_FAILED" and [t.input for t in work.outcome.turns] == [
        "I need a table."
    ]
    assert work.outcome.errors == [
        "user simulator failed: Failed to generate a user message: LLM returned empty response"
    ]
    assert work.outcome.turns[-1].metadata["simulation_status"] == "simulator_failed"


def test_a_starting_prompt_with_the_stop_signal_ends_the_conversation_before_it_starts(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As ADK checks every message it would send, the starting prompt included."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sim")
    (tmp_path / "agent.py").write_text(BOOKING_AGENT)
    agent = f"{tmp_path / 'agent.py'}:agent"
    settings = RunSettings(
        run_id=stored_run(sqlite_url, agent=agent),
        database_url=sqlite_url,
        agent=agent,
        suite_dir=str(tmp_path),
    )
    scenario = {"starting_prompt": "Never mind </finished>", "conversation_plan": "Nothing."}
    case = make_case(input=scenario["starting_prompt"], metadata={"conversation_scenario": scenario})
    [work] = asyncio.run(run_chunk([CaseWork(0, case)], runtime_for(settings)))
    release_runtime(settings.run_id)
    assert work.outcome.turns == []


@pytest.mark.needs_extra
@pytest.mark.parametrize("include_function_calls", [False, True])
def test_the_conversation_is_summarised_as_adk_summarises_it(include_function_calls: bool) -> None:
    """Thoughts left out, every other text kept with its author, calls and results on request;
    a non-ADK agent's record laid out as ADK's events (author "agent")."""
    pytest.importorskip("google.adk", reason="google-adk is not installed (pip install -e '.[adk]')")
    from google.adk.evaluation.simulation.llm_backed_user_simulator import LlmBackedUserSimulator
    from google.adk.events.event import Event
    from google.genai import types

    from proctor.agents.adk_agent import event_record
    from proctor.models.agentflow import ToolCall
    from proctor.models.outcome import AgentTurn
    from proctor.simulated_users.adk_user import dialogue

    call = types.FunctionCall(id="c1", name="roll_die", args={"sides": 6})
    said = [
        Event(author="user", content=types.Content(role="user", parts=[types.Part(text="Roll")])),
        Event(
            author="dice",
            content=types.Content(
                role="model",
                parts=[
                    types.Part(text="I should roll.", thought=True),
                    types.Part(text="Rolling."),
                    types.Part(function_call=call),
                ],
            ),
        ),
        Event(
            author="dice",
            content=types.Content(
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(id="c1", name="roll_die", response={"n": 4})
                    )
                ]
            ),
        ),
        Event(author="dice", content=types.Content(role="model", parts=[types.Part(text="A 4.")])),
        Event(author="user", content=types.Content(role="user", parts=[types.Part(text="Again")])),
        Event(author="agent", content=types.Content(role="model", parts=[types.Part(text="Checking.")])),
        Event(
            author="agent",
            content=types.Content(
                parts=[types.Part(function_call=types.FunctionCall(name="roll_die", args={"sides": 6}))]
            ),
        ),
        Event(
            author="agent",
            content=types.Content(
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(name="roll_die", response={"result": "a 2"})
                    )
                ]
            ),
        ),
        Event(author="agent", content=types.Content(role="model", parts=[types.Part(text="A 2.")])),
    ]
    recorded = AgentTurn(  # as the adk: runner records it: the answer's event without its content
        turn_id="sim_1",
        input="Roll",
        response="A 4.",
        metadata={
            "adk_events": [event_record(said[1]), event_record(said[2]), {"author": "dice", "parts": None}]
        },
    )
    plain = AgentTurn(  # any other agent
        turn_id="sim_2",
        input="Again",
        response="A 2.",
        tool_calls=[ToolCall(name="roll_die", args={"sides": 6}, result="a 2")],
        metadata={"intermediate_responses": ["Checking."]},
    )
    expected = LlmBackedUserSimulator._summarize_conversation(said, include_function_calls)
    assert dialogue([recorded, plain], include_function_calls) == expected
    assert "I should roll." not in expected and "dice: Rolling." in expected
