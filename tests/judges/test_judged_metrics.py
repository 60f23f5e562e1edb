"""Judged metrics against a local OpenAI-compatible server, with the real `openai` client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from proctor.judges import Judge, JudgeCache, JudgeClient
from proctor.metrics import REGISTRY, BoundMetric, score_metric
from proctor.metrics import runner as metric_runner
from proctor.models.agentflow import Rubric, ToolCall
from proctor.models.case import MetricSpec, Turn
from proctor.models.outcome import AgentTurn
from proctor.storage import get_engine
from tests.factories import make_case, make_ctx
from tests.fakes import FakeOpenAI, Fault, judged, prompt_of


@pytest.fixture
def api() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=judged(5)) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metric_runner, "RETRY_DELAYS_S", (0.0, 0.0, 0.0))


def _score(api: FakeOpenAI, spec: MetricSpec, ctx=None, cache: JudgeCache | None = None):
    """Score one metric as a run would, its judge built from the spec and pointed at the fake."""
    client = JudgeClient(base_url=api.base_url, api_key="sk-test-secret")
    judge = Judge.for_spec(spec, client, cache, default_model="judge-model", timeout_s=10)
    bound = BoundMetric(spec, REGISTRY.build(spec), judge)
    ctx = ctx or make_ctx(
        make_case(input="When do you open?", expected_response="We open at 9am."),
        AgentTurn(
            turn_id="turn_1",
            input="When do you open?",
            response="Doors open at nine.",
            tool_calls=[ToolCall(name="get_hours", args={}, result={"open": "09:00"})],
        ),
    )
    return asyncio.run(score_metric(bound, ctx))


def test_llm_judge_passes_and_fails_on_the_judges_score(api: FakeOpenAI) -> None:
    api.script(judged(5, "same meaning"), judged(2, "different"))
    good = _score(api, MetricSpec(name="llm_judge"))
    bad = _score(api, MetricSpec(name="llm_judge"))
    assert (good.score, good.passed, good.reason) == (1.0, True, "same meaning")
    assert (bad.score, bad.passed) == (0.25, False)
    assert good.details["raw_score"] == 5 and good.details["scale"] == 5
    assert good.model_used == "judge-model" and good.judge_calls == 1
    assert good.prompt_tokens > 0 and good.completion_tokens > 0
    prompt = prompt_of(api.completions[0]["body"])
    assert "We open at 9am." in prompt and "Doors open at nine." in prompt
    assert api.completions[0]["body"]["response_format"] == {"type": "json_object"}


def test_a_threshold_may_be_given_on_the_judges_scale(api: FakeOpenAI) -> None:
    api.script(judged(4), judged(3))
    spec = MetricSpec(name="llm_judge", scale=5, threshold=3.5)
    assert _score(api, spec).passed is True
    result = _score(api, spec)
    assert result.passed is False and result.threshold == pytest.approx(0.625)


def test_rate_limits_are_waited_out_and_server_errors_retried(api: FakeOpenAI) -> None:
    api.script(Fault.status(429, retry_after=0.01), Fault.status(503), judged(4))
    result = _score(api, MetricSpec(name="llm_judge", retry_on_failure=2))
    # the 429 is waited out by the endpoint's quota budget, under the metric; the 503 is retried
    assert (result.score, result.retry_count, result.error) == (0.75, 1, None)
    assert len(api.completions) == 3


def test_a_judge_that_keeps_failing_gives_an_error_never_a_score(api: FakeOpenAI) -> None:
    api.script(Fault.status(500), Fault.status(500), Fault.status(500))
    result = _score(api, MetricSpec(name="llm_judge", retry_on_failure=2))
    assert result.score is None and result.passed is False and result.retry_count == 2
    assert "HTTP 500" in result.error and result.model_used == "judge-model"


def test_a_judge_that_hangs_times_out(api: FakeOpenAI) -> None:
    # The hang outlasts any timeout (the server's stop cuts it short); the timeout is long
    # enough for an immediate answer on a busy machine, so load cannot change the verdict.
    api.script(Fault.hang(120), judged(5))
    result = _score(api, MetricSpec(name="llm_judge", timeout_ms=3000, retry_on_failure=1))
    assert result.score == 1.0 and result.retry_count == 1  # the second attempt answered
    api.script(Fault.hang(120), Fault.hang(120))
    result = _score(api, MetricSpec(name="llm_judge", timeout_ms=3000, retry_on_failure=1))
    assert result.score is None and (
        "within 3 s" in result.error or "timed out after 3000 ms" in result.error
    )


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Fault.malformed(), "not JSON"),
        (Fault.empty_choices(), "no choices"),
        ("I would say four out of five.", "not JSON"),
        (json.dumps({"score": 9, "reason": "x"}), "outside the scale"),
    ],
)
def test_unusable_replies_are_errors(api: FakeOpenAI, reply, message: str) -> None:
    spec = MetricSpec(name="llm_judge")
    api.script(reply, reply, reply)  # the first attempt and the two default retries
    result = _score(api, spec)
    assert result.score is None and message in result.error
    if isinstance(reply, str) and not reply.startswith("{"):
        assert result.details["raw_reply"] == reply


def test_a_reply_with_no_choices_is_paid_for_as_the_server_counted_it(api: FakeOpenAI) -> None:
    api.script(Fault.empty_choices(), judged(4))
    result = _score(api, MetricSpec(name="llm_judge", retry_on_failure=1))
    sent = api.usage_sent
    assert result.score == 0.75 and result.judge_calls == 2 == len(sent)
    assert result.prompt_tokens == sum(u["prompt_tokens"] for u in sent) > sent[1]["prompt_tokens"]
    assert result.completion_tokens == sum(u["completion_tokens"] for u in sent)


def test_rubrics_combine_as_the_weighted_mean(api: FakeOpenAI) -> None:
    api.script(
        json.dumps({"rubrics": [{"name": "helpfulness", "score": 5}, {"name": "clarity", "score": 2}]})
    )
    rubrics = [
        Rubric(name="helpfulness", description="helpful?", scoring_guide="5=very", weight=2.0).model_dump(),
        Rubric(name="clarity", description="clear?", scoring_guide="5=very", weight=1.0).model_dump(),
    ]
    result = _score(api, MetricSpec(name="rubric_based", args={"rubrics": rubrics}))
    assert result.details["raw_score"] == pytest.approx(4.0) and result.score == pytest.approx(0.75)
    assert [r["name"] for r in result.details["rubrics"]] == ["helpfulness", "clarity"]
    assert "5=very" in prompt_of(api.completions[0]["body"])


def test_a_rubric_the_judge_skipped_is_an_error(api: FakeOpenAI) -> None:
    api.default = json.dumps({"rubrics": [{"name": "helpfulness", "score": 5}]})
    rubrics = [{"name": n, "description": "d", "scoring_guide": "g"} for n in ("helpfulness", "clarity")]
    result = _score(api, MetricSpec(name="rubric_based", args={"rubrics": rubrics}))
    assert result.score is None and "clarity" in result.error


def test_samples_are_averaged(api: FakeOpenAI) -> None:
    api.script(judged(5), judged(4), judged(3))
    result = _score(api, MetricSpec(name="relevance", args={"num_samples": 3}))
    assert result.details["raw_score"] == 4 and result.score == 0.75 and result.judge_calls == 3
    assert {c["body"]["temperature"] for c in api.completions} == {0.7}


def test_geval_writes_its_steps_then_scores(api: FakeOpenAI) -> None:
    api.script(json.dumps({"steps": ["Check the hours", "Check politeness"]}), judged(4))
    result = _score(api, MetricSpec(name="geval", args={"criteria": "States the opening hours politely."}))
    assert result.score == 0.75 and result.details["evaluation_steps"] == [
        "Check the hours",
        "Check politeness",
    ]
    assert result.judge_calls == 2 and "1. Check the hours" in prompt_of(api.completions[1]["body"])


def test_groundedness_shows_the_judge_the_tool_results(api: FakeOpenAI) -> None:
    result = _score(api, MetricSpec(name="groundedness"))
    prompt = prompt_of(api.completions[0]["body"])
    assert result.passed and 'get_hours({}) -> {"open": "09:00"}' in prompt and "supported by" in prompt


def test_a_custom_prompt_replaces_the_template(api: FakeOpenAI) -> None:
    _score(api, MetricSpec(name="llm_judge", custom_prompt="Grade {{ output }} against {{ expected }}."))
    assert prompt_of(api.completions[0]["body"]) == "Grade Doors open at nine. against We open at 9am.."


def test_adk_final_response_match_v2_takes_the_majority(api: FakeOpenAI) -> None:
    valid = json.dumps({"reasoning": "ok", "is_the_agent_response_valid": "valid"})
    invalid = json.dumps({"reasoning": "no", "is_the_agent_response_valid": "invalid"})
    api.script(valid, valid, invalid, valid, invalid)
    result = _score(api, MetricSpec(name="final_response_match_v2"))
    assert result.score == 1.0 and result.judge_calls == 5
    assert result.details["per_turn"][0]["votes"] == [1.0, 1.0, 0.0, 1.0, 0.0]


def test_adk_hallucinations_count_supported_and_not_applicable_sentences(api: FakeOpenAI) -> None:
    """ADK's two steps: the segmenter's <sentence>s, then the validator's labels; supported and
    not_applicable count as 1, unsupported 0 (the parity with ADK's own evaluator is checked in
    test_adk_conversation_judges.py)."""
    api.script(
        "<sentence>Doors open at nine.</sentence><sentence>We serve breakfast.</sentence><sentence>Hi!</sentence>",
        "\n\n".join(
            f"sentence: {sentence}\nlabel: {label}\nrationale: r\nsupporting_excerpt: null\n"
            "contradicting_excerpt: null"
            for sentence, label in [
                ("Doors open at nine.", "supported"),
                ("We serve breakfast.", "unsupported"),
                ("Hi!", "not_applicable"),
            ]
        ),
    )
    result = _score(api, MetricSpec(name="hallucinations_v1"))
    assert result.score == pytest.approx(2 / 3) and len(api.completions) == 2
    validator_prompt = prompt_of(api.completions[1]["body"])
    assert "<sentence>We serve breakfast.</sentence>" in validator_prompt
    assert '"response": {\n      "open": "09:00"' in validator_prompt  # the tool's result is context


def test_adk_rubric_checklist_reads_adk_rubrics(api: FakeOpenAI) -> None:
    api.script(_verdicts(polite=True, cites=False))
    rubrics = [
        {"rubricId": "polite", "rubricContent": {"textProperty": "The answer is polite."}},
        {"rubricId": "cites", "rubricContent": {"textProperty": "The answer cites a source."}},
    ]
    result = _score(
        api,
        MetricSpec(
            name="rubric_based_final_response_quality_v1", args={"rubrics": rubrics, "num_samples": 1}
        ),
    )
    assert result.score == 0.5 and "The answer cites a source." in prompt_of(api.completions[0]["body"])


def test_identical_calls_are_answered_from_the_cache(api: FakeOpenAI, sqlite_url: str) -> None:
    cache = JudgeCache(get_engine(sqlite_url))
    api.script(judged(4))
    first = _score(api, MetricSpec(name="llm_judge"), cache=cache)
    second = _score(api, MetricSpec(name="llm_judge"), cache=cache)
    assert first.score == second.score == 0.75
    assert (first.cached_calls, second.cached_calls) == (0, 1) and len(api.completions) == 1


def test_unusable_replies_are_not_cached(api: FakeOpenAI, sqlite_url: str) -> None:
    cache = JudgeCache(get_engine(sqlite_url))
    api.script("not json at all", judged(5))
    result = _score(api, MetricSpec(name="llm_judge", retry_on_failure=1), cache=cache)
    assert result.score == 1.0 and result.retry_count == 1 and len(api.completions) == 2


def test_the_api_key_goes_only_in_the_authorization_header(api: FakeOpenAI) -> None:
    result = _score(api, MetricSpec(name="llm_judge"))
    request = api.completions[0]
    headers = {name.lower(): value for name, value in request["headers"].items()}
    assert headers["authorization"] == "Bearer sk-test-secret"
    assert "sk-test-secret" not in json.dumps(request["body"])
    assert "sk-test-secret" not in result.model_dump_json()


def test_judged_metrics_need_a_judge() -> None:
    spec = MetricSpec(name="llm_judge")
    bound = BoundMetric(spec, REGISTRY.build(spec))
    ctx = make_ctx(make_case(expected_response="x"), AgentTurn(turn_id="turn_1", input="q", response="x"))
    result = asyncio.run(score_metric(bound, ctx))
    assert result.score is None and "needs a judge model" in result.error


def test_multi_turn_conversations_are_shown_to_the_judge(api: FakeOpenAI) -> None:
    case = make_case(
        Turn(turn_id="t1", input="Weather in Paris?"),
        Turn(turn_id="t2", input="And tomorrow?", expected_response="Rain tomorrow."),
    )
    turns = [
        AgentTurn(turn_id="t1", input="Weather in Paris?", response="Sunny."),
        AgentTurn(turn_id="t2", input="And tomorrow?", response="Rain."),
    ]
    _score(api, MetricSpec(name="llm_judge"), ctx=make_ctx(case, *turns))
    prompt = prompt_of(api.completions[0]["body"])
    assert "[user] Weather in Paris?" in prompt and "[assistant] Sunny." in prompt


QUALITY_METRICS = [
    "groundedness",
    "relevance",
    "coherence",
    "fluency",
    "similarity",
    "hallucination",
    "safety",
    "factual_accuracy",
]


@pytest.mark.parametrize("name", QUALITY_METRICS)
def test_every_quality_metric_passes_on_a_high_score_and_fails_on_a_low_one(
    api: FakeOpenAI, name: str
) -> None:
    api.script(judged(5), judged(1))
    high, low = _score(api, MetricSpec(name=name)), _score(api, MetricSpec(name=name))
    assert (high.score, high.passed, low.score, low.passed) == (1.0, True, 0.0, False)


def _verdicts(**met: bool) -> str:
    """A reply in ADK's rubric format (ID/Property/Rationale/Verdict per rubric)."""
    return "\n".join(
        f"ID: {k}\nProperty: -\nEvidence: -\nRationale: -\nVerdict: {'yes' if v else 'no'}\n"
        for k, v in met.items()
    )


