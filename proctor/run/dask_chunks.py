"""A chunk of cases on a Dask worker, with or without Prefect around it.

Each chunk runs in an event loop of its own, with a runtime of its own (`chunk_runtime`):
nothing loop-bound is shared between two chunks a worker runs. When a worker dies, Dask runs
its chunk again elsewhere: the cases that chunk had already stored are not run again, and
those whose agent had answered keep their stored turns (as `proctor resume` does), so no
agent is called twice for a result that was kept.
"""

from __future__ import annotations

import asyncio

from sqlmodel import Session, col, select

from proctor.execution import pipeline
from proctor.execution.chunking import Chunk
from proctor.execution.pipeline import AgentCheckpoint, CaseWork
from proctor.execution.runtime import RunSettings, chunk_runtime
from proctor.models.outcome import AgentTurn, CaseState
from proctor.models.tables import CaseResultRow
from proctor.storage import get_engine
from proctor.storage.rows import case_row_id


def not_yet_stored(works: list[CaseWork], settings: RunSettings) -> list[CaseWork]:
    """The chunk's cases without a final stored result; an agent's stored turns are reused."""
    by_id = {case_row_id(settings.run_id, work.case.case_id, work.attempt): work for work in works}
    with Session(get_engine(settings.database_url)) as session:
        rows = session.exec(select(CaseResultRow).where(col(CaseResultRow.id).in_(list(by_id)))).all()
    done = set()
    for row in rows:
        work = by_id[row.id]
        if CaseState(row.state).is_final:
            done.add(row.id)
        elif row.state == CaseState.AGENT_COMPLETE.value and work.checkpoint is None:
            work.checkpoint = AgentCheckpoint(
                turns=[AgentTurn.model_validate(turn) for turn in row.turns],
                agent_ms=row.agent_ms,
                started_at=row.started_at,
            )
    return [work for row_id, work in by_id.items() if row_id not in done]


async def run_chunk_alone(chunk: Chunk, settings: RunSettings) -> int:
    """All three stages of a chunk, its results stored by this process; the cases run."""
    works = await asyncio.to_thread(not_yet_stored, chunk.works, settings)
    async with chunk_runtime(settings) as runtime:
        await pipeline.run_chunk(works, runtime)
    chunk.works = []
    return len(works)


def run_chunk_on_worker(chunk: Chunk, settings: RunSettings) -> int:
    """What a Dask worker runs for a run without Prefect: the chunk in a new event loop."""
    return asyncio.run(run_chunk_alone(chunk, settings))
