"""One budget per model provider endpoint and key, shared by every call that spends its quota.

Agent turns, judges and simulated users that call the same endpoint with the same key draw on
the same requests-per-minute and tokens-per-minute quota at the provider. A fixed concurrency
either leaves most of it unused or runs into 429s, retries and timeouts; here every request
takes its turn from one `QuotaBudget` that learns the quota:

* from limits the user states (`QuotaLimit`: RPM and/or TPM for an endpoint) -- an upper bound;
* from the provider's `x-ratelimit-limit-requests` / `-tokens` headers (OpenAI's names) and
  their `-remaining-` / `-reset-` companions;
* from 429 answers otherwise: the budget pauses every call for `Retry-After` and halves how
  many calls it lets out at once, then grows that again (AIMD), so a provider that tells
  nothing is probed.

Requests are paced evenly at a little under the known rate (a burst would spend a minute's
quota in its first seconds), and a request's tokens are estimated from its body until the
answer's `usage` corrects the tally. The budget is asyncio with a thread lock, so the
process's event loops (Proctor's and the agents' own) share it; the HTTP side is
`proctor.calls.quota_http`, which every model client of a run is given. Other processes
calling the same endpoint and key (workers, Dask workers, a second `proctor run`) take their
part of a known rate from one token bucket in the results database
(`proctor.calls.quota_share`), so together they stay within it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from proctor.calls import quota_share
from proctor.calls.call_clock import waiting_for_turn
from proctor.calls.quota_share import GRANT_S, Answer, QuotaShare
from proctor.models.quota import DEFAULT_PATIENCE_S, QuotaLimit, normalized_endpoint

QUOTA_ERROR = "the provider's rate limit:"  # how a call refused past the patience is worded
PACE = 0.97  # of a known rate: the provider's clock and ours differ by a little
START_WINDOW = 8  # calls in flight before anything is known (grows quickly while nothing is refused)
MAX_WINDOW = 1024
RATE_WINDOW_S = 10.0  # "current rate" is measured over this long
MAX_PAUSE_S = 60.0  # a Retry-After longer than this is capped (and waited again if repeated)
UNKNOWN_PAUSE_S = 1.0  # a 429 without Retry-After: the first pause (doubles while refused)
HEADROOM = 0.9  # below this share of a known rate, more calls at once would still fit
LIMITED_BY_CONCURRENCY = 0.8  # below this share of a known quota, unhindered by it: concurrency is


def parse_limit(text: str) -> QuotaLimit:
    """`--rate-limit` as a user types it: `600rpm`, `600rpm,90000tpm`, `URL=600rpm,90000tpm`."""
    endpoint, _, spec = text.rpartition("=")
    values: dict[str, float] = {}
    for part in filter(None, (p.strip().lower() for p in spec.split(","))):
        match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*(rpm|tpm)", part)
        if match is None:
            raise ValueError(
                f"rate limit {text!r}: expected NUMBERrpm and/or NUMBERtpm, optionally after ENDPOINT= "
                "(e.g. 600rpm,90000tpm or https://api.openai.com/v1=500rpm)"
            )
        values[match.group(2)] = float(match.group(1))
    if not values:
        raise ValueError(f"rate limit {text!r}: give NUMBERrpm and/or NUMBERtpm")
    return QuotaLimit(endpoint=endpoint.strip() or "*", **values)


def quota_error(patience_s: float, detail: str) -> str:
    """The error of a call the provider still refused after the patience: the provider's, and
    `proctor resume` redoes its case (`proctor.storage.runs.resume_point`)."""
    return (
        f"{QUOTA_ERROR} still HTTP 429 after waiting {patience_s:g} s for quota "
        f"(`proctor resume` redoes it): {detail}"
    )


def parse_duration(value: str | None) -> float | None:
    """A reset header's value in seconds: `1s`, `6m0s`, `20ms`, `0.5` (plain seconds)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    total, matched = 0.0, False
    for number, unit in re.findall(r"([0-9]+(?:\.[0-9]+)?)(ms|h|m|s)", value):
        matched = True
        total += float(number) * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[unit]
    return total if matched else None


