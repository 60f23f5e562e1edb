"""The test execution state machine, one stage at a time over a chunk of cases.

Each stage takes the cases of a chunk, works on them concurrently, and persists each case
as soon as that case leaves the stage: after the agent (so a judge failure or a crash never
costs an agent call already made) and at the end. Prefect-free: `tasks/` wraps the stages.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from proctor.agents import AgentRequest, AgentThreadsClosed
from proctor.agents.protocol import recorded_model_calls
from proctor.execution.case_work import AgentCheckpoint, CaseWork
from proctor.execution.chunking import settle_all
from proctor.execution.runtime import (
    DEFAULT_JUDGE_MODEL,
    DEFAULT_JUDGE_TIMEOUT_S,
    RunSettings,
    Runtime,
    chunk_runtime,
    release_runtime,
    runtime_for,
)
from proctor.execution.turn_scoring import score_outcome, score_turns_before_failure, score_vanna_failure
from proctor.files import FILE_TIMEOUT_S, process_file
from proctor.metrics import REGISTRY, MetricContext
from proctor.models.case import Case
from proctor.models.holodeck import FileInput, ProcessedFileInput
from proctor.models.outcome import AgentTurn, CaseOutcome, CaseState
from proctor.simulated_users.adk_user import AdkSimulation, simulate_adk_user
from proctor.simulated_users.llm_user import SimulationPlan, simulate_user
from proctor.user_code import error_message

log = logging.getLogger("proctor.execution.pipeline")

# Re-exported: what a run's stages share lives in `proctor.execution.runtime`.
__all__ = [
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_JUDGE_TIMEOUT_S",
    "AgentCheckpoint",
    "CaseWork",
    "RunSettings",
    "Runtime",
    "chunk_runtime",
    "release_runtime",
    "run_chunk",
    "runtime_for",
]


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _own_ms(request: AgentRequest, started: float) -> float:
    """The agent's own time for the message, as timed where the agent ran (`own_ms`); the
    time since it was called only when the call never got that far (a timeout)."""
    return request.own_ms if request.own_ms is not None else _elapsed_ms(started)


def _finish(outcome: CaseOutcome, state: CaseState) -> None:
    outcome.state = state
    outcome.finished_at = datetime.now(UTC)


# -- stage 1: files ---------------------------------------------------------------------
async def _bounded_file(file_input: FileInput, base_dir: Path, limit: float) -> ProcessedFileInput:
    """One file within `limit` s of wall-clock time: the download stops itself at the limit;
    a conversion still busy then is left to finish in its thread and the file fails now."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(process_file, file_input, base_dir, limit), limit + 1)
    except TimeoutError:
        name = file_input.path or file_input.url
        return ProcessedFileInput(
            original=file_input,
            markdown_content="",
            error=f"{name}: not converted within {limit:g} s",
            processing_time_ms=int(limit * 1000),
        )


async def process_files(works: list[CaseWork], runtime: Runtime) -> None:
    """PENDING -> FILES_READY, or FILES_FAILED (final, persisted) with the reason."""
    base_dir = Path(runtime.settings.suite_dir)
    limit = runtime.settings.case_timeout_s or FILE_TIMEOUT_S

    async def one(work: CaseWork) -> None:
        outcome = work.outcome
        outcome.state = CaseState.PROCESSING_FILES
        outcome.processed_files = [
            await _bounded_file(file_input, base_dir, limit) for file_input in work.case.files
        ]
        # Each file's own time: not the wait for a thread or for the shared converter.
        outcome.files_ms = float(sum(p.processing_time_ms for p in outcome.processed_files))
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
    await settle_all(one(work) for work in with_files)


# -- stage 2: agent ---------------------------------------------------------------------
def _thread_id(run_id: uuid.UUID, case_id: str, attempt: int) -> str:
    """One conversation per case and repeat, so repeats never share an agent's session (nor
    a case named `x#1` the session of `x`'s second repeat: the repeat goes before the id)."""
    return f"{run_id}:{case_id}" if attempt == 0 else f"{run_id}#{attempt}:{case_id}"


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
        files=case.turn_files(turn_id, outcome.processed_files),
        config=dict(case.session.config),
        state=state,
        metadata=case.agent_metadata,  # never the expected outcome, rubrics or simulator plan
        run_scope=runtime.scope,
    )
    asked = started = time.perf_counter()
    try:
        async with runtime.model_gate():
            started = time.perf_counter()  # the agent's own time starts when it has its slot
            work.not_agent_ms += (started - asked) * 1000
            response = await runtime.invoker.invoke(request)
    except AgentThreadsClosed:  # the run is ending: the case did not run, so nothing is recorded
        raise
    except Exception as error:  # every way an agent can fail is recorded, never raised
        message = error_message(error)
        turn = AgentTurn(
            turn_id=turn_id,
            input=text,
            tool_calls=request.recorded_tool_calls,
            usage=request.recorded_usage,
            model_calls=recorded_model_calls(request),
            latency_ms=_own_ms(request, started),
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
            model_calls=response.model_calls,
            latency_ms=_own_ms(request, started),
            metadata={
                **(
                    {"components": [c.model_dump() for c in response.components]}
                    if response.components
                    else {}
                ),
                **response.metadata,
            },
        )
        history += [{"role": "user", "content": text}, {"role": "assistant", "content": response.answer}]
    if started > asked:
        turn.metadata["wait_ms"] = round((started - asked) * 1000, 1)
    if request.retries:
        turn.metadata["retries"] = request.retries
    outcome.turns.append(turn)
    return turn


