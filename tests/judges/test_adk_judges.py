"""ADK's judged metrics as google-adk 2.13.0 runs them: the prompt Proctor's judge receives (over
the real openai client, from the local OpenAI-compatible server) is the one ADK's own
`format_auto_rater_prompt` builds for the same invocation, and the score Proctor gives for
scripted replies is what ADK's own parser, per-invocation aggregator and summarizer give for the
same replies, to 1e-9. Needs the `adk` extra; skipped without it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytestmark = pytest.mark.needs_extra  # CI runs these again with the adk extra installed
pytest.importorskip("google.adk", reason="google-adk is not installed (pip install -e '.[adk]')")

from google.adk.evaluation.app_details import AgentDetails, AppDetails  # noqa: E402
from google.adk.evaluation.eval_case import IntermediateData, Invocation  # noqa: E402
from google.adk.evaluation.eval_metrics import (  # noqa: E402
    EvalMetric,
    LlmAsAJudgeCriterion,
    RubricsBasedCriterion,
)
from google.adk.evaluation.eval_rubrics import Rubric, RubricContent  # noqa: E402
from google.adk.evaluation.evaluator import PerInvocationResult  # noqa: E402
from google.adk.evaluation.final_response_match_v2 import FinalResponseMatchV2Evaluator  # noqa: E402
from google.adk.evaluation.llm_as_judge_utils import get_eval_status  # noqa: E402
from google.adk.evaluation.rubric_based_final_response_quality_v1 import (  # noqa: E402
    RubricBasedFinalResponseQualityV1Evaluator,
)
from google.adk.evaluation.rubric_based_tool_use_quality_v1 import RubricBasedToolUseV1Evaluator  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.genai import types as genai_types  # noqa: E402

from proctor.agents.adk_agent import _dump  # noqa: E402
from proctor.judges import Judge, JudgeClient  # noqa: E402
from proctor.metrics import REGISTRY, BoundMetric, score_metric  # noqa: E402
from proctor.metrics import runner as metric_runner  # noqa: E402
from proctor.models.agentflow import ToolCall  # noqa: E402
from proctor.models.case import MetricSpec, Turn  # noqa: E402
from proctor.models.outcome import AgentTurn  # noqa: E402
from tests.factories import make_case, make_ctx  # noqa: E402
from tests.fakes import FakeOpenAI, prompt_of  # noqa: E402

UNREADABLE = "Looks fine to me, no label."  # what the judge says once the script runs out


@pytest.fixture
def api() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=UNREADABLE) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metric_runner, "RETRY_DELAYS_S", (0.0, 0.0, 0.0))


def _score(api: FakeOpenAI, spec: MetricSpec, ctx):
    client = JudgeClient(base_url=api.base_url, api_key="sk-test")
    judge = Judge.for_spec(spec, client, None, default_model="judge-model", timeout_s=30)
    return asyncio.run(score_metric(BoundMetric(spec, REGISTRY.build(spec), judge), ctx))


def _content(text: str | None) -> genai_types.Content | None:
    return None if text is None else genai_types.Content(role="model", parts=[genai_types.Part(text=text)])


def _reply(text: str) -> LlmResponse:
    return LlmResponse(content=_content(text))


def _adk_invocation(
    turn_input: str, response: str | None, calls: list[ToolCall] = (), **extra: Any
) -> Invocation:
    """The ADK invocation for the same turn Proctor sees: text, tool calls, their responses."""
    uses = [genai_types.FunctionCall(id=c.call_id, name=c.name, args=c.args) for c in calls]
    responses = [
        genai_types.FunctionResponse(
            id=c.call_id,
            name=c.name,
            response=c.result if isinstance(c.result, dict) else {"result": c.result},
        )
        for c in calls
        if c.result is not None
    ]
    return Invocation(
        user_content=genai_types.Content(role="user", parts=[genai_types.Part(text=turn_input)]),
        final_response=_content(response),
        intermediate_data=IntermediateData(tool_uses=uses, tool_responses=responses),
        **extra,
    )


def _adk_overall(
    evaluator, invocations: list[tuple[Invocation, Invocation | None]], replies: list[str], n: int
):
    """ADK's own score for the scripted replies: its prompt, parser, sample aggregator and summary."""
    prompts, results = [], []
    for index, (actual, expected) in enumerate(invocations):
        prompts.append(evaluator.format_auto_rater_prompt(actual, expected))
        samples = []
        for reply in replies[index * n : (index + 1) * n]:
            score = evaluator.convert_auto_rater_response_to_score(_reply(reply))
            samples.append(
                PerInvocationResult(
                    actual_invocation=actual,
                    expected_invocation=expected,
                    score=score.score,
                    rubric_scores=score.rubric_scores,
                    eval_status=get_eval_status(score.score, evaluator._threshold),
                )
            )
        results.append(evaluator.aggregate_per_invocation_samples(samples))
    return prompts, evaluator.aggregate_invocation_results(results).overall_score


