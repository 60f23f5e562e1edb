"""Writing results as they are produced, with group commit.

One background thread owns the writes. Each case's write is queued as soon as the case
reaches a checkpoint, and the thread commits whatever is queued in one transaction: a lone
result is committed at once, and under load many share one commit. A caller awaits its
own write, so when `save` returns, that result is durable.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError

from proctor.models.case import Case
from proctor.models.outcome import CaseOutcome, CaseState
from proctor.models.tables import CaseResultRow, MetricResultRow
from proctor.secrets import scrub_value
from proctor.settings import value
from proctor.storage.db import redact_url
from proctor.storage.rows import bare_row, case_row, case_row_id, final_columns, metric_rows
from proctor.storage.text import clean_agent_values, json_safe_row, storable

log = logging.getLogger("proctor.storage")

CASE_TABLE = CaseResultRow.__table__  # type: ignore[attr-defined]
METRIC_TABLE = MetricResultRow.__table__  # type: ignore[attr-defined]

RETRY_BUDGET_ENV = "PROCTOR_DB_RETRY_S"


def reconnect_delays(budget_s: float | None = None) -> tuple[float, ...]:
    """Waits between attempts when the database is unreachable: doubling from 0.5 s (at most
    15 s each) until the budget, `PROCTOR_DB_RETRY_S` (default 30 s), is spent."""
    if budget_s is None:
        budget_s = float(value(RETRY_BUDGET_ENV))
    delays, delay = [], 0.5
    while budget_s > 1e-9:
        delays.append(min(delay, budget_s))
        budget_s -= delays[-1]
        delay = min(2 * delay, 15.0)
    return tuple(delays)


class DatabaseWriteError(RuntimeError):
    """Results could not be written after every retry."""


class RowRejected(DatabaseWriteError):
    """The database refused one case's rows for what they hold (a constraint, a value it
    cannot store), while other writes go through: that case's trouble, not the run's."""


class _Unreachable(Exception):
    """The database stayed unreachable through every reconnection attempt."""

    def __init__(self, error: DBAPIError) -> None:
        super().__init__(str(error))
        self.error = error


def _reason(error: BaseException) -> str:
    """Why the database refused a write, in one short line: the driver's message, never the
    statement's parameters (they hold the very text that may be the problem)."""
    if isinstance(error, IntegrityError):
        detail = str(error.orig).splitlines()[0] if error.orig is not None else ""
        return f"result rejected by the database: {detail}"[:300]
    orig = getattr(error, "orig", None) or error
    lines = str(orig).splitlines()
    return f"{type(orig).__name__}: {lines[0] if lines else ''}"[:300]


@dataclass
class _Write:
    """One case's rows: its case row (inserted, or replacing its checkpoint) and metric rows.

    `done` is an asyncio future of the caller's loop; the writer thread resolves a whole
    batch with one thread-safe call per loop (a `concurrent.futures.Future` per write costs
    a lock and a condition each, which showed in profiles).
    """

    case_row: dict[str, Any]
    metric_rows: list[dict[str, Any]]
    updates: bool
    done: asyncio.Future[None]


# What changes between a case's checkpoint (agent done) and its end: the final write updates
# only these, so the tool calls and files are not serialised twice. The turns are: a case
# scored turn by turn stores each turn's scores with the turn.
FINAL_COLUMNS = (
    "state",
    "passed",
    "errors",
    "notes",
    "tools_matched",
    "turns",
    "evaluation_ms",
    "execution_ms",
    "finished_at",
)
_FINAL_UPDATE = (
    update(CASE_TABLE)
    .where(CASE_TABLE.c.id == bindparam("b_id"))
    .values({name: bindparam(f"b_{name}") for name in FINAL_COLUMNS})
)


