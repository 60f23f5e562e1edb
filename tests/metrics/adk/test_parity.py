"""Proctor's ADK metrics against google-adk's own evaluators, on generated pairs, to 1e-9.

The expected side is one ADK eval case document, read by ADK's own `EvalCase` model and by
Proctor's ADK loader; the actual side is one list of turns, given to both as their own types.
Needs the `adk` extra (`pip install -e '.[adk]'`, which CI installs); skipped without it.
"""

from __future__ import annotations

import itertools
from importlib import metadata
from typing import Any

import pytest

pytestmark = pytest.mark.needs_extra  # CI runs these again with the adk extra installed
pytest.importorskip("google.adk", reason="google-adk is not installed (pip install -e '.[adk]')")

from google.adk.evaluation.eval_case import EvalCase, IntermediateData, Invocation  # noqa: E402
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion  # noqa: E402
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator  # noqa: E402
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator  # noqa: E402
from google.genai import types as genai_types  # noqa: E402

from proctor.loaders.adk import parse as adk_loader  # noqa: E402
from proctor.metrics import REGISTRY  # noqa: E402
from proctor.metrics.adk.names import ADK_VERSION  # noqa: E402
from proctor.models.agentflow import ToolCall  # noqa: E402
from proctor.models.case import MetricSpec  # noqa: E402
from proctor.models.outcome import AgentTurn  # noqa: E402
from tests.factories import make_ctx  # noqa: E402

# Each group: a reference text and answers that keep, drop, reorder, inflect or re-encode its words.
TEXTS: dict[str, list[str]] = {
    "latin": [
        "The device is off.",
        "The devices are turned off",
        "device off",
        "Turning off the devices, as requested!",
        "The quick brown foxes jumped over the lazy dogs.",
    ],
    "accented": [
        "Café crème brûlée à la française",
        "cafe creme brulee a la francaise",
        "Crème brûlée, café",
    ],
    "german": ["Die Straße ist groß", "die STRASSE ist gross", "Straßen sind groß"],
    "cjk": ["好的，谢谢。", "订单3已取消。", "我喜欢数字3。", "好的谢谢", "注文はキャンセルされました"],
    "mixed": ["设备devices已关闭", "The device is off.", "订单 order 3 cancelled 已取消"],
    "cyrillic": ["Привет, мир!", "привет мир", "Мир, привет! Как дела?"],
    "arabic": ["مرحبا بالعالم", "مرحبا", "العالم مرحبا بكم"],
    "thai": ["สวัสดีครับ ยินดีต้อนรับ", "สวัสดีค่ะ", "ยินดีต้อนรับครับ"],
    "korean": ["안녕하세요 세계", "안녕 세계", "세계 안녕하세요!"],
    "fullwidth": ["Ｔｈｅ ｄｅｖｉｃｅ ｉｓ ｏｆｆ．", "ＯＲＤＥＲ　３", "order 3"],
    "emoji": ["😀 all done 🎉", "all done", "🎉🎉"],
    "digits": ["Order 12345 costs 67.89", "12345", "６７ 89 order"],
    "other": ["ﬁnal ﬂow ½", "final flow 1/2", "İstanbul ıi naïve façade x²", "istanbul naive facade x2"],
    "empty": ["", "   ", "..."],
}


def _response_pairs() -> list[tuple[list[str], list[str]]]:
    """(expected per turn, actual per turn): every text against every text of its group and
    a few of other groups, plus multi-turn conversations."""
    pairs: list[tuple[list[str], list[str]]] = []
    for texts in TEXTS.values():
        pairs += [([a], [b]) for a, b in itertools.product(texts, repeat=2)]
    everything = [text for texts in TEXTS.values() for text in texts]
    pairs += [([a], [b]) for a, b in zip(everything, everything[7:] + everything[:7], strict=True)]
    pairs += [(everything[i : i + 3], everything[i + 1 : i + 4]) for i in range(0, len(everything) - 4, 5)]
    return pairs


RESPONSE_PAIRS = _response_pairs()


def _content(text: str) -> dict[str, Any] | None:
    return {"role": "model", "parts": [{"text": text}]} if text else None