def _valid(label: str) -> str:
    return json.dumps({"reasoning": "compared", "is_the_agent_response_valid": label}, indent=2)


FRM_REPLIES = [
    # turn 1: valid, invalid, list-form valid, "partially" (invalid), unreadable -> 2 of 4: a tie, invalid
    _valid("valid"),
    _valid("invalid"),
    '{\n  "reasoning": "fine",\n  "is_the_agent_response_valid": [valid],\n}',
    '{"reasoning": "meh", "is_the_agent_response_valid": "partially"}',
    "I cannot decide.",
    # turn 2: the field named "_invalid" (false -> valid), true, valid, then two ADK cannot read
    # ("partially valid": its regex stops at the space) -> valid
    '{"reasoning": "x", "is_the_agent_response_invalid": false}',
    _valid("true"),
    _valid("valid"),
    '{"is_the_agent_response_valid": "partially valid"}',
    "",
]


def test_final_response_match_v2_sends_adks_prompt_and_scores_as_adk(api: FakeOpenAI) -> None:
    turns = [
        ("When do you open?", "We open at 9am.", "Doors open at nine.", ["Let me check."]),
        ("And on Sunday? 日曜日は?", "Closed on Sunday.", "Sunday: closed — 休み.", []),
    ]
    case = make_case(
        *(
            Turn(
                turn_id=f"t{i}", input=q, expected_response=ref, expected_intermediate_responses=["Checking."]
            )
            for i, (q, ref, _, _) in enumerate(turns)
        )
    )
    agent_turns = [
        AgentTurn(turn_id=f"t{i}", input=q, response=answer, metadata={"intermediate_responses": inter})
        for i, (q, _, answer, inter) in enumerate(turns)
    ]
    api.script(*FRM_REPLIES)
    spec = MetricSpec(name="final_response_match_v2", args={"include_intermediate_responses_in_final": True})
    result = _score(api, spec, make_ctx(case, *agent_turns))

    criterion = LlmAsAJudgeCriterion(threshold=0.8, include_intermediate_responses_in_final=True)
    evaluator = FinalResponseMatchV2Evaluator(EvalMetric(metric_name=spec.name, criterion=criterion))
    pairs = [
        (
            Invocation(
                user_content=genai_types.Content(role="user", parts=[genai_types.Part(text=q)]),
                final_response=_content(answer),
                intermediate_data=IntermediateData(
                    intermediate_responses=[("agent", [genai_types.Part(text=t)]) for t in inter]
                ),
            ),
            Invocation(
                user_content=genai_types.Content(role="user", parts=[genai_types.Part(text=q)]),
                final_response=_content(ref),
                intermediate_data=IntermediateData(
                    intermediate_responses=[("agent", [genai_types.Part(text="Checking.")])]
                ),
            ),
        )
        for q, ref, answer, inter in turns
    ]
    prompts, adk_score = _adk_overall(evaluator, pairs, FRM_REPLIES, 5)

    sent = [prompt_of(request["body"]) for request in api.completions]
    assert [sent[0], sent[5]] == prompts
    assert all(len(r["body"]["messages"]) == 1 for r in api.completions)  # ADK sends no system prompt
    assert not any("response_format" in r["body"] for r in api.completions)  # and asks for plain text
    assert adk_score == pytest.approx(0.5, abs=1e-12)
    assert result.error is None and abs(result.score - adk_score) <= 1e-9
    assert result.passed is False


