"""Response matching by ROUGE-1, the measure Google ADK's `response_match_score` uses."""

from __future__ import annotations

import unicodedata
from collections import Counter
from functools import lru_cache

from rouge_score.tokenize import tokenize

from proctor.metrics.base import Metric, MetricContext, Score
from proctor.metrics.porter import PorterStemmer


class CachedStemmer:
    """Porter stemming dominates ROUGE's cost; words repeat, so their stems are cached.

    The stemmer is NLTK's, copied (`proctor.metrics.porter`): importing NLTK itself loads
    numpy, scipy, pandas and scikit-learn."""

    def __init__(self) -> None:
        self.stem = lru_cache(maxsize=100_000)(PorterStemmer().stem)


@lru_cache(maxsize=1)
def cached_stemmer() -> CachedStemmer:
    return CachedStemmer()


def rouge_tokens(text: str, use_stemmer: bool) -> list[str]:
    """rouge-score's own tokenizer function (lower-cased, alphanumeric, stemmed past 3 letters)."""
    return tokenize(text, cached_stemmer() if use_stemmer else None)


def is_mostly_latin(text: str) -> bool:
    """More than half of the letters are Latin (text without letters counts as Latin)."""
    if text.isascii():
        return True
    letters = [char for char in text if unicodedata.category(char).startswith("L")]
    if not letters:
        return True
    latin = sum(1 for char in letters if "LATIN" in unicodedata.name(char, ""))
    return latin / len(letters) > 0.5


def rouge1_fmeasure(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure as ADK's `response_match_score` computes it (rouge-score's
    `RougeScorer(["rouge1"], use_stemmer=True)`, its arithmetic repeated here so that its
    module, which imports NLTK and numpy, is not loaded).

    The Porter stemmer is English-only, so, like ADK, it is used only when both texts
    are mostly Latin script.
    """
    use_stemmer = is_mostly_latin(candidate) and is_mostly_latin(reference)
    target = Counter(rouge_tokens(reference, use_stemmer))
    prediction = Counter(rouge_tokens(candidate, use_stemmer))
    overlap = sum(min(count, prediction[token]) for token, count in target.items())
    precision = overlap / max(sum(prediction.values()), 1)
    recall = overlap / max(sum(target.values()), 1)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


class ResponseMatch(Metric):
    """Mean ROUGE-1 F-measure of each answer against the expected answer of its turn.

    Turns without an expected answer are not scored; a missing answer scores 0.
    """

    name = "response_match"
    kind = "nlp"
    default_threshold = 0.7
    summary = "ROUGE-1 F-measure (stemmed) of the answer against the expected answer."

    def applies_to(self, ctx: MetricContext) -> bool:
        return any(turn.expected_response for turn in ctx.case.turns)

    def evaluate(self, ctx: MetricContext) -> Score:
        per_turn = []
        for expected, actual in ctx.paired_turns():
            if not expected.expected_response:
                continue
            answer = (actual.response if actual else None) or ""
            per_turn.append(
                {"turn_id": expected.turn_id, "rouge1_f": rouge1_fmeasure(answer, expected.expected_response)}
            )
        value = sum(t["rouge1_f"] for t in per_turn) / len(per_turn)
        return Score(value=value, reason=f"ROUGE-1 F {value:.3f}", details={"turns": per_turn})
