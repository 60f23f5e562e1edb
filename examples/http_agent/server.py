"""A tiny order-status agent served over HTTP on 127.0.0.1:8765, to try `http:` agents.

python examples/http_agent/server.py &
proctor run examples/http_agent/orders.dataset.yaml
"""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ORDERS = {"42": "shipped", "7": "delayed"}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        found = re.search(r"\d+", body["message"])
        tools = []
        if found:
            status = ORDERS.get(found.group(), "unknown")
            tools.append({"name": "lookup_order", "args": {"order_id": found.group()}, "result": status})
            text = f"Order {found.group()} is {status}."
        else:
            text = "Which order number?"
        payload = json.dumps({"reply": {"text": text, "tools": tools}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", 8765), Handler).serve_forever()
