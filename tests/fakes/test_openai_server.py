"""The fake OpenAI server, driven by the real `openai` clients (sync and async): nothing is mocked."""

from __future__ import annotations

import asyncio
import functools
import json
import math
import threading
import time
from collections.abc import Iterator

import openai
import pytest

from tests.fakes.openai_server import FakeOpenAI, Fault, unit_vector

USER = [{"role": "user", "content": "What is the weather in Paris?"}]  # 6 words


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def fake(server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    server.reset()
    server.default = "default reply"
    yield server
    server.reset()


@functools.cache
def _client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)


def client(fake: FakeOpenAI, **options: object) -> openai.OpenAI:
    """A real client (max_retries=0 unless given); `with_options` shares one connection pool."""
    return _client(fake.base_url).with_options(**options)


def test_scripted_text_reply_and_usage(fake: FakeOpenAI) -> None:
    fake.script("It is sunny today")
    done = client(fake).chat.completions.create(model="gpt-4o-mini", messages=USER)
    assert fake.base_url.endswith("/v1")
    assert done.object == "chat.completion" and done.id.startswith("chatcmpl-")
    assert done.model == "gpt-4o-mini" and isinstance(done.created, int)
    [choice] = done.choices
    assert choice.message.role == "assistant" and choice.message.content == "It is sunny today"
    assert choice.message.tool_calls is None and choice.finish_reason == "stop"
    assert (done.usage.prompt_tokens, done.usage.completion_tokens, done.usage.total_tokens) == (6, 4, 10)
    again = client(fake).chat.completions.create(model="m", messages=USER)  # queue empty: default
    assert again.choices[0].message.content == "default reply"


