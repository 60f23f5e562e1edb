"""Reference-based text metrics: BLEU, ROUGE-1/2/L, METEOR, token F1, exact match,
and format checks on the answer (regex, JSON).

Reference metrics score each turn that has an expected answer against that answer and
average over those turns, as `response_match` does.
"""

from __future__ import annotations

import json
import re
import statistics
import string
import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Any, Literal

from pydantic import Field, field_validator
from rouge_score import rouge_scorer, tokenizers
from sacrebleu.metrics import BLEU

from proctor.metrics.base import Metric, MetricContext, Score
from proctor.metrics.response import adk_tokens
from proctor.models.case import Case


class ReferenceMetric(Metric):
    """Scores every turn with an expected answer by `compare(answer, reference)`, averaged.

    A missing answer is compared as the empty string, so it scores 0 rather than vanishing.
    """

    kind = "nlp"

    def applies_to_case(self, case: Case) -> bool:
        return any(turn.expected_response for turn in case.turns)

    def compare(self, answer: str, reference: str) -> float:
        raise NotImplementedError

    def evaluate(self, ctx: MetricContext) -> Score:
        per_turn = [
            {
                "turn_id": expected.turn_id,
                self.name: self.compare(actual.response or "" if actual else "", expected.expected_response),
            }
            for expected, actual in ctx.paired_turns()
            if expected.expected_response
        ]
        value = statistics.fmean(turn[self.name] for turn in per_turn)
        return Score(value=value, reason=f"{self.name} {value:.3f}", details={"per_turn": per_turn})


class Bleu(ReferenceMetric):
    """Sentence BLEU by sacrebleu (its default 13a tokenizer, exponential smoothing), on 0..1."""

    name = "bleu"
    default_threshold = 0.3
    summary = "Sentence BLEU (sacrebleu) of the answer against the expected answer, on 0..1."
    how_it_scores = "sentence BLEU by sacrebleu (13a tokenizer, exponential smoothing), divided by 100"

    def compare(self, answer: str, reference: str) -> float:
        return min(1.0, _bleu().sentence_score(answer, [reference]).score / 100) if answer else 0.0


@lru_cache(maxsize=1)
def _bleu() -> BLEU:
    return BLEU(effective_order=True)


class _Tokenizer(tokenizers.Tokenizer):
    """ADK 2.13's ROUGE tokens (every script kept, ASCII words stemmed), as rouge-score wants them."""

    def tokenize(self, text: str) -> list[str]:
        return adk_tokens(text)


@lru_cache(maxsize=8)
def _rouge(variant: str) -> rouge_scorer.RougeScorer:
    return rouge_scorer.RougeScorer([variant], tokenizer=_Tokenizer())


@lru_cache(maxsize=8)
def _plain_rouge(variant: str) -> rouge_scorer.RougeScorer:
    """rouge-score's own tokenizer, unstemmed: what Hugging Face `evaluate`'s "rouge" metric
    uses by default (`use_stemmer=False`, no tokenizer), and so HoloDeck's ROUGEEvaluator."""
    return rouge_scorer.RougeScorer([variant], use_stemmer=False)


class Rouge(ReferenceMetric):
    """ROUGE-1, ROUGE-2 or ROUGE-L F-measure, tokenized as ADK 2.13 tokenizes (ASCII words
    stemmed), or with `tokenizer: rouge_score` as HoloDeck scores it (lower-cased [a-z0-9] words,
    no stemming: "Paris" and "París" differ, "running" and "run" too)."""

    name = "rouge"
    default_threshold = 0.5
    summary = "ROUGE-1/2/L F-measure of the answer against the expected answer."
    how_it_scores = (
        "ROUGE F-measure per turn with an expected answer, averaged; `adk` tokenizes as ADK 2.13 "
        "(ASCII words Porter-stemmed), `rouge_score` as rouge-score does by itself (lower-cased "
        "[a-z0-9] words, unstemmed: HoloDeck's); `variant` rouge1, rouge2 or rougeL"
    )

    variant: Literal["rouge1", "rouge2", "rougeL"] = "rougeL"
    tokenizer: Literal["adk", "rouge_score"] = "adk"

    def compare(self, answer: str, reference: str) -> float:
        scorer = _plain_rouge(self.variant) if self.tokenizer == "rouge_score" else _rouge(self.variant)
        return scorer.score(target=reference, prediction=answer)[self.variant].fmeasure


def meteor(answer: str, reference: str, wordnet: Any = None) -> float:
    """NLTK's METEOR on word/punctuation tokens; synonyms from the shipped WordNet table by default.

    `wordnet` may be any object with NLTK's `synsets(word)` (the tests pass NLTK's reader
    over the full database, to show the table changes nothing). NLTK looks synonyms up for
    the Porter stems of the words that exact and stem matching left, so "start"/"begin"
    match but "automobile" (stem "automobil") finds none; scores equal NLTK's, quirk included.
    """
    from nltk.translate.meteor_score import meteor_score  # imported on use: it loads slowly

    from proctor.metrics.lexical.wordnet import compact_wordnet

    return meteor_score([_words(reference)], _words(answer), wordnet=wordnet or compact_wordnet())


def _words(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text)


