"""An MCP server as a runner: started (stdio) or reached (SSE, streamable HTTP) once per run
through the official `mcp` SDK, its tools offered to the model with the server's own schemas,
each call answered by the server, the server stopped when the run ends.

The SDK's transports and `ClientSession` are anyio contexts that must be entered and left in
one task, so each server is held by a task of its own (`_hold`) for the run's whole life;
cases call it from their own tasks. Leaving the stdio transport closes the server's stdin,
then ends its whole process group (SIGTERM, then SIGKILL): the SDK does this shielded from
cancellation, so a run stopped by Ctrl-C or SIGTERM stops its servers too.

What the model receives for a call is what HoloDeck's OpenAI Agents backend gives it
(`agents.mcp.util.MCPUtil.invoke_mcp_tool`): the result's content items (text as text, other
items as their JSON), one item alone or a list; a result the server marks `isError` is still a
result. An MCP error answered by the server is given to the model as the SDK's failure text.
A server that is gone (it exited, the connection closed) fails the call's case, with the
server's last stderr lines; other cases go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from proctor.agents.tools.mcp_settings import McpSettings, mcp_settings
from proctor.agents.tools.runner import ToolCallError, ToolContext, ToolOpenError
from proctor.judges.credentials import redact

if TYPE_CHECKING:
    from proctor.agents.protocol import AgentRequest

log = logging.getLogger("proctor.agents.tools.mcp")

STDERR_TAIL_CHARS = 600


def mcp_runner(entry: Mapping[str, Any], context: ToolContext) -> McpRunner:
    """The registry's factory for `type: mcp`."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise ValueError(
            "MCP tools need the mcp package: pip install 'proctor[mcp]' (the official MCP Python SDK)"
        ) from None
    return McpRunner(mcp_settings(entry, context.base_dir, context.warn))


