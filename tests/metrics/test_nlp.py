"""Reference-based text metrics (BLEU, ROUGE, METEOR, token F1, exact match) and answer-format checks."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError
from sacrebleu.metrics import BLEU

from proctor.metrics.base import Metric
from proctor.metrics.nlp import (
    NLP_METRICS,
    Bleu,
    ExactMatch,
    JsonValid,
    Meteor,
    Regex,
    Rouge,
    TokenF1,
    meteor,
)
from proctor.models.case import Turn
from tests.conftest import ROOT
from tests.factories import agent_turn, make_case, make_ctx


def _value(metric: Metric, answer: str, expected: str | None = None) -> float:
    return metric.evaluate(make_ctx(make_case(expected_response=expected), agent_turn(answer))).value


def _passes(metric: Metric, answer: str, expected: str | None = None) -> bool:
    return _value(metric, answer, expected) >= metric.default_threshold


def test_every_metric_has_a_unique_name_a_summary_and_a_threshold_in_range() -> None:
    names = [metric.name for metric in NLP_METRICS]
    assert len(set(names)) == len(names) == 7
    assert all(metric.summary and 0 < metric.default_threshold <= 1 for metric in NLP_METRICS)


@pytest.mark.parametrize("metric", [Bleu(), Rouge(), Meteor(), TokenF1(), ExactMatch()])
def test_reference_metrics_do_not_apply_without_an_expected_answer(metric: Metric) -> None:
    assert not metric.applies_to(make_ctx(make_case(), agent_turn("anything")))
    assert metric.applies_to(make_ctx(make_case(expected_response="x"), agent_turn("anything")))


def test_turns_are_scored_against_their_own_expected_answer_and_averaged() -> None:
    case = make_case(
        Turn(turn_id="t1", input="q1", expected_response="Tokyo is sunny"),
        Turn(turn_id="t2", input="q2"),  # no expectation: not scored
        Turn(turn_id="t3", input="q3", expected_response="it is 22 degrees"),
    )
    # The agent answered two of the three turns; the missing third scores 0.
    ctx = make_ctx(case, agent_turn("tokyo is sunny!", turn_id="t1"), agent_turn("x", turn_id="t2"))
    score = ExactMatch().evaluate(ctx)
    assert score.value == 0.5
    assert score.details["per_turn"] == [
        {"turn_id": "t1", "exact_match": 1.0},
        {"turn_id": "t3", "exact_match": 0.0},
    ]


# -- BLEU --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "reference"),
    [
        ("the cat sat on a mat today", "the cat sat on the mat"),
        ("It is 22 degrees and sunny in Tokyo.", "Tokyo is sunny, 22 degrees."),
    ],
)
def test_bleu_is_sacrebleus_sentence_bleu_divided_by_100(answer: str, reference: str) -> None:
    expected = BLEU(effective_order=True).sentence_score(answer, [reference]).score / 100
    assert 0 < expected < 1
    assert _value(Bleu(), answer, reference) == expected


def test_bleu_passes_a_close_answer_and_fails_an_unrelated_one() -> None:
    reference = "The weather in Tokyo is sunny and 22 degrees."
    assert _value(Bleu(), reference, reference) == 1.0
    assert _passes(Bleu(), "The weather in Tokyo is sunny and 22 degrees today.", reference)
    assert not _passes(Bleu(), "I cannot tell you the weather.", reference)
    assert _value(Bleu(), "", reference) == 0.0


# -- ROUGE -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        # "the cat sat" against "the cat sat on the mat"
        ("rouge1", 2 / 3),  # 3 shared words: P 3/3, R 3/6
        ("rouge2", 4 / 7),  # 2 shared bigrams: P 2/2, R 2/5, F = 2 * 0.4 / 1.4
        ("rougeL", 2 / 3),  # LCS of 3 words: P 3/3, R 3/6
    ],
)
def test_rouge_variants_by_hand(variant: str, expected: float) -> None:
    assert _value(Rouge(variant=variant), "the cat sat", "the cat sat on the mat") == pytest.approx(expected)


def test_rouge_l_rewards_order_and_rouge_2_needs_adjacent_pairs() -> None:
    assert _passes(Rouge(variant="rougeL"), "a b c d", "a b c d")
    # Reversed: the longest common subsequence is one word, P = R = 1/4.
    assert _value(Rouge(variant="rougeL"), "d c b a", "a b c d") == pytest.approx(0.25)
    assert not _passes(Rouge(variant="rougeL"), "d c b a", "a b c d")
    assert _value(Rouge(variant="rouge2"), "d c b a", "a b c d") == 0.0


def test_rouge_stems_latin_text() -> None:
    assert _value(Rouge(variant="rouge1"), "cats running", "cat runs") == 1.0


def test_rouge_rejects_an_unknown_variant() -> None:
    with pytest.raises(ValidationError, match="variant"):
        Rouge(variant="rouge3")


# -- METEOR ------------------------------------------------------------------------------------

# (reference, answer, METEOR): each pair needs WordNet synonyms. The values are NLTK 3.10's
# `meteor_score` with the full WordNet 3.0 database (Debian's wordnet-base read by NLTK's
# WordNetCorpusReader); where that database is installed the test recomputes them.
METEOR_PAIRS = [
    ("the cat sat on the rug", "the cat sat on the carpet", 0.9976851851851852),
    ("he drove his car to work", "he drove his auto to work", 0.9976851851851852),
    ("Please start the meeting now.", "Please begin the meeting now.", 0.9976851851851852),
    (
        "The mechanic will repair the engine tomorrow.",
        "Tomorrow the mechanic will fix the engine.",
        0.9736328125,
    ),
    ("my kid is ill today", "my child is sick today", 0.996),
    ("we took a cab to the airport", "to the airport we took a taxi", 0.9883381924198251),
    ("The shop closes at nine.", "The store closes at 9 pm.", 0.9653916211293262),
    ("you should talk to a doctor", "you should speak to a doc", 0.9976851851851852),
    ("they sat on the sofa", "they sat on the couch", 0.996),
    ("the film ends at ten", "the film finishes at ten", 0.996),
    ("can you help me with this", "can you aid me with this", 0.9976851851851852),
    ("please begin the meeting now", "please start the session immediately", 0.5888888888888889),
    ("I need to fix the broken computer", "I have to repair the damaged machine", 0.5357142857142857),
    (
        "The doctor prescribed medicine for the illness",
        "The physician ordered medication for the sickness",
        0.6914285714285714,
    ),
]
DEBIAN_WORDNET = Path("/usr/share/wordnet")


class _NoSynonyms:
    def synsets(self, word: str) -> list:
        return []


@pytest.fixture(scope="module")
def full_wordnet():
    """NLTK's reader over the full WordNet 3.0 database, or None where it is not installed."""
    if not (DEBIAN_WORDNET / "data.noun").exists():
        return None
    path = ROOT / "proctor" / "metrics" / "lexical" / "data" / "build_wordnet.py"
    spec = importlib.util.spec_from_file_location("build_wordnet", path)
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    return builder.reader_for(DEBIAN_WORDNET)


