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
from collections import Counter
from functools import lru_cache
from typing import Literal

from pydantic import Field, field_validator
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU

from proctor.metrics.base import Metric, MetricContext, Score
from proctor.metrics.response import _Tokenizer, is_mostly_latin


class ReferenceMetric(Metric):
    """Scores every turn with an expected answer by `compare(answer, reference)`, averaged."""

    kind = "nlp"

    def applies_to(self, ctx: MetricContext) -> bool:
        return any(turn.expected_response for turn in ctx.case.turns)

    def compare(self, answer: str, reference: str) -> float:
        raise NotImplementedError

    def evaluate(self, ctx: MetricContext) -> Score:
        per_turn = [
            self.compare((actual.response if actual else None) or "", expected.expected_response)
            for expected, actual in ctx.paired_turns()
            if expected.expected_response
        ]
        value = statistics.fmean(per_turn)
        return Score(value=value, reason=f"{self.name} {value:.3f}", details={"per_turn": per_turn})


class Bleu(ReferenceMetric):
    """Sentence BLEU by sacrebleu (its default 13a tokenizer, exponential smoothing), on 0..1."""

    name = "bleu"
    default_threshold = 0.3
    summary = "Sentence BLEU (sacrebleu) of the answer against the expected answer, on 0..1."

    def compare(self, answer: str, reference: str) -> float:
        return min(1.0, _bleu().sentence_score(answer, [reference]).score / 100) if answer else 0.0


@lru_cache(maxsize=1)
def _bleu() -> BLEU:
    return BLEU(effective_order=True)


@lru_cache(maxsize=8)
def _rouge(variant: str, use_stemmer: bool) -> rouge_scorer.RougeScorer:
    return rouge_scorer.RougeScorer([variant], tokenizer=_Tokenizer(use_stemmer))


class Rouge(ReferenceMetric):
    """ROUGE-1, ROUGE-2 or ROUGE-L F-measure (stemmed for Latin-script text, as ADK does)."""

    name = "rouge"
    default_threshold = 0.5
    summary = "ROUGE-1/2/L F-measure of the answer against the expected answer."

    variant: Literal["rouge1", "rouge2", "rougeL"] = "rougeL"

    def compare(self, answer: str, reference: str) -> float:
        stem = is_mostly_latin(answer) and is_mostly_latin(reference)
        return _rouge(self.variant, stem).score(target=reference, prediction=answer)[self.variant].fmeasure


class Meteor(ReferenceMetric):
    """METEOR (NLTK's implementation) with WordNet synonyms from the shipped table, offline."""

    name = "meteor"
    default_threshold = 0.5
    summary = "METEOR of the answer against the expected answer (exact, stem and WordNet synonym matches)."

    def compare(self, answer: str, reference: str) -> float:
        from nltk.translate.meteor_score import meteor_score

        from proctor.metrics.wordnet import compact_wordnet

        return meteor_score([_words(reference)], _words(answer), wordnet=compact_wordnet())


def _words(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text)


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

    def compare(self, answer: str, reference: str) -> float:
        return token_f1(answer, reference)


class ExactMatch(ReferenceMetric):
    """1 if the answer equals the expected answer (after SQuAD normalisation unless disabled)."""

    name = "exact_match"
    kind = "deterministic"
    default_threshold = 1.0
    summary = "The answer equals the expected answer (normalised by default)."

    normalize: bool = True

    def compare(self, answer: str, reference: str) -> float:
        if self.normalize:
            return float(normalize_answer(answer) == normalize_answer(reference))
        return float(answer == reference)


_REGEX_FLAGS = {"IGNORECASE": re.IGNORECASE, "MULTILINE": re.MULTILINE, "DOTALL": re.DOTALL}


class Regex(Metric):
    """1 if the final answer matches `pattern` (searched anywhere), or must not when `must_match` is false."""

    name = "regex"
    summary = "The final answer matches (or must not match) a regular expression."

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
        found = re.search(self.pattern, ctx.final_response, flags) is not None
        ok = found == self.must_match
        verb = "matches" if found else "does not match"
        return Score(value=float(ok), reason=f"answer {verb} /{self.pattern}/", details={"matched": found})


_JSON_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class JsonValid(Metric):
    """1 if the final answer is JSON (a ```json fence is allowed) with every required key."""

    name = "json_valid"
    summary = "The final answer parses as JSON and has the required top-level keys."

    required_keys: list[str] = Field(default_factory=list)

    def evaluate(self, ctx: MetricContext) -> Score:
        text = ctx.final_response
        fenced = _JSON_FENCE.match(text)
        try:
            data = json.loads(fenced.group(1) if fenced else text)
        except json.JSONDecodeError as error:
            return Score(value=0.0, reason=f"not JSON: {error.msg} at line {error.lineno}")
        if self.required_keys:
            if not isinstance(data, dict):
                return Score(value=0.0, reason=f"JSON is a {type(data).__name__}, not an object with keys")
            missing = [key for key in self.required_keys if key not in data]
            if missing:
                return Score(
                    value=0.0, reason=f"JSON lacks {', '.join(missing)}", details={"missing": missing}
                )
        return Score(value=1.0, reason="valid JSON")


NLP_METRICS: tuple[type[Metric], ...] = (Bleu, Rouge, Meteor, TokenF1, ExactMatch, Regex, JsonValid)
