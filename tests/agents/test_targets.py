"""Finding the agent under test and calling it, whatever shape it has and however it fails."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from proctor.agents import (
    AgentInvoker,
    AgentLoadError,
    AgentOutputError,
    AgentRequest,
    AgentResponse,
    AgentTimeoutError,
    load_target,
)


def _request(text: str = "hi") -> AgentRequest:
    return AgentRequest(case_id="c", turn_id="t1", input=text, thread_id="th")


def _agent_file(tmp_path: Path, body: str, name: str = "my_agent.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_loads_a_callable_from_a_file(tmp_path: Path) -> None:
    path = _agent_file(tmp_path, "def agent(request):\n    return 'echo: ' + request.input\n")
    agent = load_target(f"{path}:agent")
    assert agent(_request("x")) == "echo: x"


def test_loads_a_callable_from_a_module() -> None:
    assert load_target("json:dumps")({"a": 1}) == '{"a": 1}'


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_colon_here", "must look like"),
        ("missing_file.py:agent", "not found"),
        ("json:no_such_attr", "has no attribute 'no_such_attr'"),
        ("no_such_module_xyz:agent", "cannot import no_such_module_xyz"),
        ("json:__doc__", "not a callable"),
    ],
)
def test_bad_targets_say_what_is_wrong(target: str, message: str) -> None:
    with pytest.raises(AgentLoadError, match=message):
        load_target(target)


def test_a_file_that_fails_to_import_names_the_error(tmp_path: Path) -> None:
    path = _agent_file(tmp_path, "raise RuntimeError('boom at import')\n", "broken.py")
    with pytest.raises(AgentLoadError, match="boom at import"):
        load_target(f"{path}:agent")


def _invoke(agent, request: AgentRequest | None = None, timeout_s: float | None = 5.0) -> AgentResponse:
    invoker = AgentInvoker(agent, max_threads=2, timeout_s=timeout_s)
    try:
        return asyncio.run(invoker.invoke(request or _request()))
    finally:
        invoker.close()


def test_sync_and_async_agents_are_both_called() -> None:
    async def async_agent(request: AgentRequest) -> str:
        await asyncio.sleep(0)
        return "async " + request.input

    assert _invoke(lambda request: "sync " + request.input).answer == "sync hi"
    assert _invoke(async_agent).answer == "async hi"


def test_dict_replies_with_tool_calls_and_usage_are_accepted() -> None:
    reply = {
        "output": "done",
        "tool_calls": [{"name": "search", "args": {"q": "x"}, "result": [1]}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    response = _invoke(lambda request: reply)
    assert response.answer == "done"
    assert response.tool_calls[0].name == "search" and response.tool_calls[0].result == [1]
    assert response.usage.total_tokens == 15
    assert response.model_calls is None  # not said: not known, which is not zero
    assert _invoke(lambda request: {**reply, "model_calls": 2}).model_calls == 2


def test_recorded_tool_calls_and_tokens_are_merged_into_the_reply() -> None:
    def agent(request: AgentRequest) -> str:
        request.record_tool_call("lookup", {"id": 7}, "found")
        request.record_usage(prompt_tokens=3, completion_tokens=4)
        return "ok"

    response = _invoke(agent)
    assert [(c.name, c.args, c.result) for c in response.tool_calls] == [("lookup", {"id": 7}, "found")]
    assert response.usage.total_tokens == 7
    assert response.model_calls == 1  # each record_usage is one model call


def test_model_calls_recorded_and_returned_add_up() -> None:
    def agent(request: AgentRequest) -> dict:
        request.record_usage(prompt_tokens=3, completion_tokens=4)
        request.record_usage(prompt_tokens=30, completion_tokens=40, model_calls=2)
        return {"answer": "ok", "model_calls": 1}

    response = _invoke(agent)
    assert (response.model_calls, response.usage.total_tokens) == (4, 77)


@pytest.mark.parametrize(
    ("reply", "message"),
    [(42, "returned int"), ({"tool_calls": []}, "answer"), (None, "returned NoneType")],
)
def test_garbage_replies_are_the_agents_error(reply: object, message: str) -> None:
    with pytest.raises(AgentOutputError, match=message):
        _invoke(lambda request: reply)


def test_an_agent_that_hangs_times_out() -> None:
    async def hangs(request: AgentRequest) -> str:
        await asyncio.sleep(30)
        return "never"

    with pytest.raises(AgentTimeoutError, match="within 0.2 s"):
        _invoke(hangs, timeout_s=0.2)
