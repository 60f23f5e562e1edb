"""The test execution state machine, one stage at a time over a chunk of cases.

Each stage takes the cases of a chunk, works on them concurrently, and persists each case
as soon as that case leaves the stage: after the agent (so a judge failure or a crash never
costs an agent call already made) and at the end. Prefect-free: `tasks/` wraps the stages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from proctor import progress
from proctor.agents import AgentInvoker, AgentRequest, load_target
from proctor.files import process_file
from proctor.judges import Judge, JudgeCache, JudgeClient, Usage, resolve_api_key, resolve_base_url
from proctor.metrics import REGISTRY, BoundMetric, MetricContext, score_case
from proctor.metrics.tools import tools_matched
from proctor.models.case import Case, MetricSpec
from proctor.models.holodeck import LLMProvider
from proctor.models.outcome import AgentTurn, CaseOutcome, CaseState
from proctor.simulator import SimulationPlan, next_user_turn
from proctor.storage import get_engine, get_writer
from proctor.storage.writer import ResultWriter

log = logging.getLogger("proctor.pipeline")

DEFAULT_JUDGE_MODEL = "gpt-4o-mini"
DEFAULT_JUDGE_TIMEOUT_S = 120.0


class RunSettings(BaseModel):
    """What every stage needs to know about its run; plain data, so it crosses processes."""

    run_id: uuid.UUID
    database_url: str
    agent: str
    suite_dir: str
    concurrency: int = Field(default=8, ge=1)
    agent_timeout_s: float | None = Field(default=300.0, gt=0)
    judge_cache: bool = True
    model_call_limit: str | None = None
    case_timeout_s: float | None = Field(default=None, gt=0)


@dataclass
class AgentCheckpoint:
    """What a resumed run reuses of a case whose agent had finished before the run stopped:
    its turns are stored, so the agent is not called again; only its metrics run."""

    turns: list[AgentTurn]
    agent_ms: float
    started_at: datetime


@dataclass
class CaseWork:
    """A case on its way through the stages, with its position in the suite and which
    repeat of it this is (`--repeat N` runs every case N times)."""

    position: int
    case: Case
    attempt: int = 0
    checkpoint: AgentCheckpoint | None = None
    outcome: CaseOutcome = field(init=False)

    def __post_init__(self) -> None:
        self.outcome = CaseOutcome(case_id=self.case.case_id, attempt=self.attempt)


@dataclass
class Runtime:
    """The live objects of a run in this process: agent, concurrency limit, writer."""

    settings: RunSettings
    invoker: AgentInvoker
    limiter: asyncio.Semaphore
    writer: ResultWriter
    _metrics: dict[int, tuple[MetricSpec, BoundMetric]] = field(default_factory=dict)
    _judge_clients: dict[tuple[str | None, str], JudgeClient] = field(default_factory=dict)

    def bind(self, spec: MetricSpec) -> BoundMetric:
        """The metric for a spec, built once per run: cases of a suite share their specs."""
        cached = self._metrics.get(id(spec))
        if cached is None or cached[0] is not spec:
            metric = REGISTRY.build(spec)
            judge = self._judge_for(spec) if metric.kind == "llm" else None
            cached = self._metrics[id(spec)] = (spec, BoundMetric(spec, metric, judge))
        return cached[1]

    def model_gate(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """A slot of the Prefect global concurrency limit on model calls, when one is named:
        it caps agent and judge calls across every worker; this process's own cap is the
        run's concurrency. Prefect is imported only then, so plain runs stay Prefect-free."""
        name = self.settings.model_call_limit
        if not name:
            return contextlib.nullcontext()
        from prefect.concurrency.asyncio import concurrency

        return concurrency(name, occupy=1, strict=True)

    @property
    def _judge_cache(self) -> JudgeCache | None:
        return JudgeCache(self.writer.engine) if self.settings.judge_cache else None

    def simulator(self, model: str) -> Judge:
        """The model playing the user, through the same client and cache as judges."""
        return self._judge_for(
            MetricSpec(name="user_simulator", model=LLMProvider(name=model), timeout_ms=120_000)
        )

    def _judge_for(self, spec: MetricSpec) -> Judge:
        """The judge a spec names (its model, else the default), sharing one client per endpoint."""
        provider = spec.model
        base_url, api_key = resolve_base_url(provider), resolve_api_key(provider)
        client = self._judge_clients.get((base_url, api_key))
        if client is None:
            client = self._judge_clients[(base_url, api_key)] = JudgeClient(
                base_url=base_url, api_key=api_key
            )
        return Judge.for_spec(
            spec,
            client,
            self._judge_cache,
            default_model=DEFAULT_JUDGE_MODEL,
            timeout_s=DEFAULT_JUDGE_TIMEOUT_S,
        )

    async def save(self, work: CaseWork) -> None:
        await self.writer.save(self.settings.run_id, work.case, work.outcome, work.position)
        if work.outcome.state.is_final:
            progress.publish(
                "case_finished",
                run_id=self.settings.run_id,
                case_id=work.case.case_id,
                state=work.outcome.state.value,
                passed=work.outcome.passed,
            )