class McpRunner:
    """One MCP server for one run (see the module docstring)."""

    def __init__(self, settings: McpSettings) -> None:
        self.settings = settings
        self._session: Any = None
        self._tools: list[Any] = []
        self._ready: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()
        self._holder: asyncio.Task[None] | None = None
        self._gone: str | None = None  # why the server cannot answer any more
        self._secrets: list[str] = []
        self._stderr: Any = None
        self._refusals: list[str] = []  # the HTTP errors the server answered, in order

    # -- life ------------------------------------------------------------------------------
    async def open(self) -> None:
        if self.settings.skipped:
            return
        self._ready = asyncio.get_running_loop().create_future()
        self._holder = asyncio.create_task(self._hold(), name=f"mcp server {self.settings.name}")
        try:
            await self._ready
        except asyncio.CancelledError:
            await self.aclose()
            raise

    async def _hold(self) -> None:
        from mcp import ClientSession

        assert self._ready is not None
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                limit = float(self.settings.entry.request_timeout)
                session = ClientSession(read, write, read_timeout_seconds=limit)
                await stack.enter_async_context(session)
                await session.initialize()
                self._tools = await self._list_tools(session)
                self._session = session
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as error:  # noqa: BLE001 - every way of failing becomes the reason
            reason = self._reason(error)
            if not self._ready.done():
                failed = ToolOpenError(f"MCP server {self.settings.name!r} did not start: {reason}")
                self._ready.set_exception(failed)
            elif not self._stop.is_set():
                self._gone = reason
                log.warning("MCP server %r stopped mid-run: %s", self.settings.name, reason)
            if isinstance(error, asyncio.CancelledError):
                raise
        finally:
            self._session = None
            if self._gone is None and self._ready.done() and not self._stop.is_set():
                self._gone = "its connection ended"

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        entry = self.settings.entry
        if entry.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            command = shutil.which(entry.command or "")
            if command is None:
                raise ToolOpenError(f"command {entry.command!r} not found on PATH")
            env, self._secrets = self.settings.env()
            self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            parameters = StdioServerParameters(
                command=command,
                args=self.settings.args(),
                env=env,
                cwd=self.settings.base_dir,
                encoding=entry.encoding or "utf-8",
            )
            return stdio_client(parameters, errlog=self._stderr)
        import httpx2
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers, self._secrets = self.settings.headers()
        url = self.settings.url(self._secrets)

        def http_client(**options: Any) -> Any:
            """The SDK's HTTP client, noting each refused request's status (the SDK's own
            error for one does not say it)."""
            client = create_mcp_http_client(**options)
            client.event_hooks["response"].append(self._note_status)
            return client

        if entry.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(
                url,
                headers=headers or None,
                timeout=self.settings.timeout_s,
                sse_read_timeout=self.settings.sse_read_timeout_s,
                httpx_client_factory=http_client,
            )
        from mcp.client.streamable_http import streamable_http_client

        client = http_client(
            headers=headers or None,
            timeout=httpx2.Timeout(self.settings.timeout_s, read=self.settings.sse_read_timeout_s),
        )
        return _with_client(
            client,
            streamable_http_client(
                url,
                http_client=client,
                terminate_on_close=entry.terminate_on_close if entry.terminate_on_close is not None else True,
            ),
        )

    async def _list_tools(self, session: Any) -> list[Any]:
        tools, cursor = [], None
        while True:
            from mcp_types import PaginatedRequestParams

            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        allowed = self.settings.allowed_tools
        if allowed is None:
            return tools
        missing = sorted(allowed - {tool.name for tool in tools})
        if missing:
            log.warning(
                "MCP tool %r: config.allowed_tools names tools its server does not offer: %s",
                self.settings.name,
                ", ".join(missing),
            )
        return [tool for tool in tools if tool.name in allowed]

    async def _note_status(self, response: Any) -> None:
        if response.status_code >= 400:
            self._refusals.append(f"HTTP {response.status_code} {response.reason_phrase}".strip())

    async def aclose(self) -> None:
        self._stop.set()
        holder, self._holder = self._holder, None
        if holder is not None:
            with contextlib.suppress(BaseException):
                await holder
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    # -- use -------------------------------------------------------------------------------
    def schemas(self) -> list[dict[str, Any]]:
        return [_schema(tool) for tool in self._tools]

    async def call(self, name: str, args: dict[str, Any], request: AgentRequest) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        session = self._session
        if session is None:
            raise ToolCallError(self._gone_message(name))
        try:
            result = await session.call_tool(name, args)
        except MCPError as error:
            if error.code == CONNECTION_CLOSED or self._session is None:
                await asyncio.sleep(0.1)  # the server's last words reach its stderr file
                self._gone = self._gone or self._reason(ConnectionError("the server closed the connection"))
                raise ToolCallError(self._gone_message(name)) from None
            # what the OpenAI Agents SDK's default tool error function tells the model
            return f"An error occurred while running the tool. Please try again. Error: {error.error.message}"
        except Exception as error:  # the transport broke under the call
            await asyncio.sleep(0.1)
            self._gone = self._gone or self._reason(error)
            raise ToolCallError(self._gone_message(name)) from None
        return tool_output(result)

    def _gone_message(self, name: str) -> str:
        why = self._gone or "it has stopped"
        return f"MCP server {self.settings.name!r} could not answer {name!r}: {why}"

    def _reason(self, error: BaseException) -> str:
        """The error in words, with the end of the server's stderr; no variable's value."""
        text = "; ".join(dict.fromkeys(str(e) or type(e).__name__ for e in _leaves(error)))
        if self._refusals:
            text += f": the server answered {', '.join(dict.fromkeys(self._refusals))}"
        if not isinstance(error, ToolOpenError):
            text = f"{text} ({self.settings.describe()})"
        tail = self._stderr_tail()
        if tail:
            text += f"; its stderr ends: {tail}"
        return redact(text, *self._secrets)

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.flush()
            self._stderr.seek(0)
            return " ".join(self._stderr.read()[-STDERR_TAIL_CHARS:].split())
        return ""


def _leaves(error: BaseException) -> list[BaseException]:
    """The errors a task group's error is made of (anyio wraps each in groups, nested)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


@contextlib.asynccontextmanager
async def _with_client(client: Any, transport: Any) -> Any:
    """The streamable HTTP transport with its HTTP client closed after it."""
    async with client, transport as streams:
        yield streams


def _schema(tool: Any) -> dict[str, Any]:
    """The server's tool as the model is offered it: its own input schema (an object schema
    without `properties` gets an empty one, as the OpenAI Agents SDK adds)."""
    parameters = dict(tool.input_schema or {"type": "object"})
    parameters.setdefault("properties", {})
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description or "", "parameters": parameters},
    }


def tool_output(result: Any) -> Any:
    """What the model receives and the turn records: each content item (text as its text,
    anything else as its JSON), one alone or a list."""
    items: list[Any] = []
    for item in result.content:
        if item.type == "text":
            items.append(item.text)
        else:
            items.append(item.model_dump(mode="json", by_alias=True, exclude_none=True))
    return items[0] if len(items) == 1 else items
