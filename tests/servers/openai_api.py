"""A local OpenAI-compatible Chat Completions server for tests, on 127.0.0.1.

The real `openai` client is pointed at it with `base_url`; nothing is mocked. Replies are
scripted in order (`script`), or computed from the request (`default`); faults (429 with
`retry-after`, 5xx, hangs, bodies that are not JSON, empty choices) are replies too.
Streaming is not implemented: Proctor never streams judge or agent calls.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Any  # str | dict (content, tool_calls) | Fault | Callable[[dict], Reply]


@dataclass(frozen=True)
class Fault:
    """A scripted failure: an HTTP status, a hang, or a broken body."""

    status: int = 200
    retry_after: float | None = None
    hang_s: float = 0.0
    body: str | None = None

    @classmethod
    def http(cls, status: int, retry_after: float | None = None) -> Fault:
        return cls(status=status, retry_after=retry_after)

    @classmethod
    def hang(cls, seconds: float) -> Fault:
        return cls(hang_s=seconds)

    @classmethod
    def malformed(cls) -> Fault:
        return cls(body='{"id": "chatcmpl-broken", "choices": [')

    @classmethod
    def empty_choices(cls) -> Fault:
        return cls(
            body=json.dumps(
                {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}
            )
        )


def _words(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "").split()) for m in messages)


@dataclass
class FakeOpenAI:
    """Start with `with FakeOpenAI() as api:`; point clients at `api.base_url`."""

    default: Reply = "{}"
    requests: list[dict[str, Any]] = field(default_factory=list)
    _queue: list[Reply] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *replies: Reply) -> FakeOpenAI:
        with self._lock:
            self._queue.extend(replies)
        return self

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            reply = self._queue.pop(0) if self._queue else self.default
        return reply(body) if callable(reply) and not isinstance(reply, Fault) else reply

    @property
    def completions(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def __enter__(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                if self.path.endswith("/embeddings"):
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    data = [
                        {"object": "embedding", "index": i, "embedding": _vector(t)}
                        for i, t in enumerate(inputs)
                    ]
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": data,
                            "model": body.get("model"),
                            "usage": {"prompt_tokens": 1, "total_tokens": 1},
                        },
                    )
                    return
                choices = []
                for index in range(int(body.get("n") or 1)):
                    reply = fake._next(body)
                    if isinstance(reply, Fault):
                        self._fault(reply)
                        return
                    choices.append(_choice(index, reply))
                prompt = _words(body.get("messages", []))
                completion = sum(len(str(c["message"].get("content") or "").split()) for c in choices)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(fake.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "unknown"),
                        "choices": choices,
                        "usage": {
                            "prompt_tokens": prompt,
                            "completion_tokens": completion,
                            "total_tokens": prompt + completion,
                        },
                    },
                )

            def _fault(self, fault: Fault) -> None:
                if fault.hang_s:
                    time.sleep(fault.hang_s)
                if fault.body is not None:
                    self._send(fault.status, fault.body)
                elif fault.status != 200:
                    headers = {"retry-after": str(fault.retry_after)} if fault.retry_after is not None else {}
                    kind = "rate_limit_exceeded" if fault.status == 429 else "server_error"
                    self._send(
                        fault.status,
                        {"error": {"message": f"scripted {fault.status}", "type": kind, "code": kind}},
                        headers,
                    )
                else:
                    self._send(
                        200,
                        {
                            "id": "x",
                            "object": "chat.completion",
                            "created": 0,
                            "model": "m",
                            "choices": [_choice(0, "{}")],
                        },
                    )

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = payload if isinstance(payload, str) else json.dumps(payload)
                encoded = data.encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(encoded)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(encoded)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"


def _choice(index: int, reply: Any) -> dict[str, Any]:
    if isinstance(reply, dict):
        content = reply.get("content")
        content = json.dumps(content) if isinstance(content, dict) else content
        calls = [
            {
                "id": f"call_{index}_{i}",
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))},
            }
            for i, call in enumerate(reply.get("tool_calls") or [])
        ]
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        return {"index": index, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
    return {"index": index, "message": {"role": "assistant", "content": str(reply)}, "finish_reason": "stop"}


def _vector(text: str) -> list[float]:
    import hashlib
    import math

    digest = hashlib.sha256(text.encode()).digest()[:8]
    raw = [b - 127.5 for b in digest]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [v / norm for v in raw]


def judged(score: float, reason: str = "ok") -> str:
    """A judge's JSON reply with a score."""
    return json.dumps({"score": score, "reason": reason})


def prompt_of(body: dict[str, Any]) -> str:
    """The user message of a chat request, to answer by what was asked."""
    return next((m["content"] for m in reversed(body["messages"]) if m["role"] == "user"), "")


__all__ = ["Fault", "FakeOpenAI", "judged", "prompt_of", "Callable"]
