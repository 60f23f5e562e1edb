"""The quota shared across processes (`proctor.calls.quota_share`): two `proctor run` processes
calling one endpoint with one key stay within the limit the user stated, together; a process
killed mid-run holds nothing back. Counted at a local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proctor.calls.quota import QuotaBudget
from proctor.calls.quota_share import QuotaShare
from proctor.models.quota import QuotaLimit
from proctor.storage import get_engine
from tests.fakes import FakeOpenAI
from tests.fakes.quota import ProviderQuota

RPM = 1200  # the stated limit: 20 requests a second for both processes together
WINDOW_S = 10.0  # counted over this long: 200 requests at the limit, 400 if each paced alone
SLACK = 1.25  # a loaded machine may deliver requests in bunches: the bound is still far below x2

SUITE = """
name: shared-quota-NAME
model: {provider: openai, name: NAME, endpoint: "URL", api_key: "${QUOTA_TEST_KEY}"}
instructions: Answer briefly.
evaluations: {metrics: [{type: standard, metric: equality}]}
test_cases:
CASES
"""


def _suite(folder: Path, name: str, cases: int, base_url: str) -> Path:
    lines = "\n".join(
        f"  - {{name: c{i}, input: 'Question {i}?', ground_truth: 'The answer is 42.'}}" for i in range(cases)
    )
    path = folder / f"{name}.yaml"
    path.write_text(SUITE.replace("NAME", name).replace("URL", base_url).replace("CASES", lines))
    return path


def _proctor_run(suite: Path, database: str, log: Path, *extra: str) -> subprocess.Popen:
    command = [
        sys.executable,
        "-c",
        "import sys; from proctor.cli import main; sys.exit(main(sys.argv[1:]))",
        "run",
        str(suite),
        "--no-prefect",
        "--no-progress",
        "--db",
        database,
        "--output",
        str(log.parent / f"reports-{suite.stem}"),
        "--rate-limit",
        f"{RPM}rpm",
        "--concurrency",
        "32",
        *extra,
    ]
    env = {**os.environ, "QUOTA_TEST_KEY": "sk-one-key"}
    env.pop("PREFECT_API_URL", None)
    return subprocess.Popen(
        command, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True
    )


def _busiest_window(times: list[float], window_s: float) -> int:
    times, most, start = sorted(times), 0, 0
    for end, moment in enumerate(times):
        while times[start] <= moment - window_s:
            start += 1
        most = max(most, end - start + 1)
    return most


class _Server:
    """Counts each process's requests, by model name, with their arrival times."""

    def __init__(self) -> None:
        self.quota = ProviderQuota()  # counts and timestamps, refuses nothing
        self.arrivals: dict[str, list[float]] = {}

    def reply(self, body: dict) -> str:
        self.arrivals.setdefault(body.get("model", ""), []).append(time.monotonic())
        return "The answer is 42."


def test_two_processes_stay_within_the_stated_limit_together(tmp_path: Path, sqlite_url: str) -> None:
    server = _Server()
    # each: 24 s alone at the limit, so the two overlap by far more than one window even when
    # one process starts 10 s after the other on a loaded machine
    cases = 480
    with FakeOpenAI(default=server.reply, quota=server.quota) as api:
        runs = [
            _proctor_run(_suite(tmp_path, name, cases, api.base_url), sqlite_url, tmp_path / f"{name}.log")
            for name in ("worker-a", "worker-b")
        ]
        for run, name in zip(runs, ("worker-a", "worker-b"), strict=True):
            assert run.wait(timeout=300) == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
    a, b = server.arrivals["worker-a"], server.arrivals["worker-b"]
    assert (len(a), len(b)) == (cases, cases)
    assert server.quota.refused == 0
    overlap = [t for t in a + b if max(a[0], b[0]) <= t <= min(a[-1], b[-1])]
    assert len(overlap) > WINDOW_S * RPM / 60, "the two runs hardly overlapped: nothing was shared"
    busiest = _busiest_window(a + b, WINDOW_S)
    assert busiest <= SLACK * RPM / 60 * WINDOW_S, f"{busiest} requests in {WINDOW_S:g} s"


def test_a_killed_process_holds_no_quota_back(tmp_path: Path, sqlite_url: str) -> None:
    server = _Server()
    with FakeOpenAI(default=server.reply, quota=server.quota) as api:
        doomed = _proctor_run(
            _suite(tmp_path, "doomed", 5000, api.base_url), sqlite_url, tmp_path / "doomed.log"
        )
        try:
            deadline = time.monotonic() + 120
            while len(server.arrivals.get("doomed", [])) < 40:  # mid-run, grants in hand
                assert doomed.poll() is None and time.monotonic() < deadline, (
                    tmp_path / "doomed.log"
                ).read_text()
                time.sleep(0.05)
        finally:
            os.killpg(doomed.pid, signal.SIGKILL)
            doomed.wait()
        killed_at = len(server.arrivals["doomed"])
        survivor = _proctor_run(
            _suite(tmp_path, "survivor", 100, api.base_url), sqlite_url, tmp_path / "s.log"
        )
        assert survivor.wait(timeout=300) == 0, (tmp_path / "s.log").read_text()[-3000:]
    # the dead process's grants lapsed with it: the survivor ran every case, none refused
    assert killed_at < 5000 and len(server.arrivals["survivor"]) == 100
    assert server.quota.refused == 0


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_budgets_of_two_processes_share_one_bucket_on_sqlite_and_postgresql(
    database: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("sqlite_url" if database == "sqlite" else "postgres_url")
    rpm, calls = 2400.0, 120  # per budget: 3 s alone, 6 s if they share
    granted: list[float] = []

    async def spend(budget: QuotaBudget) -> None:
        async def one() -> None:
            await budget.acquire(10)
            granted.append(time.monotonic())
            budget.release()

        await asyncio.gather(*(one() for _ in range(calls)))

    async def both() -> list[QuotaBudget]:
        # two budgets for one endpoint and key, as two processes each have theirs
        budgets = [
            QuotaBudget(
                "http://provider/v1",
                stated=QuotaLimit(rpm=rpm),
                share=QuotaShare(url, "http://provider/v1", "k", get_engine),
            )
            for _ in range(2)
        ]
        await asyncio.gather(*(spend(budget) for budget in budgets))
        return budgets

    budgets = asyncio.run(both())
    assert len(granted) == 2 * calls
    assert _busiest_window(granted, 5.0) <= SLACK * rpm / 60 * 5.0  # alone, each would send 2x
    trips = sum(budget.share.round_trips for budget in budgets if budget.share)
    assert trips < len(granted), "a database round trip per call"