def test_final_response_match_v2_with_no_readable_reply_is_an_error_with_the_raw_text(
    api: FakeOpenAI,
) -> None:
    case = make_case(input="When do you open?", expected_response="At nine.")
    result = _score(
        api,
        MetricSpec(name="final_response_match_v2"),
        make_ctx(case, AgentTurn(turn_id="turn_1", input="When do you open?", response="9am")),
    )
    assert result.score is None and result.passed is False
    assert "could be read as ADK reads it" in result.error and UNREADABLE in result.details["raw_reply"]


RUBRICS = [
    ("polite", "The answer is polite."),
    ("hours", "The answer gives the **opening hours**."),
    ("lookup", "The agent looks the hours up with get_hours."),
]


def _verdicts(*items: tuple[str | None, str, str]) -> str:
    """An auto-rater reply in ADK's Property/Evidence/Rationale/Verdict format."""
    blocks = []
    for rubric_id, text, verdict in items:
        head = f"ID: {rubric_id}\n" if rubric_id else ""
        blocks.append(f"{head}Property: {text}\nEvidence: seen.\nRationale: because.\nVerdict: {verdict}\n")
    return "\n".join(blocks)


CALLS_T1 = [
    ToolCall(name="get_hours", args={"day": "mon", "n": 3.0}, call_id="c1", result={"open": "09:00"}),
    ToolCall(name="log", args=None, call_id="c2", result="logged ✓"),
    ToolCall(name="notify", args={}, call_id="c3"),
]
CALLS_T2 = [  # no call ids: as in ADK, both calls show the last id-less response
    ToolCall(name="get_hours", args={"day": "sun"}, result={"open": None}),
    ToolCall(name="get_holidays", args={}, result=["2026-12-25"]),
]
RUBRIC_REPLIES = [
    # turn 1 (3 rubrics), 3 samples
    _verdicts(("polite", "x", "Yes"), ("hours", "x", "no"), ("lookup", "x", "yes")),
    # matched by text (decorations, smart quotes), no ids; an unknown rubric is dropped
    _verdicts((None, "**The answer is polite.**", "no"), (None, "The answer gives the opening hours.", "yes"))
    + _verdicts((None, "Something else", "yes")),
    _verdicts(("polite", "x", "yes"), ("hours", "x", "unsure"), ("lookup", "x", "No.")),
    # turn 2 (the invocation adds no rubric): one partial reply (refused), one unreadable, one good
    "Property: The answer is polite.\nVerdict: yes\n",
    "I think it is fine.",
    _verdicts(("polite", "x", "yes"), ("hours", "x", "no"), ("lookup", "x", "no")),
]


HOURS_TOOL = genai_types.Tool(
    function_declarations=[
        genai_types.FunctionDeclaration(
            name="get_hours",
            description="Opening hours of one day — « jour ».",
            parameters_json_schema={"type": "object", "properties": {"day": {"type": "string"}}},
        )
    ]
)
APP = AppDetails(  # two agents: without events, ADK shows the first one's instructions
    agent_details={
        "front_desk": AgentDetails(name="front_desk", instructions="Greet, then hand hours questions on."),
        "hours": AgentDetails(name="hours", instructions="Use get_hours.", tool_declarations=[HOURS_TOOL]),
    }
)
RECORDED_APP = {  # the same, as a Proctor turn carries it (`adk_app_details`)
    name: {
        "instructions": agent.instructions,
        "tool_declarations": [_dump(t) for t in agent.tool_declarations],
    }
    for name, agent in APP.agent_details.items()
}


