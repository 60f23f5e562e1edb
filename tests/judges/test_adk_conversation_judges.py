"""ADK's conversation-level judges (`hallucinations_v1`, `rubric_based_multi_turn_trajectory_quality_v1`,
`per_turn_user_simulator_quality_v1`) against google-adk 2.13.0's own evaluators: the same
invocations go to Proctor's metric and to ADK's `evaluate_invocations`, each judge on its own
local OpenAI-compatible server scripted with the same replies (Proctor's through its judge
client, ADK's through `tests.judges.adk_backend`, both the real `openai` client). The prompts the
two servers receive must be the same text, in the same order, and the scores equal to 1e-9.
Needs the `adk` extra; skipped without it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytestmark = pytest.mark.needs_extra
pytest.importorskip("google.adk", reason="google-adk is not installed (pip install -e '.[adk]')")

from google.adk.evaluation.app_details import AgentDetails, AppDetails  # noqa: E402
from google.adk.evaluation.conversation_scenarios import ConversationScenario  # noqa: E402
from google.adk.evaluation.eval_case import Invocation, InvocationEvent, InvocationEvents  # noqa: E402
from google.adk.evaluation.eval_metrics import (  # noqa: E402
    EvalMetric,
    HallucinationsCriterion,
    JudgeModelOptions,
    LlmBackedUserSimulatorCriterion,
    RubricsBasedCriterion,
)
from google.adk.evaluation.eval_rubrics import Rubric  # noqa: E402
from google.adk.evaluation.hallucinations_v1 import HallucinationsV1Evaluator  # noqa: E402
from google.adk.evaluation.rubric_based_multi_turn_trajectory_evaluator import (  # noqa: E402
    RubricBasedMultiTurnTrajectoryEvaluator,
)
from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import (  # noqa: E402
    PerTurnUserSimulatorQualityV1 as AdkPerTurn,
)
from google.adk.evaluation.simulation.user_simulator_personas import UserPersona  # noqa: E402
from google.genai import types  # noqa: E402

from proctor.agents.adk_agent import _dump, event_record  # noqa: E402
from proctor.judges import Judge, JudgeClient  # noqa: E402
from proctor.metrics import REGISTRY, BoundMetric, score_metric  # noqa: E402
from proctor.metrics import runner as metric_runner  # noqa: E402
from proctor.models.agentflow import ToolCall  # noqa: E402
from proctor.models.case import MetricSpec, Turn  # noqa: E402
from proctor.models.outcome import AgentTurn  # noqa: E402
from tests.factories import make_case, make_ctx  # noqa: E402
from tests.fakes import FakeOpenAI, prompt_of  # noqa: E402
from tests.judges.adk_backend import run_adk  # noqa: E402

UNREADABLE = "No verdict here."


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    """One server for Proctor's judge, one for ADK's: each is scripted with the same replies."""
    with FakeOpenAI(default=UNREADABLE) as proctor_api, FakeOpenAI(default=UNREADABLE) as adk_api:
        yield proctor_api, adk_api


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metric_runner, "RETRY_DELAYS_S", (0.0, 0.0, 0.0))


def _score(api: FakeOpenAI, spec: MetricSpec, ctx: Any) -> Any:
    client = JudgeClient(base_url=api.base_url, api_key="sk-test")
    judge = Judge.for_spec(spec, client, None, default_model="judge-model", timeout_s=30)
    return asyncio.run(score_metric(BoundMetric(spec, REGISTRY.build(spec), judge), ctx))


def _prompts(api: FakeOpenAI) -> list[str]:
    assert all(len(request["body"]["messages"]) == 1 for request in api.completions)  # as ADK: no system
    return [prompt_of(request["body"]) for request in api.completions]


def _text(role: str, text: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


TOOL = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_hours",
            description="Opening hours of one day.",
            parameters_json_schema={"type": "object", "properties": {"day": {"type": "string"}}},
        )
    ]
)
AGENT = "hours_agent"
APP = AppDetails(
    agent_details={
        AGENT: AgentDetails(
            name=AGENT, instructions="Tell opening hours; use get_hours.", tool_declarations=[TOOL]
        )
    }
)


def _recorded_turn(
    turn_id: str, question: str, day: str, result: dict, answer: str
) -> tuple[AgentTurn, Invocation]:
    """A turn of an `adk:` agent: Proctor's record (events and app details as the runner keeps
    them) and ADK's invocation of the same events."""
    call = types.FunctionCall(id=f"call-{turn_id}", name="get_hours", args={"day": day})
    events = [
        InvocationEvent(
            author=AGENT,
            content=types.Content(
                role="model", parts=[types.Part(text="Let me check."), types.Part(function_call=call)]
            ),
        ),
        InvocationEvent(
            author=AGENT,
            content=types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=call.id, name="get_hours", response=result
                        )
                    )
                ],
            ),
        ),
        InvocationEvent(author=AGENT, content=None),  # the final answer's event, kept without content
    ]
    turn = AgentTurn(
        turn_id=turn_id,
        input=question,
        response=answer,
        tool_calls=[ToolCall(name="get_hours", args={"day": day}, call_id=call.id, result=result)],
        metadata={
            "intermediate_responses": ["Let me check."],
            "adk_events": [event_record(e) for e in events[:2]] + [{"author": AGENT, "parts": None}],
            "adk_app_details": {
                AGENT: {
                    "instructions": APP.agent_details[AGENT].instructions,
                    "tool_declarations": [_dump(TOOL)],
                }
            },
        },
    )
    invocation = Invocation(
        user_content=_text("user", question),
        final_response=_text("model", answer),
        intermediate_data=InvocationEvents(invocation_events=events),
        app_details=APP,
    )
    return turn, invocation


