"""The model provider's quota (`proctor.calls.quota`, `proctor.calls.quota_http`): calls through the real
`openai` client against a fake server that enforces a quota as providers do."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from proctor.calls import quota
from proctor.calls.adaptive import AdaptiveLimiter
from proctor.calls.call_clock import limited
from proctor.calls.quota import QuotaLimit, parse_duration, parse_limit
from proctor.judges.client import JudgeClient
from tests.fakes import FakeOpenAI
from tests.fakes.quota import ProviderQuota


@pytest.fixture(autouse=True)
def _fresh_budgets() -> Iterator[None]:
    quota.forget()
    quota.configure()
    yield
    quota.forget()
    quota.configure()


async def _ask(base_url: str, calls: int, *, timeout_s: float | None = None) -> list[str]:
    client = JudgeClient(base_url=base_url, api_key="sk-quota")

    async def one(i: int) -> str:
        async with limited(timeout_s):
            reply = await client.complete(
                model="m", messages=[{"role": "user", "content": f"q{i}"}], json_mode=False
            )
            return reply.text

    try:
        return await asyncio.gather(*(one(i) for i in range(calls)))
    finally:
        await client.aclose()


def test_a_rate_limited_call_waits_for_its_turn_and_succeeds() -> None:
    # 2 requests per second, no rate-limit headers: only 429s with Retry-After say so
    server_quota = ProviderQuota(rpm=2, window_s=1.0, headers=False)
    with FakeOpenAI(default="ok", quota=server_quota) as api:
        replies = asyncio.run(_ask(api.base_url, 6))
    assert replies == ["ok"] * 6
    assert server_quota.refused > 0 and server_quota.admitted == 6
    stats = quota.snapshot()
    assert stats is not None and stats.rate_limited == server_quota.refused
    assert stats.requests == server_quota.admitted + server_quota.refused


def test_a_stated_limit_is_never_exceeded_at_the_server() -> None:
    quota.configure([parse_limit("60rpm")])  # one a second
    server_quota = ProviderQuota()  # counts and timestamps, refuses nothing
    with FakeOpenAI(default="ok", quota=server_quota) as api:
        asyncio.run(_ask(api.base_url, 4))
    times = server_quota.admitted_at
    assert len(times) == 4
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.9, gaps  # a busier machine only spaces them further


def test_a_limit_learned_from_the_providers_headers_is_reported() -> None:
    with FakeOpenAI(default="ok", quota=ProviderQuota(rpm=6000, tpm=10_000_000)) as api:
        asyncio.run(_ask(api.base_url, 2))
    stats = quota.snapshot()
    assert stats is not None and (stats.limit_rpm, stats.limit_tpm) == (6000, 10_000_000)


def test_a_calls_time_limit_does_not_count_its_wait_for_quota() -> None:
    # one call every 3 s: the third waits ~6 s for its turn, more than twice its 2.5 s limit,
    # which leaves an immediate answer 2.5 s even on a busy machine
    quota.configure([QuotaLimit(rpm=20)])
    with FakeOpenAI(default="ok") as api:
        replies = asyncio.run(_ask(api.base_url, 3, timeout_s=2.5))
    assert replies == ["ok"] * 3


def test_a_429_beyond_the_patience_is_an_error_that_names_the_providers_quota() -> None:
    from proctor.judges.client import JudgeError

    quota.configure(patience_s=0.2)
    expected = "the provider's rate limit: still HTTP 429 after waiting 0.2 s"
    with (
        FakeOpenAI(default="ok", quota=ProviderQuota(rpm=1, window_s=60)) as api,
        pytest.raises(JudgeError, match=expected),
    ):
        asyncio.run(_ask(api.base_url, 2))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("600rpm", QuotaLimit(rpm=600)),
        ("600RPM, 90000tpm", QuotaLimit(rpm=600, tpm=90000)),
        ("http://h:8000/v1=60rpm", QuotaLimit(endpoint="http://h:8000/v1", rpm=60)),
    ],
)
def test_stated_limits_are_read_as_typed(text: str, expected: QuotaLimit) -> None:
    assert parse_limit(text) == expected


def test_a_stated_limit_that_cannot_be_read_says_what_was_expected() -> None:
    with pytest.raises(ValueError, match="expected NUMBERrpm and/or NUMBERtpm"):
        parse_limit("600 per minute")


def test_reset_durations_read_as_providers_send_them() -> None:
    assert [parse_duration(v) for v in ("1s", "6m0s", "20ms", "0.5", "1m30.5s")] == [1, 360, 0.02, 0.5, 90.5]


def test_concurrency_grows_only_while_the_quota_has_room() -> None:
    async def run(room: bool) -> int:
        limiter = AdaptiveLimiter(2, maximum=10, headroom=lambda: room)

        async def case() -> None:
            async with limiter:
                await asyncio.sleep(0.01)

        await asyncio.gather(*(case() for _ in range(40)))
        return limiter.limit

    assert asyncio.run(run(room=False)) == 2
    assert asyncio.run(run(room=True)) == 10


SHARED_SUITE = """
name: shared-quota
model: {provider: openai, name: agent-model, endpoint: "URL", api_key: "${QUOTA_TEST_KEY}"}
instructions: Answer briefly.
test_cases:
  - {name: c0, input: 'What is six times seven?', ground_truth: '42'}
  - {name: c1, input: 'What is seven times six?', ground_truth: '42'}
