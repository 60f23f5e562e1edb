"""The evaluation flow: load a suite, run its cases through the stages, store, report.

`evaluate` is what deployments run on workers and what `proctor run` runs when a Prefect API
is configured; its one parameter is a Pydantic model, so the Prefect UI shows it as a form.
The run itself is `proctor.engine`'s; here each of its steps is a Prefect task.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from proctor.chunking import Chunk
from proctor.engine import RunIncomplete, SubmitChunk, evaluate_request
from proctor.flows.dask_runner import dask_task_runner
from proctor.models.notify import SlackSettings
from proctor.models.request import EvaluationRequest, RunSummary, VariantSpec
from proctor.models.tables import EvalRun, RunStatus
from proctor.preparation import DEFAULT_REPORT_ROOT, prepare, select_cases
from proctor.runtime import RunSettings
from proctor.tasks.notify import compare_with_baseline_task, notify_task
from proctor.tasks.persist import finalize_run
from proctor.tasks.report import publish_artifacts, render_reports_task, write_comparison_task
from proctor.tasks.stages import evaluate_chunk, run_chunk

# Re-exported: the flow's parameter and result, and the checks it runs, are part of its API.
__all__ = [
    "DEFAULT_REPORT_ROOT",
    "EvaluationRequest",
    "RunIncomplete",
    "RunSummary",
    "VariantSpec",
    "evaluate",
    "prepare",
    "select_cases",
]


@flow(name="proctor-evaluate", log_prints=False)
async def evaluate(request: EvaluationRequest) -> RunSummary:
    """Evaluate one suite with one agent, or with each variant in turn and compare them.

    The flow run ends Completed either way (every result is stored and reported); when the
    gate does not hold, its state is named after why ("Failed cases", "Regressed",
    "Below pass rate"), so the Prefect UI shows it at a glance.
    """
    return gate_state(await evaluate_request(request, PrefectSteps()))  # type: ignore[return-value]


def gate_state(summary: RunSummary) -> Any:
    """The summary itself when the gate holds; else a Completed state, named, carrying it.

    Not on a retried flow run: Prefect 3.8 then re-raises the first attempt's exception to
    the caller when the flow returns a state, so a retry that succeeds ends plain Completed.
    """
    if summary.all_passed or (flow_run.run_count or 1) > 1:
        return summary
    from prefect.states import Completed

    runs = summary.variants or [summary]
    if summary.regressed:
        name = "Regressed"
    elif any(run.min_pass_rate is not None for run in runs):
        name = "Below pass rate"
    else:
        name = "Failed cases"
    details = "; ".join(
        f"{run.variant + ': ' if run.variant else ''}{run.passed}/{run.total} passed, {run.errored} errored"
        + (", regression against the baseline" if (run.regression or {}).get("regressed") else "")
        for run in runs
    )
    return Completed(name=name, message=details, data=summary)


class PrefectSteps:
    """Each step of a run as a Prefect task of the current flow run."""

    def __init__(self) -> None:
        self.logger = get_run_logger()
        self.flow_run_id = str(flow_run.id) if flow_run.id else None

    async def run_chunk(self, chunk: Chunk, settings: RunSettings) -> None:
        await run_chunk(chunk, settings)

    @contextlib.contextmanager
    def dask(self, address: str) -> Iterator[SubmitChunk]:
        with dask_task_runner(address) as runner:  # on a Dask worker, which stores the chunk itself
            if address.startswith("local"):  # every worker of a local cluster up before chunks go out
                runner.client.wait_for_workers(int(address.partition(":")[2] or 2), timeout=300)

            async def submit(chunk: Chunk, settings: RunSettings) -> None:
                future = runner.submit(evaluate_chunk, parameters={"chunk": chunk, "settings": settings})
                await asyncio.to_thread(future.result)

            yield submit

    async def finalize_run(
        self, database_url: str, run_id: uuid.UUID, status: RunStatus, error: str | None
    ) -> EvalRun:
        return await finalize_run(database_url, run_id, status, error)

    async def compare_with_baseline(
        self, database_url: str, run_id: uuid.UUID, baseline: uuid.UUID | None, significance: float
    ) -> Any:
        return await compare_with_baseline_task(database_url, run_id, baseline, significance)

    async def render_reports(self, database_url: str, run_id: uuid.UUID, directory: str) -> None:
        await render_reports_task(database_url, run_id, directory)

    async def publish_artifacts(self, database_url: str, run_id: uuid.UUID, report_dir: str | None) -> None:
        await publish_artifacts(database_url, run_id, report_dir)

    async def notify(
        self, database_url: str, run_id: uuid.UUID, slack: SlackSettings, regression: Any, report_root: str
    ) -> Any:
        return await notify_task(database_url, run_id, slack, regression, report_root)

    async def write_comparison(self, database_url: str, run_ids: list[uuid.UUID], directory: str) -> Any:
        return await write_comparison_task(database_url, run_ids, directory)