def _plain_turn(turn_id: str, question: str, answer: str | None) -> tuple[AgentTurn, Invocation]:
    """A turn of any other agent (no events recorded) and the ADK invocation of its events as
    Proctor lays them out: the intermediate text, the call, its result, author "agent"."""
    turn = AgentTurn(
        turn_id=turn_id,
        input=question,
        response=answer,
        tool_calls=[ToolCall(name="get_hours", args={"day": "sun"}, result="closed ✓")],
        metadata={"intermediate_responses": ["Checking Sunday."]},
    )
    events = [
        InvocationEvent(author="agent", content=_text("model", "Checking Sunday.")),
        InvocationEvent(
            author="agent",
            content=types.Content(
                parts=[types.Part(function_call=types.FunctionCall(name="get_hours", args={"day": "sun"}))]
            ),
        ),
        InvocationEvent(
            author="agent",
            content=types.Content(
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            name="get_hours", response={"result": "closed ✓"}
                        )
                    )
                ]
            ),
        ),
    ]
    invocation = Invocation(
        user_content=_text("user", question),
        final_response=_text("model", answer) if answer else None,
        intermediate_data=InvocationEvents(invocation_events=events),
    )
    return turn, invocation


def _validation(*blocks: tuple[str, str]) -> str:
    return "\n\n".join(
        f"sentence: {sentence}\nlabel: {label}\nrationale: checked.\nsupporting_excerpt: null\ncontradicting_excerpt: null"
        for sentence, label in blocks
    )


