"""ROUGE-1 response matching: hand-computed values, stemming, scripts, agreement with ADK."""

from __future__ import annotations

import json

import pytest
from rouge_score import rouge_scorer

from proctor.metrics.response import ResponseMatch, adk_tokens, rouge1_fmeasure
from proctor.models.case import Turn
from tests.conftest import DICE, LAMP
from tests.factories import agent_turn, make_case, make_ctx

# -- rouge1_fmeasure by hand -----------------------------------------------------------------


def test_a_prefix_of_the_reference_has_full_precision_and_half_recall() -> None:
    # P = 3/3, R = 3/6 ("the" counts twice in the reference), F = 2PR / (P + R) = 2/3
    assert rouge1_fmeasure("the cat sat", "the cat sat on the mat") == pytest.approx(2 / 3)


def test_partial_overlap_by_hand() -> None:
    # P = 1/3, R = 1/2, F = 2 * (1/6) / (5/6) = 0.4
    assert rouge1_fmeasure("red blue green", "red yellow") == pytest.approx(0.4)


def test_the_measure_is_symmetric_in_precision_and_recall() -> None:
    assert rouge1_fmeasure("the cat sat on the mat", "the cat sat") == pytest.approx(2 / 3)


def test_identical_texts_score_one() -> None:
    assert rouge1_fmeasure("rain expected tomorrow", "rain expected tomorrow") == 1.0


def test_disjoint_texts_score_zero() -> None:
    assert rouge1_fmeasure("sunny and warm", "heavy snowfall") == 0.0


def test_an_empty_candidate_scores_zero() -> None:
    assert rouge1_fmeasure("", "rain expected tomorrow") == 0.0


def test_case_and_punctuation_are_ignored() -> None:
    assert rouge1_fmeasure("The CAT, sat!", "the cat sat") == 1.0


def test_stemming_matches_inflected_forms() -> None:
    assert rouge1_fmeasure("running dogs", "run dog") == 1.0


def test_accented_latin_text_is_still_stemmed() -> None:
    assert rouge1_fmeasure("café running", "café run") == 1.0


# -- ADK 2.13's tokenizer: every script counts, ASCII words are stemmed ---------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("好的，谢谢。", ["好", "的", "谢", "谢"]),  # one token per CJK character
        ("Ｔｈｅ ＤＥＶＩＣＥＳ", ["the", "devic"]),  # full-width letters NFKC-normalised, then stemmed
        ("Straße groß", ["straße", "groß"]),  # non-ASCII words kept whole, unstemmed
        ("Привет, мир!", ["привет", "мир"]),
        ("设备devices已关闭", ["设", "备", "devic", "已", "关", "闭"]),  # ASCII stemmed inside Chinese
        ("สวัสดี", ["ส", "วั", "ส", "ดี"]),  # Thai: a base character with its combining marks
        ("😀 done 🎉", ["done"]),
    ],
)
def test_the_tokenizer_keeps_every_script_as_adk_does(text: str, tokens: list[str]) -> None:
    assert adk_tokens(text) == tokens


def test_identical_chinese_answers_match_and_a_shared_digit_is_one_token_of_six() -> None:
    assert rouge1_fmeasure("好的，谢谢。", "好的，谢谢。") == 1.0
    # 订单3已取消 / 我喜欢数字3: only "3" is shared, 1 of 6 tokens each side
    assert rouge1_fmeasure("我喜欢数字3。", "订单3已取消。") == pytest.approx(1 / 6)


def test_english_words_in_chinese_text_are_stemmed() -> None:
    # 9 tokens against 4 ("the devic is off"), "devic" shared: F = 2 * (1/9 * 1/4) / (1/9 + 1/4) = 2/13,
    # as ADK 2.13 scores it; no "mostly Latin" rule turns stemming off.
    assert rouge1_fmeasure("设备devices已经关闭了好", "The device is off.") == pytest.approx(2 / 13)


def test_the_ascii_tokenizer_is_adk_before_2_6_and_drops_other_scripts() -> None:
    assert rouge1_fmeasure("好的，谢谢。", "好的，谢谢。", tokenizer="ascii") == 0.0
    assert rouge1_fmeasure("running dogs", "run dog", tokenizer="ascii") == 1.0
    assert ResponseMatch(tokenizer="ascii").tokenizer == "ascii"


# -- ResponseMatch ------------------------------------------------------------------------------


def _case(*expected: str | None):
    return make_case(
        *(
            Turn(turn_id=f"t{i}", input=f"q{i}", expected_response=text)
            for i, text in enumerate(expected, start=1)
        )
    )


def _answers(*answers: str | None) -> list:
    return [agent_turn(answer, turn_id=f"t{i}") for i, answer in enumerate(answers, start=1)]


def test_response_match_scores_one_for_the_expected_answer() -> None:
    score = ResponseMatch().evaluate(make_ctx(_case("rain tomorrow"), *_answers("Rain tomorrow.")))
    assert score.value == 1.0
    assert score.reason == "ROUGE-1 F 1.000"


def test_response_match_scores_zero_for_an_unrelated_answer() -> None:
    assert (
        ResponseMatch().evaluate(make_ctx(_case("rain tomorrow"), *_answers("sunny all week"))).value == 0.0
    )


