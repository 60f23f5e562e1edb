"""A run from start to finish, whoever orchestrates it: load the suite, run its cases in
chunks, store every result, close the run, compare, report, notify.

The same code serves a Prefect flow run (`proctor.flows.evaluate`, each step a Prefect task)
and a run without Prefect (`proctor.run.local_run`, each step a plain call): an `Orchestrator`
says how a step is carried out, never what it does, so both store the same rows, write the
same reports, send the same Slack message and end the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from sqlmodel import Session

from proctor import __version__
from proctor.calls import adaptive, quota
from proctor.costs import agent_model_of
from proctor.execution import progress
from proctor.execution.chunking import Chunk, auto_chunk_size, chunked
from proctor.execution.pipeline import AgentCheckpoint, CaseWork
from proctor.execution.runtime import RunSettings, close_runtime
from proctor.loaders import Problem, SuiteError, slug
from proctor.models.case import Case, Suite
from proctor.models.notify import SlackSettings
from proctor.models.outcome import AgentTurn
from proctor.models.request import EvaluationRequest, RunSummary, VariantSpec
from proctor.models.tables import EvalRun, RunStatus
from proctor.reporting.reports import environment_info
from proctor.run.collection import fewer_collections
from proctor.run.preparation import DEFAULT_REPORT_ROOT, default_report_dir, prepare
from proctor.run.progress_watch import watch_stored_cases
from proctor.run.steps import ReportWriteError, mark_completed
from proctor.run.stopping import stop_signal_in
from proctor.run.suite_fingerprint import differences, fingerprint
from proctor.storage import default_database_url, get_engine, redact_url
from proctor.storage.db import check_same_file, file_identity
from proctor.storage.lease import Heartbeat, claim, hold, new_owner
from proctor.storage.runs import (
    ResumePoint,
    create_run,
    forget_refused_by_quota,
    refused_by_quota,
    reopen_run,
    resume_point,
    run_of_flow_run,
)
from proctor.user_code import restoring_process_state

SubmitChunk = Callable[[Chunk, RunSettings], Awaitable[None]]


class Orchestrator(Protocol):
    """How each step of a run is carried out: as a Prefect task, or as a plain call."""

    logger: Any
    flow_run_id: str | None

    async def run_chunk(self, chunk: Chunk, settings: RunSettings) -> None: ...

    def dask(self, address: str) -> contextlib.AbstractContextManager[SubmitChunk]: ...

    async def finalize_run(
        self, database_url: str, run_id: uuid.UUID, status: RunStatus, error: str | None
    ) -> EvalRun: ...

    async def compare_with_baseline(
        self,
        database_url: str,
        run_id: uuid.UUID,
        baseline: uuid.UUID | None,
        significance: float,
        window: int,
    ) -> Any: ...

    async def render_reports(self, database_url: str, run_id: uuid.UUID, directory: str) -> None: ...

    async def publish_artifacts(
        self, database_url: str, run_id: uuid.UUID, report_dir: str | None
    ) -> None: ...

    async def notify(
        self, database_url: str, run_id: uuid.UUID, slack: SlackSettings, regression: Any, report_root: str
    ) -> Any: ...

    async def write_comparison(self, database_url: str, run_ids: list[uuid.UUID], directory: str) -> Any: ...


class RunIncomplete(RuntimeError):
    """A run stopped before every case was done; what was finished is stored."""

    notified = False  # whether Slack was told about the run before this was raised

    def __init__(self, run_id: uuid.UUID, reason: str) -> None:
        super().__init__(
            f"run {run_id} did not finish: {reason}. Its finished cases are stored; "
            f"`proctor resume {str(run_id)[:8]}` runs the rest"
        )
        self.run_id = run_id


def chunk_label(offset: int, chunk: list[tuple[int, Case, int]]) -> str:
    """A chunk's name in the Prefect UI: its case (and repeat) when alone, else its range."""
    if len(chunk) == 1:
        _, case, attempt = chunk[0]
        return case.case_id if attempt == 0 else f"{case.case_id} (repeat {attempt + 1})"
    return f"cases {offset + 1}-{offset + len(chunk)}"


async def evaluate_request(request: EvaluationRequest, steps: Orchestrator) -> RunSummary:
    """One suite with one agent, or with each variant in turn, then the variants compared."""
    with fewer_collections():
        return await _evaluate_request(request, steps)


