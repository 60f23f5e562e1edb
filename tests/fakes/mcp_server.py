"""A real MCP server, written with the official `mcp` SDK, for tests of MCP tools.

    python tests/fakes/mcp_server.py stdio
    python tests/fakes/mcp_server.py http PORT [--token TOKEN]    # streamable HTTP at /mcp
    python tests/fakes/mcp_server.py sse PORT [--token TOKEN]     # SSE at /sse

Its tools answer from data only this process has (an order table, its own pid), so a test can
tell a result that came from the server from one made up anywhere else. With `--token`, an
HTTP request without `Authorization: Bearer TOKEN` is refused with 401. At start it adds its
pid to `$MCP_TEST_PIDFILE` when that is set, so a test can count its starts and check that
the process is gone.
"""

from __future__ import annotations

import json
import os
import sys

from mcp.server.mcpserver import MCPServer

ORDERS = {
    "A-100": {"status": "shipped", "carrier": "DHL", "total": 42.5},
    "B-200": {"status": "pending", "carrier": None, "total": 7.0},
}

server = MCPServer("proctor-test-orders")


@server.tool(description="Look an order up by its id.")
def lookup_order(order_id: str) -> str:
    order = ORDERS.get(order_id)
    return json.dumps({"order_id": order_id, **order}) if order else f"no order {order_id}"


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="The server's process id and the GREETING it was started with.")
def whoami() -> str:
    return json.dumps({"pid": os.getpid(), "greeting": os.environ.get("GREETING"), "cwd": os.getcwd()})


@server.tool(description="The MCP_CONFIG the server was started with.")
def show_config() -> str:
    return os.environ.get("MCP_CONFIG", "")


@server.tool(description="A tool that fails as a tool (an isError result).")
def refuse(reason: str) -> str:
    raise ValueError(f"refused: {reason}")


@server.tool(description="End the server process at once.")
def crash() -> str:
    print("crash: the test server exits now", file=sys.stderr, flush=True)
    os._exit(3)


def _guarded(app, token: str | None):
    """The ASGI app, refusing HTTP requests without the bearer token."""
    if token is None:
        return app

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


def main(argv: list[str]) -> None:
    if os.environ.get("MCP_TEST_PIDFILE"):
        with open(os.environ["MCP_TEST_PIDFILE"], "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
    transport = argv[0] if argv else "stdio"
    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    port = int(argv[1])
    token = argv[argv.index("--token") + 1] if "--token" in argv else None
    app = server.streamable_http_app() if transport == "http" else server.sse_app()
    uvicorn.run(_guarded(app, token), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
