"""Reading judge replies: JSON in any usual wrapping, and clear errors that keep the raw text."""

from __future__ import annotations

import pytest

from proctor.judges import JudgeReplyError, parse_reply, render_prompt
from proctor.metrics.judged import ScoreVerdict, normalise


@pytest.mark.parametrize(
    "text",
    [
        '{"score": 4, "reason": "close"}',
        '```json\n{"score": 4, "reason": "close"}\n```',
        'Here is my verdict: {"score": 4, "reason": "close"} Thanks.',
    ],
)
def test_json_replies_are_read_however_wrapped(text: str) -> None:
    assert parse_reply(text, ScoreVerdict) == ScoreVerdict(score=4, reason="close")


def test_prose_is_an_error_that_keeps_the_reply() -> None:
    with pytest.raises(JudgeReplyError, match="not JSON") as caught:
        parse_reply("I think it deserves a four.", ScoreVerdict)
    assert caught.value.raw == "I think it deserves a four."


def test_a_reply_of_the_wrong_shape_names_the_field() -> None:
    with pytest.raises(JudgeReplyError, match="score") as caught:
        parse_reply('{"grade": "A"}', ScoreVerdict)
    assert caught.value.raw == '{"grade": "A"}'


@pytest.mark.parametrize(
    ("raw", "scale", "expected"), [(1, 5, 0.0), (5, 5, 1.0), (3, 5, 0.5), (4, 10, 1 / 3)]
)
def test_scores_are_normalised_onto_zero_one(raw: float, scale: int, expected: float) -> None:
    assert normalise(raw, scale) == pytest.approx(expected)


@pytest.mark.parametrize("raw", [0, 6, -1])
def test_a_score_off_the_scale_is_the_judges_error(raw: float) -> None:
    with pytest.raises(JudgeReplyError, match="outside the scale 1..5"):
        normalise(raw, 5)


def test_custom_prompts_are_rendered_sandboxed() -> None:
    assert (
        render_prompt("llm_judge.j2", "Q: {{ input }} A: {{ output }}", input="hi", output="yo")
        == "Q: hi A: yo"
    )
    with pytest.raises(Exception, match="unsafe|not safely|access"):
        render_prompt("llm_judge.j2", "{{ output.__class__.__mro__[1].__subclasses__() }}", output="x")
