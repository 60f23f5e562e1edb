"""The evaluation flow: load a suite, run its cases through the stages, store, report.

`evaluate` is what `proctor run` calls in-process and what deployments run on workers; its
one parameter is a Pydantic model, so the Prefect UI shows it as a form.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.runtime import flow_run
from pydantic import BaseModel, Field, field_validator
from sqlmodel import Session

from models.case import Case, Suite
from models.notify import SlackSettings
from models.outcome import AgentTurn
from models.tables import EvalRun, RunStatus
from proctor import __version__
from proctor.agents import load_target
from proctor.agents.targets import resolve_relative_target
from proctor.chunking import auto_chunk_size, chunked
from proctor.judges import CredentialError, resolve_api_key
from proctor.loaders import Problem, SuiteError, load_suite, slug
from proctor.metrics import REGISTRY
from proctor.pipeline import AgentCheckpoint, CaseWork, RunSettings, release_runtime
from proctor.regression import DEFAULT_SIGNIFICANCE
from proctor.reporting.reports import environment_info
from proctor.storage import default_database_url, get_engine, redact_url
from proctor.storage.runs import ResumePoint, create_run, reopen_run, resume_point, run_of_flow_run
from tasks.notify import compare_with_baseline_task, notify_task
from tasks.persist import finalize_run
from tasks.report import ReportWriteError, publish_artifacts, render_reports_task, write_comparison_task
from tasks.stages import Chunk, evaluate_chunk, run_chunk

DEFAULT_REPORT_ROOT = Path(".proctor") / "reports"


class RunIncomplete(RuntimeError):
    """A run stopped before every case was done; what was finished is stored."""

    def __init__(self, run_id: uuid.UUID, reason: str) -> None:
        super().__init__(
            f"run {run_id} did not finish: {reason}. Its finished cases are stored; "
            f"`proctor resume {str(run_id)[:8]}` runs the rest"
        )
        self.run_id = run_id


class VariantSpec(BaseModel):
    """One agent configuration to compare (Vanna's `AgentVariant`: name, agent, metadata)."""

    name: str = Field(min_length=1)
    agent: str = Field(description="Agent target, as for `agent`")
    metadata: dict[str, Any] = Field(default_factory=dict)


class EvaluationRequest(BaseModel):
    """What to evaluate and how; every field has a sensible default but the suite."""

    suite: str = Field(description="Path of the suite file (.evalset.json, agent.yaml, Vanna dataset)")
    agent: str | None = Field(
        default=None, description="Agent target 'module:attr' or 'file.py:attr'; default: the suite's"
    )
    config: str | None = Field(default=None, description="EvalConfig JSON for agentflow evalsets")
    database_url: str | None = Field(default=None, description="SQLAlchemy URL; default .proctor/proctor.db")
    report_dir: str | None = Field(default=None, description="Where reports go; default .proctor/reports/…")
    concurrency: int = Field(default=8, ge=1, le=1024, description="Cases whose agent runs at once")
    chunk_size: int | None = Field(default=None, ge=1, description="Cases per task run; default: automatic")
    agent_timeout_s: float | None = Field(default=300.0, gt=0, description="Per-turn agent timeout")
    judge_cache: bool = Field(default=True, description="Answer identical judge calls from the cache")
    case_timeout_s: float | None = Field(
        default=None, gt=0, description="Limit on a whole case's conversation"
    )
    model_call_limit: str | None = Field(
        default=None,
        description="Prefect global concurrency limit capping agent and judge calls across workers",
    )
    variants: list[VariantSpec] = Field(
        default_factory=list, description="Agent variants to run over the same suite and compare"
    )
    tags: list[str] = Field(default_factory=list, description="Run only cases with any of these tags")
    cases: list[str] = Field(default_factory=list, description="Run only these case ids")
    metadata: dict[str, str] = Field(
        default_factory=dict, description="Run only cases whose metadata has these values (key: value)"
    )
    repeat: int = Field(
        default=1, ge=1, le=100, description="Run every case this many times; cases report passes k of n"
    )
    baseline_run_id: uuid.UUID | None = Field(
        default=None, description="Compare with this run; default: the last completed run of the suite"
    )
    significance: float = Field(
        default=DEFAULT_SIGNIFICANCE,
        gt=0,
        lt=1,
        description="Significance level of the regression test (Fisher's exact test, with --repeat)",
    )
    min_pass_rate: float | None = Field(
        default=None,
        ge=0,
        le=100,
        description="The run passes its gate at this pass rate (percent); default: every case must pass",
    )
    slack: SlackSettings | None = Field(default=None, description="Post the summary to Slack")
    dask_address: str | None = Field(
        default=None,
        description="Spread case chunks over a Dask cluster: its scheduler (tcp://host:8786), "
        "or 'local' / 'local:N' for a local cluster of N worker processes",
    )
    resume_run_id: uuid.UUID | None = Field(
        default=None,
        description="Resume this stopped run: its finished cases are kept, the others run (proctor resume)",
    )

    @field_validator("dask_address")
    @classmethod
    def _dask_address(cls, value: str | None) -> str | None:
        if value is None or value == "local" or re.fullmatch(r"local:[1-9][0-9]{0,3}", value):
            return value
        if re.fullmatch(r"(tcp|tls|ws|wss|inproc|ucx)://[^\s/]+", value):
            return value
        raise ValueError("expected a Dask scheduler address such as tcp://host:8786, or 'local' or 'local:N'")


def dask_task_runner(address: str) -> Any:
    """Prefect's Dask task runner: a local cluster of worker processes, or an existing one."""
    from prefect_dask import DaskTaskRunner

    if address == "local" or address.startswith("local:"):
        from prefect.client.orchestration import get_client

        workers = int(address.partition(":")[2] or 2)
        # The workers report their task runs to this flow's API, even a temporary one.
        api_url = str(get_client().api_url)
        return DaskTaskRunner(
            cluster_class="distributed.LocalCluster",
            cluster_kwargs={
                "n_workers": workers,
                "threads_per_worker": 1,
                "processes": True,
                "dashboard_address": None,
                "env": {"PREFECT_API_URL": api_url},
            },
        )
    return DaskTaskRunner(address=address)


class RunSummary(BaseModel):
    run_id: uuid.UUID
    variant: str | None = None
    suite_name: str
    status: RunStatus
    total: int
    passed: int
    failed: int
    errored: int
    pass_rate: float | None
    duration_ms: int | None
    report_dir: str | None
    database: str
    error: str | None = None
    variants: list[RunSummary] = Field(default_factory=list)
    best_variant: str | None = None
    comparison_dir: str | None = None
    repeat: int = 1
    min_pass_rate: float | None = None
    regression: dict[str, Any] | None = None
    notification: dict[str, Any] | None = None

    @property
    def gate_passed(self) -> bool:
        """Completed, no regression against the baseline, and every case passed (or, with
        `min_pass_rate`, the pass rate reached it): the CLI's exit code 0."""
        if self.status is not RunStatus.COMPLETED or (self.regression or {}).get("regressed"):
            return False
        if self.min_pass_rate is None:
            return self.failed == 0
        return (self.pass_rate or 0.0) >= self.min_pass_rate

    @property
    def all_passed(self) -> bool:
        return all(run.gate_passed for run in self.variants or [self])

    @property
    def regressed(self) -> bool:
        return any((run.regression or {}).get("regressed", False) for run in self.variants or [self])


def select_cases(
    suite: Suite, tags: list[str], case_ids: list[str], metadata: dict[str, str] | None = None
) -> list[Case]:
    """Cases with any of the tags, among the ids, and with every metadata value (compared as text)."""
    cases = suite.cases
    if metadata:
        cases = [
            case
            for case in cases
            if all(str(case.metadata.get(key)) == value for key, value in metadata.items())
        ]
    if tags:
        wanted = set(tags)
        cases = [case for case in cases if wanted & set(case.tags)]
    if case_ids:
        unknown = sorted(set(case_ids) - {case.case_id for case in suite.cases})
        if unknown:
            raise SuiteError([Problem(suite.path, "", f"no case with id {', '.join(map(repr, unknown))}")])
        cases = [case for case in cases if case.case_id in set(case_ids)]
    if not cases:
        raise SuiteError([Problem(suite.path, "", "no case matches the selection (--tag / --case / --meta)")])
    return cases


def prepare(request: EvaluationRequest) -> tuple[Suite, list[Case], str]:
    """Load and check everything before a run starts; raises `SuiteError` or `AgentLoadError`.

    Returns the suite, the selected cases and the agent target to import: a `file.py`
    named by the suite is found beside the suite, one named by `--agent` from here.
    """
    suite = load_suite(request.suite, config_path=request.config)
    if request.agent:
        agent = request.agent
    elif suite.agent:
        agent = resolve_relative_target(suite.agent, Path(suite.path).parent)
    else:
        raise SuiteError(
            [
                Problem(
                    suite.path, "metadata.agent", "no agent: pass --agent module:attr or set it in the suite"
                )
            ]
        )
    load_target(agent)
    names = [variant.name for variant in request.variants]
    if len(set(names)) != len(names):
        raise SuiteError([Problem(suite.path, "variants", f"variant names must be unique; got {names}")])
    for variant in request.variants:
        load_target(variant.agent)
    cases = select_cases(suite, request.tags, request.cases, request.metadata)
    if request.model_call_limit:
        check_concurrency_limit(suite, request.model_call_limit)
    check_judge_credentials(suite, cases)
    return suite, cases, agent


def check_concurrency_limit(suite: Suite, name: str) -> None:
    """A named concurrency limit must exist: Prefect would otherwise skip it silently."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            raise SuiteError(
                [
                    Problem(
                        suite.path,
                        "model_call_limit",
                        f"no Prefect global concurrency limit named {name!r}; "
                        f"create it: prefect gcl create {name} --limit N",
                    )
                ]
            ) from None


def check_judge_credentials(suite: Suite, cases: list[Case]) -> None:
    """A judged metric without an API key is a configuration error, found before the run."""
    problems = []
    seen: set[int] = set()
    if any("user_simulator" in case.metadata or "conversation_scenario" in case.metadata for case in cases):
        try:
            resolve_api_key(None)
        except CredentialError as error:
            problems.append(Problem(suite.path, "user simulator", str(error)))
    for case in cases:
        for spec in case.metrics:
            if id(spec) in seen or not spec.enabled or REGISTRY.get(spec.name).kind != "llm":
                continue
            seen.add(id(spec))
            if spec.model is not None and (spec.model.api_key or "").startswith("secret:"):
                continue  # a Prefect Secret block is read when the flow runs
            try:
                resolve_api_key(spec.model)
            except CredentialError as error:
                problems.append(Problem(suite.path, f"metric {spec.name!r}", str(error)))
    if problems:
        unique = {str(problem): problem for problem in problems}
        raise SuiteError(list(unique.values()))


def chunk_label(offset: int, chunk: list[tuple[int, Case, int]]) -> str:
    """A chunk's name in the Prefect UI: its case (and repeat) when alone, else its range."""
    if len(chunk) == 1:
        _, case, attempt = chunk[0]
        return case.case_id if attempt == 0 else f"{case.case_id} (repeat {attempt + 1})"
    return f"cases {offset + 1}-{offset + len(chunk)}"


def default_report_dir(suite: Suite, run_id: uuid.UUID) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return DEFAULT_REPORT_ROOT / slug(suite.suite_id) / f"{stamp}-{str(run_id)[:8]}"


@flow(name="proctor-evaluate", log_prints=False)
async def evaluate(request: EvaluationRequest) -> RunSummary:
    """Evaluate one suite with one agent, or with each variant in turn and compare them.

    The flow run ends Completed either way (every result is stored and reported); when the
    gate does not hold, its state is named after why ("Failed cases", "Regressed",
    "Below pass rate"), so the Prefect UI shows it at a glance.
    """
    return gate_state(await _evaluate(request))  # type: ignore[return-value]


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


async def _evaluate(request: EvaluationRequest) -> RunSummary:
    logger = get_run_logger()
    suite, cases, agent = prepare(request)
    for warning in suite.warnings:
        logger.warning(warning)
    if request.resume_run_id is not None or not request.variants:  # one run (a resumed one: its own)
        variant = resumed_variant(request) if request.resume_run_id is not None else None
        report_dir = Path(request.report_dir) if request.report_dir else None
        return await run_suite(
            request, suite, cases, variant.agent if variant else agent, variant, report_dir
        )
    base = Path(request.report_dir) if request.report_dir else default_report_dir(suite, uuid.uuid4()).parent
    runs = [
        await run_suite(request, suite, cases, variant.agent, variant, base / slug(variant.name))
        for variant in request.variants
    ]
    comparison = await write_comparison_task(
        request.database_url or default_database_url(), [run.run_id for run in runs], str(base)
    )
    best = next(run for run in runs if run.variant == comparison.best)
    logger.info("variants compared: best is %s", comparison.best)
    return best.model_copy(
        update={"variants": runs, "best_variant": comparison.best, "comparison_dir": str(base)}
    )


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
    request: EvaluationRequest, database_url: str, variant: VariantSpec | None, new_run: EvalRun
) -> tuple[uuid.UUID, ResumePoint | None]:
    """A new run, or the stopped one being resumed: the one named by `resume_run_id`, or the
    one this same Prefect flow run started before it was retried (a retry resumes)."""
    flow_run_id = str(flow_run.id) if flow_run.id else None
    with Session(get_engine(database_url), expire_on_commit=False) as session:
        stopped = None
        if request.resume_run_id is not None:
            stopped = session.get(EvalRun, request.resume_run_id)
        elif flow_run_id:
            stopped = run_of_flow_run(
                session=session, flow_run_id=flow_run_id, variant=variant.name if variant else None
            )
        if stopped is None:
            create_run(session=session, run=new_run)
            session.commit()
            return new_run.id, None
        if stopped.status is RunStatus.COMPLETED:
            raise SuiteError([Problem(request.suite, "resume_run_id", f"run {stopped.id} already completed")])
        reopen_run(session=session, run_id=stopped.id, flow_run_id=flow_run_id)
        point = resume_point(session=session, run_id=stopped.id)
        session.commit()
        return stopped.id, point


