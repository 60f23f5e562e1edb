"""Progress of cases stored by other processes (Dask workers), read back from the database.

A worker's `case_finished` events stay in the worker; the rows it writes do not. A thread
counts the run's finished rows about once a second and publishes what was added since the
watch began, so `proctor run --dask-address …` shows a moving progress bar too.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Iterator

from sqlalchemy import case as sql_case
from sqlalchemy import func
from sqlmodel import Session, col, select

from proctor.execution import progress
from proctor.models.outcome import FINAL_STATES
from proctor.models.tables import CaseResultRow
from proctor.storage import get_engine

log = logging.getLogger("proctor.execution.progress")
POLL_S = 1.0


def stored_counts(database_url: str, run_id: uuid.UUID) -> tuple[int, int]:
    """(finished case runs, of which passed) stored for the run so far."""
    with Session(get_engine(database_url)) as session:
        done, passed = session.exec(
            select(
                func.count(),
                func.sum(sql_case((col(CaseResultRow.passed).is_(True), 1), else_=0)),
            ).where(
                CaseResultRow.run_id == run_id,
                col(CaseResultRow.state).in_([state.value for state in FINAL_STATES]),
            )
        ).one()
    return int(done or 0), int(passed or 0)


@contextlib.contextmanager
def watch_stored_cases(database_url: str, run_id: uuid.UUID, interval_s: float = POLL_S) -> Iterator[None]:
    """Publish `cases_stored` (done, passed, failed since the watch began) while the block runs."""
    stop = threading.Event()
    try:
        start_done, start_passed = stored_counts(database_url, run_id)
    except Exception as error:  # progress is a courtesy: never fail a run for it
        log.debug("progress not watched: %s", error)
        yield
        return

    def poll() -> None:
        last = (start_done, start_passed)
        while True:
            stopping = stop.wait(interval_s)
            try:
                counts = stored_counts(database_url, run_id)
            except Exception as error:
                log.debug("progress not read: %s", error)
                counts = last
            if counts != last:
                last = counts
                done, passed = counts[0] - start_done, counts[1] - start_passed
                progress.publish(
                    "cases_stored", run_id=run_id, done=done, passed=passed, failed=done - passed
                )
            if stopping:  # the last count is published too
                return

    watcher = threading.Thread(target=poll, name="proctor-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join(timeout=5)