def _eval_case(expected: list[dict[str, Any]]) -> dict[str, Any]:
    """An ADK eval case: one invocation per expected turn {text, calls}."""
    return {
        "eval_id": "generated",
        "conversation": [
            {
                "invocation_id": f"inv_{index}",
                "user_content": {"role": "user", "parts": [{"text": f"question {index}"}]},
                "final_response": _content(turn.get("text", "")),
                "intermediate_data": {"tool_uses": turn.get("calls", [])},
            }
            for index, turn in enumerate(expected)
        ],
    }


def _actual_adk(actual: list[dict[str, Any]]) -> list[Invocation]:
    return [
        Invocation(
            invocation_id=f"inv_{index}",
            user_content=genai_types.Content(role="user", parts=[genai_types.Part(text=f"question {index}")]),
            final_response=genai_types.Content.model_validate(_content(turn.get("text", "")))
            if turn.get("text")
            else None,
            intermediate_data=IntermediateData(
                tool_uses=[genai_types.FunctionCall(**call) for call in turn.get("calls", [])]
            ),
        )
        for index, turn in enumerate(actual)
    ]


def _actual_proctor(actual: list[dict[str, Any]]) -> list[AgentTurn]:
    return [
        AgentTurn(
            turn_id=f"inv_{index}",
            input=f"question {index}",
            response=turn.get("text") or None,
            tool_calls=[ToolCall(name=call["name"], args=call.get("args")) for call in turn.get("calls", [])],
        )
        for index, turn in enumerate(actual)
    ]


def _scores(
    expected: list[dict[str, Any]], actual: list[dict[str, Any]], adk_evaluator: Any, spec: MetricSpec
) -> tuple[float, float]:
    document = _eval_case(expected)
    adk_expected = EvalCase.model_validate(document).conversation
    adk_score = adk_evaluator.evaluate_invocations(_actual_adk(actual), adk_expected).overall_score
    cases, _ = adk_loader.cases_from_evalset({"eval_set_id": "s", "eval_cases": [document]}, [spec])
    metric = REGISTRY.build(spec)
    proctor_score = metric.evaluate(make_ctx(cases[0], *_actual_proctor(actual))).value
    return adk_score, proctor_score


def test_the_installed_adk_is_the_version_proctor_matches() -> None:
    assert metadata.version("google-adk") == ADK_VERSION


def test_response_match_score_equals_adks_rouge_on_every_generated_pair() -> None:
    assert len(RESPONSE_PAIRS) >= 100
    evaluator = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8))
    spec = MetricSpec(name="response_match_score")
    differences = []
    nonzero = 0
    for expected, actual in RESPONSE_PAIRS:
        adk_score, proctor_score = _scores(
            [{"text": t} for t in expected], [{"text": t} for t in actual], evaluator, spec
        )
        nonzero += 0.0 < adk_score < 1.0
        if abs(adk_score - proctor_score) > 1e-9:
            differences.append((expected, actual, adk_score, proctor_score))
    assert differences == []
    assert nonzero >= 50  # the pairs exercise partial overlaps, not only 0 and 1


A = {"name": "lookup", "args": {"city": "Paris", "days": 3}}
B = {"name": "book", "args": {"id": 7, "options": {"seat": "aisle", "meals": ["veg"]}}}
C = {"name": "notify"}  # written without args
C_EMPTY = {"name": "notify", "args": {}}
A_OTHER_ARGS = {"name": "lookup", "args": {"city": "Rome", "days": 3}}
A_EXTRA_ARG = {"name": "lookup", "args": {"city": "Paris", "days": 3, "units": "metric"}}
A_FLOAT = {"name": "lookup", "args": {"city": "Paris", "days": 3.0}}
RENAMED = {"name": "look_up", "args": {"city": "Paris", "days": 3}}

EXPECTED_TRAJECTORIES = [[A, B], [A, B, C], [C], [C_EMPTY], [], [A, A]]


