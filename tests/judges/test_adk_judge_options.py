"""ADK's `judge_model_options` on the wire: `judge_model_config` is carried by every judge call
as ADK passes it to its judge model, ADK's judges get plain text (no JSON mode) unless the
config asks for JSON, and `parallelism_limit` runs that many judge calls at once, as ADK's
semaphore does, with the same score as ADK's own evaluator. Needs the `adk` extra for the
parity test; the rest runs without it."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from proctor.judges import Judge, JudgeClient
from proctor.metrics import REGISTRY, BoundMetric, score_metric
from proctor.metrics import runner as metric_runner
from proctor.models.case import MetricSpec, Turn
from proctor.models.outcome import AgentTurn
from tests.factories import make_case, make_ctx
from tests.fakes import FakeOpenAI, prompt_of

VALID = '{"reasoning": "same", "is_the_agent_response_valid": "valid"}'


@pytest.fixture
def api() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=VALID) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metric_runner, "RETRY_DELAYS_S", (0.0, 0.0, 0.0))


def _score(api: FakeOpenAI, spec: MetricSpec, ctx: Any) -> Any:
    client = JudgeClient(base_url=api.base_url, api_key="sk-test")
    judge = Judge.for_spec(spec, client, None, default_model="judge-model", timeout_s=30)
    return asyncio.run(score_metric(BoundMetric(spec, REGISTRY.build(spec), judge), ctx))


def _answered(question: str = "When do you open?", answer: str = "At nine.") -> Any:
    case = make_case(Turn(turn_id="t1", input=question, expected_response="We open at 9am."))
    return make_ctx(case, AgentTurn(turn_id="t1", input=question, response=answer))


CONFIG = {
    "temperature": 0.0,
    "top_p": 0.5,
    "max_output_tokens": 300,
    "stop_sequences": ["END"],
    "seed": 11,
    "presence_penalty": 0.1,
    "frequency_penalty": 0.2,
    "system_instruction": {"parts": [{"text": "Be strict."}, {"text": "Be brief."}]},
}


def test_judge_model_config_is_sent_with_every_sample(api: FakeOpenAI) -> None:
    spec = MetricSpec(name="final_response_match_v2", args={"num_samples": 3, "judge_model_config": CONFIG})
    result = _score(api, spec, _answered())
    assert result.score == 1.0
    bodies = [request["body"] for request in api.completions]
    assert len(bodies) == 3
    for body in bodies:  # temperature 0 as given: not Proctor's sampling temperature
        assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (0.0, 0.5, 300, 11)
        assert (body["stop"], body["presence_penalty"], body["frequency_penalty"]) == (["END"], 0.1, 0.2)
        assert body["messages"][0] == {"role": "system", "content": "Be strict.\nBe brief."}
        assert "response_format" not in body  # ADK's judges reply in plain text


def test_adk_judges_ask_for_plain_text_unless_the_config_asks_for_json(api: FakeOpenAI) -> None:
    _score(api, MetricSpec(name="final_response_match_v2", args={"num_samples": 1}), _answered())
    [plain] = api.completions
    assert "response_format" not in plain["body"] and len(plain["body"]["messages"]) == 1
    api.reset()
    config = {"response_mime_type": "application/json", "temperature": 0.9}
    _score(
        api,
        MetricSpec(name="final_response_match_v2", args={"num_samples": 1, "judge_model_config": config}),
        _answered(),
    )
    [json_mode] = api.completions
    assert json_mode["body"]["response_format"] == {"type": "json_object"}
    assert json_mode["body"]["temperature"] == 0.9


def test_hallucinations_v1_sends_the_config_on_both_of_its_calls(api: FakeOpenAI) -> None:
    api.script(
        "<sentence>At nine.</sentence>",
        "sentence: At nine.\nlabel: supported\nrationale: r\nsupporting_excerpt: null\ncontradicting_excerpt: null",
    )
    spec = MetricSpec(name="hallucinations_v1", args={"judge_model_config": {"temperature": 0.4, "seed": 3}})
    assert _score(api, spec, _answered()).score == 1.0
    assert [(r["body"]["temperature"], r["body"]["seed"]) for r in api.completions] == [(0.4, 3), (0.4, 3)]


def _verdicts(*verdicts: str) -> str:
    rubrics = ("polite", "The answer is polite."), ("hours", "The answer gives the hours.")
    return "\n".join(
        f"ID: {rubric_id}\nProperty: {text}\nRationale: r.\nVerdict: {verdict}\n"
        for (rubric_id, text), verdict in zip(rubrics, verdicts, strict=True)
    )


# Per invocation (told apart by its question), the replies its three samples get, in whatever
# order they are asked: the multiset per invocation, hence the majority, is the same for ADK.
PLAN = {
    "When do you open?": [_verdicts("yes", "yes"), _verdicts("yes", "no"), _verdicts("no", "no")],
    "And on Sunday?": [_verdicts("no", "yes"), _verdicts("no", "yes"), _verdicts("yes", "yes")],
}


class ConcurrentReplies:
    """Replies to a judge only once `parties` calls are waiting together: a run that asks one
    at a time never gets past the barrier (its replies then read as nothing)."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=30)
        self.asked: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        prompt = prompt_of(body)
        question = next(q for q in PLAN if q in prompt.split("<main_prompt>")[-1])
        with self.lock:
            index, self.asked[question] = self.asked[question], self.asked[question] + 1
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            return "no concurrency"
        return PLAN[question][index]


