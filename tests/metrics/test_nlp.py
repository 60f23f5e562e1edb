"""Reference-based text metrics and answer-format checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sacrebleu.metrics import BLEU

from models.case import MetricSpec
from proctor.metrics import REGISTRY, MetricConfigError
from tests.conftest import ROOT
from tests.factories import agent_turn, make_case, make_ctx


def _value(name: str, answer: str, expected: str | None = None, **args) -> float:
    metric = REGISTRY.build(MetricSpec(name=name, args=args))
    return metric.evaluate(make_ctx(make_case(expected_response=expected), agent_turn(answer))).value


def test_bleu_is_sacrebleus_sentence_bleu_on_zero_one() -> None:
    answer, reference = "the cat sat on a mat today", "the cat sat on the mat"
    expected = BLEU(effective_order=True).sentence_score(answer, [reference]).score / 100
    assert _value("bleu", answer, reference) == pytest.approx(expected)
    assert _value("bleu", reference, reference) == 1.0
    assert _value("bleu", "completely different words", reference) < 0.1


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        ("rouge1", 2 * (3 / 3) * (3 / 6) / (3 / 3 + 3 / 6)),
        ("rouge2", 2 * 1 * (2 / 5) / (1 + 2 / 5)),
        ("rougeL", 2 / 3),
    ],
)
def test_rouge_variants_by_hand(variant: str, expected: float) -> None:
    assert _value("rouge", "the cat sat", "the cat sat on the mat", variant=variant) == pytest.approx(
        expected
    )


def test_rouge_l_rewards_order() -> None:
    in_order = _value("rouge", "a b c d", "a b c d", variant="rougeL")
    shuffled = _value("rouge", "d c b a", "a b c d", variant="rougeL")
    assert in_order == 1.0 and shuffled == pytest.approx(0.25)


def test_token_f1_by_hand() -> None:
    # normalised: "cat sat" vs "cat sat down" -> P 2/2, R 2/3
    assert _value("token_f1", "The cat sat.", "a cat sat down") == pytest.approx(0.8)
    assert _value("token_f1", "nothing shared", "a cat sat") == 0.0


def test_exact_match_normalises_unless_told_not_to() -> None:
    assert _value("exact_match", "The Answer is 42!", "answer is 42") == 1.0
    assert _value("exact_match", "The Answer is 42!", "answer is 42", normalize=False) == 0.0
    assert _value("exact_match", "43", "42") == 0.0


def test_regex_must_or_must_not_match() -> None:
    assert _value("regex", "Order #A-1234 shipped", pattern=r"#[A-Z]-\d{4}") == 1.0
    assert _value("regex", "order shipped", pattern=r"#[A-Z]-\d{4}") == 0.0
    assert _value("regex", "I cannot help", pattern="cannot", must_match=False) == 0.0
    assert _value("regex", "SHIPPED", pattern="shipped", flags=["IGNORECASE"]) == 1.0


def test_an_invalid_regex_is_refused_before_the_run() -> None:
    with pytest.raises(MetricConfigError, match="pattern: .*invalid regular expression"):
        REGISTRY.build(MetricSpec(name="regex", args={"pattern": "([unclosed"}))


def test_json_valid_accepts_fences_and_checks_keys() -> None:
    assert _value("json_valid", '```json\n{"city": "Tokyo", "temp": 22}\n```', required_keys=["city"]) == 1.0
    assert _value("json_valid", '{"city": "Tokyo"}', required_keys=["city", "temp"]) == 0.0
    assert _value("json_valid", "{city: Tokyo}") == 0.0
    assert _value("json_valid", "[1, 2]", required_keys=["city"]) == 0.0


def test_reference_metrics_do_not_apply_without_an_expected_answer() -> None:
    ctx = make_ctx(make_case(), agent_turn("anything"))
    for name in ("bleu", "rouge", "meteor", "token_f1", "exact_match"):
        assert not REGISTRY.build(MetricSpec(name=name)).applies_to(ctx)


# METEOR: NLTK's implementation, WordNet synonyms from the shipped table.
METEOR_PAIRS = [
    ("the cat sat on the mat", "the feline sat on the rug", 0.625),
    ("he bought a car", "he purchased an automobile", 0.125),
    ("the dogs are running quickly", "a dog runs fast", 0.20408163265306123),
    (
        "It is a guide to action which ensures that the military always obeys the commands of the party",
        "It is a guide to action that ensures that the military will forever heed Party commands",
        0.6320224719101123,
    ),
]


@pytest.mark.parametrize(("reference", "answer", "nltk_with_wordnet"), METEOR_PAIRS)
def test_meteor_equals_nltk_with_the_full_wordnet(
    reference: str, answer: str, nltk_with_wordnet: float
) -> None:
    """The expected values are NLTK's METEOR with the full WordNet 3.0 database; where the
    database is on this machine (Debian's wordnet-base) they are recomputed here."""
    if Path("/usr/share/wordnet/data.noun").exists():
        from nltk.translate.meteor_score import meteor_score

        sys.path.insert(0, str(ROOT / "proctor" / "metrics" / "data"))
        import build_wordnet

        full = build_wordnet.reader_for(Path("/usr/share/wordnet"))
        nltk_with_wordnet = meteor_score([reference.split()], answer.split(), wordnet=full)
    assert _value("meteor", answer, reference) == pytest.approx(nltk_with_wordnet, abs=1e-12)


def test_meteor_needs_no_nltk_data(tmp_path: Path) -> None:
    code = (
        "from proctor.metrics.nlp import Meteor\n"
        "print(round(Meteor().compare('the feline sat on the rug', 'the cat sat on the mat'), 4))\n"
    )
    env = {**os.environ, "NLTK_DATA": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0.625"