HALLUCINATION_REPLIES = [
    # turn 1, the intermediate text: not_applicable -> 1.0
    "<sentence>Let me check.</sentence>",
    _validation(("Let me check.", "not_applicable")),
    # turn 1, the answer: Supported (any case), unsupported, an unknown label skipped -> 0.5
    "<sentence>We open at 9am on Monday.</sentence>\n<sentence>Parking is free.</sentence>\n<sentence>Enjoy!</sentence>",
    _validation(
        ("We open at 9am on Monday.", "Supported"), ("Parking is free.", "unsupported"), ("Enjoy!", "maybe")
    ),
    # turn 2, the intermediate text: the segmenter gives no <sentence>: not scored, no validator call
    "Checking Sunday.",
    # turn 2, the answer: field names in capitals (ADK reads them case-insensitively) -> 0.0
    "<sentence>Closed on Sunday, « fermé ».</sentence>",
    "SENTENCE: Closed on Sunday, « fermé ».\nLABEL: contradictory\nRATIONALE: no.\nSUPPORTING_EXCERPT: null\nCONTRADICTING_EXCERPT: closed",
]


def test_hallucinations_v1_sends_adks_two_prompts_and_scores_as_adk(servers) -> None:
    proctor_api, adk_api = servers
    first, first_adk = _recorded_turn(
        "t1",
        "When do you open on Monday?",
        "mon",
        {"open": "09:00", "note": "café"},
        "We open at 9am on Monday. Parking is free. Enjoy!",
    )
    second, second_adk = _plain_turn("t2", "And Sunday?", "Closed on Sunday, « fermé ».")
    third, third_adk = _plain_turn("t3", "Thanks", None)  # no answer, and its text is the same as turn 2's
    proctor_api.script(*HALLUCINATION_REPLIES)
    adk_api.script(*HALLUCINATION_REPLIES)
    spec = MetricSpec(name="hallucinations_v1", args={"evaluate_intermediate_nl_responses": True})
    case = make_case(*(Turn(turn_id=t.turn_id, input=t.input) for t in (first, second, third)))
    result = _score(proctor_api, spec, make_ctx(case, first, second, third))

    criterion = HallucinationsCriterion(threshold=0.8, evaluate_intermediate_nl_responses=True)
    evaluator = HallucinationsV1Evaluator(EvalMetric(metric_name=spec.name, criterion=criterion))
    adk = run_adk(evaluator, adk_api.base_url, "_judge_model", [first_adk, second_adk, third_adk])

    sent = _prompts(proctor_api)
    assert sent == _prompts(adk_api)
    assert '"parameters_json_schema"' in sent[3] and "hours_agent:\nTell opening hours" in sent[3]
    assert "Agent has no tools." in sent[6] and '"result": "closed \\u2713"' in sent[6] and len(sent) == 8
    assert adk.overall_score == pytest.approx(0.375, abs=1e-12)
    assert result.error is None and abs(result.score - adk.overall_score) <= 1e-9
    assert result.passed is False


def test_hallucinations_v1_checks_only_the_answer_by_default(servers) -> None:
    proctor_api, adk_api = servers
    turn, invocation = _recorded_turn("t1", "Monday?", "mon", {"open": "09:00"}, "We open at 9am.")
    replies = ["<sentence>We open at 9am.</sentence>", _validation(("We open at 9am.", "supported"))]
    proctor_api.script(*replies)
    adk_api.script(*replies)
    result = _score(
        proctor_api, MetricSpec(name="hallucinations_v1"), make_ctx(make_case(input="Monday?"), turn)
    )
    evaluator = HallucinationsV1Evaluator(
        EvalMetric(metric_name="hallucinations_v1", criterion=HallucinationsCriterion(threshold=0.8))
    )
    adk = run_adk(evaluator, adk_api.base_url, "_judge_model", [invocation])
    assert _prompts(proctor_api) == _prompts(adk_api) and len(proctor_api.completions) == 2
    assert "Let me check." in _prompts(proctor_api)[1]  # the earlier text is context, not checked
    assert result.score == adk.overall_score == 1.0


def test_hallucinations_v1_with_no_readable_reply_is_an_error(servers) -> None:
    proctor_api, _ = servers
    turn, _ = _recorded_turn("t1", "Monday?", "mon", {"open": "09:00"}, "We open at 9am.")
    result = _score(
        proctor_api, MetricSpec(name="hallucinations_v1"), make_ctx(make_case(input="Monday?"), turn)
    )
    assert result.score is None and result.passed is False
    assert "could be read as ADK reads it" in result.error and UNREADABLE in result.details["raw_reply"]


