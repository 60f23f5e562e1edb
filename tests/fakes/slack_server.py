"""A fake Slack on 127.0.0.1, for tests that drive the REAL `slack_sdk` clients.

Point `WebClient(token=..., base_url=fake.api_url)` or `WebhookClient(fake.webhook_url)` at
it; nothing is mocked. It serves, in a daemon thread (`ThreadingHTTPServer`, free port):

* ``POST /api/chat.postMessage``: checks the bearer token (``invalid_auth`` otherwise, as
  Slack answers: HTTP 200 with ``ok: false``), checks the Block Kit limits Slack enforces
  (50 blocks, 3000 characters a section text, 150 a header, 10 fields of 2000), and answers
  ``{"ok": true, "channel", "ts", "message"}`` with increasing timestamps.
* ``POST /webhook/<id>``: an incoming webhook; answers ``ok`` as text, or ``invalid_payload``.

Faults are scripted per request: `fail(429, retry_after=0)` or `fail(503)` once, `times=n`, or
`after=k` requests served normally, and `down()` makes every request answer 503 until `up()`. Every request,
including failed ones, is recorded in `requests` with its path, headers and parsed body.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

CHANNEL_IDS = {"#agent-evals": "C0AGENTEVAL"}


@dataclass(frozen=True)
class SlackFault:
    status: int
    retry_after: float | None = None


def block_problems(blocks: list[dict[str, Any]]) -> list[str]:
    """What Slack would refuse in these blocks (the limits of its Block Kit reference)."""
    problems = []
    if len(blocks) > 50:
        problems.append(f"{len(blocks)} blocks, more than 50")
    for index, block in enumerate(blocks):
        kind = block.get("type")
        text = (block.get("text") or {}).get("text", "")
        if kind == "header" and (len(text) > 150 or block["text"].get("type") != "plain_text"):
            problems.append(f"block {index}: header must be plain_text of at most 150 characters")
        if kind == "section":
            if len(text) > 3000:
                problems.append(f"block {index}: section text longer than 3000 characters")
            fields = block.get("fields") or []
            if len(fields) > 10 or any(len(f.get("text", "")) > 2000 for f in fields):
                problems.append(f"block {index}: more than 10 fields or a field over 2000 characters")
            if not text and not fields:
                problems.append(f"block {index}: a section needs text or fields")
        if kind not in {"header", "section", "context", "divider", "actions", "image", "rich_text"}:
            problems.append(f"block {index}: unknown block type {kind!r}")
    return problems


class FakeSlack:
    def __init__(self, token: str = "xoxb-test-token") -> None:
        self.token = token
        self._faults: deque[SlackFault | None] = deque()
        self._down = False
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._serial = 0
        self._server: ThreadingHTTPServer | None = None

    # lifecycle -----------------------------------------------------------------------
    def start(self) -> FakeSlack:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                fake._handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeSlack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeSlack is not started"
        return self._server.server_address[1]

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    @property
    def webhook_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/webhook/T000/B000/secretpart"

    # scripting -------------------------------------------------------------------------
    def fail(
        self, status: int, *, retry_after: float | None = None, times: int = 1, after: int = 0
    ) -> FakeSlack:
        """The next `times` requests (after `after` served normally) answer `status`."""
        with self._lock:
            self._faults.extend([None] * after)
            self._faults.extend(SlackFault(status, retry_after) for _ in range(times))
        return self

    def down(self) -> None:
        self._down = True

    def up(self) -> None:
        self._down = False

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    def messages(self) -> list[dict[str, Any]]:
        """Bodies of the chat.postMessage requests Slack accepted, in order."""
        return [
            r["body"]
            for r in self.requests
            if r["path"].endswith("chat.postMessage") and r["status"] == 200 and r["ok"]
        ]

    # serving ---------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length).decode() if length else ""
        content_type = h.headers.get("content-type", "")
        if "json" in content_type:
            body: dict[str, Any] = json.loads(raw or "{}")
        else:
            body = {key: values[0] for key, values in parse_qs(raw).items()}
            for key in ("blocks", "attachments"):
                if isinstance(body.get(key), str):
                    body[key] = json.loads(body[key])
        record: dict[str, Any] = {"path": h.path, "headers": dict(h.headers), "body": body}
        with self._lock:
            self._requests.append(record)
            fault = SlackFault(503) if self._down else (self._faults.popleft() if self._faults else None)
        if fault is not None:
            record.update(status=fault.status, ok=False)
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            error = "ratelimited" if fault.status == 429 else "service_unavailable"
            return self._send(h, fault.status, {"ok": False, "error": error}, headers)
        if h.path.startswith("/webhook/"):
            problems = block_problems(body.get("blocks") or [])
            ok = bool(body.get("text") or body.get("blocks")) and not problems
            record.update(status=200 if ok else 400, ok=ok)
            return self._send_text(h, 200 if ok else 400, "ok" if ok else "invalid_payload")
        if not h.path.startswith("/api/"):
            record.update(status=404, ok=False)
            return self._send_text(h, 404, "not found")
        method = h.path.removeprefix("/api/").split("?")[0]
        answer = self._api(method, h.headers.get("authorization", ""), body)
        record.update(status=200, ok=answer["ok"])
        self._send(h, 200, answer)

    def _api(self, method: str, authorization: str, body: dict[str, Any]) -> dict[str, Any]:
        if authorization != f"Bearer {self.token}":
            return {"ok": False, "error": "invalid_auth" if authorization else "not_authed"}
        if method != "chat.postMessage":
            return {"ok": False, "error": "unknown_method"}
        if not body.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        if not body.get("text") and not body.get("blocks"):
            return {"ok": False, "error": "no_text"}
        problems = block_problems(body.get("blocks") or [])
        if problems:
            return {"ok": False, "error": "invalid_blocks", "errors": problems}
        with self._lock:
            self._serial += 1
            ts = f"1700000000.{self._serial:06d}"
        channel = CHANNEL_IDS.get(body["channel"], body["channel"])
        message = {"type": "message", "text": body.get("text", ""), "ts": ts, "blocks": body.get("blocks")}
        if body.get("thread_ts"):
            message["thread_ts"] = body["thread_ts"]
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    @staticmethod
    def _send(
        h: BaseHTTPRequestHandler, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json; charset=utf-8")
        h.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def _send_text(h: BaseHTTPRequestHandler, status: int, text: str) -> None:
        data = text.encode()
        h.send_response(status)
        h.send_header("content-type", "text/plain")
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)
