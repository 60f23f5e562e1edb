"""Response matching by ROUGE-1, the measure Google ADK's `response_match_score` uses.

The default tokenizer is google-adk 2.13.0's (`_UnicodeAwareTokenizer` in
`google/adk/evaluation/final_response_match_v1.py`), so every script scores as ADK scores it:
text is NFKC-normalised and lower-cased; Chinese, Japanese kana and Hangul syllables become
one token per character; Thai, Lao, Khmer and Myanmar one token per base character with its
combining marks; other runs of Unicode letters, digits and marks are words. An ASCII word
goes through rouge-score's own tokenizer, Porter-stemmed; other words are kept as they are.
`tokenizer="ascii"` is rouge-score's plain tokenizer (ADK up to 2.5.0): only [a-z0-9] words,
all stemmed, so text in other scripts scores 0.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Literal

from rouge_score.tokenize import tokenize

from proctor.metrics.base import Metric, MetricContext, Score
from proctor.metrics.lexical.porter import PorterStemmer
from proctor.models.case import Case

Tokenizer = Literal["adk", "ascii"]

# Code point ranges ADK 2.13.0 treats as written without spaces.
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7AF))
CLUSTER_RANGES = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1780, 0x17FF), (0x1000, 0x109F))


class CachedStemmer:
    """Porter stemming dominates ROUGE's cost; words repeat, so their stems are cached.

    The stemmer is NLTK's, copied (`proctor.metrics.lexical.porter`): importing NLTK itself loads
    numpy, scipy, pandas and scikit-learn."""

    def __init__(self) -> None:
        self.stem = lru_cache(maxsize=100_000)(PorterStemmer().stem)


@lru_cache(maxsize=1)
def cached_stemmer() -> CachedStemmer:
    return CachedStemmer()


def rouge_tokens(text: str, use_stemmer: bool) -> list[str]:
    """rouge-score's own tokenizer function (lower-cased, alphanumeric, stemmed past 3 letters)."""
    return tokenize(text, cached_stemmer() if use_stemmer else None)


def _within(ranges: tuple[tuple[int, int], ...], char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in ranges)


def _is_mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


def adk_tokens(text: str) -> list[str]:
    """google-adk 2.13.0's ROUGE tokens (see the module docstring). ASCII text takes a short
    cut with the same result: NFKC leaves it alone and all of its words are ASCII, so its tokens
    are rouge-score's, without the walk character by character (a fifth of a 1,000-case run's
    time went there)."""
    if text.isascii():
        return rouge_tokens(text, use_stemmer=True)
    return adk_tokens_by_character(text)


def adk_tokens_by_character(text: str) -> list[str]:
    """google-adk 2.13.0's ROUGE tokens, step for step, for any text."""
    pieces: list[str] = []
    for char in unicodedata.normalize("NFKC", text).lower():
        if _within(CJK_RANGES, char):
            pieces += (" ", char, " ")
        elif _within(CLUSTER_RANGES, char):
            pieces += (char,) if _is_mark(char) else (" ", char)
        elif char.isalnum() or _is_mark(char):
            pieces.append(char)
        else:
            pieces.append(" ")
    tokens: list[str] = []
    for word in "".join(pieces).split():
        if word.isascii():
            tokens += rouge_tokens(word, use_stemmer=True)
        else:
            tokens.append(word)
    return tokens


def tokens_for(text: str, tokenizer: Tokenizer = "adk") -> list[str]:
    return adk_tokens(text) if tokenizer == "adk" else rouge_tokens(text, use_stemmer=True)


def rouge1_fmeasure(candidate: str, reference: str, tokenizer: Tokenizer = "adk") -> float:
    """ROUGE-1 F-measure as ADK's `response_match_score` computes it (rouge-score's
    `RougeScorer(["rouge1"], tokenizer=...)` arithmetic, repeated here so that its module,
    which imports NLTK and numpy, is not loaded)."""
    target = Counter(tokens_for(reference, tokenizer))
    prediction = Counter(tokens_for(candidate, tokenizer))
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
    summary = "ROUGE-1 F-measure (ADK's tokenizer, stemmed) of the answer against the expected answer."
    how_it_scores = (
        "mean ROUGE-1 F-measure of each answer against its turn's expected answer, tokenized as ADK "
        "2.13 does (every script; ASCII words Porter-stemmed); `tokenizer: ascii` for [a-z0-9] words "
        "only"
    )

    tokenizer: Tokenizer = "adk"

    def applies_to_case(self, case: Case) -> bool:
        return any(turn.expected_response for turn in case.turns)

    def evaluate(self, ctx: MetricContext) -> Score:
        per_turn = []
        for expected, actual in ctx.paired_turns():
            if not expected.expected_response:
                continue
            answer = (actual.response if actual else None) or ""
            value = rouge1_fmeasure(answer, expected.expected_response, self.tokenizer)
            per_turn.append({"turn_id": expected.turn_id, "rouge1_f": value})
        value = sum(t["rouge1_f"] for t in per_turn) / len(per_turn)
        return Score(value=value, reason=f"ROUGE-1 F {value:.3f}", details={"turns": per_turn})
