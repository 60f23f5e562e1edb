"""The copied Porter stemmer stems exactly as NLTK's, and ROUGE-1 without rouge-score's scorer
module scores exactly as it does: a suite using ROUGE gets ADK's numbers without NLTK's imports."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from nltk.stem.porter import PorterStemmer as NltkPorterStemmer
from rouge_score import rouge_scorer

from proctor.metrics.lexical.porter import PorterStemmer
from proctor.metrics.response import rouge1_fmeasure

WORDNET = (
    Path(__file__).resolve().parents[3]
    / "proctor"
    / "metrics"
    / "lexical"
    / "data"
    / "wordnet-synonyms.json.gz"
)


def _vocabulary() -> list[str]:
    """About 90,000 English words (those of WordNet's lemmas), with odd forms added."""
    index = json.loads(gzip.decompress(WORDNET.read_bytes()))["index"]
    words = {word for part in index.values() for lemma in part for word in lemma.split("_")}
    words |= {word.upper() for word in list(words)[:2000]} | {"", "a", "ies", "sses", "yy", "ying", "eed"}
    return sorted(words)


def test_every_word_stems_as_with_nltk() -> None:
    ours, theirs = PorterStemmer(), NltkPorterStemmer()
    vocabulary = _vocabulary()
    assert len(vocabulary) > 80_000
    differences = [word for word in vocabulary if ours.stem(word) != theirs.stem(word)]
    assert differences == []


def test_rouge1_scores_as_rouge_score_does() -> None:
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    words = _vocabulary()[::50]
    rng = random.Random(19)
    for _ in range(2000):
        reference = " ".join(rng.choices(words, k=rng.randint(0, 12)))
        candidate = " ".join(
            rng.choices(words, k=rng.randint(0, 12)) + reference.split()[: rng.randint(0, 6)]
        )
        expected = scorer.score(target=reference, prediction=candidate)["rouge1"].fmeasure
        assert rouge1_fmeasure(candidate, reference) == pytest.approx(expected, abs=1e-12)


def test_rouge1_imports_no_nltk() -> None:
    code = (
        "import sys; from proctor.metrics.response import rouge1_fmeasure; "
        "rouge1_fmeasure('the cats were running', 'a cat runs'); "
        "print(sorted(m for m in ('nltk', 'numpy', 'absl') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr
