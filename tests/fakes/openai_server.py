"""A fake OpenAI HTTP API on 127.0.0.1, for tests that drive the REAL `openai` client.

Point `openai.OpenAI(base_url=fake.base_url, api_key="test-key")` at it; nothing is mocked.
It runs in a daemon thread of the test process (`ThreadingHTTPServer`, random free port) and
serves:

* ``POST /v1/chat/completions``: each choice consumes one reply from the `script` queue, or,
  when it is empty, comes from `default` (a reply, or a callable ``(request_body) -> reply``).
  A reply is a string (the assistant content), a dict ``{"content": ..., "tool_calls":
  [{"name": ..., "arguments": {...}}]}``, or a `Fault`. ``n`` > 1 returns n choices. Usage is
  deterministic: prompt_tokens counts the words of the request messages, completion_tokens the
  words of the replies (content, tool names and JSON arguments).
* ``POST /v1/embeddings``: a deterministic 8-dim unit vector per input (sha256-based), or what
  `embed` (a callable ``(list of texts) -> list of vectors``, e.g. a real local model) gives, as
  floats or, as the client asks by default, base64 float32.

Errors use OpenAI's ``{"error": {"message", "type", "param", "code"}}`` shape; a 429 may carry
``retry-after`` (the client also reads ``retry-after-ms``, and honours ``x-should-retry``).
Streaming (``stream=True``) is NOT supported. Every request is recorded in `requests`.
What openai 3.x raises: ``status(429)`` RateLimitError (retried while max_retries lasts, after
retry-after), ``status(5xx)`` InternalServerError (also retried), ``hang`` beyond ``timeout=``
APITimeoutError, ``malformed()`` a bare ``json.JSONDecodeError`` (NOT an OpenAIError),
``text(...)`` with a 200 non-JSON content type returns the body as a ``str``.

    with FakeOpenAI(default="ok") as fake:
        fake.script("hello", Fault.status(429, retry_after=0.01))
        client = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.fakes.quota import ProviderQuota

Reply = Any  # str | dict | Fault | Callable[[dict], Reply]

CREATED = 1_700_000_000  # fixed `created` timestamp, so responses are reproducible
_ERROR_KINDS = {  # status -> (error.type, error.code), as the real API labels them
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
    503: ("server_error", "service_unavailable"),
}


@dataclass(frozen=True)
class Fault:
    """A scripted misbehaviour; build one with the class methods."""

    kind: str  # "status" | "hang" | "body" | "empty"
    code: int = 200
    message: str = ""
    retry_after: float | None = None
    seconds: float = 0.0
    then: Reply = ""
    body: str = ""
    content_type: str = "application/json"

    @classmethod
    def status(cls, code: int, message: str | None = None, retry_after: float | None = None) -> Fault:
        """An HTTP error with an OpenAI error body (and a ``retry-after`` header when given)."""
        return cls("status", code=code, message=message or f"fake error {code}", retry_after=retry_after)

    @classmethod
    def hang(cls, seconds: float, then: Reply = "") -> Fault:
        """Sleep `seconds` (cut short when the server stops), then answer `then` (None: next in queue)."""
        return cls("hang", seconds=seconds, then=then)

    @classmethod
    def malformed(cls) -> Fault:
        """HTTP 200, ``application/json``, but the body is truncated JSON."""
        return cls("body", body='{"id": "chatcmpl-broken", "choices": [')

    @classmethod
    def empty_choices(cls) -> Fault:
        """A valid completion whose ``choices`` is ``[]``."""
        return cls("empty")

    @classmethod
    def text(cls, body: str, code: int = 200, content_type: str = "text/plain") -> Fault:
        """A raw body, sent as is."""
        return cls("body", code=code, body=body, content_type=content_type)


def _words(value: Any) -> int:
    """Whitespace word count of a message content (str, list of parts, or anything JSON-able)."""
    if value is None:
        return 0
    if isinstance(value, list):
        return sum(_words(p.get("text") if isinstance(p, dict) else p) for p in value)
    return len((value if isinstance(value, str) else json.dumps(value)).split())


def unit_vector(text: str, dims: int = 8) -> list[float]:
    """The deterministic embedding the fake returns for `text`."""
    raw = [b - 127.5 for b in hashlib.sha256(text.encode()).digest()[:dims]]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


class FakeOpenAI:
    """The fake server; a context manager (`start`/`stop` also work). Thread-safe."""

    def __init__(
        self, default: Reply = "", speaks: str = "any", embed: Any = None, quota: ProviderQuota | None = None
    ) -> None:
        """`speaks` makes the server answer only one provider's real chat path, as that host
        does (anything else is its 404, a missing key its 401): "azure" serves
        `/openai/deployments/<name>/chat/completions?api-version=...` with an `api-key` header;
        "ollama" serves `/v1/chat/completions` only (it checks no key); "any" (the default)
        serves every path ending in `/chat/completions`. `embed` answers `/embeddings` (see
        the module's docstring). `quota` enforces a provider's RPM/TPM as providers do
        (tests/fakes/quota.py)."""
        assert speaks in ("any", "azure", "ollama"), speaks
        self.default = default
        self.speaks = speaks
        self.embed = embed
        self.quota = quota
        self.in_flight = 0
        self.peak_in_flight = 0  # chat requests being served at once (admitted ones), at most
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._requests: list[dict[str, Any]] = []
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0
        self._usage: list[dict[str, int]] = []

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the client expects
            disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms stalls

            def do_POST(self) -> None:
                fake._handle(self)

            do_GET = do_DELETE = do_POST  # unknown routes get an OpenAI-shaped 404

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

        self._stopping.clear()
        Server = type("Server", (ThreadingHTTPServer,), {"request_queue_size": 128})  # bursts of clients
        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._stopping.set()  # wakes hanging handlers
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join(timeout=5)
            self._server = self._thread = None

    __enter__ = start

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "FakeOpenAI is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # -- scripting and inspection ----------------------------------------------------------------
    def script(self, *replies: Reply) -> FakeOpenAI:
        """Queue replies; each chat choice consumes one, in order."""
        with self._lock:
            self._queue.extend(replies)
        return self

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Snapshot of ``{"path", "headers" (lower-cased names), "body" (parsed JSON)}`` per request."""
        with self._lock:
            return list(self._requests)

    @property
    def usage_sent(self) -> list[dict[str, int]]:
        """The `usage` of every completion answered (HTTP 200), in order: what a client was charged."""
        with self._lock:
            return list(self._usage)

    @property
    def completions(self) -> list[dict[str, Any]]:
        """The recorded chat-completion requests only."""
        return [r for r in self.requests if r["path"].split("?")[0].endswith("/chat/completions")]

    @property
    def pending(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Forget recorded requests and queued replies (`default` is kept)."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._usage.clear()

    # -- serving ---------------------------------------------------------------------------------
    def _next_reply(self, body: dict[str, Any], reply: Reply = None) -> Reply:
        if reply is None:
            with self._lock:
                reply = self._queue.popleft() if self._queue else self.default
        while callable(reply):
            reply = reply(body)
        return reply

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        raw = h.rfile.read(int(h.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode(errors="replace")}
        with self._lock:
            self._requests.append(
                {"path": h.path, "headers": {k.lower(): v for k, v in h.headers.items()}, "body": body}
            )
            self._counter += 1
            serial = self._counter
        path = h.path.split("?")[0]
        try:
            refusal = self._refusal(h)
            if refusal is not None:
                self._send_fault(h, refusal)
            elif path.endswith("/chat/completions"):  # /v1/..., or Azure's /openai/deployments/<name>/...
                self._quota_then_chat(h, body, serial)
            elif path == "/_fake/stats":
                self._send(h, 200, self.stats())
            elif path == "/v1/embeddings":
                self._embeddings(h, body)
            else:
                self._send_fault(h, Fault.status(404, f"Unknown path {path}"))
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. timed out)
            pass

    def _refusal(self, h: BaseHTTPRequestHandler) -> Fault | None:
        """What a strict provider's host answers a request it does not serve."""
        path, _, query = h.path.partition("?")
        if self.speaks == "azure":
            if not re.fullmatch(r"/openai/deployments/[^/]+/chat/completions", path):
                return Fault.status(404, "Resource not found")
            if "api-version=" not in query:
                return Fault.status(404, "Resource not found (no api-version)")
            if not h.headers.get("api-key"):
                return Fault.status(401, "Access denied due to missing subscription key")
        if self.speaks == "ollama" and path != "/v1/chat/completions":
            return Fault.status(404, "404 page not found")
        return None

    def _quota_then_chat(self, h: BaseHTTPRequestHandler, body: dict[str, Any], serial: int) -> None:
        headers: dict[str, str] = {}
        if self.quota is not None:
            admitted, headers = self.quota.admit(body)
            if not admitted:
                fault = Fault.status(429, "Rate limit reached for requests (fake quota)")
                return self._send_fault(h, fault, headers)
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            self._chat(h, body, serial, headers)
        finally:
            with self._lock:
                self.in_flight -= 1

    def stats(self) -> dict[str, Any]:
        """Counts for a bench in another process (``GET /_fake/stats``)."""
        with self._lock:
            stats = {"requests": len(self._requests), "peak_in_flight": self.peak_in_flight}
        return {**stats, **(self.quota.stats() if self.quota is not None else {})}

    def _chat(
        self,
        h: BaseHTTPRequestHandler,
        body: dict[str, Any],
        serial: int,
        headers: dict[str, str] | None = None,
    ) -> None:
        model = body.get("model", "gpt-fake")
        replies = [self._next_reply(body) for _ in range(max(1, int(body.get("n") or 1)))]
        fault = next((r for r in replies if isinstance(r, Fault)), None)
        while fault is not None and fault.kind == "hang":
            if self._stopping.wait(fault.seconds):
                return
            replies[replies.index(fault)] = self._next_reply(body, fault.then)
            fault = next((r for r in replies if isinstance(r, Fault)), None)
        if fault is not None and fault.kind != "empty":
            return self._send_fault(h, fault)
        choices = [] if fault else [self._choice(i, r, serial) for i, r in enumerate(replies)]
        prompt = sum(_words(m.get("content")) for m in body.get("messages") or [])
        completion = sum(
            _words(c["message"]["content"])
            + sum(
                _words(t["function"]["name"]) + _words(t["function"]["arguments"])
                for t in c["message"].get("tool_calls") or []
            )
            for c in choices
        )
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        with self._lock:
            self._usage.append(usage)
        self._send(
            h,
            200,
            {
                "id": f"chatcmpl-fake-{serial}",
                "object": "chat.completion",
                "created": CREATED,
                "model": model,
                "choices": choices,
                "system_fingerprint": "fp_fake",
                "usage": usage,
            },
            headers=headers,
        )

    @staticmethod
    def _choice(index: int, reply: Reply, serial: int) -> dict[str, Any]:
        spec = reply if isinstance(reply, dict) else {"content": str(reply)}
        message: dict[str, Any] = {"role": "assistant", "content": spec.get("content"), "refusal": None}
        calls = [
            {
                "id": call.get("id") or f"call_{serial}_{index}_{k}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call.get("arguments"), str)
                    else json.dumps(call.get("arguments") or {}),
                },
            }
            for k, call in enumerate(spec.get("tool_calls") or [])
        ]
        if calls:
            message["tool_calls"] = calls
        return {
            "index": index,
            "message": message,
            "logprobs": None,
            "finish_reason": "tool_calls" if calls else spec.get("finish_reason", "stop"),
        }

    def _embeddings(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        inputs = body.get("input")
        inputs = (
            inputs if isinstance(inputs, list) and not all(isinstance(x, int) for x in inputs) else [inputs]
        )
        texts = [x if isinstance(x, str) else json.dumps(x) for x in inputs]
        vectors: list[Any] = self.embed(texts) if self.embed is not None else [unit_vector(t) for t in texts]
        if body.get("encoding_format") == "base64":
            vectors = [base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() for v in vectors]
        tokens = sum(_words(t) for t in texts)
        self._send(
            h,
            200,
            {
                "object": "list",
                "model": body.get("model", "gpt-fake"),
                "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _send_fault(
        self, h: BaseHTTPRequestHandler, fault: Fault, headers: dict[str, str] | None = None
    ) -> None:
        if fault.kind == "body":
            return self._send(h, fault.code, fault.body.encode(), fault.content_type)
        fallback = ("server_error" if fault.code >= 500 else "invalid_request_error", None)
        kind, code = _ERROR_KINDS.get(fault.code, fallback)
        headers = dict(headers or {})
        if fault.retry_after is not None:
            headers["retry-after"] = str(fault.retry_after)
        error = {"message": fault.message, "type": kind, "param": None, "code": code}
        self._send(h, fault.code, {"error": error}, headers=headers)

    @staticmethod
    def _send(
        h: BaseHTTPRequestHandler,
        status: int,
        payload: dict[str, Any] | bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("content-type", content_type)
        h.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(data)


def judged(score: float, reason: str = "ok") -> str:
    """A judge's reply: the JSON object Proctor's judged metrics ask for."""
    return json.dumps({"score": score, "reason": reason})


def prompt_of(body: dict[str, Any]) -> str:
    """The last user message of a chat request, to answer by what was asked."""
    return next((m["content"] for m in reversed(body["messages"]) if m["role"] == "user"), "")


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started `FakeOpenAI` (import this fixture into a conftest or test module to use it)."""
    with FakeOpenAI() as fake:
        yield fake


__all__ = ["FakeOpenAI", "Fault", "Reply", "fake_openai", "unit_vector"]