def test_adk_rubrics_on_the_case_and_invocations_are_judged_and_pooled_as_adk_does(api: FakeOpenAI) -> None:
    """Threshold only: the rubrics come from the case (every turn) and from one invocation,
    those typed as ADK reads them (an untyped one is not sent). Turn 1 has 3 rubrics, 1 met;
    turn 2 has 1, met. ADK pools every verdict: 2 of 4 = 0.5 (the mean of the turns' shares
    would be 0.67)."""
    typed = {"type": "FINAL_RESPONSE_QUALITY"}
    case_rubric = {"rubric_id": "polite", "rubric_content": {"text_property": "Polite."}, **typed}
    turn_rubrics = [
        {"rubric_id": "hours", "rubric_content": {"text_property": "Gives the hours."}, **typed},
        {"rubric_id": "source", "rubric_content": {"text_property": "Cites a source."}, **typed},
        {"rubric_id": "untyped", "rubric_content": {"text_property": "Never sent."}},
    ]
    case = make_case(
        Turn(turn_id="t1", input="When do you open?", metadata={"adk_rubrics": turn_rubrics}),
        Turn(turn_id="t2", input="Thanks"),
        metadata={"adk_rubrics": [case_rubric]},
    )
    turns = [
        AgentTurn(turn_id="t1", input="When do you open?", response="At nine."),
        AgentTurn(turn_id="t2", input="Thanks", response="You're welcome!"),
    ]
    # turn 1, three samples each: polite yes/no/no -> no; hours yes x3 -> yes; source no/no/yes -> no.
    # turn 2: polite yes/yes/no -> yes.
    api.script(
        _verdicts(polite=True, hours=True, source=False),
        _verdicts(polite=False, hours=True, source=False),
        _verdicts(polite=False, hours=True, source=True),
        _verdicts(polite=True),
        _verdicts(polite=True),
        _verdicts(polite=False),
    )
    spec = MetricSpec(name="rubric_based_final_response_quality_v1", threshold=0.5, args={"num_samples": 3})
    result = _score(api, spec, make_ctx(case, *turns))
    assert result.score == pytest.approx(2 / 4)
    first_prompt = prompt_of(api.completions[0]["body"])
    assert (
        "Gives the hours." in first_prompt and "Polite." in first_prompt and "Never sent." not in first_prompt
    )
    assert "Gives the hours." not in prompt_of(api.completions[3]["body"])
