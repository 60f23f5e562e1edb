"""Faults under load: 200 cases at concurrency 32, an agent failing one case in five and a
judge answering every fifth request with 429. The run completes, every case is counted
exactly once, every judged metric ends with a score (the 429s are waited out, never a case's
failure), and the summary counts the 429s the server sent."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlalchemy import distinct, func
from sqlmodel import Session, select

from proctor.agents import load_target
from proctor.models.tables import CaseResultRow
from proctor.storage import get_engine
from tests.fakes import FakeOpenAI, Fault, judged, prompt_of
from tests.resilience.harness import ended_with_verdict, reports, run_flow, stored, write_suite

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness")]

CASES = 200
WRONG = "I do not know."

# Seeded per case, so which cases fail does not depend on the order they run in.
AGENT = f"""
import asyncio
import random

SEED = 20261122


def fate(case_id):
    roll = random.Random(f"{{SEED}}:{{case_id}}").random()
    return "raise" if roll < 0.10 else "wrong" if roll < 0.20 else "ok"


async def flaky(request):
    await asyncio.sleep(random.Random(request.case_id).uniform(0, 0.02))
    what = fate(request.case_id)
    if what == "raise":
        raise ConnectionError(f"flaky backend on {{request.case_id}}")
    if what == "wrong":
        return {WRONG!r}
    return "answer " + request.input.split()[-1]
"""

METRICS = """
- metric: contains
  values: ["answer"]
- metric: llm_judge
  threshold: 0.7
  timeout_ms: 30000
"""


class RateLimitedJudge:
    """Every fifth request is a 429 with retry-after; the others score the answer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.rate_limited = 0

    def __call__(self, body: dict) -> object:
        with self.lock:
            self.requests += 1
            if self.requests % 5 == 0:
                self.rate_limited += 1
                return Fault.status(429, "rate limit reached", retry_after=0.2)
        return judged(1, "wrong") if WRONG in prompt_of(body) else judged(5, "same meaning")


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeOpenAI, RateLimitedJudge]]:
    # socketserver listens with a backlog of 5: a burst of new connections from 32+ metrics at
    # once would be reset, a network fault that is not this test's (and that the runner retries
    # too, which would blur the 429 accounting). A real endpoint accepts them.
    monkeypatch.setattr(ThreadingHTTPServer, "request_queue_size", 512)
    policy = RateLimitedJudge()
    with FakeOpenAI(default=policy) as api:
        monkeypatch.setenv("PROCTOR_JUDGE_BASE_URL", api.base_url)
        monkeypatch.setenv("PROCTOR_JUDGE_API_KEY", "sk-load-tests")
        yield api, policy


def test_200_flaky_cases_against_a_rate_limited_judge(
    tmp_path: Path, sqlite_url: str, judge: tuple[FakeOpenAI, RateLimitedJudge]
) -> None:
    api, policy = judge
    cases = {f"c{i:03d}": (f"question {i}", f"answer {i}") for i in range(CASES)}
    suite, agents = write_suite(tmp_path / "suite", metrics=METRICS, cases=cases, agents=AGENT)
    fate = load_target(agents + "flaky").__globals__["fate"]
    fates = {case_id: fate(case_id) for case_id in cases}
    raised = sorted(case_id for case_id, what in fates.items() if what == "raise")
    wrong = sorted(case_id for case_id, what in fates.items() if what == "wrong")

    serving_before = set(_connection_threads())  # other tests' fakes may still hold some
    started = time.perf_counter()
    state, summary = run_flow(
        suite=str(suite),
        agent=agents + "flaky",
        database_url=sqlite_url,
        report_dir=str(tmp_path / "reports"),
        concurrency=32,
        judge_cache=False,
    )
    wall = time.perf_counter() - started
    assert ended_with_verdict(state), summary

    # Exactly 200, once each, in the summary, the run row and the rows.
    assert summary.passed + summary.failed == summary.total == CASES
    db = stored(sqlite_url, summary.run_id)
    with Session(get_engine(sqlite_url)) as session:
        distinct_cases = session.exec(
            select(func.count(distinct(CaseResultRow.case_id))).where(CaseResultRow.run_id == summary.run_id)
        ).one()
    assert db.case_rows == distinct_cases == CASES
    run = db.run
    assert (run.status, run.total_cases, run.planned_cases) == ("completed", CASES, CASES)
    passed = [c for c, row in db.cases.items() if row.passed]
    errored = [c for c, row in db.cases.items() if row.state in ("AGENT_FAILED", "EVALUATION_FAILED")]
    failed = [c for c, row in db.cases.items() if not row.passed and c not in errored]
    assert len(passed) + len(failed) + len(errored) == CASES
    assert (run.passed_cases, run.failed_cases, run.errored_cases) == (
        len(passed),
        len(failed) + len(errored),  # the run's "failed" counts every case that did not pass
        len(errored),
    )
    assert (summary.passed, summary.errored) == (len(passed), len(errored))

    # The agent's failures are where the seed put them, and nowhere else.
    assert sorted(c for c, row in db.cases.items() if row.state == "AGENT_FAILED") == raised
    assert all(f"flaky backend on {c}" in db.cases[c].errors[0] for c in raised)
    assert not set(wrong) & set(passed)

    # Two metrics per answered case; every judged one has a score or an error.
    answered = CASES - len(raised)
    assert db.metric_rows == 2 * answered
    judged_rows = [m for m in db.metrics if m.metric_name == "llm_judge"]
    assert len(judged_rows) == answered
    assert all((m.score is None) != (m.error is None) for m in judged_rows)
    # No case fails for the provider's quota: every 429 was waited out (the endpoint's budget
    # asked again at its next turn), none reached a metric, and every request is accounted for.
    assert all(m.error is None and m.retry_count == 0 for m in judged_rows)
    assert (
        policy.rate_limited > 0 and len(api.completions) == policy.requests == answered + policy.rate_limited
    )
    assert summary.quota is not None and summary.quota["rate_limited"] == policy.rate_limited

    # The run closed its judge connections: the fake's keep-alive handler threads end.
    deadline = time.monotonic() + 5
    while set(_connection_threads()) - serving_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert set(_connection_threads()) - serving_before == set()

    junit = reports(tmp_path / "reports").junit
    assert (junit.get("tests"), junit.get("errors")) == (str(CASES), str(len(errored)))
    print(
        f"\nload: {CASES} cases, {len(passed)} passed / {len(failed)} failed / {len(errored)} errored "
        f"({len(raised)} agent raised, {len(wrong)} wrong answers); judge: {policy.requests} requests, "
        f"{policy.rate_limited} answered 429; wall {wall:.1f} s"
    )
    assert wall < 60  # about 10 s here; the bound catches a hang, not a slow machine


def _connection_threads() -> list[int | None]:
    """Threads serving a connection of a local fake (`ThreadingHTTPServer`), still open."""
    return [t.ident for t in threading.enumerate() if "process_request_thread" in t.name]