def _rubric(rubric_id: str, text: str, rubric_type: str | None = None) -> dict[str, Any]:
    return {"rubric_id": rubric_id, "rubric_content": {"text_property": text}} | (
        {"type": rubric_type} if rubric_type else {}
    )


CRITERION_RUBRICS = [
    _rubric("lookup", "The agent looks the hours up with get_hours."),
    _rubric("polite", "The agent is polite."),
]
CASE_RUBRICS = [
    _rubric("complete", "The agent answers every question.", "TRAJECTORY_QUALITY"),
    _rubric(
        "concise", "The final answer is short.", "FINAL_RESPONSE_QUALITY"
    ),  # another metric's: ADK drops it
]
LAST_RUBRIC = _rubric("day", "The agent confirms the day — «lundi».", "TRAJECTORY_QUALITY")


def _verdicts(*items: tuple[str | None, str, str]) -> str:
    blocks = []
    for rubric_id, text, verdict in items:
        head = f"ID: {rubric_id}\n" if rubric_id else ""
        blocks.append(f"STEP 5: {verdict}\n{head}Property: {text}\nRationale: because.\nVerdict: {verdict}\n")
    return "\n".join(blocks)


MULTI_TURN_REPLIES = [
    _verdicts(("lookup", "x", "yes"), ("polite", "x", "no"), ("complete", "x", "yes"), ("day", "x", "Yes.")),
    # matched by text (decorations, no ids); a property of no rubric is dropped
    _verdicts(
        (None, "**The agent is polite.**", "yes"),
        (None, "The agent looks the hours up with get_hours.", "no"),
    )
    + _verdicts((None, "The agent answers every question.", "no"), (None, "Something else", "yes")),
    "Property: The agent is polite.\nVerdict: yes\n",  # no Rationale: ADK refuses the partial reply
]


def test_rubric_multi_turn_trajectory_sends_adks_prompt_and_scores_as_adk(servers) -> None:
    proctor_api, adk_api = servers
    first, first_adk = _recorded_turn(
        "t1", "When do you open on Monday?", "mon", {"open": "09:00"}, "9am, lundi."
    )
    second, second_adk = _plain_turn("t2", "And Sunday?", "Closed.")
    third, third_adk = _recorded_turn("t3", "Monday again?", "mon", {"open": "09:00"}, "Yes, Monday 9am.")
    proctor_api.script(*MULTI_TURN_REPLIES)
    adk_api.script(*MULTI_TURN_REPLIES)
    case = make_case(
        Turn(turn_id="t1", input=first.input),
        Turn(turn_id="t2", input=second.input),
        Turn(turn_id="t3", input=third.input, metadata={"adk_rubrics": [LAST_RUBRIC]}),
        metadata={"adk_rubrics": CASE_RUBRICS},
    )
    spec = MetricSpec(
        name="rubric_based_multi_turn_trajectory_quality_v1",
        args={"rubrics": CRITERION_RUBRICS, "num_samples": 3},
    )
    result = _score(proctor_api, spec, make_ctx(case, first, second, third))

    as_adk = lambda r: Rubric.model_validate(r)  # noqa: E731
    for invocation in (first_adk, second_adk, third_adk):  # as ADK's LocalEvalService copies them
        invocation.rubrics = [as_adk(r) for r in CASE_RUBRICS]
    third_adk.rubrics.append(as_adk(LAST_RUBRIC))
    criterion = RubricsBasedCriterion(
        threshold=0.8,
        rubrics=[as_adk(r) for r in CRITERION_RUBRICS],
        judge_model_options=JudgeModelOptions(num_samples=3),
    )
    evaluator = RubricBasedMultiTurnTrajectoryEvaluator(
        EvalMetric(metric_name=spec.name, criterion=criterion)
    )
    adk = run_adk(evaluator, adk_api.base_url, "_judge_model", [first_adk, second_adk, third_adk])

    sent = _prompts(proctor_api)
    assert sent == _prompts(adk_api) and len(sent) == 3
    assert 'AGENT (agent) TURN 2 (tool output): get_hours -> {"result": "closed \\u2713"}' in sent[0]
    assert "- get_hours: Opening hours of one day." in sent[0] and '"concise"' not in sent[0]
    assert adk.overall_score == pytest.approx(0.25, abs=1e-12)
    assert result.error is None and abs(result.score - adk.overall_score) <= 1e-9
    assert result.details["met"] == {"lookup": 0.0, "polite": 0.0, "complete": 0.0, "day": 1.0}