def _apply(connection: Connection, batch: list[_Write]) -> None:
    """Write a batch in at most three statements, whatever its size: new case rows, final
    updates of checkpointed rows, metric rows. Inserts come first, so a checkpoint and its
    final update may share a batch; a case inserted twice is refused."""
    inserts = [write.case_row for write in batch if not write.updates]
    if len({row["id"] for row in inserts}) != len(inserts):
        raise IntegrityError("duplicate case in one run", None, ValueError("duplicate case id"))
    if inserts:
        connection.execute(CASE_TABLE.insert(), inserts)
    updates = [
        {f"b_{key}": value for key, value in write.case_row.items()} for write in batch if write.updates
    ]
    if updates:
        connection.execute(_FINAL_UPDATE, updates)
    metric_rows = [row for write in batch for row in write.metric_rows]
    if metric_rows:
        connection.execute(METRIC_TABLE.insert(), metric_rows)


class ResultWriter:
    def __init__(self, engine: Engine, *, max_batch: int = 500) -> None:
        self.engine = engine
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue[_Write | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="proctor-writer", daemon=True)
        self._thread.start()
        self.commits = 0
        self.writes = 0
        self.delays = reconnect_delays()

    # -- what callers use -------------------------------------------------------------
    async def save(self, run_id: uuid.UUID, case: Case, outcome: CaseOutcome, position: int) -> None:
        """Persist a case's progress; the first save inserts its row, the final one updates it.

        Returns once the write is committed: what `save` returned for is durable. Text no
        database can store is replaced, with a note on the case. A row that cannot be built or
        is refused for what it holds (an object JSON has no form for, a number past 64 bits)
        is written again with those values described, each with a note. If the database
        still refuses the case's rows, the case alone pays: its checkpoint is skipped (the
        final write stores it whole), and its final write falls back to the case without the
        agent's output, marked errored with the database's reason. Only when that too fails,
        or the database is unreachable or out of space (the infrastructure's trouble, not the
        case's verdict), does `save` raise, and the case stays unfinished for resume.
        """
        final = outcome.state.is_final
        try:
            try:
                await self._submit(run_id, case, outcome, position, mode="plain")
            except RowRejected:
                await self._submit(run_id, case, outcome, position, mode="safe")
        except RowRejected as refused:
            if not final:
                log.warning("case %s: checkpoint refused by the database: %s", case.case_id, refused)
                return
            if outcome.state is CaseState.COMPLETE:
                outcome.state = CaseState.EVALUATION_FAILED
            outcome.errors.append(f"the case's results could not be stored: {refused}")
            await self._submit(run_id, case, outcome, position, mode="bare")
        outcome.checkpointed = True

    def _rows(
        self, run_id: uuid.UUID, case: Case, outcome: CaseOutcome, position: int, mode: str, notes: list[str]
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        safe = None if mode == "plain" else notes
        if outcome.checkpointed:
            row_id = case_row_id(run_id, case.case_id, outcome.attempt)
            row = {"id": row_id, **final_columns(outcome, safe=safe)}
        else:
            row = case_row(run_id, case, outcome, position, safe=safe)
            row = bare_row(row) if mode == "bare" else row
        metrics = metric_rows(run_id, case, outcome) if outcome.state.is_final and mode != "bare" else []
        return row, metrics

    async def _submit(
        self, run_id: uuid.UUID, case: Case, outcome: CaseOutcome, position: int, *, mode: str
    ) -> None:
        """One attempt at the case's rows: `plain`, `safe` (every value made storable, with
        notes) or `bare` (without what the agent produced)."""
        notes: list[str] = []
        try:
            turns = clean_agent_values(outcome.turns, notes)  # NaN and infinities, as text
            written = outcome if turns is outcome.turns else outcome.model_copy(update={"turns": turns})
            row, metrics = self._rows(run_id, case, written, position, mode, notes)
            if mode != "plain":
                row = json_safe_row(row, "", notes)
                metrics = [json_safe_row(m, f"metrics[{i}]", notes) for i, m in enumerate(metrics)]
        except Exception as error:  # a value no encoder takes: described on the next attempt
            raise RowRejected(f"the case's results could not be encoded: {_reason(error)}") from None
        row = storable(scrub_value(row), "", notes)  # no secret a server reflected back is stored
        metrics = [
            storable(scrub_value(metric), f"metrics[{index}]", notes) for index, metric in enumerate(metrics)
        ]
        if notes:  # a checkpoint and the final write find the same values: each note is kept once
            outcome.storage_notes += [
                note for note in dict.fromkeys(notes) if note not in outcome.storage_notes
            ]
            row["notes"] = list(outcome.storage_notes)
        write = _Write(
            case_row=row,
            metric_rows=metrics,
            updates=outcome.checkpointed,
            done=asyncio.get_running_loop().create_future(),
        )
        self._queue.put(write)
        await write.done

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=60)

    # -- the writer thread --------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            self._commit(batch)
            if stop:
                return

    def _commit(self, batch: list[_Write]) -> None:
        try:
            self._with_reconnect(batch)
        except _Unreachable as unreachable:  # every write of the batch waits for the database
            self._fail(
                batch,
                DatabaseWriteError(
                    f"could not write results to {redact_url(str(self.engine.url))} after "
                    f"{len(self.delays) + 1} attempts: {unreachable.error.orig!r}"
                ),
            )
            return
        except Exception as error:  # refused for what it holds: find whose write it was
            if out_of_space(error):  # the disk's trouble, not the cases': none is their verdict
                self._fail(
                    batch,
                    DatabaseWriteError(
                        f"could not write results to {redact_url(str(self.engine.url))}: {_reason(error)}"
                    ),
                )
                return
            if len(batch) > 1:
                for write in batch:  # isolate the offending write so the others are kept
                    self._commit([write])
                return
            self._fail(batch, RowRejected(_reason(error)))
            return
        self.commits += 1
        self.writes += len(batch)
        _resolve(batch, None)

    def _with_reconnect(self, batch: list[_Write]) -> None:
        for attempt in range(len(self.delays) + 1):
            try:
                with self.engine.begin() as connection:
                    _apply(connection, batch)
                return
            except IntegrityError:
                raise
            except DBAPIError as error:
                if not error.connection_invalidated and not _is_transient(error):
                    raise
                if attempt == len(self.delays):
                    raise _Unreachable(error) from error
                delay = self.delays[attempt]
                log.warning("database unavailable (%s); retrying in %.1f s", type(error.orig).__name__, delay)
                time.sleep(delay)

    @staticmethod
    def _fail(batch: list[_Write], error: BaseException) -> None:
        _resolve(batch, error)