def test_tool_calls_come_back_parsed(fake: FakeOpenAI) -> None:
    fake.script(
        {
            "content": None,
            "tool_calls": [
                {"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}},
                {"name": "get_time", "arguments": {}},
            ],
        }
    )
    done = client(fake).chat.completions.create(
        model="m",
        messages=USER,
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
    )
    choice = done.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    first, second = choice.message.tool_calls
    assert first.type == "function" and first.function.name == "get_weather"
    assert json.loads(first.function.arguments) == {"city": "Paris", "unit": "C"}
    assert second.function.name == "get_time" and json.loads(second.function.arguments) == {}
    assert first.id != second.id and first.id.startswith("call_")
    assert fake.requests[-1]["body"]["tools"][0]["function"]["name"] == "get_weather"


def test_requests_are_recorded_with_model_messages_and_headers(fake: FakeOpenAI) -> None:
    client(fake).chat.completions.create(
        model="judge-model", messages=USER, temperature=0, response_format={"type": "json_object"}
    )
    [req] = fake.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["model"] == "judge-model" and req["body"]["messages"] == USER
    assert req["body"]["response_format"] == {"type": "json_object"} and req["body"]["temperature"] == 0
    assert req["headers"]["authorization"] == "Bearer test-key"
    assert req["headers"]["content-type"] == "application/json"
    fake.script("queued")
    fake.reset()
    assert fake.requests == [] and fake.pending == 0


def test_default_callable_answers_from_the_prompt(fake: FakeOpenAI) -> None:
    fake.default = lambda body: "echo: " + body["messages"][-1]["content"]
    done = client(fake).chat.completions.create(model="m", messages=[{"role": "user", "content": "ping"}])
    assert done.choices[0].message.content == "echo: ping"


def test_429_then_success_is_retried(fake: FakeOpenAI) -> None:
    fake.script(Fault.status(429, retry_after=0.01), Fault.status(429, retry_after=0.01), "finally")
    done = client(fake, max_retries=2).chat.completions.create(model="m", messages=USER)
    assert done.choices[0].message.content == "finally"
    assert [r["headers"]["x-stainless-retry-count"] for r in fake.requests] == ["0", "1", "2"]


def test_429_error_body_and_retry_after_header(fake: FakeOpenAI) -> None:
    fake.script(Fault.status(429, "slow down", retry_after=0.5))
    with pytest.raises(openai.RateLimitError) as caught:
        client(fake).chat.completions.create(model="m", messages=USER)
    err = caught.value
    assert err.status_code == 429 and err.response.headers["retry-after"] == "0.5"
    assert err.body == {
        "message": "slow down",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert err.code == "rate_limit_exceeded" and err.type == "requests"


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_surface_without_retries(fake: FakeOpenAI, status: int) -> None:
    fake.script(Fault.status(status))
    with pytest.raises(openai.InternalServerError) as caught:
        client(fake).chat.completions.create(model="m", messages=USER)
    assert caught.value.status_code == status and caught.value.type == "server_error"
    assert len(fake.requests) == 1


def test_hang_beyond_client_timeout_raises_timeout(fake: FakeOpenAI) -> None:
    fake.script(Fault.hang(5))
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        client(fake, timeout=0.2).chat.completions.create(model="m", messages=USER)
    assert time.monotonic() - started < 2
    fake.script(Fault.hang(0.05, then="late but fine"))  # a short hang still answers
    done = client(fake, timeout=2).chat.completions.create(model="m", messages=USER)
    assert done.choices[0].message.content == "late but fine"


def test_malformed_json_raises_a_json_decode_error(fake: FakeOpenAI) -> None:
    """openai 3.x does not wrap it: the stdlib JSONDecodeError (a ValueError) escapes the client."""
    fake.script(Fault.malformed())
    with pytest.raises(json.JSONDecodeError) as caught:
        client(fake).chat.completions.create(model="m", messages=USER)
    assert not isinstance(caught.value, openai.OpenAIError)


def test_raw_text_body(fake: FakeOpenAI) -> None:
    """A 200 non-JSON body comes back as a plain `str`; a 502 HTML page as InternalServerError."""
    fake.script(Fault.text("not json at all"), Fault.text("<html>bad gateway</html>", 502, "text/html"))
    assert client(fake).chat.completions.create(model="m", messages=USER) == "not json at all"
    with pytest.raises(openai.InternalServerError):
        client(fake).chat.completions.create(model="m", messages=USER)


def test_empty_choices(fake: FakeOpenAI) -> None:
    fake.script(Fault.empty_choices())
    done = client(fake).chat.completions.create(model="m", messages=USER)
    assert done.choices == [] and done.model == "m" and done.usage.completion_tokens == 0


def test_n_returns_one_choice_per_scripted_reply(fake: FakeOpenAI) -> None:
    fake.script("first answer", "second", "left over")
    done = client(fake).chat.completions.create(model="m", messages=USER, n=2)
    assert [(c.index, c.message.content) for c in done.choices] == [(0, "first answer"), (1, "second")]
    assert done.usage.completion_tokens == 3 and fake.pending == 1


def test_embeddings_are_deterministic_unit_vectors(fake: FakeOpenAI) -> None:
    api = client(fake)
    as_base64 = api.embeddings.create(model="text-embedding-3-small", input=["alpha", "beta gamma"])
    as_float = api.embeddings.create(model="text-embedding-3-small", input="alpha", encoding_format="float")
    assert fake.requests[0]["body"]["encoding_format"] == "base64"  # the client's default
    assert [d.index for d in as_base64.data] == [0, 1] and as_base64.usage.prompt_tokens == 3
    alpha, beta = (d.embedding for d in as_base64.data)
    assert len(alpha) == 8 and math.isclose(sum(x * x for x in alpha), 1.0, rel_tol=1e-5)
    assert alpha != beta and as_float.data[0].embedding == pytest.approx(alpha, rel=1e-6)
    assert as_float.data[0].embedding == unit_vector("alpha")


def test_concurrent_requests_are_all_recorded(fake: FakeOpenAI) -> None:
    fake.default = lambda body: body["messages"][0]["content"].upper()
    api, answers = client(fake), {}

    def ask(i: int) -> None:
        msg = [{"role": "user", "content": f"q{i}"}]
        answers[i] = api.chat.completions.create(model="m", messages=msg).choices[0].message.content

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == {i: f"Q{i}" for i in range(8)} and len(fake.requests) == 8


def test_async_client(fake: FakeOpenAI) -> None:
    fake.script(
        "async hello",
        {"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]},
        Fault.status(429, retry_after=0.01),
        "after retry",
        Fault.hang(5),
    )

    async def main() -> None:
        api = openai.AsyncOpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
        done = await api.chat.completions.create(model="m", messages=USER)
        assert done.choices[0].message.content == "async hello"
        done = await api.chat.completions.create(model="m", messages=USER)
        assert json.loads(done.choices[0].message.tool_calls[0].function.arguments) == {"q": "x"}
        done = await api.with_options(max_retries=1).chat.completions.create(model="m", messages=USER)
        assert done.choices[0].message.content == "after retry"
        with pytest.raises(openai.APITimeoutError):
            await api.with_options(timeout=0.2).chat.completions.create(model="m", messages=USER)
        embedded = await api.embeddings.create(model="e", input="alpha")
        assert embedded.data[0].embedding == pytest.approx(unit_vector("alpha"), rel=1e-6)
        await api.close()

    asyncio.run(main())
    assert fake.requests[0]["headers"]["x-stainless-async"].startswith("async")
    assert len(fake.requests) == 6


def test_unknown_path_is_an_openai_404() -> None:
    with FakeOpenAI() as fake, pytest.raises(openai.NotFoundError):
        client(fake).models.list()
    with pytest.raises(AssertionError):
        _ = fake.base_url  # stopped
