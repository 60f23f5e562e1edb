"""The steps after a run's cases, as plain functions: close the run, compare it with its
baseline, render its reports, tell Slack.

Prefect-free, so a run without a Prefect API (`proctor run` with none configured) does
exactly what a flow run does; `tasks/` wraps the same functions as Prefect tasks.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from sqlmodel import Session

from proctor.loaders import slug
from proctor.models.notify import SlackSettings
from proctor.models.request import EvaluationRequest
from proctor.models.tables import EvalRun, RunStatus
from proctor.notify.digest import build_digest, unfinished_digest
from proctor.notify.slack import NotificationResult, notify_slack
from proctor.reporting import ReportFiles, case_rows, summary_markdown, write_reports
from proctor.reporting.comparison import Comparison, write_comparison
from proctor.stats.regression import DEFAULT_SIGNIFICANCE, Regression, record_comparison
from proctor.storage import get_engine
from proctor.storage.history import DEFAULT_HISTORY_WINDOW
from proctor.storage.runs import complete_run, finish_run


class ReportWriteError(RuntimeError):
    """The reports could not be written; the run's results are stored and can be rendered again."""

    notified = False  # whether Slack was told about the run before this was raised


def close_run(
    *, database_url: str, run_id: uuid.UUID, status: RunStatus, error: str | None = None
) -> EvalRun:
    """Record the run's end and its tallies, counted from the stored case results."""
    with Session(get_engine(database_url), expire_on_commit=False) as session:
        run = finish_run(session=session, run_id=run_id, status=status, error=error)
        session.commit()
        return run


def mark_completed(*, database_url: str, run_id: uuid.UUID) -> EvalRun:
    """The run's last write: its reports, artifacts and notification are done (or recorded
    as failed on the run), so it is completed; until then a killed run is resumable."""
    with Session(get_engine(database_url), expire_on_commit=False) as session:
        run = complete_run(session=session, run_id=run_id)
        session.commit()
        return run


def compare_with_baseline(
    *,
    database_url: str,
    run_id: uuid.UUID,
    pinned_baseline: uuid.UUID | None = None,
    significance: float = DEFAULT_SIGNIFICANCE,
    window: int = DEFAULT_HISTORY_WINDOW,
) -> Regression | None:
    """The run judged against its suite's history (labels, evidence, verdict), stored with the run."""
    with Session(get_engine(database_url), expire_on_commit=False) as session:
        run = session.get(EvalRun, run_id)
        assert run is not None, f"no run {run_id}"
        regression = record_comparison(
            session=session,
            run=run,
            pinned_baseline=pinned_baseline,
            significance=significance,
            window=window,
        )
        session.commit()
        return regression


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
    """Variant comparison as Markdown, HTML and CSV; names the best variant."""
    with Session(get_engine(database_url)) as session:
        return write_comparison(session=session, run_ids=run_ids, directory=directory)


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
    """The flow run's page in the Prefect UI; a run without a flow run has none (and Prefect
    is not imported for it)."""
    if not flow_run_id:
        return None
    from prefect.settings import PREFECT_UI_URL

    base = PREFECT_UI_URL.value()
    return f"{base.rstrip('/')}/runs/flow-run/{flow_run_id}" if base else None


def send_notification(
    *,
    database_url: str,
    run_id: uuid.UUID,
    settings: SlackSettings,
    regression: Regression | None,
    report_root: Path,
) -> NotificationResult:
    """Post the run's summary (and its failures in a thread); the outcome is stored with the run."""
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


def notify_unfinished(request: EvaluationRequest, reason: str, flow_run_id: str | None) -> NotificationResult:
    """Tell Slack, per the notify policy, about a run that ended before it could be recorded
    (a missing suite, an unreachable database, any error), with the reason and, for a flow run,
    its link. Slack failing too is in the result, never raised."""
    assert request.slack is not None
    digest = unfinished_digest(
        suite=Path(request.suite).name,
        agent=request.agent,
        reason=reason,
        flow_run_link=flow_run_link(flow_run_id),
    )
    return notify_slack(request.slack, digest)


def log_notification(logger: Any, result: NotificationResult, *, unfinished: bool = False) -> None:
    """Say in the run's log (the flow run's, or the terminal's) how Slack answered: an error
    when it failed, since the results are stored and only the message is missing."""
    what = "Slack notification of the failed run" if unfinished else "Slack notification"
    if result.status in ("failed", "partial"):
        tail = " too" if unfinished else " (results and reports are stored)"
        logger.error("%s %s%s: %s", what, result.status, tail, result.error)
    else:
        logger.info("%s: %s", what, result.status)