def _perturbations(expected: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Every way an actual trajectory can differ from the expected one."""
    variants = [
        expected,
        [],
        list(reversed(expected)),
        expected + [A_OTHER_ARGS],
        [RENAMED, *expected],
        expected[:1] + [B] + expected[1:],
        expected[1:],
        expected[:-1],
        expected + expected,
        [C_EMPTY if call is C else C if call is C_EMPTY else call for call in expected],
        [A_OTHER_ARGS if call is A else call for call in expected],
        [A_EXTRA_ARG if call is A else call for call in expected],
        [A_FLOAT if call is A else call for call in expected],
        [RENAMED if call is A else call for call in expected],
        [{"name": call["name"]} for call in expected],
        [{"name": call["name"], "args": {}} for call in expected],
    ]
    return variants


MODES = ["EXACT", "IN_ORDER", "ANY_ORDER"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ignore_args", [False, True])
def test_tool_trajectory_avg_score_equals_adks_evaluator(mode: str, ignore_args: bool) -> None:
    criterion = ToolTrajectoryCriterion(
        threshold=1.0, match_type=ToolTrajectoryCriterion.MatchType[mode], ignore_args=ignore_args
    )
    evaluator = TrajectoryEvaluator(
        eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion)
    )
    spec = MetricSpec(name="tool_trajectory_avg_score", args={"match_type": mode, "ignore_args": ignore_args})
    differences, seen = [], set()
    single = [(e, a) for e in EXPECTED_TRAJECTORIES for a in _perturbations(e)]
    multi = [([e1, e2], [a1, a2]) for (e1, a1), (e2, a2) in zip(single, single[5:], strict=False)]
    for expected, actual in [([e], [a]) for e, a in single] + multi:
        adk_score, proctor_score = _scores(
            [{"calls": calls} for calls in expected], [{"calls": calls} for calls in actual], evaluator, spec
        )
        seen.add(adk_score)
        if abs(adk_score - proctor_score) > 1e-9:
            differences.append((expected, actual, adk_score, proctor_score))
    assert differences == []
    assert {0.0, 1.0} <= seen and 0.5 in seen  # both verdicts, and multi-turn averages


def test_an_eval_set_as_adks_own_models_write_it_loads_every_field(tmp_path) -> None:
    """ADK's EvalSet with every field set, dumped in snake_case and in camelCase (nulls kept)."""
    from google.adk.evaluation.eval_case import InvocationEvent, InvocationEvents, SessionInput
    from google.adk.evaluation.eval_rubrics import Rubric, RubricContent
    from google.adk.evaluation.eval_set import EvalSet

    from proctor.loaders import load_suite

    def text(role: str, value: str) -> genai_types.Content:
        return genai_types.Content(role=role, parts=[genai_types.Part(text=value)])

    rubric = Rubric(
        rubric_id="r", rubric_content=RubricContent(text_property="Polite."), type="FINAL_RESPONSE_QUALITY"
    )
    first = Invocation(
        invocation_id="i1",
        user_content=text("user", "hi"),
        final_response=text("model", "hello"),
        intermediate_data=IntermediateData(
            tool_uses=[genai_types.FunctionCall(name="f", args={"a": 1})],
            tool_responses=[genai_types.FunctionResponse(name="f", response={"r": 1})],
            intermediate_responses=[("agent", [genai_types.Part(text="one moment")])],
        ),
        creation_timestamp=1.0,
        duration=2.0,
        rubrics=[rubric],
    )
    call_without_args = genai_types.Part(function_call=genai_types.FunctionCall(name="g"))
    second = Invocation(
        invocation_id="i2",
        user_content=text("user", "again"),
        intermediate_data=InvocationEvents(
            invocation_events=[
                InvocationEvent(author="a", content=genai_types.Content(parts=[call_without_args]))
            ]
        ),
    )
    cases = [
        EvalCase(
            eval_id="c1",
            conversation=[first, second],
            session_input=SessionInput(app_name="a", user_id="u", state={"k": 1}),
            final_session_state={"k": 2},
        ),
        EvalCase(eval_id="c2", conversation_scenario={"starting_prompt": "s", "conversation_plan": "p"}),
    ]
    for by_alias in (False, True):
        path = tmp_path / f"set_{by_alias}.test.json"
        path.write_text(EvalSet(eval_set_id="s", eval_cases=cases).model_dump_json(by_alias=by_alias))
        suite = load_suite(path)
        [c1, c2] = suite.cases
        assert [turn.input for turn in c1.turns] == ["hi", "again"] and c2.turns[0].input == "s"
        assert c1.turns[0].expected_intermediate_responses == ["one moment"]
        assert c1.turns[1].expected_tool_calls[0].args is None
        assert c1.turns[0].metadata["adk_rubrics"][0]["rubric_id"] == "r"
        assert c1.session.initial_state == {"k": 1} and c1.metadata["final_session_state"] == {"k": 2}
