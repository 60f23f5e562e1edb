"""Reports and Prefect artifacts for a finished run."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from prefect import task
from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact
from prefect.cache_policies import NONE
from sqlmodel import Session

from proctor.loaders import slug
from proctor.models.tables import EvalRun
from proctor.reporting import ReportFiles, case_rows, summary_markdown, write_reports
from proctor.reporting.comparison import Comparison, write_comparison
from proctor.storage import get_engine


class ReportWriteError(RuntimeError):
    """The reports could not be written; the run's results are stored and can be rendered again."""


def render_reports(*, database_url: str, run_id: uuid.UUID, directory: Path) -> ReportFiles:
    """Write the run's reports; if the folder cannot be written, record why on the run and
    raise `ReportWriteError` saying where the results are and how to render them again."""
    with Session(get_engine(database_url)) as session:
        run = session.get(EvalRun, run_id)
        assert run is not None, f"no run {run_id}"
        try:
            files = write_reports(session=session, run=run, directory=directory)
        except OSError as error:
            session.rollback()
            why = f"{error.strerror}: {error.filename}" if error.strerror and error.filename else str(error)
            message = f"reports could not be written to {directory} ({why})"
            run = session.get(EvalRun, run_id)
            assert run is not None
            run.error = f"{run.error}; {message}" if run.error else message
            session.add(run)
            session.commit()
            raise ReportWriteError(
                f"{message}. The results are stored (run {run_id}); "
                f"`proctor report {str(run_id)[:8]} --format md` renders them again"
            ) from None
        run.report_dir = str(directory)
        session.add(run)
        session.commit()
        return files


def write_comparison_files(*, database_url: str, run_ids: list[uuid.UUID], directory: Path) -> Comparison:
    with Session(get_engine(database_url)) as session:
        return write_comparison(session=session, run_ids=run_ids, directory=directory)


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


def artifact_contents(
    *, database_url: str, run_id: uuid.UUID, report_dir: str | None
) -> tuple[str, str, list[dict[str, Any]], str]:
    """The artifact key, the Markdown summary, the case table and a description."""
    with Session(get_engine(database_url)) as session:
        run = session.get(EvalRun, run_id)
        assert run is not None, f"no run {run_id}"
        key = f"proctor-{slug(run.suite_id)}"[:90]
        markdown = summary_markdown(session=session, run=run, report_dir=report_dir)
        return key, markdown, case_rows(session=session, run=run), f"Proctor run {run.id} of {run.suite_name}"


@task(name="publish-artifacts", cache_policy=NONE)
async def publish_artifacts(database_url: str, run_id: uuid.UUID, report_dir: str | None) -> None:
    """A Markdown summary and a case table, under keys stable per suite so the UI keeps history."""
    key, markdown, table, description = await asyncio.to_thread(
        artifact_contents, database_url=database_url, run_id=run_id, report_dir=report_dir
    )
    await acreate_markdown_artifact(key=key, markdown=markdown, description=description)
    await acreate_table_artifact(key=f"{key}-cases", table=table, description=f"{description}: cases")
