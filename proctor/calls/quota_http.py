"""The HTTP side of the quota budget: an httpx transport every model client of a run uses.

Sitting under the `openai` client, it sees every request the client sends, including the
client's own retries (`max_retries`), and every answer's status and headers, without touching
the client's objects. Per request it:

1. takes its turn from the endpoint's `QuotaBudget` (a wait that stops the caller's
   `timeout_ms` clock, see `call_clock`),
2. sends it and reads the whole answer (so the place in flight is held until the server is
   done, even if the caller gave up meanwhile: the request goes on in the background),
3. on a 429 tells the budget (which pauses for `Retry-After` and slows down) and sends the
   request again at its next turn, for as long as the budget's patience lasts; only then is
   the 429 handed to the client, marked `x-should-retry: false` (its own retries would only
   add more) and `x-proctor-quota-patience`, so the error says it was the provider's quota.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from typing import Any

try:  # the HTTP package the installed `openai` is built on (3.x: httpx2, httpx's successor)
    import httpx2 as httpx
except ImportError:  # pragma: no cover - older openai releases
    import httpx  # type: ignore[no-redef]

from proctor.calls.call_clock import calling
from proctor.calls.quota import QuotaBudget, budget_for

DEFAULT_ENDPOINT = "https://api.openai.com/v1"
PATIENCE_HEADER = "x-proctor-quota-patience"


def key_id(api_key: str | None) -> str:
    """Budgets are per key; the key itself is never kept, only a short hash."""
    return hashlib.sha256((api_key or "").encode()).hexdigest()[:12]


def _prompt_size(body: bytes) -> tuple[int, int | None]:
    """Characters of the request's messages, and its `max_tokens`, for the token estimate."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return len(body), None
    if not isinstance(data, dict):
        return len(body), None
    chars = len(json.dumps(data.get("messages") or data.get("input") or ""))
    cap = data.get("max_completion_tokens") or data.get("max_tokens")
    return chars, cap if isinstance(cap, int) and cap > 0 else None


def _usage(response: httpx.Response) -> tuple[int | None, int | None]:
    """(total, completion) tokens of an answer, when it says."""
    try:
        usage = response.json().get("usage") or {}
    except (ValueError, AttributeError, UnicodeDecodeError):
        return None, None
    total, completion = usage.get("total_tokens"), usage.get("completion_tokens")
    return (
        total if isinstance(total, int) else None,
        completion if isinstance(completion, int) else None,
    )


class QuotaTransport(httpx.AsyncBaseTransport):
    """Every request through the endpoint's budget; 429s waited out within its patience."""

    def __init__(self, endpoint: str | None, api_key: str | None) -> None:
        self.endpoint = (endpoint or DEFAULT_ENDPOINT).rstrip("/")
        self.key_id = key_id(api_key)
        self._inner = httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100)  # as openai's own
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        budget = budget_for(self.endpoint, self.key_id)
        body = await request.aread()
        chars, cap = _prompt_size(body)
        estimate = budget.estimate_tokens(chars, cap)
        patience_ends = time.monotonic() + budget.patience_s
        while True:
            response = await self._in_turn(budget, request, estimate)
            headers = {name.lower(): value for name, value in response.headers.items()}
            if response.status_code != 429:
                total, completion = _usage(response) if response.status_code < 400 else (None, None)
                budget.answered(headers, estimated=estimate, used=total)
                if completion is not None:
                    budget.learn_completion(completion)
                return response
            pause = budget.rate_limited(headers)
            if time.monotonic() + pause > patience_ends:
                response.headers["x-should-retry"] = "false"
                response.headers[PATIENCE_HEADER] = f"{budget.patience_s:g}"
                return response

    async def _in_turn(self, budget: QuotaBudget, request: httpx.Request, estimate: float) -> httpx.Response:
        """One round trip in a place of the budget, held until the answer is read in full."""
        await budget.acquire(estimate)
        task = asyncio.ensure_future(self._round_trip(request))
        try:
            response = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                budget.release()
            else:  # the caller gave up; the server has not: keep the place until it answers
                task.add_done_callback(lambda done: _released(budget, done))
            raise
        except BaseException:
            budget.release()
            raise
        budget.release()
        return response

    async def _round_trip(self, request: httpx.Request) -> httpx.Response:
        with calling():  # the caller's time limit runs, even while a sibling call waits its turn
            return await self._read(request)

    async def _read(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        try:
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                return response  # a stream is read by its caller (Proctor streams nothing)
            raw = b"".join([chunk async for chunk in response.aiter_raw()])
        finally:
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                await response.aclose()
        answer = httpx.Response(
            response.status_code,
            headers=response.headers,
            content=raw,
            request=request,
            extensions=response.extensions,
        )
        await answer.aread()
        return answer

    async def aclose(self) -> None:
        await self._inner.aclose()


def _released(budget: QuotaBudget, done: asyncio.Future[Any]) -> None:
    if not done.cancelled():
        done.exception()  # retrieved: nobody else will
    budget.release()


def http_client(
    endpoint: str | None, api_key: str | None, event_hooks: dict[str, list[Any]] | None = None
) -> httpx.AsyncClient:
    """The httpx client for an `openai.AsyncOpenAI(..., http_client=...)`: openai's defaults
    (timeouts, redirects) with every request through the endpoint's budget."""
    import openai

    hooks = {"event_hooks": event_hooks} if event_hooks else {}
    return openai.DefaultAsyncHttpxClient(transport=QuotaTransport(endpoint, api_key), **hooks)


def patience_of(error: Any) -> float | None:
    """The patience a 429 outlasted, when the error is one the budget gave up on."""
    response = getattr(error, "response", None)
    value = response.headers.get(PATIENCE_HEADER) if response is not None else None
    with contextlib.suppress(TypeError, ValueError):
        return float(value) if value is not None else None
    return None