_runtimes: dict[uuid.UUID, Runtime] = {}


def runtime_for(settings: RunSettings) -> Runtime:
    """The run's runtime in this process, made on first use by any chunk."""
    runtime = _runtimes.get(settings.run_id)
    if runtime is None:
        runtime = Runtime(
            settings=settings,
            invoker=AgentInvoker(
                load_target(settings.agent),
                max_threads=settings.concurrency,
                timeout_s=settings.agent_timeout_s,
            ),
            limiter=asyncio.Semaphore(settings.concurrency),
            writer=get_writer(get_engine(settings.database_url)),
        )
        _runtimes[settings.run_id] = runtime
    return runtime


_closing: set[asyncio.Task[None]] = set()


def release_runtime(run_id: uuid.UUID) -> None:
    """Let go of a run's agent threads and judge connections.

    A worker runs flow after flow in one process: judge clients left open keep their
    keep-alive connections (and the server's side of them) until garbage collection. They are
    closed on the running loop, the one they were opened on; without one, it is gone already.
    """
    runtime = _runtimes.pop(run_id, None)
    if runtime is None:
        return
    runtime.invoker.close()
    clients, runtime._judge_clients = list(runtime._judge_clients.values()), {}
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    for client in clients:
        task = loop.create_task(client.aclose())
        _closing.add(task)
        task.add_done_callback(_closing.discard)


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _finish(outcome: CaseOutcome, state: CaseState) -> None:
    outcome.state = state
    outcome.finished_at = datetime.now(UTC)


# -- stage 1: files ---------------------------------------------------------------------
async def process_files(works: list[CaseWork], runtime: Runtime) -> None:
    """PENDING -> FILES_READY, or FILES_FAILED (final, persisted) with the reason."""
    base_dir = Path(runtime.settings.suite_dir)

    async def one(work: CaseWork) -> None:
        outcome = work.outcome
        outcome.state = CaseState.PROCESSING_FILES
        started = time.perf_counter()
        outcome.processed_files = [
            await asyncio.to_thread(process_file, file_input, base_dir) for file_input in work.case.files
        ]
        outcome.files_ms = _elapsed_ms(started)
        failures = [p for p in outcome.processed_files if p.error is not None]
        if failures:
            outcome.errors += [f"file failed: {p.error}" for p in failures]
            _finish(outcome, CaseState.FILES_FAILED)
            await runtime.save(work)
        else:
            outcome.state = CaseState.FILES_READY

    with_files = []
    for work in works:
        if work.case.files:
            with_files.append(work)
        else:
            work.outcome.state = CaseState.FILES_READY
    await asyncio.gather(*(one(work) for work in with_files))


# -- stage 2: agent ---------------------------------------------------------------------
def _thread_id(run_id: uuid.UUID, case_id: str, attempt: int) -> str:
    """One conversation per case and repeat, so repeats never share an agent's session."""
    return f"{run_id}:{case_id}" if attempt == 0 else f"{run_id}:{case_id}#{attempt}"


async def _agent_turn(
    work: CaseWork,
    runtime: Runtime,
    turn_id: str,
    text: str,
    history: list[dict[str, str]],
    state: dict[str, Any],
) -> AgentTurn:
    """One exchange with the agent; a failure is recorded on the turn and the case."""
    case, outcome = work.case, work.outcome
    request = AgentRequest(
        case_id=case.case_id,
        turn_id=turn_id,
        input=text,
        thread_id=case.session.thread_id or _thread_id(runtime.settings.run_id, case.case_id, work.attempt),
        history=list(history),
        files=outcome.processed_files,
        config=dict(case.session.config),
        state=state,
        metadata=case.metadata,
    )
    started = time.perf_counter()
    try:
        async with runtime.model_gate():
            response = await runtime.invoker.invoke(request)
    except Exception as error:  # every way an agent can fail is recorded, never raised
        message = str(error) if str(error) else type(error).__name__
        turn = AgentTurn(
            turn_id=turn_id,
            input=text,
            tool_calls=request.recorded_tool_calls,
            usage=request.recorded_usage,
            latency_ms=_elapsed_ms(started),
            error=message,
        )
        outcome.errors.append(f"agent failed on turn {turn_id}: {message}")
    else:
        turn = AgentTurn(
            turn_id=turn_id,
            input=text,
            response=response.answer,
            tool_calls=response.tool_calls,
            usage=response.usage,
            latency_ms=_elapsed_ms(started),
        )
        history += [{"role": "user", "content": text}, {"role": "assistant", "content": response.answer}]
    outcome.turns.append(turn)
    return turn


