"""Vanna's `LLMAsJudgeEvaluator` through Proctor's judge client, against the local fake OpenAI
server: Vanna's prompt, its reading of the reply, and the judge's PASSED line as the verdict."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator

import pytest

from proctor.judges import Judge, JudgeCache, JudgeClient
from proctor.metrics import REGISTRY, BoundMetric, score_metric
from proctor.metrics import runner as metric_runner
from proctor.models.case import MetricSpec
from proctor.storage import get_engine
from tests.factories import agent_turn, make_case, make_ctx
from tests.fakes import FakeOpenAI, Fault

CRITERIA = "The answer names the month with the highest revenue."
VANNAS_PROMPT = """You are evaluating an AI agent's response to a user query.

User Query: Which month sold best?

Agent's Response:
March, with 1.2M.

Evaluation Criteria:
The answer names the month with the highest revenue.

Please evaluate the response and provide:
1. A score from 0.0 to 1.0 (where 1.0 is perfect)
2. Whether it passes (score >= 0.7)
3. Brief reasoning for your evaluation

Respond in this format:
SCORE: <number>
PASSED: <yes/no>
REASONING: <your explanation>
"""


@pytest.fixture
def api() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default="SCORE: 1.0\nPASSED: yes\nREASONING: fine") as server:
        yield server


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metric_runner, "RETRY_DELAYS_S", (0.0, 0.0, 0.0))


def _ctx(**replace):
    case = make_case(
        input="Which month sold best?", metadata={"expected_outcome": None}, source_format="vanna"
    )
    return dataclasses.replace(make_ctx(case, agent_turn("March, with 1.2M.")), **replace)


def _score(api: FakeOpenAI, ctx=None, cache: JudgeCache | None = None):
    spec = MetricSpec(name="LLMAsJudgeEvaluator", args={"criteria": CRITERIA})
    client = JudgeClient(base_url=api.base_url, api_key="sk-test")
    judge = Judge.for_spec(spec, client, cache, default_model="judge-model", timeout_s=10)
    return asyncio.run(score_metric(BoundMetric(spec, REGISTRY.build(spec), judge), ctx or _ctx()))


def test_the_judge_is_asked_vannas_prompt_alone_at_temperature_zero(api: FakeOpenAI) -> None:
    result = _score(api)
    (request,) = api.completions
    assert request["body"]["messages"] == [{"role": "user", "content": VANNAS_PROMPT}]
    assert request["body"]["temperature"] == 0.0 and "response_format" not in request["body"]
    assert (result.score, result.passed, result.reason) == (1.0, True, "fine")
    assert result.details["judge_response"] == "SCORE: 1.0\nPASSED: yes\nREASONING: fine"


@pytest.mark.parametrize(
    ("reply", "score", "passed", "reason"),
    [
        ("SCORE: 0.9\nPASSED: no\nREASONING: wrong month", 0.9, False, "wrong month"),  # PASSED decides
        ("SCORE: 0.2\nPASSED: Yes\nREASONING: lenient", 0.2, True, "lenient"),
        ("SCORE: 0.8\nPASSED: pass\r\nREASONING: ok\r", 0.8, True, "ok"),
        ("Looks right to me.", 0.5, False, "Looks right to me."),  # unreadable: 0.5, failed
        ("SCORE: high\nPASSED: yes", 0.5, True, "SCORE: high\nPASSED: yes"),
        ("  SCORE: 0.9\n PASSED: yes", 0.5, False, "  SCORE: 0.9\n PASSED: yes"),  # lines must start so
        ("", 0.5, False, ""),
    ],
)
def test_the_reply_is_read_as_vanna_reads_it(
    api: FakeOpenAI, reply: str, score: float, passed: bool, reason: str
) -> None:
    api.script(reply)
    result = _score(api)
    assert (result.score, result.passed, result.reason, result.error) == (score, passed, reason, None)
    assert len(api.completions) == 1  # an unreadable reply is Vanna's verdict, not retried


def test_a_score_outside_0_to_1_is_the_judges_error_never_stored(api: FakeOpenAI) -> None:
    api.script("SCORE: 8\nPASSED: yes", "SCORE: 8\nPASSED: yes", "SCORE: 8\nPASSED: yes")
    result = _score(api)
    assert result.score is None and result.passed is False and "outside 0..1" in result.error


def test_an_agent_that_failed_is_not_judged(api: FakeOpenAI) -> None:
    result = _score(api, _ctx(agent_error="agent crashed"))
    assert (result.score, result.passed, result.reason) == (
        0.0,
        False,
        "Agent execution failed: agent crashed",
    )
    assert api.completions == []


def test_a_judge_that_cannot_be_reached_fails_with_its_error(api: FakeOpenAI) -> None:
    api.script(Fault.status(500), Fault.status(500), Fault.status(500))
    result = _score(api)
    assert result.score is None and result.passed is False and result.error


def test_only_readable_replies_are_cached(api: FakeOpenAI, tmp_path) -> None:
    cache = JudgeCache(get_engine(f"sqlite:///{tmp_path / 'cache.db'}"))
    api.script("no format here", "SCORE: 0.9\nPASSED: yes\nREASONING: good")
    assert _score(api, cache=cache).score == 0.5
    assert _score(api, cache=cache).score == 0.9  # asked again, not the unreadable reply
    assert _score(api, cache=cache).cached_calls == 1 and len(api.completions) == 2


def test_the_run_says_why_a_judged_case_failed_in_words_true_of_it(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """A judge that scores 0.9 and says `PASSED: no` failed the case by its PASSED line: the
    failing-case table says that (and the judge's reason), not "below threshold" (0.9 is not
    below 0.7); a score under the threshold is still said to be below it."""
    from proctor.cli import main

    (tmp_path / "agent.py").write_text("def agent(request):\n    return 'March, with 1.2M.'\n")
    (tmp_path / "d.dataset.yaml").write_text(
        "dataset:\n  name: judged\n  metadata: {agent: agent.py:agent}\n"
        f"  evaluators: [{{name: LLMAsJudgeEvaluator, criteria: {CRITERIA!r}}}]\n"
        "  test_cases:\n    - {id: high, message: a}\n    - {id: low, message: b}\n"
    )

    def reply(body: dict) -> str:
        if "User Query: a" in body["messages"][0]["content"]:
            return "SCORE: 0.9\nPASSED: no\nREASONING: It names February."
        return "SCORE: 0.2\nPASSED: no\nREASONING: Off topic."

    with FakeOpenAI(default=reply) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("COLUMNS", "250")  # the table's cells on one line each
        database = f"sqlite:///{tmp_path / 'r.db'}"
        code = main(
            ["run", str(tmp_path / "d.dataset.yaml"), "--db", database, "--no-prefect", "--no-progress"]
        )
    out = " ".join(capsys.readouterr().out.split())
    assert code == 1
    assert "LLMAsJudgeEvaluator failed: It names February." in out
    assert "LLMAsJudgeEvaluator below threshold" in out  # the 0.2
    assert out.count("below threshold") == 1
