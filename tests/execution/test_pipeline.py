"""The stages without Prefect: state transitions, checkpoints, files, concurrency."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.execution.pipeline import (
    CaseWork,
    RunSettings,
    execute_agent,
    process_files,
    release_runtime,
    run_chunk,
    runtime_for,
    scoring_may_wait,
)
from proctor.models.case import MetricSpec
from proctor.models.holodeck import FileInput
from proctor.models.outcome import CaseState
from proctor.models.tables import CaseResultRow, MetricResultRow
from proctor.storage import get_engine
from tests.factories import call, make_case, stored_run


def _settings(url: str, agent: str, tmp_path: Path, concurrency: int = 4) -> RunSettings:
    run_id = stored_run(url, agent=agent)
    return RunSettings(
        run_id=run_id,
        database_url=url,
        agent=agent,
        suite_dir=str(tmp_path),
        concurrency=concurrency,
        agent_timeout_s=5,
    )


def _agent(tmp_path: Path, body: str) -> str:
    (tmp_path / "agent_under_test.py").write_text(body)
    return f"{tmp_path / 'agent_under_test.py'}:agent"


def _rows(url: str, run_id: uuid.UUID) -> dict[str, CaseResultRow]:
    with Session(get_engine(url)) as session:
        rows = session.exec(select(CaseResultRow).where(CaseResultRow.run_id == run_id)).all()
        return {row.case_id: row for row in rows}


def test_the_agents_answer_is_stored_before_a_judge_scores_it(sqlite_url: str, tmp_path: Path) -> None:
    """A judge may be down or slow: the agent call it would score is kept whatever happens."""
    agent = _agent(tmp_path, "def agent(request):\n    return 'sunny'\n")
    settings = _settings(sqlite_url, agent, tmp_path)
    runtime = runtime_for(settings)
    works = [CaseWork(0, make_case(metrics=[MetricSpec(name="llm_judge")]))]
    asyncio.run(process_files(works, runtime))
    asyncio.run(execute_agent(works, runtime))
    row = _rows(sqlite_url, settings.run_id)["case_1"]
    assert (row.state, row.response, row.passed) == ("AGENT_COMPLETE", "sunny", None)
    release_runtime(settings.run_id)


@pytest.mark.parametrize(
    ("metric", "checkpointed"),
    [("contains", False), ("trajectory_match", False), ("llm_judge", True), ("code", True)],
)
def test_only_a_case_whose_scoring_may_wait_is_checkpointed(metric: str, checkpointed: bool) -> None:
    """Proctor's own quick metrics score a case within moments of its agent's answer: its one
    write is the final one. A judge, user code or a model to load gets the answer stored first."""
    assert scoring_may_wait(make_case(metrics=[MetricSpec(name=metric)])) is checkpointed


def test_a_full_chunk_ends_complete_with_metrics_stored_once(sqlite_url: str, tmp_path: Path) -> None:
    agent = _agent(
        tmp_path,
        "def agent(request):\n    request.record_tool_call('get_weather', {'city': 'Tokyo'})\n    return 'sunny'\n",
    )
    settings = _settings(sqlite_url, agent, tmp_path)
    specs = [MetricSpec(name="trajectory_match"), MetricSpec(name="contains", args={"values": ["rain"]})]
    case = make_case(expected_tools=[call("get_weather", city="Tokyo")], metrics=specs)
    works = asyncio.run(run_chunk([CaseWork(0, case)], runtime_for(settings)))
    release_runtime(settings.run_id)
    assert works[0].outcome.state is CaseState.COMPLETE and not works[0].outcome.passed
    row = _rows(sqlite_url, settings.run_id)["case_1"]
    assert row.state == "COMPLETE" and row.passed is False
    with Session(get_engine(sqlite_url)) as session:
        metrics = session.exec(select(MetricResultRow).where(MetricResultRow.run_id == settings.run_id)).all()
    assert sorted((m.metric_name, m.passed) for m in metrics) == [
        ("contains", False),
        ("trajectory_match", True),
    ]


def test_expected_tools_decide_tools_matched(sqlite_url: str, tmp_path: Path) -> None:
    agent = _agent(tmp_path, "def agent(request):\n    request.record_tool_call('search')\n    return 'x'\n")
    settings = _settings(sqlite_url, agent, tmp_path)
    works = [
        CaseWork(
            0,
            make_case(case_id="ok", expected_tools=None, metrics=[]).model_copy(
                update={"expected_tools": ["search"]}
            ),
        ),
        CaseWork(1, make_case(case_id="missing").model_copy(update={"expected_tools": ["search", "book"]})),
    ]
    asyncio.run(run_chunk(works, runtime_for(settings)))
    release_runtime(settings.run_id)
    rows = _rows(sqlite_url, settings.run_id)
    assert (rows["ok"].tools_matched, rows["ok"].passed) == (True, True)
    assert (rows["missing"].tools_matched, rows["missing"].passed) == (False, False)


def test_sync_agents_run_concurrently_up_to_the_limit(sqlite_url: str, tmp_path: Path) -> None:
    agent = _agent(
        tmp_path,
        "import threading, time\nactive = []\npeak = [0]\nlock = threading.Lock()\n"
        "def agent(request):\n    with lock:\n        active.append(1); peak[0] = max(peak[0], len(active))\n"
        "    time.sleep(0.1)\n    with lock:\n        active.pop()\n    return 'ok'\n",
    )
    settings = _settings(sqlite_url, agent, tmp_path, concurrency=8)
    works = [CaseWork(i, make_case(case_id=f"c{i}")) for i in range(16)]
    threads_before = threading.active_count()
    started = time.perf_counter()
    asyncio.run(run_chunk(works, runtime_for(settings)))
    elapsed = time.perf_counter() - started
    release_runtime(settings.run_id)
    from proctor.agents.targets import load_target

    assert load_target(agent).__globals__["peak"][0] == 8
    assert elapsed < 1.0  # 16 x 0.1 s in two waves of 8, not one by one
    assert len(_rows(sqlite_url, settings.run_id)) == 16
    assert threading.active_count() - threads_before <= 8 + 2  # the agent's threads, and the writer's


def test_files_become_markdown_for_the_agent(sqlite_url: str, tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_text("item,price\ncoffee,3.50\ntea,2.80\n")
    agent = _agent(tmp_path, "def agent(request):\n    return request.files_markdown\n")
    settings = _settings(sqlite_url, agent, tmp_path)
    case = make_case(
        files=[FileInput(path="prices.csv", type="csv")],
        metrics=[MetricSpec(name="contains", args={"values": ["coffee", "3.50"]})],
    )
    works = asyncio.run(run_chunk([CaseWork(0, case)], runtime_for(settings)))
    release_runtime(settings.run_id)
    processed = works[0].outcome.processed_files[0]
    assert processed.error is None and "| coffee | 3.50 |" in processed.markdown_content
    assert processed.metadata["format"] == "csv"
    assert works[0].outcome.passed


def test_a_file_outside_the_suite_folder_fails_the_case(sqlite_url: str, tmp_path: Path) -> None:
    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    (tmp_path / "secret.txt").write_text("do not read")
    agent = _agent(suite_dir, "def agent(request):\n    return 'should not run'\n")
    settings = _settings(sqlite_url, agent, suite_dir)
    case = make_case(files=[FileInput(path="../secret.txt", type="text")])
    works = asyncio.run(run_chunk([CaseWork(0, case)], runtime_for(settings)))
    release_runtime(settings.run_id)
    outcome = works[0].outcome
    assert outcome.state is CaseState.FILES_FAILED and outcome.turns == []
    assert "leaves the suite folder" in outcome.errors[0]
    row = _rows(sqlite_url, settings.run_id)["case_1"]
    assert row.state == "FILES_FAILED" and row.passed is False and "do not read" not in str(row.files)