async def _run_turns(work: CaseWork, runtime: Runtime) -> None:
    """The case's turns in order, in one session; a simulated user's conversation if it has one."""
    plan = SimulationPlan.for_case(work.case.metadata)
    if plan is not None:
        await _simulate(work, runtime, plan)
        return
    history: list[dict[str, str]] = []
    state = dict(work.case.session.initial_state)
    for turn in work.case.turns:
        done = await _agent_turn(work, runtime, turn.turn_id, turn.input, history, state)
        if done.error:
            return


async def _simulate(work: CaseWork, runtime: Runtime, plan: SimulationPlan) -> None:
    """The simulated user talks until its goals are met, it gives up, or max_invocations."""
    judge = runtime.simulator(plan.model)
    history: list[dict[str, str]] = []
    state = dict(work.case.session.initial_state)
    message = plan.starting_prompt or work.case.first_input
    achieved: list[str] = []
    usage = Usage()
    for number in range(plan.max_invocations):
        turn = await _agent_turn(work, runtime, f"sim_{number + 1}", message, history, state)
        if turn.error:
            break
        try:
            verdict = await next_user_turn(judge, plan, history, usage)
        except Exception as error:  # the simulator failing is the case's error, recorded
            work.outcome.errors.append(f"user simulator failed: {error}")
            break
        achieved = verdict.goals_achieved
        turn.metadata = {"goals_achieved": achieved}
        if verdict.done or set(achieved) >= set(plan.goals) or not verdict.next_message:
            break
        message = verdict.next_message
    if work.outcome.turns:
        work.outcome.turns[-1].metadata = {
            "goals": plan.goals,
            "goals_achieved": achieved,
            "simulator_calls": usage.calls,
            "simulator_tokens": usage.prompt_tokens + usage.completion_tokens,
        }


async def execute_agent(works: list[CaseWork], runtime: Runtime) -> None:
    """FILES_READY -> AGENT_COMPLETE (checkpointed) or AGENT_FAILED (final)."""

    async def one(work: CaseWork) -> None:
        outcome = work.outcome
        if outcome.state is not CaseState.FILES_READY:
            return
        if work.checkpoint is not None:  # resumed: the agent's turns are already stored
            outcome.turns, outcome.agent_ms = work.checkpoint.turns, work.checkpoint.agent_ms
            outcome.started_at, outcome.checkpointed = work.checkpoint.started_at, True
            outcome.state = CaseState.AGENT_COMPLETE
            return
        async with runtime.limiter:
            outcome.state = CaseState.EXECUTING_AGENT
            started = time.perf_counter()
            limit = runtime.settings.case_timeout_s
            try:
                await asyncio.wait_for(_run_turns(work, runtime), limit) if limit else await _run_turns(
                    work, runtime
                )
            except TimeoutError:
                outcome.errors.append(f"the case's conversation exceeded its {limit:g} s limit")
            outcome.agent_ms = _elapsed_ms(started)
        if outcome.errors:
            _finish(outcome, CaseState.AGENT_FAILED)
        else:
            outcome.state = CaseState.AGENT_COMPLETE
        await runtime.save(work)

    await asyncio.gather(*(one(work) for work in works))


# -- stage 3: metrics -------------------------------------------------------------------
async def evaluate_metrics(works: list[CaseWork], runtime: Runtime) -> None:
    """AGENT_COMPLETE -> COMPLETE (passed or failed) or EVALUATION_FAILED; persisted."""

    async def one(work: CaseWork) -> None:
        case, outcome = work.case, work.outcome
        if outcome.state is not CaseState.AGENT_COMPLETE:
            return
        outcome.state = CaseState.EVALUATING
        started = time.perf_counter()
        context = MetricContext(
            case=case, turns=outcome.turns, processed_files=outcome.processed_files, agent_ms=outcome.agent_ms
        )
        try:
            bound = [runtime.bind(spec) for spec in case.metrics]
            outcome.metrics = await score_case(bound, context)
        except Exception as error:  # a metric that cannot even be built fails its case only
            outcome.errors.append(f"evaluation failed: {error}")
        outcome.tools_matched = tools_matched(case.expected_tools, context.tool_names)
        outcome.errors += [f"metric {m.metric_name}: {m.error}" for m in outcome.metrics if m.error]
        outcome.evaluation_ms = _elapsed_ms(started)
        _finish(outcome, CaseState.EVALUATION_FAILED if outcome.errors else CaseState.COMPLETE)
        await runtime.save(work)

    await asyncio.gather(*(one(work) for work in works))


async def run_chunk(works: list[CaseWork], runtime: Runtime) -> list[CaseWork]:
    """All three stages for one chunk, without Prefect (used by tests and embedding code)."""
    await process_files(works, runtime)
    await execute_agent(works, runtime)
    await evaluate_metrics(works, runtime)
    return works
