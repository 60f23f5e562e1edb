"""The live objects a run's stages share in one process: agent, concurrency limit, writer,
metrics and judge clients.

An asyncio semaphore and a judge's HTTP client belong to the event loop they were first used
on. In-process, a run's chunks share one loop, so one `Runtime` serves them all; on a Dask
worker every chunk runs in an event loop of its own, so each chunk gets its own `Runtime`
(`chunk_runtime`), closed when the chunk ends. `runtime_for` keys its cache by run *and*
loop, so nothing loop-bound can ever be handed to another loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from proctor.agents import AgentInvoker, load_target
from proctor.agents.tools import RunScope
from proctor.calls import quota
from proctor.calls.adaptive import AdaptiveLimiter
from proctor.calls.limits import ModelCallGate
from proctor.calls.quota import DEFAULT_PATIENCE_S, QuotaLimit
from proctor.execution import progress
from proctor.judges import CredentialError, Judge, JudgeCache, JudgeClient, resolve_api_key
from proctor.metrics import REGISTRY, BoundMetric
from proctor.models.case import MetricSpec
from proctor.models.holodeck import LLMProvider
from proctor.storage import get_engine, get_writer
from proctor.storage.writer import ResultWriter

if TYPE_CHECKING:
    from proctor.execution.case_work import CaseWork

DEFAULT_JUDGE_MODEL = "gpt-4o-mini"
DEFAULT_JUDGE_TIMEOUT_S = 120.0


class RunSettings(BaseModel):
    """What every stage needs to know about its run; plain data, so it crosses processes."""

    run_id: uuid.UUID
    database_url: str
    agent: str
    suite_dir: str
    concurrency: int = Field(default=8, ge=1)
    concurrency_auto: bool = False  # none was asked for: grows with the quota (proctor.calls.adaptive)
    agent_timeout_s: float | None = Field(default=300.0, gt=0)
    judge_cache: bool = True
    model_call_limit: str | None = None
    case_timeout_s: float | None = Field(default=None, gt=0)
    rate_limits: list[QuotaLimit] = Field(default_factory=list)
    quota_patience_s: float = DEFAULT_PATIENCE_S


@dataclass
class Runtime:
    """The live objects of a run in this process: agent, concurrency limit, writer."""

    settings: RunSettings
    invoker: AgentInvoker
    limiter: asyncio.Semaphore | AdaptiveLimiter
    writer: ResultWriter
    _metrics: dict[int, tuple[MetricSpec, BoundMetric]] = field(default_factory=dict)
    _judge_clients: dict[tuple[str, str | None, str | None], JudgeClient] = field(default_factory=dict)
    _gate: ModelCallGate | None = None
    scope: RunScope = field(default_factory=RunScope)  # the agent's tools, opened once for the run

    def bind(self, spec: MetricSpec) -> BoundMetric:
        """The metric for a spec, built once per run: cases of a suite share their specs."""
        cached = self._metrics.get(id(spec))
        if cached is None or cached[0] is not spec:
            metric = REGISTRY.build(spec)
            judge, judge_error = None, None
            if metric.kind == "llm" and spec.enabled:  # a disabled judge is never asked: it needs no key
                try:
                    judge = self._judge_for(spec)
                except CredentialError as error:  # fails this metric only, never the case's others
                    judge_error = str(error)
            cached = self._metrics[id(spec)] = (spec, BoundMetric(spec, metric, judge, judge_error))
        return cached[1]

    def model_gate(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """A slot of the run's `model_call_limit`, when one is named: every model call (agent
        turn, judge, simulated user, G-Eval steps) takes one, across every worker."""
        if not self.settings.model_call_limit:
            return contextlib.nullcontext()
        if self._gate is None:
            self._gate = ModelCallGate(self.settings.model_call_limit)
        return self._gate.slot()

    @property
    def _judge_cache(self) -> JudgeCache | None:
        return JudgeCache(self.writer.engine) if self.settings.judge_cache else None

    def simulator(self, model: str) -> Judge:
        """The model playing the user, through the same client and cache as judges."""
        return self._judge_for(
            MetricSpec(name="user_simulator", model=LLMProvider(name=model), timeout_ms=120_000)
        )

    def _judge_for(self, spec: MetricSpec) -> Judge:
        """The judge a spec names (its model, else the default), sharing one client per endpoint.
        The client is made for the model's provider as the agent's is (`judge_client`): its
        path, headers, API version and its own provider's key."""
        from proctor.agents.providers import base_url_of, judge_client  # imports openai: on use

        provider = spec.model
        endpoint = (
            provider.provider if provider else "openai",
            base_url_of(provider),
            resolve_api_key(provider),
        )
        client = self._judge_clients.get(endpoint)
        if client is None:
            client = self._judge_clients[endpoint] = judge_client(provider)
        judge = Judge.for_spec(
            spec,
            client,
            self._judge_cache,
            default_model=DEFAULT_JUDGE_MODEL,
            timeout_s=DEFAULT_JUDGE_TIMEOUT_S,
        )
        return dataclasses.replace(judge, gate=self.model_gate) if self.settings.model_call_limit else judge

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

    async def aclose(self) -> None:
        """Stop the agent's tool servers, let go of its threads and the judges' connections (on
        their own loop)."""
        await self.scope.aclose()
        self.invoker.close()
        clients, self._judge_clients = list(self._judge_clients.values()), {}
        for client in clients:
            with contextlib.suppress(Exception):
                await client.aclose()
        if self._gate is not None:  # normally holds nothing by now: a slot is given back when idle
            await self._gate.aclose()