def retry_after(headers: dict[str, str]) -> float | None:
    """How long a 429 asks to wait: `retry-after-ms`, `retry-after` (seconds), else the reset
    of whichever limit is exhausted."""
    with contextlib.suppress(TypeError, ValueError):
        if headers.get("retry-after-ms") is not None:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
    with contextlib.suppress(TypeError, ValueError):
        if headers.get("retry-after") is not None:
            return max(0.0, float(headers["retry-after"]))
    resets = [
        parse_duration(headers.get(f"x-ratelimit-reset-{kind}"))
        for kind in ("requests", "tokens")
        if headers.get(f"x-ratelimit-remaining-{kind}") in ("0", "0.0")
    ]
    resets = [r for r in resets if r is not None]
    return max(resets) if resets else None


@dataclass
class QuotaStats:
    """What a run shows about the quota: requests, 429s, time spent waiting, the current rate."""

    requests: int = 0
    rate_limited: int = 0
    waited_s: float = 0.0
    rpm_now: float = 0.0
    limit_rpm: float | None = None
    limit_tpm: float | None = None
    tokens: int = 0

    def merge(self, other: QuotaStats) -> QuotaStats:
        return QuotaStats(
            requests=self.requests + other.requests,
            rate_limited=self.rate_limited + other.rate_limited,
            waited_s=self.waited_s + other.waited_s,
            rpm_now=self.rpm_now + other.rpm_now,
            limit_rpm=_add(self.limit_rpm, other.limit_rpm),
            limit_tpm=_add(self.limit_tpm, other.limit_tpm),
            tokens=self.tokens + other.tokens,
        )


