"""The state machine's stages as Prefect tasks, each over one chunk of cases.

A chunk travels between the stages inside a `Chunk` (see `proctor.execution.chunking`), a plain object
that Prefect does not walk.
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NONE

from proctor.execution import pipeline
from proctor.execution.chunking import Chunk
from proctor.execution.runtime import RunSettings
from proctor.run.dask_chunks import run_chunk_alone

__all__ = ["Chunk", "evaluate_chunk", "run_chunk"]


@task(name="process-files", task_run_name="process-files [{chunk.label}]", cache_policy=NONE)
async def process_files(chunk: Chunk, settings: RunSettings) -> Chunk:
    await pipeline.process_files(chunk.works, pipeline.runtime_for(settings))
    return chunk


@task(name="execute-agent", task_run_name="execute-agent [{chunk.label}]", cache_policy=NONE)
async def execute_agent(chunk: Chunk, settings: RunSettings) -> Chunk:
    # Cases scored only by quick metrics are scored and stored here, each as its agent answers:
    # waiting for the evaluate-metrics task would hold them until the whole chunk had answered.
    await pipeline.execute_agent(chunk.works, pipeline.runtime_for(settings), score_quick_cases=True)
    return chunk


@task(name="evaluate-metrics", task_run_name="evaluate-metrics [{chunk.label}]", cache_policy=NONE)
async def evaluate_metrics(chunk: Chunk, settings: RunSettings) -> Chunk:
    await pipeline.evaluate_metrics(chunk.works, pipeline.runtime_for(settings))
    return chunk


async def run_chunk(chunk: Chunk, settings: RunSettings) -> None:
    """Files, agent, metrics for one chunk: three task runs, every case persisted as it goes.

    Then the chunk lets go of its cases: Prefect keeps every task's result for the flow run's
    lifetime (to track dependencies), and each result is this same object, so without this a
    run would hold every outcome it ever computed (measured: 1.4 GB at 100,000 cases)."""
    chunk = await process_files(chunk, settings)
    chunk = await execute_agent(chunk, settings)
    chunk = await evaluate_metrics(chunk, settings)
    chunk.works = []


@task(name="evaluate-chunk", task_run_name="evaluate-chunk [{chunk.label}]", cache_policy=NONE)
async def evaluate_chunk(chunk: Chunk, settings: RunSettings) -> int:
    """All three stages of a chunk in one task, for a task runner that ships tasks to other
    processes (Dask): the chunk travels once, the worker writes its results to the database
    itself (skipping any a killed worker had stored), and only the number of cases run comes back."""
    return await run_chunk_alone(chunk, settings)