def test_rubric_multi_turn_trajectory_without_rubrics_is_an_error(servers) -> None:
    proctor_api, _ = servers
    turn, _ = _plain_turn("t1", "Hi", "Hello")
    spec = MetricSpec(name="rubric_based_multi_turn_trajectory_quality_v1", args={"num_samples": 1})
    result = _score(proctor_api, spec, make_ctx(make_case(input="Hi"), turn))
    assert result.score is None and "Rubrics are required" in result.error and not proctor_api.completions


SCENARIO = {
    "starting_prompt": "I need to book a table. ",
    "conversation_plan": "First book a table for two at 7pm. Then ask for the wine list. Stop once both are done.",
}
PERSONA = {
    "id": "polite_diner",
    "description": "A polite diner who says please.",
    "behaviors": [
        {
            "name": "Politeness (ends with {{ stop_signal }})",
            "description": "Says please and thanks.",
            "behavior_instructions": ["Say please."],
            "violation_rubrics": ["The user is rude.", "The user never says please."],
        }
    ],
}
SIMULATOR_REPLIES = [
    # turn 2: valid, invalid, valid (list form) -> valid
    '{"criteria": [], "is_valid": True,\n}',
    '{"is_valid": "invalid"}',
    '{"is_valid": ["valid"]}',
    # turn 3: nothing readable -> unscored, counted as not passed
    "I am not sure.",
    '{"is_valid": "maybe"}',
    "",
    # the stop signal after the last turn: false, partially valid, true -> invalid: the last turn fails
    '{"is_valid": false}',
    '{"is_valid": "partially valid"}',
    '{"is_valid": true}',
]


@pytest.mark.parametrize("persona", [None, PERSONA], ids=["plan", "persona"])
def test_per_turn_user_simulator_quality_sends_adks_prompts_and_scores_as_adk(servers, persona) -> None:
    proctor_api, adk_api = servers
    exchanges = [
        ("I need to book a table.", "Sure, for how many people and when?"),
        ("For two at 7pm please.", "Booked! Anything else?"),
        ("Can I see the wine list?", "Here it is: Merlot, Chablis."),
    ]
    turns = [AgentTurn(turn_id=f"sim_{i + 1}", input=q, response=a) for i, (q, a) in enumerate(exchanges)]
    scenario = SCENARIO | ({"user_persona": persona} if persona else {})
    case = make_case(
        Turn(turn_id="sim_1", input=SCENARIO["starting_prompt"]), metadata={"conversation_scenario": scenario}
    )
    proctor_api.script(*SIMULATOR_REPLIES)
    adk_api.script(*SIMULATOR_REPLIES)
    spec = MetricSpec(name="per_turn_user_simulator_quality_v1", threshold=0.8, args={"num_samples": 3})
    result = _score(proctor_api, spec, make_ctx(case, *turns))

    criterion = LlmBackedUserSimulatorCriterion(
        threshold=0.8, judge_model_options=JudgeModelOptions(num_samples=3)
    )
    evaluator = AdkPerTurn(EvalMetric(metric_name=spec.name, criterion=criterion))
    invocations = [
        Invocation(user_content=_text("user", q), final_response=_text("model", a)) for q, a in exchanges
    ]
    adk_scenario = ConversationScenario(
        starting_prompt=SCENARIO["starting_prompt"],
        conversation_plan=SCENARIO["conversation_plan"],
        user_persona=UserPersona.model_validate(persona) if persona else None,
    )
    adk = run_adk(evaluator, adk_api.base_url, "_llm", invocations, None, adk_scenario)

    sent = _prompts(proctor_api)
    assert sent == _prompts(adk_api) and len(sent) == 9
    assert sent[-1].endswith("# Generated User Response\n</finished>")
    assert ("Politeness (ends with </finished>)" in sent[0]) is bool(persona)
    assert adk.overall_score == pytest.approx(2 / 3, abs=1e-12)
    assert result.error is None and abs(result.score - adk.overall_score) <= 1e-9
    assert result.passed is False and result.details["per_turn"][-1]["replaced_by_stop_signal_check"]


