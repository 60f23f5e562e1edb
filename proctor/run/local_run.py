"""A run without Prefect: the flow's steps called in this process, Prefect never imported.

`proctor run` takes this path when no Prefect API is configured, instead of starting a
temporary Prefect server (7-14 s on a quiet 2-core machine, and on a busy one it may not
start at all). The run is stored, reported and notified exactly as a flow run is (the same
`proctor.run.engine` code); only the Prefect UI does not see it: no flow run, task runs or
artifacts, and `flow_run_id` is empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from proctor.execution import pipeline
from proctor.execution.chunking import Chunk
from proctor.execution.runtime import RunSettings, runtime_for
from proctor.models.notify import SlackSettings
from proctor.models.request import EvaluationRequest, RunSummary
from proctor.models.tables import EvalRun, RunStatus
from proctor.run.dask_chunks import run_chunk_on_worker
from proctor.run.engine import SubmitChunk, evaluate_request
from proctor.run.steps import (
    close_run,
    compare_with_baseline,
    log_notification,
    notify_unfinished,
    render_reports,
    send_notification,
    write_comparison_files,
)

log = logging.getLogger("proctor.run")


class LocalSteps:
    """Each step of a run as a plain call (blocking database work on a thread)."""

    def __init__(self) -> None:
        self.logger = log
        self.flow_run_id: str | None = None

    async def run_chunk(self, chunk: Chunk, settings: RunSettings) -> None:
        await pipeline.run_chunk(chunk.works, runtime_for(settings))
        chunk.works = []

    @contextlib.contextmanager
    def dask(self, address: str) -> Iterator[SubmitChunk]:
        with dask_client(address) as client:

            async def submit(chunk: Chunk, settings: RunSettings) -> None:
                future = client.submit(run_chunk_on_worker, chunk, settings, pure=False)
                await asyncio.to_thread(future.result)

            yield submit

    async def finalize_run(
        self, database_url: str, run_id: uuid.UUID, status: RunStatus, error: str | None
    ) -> EvalRun:
        return await asyncio.to_thread(
            close_run, database_url=database_url, run_id=run_id, status=status, error=error
        )

    async def compare_with_baseline(
        self,
        database_url: str,
        run_id: uuid.UUID,
        baseline: uuid.UUID | None,
        significance: float,
        window: int,
    ) -> Any:
        return await asyncio.to_thread(
            compare_with_baseline,
            database_url=database_url,
            run_id=run_id,
            pinned_baseline=baseline,
            significance=significance,
            window=window,
        )

    async def render_reports(self, database_url: str, run_id: uuid.UUID, directory: str) -> None:
        await asyncio.to_thread(
            render_reports, database_url=database_url, run_id=run_id, directory=Path(directory)
        )

    async def publish_artifacts(self, database_url: str, run_id: uuid.UUID, report_dir: str | None) -> None:
        """Artifacts live in Prefect's API; without one there is nowhere to publish them."""

    async def notify(
        self, database_url: str, run_id: uuid.UUID, slack: SlackSettings, regression: Any, report_root: str
    ) -> Any:
        result = await asyncio.to_thread(
            send_notification,
            database_url=database_url,
            run_id=run_id,
            settings=slack,
            regression=regression,
            report_root=Path(report_root),
        )
        log_notification(log, result)
        return result

    async def write_comparison(self, database_url: str, run_ids: list[uuid.UUID], directory: str) -> Any:
        return await asyncio.to_thread(
            write_comparison_files, database_url=database_url, run_ids=run_ids, directory=Path(directory)
        )


async def evaluate_in_process(request: EvaluationRequest) -> RunSummary:
    """What the `proctor-evaluate` flow does, without Prefect: same rows, reports, Slack, and
    a run that cannot complete tells Slack why, per its notify policy, as the flow does."""
    try:
        return await evaluate_request(request, LocalSteps())
    except Exception as error:
        log.error("the run did not complete: %s", error)
        if request.slack is not None and not getattr(error, "notified", False):
            result = await asyncio.to_thread(notify_unfinished, request, str(error), None)
            log_notification(log, result, unfinished=True)
        raise


@contextlib.contextmanager
def dask_client(address: str) -> Iterator[Any]:
    """A Dask client of a local cluster of worker processes (`local` / `local:N`), or of the
    scheduler at `address`."""
    from distributed import Client, LocalCluster

    if address == "local" or address.startswith("local:"):
        workers = int(address.partition(":")[2] or 2)
        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            client.wait_for_workers(workers, timeout=300)  # every worker up before chunks go out
            yield client
    else:
        with Client(address) as client:
            yield client
