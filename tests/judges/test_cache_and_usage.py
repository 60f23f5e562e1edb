"""What the judge cache keeps and what judge calls cost: only usable replies are cached, every
reply that came back is paid for (failed attempts too), and cache answers count as saved."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from proctor.judges import Judge, JudgeCache, JudgeClient
from proctor.metrics import REGISTRY, BoundMetric, score_metric
from proctor.metrics import runner as metric_runner
from proctor.models.case import MetricSpec
from proctor.models.outcome import AgentTurn
from proctor.storage import get_engine
from tests.factories import make_case, make_ctx
from tests.fakes import FakeOpenAI, judged


@pytest.fixture
def api() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=judged(5)) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metric_runner, "RETRY_DELAYS_S", (0.0, 0.0, 0.0))


@pytest.fixture
def cache(sqlite_url: str) -> JudgeCache:
    return JudgeCache(get_engine(sqlite_url))


def _score(api: FakeOpenAI, spec: MetricSpec, cache: JudgeCache | None):
    client = JudgeClient(base_url=api.base_url, api_key="sk-test")
    judge = Judge.for_spec(spec, client, cache, default_model="judge-model", timeout_s=10)
    ctx = make_ctx(
        make_case(input="When do you open?", expected_response="We open at 9am."),
        AgentTurn(turn_id="turn_1", input="When do you open?", response="Doors open at nine."),
    )
    return asyncio.run(score_metric(BoundMetric(spec, REGISTRY.build(spec), judge), ctx))


def _tokens(api: FakeOpenAI) -> tuple[int, int]:
    """What the server charged for every completion it answered (its own usage fields)."""
    usages = api.usage_sent
    return sum(u["prompt_tokens"] for u in usages), sum(u["completion_tokens"] for u in usages)


def test_an_off_scale_score_is_not_cached_and_keeps_its_raw_reply(api: FakeOpenAI, cache) -> None:
    off_scale = json.dumps({"score": 7, "reason": "great"})
    api.script(off_scale, judged(4))
    result = _score(api, MetricSpec(name="llm_judge", retry_on_failure=1), cache)
    assert result.score == 0.75 and result.retry_count == 1
    assert len(api.completions) == 2  # the retry asked the judge again
    again = _score(api, MetricSpec(name="llm_judge"), cache)
    assert again.score == 0.75 and again.cached_calls == 1 and len(api.completions) == 2

    api.script(off_scale, off_scale, off_scale)
    failed = _score(api, MetricSpec(name="llm_judge", args={"num_samples": 2}), cache)
    assert failed.score is None and "outside the scale" in failed.error
    assert failed.details["raw_reply"] == off_scale


def test_a_rubric_reply_missing_a_rubric_is_not_cached(api: FakeOpenAI, cache) -> None:
    rubrics = [{"name": n, "description": "d", "scoring_guide": "g"} for n in ("helpfulness", "clarity")]
    partial = json.dumps({"rubrics": [{"name": "helpfulness", "score": 5}]})
    whole = json.dumps({"rubrics": [{"name": "helpfulness", "score": 5}, {"name": "clarity", "score": 3}]})
    api.script(partial, whole)
    spec = MetricSpec(name="rubric_based", args={"rubrics": rubrics}, retry_on_failure=1)
    assert _score(api, spec, cache).score == pytest.approx(0.75)
    assert len(api.completions) == 2
    assert _score(api, spec, cache).cached_calls == 1 and len(api.completions) == 2


def test_failed_attempts_are_paid_for_and_cache_answers_count_as_saved(api: FakeOpenAI, cache) -> None:
    off_scale = json.dumps({"score": 9, "reason": "x"})
    api.script(off_scale, off_scale, off_scale)
    failed = _score(api, MetricSpec(name="llm_judge"), cache)
    assert failed.error and failed.judge_calls == 3
    assert (failed.prompt_tokens, failed.completion_tokens) == _tokens(api) != (0, 0)

    api.reset()
    api.script(judged(5))
    paid = _score(api, MetricSpec(name="llm_judge", args={"num_samples": 2}), cache)
    spent = _tokens(api)
    assert (paid.prompt_tokens, paid.completion_tokens) == spent
    assert (paid.saved_prompt_tokens, paid.saved_completion_tokens) == (0, 0)

    rerun = _score(api, MetricSpec(name="llm_judge", args={"num_samples": 2}), cache)
    assert len(api.completions) == 2 and rerun.cached_calls == 2
    assert (rerun.prompt_tokens, rerun.completion_tokens) == (0, 0)
    assert (rerun.saved_prompt_tokens, rerun.saved_completion_tokens) == spent