def test_per_turn_user_simulator_quality_skips_a_case_without_a_scenario(servers) -> None:
    proctor_api, _ = servers
    spec = MetricSpec(name="per_turn_user_simulator_quality_v1")
    ctx = make_ctx(make_case(input="Hi"), AgentTurn(turn_id="t1", input="Hi", response="Hello"))
    assert _score(proctor_api, spec, ctx) is None and not proctor_api.completions


MALFORMED = [
    "",
    "no fields at all",
    '"is_valid": valid}',
    '{"is_valid":\n  [\n  "VALID"\n  ]\n}',
    '{"is_valid": "partially_valid",}',
    '{"is_valid": "almost"}',
    '{"is_valid": "true"',  # never closed: no match
    "sentence: a\nlabel: supported\nrationale: r\nsupporting_excerpt: NULL\ncontradicting_excerpt: x\nsentence: b\nlabel:",
    "sentence: a\nlabel: disputed\nrationale: r\nsupporting_excerpt: s\ncontradicting_excerpt: c\n\nsentence: b\nlabel: \n"
    "rationale: r\nsupporting_excerpt: null\ncontradicting_excerpt: null",
    "<sentence>one\ntwo</sentence><sentence></sentence> <sentence>unclosed",
]


@pytest.mark.parametrize("reply", MALFORMED)
def test_malformed_judge_replies_read_as_adk_reads_them(reply: str) -> None:
    from google.adk.evaluation import hallucinations_v1 as adk_hallucinations
    from google.adk.evaluation.llm_as_judge_utils import Label
    from google.adk.evaluation.simulation import per_turn_user_simulator_quality_v1 as adk_simulator

    from proctor.metrics.adk.hallucinations import accuracy, parse_sentences, parse_validation
    from proctor.metrics.adk.simulator_quality import parse_is_valid

    label = adk_simulator._parse_llm_response(reply)
    assert parse_is_valid(reply) == {Label.VALID: 1.0, Label.INVALID: 0.0}.get(label)
    assert parse_sentences(reply) == adk_hallucinations._parse_sentences(reply)
    assert parse_validation(reply) == adk_hallucinations._parse_validation_results(reply)
    labels = [r["label"].strip().lower() for r in parse_validation(reply)]
    counted = [
        label in ("supported", "not_applicable")
        for label in labels
        if label in {"supported", "not_applicable", "unsupported", "contradictory", "disputed"}
    ]
    assert accuracy(parse_validation(reply)) == (sum(counted) / len(counted) if counted else None)


def test_a_tie_of_samples_is_invalid_and_no_readable_sample_is_unscored() -> None:
    from proctor.metrics.adk.simulator_quality import majority_sample

    assert majority_sample([1.0, 0.0, None]) == 0.0
    assert majority_sample([1.0, None, 1.0, 0.0]) == 1.0
    assert majority_sample([None, None]) is None
