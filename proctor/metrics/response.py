"""Response matching by ROUGE-1, the measure Google ADK's `response_match_score` uses."""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from nltk.stem.porter import PorterStemmer
from rouge_score import rouge_scorer, tokenize, tokenizers

from proctor.metrics.base import Metric, MetricContext, Score


class _CachedStemmer:
    """Porter stemming dominates ROUGE's cost; words repeat, so their stems are cached."""

    def __init__(self) -> None:
        self.stem = lru_cache(maxsize=100_000)(PorterStemmer().stem)


class _Tokenizer(tokenizers.Tokenizer):
    """rouge-score's own tokenizer function, fed the caching stemmer: same tokens, faster."""

    def __init__(self, use_stemmer: bool) -> None:
        self._stemmer = _CachedStemmer() if use_stemmer else None

    def tokenize(self, text: str) -> list[str]:
        return tokenize.tokenize(text, self._stemmer)


@lru_cache(maxsize=2)
def _rouge1_scorer(use_stemmer: bool) -> rouge_scorer.RougeScorer:
    return rouge_scorer.RougeScorer(["rouge1"], tokenizer=_Tokenizer(use_stemmer))


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
    """ROUGE-1 F-measure as ADK's `response_match_score` computes it.

    The Porter stemmer is English-only, so, like ADK, it is used only when both texts
    are mostly Latin script.
    """
    use_stemmer = is_mostly_latin(candidate) and is_mostly_latin(reference)
    return _rouge1_scorer(use_stemmer).score(target=reference, prediction=candidate)["rouge1"].fmeasure


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
