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

from proctor.models.notify import SlackSettings
from proctor.models.request import EvaluationRequest
from proctor.notify.slack import NotificationResult
from proctor.run.steps import (
    compare_with_baseline,
    flow_run_link,
    log_notification,
    notify_unfinished,
    report_link,
    send_notification,
)
from proctor.stats.regression import DEFAULT_SIGNIFICANCE, Regression
from proctor.storage.history import DEFAULT_HISTORY_WINDOW

__all__ = [
    "compare_with_baseline",
    "compare_with_baseline_task",
    "flow_run_link",
    "notify_task",
    "notify_unfinished_task",
    "report_link",
    "send_notification",
]


@task(name="compare-baseline", cache_policy=NONE)
async def compare_with_baseline_task(
    database_url: str,
    run_id: uuid.UUID,
    pinned_baseline: uuid.UUID | None = None,
    significance: float = DEFAULT_SIGNIFICANCE,
    window: int = DEFAULT_HISTORY_WINDOW,
) -> Regression | None:
    """The run judged against its suite's history (labels, evidence, verdict), stored with the run."""
    return await asyncio.to_thread(
        compare_with_baseline,
        database_url=database_url,
        run_id=run_id,
        pinned_baseline=pinned_baseline,
        significance=significance,
        window=window,
    )


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
    log_notification(get_run_logger(), result)
    return result


@task(name="notify-slack", cache_policy=NONE)
async def notify_unfinished_task(request: EvaluationRequest, reason: str) -> NotificationResult:
    """Tell Slack, per the notify policy, about a run that ended before it could be recorded
    (a missing suite, an unreachable database, any error in the flow), with the reason and the
    flow run's link. If Slack fails too, the flow run's logs say so; nothing is raised."""
    from prefect.runtime import flow_run

    result = await asyncio.to_thread(
        notify_unfinished, request, reason, str(flow_run.id) if flow_run.id else None
    )
    log_notification(get_run_logger(), result, unfinished=True)
    return result
