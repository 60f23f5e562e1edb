"""Run bookkeeping in the results database: closing a run with its tallies."""

from __future__ import annotations

import asyncio
import uuid

from prefect import task
from prefect.cache_policies import NONE

from proctor.models.tables import EvalRun, RunStatus
from proctor.run.steps import close_run

__all__ = ["close_run", "finalize_run"]


@task(name="finalize-run", cache_policy=NONE)
async def finalize_run(
    database_url: str, run_id: uuid.UUID, status: RunStatus, error: str | None = None
) -> EvalRun:
    """Record the run's end and its tallies, counted from the stored case results.

    Async, with the database work on a thread, so it shares the flow's Prefect client: a
    sync task in an async flow builds a new client (and TLS context) per call.
    """
    return await asyncio.to_thread(
        close_run, database_url=database_url, run_id=run_id, status=status, error=error
    )
