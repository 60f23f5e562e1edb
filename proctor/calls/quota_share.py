"""One endpoint's quota shared by every process that calls it: a token bucket in the results database.

A `QuotaBudget` paces the calls of one process. Two workers (Prefect flow runs, Dask workers,
two `proctor run`s) calling the same endpoint with the same key would each pace at the full
quota and together double it. So when a run has a results database, a budget whose rate is
known (stated by the user or learned from `x-ratelimit-limit-*`) also takes its requests and
tokens from one row of the `quota_share` table, a token bucket refilled at that rate:

* **Cheap per call.** A process takes a grant of up to `GRANT_S` seconds' worth of the rate
  (but no more than the calls it has waiting) in one round trip: a compare-and-swap UPDATE on
  the row's `version` (atomic on SQLite and PostgreSQL alike, no lock held between
  statements), made off the event loop, by the first call in line only. At 600 RPM that is
  one round trip per 2-3 calls when busy; at 6,000 RPM one per 25.
* **Nothing held by a dead worker.** A grant is a right to send now, not a lease on capacity:
  one not spent within `GRANT_TTL_S` is dropped, so a process killed mid-run takes at most one
  grant with it, and the bucket refills at the rate whoever is left.
* **The window holds.** The bucket holds at most `BURST_S` seconds' worth, so in any minute the
  processes together send at most PACE x the rate plus that burst and one grant's lifetime:
  under the quota.
* **A 429 pauses everyone.** A provider's `Retry-After` seen by one process is written with its
  next grant and read by the others with theirs.

The database failing never fails a call: the share is set aside for `BROKEN_S` and the process
paces alone (as without a database), with a warning. `PROCTOR_SHARED_QUOTA=0` turns it off.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from proctor.models.quota import normalized_endpoint
from proctor.settings import value

log = logging.getLogger("proctor.calls.quota")

GRANT_S = 0.25  # a grant is at most this many seconds of the rate
BURST_S = 0.5  # the bucket holds at most this many seconds of the rate (at least one request)
GRANT_TTL_S = 0.5  # a grant not spent by then is dropped
BROKEN_S = 30.0  # after a database error, pace alone this long
MIN_RETRY_S = 0.01  # an empty bucket is asked again after at least this long
CAS_TRIES = 20


def enabled() -> bool:
    return (value("PROCTOR_SHARED_QUOTA") or "1").lower() not in ("0", "false", "no", "off")


def budget_key(endpoint: str, key_id: str) -> str:
    return hashlib.sha256(f"{normalized_endpoint(endpoint)}|{key_id}".encode()).hexdigest()[:40]


def _shown(endpoint: str) -> str:
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))[:500]


@dataclass
class Answer:
    """What one round trip gave: requests and tokens granted, how long until the bucket has
    what was asked (when it granted nothing), and the pause every process keeps (epoch s)."""

    requests: float = 0.0
    tokens: float = 0.0
    wait_s: float = 0.0
    paused_until: float = 0.0
    left: float = 0.0  # requests still in the bucket after this grant


class QuotaShare:
    """One endpoint and key's row, as one process uses it (its grant and the debts it owes)."""

    def __init__(
        self, database_url: str, endpoint: str, key_id: str, open_engine: Callable[[str], Any]
    ) -> None:
        self.database_url = database_url
        self.open_engine = open_engine  # the run's `proctor.storage.get_engine`
        self.budget = budget_key(endpoint, key_id)
        self.endpoint = _shown(endpoint)
        self.requests = 0.0  # of the grant in hand
        self.granted = 1.0  # requests of the last grant
        self.plenty = False  # the last grant was all that was asked: ask ahead for the next
        self.tokens = 0.0
        self.expires = 0.0  # monotonic
        self.retry_at = 0.0  # monotonic: the bucket was empty, ask again then
        self.refilling = False
        self.broken_until = 0.0  # monotonic
        self.token_debt = 0.0  # answers larger than estimated, owed to the bucket
        self.pause_to_share = 0.0  # epoch: a 429's pause the others have not been told of
        self.round_trips = 0

    # -- the grant in hand (under the budget's lock) ----------------------------------------
    def usable(self, now: float) -> bool:
        return now >= self.broken_until

    def covers(self, tokens: float, now: float, *, rpm: bool, tpm: bool) -> bool:
        """Whether the grant in hand lets one request of `tokens` go now."""
        if now > self.expires:
            self.requests = self.tokens = 0.0
        return (not rpm or self.requests >= 1) and (not tpm or self.tokens >= tokens)

    def running_low(self, now: float) -> bool:
        """Whether to ask for the next grant now, while this one lasts: half of it is spent, or
        half its life is over (the round trip then overlaps the calls it still lets go); not
        when the bucket itself is short, which asking earlier does not fill."""
        return (
            self.plenty
            and not self.refilling
            and (self.requests < self.granted / 2 or now > self.expires - GRANT_TTL_S / 2)
        )

    def spend(self, tokens: float) -> None:
        self.requests -= 1
        self.tokens -= tokens

    def owe(self, tokens: float) -> None:
        """An answer used `tokens` more than estimated (negative: fewer)."""
        self.token_debt += tokens

    def take(self, answer: Answer, asked: float, now: float) -> None:
        self.plenty = answer.left >= asked  # else the bucket, not this process, sets the pace
        if now > self.expires:
            self.requests = self.tokens = 0.0
        self.granted = answer.requests or self.granted
        self.requests += answer.requests
        self.tokens += answer.tokens
        self.expires = now + GRANT_TTL_S
        self.retry_at = now + max(MIN_RETRY_S, answer.wait_s) if not answer.requests else 0.0

    # -- the round trip (off the event loop) --------------------------------------------------
    def ask(self, *, rpm: float | None, tpm: float | None, requests: int, tokens: float) -> Answer:
        """Take up to `requests` requests and `tokens` tokens from the bucket (all or nothing)."""
        from sqlalchemy import insert, select, update
        from sqlalchemy.exc import IntegrityError

        from proctor.models.tables import QuotaShareRow

        table = QuotaShareRow.__table__  # type: ignore[attr-defined]
        engine = self.open_engine(self.database_url)
        request_rate = rpm / 60 if rpm else None
        token_rate = tpm / 60 if tpm else None
        request_cap = max(1.0, (request_rate or 0) * BURST_S)
        token_cap = (token_rate or 0) * BURST_S
        debt, pause = self.token_debt, self.pause_to_share
        self.round_trips += 1
        for _ in range(CAS_TRIES):
            with engine.connect() as connection:
                row = connection.execute(select(table).where(table.c.budget == self.budget)).first()
                now = time.time()
                if row is None:
                    try:
                        connection.execute(
                            insert(table).values(
                                budget=self.budget,
                                endpoint=self.endpoint,
                                requests=request_cap,
                                tokens=token_cap,
                                at=now,
                                paused_until=0.0,
                                version=0,
                            )
                        )
                        connection.commit()
                    except IntegrityError:  # another process made it first
                        connection.rollback()
                    continue
                elapsed = max(0.0, now - row.at)
                level_r = min(request_cap, row.requests + elapsed * request_rate) if request_rate else 0.0
                level_t = min(token_cap, row.tokens - debt + elapsed * token_rate) if token_rate else 0.0
                waits = []
                if request_rate and level_r < 1:  # until a full grant is there: fewer round trips
                    waits.append((min(requests, request_cap) - level_r) / request_rate)
                if token_rate and level_t < min(tokens, token_cap):
                    waits.append((min(tokens, token_cap) - level_t) / token_rate)
                granted_r = (
                    0.0 if waits else float(min(requests, math.floor(level_r))) if request_rate else requests
                )
                granted_t = 0.0 if waits else tokens if token_rate else 0.0
                paused_until = max(row.paused_until, pause)
                changed = connection.execute(
                    update(table)
                    .where(table.c.budget == self.budget, table.c.version == row.version)
                    .values(
                        requests=level_r - granted_r,
                        tokens=level_t - granted_t,
                        at=now,
                        paused_until=paused_until,
                        version=row.version + 1,
                    )
                ).rowcount
                connection.commit()
                if changed == 1:
                    self.token_debt -= debt
                    if self.pause_to_share == pause:
                        self.pause_to_share = 0.0
                    left = level_r - granted_r if request_rate else float(requests)
                    return Answer(granted_r, granted_t, max(waits, default=0.0), paused_until, left)
        return Answer(wait_s=MIN_RETRY_S)  # contended each time: ask again shortly

    def broke(self, error: BaseException, now: float) -> None:
        log.warning(
            "the quota shared through the results database is set aside for %g s (this process "
            "paces alone meanwhile): %s",
            BROKEN_S,
            error,
        )
        self.broken_until = now + BROKEN_S
        self.requests = self.tokens = 0.0