def test_parallelism_limit_runs_judge_calls_at_once_and_scores_as_adk() -> None:
    pytest.importorskip("google.adk", reason="google-adk is not installed (pip install -e '.[adk]')")
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.eval_metrics import EvalMetric, JudgeModelOptions, RubricsBasedCriterion
    from google.adk.evaluation.eval_rubrics import Rubric, RubricContent
    from google.adk.evaluation.rubric_based_final_response_quality_v1 import (
        RubricBasedFinalResponseQualityV1Evaluator,
    )
    from google.genai import types

    from tests.judges.adk_backend import run_adk

    name = "rubric_based_final_response_quality_v1"
    rubrics = [("polite", "The answer is polite."), ("hours", "The answer gives the hours.")]
    exchanges = [("When do you open?", "At nine."), ("And on Sunday?", "Closed.")]
    turns = [AgentTurn(turn_id=f"t{i}", input=q, response=a) for i, (q, a) in enumerate(exchanges)]
    case = make_case(*(Turn(turn_id=t.turn_id, input=t.input) for t in turns))
    spec = MetricSpec(
        name=name,
        args={
            "rubrics": [{"rubric_id": i, "rubric_content": {"text_property": t}} for i, t in rubrics],
            "num_samples": 3,
            "parallelism_limit": 3,
        },
    )
    with (
        FakeOpenAI(default=ConcurrentReplies(3)) as proctor_api,
        FakeOpenAI(default=ConcurrentReplies(3)) as adk_api,
    ):
        result = _score(proctor_api, spec, make_ctx(case, *turns))
        criterion = RubricsBasedCriterion(
            threshold=0.8,
            rubrics=[Rubric(rubric_id=i, rubric_content=RubricContent(text_property=t)) for i, t in rubrics],
            judge_model_options=JudgeModelOptions(num_samples=3, parallelism_limit=3),
        )
        evaluator = RubricBasedFinalResponseQualityV1Evaluator(
            EvalMetric(metric_name=name, criterion=criterion)
        )
        text = lambda role, value: types.Content(role=role, parts=[types.Part(text=value)])  # noqa: E731
        invocations = [
            Invocation(user_content=text("user", q), final_response=text("model", a)) for q, a in exchanges
        ]
        adk = run_adk(evaluator, adk_api.base_url, "_judge_model", invocations)
        sent = sorted(prompt_of(r["body"]) for r in proctor_api.completions)
        assert sent == sorted(prompt_of(r["body"]) for r in adk_api.completions) and len(sent) == 6
    # invocation 1: polite yes (2 of 3), hours no (1 of 3); invocation 2: polite no, hours yes
    assert adk.overall_score == pytest.approx(0.5, abs=1e-12)
    assert result.error is None and abs(result.score - adk.overall_score) <= 1e-9
    assert [turn["met"] for turn in result.details["per_turn"]] == [
        {"polite": 1.0, "hours": 0.0},
        {"polite": 0.0, "hours": 1.0},
    ]
