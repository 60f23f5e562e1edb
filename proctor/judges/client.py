"""Calling a judge model through the `openai` client, against any OpenAI-compatible endpoint.

One attempt per call: retries, backoff and timeouts are the metric runner's, so every metric
(judged or not) retries the same way and the retry count lands in its result. Failures are
typed so the runner can honour a server's `retry-after`, and a reply that cannot be used
keeps its raw text for the report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proctor.judges.credentials import redact

if TYPE_CHECKING:
    import openai


class JudgeError(RuntimeError):
    """A judge call failed; `retry_after` is the server's requested pause, if it sent one."""

    def __init__(self, message: str, *, retry_after: float | None = None, raw: str | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.raw = raw
        # A reply that came back unusable (no choices, say) is still paid for: its tokens,
        # kept so the metric's spending counts them (`Judge._complete`).
        self.reply: JudgeReply | None = None


class JudgeReplyError(JudgeError):
    """The judge answered, but not with something usable (no choices, bad JSON, out of range)."""


@dataclass(frozen=True)
class CallOptions:
    """What a judge call may set besides model, prompt and temperature, in the OpenAI chat API's
    terms: a system message, JSON mode, an output cap and further sampling parameters (`top_p`,
    `seed`, `stop`, `presence_penalty`, `frequency_penalty`). Google ADK's judges take them from
    a criterion's `judge_model_config` (see `proctor.judges.genai_config`)."""

    system: str | None = None
    json_mode: bool = False
    max_tokens: int | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeReply:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cached: bool = False


def cache_key(
    base_url: str | None, model: str, messages: list[dict[str, str]], params: dict[str, Any]
) -> str:
    """Identical calls (endpoint, model, prompt, parameters, sample number) share one key."""
    payload = json.dumps(
        {"base_url": base_url, "model": model, "messages": messages, "params": params}, sort_keys=True
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _retry_after(error: openai.APIStatusError) -> float | None:
    value = error.response.headers.get("retry-after") if error.response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _completion_text(completion: Any) -> str:
    """The first choice's text, or a `JudgeReplyError` keeping whatever came back.

    The client does not validate 200 replies: a proxy's text/plain or HTML page arrives as a
    `str`, and JSON of another shape as a completion whose fields are None or plain dicts.
    """
    if isinstance(completion, str | bytes):
        body = completion.decode(errors="replace") if isinstance(completion, bytes) else completion
        raise JudgeReplyError("judge reply is not a chat completion (the body is plain text)", raw=body)
    choices = getattr(completion, "choices", None)
    if not choices:
        raise JudgeReplyError("judge reply had no choices", raw=_dump(completion))
    try:
        text = choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        raise JudgeReplyError("judge reply's first choice has no message", raw=_dump(completion)) from None
    if text is not None and not isinstance(text, str):
        raise JudgeReplyError("judge reply's message content is not text", raw=_dump(completion))
    return text or ""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _dump(completion: Any) -> str | None:
    try:
        return completion.model_dump_json() if hasattr(completion, "model_dump_json") else str(completion)
    except Exception:  # a half-built object: the error message says enough
        return None


class JudgeClient:
    """An OpenAI-compatible chat endpoint (caching is the caller's: only usable replies are kept)."""

    def __init__(
        self, *, base_url: str | None, api_key: str, client: openai.AsyncOpenAI | None = None
    ) -> None:
        """`client`: one made for the model's provider (`proctor.agents.providers.judge_client`:
        Azure's deployment path, API version and `api-key` header; Ollama's `/v1`); else a
        plain OpenAI client for `base_url`. `api_key` is what errors are redacted of."""
        self.base_url = base_url
        self._api_key = api_key
        if client is None:
            import openai  # imported when a model is first called for, not by every run

            from proctor.calls.quota_http import http_client

            # max_retries=0: the runner retries, so it can count and report every attempt; a 429
            # is waited out below, in the endpoint's quota budget (shared with the agent's calls).
            client = openai.AsyncOpenAI(
                base_url=base_url, api_key=api_key, max_retries=0, http_client=http_client(base_url, api_key)
            )
        self._client = client

    async def aclose(self) -> None:
        """Close the connections; a failure to close is not worth a run's error."""
        with contextlib.suppress(Exception):
            await self._client.close()

    async def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, str]],
        temperature: float = 0.0,
        json_mode: bool = True,
        timeout_s: float | None = None,
        max_tokens: int | None = None,
        params: dict[str, Any] | None = None,
    ) -> JudgeReply:
        """One attempt; a failure's message and raw reply never carry the key, even when the
        server echoes it back (they are stored with the metric and shown in reports)."""
        try:
            return await self._complete(
                model=model,
                messages=messages,
                temperature=temperature,
                json_mode=json_mode,
                timeout_s=timeout_s,
                max_tokens=max_tokens,
                params=params,
            )
        except JudgeError as error:
            error.args = (redact(str(error), self._api_key),)
            error.raw = redact(error.raw, self._api_key) if error.raw else error.raw
            raise

    async def _complete(
        self,
        *,
        model: str,
        messages: list[dict[str, str]],
        temperature: float = 0.0,
        json_mode: bool = True,
        timeout_s: float | None = None,
        max_tokens: int | None = None,
        params: dict[str, Any] | None = None,
    ) -> JudgeReply:
        import openai  # loaded already: the client was made with it

        from proctor.calls.quota import quota_error
        from proctor.calls.quota_http import patience_of

        started = time.perf_counter()
        extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if json_mode else {}
        if max_tokens:
            extra["max_tokens"] = max_tokens
        extra.update(params or {})
        try:
            completion = await self._client.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                temperature=temperature,
                timeout=timeout_s,
                **extra,
            )
        except openai.RateLimitError as error:
            patience = patience_of(error)
            if patience is not None:
                raise JudgeError(
                    quota_error(patience, error.message), retry_after=_retry_after(error)
                ) from None
            raise JudgeError(
                f"judge rate-limited (HTTP 429): {error.message}", retry_after=_retry_after(error)
            ) from None
        except openai.APIStatusError as error:
            raise JudgeError(
                f"judge returned HTTP {error.status_code}: {error.message}", retry_after=_retry_after(error)
            ) from None
        except openai.APITimeoutError:
            raise JudgeError(
                f"judge did not answer within {timeout_s:g} s" if timeout_s else "judge timed out"
            ) from None
        except openai.APIConnectionError as error:
            raise JudgeError(f"judge unreachable: {error.message}") from None
        except openai.APIError as error:
            raise JudgeReplyError(f"judge reply could not be read: {error.message}") from None
        except ValueError as error:  # the client could not decode the body (not JSON)
            raw = error.doc if isinstance(error, json.JSONDecodeError) else None
            raise JudgeReplyError(f"judge reply body is not JSON: {error}", raw=raw) from None
        latency_ms = (time.perf_counter() - started) * 1000
        usage = getattr(completion, "usage", None)
        answered = getattr(completion, "model", None)
        reply = JudgeReply(
            text="",
            model=answered if isinstance(answered, str) and answered else model,
            prompt_tokens=_count(getattr(usage, "prompt_tokens", 0)),
            completion_tokens=_count(getattr(usage, "completion_tokens", 0)),
            latency_ms=latency_ms,
        )
        try:
            text = _completion_text(completion)
        except JudgeReplyError as error:
            error.reply = reply
            raise
        return dataclasses.replace(reply, text=text)
