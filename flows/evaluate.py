"""The evaluation flow: load a suite, run its cases through the stages, store, report.

`evaluate` is what deployments run on workers and what `proctor run` runs when a Prefect API
is configured; its one parameter is a Pydantic model, so the Prefect UI shows it as a form.
The run itself is `proctor.run.engine`'s; here each of its steps is a Prefect task.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import Iterator
from typing import Any

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from proctor.execution.chunking import Chunk
from proctor.execution.runtime import RunSettings
from proctor.flows.dask_runner import dask_task_runner
from proctor.flows.gate import GateFailed, gate_state, run_evaluation
from proctor.models.notify import SlackSettings
from proctor.models.request import URL_WITHOUT_PASSWORD_PATTERN, EvaluationRequest, RunSummary, VariantSpec
from proctor.models.tables import EvalRun, RunStatus
from proctor.run.engine import RunIncomplete, SubmitChunk, evaluate_request
from proctor.run.preparation import DEFAULT_REPORT_ROOT, prepare, select_cases
from proctor.run.stopping import noting_sigterm
from proctor.storage.opening import holds_password
from proctor.tasks.notify import compare_with_baseline_task, notify_task, notify_unfinished_task
from proctor.tasks.persist import finalize_run
from proctor.tasks.report import publish_artifacts, render_reports_task, write_comparison_task
from proctor.tasks.stages import evaluate_chunk, run_chunk

# Re-exported: the flow's parameter and result, and the checks it runs, are part of its API.
__all__ = [
    "DEFAULT_REPORT_ROOT",
    "EvaluationRequest",
    "GateFailed",
    "RunIncomplete",
    "RunSummary",
    "VariantSpec",
    "evaluate",
    "prepare",
    "run_evaluation",
    "select_cases",
]


@flow(name="proctor-evaluate", log_prints=False)
async def evaluate(request: EvaluationRequest) -> RunSummary:
    """Evaluate one suite with one agent, or with each variant in turn and compare them.

    Every result is stored and reported either way. When the gate does not hold, the flow
    run ends Failed, its state named after why ("Failed cases", "Regressed", "Below pass
    rate"); in-process callers use `run_evaluation` to get the summary back. A run that
    could not complete (no suite, no database, any error) tells Slack, per the notify
    policy, before it fails.
    """
    try:
        refuse_literal_password(request.database_url)  # from a deployment or the API: stored by Prefect
        with noting_sigterm():  # Prefect raises its own signal for it; the CLI tells a stop apart
            summary = await evaluate_request(request, PrefectSteps())
    except Exception as error:
        logger = get_run_logger()
        logger.error("the run of %s could not complete: %s", request.suite, one_line(error))
        logger.debug("where it was raised", exc_info=error)  # PREFECT_LOGGING_LEVEL=DEBUG shows it
        if request.slack is not None and not getattr(error, "notified", False):
            await notify_unfinished_task(request, str(error))
        return did_not_complete(error)
    return await gate_state(summary)  # type: ignore[no-any-return]


def one_line(error: BaseException) -> str:
    """An error as one log line: a suite's several problems joined by '; '."""
    return "; ".join(line.strip() for line in str(error).splitlines() if line.strip()) or type(error).__name__


def did_not_complete(error: Exception) -> Any:
    """The flow run's Failed state for a run that could not complete, returned rather than
    raised: Prefect logs a raised exception's whole traceback into the flow run's logs
    ("Encountered exception during execution"), where the one line above says it all. The
    state carries the error, so an in-process caller (`run_evaluation`, the CLI) still gets
    it raised. A flow run with retries left raises it instead: Prefect retries only a raised
    error in the same process (a returned Failed state would be left AwaitingRetry)."""
    from prefect.context import FlowRunContext
    from prefect.states import Failed

    context = FlowRunContext.get()
    run = context.flow_run if context else None
    if run is not None and (run.run_count or 1) <= (run.empirical_policy.retries or 0):
        raise error
    return Failed(message=one_line(error), data=error)


def refuse_literal_password(url: str | None) -> None:
    """A flow run's parameters are stored by Prefect's API and shown in its UI: a database URL
    holding a password there is refused (the form refuses it at submit; this is for
    deployment parameters and API calls). `run_evaluation`, the CLI's way in, passes such a
    URL by reference instead, so it never arrives here."""
    if url and (re.match(URL_WITHOUT_PASSWORD_PATTERN, url) is None or holds_password(url.strip())):
        raise ValueError(
            "database_url holds a password, which Prefect stores with the flow run's parameters: "
            "name it instead, '${ENV_VAR}' or 'secret:BLOCK_NAME' (a Prefect Secret block holding the URL)"
        )


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
        self,
        database_url: str,
        run_id: uuid.UUID,
        baseline: uuid.UUID | None,
        significance: float,
        window: int,
    ) -> Any:
        return await compare_with_baseline_task(database_url, run_id, baseline, significance, window)

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