@pytest.mark.parametrize(("reference", "answer", "nltk_with_wordnet"), METEOR_PAIRS)
def test_meteor_equals_nltk_with_the_full_wordnet(
    full_wordnet, reference: str, answer: str, nltk_with_wordnet: float
) -> None:
    if full_wordnet is not None:
        assert meteor(answer, reference, wordnet=full_wordnet) == nltk_with_wordnet
    assert _value(Meteor(), answer, reference) == nltk_with_wordnet
    assert meteor(answer, reference, wordnet=_NoSynonyms()) < nltk_with_wordnet  # synonyms did count


def test_meteor_passes_a_paraphrase_and_fails_an_unrelated_answer() -> None:
    assert _passes(Meteor(), "Tomorrow the mechanic will fix the engine.", "The mechanic will repair it.")
    assert not _passes(Meteor(), "I do not know.", "The mechanic will repair the engine tomorrow.")
    assert _value(Meteor(), "", "The mechanic will repair the engine.") == 0.0


def test_meteor_needs_no_nltk_data(tmp_path: Path) -> None:
    """A fresh interpreter with an empty NLTK data path: NLTK's own WordNet cannot load there."""
    code = (
        "import nltk\n"
        "nltk.data.path[:] = []\n"
        "from proctor.metrics.nlp import meteor\n"
        "try:\n"
        "    nltk.data.find('corpora/wordnet')\n"
        "    print('WordNet is installed')\n"
        "except LookupError:\n"
        "    print(repr(meteor('the cat sat on the carpet', 'the cat sat on the rug')))\n"
    )
    env = {**os.environ, "NLTK_DATA": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(METEOR_PAIRS[0][2])


# -- token F1 ----------------------------------------------------------------------------------


def test_token_f1_by_hand() -> None:
    # Normalised: "cat sat" against "cat sat down": P 2/2, R 2/3, F 0.8.
    assert _value(TokenF1(), "The cat sat.", "a cat sat down") == pytest.approx(0.8)
    # Counts are clipped: "cat cat dog" against "cat dog dog" shares one cat and one dog, P = R = 2/3.
    assert _value(TokenF1(), "cat cat dog", "cat dog dog") == pytest.approx(2 / 3)
    assert _passes(TokenF1(), "The cat sat.", "a cat sat down")
    assert not _passes(TokenF1(), "nothing shared", "a cat sat")
    assert _value(TokenF1(), "nothing shared", "a cat sat") == 0.0


# -- exact match -------------------------------------------------------------------------------


def test_exact_match_ignores_case_punctuation_and_spacing() -> None:
    assert _value(ExactMatch(), "  The ANSWER, is 42! ", "the answer is 42") == 1.0
    assert _value(ExactMatch(), "“Paris”", "Paris") == 1.0
    assert _value(ExactMatch(), "43", "42") == 0.0
    # Words still count, articles included.
    assert _value(ExactMatch(), "a dog", "the dog") == 0.0


def test_exact_match_can_be_strict() -> None:
    assert _value(ExactMatch(normalize=False), "Paris", "Paris") == 1.0
    assert _value(ExactMatch(normalize=False), "Paris.", "Paris") == 0.0
    assert _value(ExactMatch(normalize=False), "paris", "Paris") == 0.0


# -- regex -------------------------------------------------------------------------------------


def test_regex_must_match() -> None:
    score = Regex(pattern=r"#[A-Z]-\d{4}").evaluate(
        make_ctx(make_case(), agent_turn("Order #A-1234 shipped"))
    )
    assert score.value == 1.0 and score.details == {"matched": True, "match": "#A-1234"}
    assert _value(Regex(pattern=r"#[A-Z]-\d{4}"), "order shipped") == 0.0
    assert _value(Regex(pattern="shipped", flags=["IGNORECASE"]), "SHIPPED") == 1.0
    assert _value(Regex(pattern="shipped"), "SHIPPED") == 0.0


def test_regex_must_not_match() -> None:
    score = Regex(pattern="cannot", must_match=False).evaluate(make_ctx(make_case(), agent_turn("I cannot")))
    assert score.value == 0.0 and score.reason == "answer matches /cannot/ (it must not)"
    assert _value(Regex(pattern="cannot", must_match=False), "Here it is") == 1.0


def test_regex_applies_with_no_expected_answer() -> None:
    assert Regex(pattern="x").applies_to(make_ctx(make_case(), agent_turn("x")))


def test_an_invalid_regex_is_refused_at_validation() -> None:
    with pytest.raises(
        ValidationError, match="invalid regular expression: missing \\), unterminated subpattern"
    ):
        Regex(pattern="(unclosed")
    with pytest.raises(ValidationError, match="flags"):
        Regex(pattern="x", flags=["IGNORE_CASE"])


# -- JSON --------------------------------------------------------------------------------------


def test_json_valid_accepts_json_and_a_fenced_block() -> None:
    assert _value(JsonValid(), '{"city": "Tokyo"}') == 1.0
    assert _value(JsonValid(required_keys=["city"]), '```json\n{"city": "Tokyo", "temp": 22}\n```') == 1.0
    assert _value(JsonValid(required_keys=["city"]), '```JSON\n{"city": "Tokyo"}\n```') == 1.0
    assert _value(JsonValid(), "[1, 2]") == 1.0


def test_json_valid_fails_on_text_or_missing_keys() -> None:
    missing = JsonValid(required_keys=["city", "temp"]).evaluate(
        make_ctx(make_case(), agent_turn('{"city": "Tokyo"}'))
    )
    assert missing.value == 0.0 and missing.details["missing"] == ["temp"]
    assert _value(JsonValid(), "{city: Tokyo}") == 0.0
    assert _value(JsonValid(), 'Here you are:\n```json\n{"city": "Tokyo"}\n```') == 0.0
    assert _value(JsonValid(), "") == 0.0
    assert _value(JsonValid(required_keys=["city"]), '["city"]') == 0.0
