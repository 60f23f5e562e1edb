"""A suite scored by an LLM judge, end to end: stored judge usage, the cache across runs."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.flows.evaluate import EvaluationRequest, run_evaluation
from proctor.loaders import SuiteError
from proctor.models.tables import MetricResultRow
from proctor.storage import get_engine
from tests.fakes import FakeOpenAI, judged, prompt_of

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

SUITE = """
name: hours-agent
test_cases:
  - name: opening
    input: When do you open?
    ground_truth: We open at 9am.
  - name: closing
    input: When do you close?
    ground_truth: We close at 5pm.
evaluations:
  model: {name: judge-model}
  metrics:
    - metric: llm_judge
      threshold: 0.7
"""


@pytest.fixture
def judged_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, FakeOpenAI]]:
    (tmp_path / "agent.py").write_text(
        textwrap.dedent("""
        def agent(request):
            return "Doors open at nine." if "open" in request.input else "We shut at noon."
    """)
    )
    (tmp_path / "agent.yaml").write_text(SUITE)

    def score_by_answer(body: dict) -> str:
        return judged(5, "same") if "Doors open at nine." in prompt_of(body) else judged(1, "wrong time")

    with FakeOpenAI(default=score_by_answer) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-sentinel")
        yield tmp_path, api


def _run(folder: Path, url: str, **fields):
    request = EvaluationRequest(
        suite=str(folder / "agent.yaml"),
        agent=f"{folder / 'agent.py'}:agent",
        database_url=url,
        report_dir=str(folder / "reports"),
        **fields,
    )
    return asyncio.run(run_evaluation(request))


def _metrics(url: str, run_id) -> list[MetricResultRow]:
    with Session(get_engine(url)) as session:
        return list(session.exec(select(MetricResultRow).where(MetricResultRow.run_id == run_id)))


def test_a_judged_suite_stores_scores_usage_and_reuses_the_cache(judged_suite, sqlite_url: str) -> None:
    folder, api = judged_suite
    first = _run(folder, sqlite_url)
    assert (first.total, first.passed, first.failed) == (2, 1, 1)
    rows = {m.case_id: m for m in _metrics(sqlite_url, first.run_id)}
    assert rows["opening"].score == 1.0 and rows["closing"].score == 0.0
    assert rows["opening"].model_used == "judge-model" and rows["opening"].judge_calls == 1
    assert rows["opening"].prompt_tokens > 0 and rows["opening"].cached_calls == 0
    assert len(api.completions) == 2

    second = _run(folder, sqlite_url)
    assert len(api.completions) == 2, "an identical rerun must not pay for judge calls again"
    assert all(m.cached_calls == 1 for m in _metrics(sqlite_url, second.run_id))
    assert "**Judge calls**: 2 (2 answered from the cache)" in (folder / "reports" / "report.md").read_text()

    _run(folder, sqlite_url, judge_cache=False)
    assert len(api.completions) == 4


def test_the_judges_key_is_never_stored_or_reported(judged_suite, sqlite_url: str) -> None:
    folder, _ = judged_suite
    _run(folder, sqlite_url)
    written = [path for path in folder.rglob("*") if path.is_file()]
    assert any(path.name.startswith("results.db") for path in written)  # the database and its WAL
    for path in written:
        assert b"sk-judge-sentinel" not in path.read_bytes(), path


def test_a_judged_suite_without_a_key_is_refused_before_running(
    judged_suite, monkeypatch, sqlite_url
) -> None:
    folder, api = judged_suite
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(SuiteError, match="no API key for the judge"):
        _run(folder, sqlite_url)
    assert api.completions == []
