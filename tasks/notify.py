"""After a run: compare it with its baseline and tell Slack, each stored with the run.

Both steps come after the results and reports are safe; neither can lose them. A failed
notification is recorded on the run (and logged), never raised.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NONE
from sqlmodel import Session

from proctor.models.notify import SlackSettings
from proctor.models.tables import EvalRun
from proctor.notify.digest import build_digest
from proctor.notify.slack import NotificationResult, notify_slack
from proctor.regression import DEFAULT_SIGNIFICANCE, Regression, record_comparison
from proctor.storage import get_engine


def compare_with_baseline(
    *,
    database_url: str,
    run_id: uuid.UUID,
    pinned_baseline: uuid.UUID | None = None,
    significance: float = DEFAULT_SIGNIFICANCE,
) -> Regression | None:
    with Session(get_engine(database_url), expire_on_commit=False) as session:
        run = session.get(EvalRun, run_id)
        assert run is not None, f"no run {run_id}"
        regression = record_comparison(
            session=session, run=run, pinned_baseline=pinned_baseline, significance=significance
        )
        session.commit()
        return regression


@task(name="compare-baseline", cache_policy=NONE)
async def compare_with_baseline_task(
    database_url: str,
    run_id: uuid.UUID,
    pinned_baseline: uuid.UUID | None = None,
    significance: float = DEFAULT_SIGNIFICANCE,
) -> Regression | None:
    """Newly failing and passing cases, metric changes and a significance test, stored with the run."""
    return await asyncio.to_thread(
        compare_with_baseline,
        database_url=database_url,
        run_id=run_id,
        pinned_baseline=pinned_baseline,
        significance=significance,
    )


def report_link(settings: SlackSettings, report_dir: str | None, report_root: Path) -> str | None:
    """Where a reader finds the HTML report: under `report_url` when reports are served, else
    the file's path on the machine that ran the flow."""
    if not report_dir:
        return None
    directory = Path(report_dir).resolve()
    if settings.report_url:
        try:
            relative = directory.relative_to(report_root.resolve())
        except ValueError:
            relative = Path(directory.name)
        return f"{settings.report_url.rstrip('/')}/{relative.as_posix()}/report.html"
    return (directory / "report.html").as_uri()


def flow_run_link(flow_run_id: str | None) -> str | None:
    from prefect.settings import PREFECT_UI_URL

    base = PREFECT_UI_URL.value()
    return f"{base.rstrip('/')}/runs/flow-run/{flow_run_id}" if base and flow_run_id else None


def send_notification(
    *,
    database_url: str,
    run_id: uuid.UUID,
    settings: SlackSettings,
    regression: Regression | None,
    report_root: Path,
) -> NotificationResult:
    with Session(get_engine(database_url), expire_on_commit=False) as session:
        run = session.get(EvalRun, run_id)
        assert run is not None, f"no run {run_id}"
        digest = build_digest(
            session=session,
            run=run,
            regression=regression,
            report_link=report_link(settings, run.report_dir, report_root),
            flow_run_link=flow_run_link(run.flow_run_id),
            max_failures=settings.max_failures,
        )
    result = notify_slack(settings, digest)
    with Session(get_engine(database_url)) as session:
        run = session.get(EvalRun, run_id)
        assert run is not None
        run.notification = result.to_dict()
        session.add(run)
        session.commit()
    return result


@task(name="notify-slack", cache_policy=NONE)
async def notify_task(
    database_url: str,
    run_id: uuid.UUID,
    settings: SlackSettings,
    regression: Regression | None,
    report_root: str,
) -> NotificationResult:
    """Post the run's summary (and its failures in a thread); the outcome is stored with the run."""
    result = await asyncio.to_thread(
        send_notification,
        database_url=database_url,
        run_id=run_id,
        settings=settings,
        regression=regression,
        report_root=Path(report_root),
    )
    logger = get_run_logger()
    if result.status in ("failed", "partial"):
        logger.error(
            "Slack notification %s: %s (results and reports are stored)", result.status, result.error
        )
    else:
        logger.info("Slack notification %s", result.status)
    return result
