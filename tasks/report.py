"""Reports and Prefect artifacts for a finished run."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from prefect import task
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact
from prefect.cache_policies import NONE

from proctor.reporting import ReportFiles
from proctor.reporting.comparison import Comparison
from proctor.run.steps import (
    ReportWriteError,
    artifact_contents,
    render_reports,
    write_comparison_files,
)

__all__ = [
    "ReportWriteError",
    "artifact_contents",
    "publish_artifacts",
    "render_reports",
    "render_reports_task",
    "write_comparison_files",
    "write_comparison_task",
]


@task(name="compare-variants", cache_policy=NONE)
async def write_comparison_task(database_url: str, run_ids: list[uuid.UUID], directory: str) -> Comparison:
    """Variant comparison as Markdown, HTML and CSV; names the best variant."""
    return await asyncio.to_thread(
        write_comparison_files, database_url=database_url, run_ids=run_ids, directory=Path(directory)
    )


@task(name="render-reports", cache_policy=NONE)
async def render_reports_task(database_url: str, run_id: uuid.UUID, directory: str) -> ReportFiles:
    return await asyncio.to_thread(
        render_reports, database_url=database_url, run_id=run_id, directory=Path(directory)
    )


@task(name="publish-artifacts", cache_policy=NONE)
async def publish_artifacts(database_url: str, run_id: uuid.UUID, report_dir: str | None) -> None:
    """A Markdown summary and a case table, under keys stable per suite so the UI keeps history."""
    key, markdown, table, description = await asyncio.to_thread(
        artifact_contents, database_url=database_url, run_id=run_id, report_dir=report_dir
    )
    await asyncio.gather(  # two requests to the API at once: one round trip of waiting, not two
        acreate_markdown_artifact(key=key, markdown=markdown, description=description),
        acreate_table_artifact(key=f"{key}-cases", table=table, description=f"{description}: cases"),
    )