class Meteor(ReferenceMetric):
    """METEOR (NLTK's implementation) with WordNet 3.0 synonyms from the shipped table, offline."""

    name = "meteor"
    default_threshold = 0.5
    summary = "METEOR of the answer against the expected answer (exact, stem and WordNet synonym matches)."
    how_it_scores = (
        "NLTK's METEOR with exact, stem and WordNet-synonym matching, offline: the WordNet 3.0 "
        "synonyms it needs ship in `proctor/metrics/lexical/data/` (built by `build_wordnet.py`; "
        "equal to NLTK with the full database)"
    )

    def compare(self, answer: str, reference: str) -> float:
        return meteor(answer, reference)


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lowercase, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def token_f1(answer: str, reference: str) -> float:
    predicted, gold = normalize_answer(answer).split(), normalize_answer(reference).split()
    if not predicted or not gold:
        return float(predicted == gold)
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


class TokenF1(ReferenceMetric):
    """SQuAD-style token F1 between answer and expected answer."""

    name = "token_f1"
    default_threshold = 0.5
    summary = "Token-overlap F1 (SQuAD normalisation) of the answer against the expected answer."
    how_it_scores = "SQuAD token F1 after lowercasing and removing punctuation and articles"

    def compare(self, answer: str, reference: str) -> float:
        return token_f1(answer, reference)


def normalize_loosely(text: str) -> str:
    """Case-folded, without punctuation (any script's), whitespace collapsed: what exact match ignores."""
    kept = "".join(char for char in text.casefold() if not unicodedata.category(char).startswith("P"))
    return " ".join(kept.split())


class ExactMatch(ReferenceMetric):
    """1 if the answer equals the expected answer, ignoring case, punctuation and spacing unless told not to.

    Articles are kept (unlike token F1): "a dog" and "the dog" are different answers.
    """

    name = "exact_match"
    kind = "deterministic"
    default_threshold = 1.0
    summary = "The answer equals the expected answer (ignoring case, punctuation and spacing by default)."
    how_it_scores = (
        "1 if the answer equals the expected answer; normalised, case, punctuation (any script) and "
        "spacing do not count"
    )

    normalize: bool = True

    def compare(self, answer: str, reference: str) -> float:
        if self.normalize:
            return float(normalize_loosely(answer) == normalize_loosely(reference))
        return float(answer == reference)


_REGEX_FLAGS = {"IGNORECASE": re.IGNORECASE, "MULTILINE": re.MULTILINE, "DOTALL": re.DOTALL}


class Regex(Metric):
    """1 if the final answer matches `pattern` (searched anywhere), or must not when `must_match` is false."""

    name = "regex"
    summary = "The final answer matches (or must not match) a regular expression."
    how_it_scores = (
        "1 if the final answer matches `pattern` (or, with `must_match: false`, does not); `flags` "
        "any of IGNORECASE, MULTILINE, DOTALL"
    )

    pattern: str
    must_match: bool = True
    flags: list[Literal["IGNORECASE", "MULTILINE", "DOTALL"]] = Field(default_factory=list)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"invalid regular expression: {error}") from None
        return pattern

    def evaluate(self, ctx: MetricContext) -> Score:
        flags = 0
        for flag in self.flags:
            flags |= _REGEX_FLAGS[flag]
        found = re.search(self.pattern, ctx.final_response, flags)
        ok = (found is not None) == self.must_match
        verb = "matches" if found else "does not match"
        wanted = "" if ok else (" (it must)" if self.must_match else " (it must not)")
        return Score(
            value=float(ok),
            reason=f"answer {verb} /{self.pattern}/{wanted}",
            details={"matched": found is not None, "match": found.group(0)[:200] if found else None},
        )


_JSON_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


class JsonValid(Metric):
    """1 if the final answer is JSON (a ```json fence around it is allowed) with every required key.

    Text around the fence is not allowed: an answer meant for a program must be only JSON.
    """

    name = "json_valid"
    summary = "The final answer parses as JSON and has the required top-level keys."
    how_it_scores = "1 if the final answer parses as JSON (a fenced block is fine) with the `required_keys`"

    required_keys: list[str] = Field(default_factory=list)

    def evaluate(self, ctx: MetricContext) -> Score:
        text = ctx.final_response
        fenced = _JSON_FENCE.match(text)
        try:
            data = json.loads(fenced.group(1) if fenced else text)
        except json.JSONDecodeError as error:
            where = f"line {error.lineno} column {error.colno}"
            return Score(value=0.0, reason=f"not JSON: {error.msg} at {where}")
        kind = _JSON_TYPES.get(type(data), "a number")
        if self.required_keys:
            if not isinstance(data, dict):
                reason = f"JSON is {kind}, not an object with keys"
                return Score(value=0.0, reason=reason, details={"type": kind})
            missing = [key for key in self.required_keys if key not in data]
            if missing:
                return Score(
                    value=0.0,
                    reason=f"JSON lacks {', '.join(map(repr, missing))}",
                    details={"type": kind, "missing": missing},
                )
        return Score(value=1.0, reason=f"valid JSON ({kind})", details={"type": kind})


NLP_METRICS: tuple[type[Metric], ...] = (Bleu, Rouge, Meteor, TokenF1, ExactMatch, Regex, JsonValid)