async def _evaluate_request(request: EvaluationRequest, steps: Orchestrator) -> RunSummary:
    suite, cases, agent = prepare(request)
    for warning in suite.warnings:
        steps.logger.warning(warning)
    if request.resume_run_id is not None or not request.variants:  # one run (a resumed one: its own)
        variant = resumed_variant(request) if request.resume_run_id is not None else None
        report_dir = Path(request.report_dir) if request.report_dir else None
        return await run_suite(
            steps, request, suite, cases, variant.agent if variant else agent, variant, report_dir
        )
    base = Path(request.report_dir) if request.report_dir else default_report_dir(suite, uuid.uuid4()).parent
    folders = variant_folders([variant.name for variant in request.variants])
    runs = [
        await run_suite(steps, request, suite, cases, variant.agent, variant, base / folders[variant.name])
        for variant in request.variants
    ]
    comparison = await steps.write_comparison(
        request.database_url or default_database_url(), [run.run_id for run in runs], str(base)
    )
    best = next(run for run in runs if run.variant == comparison.best)
    steps.logger.info("variants compared: best is %s", comparison.best)
    return best.model_copy(
        update={"variants": runs, "best_variant": comparison.best, "comparison_dir": str(base)}
    )


def variant_folders(names: list[str]) -> dict[str, str]:
    """Each variant's report folder: its name as a file name (`slug`). Names that would share
    one ('a/b' and 'a-b'; two names in a script with no letter `slug` keeps, both 'suite') each
    get a digest of the name after it: one variant's reports never overwrite another's."""
    slugs = {name: slug(name) for name in names}
    shared = Counter(slugs.values())
    folders = {
        name: folder if shared[folder] == 1 else f"{folder}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"
        for name, folder in slugs.items()
    }
    if len(set(folders.values())) < len(folders):  # a name spelt like another's folder and digest
        folders = {name: f"{folder}-{number + 1}" for number, (name, folder) in enumerate(folders.items())}
    return folders


def resumed_variant(request: EvaluationRequest) -> VariantSpec | None:
    """The variant the resumed run belongs to (a run of several variants resumes one of them)."""
    with Session(get_engine(request.database_url or default_database_url())) as session:
        run = session.get(EvalRun, request.resume_run_id)
    if run is None:
        raise SuiteError(
            [Problem(request.suite, "resume_run_id", f"no run {request.resume_run_id} in this database")]
        )
    if run.variant is None:
        return None
    for variant in request.variants:
        if variant.name == run.variant:
            return variant
    raise SuiteError(
        [Problem(request.suite, "variants", f"the run's variant {run.variant!r} is not in the request")]
    )


def _start_or_resume(
    request: EvaluationRequest,
    database_url: str,
    variant: VariantSpec | None,
    new_run: EvalRun,
    flow_run_id: str | None,
) -> tuple[uuid.UUID, ResumePoint | None, str]:
    """A new run, or the stopped one being resumed: the one named by `resume_run_id`, or the
    one this same Prefect flow run started before it was retried (a retry resumes). Either
    way the run is this process's (its lease taken, `RunBusy` if another live process holds
    it); returns the run's id, where it stopped, and the owner name holding it."""
    owner = new_owner()
    engine = get_engine(database_url)
    with Session(engine, expire_on_commit=False) as session:
        stopped = None
        if request.resume_run_id is not None:
            stopped = session.get(EvalRun, request.resume_run_id)
        elif flow_run_id:
            stopped = run_of_flow_run(
                session=session, flow_run_id=flow_run_id, variant=variant.name if variant else None
            )
        if stopped is None:
            new_run.owner, new_run.heartbeat_at = owner, datetime.now(UTC)
            create_run(session=session, run=new_run)
            session.commit()
            hold(owner)
            return new_run.id, None, owner
        if stopped.status is RunStatus.COMPLETED and not refused_by_quota(session=session, run_id=stopped.id):
            raise SuiteError([Problem(request.suite, "resume_run_id", f"run {stopped.id} already completed")])
        changed = differences(
            (stopped.config or {}).get("suite_fingerprint"), new_run.config["suite_fingerprint"]
        )
        if changed is not None:  # refused: its finished cases were scored against another version
            raise SuiteError(
                [
                    Problem(
                        request.suite,
                        "resume_run_id",
                        f"the suite changed since run {stopped.id} started ({changed}); resuming would "
                        "mix two versions of it, so nothing was run. Restore the suite as it was to "
                        "finish that run, or start a new run",
                    )
                ]
            )
        stopped_id = stopped.id
    claim(engine, stopped_id, owner)  # its own transaction, before this session writes
    with Session(engine, expire_on_commit=False) as session:
        reopen_run(session=session, run_id=stopped_id, flow_run_id=flow_run_id)
        forget_refused_by_quota(session=session, run_id=stopped_id)  # run again, stored afresh
        point = resume_point(session=session, run_id=stopped_id)
        session.commit()
        return stopped_id, point, owner