evaluations:
  model: {provider: openai, name: judge-model, endpoint: "URL", api_key: "${QUOTA_TEST_KEY}"}
  metrics:
    - metric: llm_judge
      threshold: 0.5
"""


def test_agent_and_judge_calls_to_one_endpoint_share_one_budget(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from proctor.models.request import EvaluationRequest
    from proctor.run.local_run import evaluate_in_process
    from tests.fakes import judged

    def reply(body: dict) -> str:
        return judged(5) if body.get("model") == "judge-model" else "It is 42."

    monkeypatch.setenv("QUOTA_TEST_KEY", "sk-shared")
    server_quota = ProviderQuota()  # counts and timestamps, refuses nothing
    with FakeOpenAI(default=reply, quota=server_quota) as api:
        (tmp_path / "agent.yaml").write_text(SHARED_SUITE.replace("URL", api.base_url))
        request = EvaluationRequest(
            suite=str(tmp_path / "agent.yaml"),
            database_url=f"sqlite:///{tmp_path}/r.db",
            report_dir=str(tmp_path / "r"),
            rate_limits=[QuotaLimit(rpm=60)],  # one a second, agent and judge together
        )
        summary = asyncio.run(evaluate_in_process(request))
    assert (summary.total, summary.passed) == (2, 2)
    times = server_quota.admitted_at
    assert len(times) == 4  # two agent calls (on the agents' loop), two judge calls
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.9, gaps
    assert summary.quota is not None and summary.quota["requests"] == 4
    assert summary.quota["limit_rpm"] == 60


def test_cases_the_provider_still_refused_after_the_patience_are_redone_by_resume(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from proctor.models.request import EvaluationRequest
    from proctor.run.local_run import evaluate_in_process
    from tests.fakes import Fault, judged

    refusing = [True]

    def reply(body: dict) -> object:
        if body.get("model") == "judge-model":
            return Fault.status(429, "quota exhausted", retry_after=0.05) if refusing[0] else judged(5)
        return "It is 42."

    monkeypatch.setenv("QUOTA_TEST_KEY", "sk-resume")
    with FakeOpenAI(default=reply) as api:
        (tmp_path / "agent.yaml").write_text(SHARED_SUITE.replace("URL", api.base_url))
        fields = {
            "suite": str(tmp_path / "agent.yaml"),
            "database_url": f"sqlite:///{tmp_path}/r.db",
            "report_dir": str(tmp_path / "r"),
            "quota_patience_s": 0.3,
        }
        first = asyncio.run(evaluate_in_process(EvaluationRequest(**fields)))
        assert (first.total, first.passed, first.errored) == (2, 0, 2)  # the provider's, not the agent's
        refusing[0] = False  # the quota has come back
        quota.forget()
        again = asyncio.run(evaluate_in_process(EvaluationRequest(**fields, resume_run_id=first.run_id)))
    assert again.run_id == first.run_id
    assert (again.total, again.passed, again.errored) == (2, 2, 0)
