"""A reverse proxy in front of a Prefect API that holds back one answer.

A loaded Prefect server can commit a state change and answer it only after the client's
request timeout; the client then retries the same transition, and the server rejects the
duplicate and returns the state it already has, without the in-process result. This proxy
makes that happen on purpose: it forwards every request, and holds the answer to the first
request that matches `hold_when` for `hold_seconds` after the server has committed it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


class HeldApi:
    def __init__(self, upstream: str, hold_when: Callable[[str, bytes], bool], hold_seconds: float) -> None:
        self.upstream = upstream.rstrip("/")
        self.hold_when = hold_when
        self.hold_seconds = hold_seconds
        self.held: list[str] = []  # the paths whose answers were held
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        prefix = httpx.URL(self.upstream).path
        return f"http://{host}:{port}{prefix}"

    def _should_hold(self, path: str, body: bytes) -> bool:
        with self._lock:
            if self.held or not self.hold_when(path, body):
                return False
            self.held.append(path)
            return True

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self
        origin = httpx.URL(self.upstream)
        client = httpx.Client(timeout=120)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP | {"host"}}
                target = f"{origin.scheme}://{origin.host}:{origin.port}{self.path}"
                answer = client.request(self.command, target, content=body, headers=headers)
                if proxy._should_hold(self.path, body):
                    time.sleep(proxy.hold_seconds)  # committed upstream; the client has given up
                content = answer.content
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in HOP_BY_HOP:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(content)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _forward

        return Handler

    def __enter__(self) -> HeldApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
