"""ADK's two per-invocation rubric judges show the agent's instructions and tool declarations as
ADK fills them from an invocation's app details: for an `adk:` agent from what the runner
records (the instructions of the agent that spoke first, every agent's tools, grounding
metadata), for an `openai:` agent.yaml agent from its own instructions and tool schemas. The
prompts the local server receives are the ones ADK's own evaluators send for the same
invocation, and the scores are ADK's. Needs the `adk` extra; skipped without it."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.needs_extra
pytest.importorskip("google.adk", reason="google-adk is not installed (pip install -e '.[adk]')")

from google.adk.evaluation.app_details import AgentDetails, AppDetails  # noqa: E402
from google.adk.evaluation.eval_case import Invocation, InvocationEvent, InvocationEvents  # noqa: E402
from google.adk.evaluation.eval_metrics import (  # noqa: E402
    EvalMetric,
    JudgeModelOptions,
    RubricsBasedCriterion,
)
from google.adk.evaluation.eval_rubrics import Rubric, RubricContent  # noqa: E402
from google.adk.evaluation.rubric_based_final_response_quality_v1 import (  # noqa: E402
    RubricBasedFinalResponseQualityV1Evaluator,
)
from google.adk.evaluation.rubric_based_tool_use_quality_v1 import RubricBasedToolUseV1Evaluator  # noqa: E402
from google.genai import types  # noqa: E402

from proctor.agents import AgentRequest, load_target  # noqa: E402
from proctor.agents.adk_agent import _dump, event_record  # noqa: E402
from proctor.judges import Judge, JudgeClient  # noqa: E402
from proctor.metrics import REGISTRY, BoundMetric, score_metric  # noqa: E402
from proctor.metrics import runner as metric_runner  # noqa: E402
from proctor.models.case import MetricSpec, Turn  # noqa: E402
from proctor.models.outcome import AgentTurn  # noqa: E402
from tests.factories import make_case, make_ctx  # noqa: E402
from tests.fakes import FakeOpenAI, prompt_of  # noqa: E402
from tests.judges.adk_backend import run_adk  # noqa: E402

RUBRICS = [("uses_tool", "The agent looks the hours up."), ("polite", "The answer is polite.")]
REPLIES = [
    "ID: uses_tool\nProperty: The agent looks the hours up.\nRationale: r.\nVerdict: yes\n"
    "ID: polite\nProperty: The answer is polite.\nRationale: r.\nVerdict: no\n",
    "ID: uses_tool\nProperty: x\nRationale: r.\nVerdict: yes\nID: polite\nProperty: x\nRationale: r.\nVerdict: yes\n",
    "ID: uses_tool\nProperty: x\nRationale: r.\nVerdict: no\nID: polite\nProperty: x\nRationale: r.\nVerdict: no\n",
]
EVALUATORS = {
    "rubric_based_final_response_quality_v1": RubricBasedFinalResponseQualityV1Evaluator,
    "rubric_based_tool_use_quality_v1": RubricBasedToolUseV1Evaluator,
}


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI(default="unreadable") as proctor_api, FakeOpenAI(default="unreadable") as adk_api:
        proctor_api.script(*REPLIES)
        adk_api.script(*REPLIES)
        yield proctor_api, adk_api


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metric_runner, "RETRY_DELAYS_S", (0.0, 0.0, 0.0))


def _both(name: str, servers: Any, turn: AgentTurn, invocation: Invocation) -> tuple[list[str], Any, Any]:
    """Proctor's metric and ADK's evaluator on the same invocation, each on its own server."""
    proctor_api, adk_api = servers
    spec = MetricSpec(
        name=name,
        args={
            "rubrics": [{"rubric_id": i, "rubric_content": {"text_property": t}} for i, t in RUBRICS],
            "num_samples": 3,
        },
    )
    client = JudgeClient(base_url=proctor_api.base_url, api_key="sk-test")
    judge = Judge.for_spec(spec, client, None, default_model="judge-model", timeout_s=30)
    ctx = make_ctx(make_case(Turn(turn_id=turn.turn_id, input=turn.input)), turn)
    result = asyncio.run(score_metric(BoundMetric(spec, REGISTRY.build(spec), judge), ctx))
    criterion = RubricsBasedCriterion(
        threshold=0.8,
        rubrics=[Rubric(rubric_id=i, rubric_content=RubricContent(text_property=t)) for i, t in RUBRICS],
        judge_model_options=JudgeModelOptions(num_samples=3),
    )
    adk = run_adk(
        EVALUATORS[name](EvalMetric(metric_name=name, criterion=criterion)),
        adk_api.base_url,
        "_judge_model",
        [invocation],
    )
    sent = [prompt_of(r["body"]) for r in proctor_api.completions]
    assert sent == [prompt_of(r["body"]) for r in adk_api.completions] and len(sent) == 3
    assert abs(result.score - adk.overall_score) <= 1e-9 and result.error is None
    return sent, result, adk


def _text(role: str, text: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


HOURS_TOOL = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_hours",
            description="Opening hours of one day.",
            parameters_json_schema={"type": "object", "properties": {"day": {"type": "string"}}},
        )
    ]
)
APP = AppDetails(
    agent_details={
        "router": AgentDetails(name="router", instructions="Send hour questions on."),
        "hours_agent": AgentDetails(
            name="hours_agent",
            instructions="Tell opening hours; use get_hours.",
            tool_declarations=[HOURS_TOOL],
        ),
    }
)


@pytest.mark.parametrize("name", list(EVALUATORS))
def test_an_adk_agents_recorded_app_details_and_grounding_are_shown_as_adk_shows_them(servers, name) -> None:
    call = types.FunctionCall(id="c1", name="get_hours", args={"day": "mon"})
    grounding = types.GroundingMetadata(web_search_queries=["hours of café"])
    events = [
        InvocationEvent(
            author="hours_agent", content=types.Content(role="model", parts=[types.Part(function_call=call)])
        ),
        InvocationEvent(
            author="hours_agent",
            content=types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id="c1", name="get_hours", response={"open": "9"}
                        )
                    )
                ],
            ),
        ),
        InvocationEvent(author="hours_agent", content=None, grounding_metadata=grounding),  # the answer's
    ]
    from proctor.models.agentflow import ToolCall

    turn = AgentTurn(
        turn_id="t1",
        input="When do you open on Monday?",
        response="We open at 9, thanks for asking.",
        tool_calls=[ToolCall(name="get_hours", args={"day": "mon"}, call_id="c1", result={"open": "9"})],
        metadata={
            "adk_events": [event_record(e) for e in events[:2]]
            + [{"author": "hours_agent", "parts": None, "grounding_metadata": _dump(grounding)}],
            "adk_app_details": {
                agent: {
                    "instructions": d.instructions,
                    "tool_declarations": [_dump(t) for t in d.tool_declarations],
                }
                for agent, d in APP.agent_details.items()
            },
        },
    )
    invocation = Invocation(
        user_content=_text("user", turn.input),
        final_response=_text("model", turn.response),
        intermediate_data=InvocationEvents(invocation_events=events),
        app_details=APP,
    )
    sent, _, adk = _both(name, servers, turn, invocation)
    assert (
        '"router": []' in sent[0]
        and '"parameters_json_schema"' in sent[0]
        and "Agent has no tools." not in sent[0]
    )
    if name == "rubric_based_final_response_quality_v1":  # the instructions of the agent that spoke first
        assert (
            "<developer_instructions>\n  Tell opening hours; use get_hours.\n  </developer_instructions>"
            in sent[0]
        )
        assert '"hours of café"' in sent[0] and '"author": "hours_agent"' in sent[0]
    assert adk.overall_score == pytest.approx(0.5, abs=1e-12)


AGENT_YAML = """
name: hours_desk
model: {{provider: openai, name: agent-model, endpoint: "{url}", api_key: "${{AGENT_KEY}}"}}
instructions: {{inline: "You tell the opening hours. Use get_hours."}}
tools:
  - name: get_hours
    description: Opening hours of one day.
    parameters: {{type: object, properties: {{day: {{type: string}}}}, required: [day]}}
    function: tools.py:get_hours
  - name: get_holidays
    parameters: {{day: {{type: string, description: The day}}}}