def _resolve(batch: list[_Write], error: BaseException | None) -> None:
    """Complete the batch's futures from the writer thread: one wake-up per event loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for write in batch:
        by_loop.setdefault(write.done.get_loop(), []).append(write.done)

    def complete(futures: list[asyncio.Future[None]]) -> None:
        for future in futures:
            if future.done():  # the awaiting task was cancelled
                continue
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)

    for loop, futures in by_loop.items():
        if not loop.is_closed():
            loop.call_soon_threadsafe(complete, futures)


def out_of_space(error: BaseException) -> bool:
    """Whether a write failed because the disk (or the database's quota) is full: SQLite's
    SQLITE_FULL, PostgreSQL's class 53 (insufficient resources), or the OS's ENOSPC. Such a
    write is retried by `resume`, never stored as the case's failure."""
    orig = getattr(error, "orig", None) or error
    if str(getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None) or "").startswith("53"):
        return True
    text = str(orig).lower()
    return any(
        marker in text
        for marker in ("database or disk is full", "no space left on device", "disk full", "disk quota")
    )


def _is_transient(error: DBAPIError) -> bool:
    text = str(error.orig).lower()
    return any(
        marker in text
        for marker in ("database is locked", "connection", "server closed", "terminating", "could not")
    )


_writers: dict[str, ResultWriter] = {}
_writers_lock = threading.Lock()


def get_writer(engine: Engine) -> ResultWriter:
    """One writer per database per process, shared by every chunk running there."""
    key = str(engine.url)
    with _writers_lock:
        writer = _writers.get(key)
        if writer is None or not writer._thread.is_alive():
            writer = _writers[key] = ResultWriter(engine)
        return writer


def close_writers() -> None:
    with _writers_lock:
        for writer in _writers.values():
            writer.close()
        _writers.clear()