async def run_suite(
    request: EvaluationRequest,
    suite: Suite,
    cases: list[Case],
    agent: str,
    variant: VariantSpec | None,
    report_dir: Path | None,
) -> RunSummary:
    """One run: one agent over the selected cases; every case is stored as soon as it is done."""
    logger = get_run_logger()
    database_url = request.database_url or default_database_url()
    run_id, resumed = _start_or_resume(
        request,
        database_url,
        variant,
        EvalRun(
            suite_id=suite.suite_id,
            suite_name=suite.name,
            suite_path=suite.path,
            source_format=suite.source_format,
            agent=variant.agent if variant else request.agent or suite.agent or agent,
            variant=variant.name if variant else None,
            config=request.model_dump(mode="json", exclude={"database_url"})
            | {"metrics": sorted({spec.name for case in cases for spec in case.metrics})},
            environment=environment_info(),
            flow_run_id=str(flow_run.id) if flow_run.id else None,
            proctor_version=__version__,
            planned_cases=len(cases) * request.repeat,
            repeat=request.repeat,
        ),
    )
    settings = RunSettings(
        run_id=run_id,
        database_url=database_url,
        agent=agent,
        suite_dir=str(Path(suite.path).parent),
        concurrency=request.concurrency,
        agent_timeout_s=request.agent_timeout_s,
        judge_cache=request.judge_cache,
        model_call_limit=request.model_call_limit,
        case_timeout_s=request.case_timeout_s,
    )
    # Every case once, then again for each repeat: repeats of a case spread over the run.
    planned = [
        (position, case, attempt) for attempt in range(request.repeat) for position, case in enumerate(cases)
    ]
    checkpoints: dict[tuple[str, int], AgentCheckpoint] = {}
    if resumed is not None:
        planned = [item for item in planned if (item[1].case_id, item[2]) not in resumed.finished]
        checkpoints = {
            key: AgentCheckpoint(
                turns=[AgentTurn.model_validate(turn) for turn in row.turns],
                agent_ms=row.agent_ms,
                started_at=row.started_at,
            )
            for key, row in resumed.checkpoints.items()
        }
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

    async def guarded(offset: int, chunk: list[tuple[int, Case, int]]) -> None:
        label = chunk_label(offset, chunk)
        async with gate:
            works = [
                CaseWork(position, case, attempt, checkpoints.get((case.case_id, attempt)))
                for position, case, attempt in chunk
            ]
            if runner is None:
                await run_chunk(Chunk(label, works), settings)
            else:  # on a Dask worker, which stores the chunk's results itself
                future = runner.submit(
                    evaluate_chunk, parameters={"chunk": Chunk(label, works), "settings": settings}
                )
                await asyncio.to_thread(future.result)

    with contextlib.ExitStack() as stack:
        runner = stack.enter_context(dask_task_runner(request.dask_address)) if request.dask_address else None
        if runner is not None:  # every chunk goes to the cluster at once: its workers pace themselves
            gate = asyncio.Semaphore(max(1, math.ceil(len(planned) / size)))
            logger.info("run %s: chunks go to the Dask cluster %s", run_id, request.dask_address)
        else:  # enough chunks in flight to keep `concurrency` agents busy, not the whole suite
            gate = asyncio.Semaphore(max(2, math.ceil(2 * request.concurrency / size)))
        try:
            outcomes = await asyncio.gather(
                *(guarded(offset, list(chunk)) for offset, chunk in chunked(planned, size)),
                return_exceptions=True,
            )
        finally:
            release_runtime(run_id)
    failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    error = f"{len(failures)} chunk(s) failed; first: {failures[0]}" if failures else None
    try:
        run = await finalize_run(
            database_url, run_id, RunStatus.FAILED if failures else RunStatus.COMPLETED, error
        )
    except Exception as lost:  # the database is gone: say so, and how to finish the run later
        raise RunIncomplete(run_id, error or f"its end could not be recorded: {lost}") from lost
    regression = await compare_with_baseline_task(
        database_url, run_id, request.baseline_run_id, request.significance
    )
    report_dir = report_dir or default_report_dir(suite, run_id)
    report_error: ReportWriteError | None = None
    try:
        await render_reports_task(database_url, run_id, str(report_dir))
    except ReportWriteError as unwritable:  # results are stored: still publish and notify
        report_error = unwritable
        logger.error("%s", unwritable)
    await publish_artifacts(database_url, run_id, None if report_error else str(report_dir))
    notification = None
    if request.slack is not None:
        result = await notify_task(database_url, run_id, request.slack, regression, str(DEFAULT_REPORT_ROOT))
        notification = result.to_dict()
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
    )
    if failures:
        raise RunIncomplete(run_id, error or "") from failures[0]
    if report_error is not None:
        raise report_error
    logger.info("run %s: %d/%d passed", run_id, summary.passed, summary.total)
    return summary
