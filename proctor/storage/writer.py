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

from sqlalchemy import delete
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError

from models.case import Case
from models.outcome import CaseOutcome
from models.tables import CaseResultRow, MetricResultRow
from proctor.storage.db import redact_url
from proctor.storage.rows import case_row, metric_rows

log = logging.getLogger("proctor.storage")

CASE_TABLE = CaseResultRow.__table__  # type: ignore[attr-defined]
METRIC_TABLE = MetricResultRow.__table__  # type: ignore[attr-defined]

# Waits between attempts when the database is unreachable (about 30 s in all).
RECONNECT_DELAYS_S: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)


class DatabaseWriteError(RuntimeError):
    """Results could not be written after every retry."""


@dataclass
class _Write:
    """One case's rows: its case row (inserted, or replacing its checkpoint) and metric rows.

    `done` is an asyncio future of the caller's loop; the writer thread resolves a whole
    batch with one thread-safe call per loop (a `concurrent.futures.Future` per write costs
    a lock and a condition each, which showed in profiles).
    """

    case_row: dict[str, Any]
    metric_rows: list[dict[str, Any]]
    replaces: bool
    done: asyncio.Future[None]


def _apply(connection: Connection, batch: list[_Write]) -> None:
    """Write a batch in four statements, whatever its size.

    A later write of the same case supersedes an earlier one in the batch; a write that
    replaces a checkpoint deletes it first, so the row is never stored twice.
    """
    latest: dict[Any, _Write] = {}
    replaced: set[Any] = set()
    for write in batch:
        row_id = write.case_row["id"]
        if row_id in latest and not write.replaces:
            raise IntegrityError("duplicate case in one run", None, ValueError(write.case_row["case_id"]))
        if write.replaces:
            replaced.add(row_id)
        latest[row_id] = write
    if replaced:
        connection.execute(delete(METRIC_TABLE).where(METRIC_TABLE.c.case_result_id.in_(replaced)))
        connection.execute(delete(CASE_TABLE).where(CASE_TABLE.c.id.in_(replaced)))
    connection.execute(CASE_TABLE.insert(), [write.case_row for write in latest.values()])
    metric_rows = [row for write in latest.values() for row in write.metric_rows]
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

    # -- what callers use -------------------------------------------------------------
    async def save(self, run_id: uuid.UUID, case: Case, outcome: CaseOutcome, position: int) -> None:
        """Persist a case's progress; the first save inserts its row, later ones replace it.

        Returns once the write is committed: what `save` returned for is durable.
        """
        write = _Write(
            case_row=case_row(run_id, case, outcome, position),
            metric_rows=metric_rows(run_id, case, outcome) if outcome.state.is_final else [],
            replaces=outcome.checkpointed,
            done=asyncio.get_running_loop().create_future(),
        )
        self._queue.put(write)
        await write.done
        outcome.checkpointed = True

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
        except IntegrityError:
            if len(batch) == 1:
                self._fail(batch, DatabaseWriteError("result rejected by the database (already stored?)"))
                return
            for write in batch:  # isolate the offending write so the others are kept
                self._commit([write])
            return
        except DBAPIError as error:
            self._fail(
                batch,
                DatabaseWriteError(
                    f"could not write results to {redact_url(str(self.engine.url))} after "
                    f"{len(RECONNECT_DELAYS_S) + 1} attempts: {error.orig!r}"
                ),
            )
            return
        except Exception as error:  # a bug in a row; fail only these writes
            self._fail(batch, error)
            return
        self.commits += 1
        self.writes += len(batch)
        _resolve(batch, None)

    def _with_reconnect(self, batch: list[_Write]) -> None:
        for attempt in range(len(RECONNECT_DELAYS_S) + 1):
            try:
                with self.engine.begin() as connection:
                    _apply(connection, batch)
                return
            except IntegrityError:
                raise
            except DBAPIError as error:
                if not error.connection_invalidated and not _is_transient(error):
                    raise
                if attempt == len(RECONNECT_DELAYS_S):
                    raise
                delay = RECONNECT_DELAYS_S[attempt]
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