def _add(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else a + b


@dataclass
class _Pacer:
    """Even spacing at `per_minute`, with one second's worth of burst."""

    per_minute: float
    level: float = 0.0  # units available now
    at: float = field(default_factory=time.monotonic)

    def _refill(self, now: float) -> None:
        rate = self.per_minute / 60
        self.level = min(max(1.0, rate), self.level + (now - self.at) * rate)
        self.at = now

    def delay(self, amount: float, now: float) -> float:
        """Seconds until `amount` may be spent (0: now)."""
        self._refill(now)
        if self.level >= min(amount, max(1.0, self.per_minute / 60)):
            return 0.0
        return (min(amount, max(1.0, self.per_minute / 60)) - self.level) / (self.per_minute / 60)

    def spend(self, amount: float, now: float) -> None:
        self._refill(now)
        self.level -= amount


class _Waiter:
    """A request waiting for its turn, on its own event loop (woken from any thread)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] | None = None

    def arm(self) -> asyncio.Future[None]:
        """(Under the budget's lock.) A fresh future to wait on."""
        self.future = self.loop.create_future()
        return self.future

    def wake(self) -> None:
        future = self.future
        if future is not None:
            with contextlib.suppress(RuntimeError):  # its loop has closed
                self.loop.call_soon_threadsafe(_settle, future)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class QuotaBudget:
    """The shared budget of one endpoint and key, on one event loop."""

    def __init__(
        self,
        endpoint: str,
        *,
        stated: QuotaLimit | None = None,
        patience_s: float = DEFAULT_PATIENCE_S,
        share: QuotaShare | None = None,
    ):
        self.endpoint = endpoint
        self.share = share  # the other processes' part of the quota, through the results database
        self._ahead: set[asyncio.Future[None]] = set()  # grants asked for before they are needed
        self.stated_rpm = stated.rpm if stated else None
        self.stated_tpm = stated.tpm if stated else None
        self.patience_s = patience_s
        self.learned_rpm: float | None = None
        self.learned_tpm: float | None = None
        self.window = float(START_WINDOW)
        self.slow_start = True
        self.in_flight = 0
        self.waiting = 0
        self.paused_until = 0.0
        self._pause_s = UNKNOWN_PAUSE_S
        self._requests: _Pacer | None = None
        self._tokens: _Pacer | None = None
        self._lock = threading.Lock()  # the budget is shared by the loops of the process
        self._queue: deque[_Waiter] = deque()  # requests waiting, in arrival order
        self._answered: deque[float] = deque()
        self.stats = QuotaStats()
        self.avg_completion = 256.0  # tokens, until answers say otherwise
        self._created = time.monotonic()
        self._last_decrease = 0.0

    # -- what is known ---------------------------------------------------------------------
    @property
    def rpm(self) -> float | None:
        known = [v for v in (self.stated_rpm, self.learned_rpm) if v]
        return min(known) if known else None

    @property
    def tpm(self) -> float | None:
        known = [v for v in (self.stated_tpm, self.learned_tpm) if v]
        return min(known) if known else None

    def _pacers(self) -> tuple[_Pacer | None, _Pacer | None]:
        rpm, tpm = self.rpm, self.tpm
        if rpm is None:
            self._requests = None
        elif self._requests is None or self._requests.per_minute != rpm * PACE:
            self._requests = _Pacer(rpm * PACE, level=self._requests.level if self._requests else 1.0)
        if tpm is None:
            self._tokens = None
        elif self._tokens is None or self._tokens.per_minute != tpm * PACE:
            self._tokens = _Pacer(tpm * PACE, level=self._tokens.level if self._tokens else tpm * PACE / 60)
        return self._requests, self._tokens

    # -- taking a turn ---------------------------------------------------------------------
    async def acquire(self, tokens: float) -> None:
        """Wait for a request's turn (pacing, the concurrency window, a 429's pause), then
        take one place in flight; `release()` gives it back when the answer is read.

        Requests take their turns in arrival order, from any event loop of the process (the
        agents' loop and Proctor's own share one budget): only the first in line watches the
        clock; the others sleep until it has gone."""
        started = time.monotonic()
        me = _Waiter(asyncio.get_running_loop())
        with self._lock:
            self._queue.append(me)
            self.waiting += 1
        try:
            with waiting_for_turn():
                await self._take_turn(me, tokens)
        except BaseException:
            with self._lock:
                if me in self._queue:
                    first = self._queue[0] is me
                    self._queue.remove(me)
                    if first:
                        self._wake_first()
            raise
        finally:
            with self._lock:
                self.waiting -= 1
        with self._lock:
            self.stats.waited_s += time.monotonic() - started
            self.stats.requests += 1

    async def _take_turn(self, me: _Waiter, tokens: float) -> None:
        while True:
            delay, refill = 0.0, False
            with self._lock:
                first = self._queue[0] is me
                if first:
                    now = time.monotonic()
                    requests, token_pacer = self._pacers()
                    share = self._share_in_use(now)
                    if share is not None and share.pause_to_share and not share.refilling:
                        share.refilling = refill = True  # a 429's pause, for the other processes
                    delay = max(
                        self.paused_until - now,
                        requests.delay(1, now) if requests else 0.0,
                        token_pacer.delay(tokens, now) if token_pacer else 0.0,
                    )
                    if not refill and delay <= 0 and self.in_flight < int(self.window):
                        if share is None or share.covers(
                            tokens, now, rpm=requests is not None, tpm=token_pacer is not None
                        ):
                            self._queue.popleft()
                            if requests:
                                requests.spend(1, now)
                            if token_pacer:
                                token_pacer.spend(tokens, now)
                            if share is not None:
                                share.spend(tokens)
                                if share.running_low(now) and self._queue:  # the next grant, ahead
                                    share.refilling = True
                                    ahead = asyncio.ensure_future(self._refill(tokens))
                                    self._ahead.add(ahead)
                                    ahead.add_done_callback(self._ahead.discard)
                            self.in_flight += 1
                            self._wake_first()
                            return
                        if share.refilling:  # another loop's first call is asking: until woken
                            pass
                        elif now < share.retry_at:  # the shared bucket was empty: ask again then
                            delay = share.retry_at - now
                        else:
                            share.refilling = refill = True
                woken = me.arm()
            if refill:
                await self._refill(tokens)
                continue
            elif first and delay > 0:
                await asyncio.sleep(delay)
            else:  # behind others, or the window is full: until woken
                await woken

    def _share_in_use(self, now: float) -> QuotaShare | None:
        """(Under the lock.) The database's bucket, when the rate is known and it works."""
        share = self.share
        if share is None or not share.usable(now) or (self._requests is None and self._tokens is None):
            return None
        return share

    async def _refill(self, tokens: float) -> None:
        """One round trip to the shared bucket, off the loop, for the calls waiting here."""
        share = self.share
        assert share is not None
        with self._lock:
            rpm = self._requests.per_minute if self._requests else None
            tpm = self._tokens.per_minute if self._tokens else None
            wanted = max(1, min(len(self._queue), math.ceil((rpm or 0) / 60 * GRANT_S)))
        answer: Answer | None = None
        try:
            answer = await asyncio.to_thread(
                share.ask, rpm=rpm, tpm=tpm, requests=wanted, tokens=wanted * tokens
            )
        except Exception as error:  # the database is not the provider: pace alone for a while
            with self._lock:
                share.broke(error, time.monotonic())
        finally:  # (also when the caller gave up meanwhile: the next in line asks again)
            with self._lock:
                if answer is not None:
                    now = time.monotonic()
                    share.take(answer, wanted, now)
                    self.paused_until = max(self.paused_until, now + (answer.paused_until - time.time()))
                share.refilling = False
                self._wake_first()

    def _wake_first(self) -> None:
        """(Under the lock.) Tell the first in line to look again."""
        if self._queue:
            self._queue[0].wake()

    def has_headroom(self) -> bool:
        """No call waits for its turn, none is paused by a 429, and the rate is below the quota."""
        with self._lock:
            return self._has_headroom()

    def _has_headroom(self) -> bool:
        if self.waiting or time.monotonic() < self.paused_until or self.in_flight >= int(self.window):
            return False
        rpm = self.rpm
        return rpm is None or self.current_rpm() < HEADROOM * rpm

    def release(self) -> None:
        with self._lock:
            self.in_flight -= 1
            self._wake_first()

    # -- what the provider said -----------------------------------------------------------
    def answered(self, headers: dict[str, str], *, estimated: float, used: int | None) -> None:
        """A request was answered (not with 429): learn from its headers, correct its tokens."""
        with self._lock:
            self._on_answer(headers, estimated, used)
            self._wake_first()  # the window may have grown

    def rate_limited(self, headers: dict[str, str]) -> float:
        """A 429: pause everyone for its Retry-After, halve the window (once per burst of 429s).
        Returns the pause (seconds). The request rate is not probed down: a known one comes from
        the headers or the user, and an unknown one is what the pauses leave."""
        with self._lock:
            return self._on_429(headers)

    def _on_answer(self, headers: dict[str, str], estimated: float, used: int | None) -> None:
        now = time.monotonic()
        self._learn(headers)
        self._answered.append(now)
        while self._answered and self._answered[0] < now - RATE_WINDOW_S:
            self._answered.popleft()
        if used is not None:
            self.stats.tokens += used
            if self._tokens is not None:
                self._tokens.spend(used - estimated, now)
                if self.share is not None:
                    self.share.owe(used - estimated)
        self._pause_s = UNKNOWN_PAUSE_S
        # additive increase: the window grows while calls succeed (by one per call until the
        # first 429, then by one per window's worth of calls)
        self.window = min(MAX_WINDOW, self.window + (1.0 if self.slow_start else 1.0 / self.window))

    @property
    def known_rpm(self) -> float | None:
        known = [v for v in (self.stated_rpm, self.learned_rpm) if v]
        return min(known) if known else None

    def _on_429(self, headers: dict[str, str]) -> float:
        now = time.monotonic()
        self.stats.rate_limited += 1
        self._learn(headers)
        pause = retry_after(headers)
        if pause is None:
            pause, self._pause_s = self._pause_s, min(MAX_PAUSE_S, self._pause_s * 2)
        pause = min(pause, MAX_PAUSE_S)
        self.paused_until = max(self.paused_until, now + pause)
        if self.share is not None:
            self.share.pause_to_share = max(self.share.pause_to_share, time.time() + pause)
        if self.slow_start or now - self._last_decrease > 1.0:  # one decrease per burst of 429s
            self._last_decrease = now
            self.slow_start = False
            self.window = max(1.0, self.window / 2)
        return pause

    def _learn(self, headers: dict[str, str]) -> None:
        for kind in ("requests", "tokens"):
            value = headers.get(f"x-ratelimit-limit-{kind}")
            with contextlib.suppress(TypeError, ValueError):
                if value is not None and float(value) > 0:
                    if kind == "requests":
                        self.learned_rpm = float(value)
                    else:
                        self.learned_tpm = float(value)
        remaining = headers.get("x-ratelimit-remaining-requests")
        reset = parse_duration(headers.get("x-ratelimit-reset-requests"))
        with contextlib.suppress(TypeError, ValueError):
            if remaining is not None and float(remaining) <= 0 and reset:
                self.paused_until = max(self.paused_until, time.monotonic() + min(reset, MAX_PAUSE_S))

    def current_rpm(self) -> float:
        now = time.monotonic()
        recent = [t for t in self._answered if t >= now - RATE_WINDOW_S]
        if not recent:
            return 0.0
        span = max(min(RATE_WINDOW_S, now - self._created), 1.0)
        return len(recent) * 60.0 / span

    def snapshot(self) -> QuotaStats:
        with self._lock:
            return self._snapshot()

    def _snapshot(self) -> QuotaStats:
        stats = QuotaStats(**{**self.stats.__dict__})
        stats.rpm_now = self.current_rpm()
        stats.limit_rpm, stats.limit_tpm = self.known_rpm, self.tpm
        return stats

    def estimate_tokens(self, prompt_chars: int, max_tokens: int | None) -> float:
        """Tokens a request will count against TPM before its answer says: about four
        characters a token for the prompt, and `max_tokens` (else the average answer so far)."""
        return prompt_chars / 4 + (max_tokens or self.avg_completion)

    def learn_completion(self, completion_tokens: int) -> None:
        self.avg_completion = 0.9 * self.avg_completion + 0.1 * completion_tokens


# -- the budgets of this process ---------------------------------------------------------------
@dataclass
class QuotaSettings:
    """The run's stated limits and patience (set when a run starts; plain data)."""

    limits: list[QuotaLimit] = field(default_factory=list)
    patience_s: float = DEFAULT_PATIENCE_S
    share_url: str | None = None  # the results database other processes share the quota through
    # how a share opens that database: given by the run (`proctor.storage.get_engine`), which
    # sits above this module, so the budget knows a database only by what it is handed
    open_engine: Callable[[str], Any] | None = None

    def stated(self, endpoint: str) -> QuotaLimit | None:
        matching = [limit for limit in self.limits if limit.matches(endpoint)]
        exact = [limit for limit in matching if limit.endpoint != "*"]
        return (exact or matching or [None])[0]


_settings = QuotaSettings()
_budgets: dict[tuple[str, str], QuotaBudget] = {}
_registry_lock = threading.Lock()


def configure(
    limits: list[QuotaLimit] | None = None,
    patience_s: float | None = None,
    share_url: str | None = None,
    open_engine: Callable[[str], Any] | None = None,
) -> None:
    """The stated limits and patience for budgets made from now on in this process (a run
    calls it when it starts; budgets already made keep learning, with the new stated limits),
    and the results database through which every process calling the same endpoint and key
    shares its quota (`proctor.calls.quota_share`; None: this process alone)."""
    global _settings
    _settings = QuotaSettings(
        list(limits or []),
        patience_s if patience_s is not None else DEFAULT_PATIENCE_S,
        share_url if quota_share.enabled() and open_engine is not None else None,
        open_engine,
    )
    for (endpoint, _key), budget in list(_budgets.items()):
        stated = _settings.stated(endpoint)
        budget.stated_rpm = stated.rpm if stated else None
        budget.stated_tpm = stated.tpm if stated else None
        budget.patience_s = _settings.patience_s


def limits_from_env() -> list[QuotaLimit]:
    """`PROCTOR_RATE_LIMITS`: limits as `--rate-limit` takes them, separated by `;` or spaces
    (e.g. `600rpm,90000tpm` or `https://api.openai.com/v1=500rpm;http://localhost:8000/v1=60rpm`)."""
    text = os.environ.get("PROCTOR_RATE_LIMITS", "")
    try:
        return [parse_limit(part) for part in re.split(r"[;\s]+", text) if part]
    except ValueError as error:
        raise ValueError(f"PROCTOR_RATE_LIMITS: {error}") from None


def budget_for(endpoint: str, key_id: str) -> QuotaBudget:
    """The budget of an endpoint and key in this process (made on first use)."""
    index = (normalized_endpoint(endpoint), key_id)
    with _registry_lock:
        budget = _budgets.get(index)
        if budget is None:
            stated = _settings.stated(endpoint)
            share = (
                QuotaShare(_settings.share_url, endpoint, key_id, _settings.open_engine)
                if _settings.share_url and _settings.open_engine
                else None
            )
            budget = _budgets[index] = QuotaBudget(
                endpoint, stated=stated, patience_s=_settings.patience_s, share=share
            )
        return budget


def has_headroom() -> bool:
    """Whether every endpoint this process has called could take more calls now (and one has
    been called): what lets a run with no `--concurrency` of its own take on more cases."""
    budgets = list(_budgets.values())
    return bool(budgets) and all(budget.has_headroom() for budget in budgets)


def snapshot() -> QuotaStats | None:
    """The quota figures of every budget in this process, added up (None if no model was called)."""
    budgets = list(_budgets.values())
    if not budgets:
        return None
    total = QuotaStats()
    for budget in budgets:
        total = total.merge(budget.snapshot())
    return total


def forget() -> None:
    """Forget this process's budgets: the next run's figures start from zero."""
    _budgets.clear()


def run_figures(duration_ms: int | None, concurrency: int | None) -> dict[str, Any] | None:
    """The quota as a run saw it, for its summary: requests, 429s, time waiting, rates; and a
    note when the run's own concurrency, not the quota, held it back."""
    stats = snapshot()
    if stats is None or not stats.requests:
        return None
    minutes = (duration_ms or 0) / 60_000
    rpm = stats.requests / minutes if minutes > 0 else None
    figures: dict[str, Any] = {
        "requests": stats.requests,
        "rate_limited": stats.rate_limited,
        "waited_s": round(stats.waited_s, 3),
        "rpm": round(rpm, 1) if rpm is not None else None,
        "limit_rpm": stats.limit_rpm,
        "limit_tpm": stats.limit_tpm,
        "tokens": stats.tokens,
    }
    hardly_waited = stats.waited_s / stats.requests < 0.05  # seconds per call, waiting for quota
    under_quota = bool(stats.limit_rpm and rpm is not None and rpm < LIMITED_BY_CONCURRENCY * stats.limit_rpm)
    if concurrency is not None and under_quota and hardly_waited:  # None: it grew by itself
        figures["note"] = (
            f"concurrency {concurrency} limits this run: it made {rpm:.0f} requests a minute of the "
            f"{stats.limit_rpm:g} the provider allows; raise --concurrency to use more of the quota"
        )
    return figures


def describe(stats: QuotaStats | None) -> str:
    """One line for a progress bar: the current rate, 429s seen, time spent waiting for quota."""
    if stats is None or not stats.requests:
        return ""
    limit = f"/{stats.limit_rpm:g}" if stats.limit_rpm else ""
    waited = f"{stats.waited_s:.0f} s waiting for quota"
    return f"{stats.rpm_now:.0f}{limit} rpm · {stats.rate_limited} × 429 · {waited}"
