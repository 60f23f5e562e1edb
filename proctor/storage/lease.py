"""One owner per run: a lease held in the results database, on the run's own row.

Two processes working one run call each agent twice and overwrite each other's tallies, so
a run is claimed before its cases run: `eval_run.owner` names the holder (host, process id,
a token) and `heartbeat_at` says when it last proved it was alive. A claim is one
compare-and-swap UPDATE, atomic on SQLite and PostgreSQL alike. A holder is gone when, on
this host, its process no longer exists, or, from another host, its heartbeat is older than
the lease (`PROCTOR_LEASE_S`, default 60 s): only then may another process take the run over.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from datetime import UTC, datetime

from sqlalchemy import update
from sqlalchemy.engine import Engine

from proctor.models.tables import EvalRun
from proctor.settings import setting, value

log = logging.getLogger("proctor.storage")

LEASE_ENV = "PROCTOR_LEASE_S"
DEFAULT_LEASE_S = float(setting(LEASE_ENV).default)
_HOST = socket.gethostname()
_held: set[str] = set()  # the owner tokens this process holds now
_held_lock = threading.Lock()


class RunBusy(RuntimeError):
    """Another live process owns the run."""


def lease_seconds() -> float:
    return float(value(LEASE_ENV))


def new_owner() -> str:
    """This process's name for one run it holds: host, pid and a token of its own."""
    return f"{_HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def holder_alive(owner: str | None, heartbeat_at: datetime | None, now: datetime | None = None) -> bool:
    """Whether the owner recorded on a run still holds it."""
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host == _HOST and pid_text.isdigit():
        if int(pid_text) == os.getpid():
            with _held_lock:
                return owner in _held
        return _pid_alive(int(pid_text))
    if heartbeat_at is None:
        return False
    age = ((now or datetime.now(UTC)) - _aware(heartbeat_at)).total_seconds()
    return age < lease_seconds()


def describe_holder(owner: str, heartbeat_at: datetime | None) -> str:
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    seen = ""
    if heartbeat_at is not None:
        seen = f", last seen {max(0, (datetime.now(UTC) - _aware(heartbeat_at)).total_seconds()):.0f} s ago"
    return f"process {pid} on {host}{seen}"


def hold(owner: str) -> None:
    """Note that this process holds `owner`'s lease (a run it has just created)."""
    with _held_lock:
        _held.add(owner)


def claim(engine: Engine, run_id: uuid.UUID, owner: str) -> None:
    """Take the run for `owner`, or raise `RunBusy` naming who holds it. Compare-and-swap on
    the owner column read just before, so of two processes claiming at once one wins."""
    table = EvalRun.__table__  # type: ignore[attr-defined]
    with engine.begin() as connection:
        row = connection.execute(
            table.select().with_only_columns(table.c.owner, table.c.heartbeat_at).where(table.c.id == run_id)
        ).first()
        if row is None:
            raise LookupError(f"no run {run_id}")
        previous, heartbeat = row
        if previous != owner and holder_alive(previous, heartbeat):
            raise RunBusy(
                f"run {run_id} is being run by {describe_holder(previous, heartbeat)}; "
                f"wait for it to finish (or stop it) before resuming"
            )
        guard = table.c.owner.is_(None) if previous is None else table.c.owner == previous
        taken = connection.execute(
            update(table)
            .where(table.c.id == run_id, guard)
            .values(owner=owner, heartbeat_at=datetime.now(UTC))
        ).rowcount
    if taken != 1:
        raise RunBusy(f"run {run_id} was claimed by another process just now")
    hold(owner)


def release(engine: Engine, run_id: uuid.UUID, owner: str) -> None:
    with _held_lock:
        _held.discard(owner)
    table = EvalRun.__table__  # type: ignore[attr-defined]
    try:
        with engine.begin() as connection:
            connection.execute(
                update(table).where(table.c.id == run_id, table.c.owner == owner).values(owner=None)
            )
    except Exception as error:  # noqa: BLE001 - the database is gone; the lease lapses by itself
        log.warning("could not release run %s: %s", run_id, error)


class Heartbeat:
    """Renews the lease every quarter of its length on a daemon thread, until stopped."""

    def __init__(self, engine: Engine, run_id: uuid.UUID, owner: str) -> None:
        self.engine, self.run_id, self.owner = engine, run_id, owner
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="proctor-lease", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        release(self.engine, self.run_id, self.owner)

    def _beat(self) -> None:
        table = EvalRun.__table__  # type: ignore[attr-defined]
        interval = max(0.5, lease_seconds() / 4)
        while not self._stop.wait(interval):
            try:
                with self.engine.begin() as connection:
                    kept = connection.execute(
                        update(table)
                        .where(table.c.id == self.run_id, table.c.owner == self.owner)
                        .values(heartbeat_at=datetime.now(UTC))
                    ).rowcount
                if kept != 1:
                    log.error("run %s was taken over by another process", self.run_id)
                    return
            except Exception as error:  # noqa: BLE001 - the writer reports an unreachable database
                log.warning("run %s: lease not renewed: %s", self.run_id, error)
