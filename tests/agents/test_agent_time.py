"""The agent's time is its own: `max_execution_time` verdicts do not move with the machine's load.

Each suite is run twice, once on a quiet machine and once beside busy loops on every core, for
every kind of agent Proctor calls (an `openai:` agent, an `http:` endpoint, a Python `def` and
`async def`). Half the cases answer at once, half take 1.5 s against a 0.7 s limit, and every
case's grader keeps Proctor's own loop busy for 0.75 s while the next case's agent is called (the
"scoring of other cases" that once fell inside an agent's measured time). The verdicts must be the same both times, and the ones the suite was
written for. Nothing here times anything: only verdicts are compared.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session, select

from proctor.models.request import EvaluationRequest
from proctor.models.tables import CaseResultRow
from proctor.run.local_run import evaluate_in_process
from proctor.storage import get_engine
from tests.fakes.openai_server import FakeOpenAI, Fault

pytestmark = pytest.mark.flow

SLOW_S, LIMIT_MS = 1.5, 700
CASES = ["fast 0", "slow 0", "fast 1", "fast 2", "slow 1"]

GRADER = """
import time

def burn(context):  # Proctor's own work while other cases wait for their agents
    end = time.perf_counter() + 0.75
    while time.perf_counter() < end:
        pass
    return True
"""

AGENTS = {
    "python": f"""
import time

def agent(request):
    time.sleep({SLOW_S} if request.input.startswith("slow") else 0)
    return "ok"
""",
    "python-async": f"""
import asyncio

async def agent(request):
    await asyncio.sleep({SLOW_S} if request.input.startswith("slow") else 0)
    return "ok"
""",
}


def _reply(body: dict) -> object:
    asked = body["messages"][-1]["content"]
    return Fault.hang(SLOW_S, then="ok") if asked.startswith("slow") else "ok"


def _agent_target(kind: str, folder: Path, base_url: str) -> str:
    if kind in AGENTS:
        (folder / "agent.py").write_text(AGENTS[kind])
        return str(folder / "agent.py") + ":agent"
    if kind == "openai":
        (folder / "agent.yaml").write_text(
            f'name: timed\nmodel: {{name: m, endpoint: "{base_url}", api_key: "${{TIMED_KEY}}"}}\n'
        )
        return f"openai:{folder / 'agent.yaml'}"
    (folder / "endpoint.yaml").write_text(  # the fake's chat API, as any JSON endpoint
        textwrap.dedent(f"""
        url: {base_url}/chat/completions
        request: {{model: m, messages: [{{role: user, content: "{{{{ input }}}}"}}]}}
        response: {{answer: choices.0.message.content}}
        """)
    )
    return f"http:{folder / 'endpoint.yaml'}"


def _suite(folder: Path) -> Path:
    (folder / "grader.py").write_text(GRADER)
    suite = {
        "eval_set_id": "timed",
        "metadata": {
            "eval_config": {
                "criteria": {
                    "max_execution_time": {"max_ms": LIMIT_MS},
                    "code": {"grader": str(folder / "grader.py") + ":burn"},
                }
            }
        },
        "eval_cases": [
            {
                "eval_id": text.replace(" ", "_"),
                "conversation": [{"invocation_id": "t1", "user_content": {"role": "user", "content": text}}],
            }
            for text in CASES
        ],
    }
    path = folder / "timed.evalset.json"
    path.write_text(json.dumps(suite))
    return path


@pytest.fixture
def busy_cores() -> Iterator[None]:
    """A busy loop on every core (and one more), each stopped by its own pid, and bounded in
    time anyway should the test die before it stops them."""
    loops = [
        subprocess.Popen(
            [sys.executable, "-c", "import time\nend = time.time() + 300\nwhile time.time() < end: pass"]
        )
        for _ in range((os.cpu_count() or 2) + 1)
    ]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def _verdicts(suite: Path, agent: str, database_url: str) -> dict[str, bool]:
    request = EvaluationRequest(suite=str(suite), agent=agent, database_url=database_url, concurrency=2)
    summary = asyncio.run(evaluate_in_process(request))
    with Session(get_engine(database_url)) as session:
        rows = session.exec(select(CaseResultRow).where(CaseResultRow.run_id == summary.run_id)).all()
    return {row.case_id: row.passed for row in rows}


@pytest.mark.parametrize("kind", ["openai", "http", "python", "python-async"])
def test_verdicts_on_the_agents_time_are_the_same_on_a_quiet_and_a_loaded_machine(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIMED_KEY", "test-key")
    suite = _suite(tmp_path)
    with FakeOpenAI(default=_reply) as api:
        agent = _agent_target(kind, tmp_path, api.base_url)
        quiet = _verdicts(suite, agent, f"sqlite:///{tmp_path / 'quiet.db'}")
        request.getfixturevalue("busy_cores")
        loaded = _verdicts(suite, agent, f"sqlite:///{tmp_path / 'loaded.db'}")
    written_for = {text.replace(" ", "_"): text.startswith("fast") for text in CASES}
    assert quiet == written_for
    assert loaded == quiet