def _checkpoints(resumed: ResumePoint) -> dict[tuple[str, int], AgentCheckpoint]:
    return {
        key: AgentCheckpoint(
            turns=[AgentTurn.model_validate(turn) for turn in row.turns],
            agent_ms=row.agent_ms,
            started_at=row.started_at,
        )
        for key, row in resumed.checkpoints.items()
    }


async def run_suite(
    steps: Orchestrator,
    request: EvaluationRequest,
    suite: Suite,
    cases: list[Case],
    agent: str,
    variant: VariantSpec | None,
    report_dir: Path | None,
) -> RunSummary:
    """One run: one agent over the selected cases; every case is stored as soon as it is done."""
    database_url = request.database_url or default_database_url()
    run_id, resumed, owner = _start_or_resume(
        request,
        database_url,
        variant,
        EvalRun(
            suite_id=suite.suite_id,
            suite_name=suite.name,
            suite_path=suite.path,
            source_format=suite.source_format,
            agent=variant.agent if variant else request.agent or suite.agent or agent,
            agent_model=agent_model_of(agent),
            variant=variant.name if variant else None,
            config=request.for_storage()
            | {
                "metrics": sorted({spec.name for case in cases for spec in case.metrics}),
                "suite_fingerprint": fingerprint(cases),
            },
            environment=environment_info(),
            flow_run_id=steps.flow_run_id,
            proctor_version=__version__,
            planned_cases=len(cases) * request.repeat,
            repeat=request.repeat,
        ),
        steps.flow_run_id,
    )
    progress.publish("run_started", run_id=run_id)
    identity = file_identity(database_url)  # a SQLite file deleted or replaced mid-run is told
    try:
        with Heartbeat(get_engine(database_url), run_id, owner):  # the run is ours until it returns
            summary = await _run_owned(
                steps, request, suite, cases, agent, variant, report_dir, run_id, resumed
            )
    except Exception:
        check_same_file(database_url, identity, run_id)  # else the error would claim "stored"
        raise
    check_same_file(database_url, identity, run_id)
    return summary


async def _run_owned(
    steps: Orchestrator,
    request: EvaluationRequest,
    suite: Suite,
    cases: list[Case],
    agent: str,
    variant: VariantSpec | None,
    report_dir: Path | None,
    run_id: uuid.UUID,
    resumed: ResumePoint | None,
) -> RunSummary:
    logger, database_url = steps.logger, request.database_url or default_database_url()
    settings = RunSettings(
        run_id=run_id,
        database_url=database_url,
        agent=agent,
        suite_dir=str(Path(suite.path).resolve().parent),  # absolute: an agent may os.chdir
        concurrency=request.concurrency,
        concurrency_auto="concurrency" not in request.model_fields_set,
        agent_timeout_s=request.agent_timeout_s,
        judge_cache=request.judge_cache,
        model_call_limit=request.model_call_limit,
        case_timeout_s=request.case_timeout_s,
        rate_limits=request.rate_limits,
        quota_patience_s=request.quota_patience_s,
    )
    # Every case once, then again for each repeat: repeats of a case spread over the run.
    planned = [
        (position, case, attempt) for attempt in range(request.repeat) for position, case in enumerate(cases)
    ]
    checkpoints: dict[tuple[str, int], AgentCheckpoint] = {}
    if resumed is not None:
        planned = [item for item in planned if (item[1].case_id, item[2]) not in resumed.finished]
        checkpoints = _checkpoints(resumed)
        logger.info(
            "resuming run %s: %d case runs already finished, %d to run (%d with their agent's turns stored)",
            run_id,
            len(resumed.finished),
            len(planned),
            len(checkpoints),
        )
    size = request.chunk_size or auto_chunk_size(max(1, len(planned)))
    logger.info(
        "run %s: %d cases of %s%s in chunks of %d",
        run_id,
        len(cases),
        suite.name,
        f", each {request.repeat} times" if request.repeat > 1 else "",
        size,
    )
    quota.forget()  # this run's figures from zero (budgets are made again on first use)
    outcomes = await _run_chunks(steps, request, settings, planned, checkpoints, size)
    for outcome in outcomes:  # a stop signal that reached a chunk stops the run as it stands,
        stop = stop_signal_in(outcome)  # to be resumed: it is not a failed chunk
        if stop is not None:
            raise stop
    return await _finish(steps, request, suite, variant, settings, outcomes, report_dir)


