"""Agents defined in configuration: an OpenAI tool-calling loop and an HTTP endpoint, each
against a real local server."""

from __future__ import annotations

import asyncio
import json
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from proctor.agents import AgentInvoker, AgentLoadError, AgentRequest, load_target
from tests.fakes import FakeOpenAI


def _request(text: str, **metadata) -> AgentRequest:
    return AgentRequest(case_id="c1", turn_id="t1", input=text, thread_id="thread-9", metadata=metadata)


def _invoke(target: str, request: AgentRequest):
    invoker = AgentInvoker(load_target(target), max_threads=2, timeout_s=10)
    try:
        return asyncio.run(invoker.invoke(request))
    finally:
        invoker.close()


@pytest.fixture
def weather_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, FakeOpenAI]]:
    with FakeOpenAI(default="fallback") as api:
        monkeypatch.setenv("AGENT_MODEL_KEY", "sk-agent")
        (tmp_path / "instructions.md").write_text("You are a weather assistant. Always use tools.")
        (tmp_path / "tools.py").write_text(
            "def get_weather(city):\n    return {'city': city, 'temp_c': 17}\n"
        )
        (tmp_path / "agent.yaml").write_text(
            textwrap.dedent(f"""
            name: weather
            model: {{provider: openai, name: agent-model, endpoint: "{api.base_url}", api_key: "${{AGENT_MODEL_KEY}}", temperature: 0}}
            instructions: {{file: instructions.md}}
            tools:
              - name: get_weather
                description: Current weather for a city
                parameters: {{type: object, properties: {{city: {{type: string}}}}, required: [city]}}
                function: tools.py:get_weather
              - name: get_alerts
                description: Weather alerts
            test_cases: [{{input: hi}}]
        """)
        )
        yield tmp_path, api


def test_the_tool_loop_runs_tools_and_records_them(weather_agent) -> None:
    folder, api = weather_agent
    api.script(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        {"tool_calls": [{"name": "get_alerts", "arguments": {"region": "IDF"}}]},
        "Paris is 17°C with a storm warning.",
    )
    response = _invoke(
        f"openai:{folder / 'agent.yaml'}",
        _request("Weather in Paris?", tool_results={"get_alerts": ["storm"]}),
    )
    assert response.answer == "Paris is 17°C with a storm warning."
    assert [(c.name, c.args, c.result) for c in response.tool_calls] == [
        ("get_weather", {"city": "Paris"}, {"city": "Paris", "temp_c": 17}),
        ("get_alerts", {"region": "IDF"}, ["storm"]),  # canned, from the case
    ]
    assert response.usage.total_tokens > 0
    assert response.model_calls == 3  # one per completion: what ADK's inference_call_count_v1 counts
    first, second, third = (r["body"] for r in api.completions)
    assert first["messages"][0] == {
        "role": "system",
        "content": "You are a weather assistant. Always use tools.",
    }
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather", "get_alerts"]
    assert first["model"] == "agent-model" and first["temperature"] == 0
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and json.loads(tool_message["content"]) == {
        "city": "Paris",
        "temp_c": 17,
    }
    assert len(third["messages"]) == 6
    assert api.completions[0]["headers"]["authorization"] == "Bearer sk-agent"
    # what ADK's judges show of an agent (its app details), as ADK records them for an agent named so
    details = response.metadata["adk_app_details"]["weather"]
    assert details["instructions"] == "You are a weather assistant. Always use tools."
    [tool] = details["tool_declarations"]
    assert tool["function_declarations"][1] == {
        "description": "Weather alerts",
        "name": "get_alerts",
        "parameters_json_schema": {"type": "object", "properties": {}},
    }


def test_a_tool_without_implementation_or_result_fails_the_turn_keeping_earlier_calls(weather_agent) -> None:
    folder, api = weather_agent
    api.script(
        {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]},
        {"tool_calls": [{"name": "get_alerts", "arguments": {}}]},
    )
    request = _request("Weather in Oslo?")
    with pytest.raises(Exception, match="'get_alerts', which has no implementation and no canned result"):
        _invoke(f"openai:{folder / 'agent.yaml'}", request)
    assert [c.name for c in request.recorded_tool_calls] == ["get_weather"]


def test_a_missing_agent_config_is_named(tmp_path: Path) -> None:
    with pytest.raises(AgentLoadError, match="config file .*nope.yaml not found"):
        load_target(f"openai:{tmp_path / 'nope.yaml'}")
    (tmp_path / "bad.yaml").write_text("instructions: hi\n")
    with pytest.raises(AgentLoadError, match="model: Field required"):
        load_target(f"openai:{tmp_path / 'bad.yaml'}")