async def _run_turns(work: CaseWork, runtime: Runtime) -> None:
    """The case's turns in order, in one session; a simulated user's conversation if it has one."""
    scenario = AdkSimulation.for_case(work.case.metadata)
    if scenario is not None:
        await simulate_adk_user(work, runtime, scenario, _agent_turn)
        return
    plan = SimulationPlan.for_case(work.case.metadata)
    if plan is not None:
        await simulate_user(work, runtime, plan, _agent_turn)
        return
    history: list[dict[str, str]] = []
    state = dict(work.case.session.initial_state)
    for turn in work.case.turns:
        done = await _agent_turn(work, runtime, turn.turn_id, turn.input, history, state)
        # A turn the agent failed ends the conversation, except in a HoloDeck multi-turn case:
        # HoloDeck's executor records the error on that turn and runs the turns after it in
        # the same session (scored on their own; the case fails all the same). The failed
        # exchange is not added to the history the next turns are sent.
        if done.error and not work.case.score_per_turn:
            return


def scoring_may_wait(case: Case) -> bool:
    """Whether the agent's turns are stored before scoring (a checkpoint): when a metric of the
    case calls a judge, runs user code or loads a model, so a judge outage or a crash while it
    scores never costs the agent call. A case scored only by Proctor's own quick metrics is
    written once, when it ends, moments later: its checkpoint was a second write per case, and
    (measured) what kept agent slots idle between calls at high concurrency."""
    specs = [*case.metrics, *(spec for turn in case.turns for spec in turn.metrics or [])]
    return any(REGISTRY.get(spec.name).scores_slowly() for spec in specs if spec.enabled) or bool(
        SimulationPlan.for_case(case.metadata)
    )


async def execute_agent(works: list[CaseWork], runtime: Runtime, *, score_quick_cases: bool = False) -> None:
    """FILES_READY -> AGENT_COMPLETE (checkpointed) or AGENT_FAILED (final).

    A case scored only by quick metrics is not checkpointed (see `scoring_may_wait`): where
    a later stage would score it only once the whole chunk's agents are done (the stages as
    Prefect task runs), `score_quick_cases` scores and stores it here, as soon as its agent
    answers, so a worker killed mid-chunk loses no answer already given."""

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
                outcome.agent_ms = max(0.0, _elapsed_ms(started) - work.not_agent_ms)
            else:  # the agent's own time, turn by turn: no wait, no simulated user, no Proctor
                outcome.agent_ms = sum(turn.latency_ms for turn in outcome.turns)
        if outcome.errors:
            await score_turns_before_failure(work.case, outcome, runtime.bind)
            await score_vanna_failure(work.case, outcome, runtime.bind)
            _finish(outcome, CaseState.AGENT_FAILED)
            await runtime.save(work)
            return
        outcome.state = CaseState.AGENT_COMPLETE
        if scoring_may_wait(work.case):  # else the case's final write follows within a moment
            await runtime.save(work)
        elif score_quick_cases:
            await evaluate_metrics([work], runtime)

    await settle_all(one(work) for work in works)


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
        await score_outcome(case, outcome, context, runtime.bind)
        outcome.evaluation_ms = _elapsed_ms(started)
        _finish(outcome, CaseState.EVALUATION_FAILED if outcome.errors else CaseState.COMPLETE)
        await runtime.save(work)

    await settle_all(one(work) for work in works)


async def run_chunk(works: list[CaseWork], runtime: Runtime) -> list[CaseWork]:
    """All three stages for one chunk, without Prefect (in-process runs, Dask workers, tests).

    Each case goes on to its next stage as soon as it leaves the last, instead of waiting for
    the whole chunk at each stage: a chunk's scoring then never holds up the agent slots
    other cases are waiting for, and one case that cannot go on stops only itself. (As
    Prefect task runs, the stages are one task per chunk each, so the UI shows them.)"""

    async def through_every_stage(work: CaseWork) -> None:
        await process_files([work], runtime)
        await execute_agent([work], runtime)
        await evaluate_metrics([work], runtime)

    await settle_all(through_every_stage(work) for work in works)
    return works
