"""An offline WordNet for METEOR: the shipped synonym table behind NLTK's own lookup code.

NLTK's METEOR calls `wordnet.synsets(word)` and reads each synset's lemma names. This object
answers those calls from `data/wordnet-synonyms.json.gz` (built from WordNet 3.0 by
`data/build_wordnet.py`) and reuses NLTK's `_morphy`, so words reduce to lemmas exactly as
with the full database, with no `nltk.download` at run time.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from nltk.corpus.reader.wordnet import POS_LIST, WordNetCorpusReader

DATA = Path(__file__).resolve().parent / "data" / "wordnet-synonyms.json.gz"


@dataclass(frozen=True)
class _Lemma:
    _name: str

    def name(self) -> str:
        return self._name


@dataclass(frozen=True)
class _Synset:
    _names: tuple[str, ...]

    def lemmas(self) -> list[_Lemma]:
        return [_Lemma(name) for name in self._names]

    def lemma_names(self) -> list[str]:
        return list(self._names)


class CompactWordNet:
    """The part of NLTK's WordNet reader that METEOR uses, from the shipped table."""

    MORPHOLOGICAL_SUBSTITUTIONS = WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS
    _morphy = WordNetCorpusReader._morphy  # NLTK's own morphological reduction

    def __init__(self, data: dict[str, Any]) -> None:
        self._synsets = [_Synset(tuple(names)) for names in data["synsets"]]
        self._exception_map = data["exceptions"]
        self._lemma_pos_offset_map: dict[str, dict[str, list[int]]] = {}
        for pos, lemmas in data["index"].items():
            for lemma, ids in lemmas.items():
                self._lemma_pos_offset_map.setdefault(lemma, {})[pos] = ids

    def synsets(self, lemma: str, pos: str | None = None) -> list[_Synset]:
        lemma = lemma.lower()
        return [
            self._synsets[index]
            for p in ([pos] if pos else POS_LIST)
            for form in self._morphy(lemma, p)
            for index in self._lemma_pos_offset_map[form].get(p, [])
        ]


@lru_cache(maxsize=1)
def compact_wordnet() -> CompactWordNet:
    with gzip.open(DATA, "rt", encoding="utf-8") as handle:
        return CompactWordNet(json.load(handle))
