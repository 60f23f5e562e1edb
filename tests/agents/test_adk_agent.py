"""`--agent adk:path/to/agent_package`: an ADK agent package runs under google-adk's own
Runner, its model reaching the local OpenAI-compatible test server.

The package's model is a small `BaseLlm` subclass over the real `openai` client: ADK's own
`LiteLlm` class needs litellm, whose releases that google-adk 2.13.0 accepts (<1.106.3) need
openai<3, while Proctor runs on openai 3.x. Needs the `adk` extra; skipped without it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.needs_extra  # CI runs these again with the adk extra installed
pytest.importorskip("google.adk", reason="google-adk is not installed (pip install -e '.[adk]')")

from proctor.agents.protocol import AgentRequest  # noqa: E402
from proctor.agents.targets import load_target  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402

AGENT_PY = '''
"""A dice agent written for ADK; its model is any OpenAI-compatible endpoint (ADK_TEST_BASE_URL)."""
import json
import os

import openai
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types

USAGE = []  # (prompt, completion) tokens of every model call, as the server reported them


class OpenAICompatible(BaseLlm):
    async def generate_content_async(self, llm_request, stream=False):
        client = openai.AsyncOpenAI(base_url=os.environ["ADK_TEST_BASE_URL"], api_key="test-key")
        messages = [{"role": "system", "content": str(llm_request.config.system_instruction or "")}]
        for content in llm_request.contents:
            for part in content.parts or []:
                if part.text:
                    role = "assistant" if content.role == "model" else "user"
                    messages.append({"role": role, "content": part.text})
                elif part.function_call:
                    call = part.function_call
                    function = {"name": call.name, "arguments": json.dumps(call.args or {})}
                    messages.append({"role": "assistant", "content": None,
                                     "tool_calls": [{"id": call.id, "type": "function", "function": function}]})
                elif part.function_response:
                    messages.append({"role": "tool", "tool_call_id": part.function_response.id,
                                     "content": json.dumps(part.function_response.response)})
        tools = [{"type": "function", "function": {"name": d.name, "parameters": {"type": "object"}}}
                 for tool in llm_request.config.tools or [] for d in tool.function_declarations or []]
        reply = await client.chat.completions.create(model=self.model, messages=messages, tools=tools)
        message = reply.choices[0].message
        USAGE.append((reply.usage.prompt_tokens, reply.usage.completion_tokens))
        parts = [types.Part(text=message.content)] if message.content else []
        for call in message.tool_calls or []:
            args = json.loads(call.function.arguments)
            parts.append(types.Part(function_call=types.FunctionCall(id=call.id, name=call.function.name, args=args)))
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=reply.usage.prompt_tokens,
                candidates_token_count=reply.usage.completion_tokens,
                total_token_count=reply.usage.total_tokens,
            ),
        )


def roll_die(sides: int, tool_context) -> dict:
    """Rolls a die; remembers the roll in the session state."""
    tool_context.state["last_roll"] = 4
    return {"result": 4, "sides": sides}


root_agent = LlmAgent(
    name="dice", model=OpenAICompatible(model="fake-model"), instruction="Roll dice.", tools=[roll_die]
)
'''


def _package(tmp_path: Path) -> Path:
    folder = tmp_path / f"dice_agent_{tmp_path.name.replace('-', '_')}"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(textwrap.dedent(AGENT_PY))
    return folder


ROLL = {"content": "Let me roll.", "tool_calls": [{"name": "roll_die", "arguments": {"sides": 6}}]}


def test_an_adk_package_runs_with_adks_runner_recording_calls_state_and_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAI(default="Nothing more to do.") as fake:
        monkeypatch.setenv("ADK_TEST_BASE_URL", fake.base_url)
        fake.script(ROLL, "You rolled a 4.")
        package = _package(tmp_path)
        agent = load_target(f"adk:{package}")
        first = AgentRequest(
            case_id="c", turn_id="t1", input="Roll a d6", thread_id="th", state={"user": "ann"}
        )
        response = asyncio.run(agent(first))
        second = asyncio.run(agent(AgentRequest(case_id="c", turn_id="t2", input="Thanks", thread_id="th")))
        completions = fake.completions

    assert response.answer == "You rolled a 4."
    [roll] = response.tool_calls
    assert (roll.name, roll.args, roll.result) == ("roll_die", {"sides": 6}, {"result": 4, "sides": 6})
    assert response.metadata["session_state"] == {"user": "ann", "last_roll": 4}
    assert response.metadata["intermediate_responses"] == ["Let me roll."]
    # The turn's events as ADK's eval keeps them (the final answer's without content), and the
    # agent's instructions and tools from its model request, for ADK's conversation judges.
    events = response.metadata["adk_events"]
    assert [event["author"] for event in events] == ["dice", "dice", "dice"]
    assert events[0]["parts"][0] == {"text": "Let me roll."}
    assert events[0]["parts"][1]["function_call"]["name"] == "roll_die"
    assert events[1]["parts"][0]["function_response"]["response"] == {"result": 4, "sides": 6}
    assert events[2]["parts"] is None
    details = response.metadata["adk_app_details"]["dice"]
    assert "Roll dice." in details["instructions"]
    [tool] = details["tool_declarations"]
    assert tool["function_declarations"][0]["name"] == "roll_die"
    # Tokens as the model reported them on each of the turn's two calls, summed.
    usage = sys.modules[f"{package.name}.agent"].USAGE
    assert len(usage) == 3 and response.usage.prompt_tokens == usage[0][0] + usage[1][0] > 0
    assert response.usage.completion_tokens == usage[0][1] + usage[1][1] > 0
    assert second.usage.prompt_tokens == usage[2][0]
    assert (response.model_calls, second.model_calls) == (2, 1)  # ADK's inference calls per turn
    # The second turn continues the same ADK session: the model sees the first exchange.
    assert second.answer == "Nothing more to do." and second.metadata["session_state"]["last_roll"] == 4
    last_messages = json.dumps(completions[-1]["body"]["messages"])
    assert "Roll a d6" in last_messages and "You rolled a 4." in last_messages


def test_a_folder_without_root_agent_is_a_clear_error(tmp_path: Path) -> None:
    from proctor.user_code import AgentLoadError

    folder = tmp_path / f"empty_agent_{tmp_path.name.replace('-', '_')}"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "agent.py").write_text("x = 1\n")
    with pytest.raises(AgentLoadError, match=r"no root_agent in the package or its agent.py"):
        load_target(f"adk:{folder}")


def test_the_final_response_is_read_as_adks_eval_reads_it() -> None:
    """Thoughts are part of ADK's final response text; a final event that also calls a tool
    (skip_summarization) keeps its content among the turn's events, as ADK keeps it."""
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator
    from google.adk.events import Event, EventActions
    from google.genai import types

    from proctor.agents.adk_agent import adk_final_response

    def event(*parts: types.Part, author: str = "agent", **fields: object) -> Event:
        content = types.Content(role="model", parts=list(parts))
        return Event(invocation_id="inv-1", author=author, content=content, **fields)

    def adk_reading(final: Event) -> tuple[str, bool]:
        [invocation] = EvaluationGenerator.convert_events_to_eval_invocations(
            [event(types.Part(text="Weather?"), author="user"), final]
        )
        text = "\n".join(part.text for part in invocation.final_response.parts if part.text)
        return text, invocation.intermediate_data.invocation_events[0].content is not None

    thinking = event(types.Part(text="Let me think.", thought=True), types.Part(text="It is sunny."))
    assert adk_final_response(thinking) == adk_reading(thinking) == ("Let me think.\nIt is sunny.", False)
    call = types.Part(function_call=types.FunctionCall(name="lookup", args={}))
    final_with_call = event(
        types.Part(text="Looked it up."), call, actions=EventActions(skip_summarization=True)
    )
    assert adk_final_response(final_with_call) == adk_reading(final_with_call) == ("Looked it up.", True)
    assert adk_final_response(event(types.Part(text="Checking."), call)) is None  # a step, not the answer