@pytest.mark.parametrize("with_app", [False, True], ids=["no-app-details", "instructions-and-tools"])
@pytest.mark.parametrize(
    ("name", "adk_class"),
    [
        ("rubric_based_final_response_quality_v1", RubricBasedFinalResponseQualityV1Evaluator),
        ("rubric_based_tool_use_quality_v1", RubricBasedToolUseV1Evaluator),
    ],
)
def test_rubric_judges_send_adks_prompt_and_score_as_adk(
    api: FakeOpenAI, name: str, adk_class, with_app: bool
) -> None:
    rubric_type = adk_class.RUBRIC_TYPE
    criterion_rubrics = [{"rubric_id": i, "rubric_content": {"text_property": t}} for i, t in RUBRICS[:2]]
    turn_rubric = {
        "rubric_id": "lookup",
        "rubric_content": {"text_property": RUBRICS[2][1]},
        "type": rubric_type,
    }
    case = make_case(
        Turn(turn_id="t1", input="When do you open on Monday?", metadata={"adk_rubrics": [turn_rubric]}),
        Turn(turn_id="t2", input="And Sunday?"),
    )
    agent_turns = [
        AgentTurn(
            turn_id="t1",
            input="When do you open on Monday?",
            response="9am, « bienvenue ».",
            tool_calls=CALLS_T1,
        ),
        AgentTurn(turn_id="t2", input="And Sunday?", response=None, tool_calls=CALLS_T2),
    ]
    for turn in agent_turns if with_app else []:
        turn.metadata["adk_app_details"] = RECORDED_APP
    api.script(*RUBRIC_REPLIES)
    spec = MetricSpec(name=name, args={"rubrics": criterion_rubrics, "num_samples": 3})
    result = _score(api, spec, make_ctx(case, *agent_turns))

    adk_rubric = lambda i, t, **k: Rubric(rubric_id=i, rubric_content=RubricContent(text_property=t), **k)  # noqa: E731
    criterion = RubricsBasedCriterion(threshold=0.8, rubrics=[adk_rubric(i, t) for i, t in RUBRICS[:2]])
    evaluator = adk_class(EvalMetric(metric_name=name, criterion=criterion))
    invocations = [
        (
            _adk_invocation(
                t.input, t.response, t.tool_calls, rubrics=rubrics, app_details=APP if with_app else None
            ),
            None,
        )
        for t, rubrics in zip(agent_turns, [[adk_rubric(*RUBRICS[2], type=rubric_type)], None], strict=True)
    ]
    prompts, adk_score = _adk_overall(evaluator, invocations, RUBRIC_REPLIES, 3)

    sent = [prompt_of(request["body"]) for request in api.completions]
    assert sent[0] == prompts[0] and sent[3] == prompts[1]
    assert '"tool_response": "None"' in sent[0] and ("Agent has no tools." in sent[0]) is not with_app
    if with_app:
        assert (
            '"front_desk": []' in sent[0]
            and '"description": "Opening hours of one day — « jour »."' in sent[0]
        )
        shown = "Greet, then hand hours questions on." in sent[0]
        assert shown is (name == "rubric_based_final_response_quality_v1")  # the tool-use prompt has none
    assert adk_score is not None and 0 < adk_score < 1
    assert result.error is None and abs(result.score - adk_score) <= 1e-9


def test_a_rubric_judge_with_no_readable_verdict_is_an_error(api: FakeOpenAI) -> None:
    rubrics = [{"rubric_id": "polite", "rubric_content": {"text_property": "Polite."}}]
    result = _score(
        api,
        MetricSpec(name="rubric_based_tool_use_quality_v1", args={"rubrics": rubrics, "num_samples": 3}),
        make_ctx(make_case(input="Hi"), AgentTurn(turn_id="turn_1", input="Hi", response="Hello")),
    )
    assert result.score is None and result.passed is False
    assert "could be read as ADK reads it" in result.error and UNREADABLE in result.details["raw_reply"]