def new_runtime(settings: RunSettings) -> Runtime:
    # the stated limits (the request's, else PROCTOR_RATE_LIMITS) for every model client's budget
    # the stated limits hold across processes: the quota is shared through the results database
    quota.configure(
        settings.rate_limits or quota.limits_from_env(),
        settings.quota_patience_s,
        settings.database_url,
        open_engine=get_engine,
    )
    return Runtime(
        settings=settings,
        invoker=AgentInvoker(
            load_target(settings.agent),
            max_threads=settings.concurrency,
            timeout_s=settings.agent_timeout_s,
        ),
        limiter=AdaptiveLimiter(settings.concurrency)
        if settings.concurrency_auto
        else asyncio.Semaphore(settings.concurrency),
        writer=get_writer(get_engine(settings.database_url)),
    )


_runtimes: dict[tuple[uuid.UUID, asyncio.AbstractEventLoop | None], Runtime] = {}


def runtime_for(settings: RunSettings) -> Runtime:
    """The run's runtime on this event loop, made on first use by any of its chunks."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:  # made before its loop starts (tests, embedding code): bound on first use
        loop = None
    key = (settings.run_id, loop)
    runtime = _runtimes.get(key)
    if runtime is None:
        runtime = _runtimes[key] = new_runtime(settings)
    return runtime


@contextlib.asynccontextmanager
async def chunk_runtime(settings: RunSettings) -> AsyncIterator[Runtime]:
    """A runtime of one chunk's own, closed with it: what a Dask worker uses, where each
    chunk runs in a new event loop and a worker may run many chunks of one run."""
    runtime = new_runtime(settings)
    try:
        yield runtime
    finally:
        await runtime.aclose()


_closing: set[asyncio.Task[None]] = set()


def release_runtime(run_id: uuid.UUID) -> list[asyncio.Task[None]]:
    """Let go of a run's agent tools, threads and judge connections; returns the closings
    started on the running loop (`close_runtime` waits for them).

    A worker runs flow after flow in one process: judge clients left open keep their
    keep-alive connections (and the server's side of them) until garbage collection. They are
    closed on the loop they were opened on when it is the running one; else it is gone already
    (and with it every task that held a tool open: their cancellation stopped the tools).
    """
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    tasks = []
    for key in [key for key in _runtimes if key[0] == run_id]:
        runtime = _runtimes.pop(key)
        if running is not None and key[1] in (running, None):
            task = running.create_task(runtime.aclose())
            _closing.add(task)
            task.add_done_callback(_closing.discard)
            tasks.append(task)
        else:
            runtime.invoker.close()
            runtime._judge_clients = {}
    return tasks


async def close_runtime(run_id: uuid.UUID) -> None:
    """`release_runtime`, waiting until the run's tools are stopped (a server the run started
    is gone when this returns, even when the run is being cancelled)."""
    tasks = release_runtime(run_id)
    if tasks:
        await asyncio.shield(asyncio.wait(tasks))
