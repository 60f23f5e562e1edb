"""A provider's quota, as `FakeOpenAI(quota=ProviderQuota(...))` enforces it.

Modelled on how OpenAI documents and sends its limits: requests and tokens per minute over a
sliding 60-second window (so no 60 s span ever admits more than the limit), a request's tokens
counted as its prompt (about four characters a token) plus its `max_tokens` (else 256) when it
arrives, a refused request answered at once with HTTP 429, an OpenAI-shaped error body
(`rate_limit_exceeded`), `retry-after` (whole seconds, rounded up) and `retry-after-ms`, and
every answer carrying `x-ratelimit-limit-requests`, `-remaining-requests`, `-reset-requests`
(and the `-tokens` ones when a TPM is set). `headers=False` leaves the rate-limit headers out
(a provider that tells nothing until it refuses), `retry_after=False` leaves out Retry-After.
Refused requests do not count against the window.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

WINDOW_S = 60.0


def _duration(seconds: float) -> str:
    """OpenAI's reset format: `1s`, `6m0s`, `20ms`."""
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.3g}s" if minutes else f"{rest:.3g}s"


def request_tokens(body: dict[str, Any]) -> int:
    chars = len(json.dumps(body.get("messages") or ""))
    cap = body.get("max_completion_tokens") or body.get("max_tokens") or 256
    return math.ceil(chars / 4) + int(cap)


@dataclass
class ProviderQuota:
    rpm: float | None = None
    tpm: float | None = None
    headers: bool = True
    retry_after: bool = True
    window_s: float = WINDOW_S
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _admitted: deque[tuple[float, int]] = field(default_factory=deque, repr=False)
    _tokens_in_window: int = 0
    admitted: int = 0
    refused: int = 0
    admitted_at: list[float] = field(default_factory=list, repr=False)

    def _expire(self, now: float) -> None:
        while self._admitted and self._admitted[0][0] <= now - self.window_s:
            self._tokens_in_window -= self._admitted.popleft()[1]

    def admit(self, body: dict[str, Any]) -> tuple[bool, dict[str, str]]:
        """Whether the request is served now, and the headers its answer carries."""
        tokens = request_tokens(body)
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            over_requests = self.rpm is not None and len(self._admitted) + 1 > self.rpm
            over_tokens = self.tpm is not None and self._tokens_in_window + tokens > self.tpm
            if over_requests or over_tokens:
                self.refused += 1
                wait = self._wait(now, tokens, over_requests, over_tokens)
                headers = self._headers(now)
                if self.retry_after:
                    headers["retry-after"] = str(max(1, math.ceil(wait)))
                    headers["retry-after-ms"] = str(max(1, round(wait * 1000)))
                return False, headers
            self._admitted.append((now, tokens))
            self._tokens_in_window += tokens
            self.admitted += 1
            self.admitted_at.append(now)
            return True, self._headers(now)

    def _wait(self, now: float, tokens: int, over_requests: bool, over_tokens: bool) -> float:
        """Until enough of the window has expired for this request."""
        waits = [0.0]
        if over_requests and self.rpm is not None:
            index = int(len(self._admitted) - self.rpm)  # the oldest that must leave first
            waits.append(self._admitted[max(0, index)][0] + self.window_s - now)
        if over_tokens and self.tpm is not None:
            freed, need = 0, self._tokens_in_window + tokens - self.tpm
            for at, spent in self._admitted:
                freed += spent
                if freed >= need:
                    waits.append(at + self.window_s - now)
                    break
        return max(waits)

    def _headers(self, now: float) -> dict[str, str]:
        if not self.headers:
            return {}
        oldest = self._admitted[0][0] if self._admitted else now
        reset = _duration(max(0.0, oldest + self.window_s - now)) if self._admitted else "0s"
        headers: dict[str, str] = {}
        if self.rpm is not None:
            headers["x-ratelimit-limit-requests"] = f"{self.rpm:g}"
            headers["x-ratelimit-remaining-requests"] = f"{max(0, int(self.rpm - len(self._admitted)))}"
            headers["x-ratelimit-reset-requests"] = reset
        if self.tpm is not None:
            headers["x-ratelimit-limit-tokens"] = f"{self.tpm:g}"
            headers["x-ratelimit-remaining-tokens"] = f"{max(0, int(self.tpm - self._tokens_in_window))}"
            headers["x-ratelimit-reset-tokens"] = reset
        return headers

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"admitted": self.admitted, "refused": self.refused, "admitted_at": list(self.admitted_at)}
