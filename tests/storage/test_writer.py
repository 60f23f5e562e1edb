"""The group-commit writer: results are durable when `save` returns, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import create_engine, text
from sqlmodel import Session, select

from proctor.execution.pipeline import CaseWork
from proctor.models.outcome import CaseState, ScoredMetric
from proctor.models.tables import CaseResultRow, MetricResultRow, RunStatus
from proctor.storage.db import get_engine, normalize_url
from proctor.storage.rows import case_row_id
from proctor.storage.runs import finish_run, resume_point, tally
from proctor.storage.writer import ResultWriter
from tests.factories import agent_turn, make_case, stored_run


def _new_run(url: str) -> uuid.UUID:
    return stored_run(url)


def _finished_work(position: int, passed: bool) -> CaseWork:
    work = CaseWork(position, make_case(case_id=f"case_{position}"))
    work.outcome.turns = [agent_turn("answer")]
    work.outcome.metrics = [
        ScoredMetric(
            metric_name="contains",
            score=1.0 if passed else 0.0,
            threshold=1.0,
            passed=passed,
            evaluation_time_ms=1,
            args={"values": ["x"]},
        )
    ]
    work.outcome.state = CaseState.COMPLETE
    return work


def _read_back(url: str, run_id: uuid.UUID) -> list[CaseResultRow]:
    """Through a brand-new engine, as another process would see the database."""
    engine = create_engine(normalize_url(url))
    try:
        with Session(engine) as session:
            return list(session.exec(select(CaseResultRow).where(CaseResultRow.run_id == run_id)))
    finally:
        engine.dispose()


def _checkpoint_then_final(url: str) -> None:
    run_id = _new_run(url)
    writer = ResultWriter(get_engine(url))
    work = CaseWork(0, make_case(case_id="weather"))
    work.outcome.turns = [agent_turn("sunny")]
    work.outcome.state = CaseState.AGENT_COMPLETE

    asyncio.run(writer.save(run_id, work.case, work.outcome, 0))
    [row] = _read_back(url, run_id)
    assert row.state == "AGENT_COMPLETE" and row.response == "sunny" and row.passed is None

    work.outcome.metrics = [
        ScoredMetric(metric_name="contains", score=1.0, threshold=1.0, passed=True, evaluation_time_ms=2)
    ]
    work.outcome.state = CaseState.COMPLETE
    asyncio.run(writer.save(run_id, work.case, work.outcome, 0))
    writer.close()
    [row] = _read_back(url, run_id)
    assert row.state == "COMPLETE" and row.passed is True
    assert row.id == case_row_id(run_id, "weather")
    with Session(get_engine(url)) as session:
        metrics = session.exec(select(MetricResultRow).where(MetricResultRow.run_id == run_id)).all()
    assert [(m.metric_name, m.score, m.passed) for m in metrics] == [("contains", 1.0, True)]


def test_a_checkpoint_is_updated_by_the_final_write_on_sqlite(sqlite_url: str) -> None:
    _checkpoint_then_final(sqlite_url)


@pytest.mark.postgres
def test_a_checkpoint_is_updated_by_the_final_write_on_postgres(postgres_url: str) -> None:
    _checkpoint_then_final(postgres_url)


def _many_concurrent_saves(url: str, count: int = 300) -> None:
    run_id = _new_run(url)
    writer = ResultWriter(get_engine(url))
    works = [_finished_work(i, passed=i % 3 != 0) for i in range(count)]

    async def save_all() -> None:
        await asyncio.gather(*(writer.save(run_id, w.case, w.outcome, w.position) for w in works))

    asyncio.run(save_all())
    writer.close()
    assert writer.writes == count
    assert writer.commits < count, "concurrent saves should share commits"
    with Session(get_engine(url)) as session:
        counts = tally(session=session, run_id=run_id)
        assert counts == {"total": count, "passed": count - 100, "errored": 0, "failed": 100}
        assert len(resume_point(session=session, run_id=run_id).finished) == count
        run = finish_run(session=session, run_id=run_id, status=RunStatus.COMPLETED)
        assert (run.total_cases, run.passed_cases, run.pass_rate) == (count, 200, pytest.approx(200 / 3))


def test_concurrent_saves_are_grouped_and_all_stored_on_sqlite(sqlite_url: str) -> None:
    _many_concurrent_saves(sqlite_url)


@pytest.mark.postgres
def test_concurrent_saves_are_grouped_and_all_stored_on_postgres(postgres_url: str) -> None:
    _many_concurrent_saves(postgres_url)


def test_a_rejected_write_fails_only_its_own_case(sqlite_url: str) -> None:
    run_id = _new_run(sqlite_url)
    writer = ResultWriter(get_engine(sqlite_url))
    good = _finished_work(1, passed=True)
    twin_a, twin_b = _finished_work(2, passed=True), _finished_work(2, passed=True)  # same case id

    async def save_all() -> list[object]:
        return await asyncio.gather(
            *(writer.save(run_id, w.case, w.outcome, w.position) for w in (good, twin_a, twin_b)),
            return_exceptions=True,
        )

    results = asyncio.run(save_all())
    writer.close()
    assert sum(isinstance(r, Exception) for r in results) == 1
    assert sorted(row.case_id for row in _read_back(sqlite_url, run_id)) == ["case_1", "case_2"]


def test_sqlite_database_is_in_wal_mode(sqlite_url: str) -> None:
    with get_engine(sqlite_url).connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
