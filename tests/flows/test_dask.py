"""The same flow on a Dask cluster (Prefect's DaskTaskRunner): chunks run in worker
processes, which write their results to the one database; each case is stored once."""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from pathlib import Path

import pytest
from sqlmodel import Session, func, select

from proctor.cli import EXIT_BAD_INPUT, main
from proctor.flows.evaluate import EvaluationRequest, evaluate
from proctor.models.tables import CaseResultRow, EvalRun, MetricResultRow, RunStatus
from proctor.storage import get_engine
from tests.factories import echo_suite

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

CASES = 40
AGENT = """
import os, time

def agent(request):
    with open(os.environ["CALL_LOG"], "a") as handle:
        handle.write(f"{request.case_id} {os.getpid()}\\n")
    time.sleep(0.05)
    return "answer " + request.input
"""


def _suite(folder: Path) -> Path:
    return echo_suite(folder, name="dask", cases=CASES, agent=AGENT, fails=lambda i: i % 5 == 0)


def test_a_suite_on_a_local_dask_cluster_stores_every_result_once(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv("CALL_LOG", str(log))
    request = EvaluationRequest(
        suite=str(_suite(tmp_path)),
        database_url=postgres_url,
        report_dir=str(tmp_path / "r"),
        chunk_size=4,
        dask_address="local:2",
    )
    summary = asyncio.run(evaluate(request))
    assert (summary.total, summary.passed, summary.failed) == (CASES, 32, 8)

    calls = [line.split() for line in log.read_text().splitlines()]
    workers = {pid for _, pid in calls}
    assert len(workers) == 2 and str(os.getpid()) not in workers  # two worker processes did the work
    assert Counter(case for case, _ in calls) == {f"c{i:02d}": 1 for i in range(CASES)}

    with Session(get_engine(postgres_url)) as session:
        run = session.get(EvalRun, summary.run_id)
        assert run.status is RunStatus.COMPLETED and run.total_cases == CASES
        rows = session.exec(select(CaseResultRow.case_id).where(CaseResultRow.run_id == run.id)).all()
        assert sorted(rows) == [f"c{i:02d}" for i in range(CASES)]  # each case once
        metrics = session.exec(
            select(func.count()).select_from(MetricResultRow).where(MetricResultRow.run_id == run.id)
        ).one()
        assert metrics == CASES
    assert "**Tests**: 32 passed, 8 failed" in (tmp_path / "r" / "report.md").read_text()


def test_a_bad_dask_address_is_an_input_error(tmp_path: Path, capsys) -> None:
    suite = _suite(tmp_path)
    assert (
        main(["run", str(suite), "--dask-address", "localhost", "--db", f"sqlite:///{tmp_path}/r.db"])
        == EXIT_BAD_INPUT
    )
    assert "expected a Dask scheduler address such as tcp://host:8786" in capsys.readouterr().err
