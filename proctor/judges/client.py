"""Calling a judge model through the `openai` client, against any OpenAI-compatible endpoint.

One attempt per call: retries, backoff and timeouts are the metric runner's, so every metric
(judged or not) retries the same way and the retry count lands in its result. Failures are
typed so the runner can honour a server's `retry-after`, and a reply that cannot be used
keeps its raw text for the report.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

import openai


class JudgeError(RuntimeError):
    """A judge call failed; `retry_after` is the server's requested pause, if it sent one."""

    def __init__(self, message: str, *, retry_after: float | None = None, raw: str | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.raw = raw


class JudgeReplyError(JudgeError):
    """The judge answered, but not with something usable (no choices, bad JSON, out of range)."""


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


class JudgeClient:
    """An OpenAI-compatible chat endpoint (caching is the caller's: only usable replies are kept)."""

    def __init__(self, *, base_url: str | None, api_key: str) -> None:
        self.base_url = base_url
        # max_retries=0: the runner retries, so it can count and report every attempt.
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)

    async def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, str]],
        temperature: float = 0.0,
        json_mode: bool = True,
        timeout_s: float | None = None,
        max_tokens: int | None = None,
    ) -> JudgeReply:
        started = time.perf_counter()
        extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if json_mode else {}
        if max_tokens:
            extra["max_tokens"] = max_tokens
        try:
            completion = await self._client.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                temperature=temperature,
                timeout=timeout_s,
                **extra,
            )
        except openai.RateLimitError as error:
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
            raise JudgeReplyError(f"judge reply body is not JSON: {error}") from None
        latency_ms = (time.perf_counter() - started) * 1000
        if not completion.choices:
            raise JudgeReplyError("judge reply had no choices")
        text = completion.choices[0].message.content or ""
        usage = completion.usage
        reply = JudgeReply(
            text=text,
            model=completion.model or model,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_ms=latency_ms,
        )
        return reply