def test_response_match_averages_turns_with_an_expected_answer() -> None:
    ctx = make_ctx(
        _case("rain tomorrow", None, "the cat sat on the mat"), *_answers("rain", "x", "the cat sat")
    )
    score = ResponseMatch().evaluate(ctx)
    # turn 1: P = 1, R = 1/2, F = 2/3; turn 2 is not scored; turn 3: F = 2/3
    assert score.value == pytest.approx(2 / 3)
    assert [t["turn_id"] for t in score.details["turns"]] == ["t1", "t3"]


def test_a_missing_answer_scores_zero_for_its_turn() -> None:
    ctx = make_ctx(_case("rain tomorrow", "snow later"), *_answers("rain tomorrow", None))
    assert ResponseMatch().evaluate(ctx).value == 0.5


def test_a_turn_the_agent_never_reached_scores_zero() -> None:
    ctx = make_ctx(_case("rain tomorrow", "snow later"), *_answers("rain tomorrow"))
    assert ResponseMatch().evaluate(ctx).value == 0.5


def test_response_match_does_not_apply_without_expected_answers() -> None:
    assert ResponseMatch().applies_to(make_ctx(_case(None, ""), *_answers("a", "b"))) is False
    assert ResponseMatch().applies_to(make_ctx(_case(None, "b"), *_answers("a", "b"))) is True


# -- agreement with ADK's response_match_score on the ADK fixtures ------------------------------


def _adk_rouge1(candidate: str, reference: str) -> float:
    """ADK's `_calculate_rouge_1_scores(candidate, reference).fmeasure`."""
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    return scorer.score(reference, candidate)["rouge1"].fmeasure


def _text(content: dict | None) -> str:
    parts = (content or {}).get("parts") or []
    return "\n".join(part["text"] for part in parts if part.get("text"))


ROLL_DIE = json.loads(DICE.read_text())
ROLL_DIE_REFERENCES = {
    inv["invocation_id"]: _text(inv["final_response"])
    for case in ROLL_DIE["eval_cases"]
    for inv in case["conversation"]
    if _text(inv["final_response"])
}
ROLL_DIE_PARAPHRASES = {
    "5f0e2a61-7c1b-4d2e-9a33-0c1d2e3f4a01": (
        "I'm an agent for dice: I roll any die and say if the rolled number is prime. Which one?"
    ),
    "5f0e2a61-7c1b-4d2e-9a33-0c1d2e3f4a02": (
        "Two tools: a die roller with any number of sides, and a prime checker; earlier rolls are "
        "remembered so they can be checked as well."
    ),
}
SIMPLE_TEST2 = json.loads(LAMP.read_text())
SIMPLE_TEST2_PARAPHRASES = {
    "I have switched lamp_2 off.": "Done: the kitchen lamp lamp_2 is switched off now.",
}


def test_every_roll_die_reference_has_a_paraphrase() -> None:
    assert set(ROLL_DIE_REFERENCES) == set(ROLL_DIE_PARAPHRASES)


def test_every_legacy_reference_has_a_paraphrase() -> None:
    assert {entry["reference"] for entry in SIMPLE_TEST2} == set(SIMPLE_TEST2_PARAPHRASES)


@pytest.mark.parametrize("invocation_id", sorted(ROLL_DIE_PARAPHRASES))
def test_rouge1_agrees_with_adk_on_roll_die(invocation_id: str) -> None:
    reference = ROLL_DIE_REFERENCES[invocation_id]
    candidate = ROLL_DIE_PARAPHRASES[invocation_id]
    expected = _adk_rouge1(candidate, reference)
    assert 0.0 < expected < 1.0  # a real paraphrase, neither a copy nor unrelated
    assert rouge1_fmeasure(candidate, reference) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("reference", sorted(SIMPLE_TEST2_PARAPHRASES))
def test_rouge1_agrees_with_adk_on_the_legacy_home_automation_file(reference: str) -> None:
    candidate = SIMPLE_TEST2_PARAPHRASES[reference]
    expected = _adk_rouge1(candidate, reference)
    assert 0.0 < expected < 1.0
    assert rouge1_fmeasure(candidate, reference) == pytest.approx(expected, abs=1e-12)


def test_response_match_on_roll_die_is_the_mean_of_adks_per_invocation_scores() -> None:
    ids = sorted(ROLL_DIE_PARAPHRASES)
    case = make_case(*(Turn(turn_id=i, input="q", expected_response=ROLL_DIE_REFERENCES[i]) for i in ids))
    ctx = make_ctx(case, *(agent_turn(ROLL_DIE_PARAPHRASES[i], turn_id=i) for i in ids))
    expected = sum(_adk_rouge1(ROLL_DIE_PARAPHRASES[i], ROLL_DIE_REFERENCES[i]) for i in ids) / len(ids)
    assert ResponseMatch().evaluate(ctx).value == pytest.approx(expected)


def test_the_ascii_short_cut_gives_adks_tokens_for_any_ascii_text() -> None:
    """Every printable and control ASCII character, in 2,000 random texts: the short cut and
    ADK's character-by-character walk give the same tokens."""
    import random
    import string

    from proctor.metrics.response import adk_tokens_by_character

    rng = random.Random(7)
    alphabet = [chr(code) for code in range(128)] + ["running", "flies", "Argued", "3.14", "U.S.A."]
    texts = ["", " ", "Hello, world!", "caresses ponies ties", string.printable]
    texts += ["".join(rng.choices(alphabet, k=rng.randint(1, 60))) for _ in range(2000)]
    for text in texts:
        assert adk_tokens(text) == adk_tokens_by_character(text), repr(text)
