"""The same run on a Dask cluster, as a Prefect flow run (Prefect's DaskTaskRunner) and without
Prefect (a plain Dask client): chunks run in worker processes, each worker several chunks of
one run, each chunk larger than --concurrency; every case is stored once, progress is read back
from the database, and a killed worker costs no stored result."""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from pathlib import Path

import pytest
from sqlmodel import Session, func, select

from proctor.cli import EXIT_BAD_INPUT, EXIT_ERROR, EXIT_FAILED, main
from proctor.execution import progress
from proctor.flows.evaluate import EvaluationRequest, run_evaluation
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow, RunStatus
from proctor.run.local_run import evaluate_in_process
from proctor.storage import get_engine
from tests.factories import echo_suite

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

CASES, CHUNK, CONCURRENCY = 60, 10, 2  # 6 chunks for 2 workers, 10 cases each at 2 at once
AGENT = """
import os, signal, time
from pathlib import Path

def agent(request):
    with open(os.environ["CALL_LOG"], "a") as handle:
        handle.write(f"{request.case_id} {os.getpid()}\\n")
    if request.case_id == "c25" and Path(os.environ["CALL_LOG"] + ".kill").exists():
        os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies mid-chunk
    time.sleep(0.02)
    return "answer " + request.input
"""


def _suite(folder: Path) -> Path:
    return echo_suite(folder, name="dask", cases=CASES, agent=AGENT, fails=lambda i: i % 5 == 0)


def _calls(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()]


def _stored(database_url: str, run_id: object) -> tuple[EvalRun, list[str], int]:
    with Session(get_engine(database_url)) as session:
        run = session.get(EvalRun, run_id)
        rows = session.exec(select(CaseResultRow.case_id).where(CaseResultRow.run_id == run_id)).all()
        metrics = session.exec(
            select(func.count()).select_from(MetricResultRow).where(MetricResultRow.run_id == run_id)
        ).one()
    return run, sorted(rows), metrics


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'results.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.mark.parametrize("orchestration", ["prefect", "none"])
def test_several_chunks_per_worker_store_every_result_once(
    tmp_path: Path, database: str, orchestration: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv("CALL_LOG", str(log))
    request = EvaluationRequest(
        suite=str(_suite(tmp_path)),
        database_url=database,
        report_dir=str(tmp_path / "r"),
        chunk_size=CHUNK,
        concurrency=CONCURRENCY,
        dask_address="local:2",
    )
    seen: list[int] = []
    unsubscribe = progress.subscribe(
        lambda event, data: seen.append(data["done"]) if event == "cases_stored" else None
    )
    try:
        run = run_evaluation if orchestration == "prefect" else evaluate_in_process
        summary = asyncio.run(run(request))
    finally:
        unsubscribe()
    assert (summary.total, summary.passed, summary.failed) == (CASES, 48, 12)

    calls = _calls(log)
    per_worker = Counter(pid for _, pid in calls)
    assert len(per_worker) == 2 and str(os.getpid()) not in per_worker  # two worker processes did the work
    assert max(per_worker.values()) > CHUNK  # a worker ran several chunks of the run (Dask balances them)
    assert Counter(case for case, _ in calls) == {f"c{i:02d}": 1 for i in range(CASES)}

    stored, rows, metrics = _stored(database, summary.run_id)
    assert stored.status is RunStatus.COMPLETED and stored.total_cases == CASES
    assert rows == [f"c{i:02d}" for i in range(CASES)] and metrics == CASES  # each case once
    assert "**Tests**: 48 passed, 12 failed" in (tmp_path / "r" / "report.md").read_text()
    assert seen and seen == sorted(seen) and seen[-1] == CASES  # progress, read from the database


def test_a_killed_worker_loses_no_stored_result_and_the_run_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """c25's agent kills its worker each time while the marker exists: Dask runs the chunk again
    (skipping what it stored) until it gives up; the run stops with exit 3, and `proctor resume`
    runs only what is missing."""
    import dask
    import distributed  # noqa: F401 - its defaults in dask's config first, or leaving set() drops them

    log = tmp_path / "calls.log"
    monkeypatch.setenv("CALL_LOG", str(log))
    Path(f"{log}.kill").touch()
    database = f"sqlite:///{tmp_path / 'results.db'}"
    suite = _suite(tmp_path)
    args = ["--db", database, "--chunk-size", str(CHUNK), "--concurrency", str(CONCURRENCY), "--no-progress"]
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        code = main(["run", str(suite), *args, "--dask-address", "local:2", "--no-prefect"])
    assert code == EXIT_ERROR
    assert "proctor resume" in capsys.readouterr().err
    with Session(get_engine(database)) as session:
        run = session.exec(select(EvalRun)).one()
    stored_before, rows_before, _ = _stored(database, run.id)
    # How many other chunks finished before the run stopped depends on the machine's load;
    # what may not vary: c25 is not stored, and nothing stored is lost or stored twice.
    assert stored_before.status is RunStatus.FAILED and "c25" not in rows_before
    assert rows_before == sorted(set(rows_before))
    calls_before = Counter(case for case, _ in _calls(log))
    assert calls_before["c25"] == 2  # its chunk ran twice: once more after the first kill
    # Run again, the chunk called no agent whose result it had committed: only c25's own chunk
    # ran anything twice (c25, and cases whose answer was not yet committed when the worker died).
    twice = {case for case, count in calls_before.items() if count > 1}
    assert twice <= {f"c{i}" for i in range(20, 30)}

    Path(f"{log}.kill").unlink()
    assert main(["resume", str(run.id)[:8], "--db", database, "--no-progress", "--no-prefect"]) == EXIT_FAILED
    stored, rows, metrics = _stored(database, run.id)
    assert stored.status is RunStatus.COMPLETED and stored.passed_cases == 48
    assert rows == [f"c{i:02d}" for i in range(CASES)] and metrics == CASES
    calls = Counter(case for case, _ in _calls(log))
    assert all(calls[case] == calls_before[case] for case in rows_before)  # resume ran only what was missing
    assert set(calls) == {f"c{i:02d}" for i in range(CASES)}


def test_a_bad_dask_address_is_an_input_error(tmp_path: Path, capsys) -> None:
    suite = _suite(tmp_path)
    assert (
        main(["run", str(suite), "--dask-address", "localhost", "--db", f"sqlite:///{tmp_path}/r.db"])
        == EXIT_BAD_INPUT
    )
    assert "expected a Dask scheduler address such as tcp://host:8786" in capsys.readouterr().err