test_cases: [{{input: hi}}]
"""


@pytest.mark.parametrize("name", list(EVALUATORS))
def test_an_openai_agents_instructions_and_tools_are_shown_as_adk_would_show_them(
    servers, name, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent.yaml agent reports its instructions and tool schemas as ADK records an agent's
    app details; ADK's evaluator given those app details and the events Proctor lays out (author:
    the agent's name) sends the same prompt."""
    with FakeOpenAI() as model:
        monkeypatch.setenv("AGENT_KEY", "sk-agent")
        (tmp_path / "tools.py").write_text("def get_hours(day):\n    return {'open': '9'}\n")
        (tmp_path / "agent.yaml").write_text(textwrap.dedent(AGENT_YAML.format(url=model.base_url)))
        model.script({"tool_calls": [{"name": "get_hours", "arguments": {"day": "mon"}}]}, "Open at 9.")
        agent = load_target(f"openai:{tmp_path / 'agent.yaml'}")
        request = AgentRequest(case_id="c", turn_id="t1", input="Monday hours?", thread_id="th")
        response = asyncio.run(agent(request))
    turn = AgentTurn(
        turn_id="t1",
        input="Monday hours?",
        response=response.answer,
        tool_calls=request.recorded_tool_calls,
        metadata=response.metadata,
    )
    declarations = [
        types.FunctionDeclaration(
            name="get_hours",
            description="Opening hours of one day.",
            parameters_json_schema={
                "type": "object",
                "properties": {"day": {"type": "string"}},
                "required": ["day"],
            },
        ),
        types.FunctionDeclaration(
            name="get_holidays",
            parameters_json_schema={
                "type": "object",
                "properties": {"day": {"type": "string", "description": "The day"}},
                "required": ["day"],
            },
        ),
    ]
    app = AppDetails(
        agent_details={
            "hours_desk": AgentDetails(
                name="hours_desk",
                instructions="You tell the opening hours. Use get_hours.",
                tool_declarations=[types.Tool(function_declarations=declarations)],
            )
        }
    )
    call = types.FunctionCall(name="get_hours", args={"day": "mon"})
    result = types.FunctionResponse(name="get_hours", response={"open": "9"})
    invocation = Invocation(
        user_content=_text("user", turn.input),
        final_response=_text("model", "Open at 9."),
        intermediate_data=InvocationEvents(
            invocation_events=[
                InvocationEvent(
                    author="hours_desk", content=types.Content(parts=[types.Part(function_call=call)])
                ),
                InvocationEvent(
                    author="hours_desk", content=types.Content(parts=[types.Part(function_response=result)])
                ),
            ]
        ),
        app_details=app,
    )
    sent, result_score, _ = _both(name, servers, turn, invocation)
    assert '"name": "get_holidays"' in sent[0] and "Agent has no tools." not in sent[0]
    if name == "rubric_based_final_response_quality_v1":
        assert "You tell the opening hours. Use get_hours." in sent[0]
    assert result_score.passed is False and result_score.score == 0.5