async def _run_chunks(
    steps: Orchestrator,
    request: EvaluationRequest,
    settings: RunSettings,
    planned: list[tuple[int, Case, int]],
    checkpoints: dict[tuple[str, int], AgentCheckpoint],
    size: int,
) -> list[Any]:
    """Every chunk, in this process or on the Dask cluster; a chunk's failure is returned."""
    run_id = settings.run_id

    async def guarded(offset: int, chunk: list[tuple[int, Case, int]]) -> None:
        label = chunk_label(offset, chunk)
        async with gate:
            works = [
                CaseWork(position, case, attempt, checkpoints.get((case.case_id, attempt)))
                for position, case, attempt in chunk
            ]
            await submit(Chunk(label, works), settings)

    with contextlib.ExitStack() as stack:
        stack.enter_context(restoring_process_state(steps.logger))  # what an agent changed, back
        if request.dask_address:  # every chunk goes to the cluster at once: its workers pace themselves
            submit = stack.enter_context(steps.dask(request.dask_address))
            gate = asyncio.Semaphore(max(1, math.ceil(len(planned) / size)))
            steps.logger.info("run %s: chunks go to the Dask cluster %s", run_id, request.dask_address)
            # The workers store their cases themselves: progress is read back from the database.
            stack.enter_context(watch_stored_cases(settings.database_url, run_id))
        else:  # enough chunks in flight to keep `concurrency` agents busy, not the whole suite
            submit = steps.run_chunk
            most = adaptive.MAXIMUM if settings.concurrency_auto else request.concurrency
            gate = asyncio.Semaphore(max(2, math.ceil(2 * most / size)))
        try:
            return await asyncio.gather(
                *(guarded(offset, list(chunk)) for offset, chunk in chunked(planned, size)),
                return_exceptions=True,
            )
        finally:
            await close_runtime(run_id)


async def _finish(
    steps: Orchestrator,
    request: EvaluationRequest,
    suite: Suite,
    variant: VariantSpec | None,
    settings: RunSettings,
    outcomes: list[Any],
    report_dir: Path | None,
) -> RunSummary:
    """Close the run, compare it with its baseline, report, publish, notify; then the summary."""
    logger, run_id, database_url = steps.logger, settings.run_id, settings.database_url
    failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    error = f"{len(failures)} chunk(s) failed; first: {failures[0]}" if failures else None
    try:
        # A run whose cases all ended stays `running` (with its tallies and end time) until
        # its reports, artifacts and notification are done: see `EvalRun.reported_status`.
        status = RunStatus.FAILED if failures else RunStatus.RUNNING
        run = await steps.finalize_run(database_url, run_id, status, error)
    except Exception as lost:  # the database is gone: say so, and how to finish the run later
        raise RunIncomplete(run_id, error or f"its end could not be recorded: {lost}") from lost
    regression = await steps.compare_with_baseline(
        database_url, run_id, request.baseline_run_id, request.significance, request.history_window
    )
    report_dir = report_dir or default_report_dir(suite, run_id)
    report_error: ReportWriteError | None = None
    try:
        await steps.render_reports(database_url, run_id, str(report_dir))
    except ReportWriteError as unwritable:  # results are stored: still publish and notify
        report_error = unwritable
        logger.error("%s", unwritable)
    await steps.publish_artifacts(database_url, run_id, None if report_error else str(report_dir))
    notification = run.notification  # a resumed run that had posted already does not post twice
    if request.slack is not None and notification is None:
        result = await steps.notify(database_url, run_id, request.slack, regression, str(DEFAULT_REPORT_ROOT))
        notification = result.to_dict()
    if not failures:
        run = await asyncio.to_thread(mark_completed, database_url=database_url, run_id=run_id)
    summary = RunSummary(
        run_id=run_id,
        variant=variant.name if variant else None,
        suite_name=suite.name,
        status=run.status,
        total=run.total_cases,
        passed=run.passed_cases,
        failed=run.failed_cases,
        errored=run.errored_cases,
        pass_rate=run.pass_rate,
        duration_ms=run.duration_ms,
        report_dir=str(report_dir),
        database=redact_url(database_url),
        error=error,
        repeat=request.repeat,
        min_pass_rate=request.min_pass_rate,
        regression=regression.to_dict() if regression else None,
        notification=notification,
        quota=quota.run_figures(run.duration_ms, None if settings.concurrency_auto else request.concurrency),
    )
    if failures:
        incomplete = RunIncomplete(run_id, error or "")
        incomplete.notified = notification is not None  # Slack has heard of this run already
        raise incomplete from failures[0]
    if report_error is not None:
        report_error.notified = notification is not None
        raise report_error
    logger.info("run %s: %d/%d passed", run_id, summary.passed, summary.total)
    return summary
