"""Limits on agents: a whole-case timeout, and a Prefect concurrency limit on model calls."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from proctor.flows.evaluate import EvaluationRequest, run_evaluation
from proctor.loaders import SuiteError

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

AGENT = """
import asyncio
active, peak = [0], [0]

async def agent(request):
    active[0] += 1
    peak[0] = max(peak[0], active[0])
    await asyncio.sleep(0.2)
    active[0] -= 1
    return "ok"
"""

SUITE = """
dataset:
  name: limits
  test_cases:
{cases}
"""


def _suite(tmp_path: Path, cases: int) -> tuple[Path, str]:
    (tmp_path / "slow_agent.py").write_text(textwrap.dedent(AGENT))
    lines = "\n".join(f"    - {{id: c{i}, message: hi, conversation_id: t{i}}}" for i in range(cases))
    (tmp_path / "d.yaml").write_text(SUITE.format(cases=lines))
    return tmp_path / "d.yaml", f"{tmp_path / 'slow_agent.py'}:agent"


def _run(**fields):
    return asyncio.run(run_evaluation(EvaluationRequest(**fields)))


def test_a_prefect_concurrency_limit_caps_model_calls(tmp_path: Path, sqlite_url: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

    with get_client(sync_client=True) as client:
        client.create_global_concurrency_limit(
            GlobalConcurrencyLimitCreate(name="proctor-test-model-calls", limit=1)
        )
    suite, agent = _suite(tmp_path, 3)
    summary = _run(
        suite=str(suite),
        agent=agent,
        database_url=sqlite_url,
        concurrency=3,
        model_call_limit="proctor-test-model-calls",
        report_dir=str(tmp_path / "r"),
    )
    from proctor.agents.targets import load_target

    assert summary.total == 3
    assert load_target(agent).__globals__["peak"][0] == 1  # three cases at once, one model call at a time


def test_an_unknown_concurrency_limit_is_refused(tmp_path: Path, sqlite_url: str) -> None:
    suite, agent = _suite(tmp_path, 1)
    with pytest.raises(SuiteError, match="no Prefect global concurrency limit named 'nope-limit'"):
        _run(suite=str(suite), agent=agent, database_url=sqlite_url, model_call_limit="nope-limit")


def test_a_case_that_runs_too_long_fails_with_the_reason(tmp_path: Path, sqlite_url: str) -> None:
    (tmp_path / "chatty.py").write_text(textwrap.dedent(AGENT))
    (tmp_path / "s.evalset.json").write_text(
        '{"eval_set_id": "s", "metadata": {"eval_config": {"criteria": {"contains": {"values": ["ok"]}}}},'
        ' "eval_cases": [{"eval_id": "long", "conversation": ['
        + ",".join(
            f'{{"invocation_id": "t{i}", "user_content": {{"role": "user", "content": "hi"}}}}'
            for i in range(5)
        )
        + "]}]}"
    )
    summary = _run(
        suite=str(tmp_path / "s.evalset.json"),
        agent=f"{tmp_path / 'chatty.py'}:agent",
        database_url=sqlite_url,
        case_timeout_s=0.5,
        report_dir=str(tmp_path / "r"),
    )
    assert (summary.total, summary.errored) == (1, 1)
    report = (tmp_path / "r" / "report.md").read_text()
    assert "exceeded its 0.5 s limit" in report


SHARED_AGENT = """
import asyncio, threading
lock = threading.Lock()
active, peak = [0], [0]

def enter():
    with lock:
        active[0] += 1
        peak[0] = max(peak[0], active[0])

def leave():
    with lock:
        active[0] -= 1

async def agent(request):
    enter()
    await asyncio.sleep(0.2)
    leave()
    return "Doors open at nine."
"""

JUDGED_SUITE = """
name: limited
test_cases:
{cases}
evaluations:
  model: {{name: judge-model}}
  metrics:
    - metric: llm_judge
      threshold: 0.7