class _AgentService:
    """A small HTTP agent on 127.0.0.1: answers by the message, misbehaves on request."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict, dict]] = []
        self.paths: list[str] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                service.seen.append((body, {k.lower(): v for k, v in self.headers.items()}))
                service.paths.append(self.path)
                message = body["message"]
                if message == "slow":
                    time.sleep(1.5)
                if message == "crash":
                    status, payload = 500, b'{"error": "boom"}'
                elif message == "html":
                    status, payload = 200, b"<html>oops</html>"
                else:
                    status, payload = (
                        200,
                        json.dumps(
                            {
                                "output": {
                                    "text": f"echo: {message}",
                                    "tools": [{"name": "search", "args": {"q": message}}],
                                },
                                "usage": {"prompt_tokens": 7, "completion_tokens": 3},
                            }
                        ).encode(),
                    )
                self.send_response(status)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/chat"


@pytest.fixture
def http_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, _AgentService]]:
    service = _AgentService()
    monkeypatch.setenv("AGENT_TOKEN", "tok-123")
    (tmp_path / "endpoint.yaml").write_text(
        textwrap.dedent(f"""
        url: {service.url}
        headers: {{Authorization: "Bearer ${{AGENT_TOKEN}}"}}
        request: {{message: "{{{{ input }}}}", session: "{{{{ thread_id }}}}", history: "{{{{ history }}}}"}}
        response: {{answer: output.text, tool_calls: output.tools, usage: usage}}
        timeout_s: 5
    """)
    )
    yield f"http:{tmp_path / 'endpoint.yaml'}", service
    service.server.shutdown()
    service.server.server_close()


def test_an_http_agent_is_posted_each_turn(http_agent) -> None:
    target, service = http_agent
    response = _invoke(target, _request("where is my order?"))
    assert response.answer == "echo: where is my order?"
    assert [(c.name, c.args) for c in response.tool_calls] == [("search", {"q": "where is my order?"})]
    assert response.usage.total_tokens == 10
    assert response.model_calls is None  # the service's tokens, of how many model calls is not said
    body, headers = service.seen[0]
    assert body == {"message": "where is my order?", "session": "thread-9", "history": []}
    assert headers["authorization"] == "Bearer tok-123"


@pytest.mark.parametrize(("message", "error"), [("crash", "HTTP 500"), ("html", "not JSON")])
def test_a_failing_http_agent_raises_a_clear_error(http_agent, message: str, error: str) -> None:
    target, _ = http_agent
    with pytest.raises(Exception, match=error):
        _invoke(target, _request(message))


def test_an_http_agent_that_times_out_says_so(http_agent, tmp_path: Path) -> None:
    target, service = http_agent
    (tmp_path / "impatient.yaml").write_text(
        f"url: {service.url}\nrequest: {{message: '{{{{ input }}}}'}}\nresponse: {{answer: output.text}}\ntimeout_s: 0.3\n"
    )
    with pytest.raises(Exception, match=r"ReadTimeout: no answer within 0.3 s$"):
        _invoke(f"http:{tmp_path / 'impatient.yaml'}", _request("slow"))


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ("url: 127.0.0.1:8000/chat\n", r"url: .*expected an http:// or https:// URL with a host"),
        ("url: ftp://example.org/chat\n", r"expected an http:// or https:// URL"),
        ("url: 'http://[::1'\n", r"url: .*is not a URL"),
        (
            "url: http://127.0.0.1:9/chat\nrequest: {message: '{{ inptu }}'}\n",
            r"request.message: the template '\{\{ inptu \}\}' uses inptu; expected only input, thread_id",
        ),
        (
            "url: http://127.0.0.1:9/chat\nrequest: {session: {id: ['{{ thread_id }']}}\n",
            r"request.session.id\[0\]: the template .* does not parse",
        ),
        (
            "url: http://127.0.0.1:9/chat\nheaders: {Authorization: 'Bearer ${PROCTOR_UNSET_TOKEN}'}\n",
            r"header 'Authorization' names PROCTOR_UNSET_TOKEN, not set in the environment",
        ),
        (
            "url: 'http://127.0.0.1:9/chat?key=${PROCTOR_UNSET_TOKEN}'\n",
            r"url: .*names PROCTOR_UNSET_TOKEN, not set in the environment",
        ),
    ],
)
def test_an_http_agent_config_that_could_never_work_is_refused_when_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str, error: str
) -> None:
    """Found by `validate` and before `run` starts, not by every case failing after it did."""
    monkeypatch.delenv("PROCTOR_UNSET_TOKEN", raising=False)
    (tmp_path / "endpoint.yaml").write_text(config)
    with pytest.raises(AgentLoadError, match=error):
        load_target(f"http:{tmp_path / 'endpoint.yaml'}")


def test_an_http_agents_url_takes_variables_from_the_environment_and_never_shows_them(
    http_agent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, service = http_agent
    monkeypatch.setenv("PROCTOR_TEST_URL_KEY", "k-secret-123")
    (tmp_path / "keyed.yaml").write_text(
        f"url: '{service.url}?key=${{PROCTOR_TEST_URL_KEY}}'\nrequest: {{message: '{{{{ input }}}}'}}\n"
        "response: {answer: output.text}\ntimeout_s: 5\n"
    )
    assert _invoke(f"http:{tmp_path / 'keyed.yaml'}", _request("hello")).answer == "echo: hello"
    assert service.paths == ["/chat?key=k-secret-123"]
    with pytest.raises(Exception) as failed:
        _invoke(f"http:{tmp_path / 'keyed.yaml'}", _request("crash"))
    assert "HTTP 500" in str(failed.value) and "k-secret-123" not in str(failed.value)