"""


def test_the_model_call_limit_covers_judge_calls_and_agent_time_excludes_the_wait(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from sqlmodel import Session, select

    from proctor.agents.targets import load_target
    from proctor.models.tables import CaseResultRow
    from proctor.storage import get_engine
    from tests.fakes import FakeOpenAI, judged

    with get_client(sync_client=True) as client:
        client.create_global_concurrency_limit(
            GlobalConcurrencyLimitCreate(name="proctor-test-all-calls", limit=1)
        )
    (tmp_path / "agent.py").write_text(SHARED_AGENT)
    cases = "\n".join(
        f"  - {{name: c{i}, input: 'When do you open, {i}?', ground_truth: 9am}}" for i in range(4)
    )
    (tmp_path / "agent.yaml").write_text(JUDGED_SUITE.format(cases=cases))
    agent = f"{tmp_path / 'agent.py'}:agent"
    shared = load_target(agent).__globals__

    def judge_reply(body: dict) -> str:  # the judge is in flight as long as the agent would be
        shared["enter"]()
        time.sleep(0.5)
        shared["leave"]()
        return judged(5)

    with FakeOpenAI(default=judge_reply) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        summary = _run(
            suite=str(tmp_path / "agent.yaml"),
            agent=agent,
            database_url=sqlite_url,
            concurrency=4,
            model_call_limit="proctor-test-all-calls",
            report_dir=str(tmp_path / "r"),
        )
    assert (summary.total, summary.passed) == (4, 4) and len(api.completions) == 4
    assert shared["peak"][0] == 1, shared["peak"]  # four agents and four judge calls, never two at once
    with Session(get_engine(sqlite_url)) as session:
        rows = list(session.exec(select(CaseResultRow).where(CaseResultRow.run_id == summary.run_id)))
    waits = [turn["metadata"].get("wait_ms", 0) for row in rows for turn in row.turns]
    assert max(waits) >= 300  # the last case waited for three others' calls, stored apart...
    for row in rows:  # ...and not counted as the agent's time (compared, not timed: CI is busy)
        assert row.agent_ms == pytest.approx(sum(turn["latency_ms"] for turn in row.turns), abs=250)


TIMED_SUITE = """
name: limited
test_cases:
{cases}
evaluations:
  model: {{name: judge-model}}
  metrics:
    - metric: llm_judge
      threshold: 0.7
      timeout_ms: {timeout_ms}
      retry_on_failure: 1
"""


def _limited_judged_run(
    tmp_path: Path,
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
    *,
    limit: str,
    cases: int,
    timeout_ms: int,
    judge_s: float,
):
    """`cases` cases whose agent and judge calls share a limit of one slot; returns the run's
    summary, the fake judge and the shared counter of calls in flight (agent and judge)."""
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

    from proctor.agents.targets import load_target
    from tests.fakes import FakeOpenAI, judged

    with get_client(sync_client=True) as client:
        client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=limit, limit=1))
    (tmp_path / "agent.py").write_text(SHARED_AGENT)
    lines = "\n".join(
        f"  - {{name: c{i}, input: 'When do you open, {i}?', ground_truth: 9am}}" for i in range(cases)
    )
    (tmp_path / "agent.yaml").write_text(TIMED_SUITE.format(cases=lines, timeout_ms=timeout_ms))
    agent = f"{tmp_path / 'agent.py'}:agent"
    shared = load_target(agent).__globals__

    def judge_reply(body: dict) -> str:
        shared["enter"]()
        time.sleep(judge_s)
        shared["leave"]()
        return judged(5)

    with FakeOpenAI(default=judge_reply) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        summary = _run(
            suite=str(tmp_path / "agent.yaml"),
            agent=agent,
            database_url=sqlite_url,
            concurrency=cases,
            model_call_limit=limit,
            report_dir=str(tmp_path / "r"),
        )
        time.sleep(judge_s)  # a call still at the server when the run ended is counted too
    return summary, api, shared


def test_a_judges_timeout_counts_its_call_not_its_wait_for_a_slot(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Eight agents (0.2 s) and eight judges (0.6 s) one at a time: the last judge waits ~5.6 s
    # for its slot, nearly twice its 3 s timeout; a call itself takes a fifth of the timeout,
    # so a busy machine has 2.4 s of margin before a call's own time could reach it.
    summary, api, shared = _limited_judged_run(
        tmp_path,
        sqlite_url,
        monkeypatch,
        limit="proctor-test-slot-wait",
        cases=8,
        timeout_ms=3000,
        judge_s=0.6,
    )
    assert (summary.total, summary.passed, summary.errored) == (8, 8, 0)
    assert len(api.completions) == 8 and shared["peak"][0] == 1


def test_a_judge_call_given_up_keeps_its_slot_until_the_server_has_answered(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Judges that take 0.8 s against a 0.2 s timeout: every attempt is given up, and yet the
    # server never sees two calls at once under a limit of one.
    summary, api, shared = _limited_judged_run(
        tmp_path, sqlite_url, monkeypatch, limit="proctor-test-given-up", cases=2, timeout_ms=200, judge_s=0.8
    )
    assert (summary.total, summary.errored) == (2, 2)
    assert len(api.completions) == 4  # two attempts per case, each reached the server
    assert shared["peak"][0] == 1, shared["peak"]
